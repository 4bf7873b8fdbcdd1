//! wafsim-experiment: device and experiment descriptions (TOML), variants, precondition, runs.

pub mod advise;
pub mod bench;
pub mod cachekv;
pub mod catalog;
pub mod datasheet;
pub mod files;
pub mod kv;
pub mod lsmkv;
pub mod presets;
pub mod run;
pub mod scale;
pub mod sources;
pub mod timing;
pub mod spec;
pub mod stack;
pub mod steady;
pub mod sweep;
pub mod sweep_parquet;
pub mod validate;

pub use run::{run_variant, run_variants, Progress, RunOptions, VariantResult};
pub use spec::{load_experiment, parse_experiment, Variant};
