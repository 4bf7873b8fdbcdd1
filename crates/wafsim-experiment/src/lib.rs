//! wafsim-experiment: device and experiment descriptions (TOML), variants, precondition, runs.

pub mod bench;
pub mod run;
pub mod spec;
pub mod validate;

pub use run::{run_variant, run_variants, Progress, VariantResult};
pub use spec::{load_experiment, parse_experiment, Variant};
