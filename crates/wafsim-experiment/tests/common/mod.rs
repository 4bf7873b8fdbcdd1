//! What the experiment tests share: running a variant at a scale, loading the repository's
//! experiment files, and summing job figures.
#![allow(dead_code)] // each test file uses a part

use wafsim_experiment::plan::scale::scale_spec;
use wafsim_experiment::{load_experiment, parse_experiment, run_variant, RunOptions, Variant, VariantResult};

/// Run `v` at `scale`, without progress.
pub fn run_at(mut v: Variant, scale: f64) -> anyhow::Result<VariantResult> {
    scale_spec(&mut v.spec, scale)?;
    run_variant(&v, RunOptions::default(), &|_| {})
}

/// The first variant of experiment text `doc` at `scale`.
pub fn run_doc(doc: &str, scale: f64) -> anyhow::Result<VariantResult> {
    run_at(parse_experiment(doc, "test.toml")?.remove(0), scale)
}

/// Variant `name` of experiment text `doc` at `scale`.
pub fn run_named(doc: &str, name: &str, scale: f64) -> VariantResult {
    let v = parse_experiment(doc, "test.toml").unwrap().into_iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name:?}"));
    run_at(v, scale).unwrap()
}

/// The variants of experiments/`rel` in this repository.
pub fn experiment(rel: &str) -> Vec<Variant> {
    load_experiment(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments").join(rel)).unwrap()
}

/// Write bandwidth of phase `phase`, summed over its jobs, in MiB/s (timed runs).
pub fn write_mib_s(r: &VariantResult, phase: &str) -> f64 {
    r.jobs.iter().filter(|j| j.phase == phase).map(|j| j.timing.unwrap().write.bytes_per_sec).sum::<f64>() / (1u64 << 20) as f64
}
