//! Studies built from many runs: parameter sweeps, the placement advisor, the catalog of
//! published experiments, the validation against closed-form WAF, the datasheet check of the
//! timing model, the spread over an experiment's unknowns, and the benchmarks.

pub mod advise;
pub mod bench;
pub mod bench_drive;
pub mod catalog;
pub mod datasheet;
pub mod probe;
pub mod spread;
pub mod sweep;
pub mod validate;
