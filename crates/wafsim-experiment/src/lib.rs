//! wafsim-experiment: experiments described in TOML, resolved into variants, planned into drives,
//! run through the simulator, reported.
//!
//! The crate is built in floors; a module imports only from the floors below it:
//!
//! 1. [`schema`]: the experiment document's types (serde), with no behaviour but accessors.
//! 2. [`load`]: text to variants (variant merging, device presets).
//! 3. [`plan`]: which drives a variant has and how they are built (core configs, scaling,
//!    timing configurations), and the checks a variant must pass.
//! 4. `parts`: one module per kind of source (synthetic, fio, trace, files, key-value stores),
//!    each turning its share of a phase into I/O sources bound to a target.
//! 5. [`drives`]: the built drives of a variant and the routing of its namespaces onto them.
//! 6. [`results`]: what a run reports.
//! 7. [`run`]: driving every phase through the drives, untimed or timed, and collecting.
//! 8. [`studies`]: what is built from many runs (sweeps, the advisor, the catalog, validation,
//!    the datasheet check, benchmarks).

#![warn(missing_docs)]

pub mod drives;
pub mod load;
pub(crate) mod parts;
pub mod plan;
pub mod results;
pub mod run;
pub mod schema;
pub mod studies;

pub use plan::{load_experiment, parse_experiment};
pub use results::VariantResult;
pub use run::{run_variant, run_variants, Progress, RunOptions};
pub use schema::Variant;
