//! The spread over an experiment's unknowns: each variant run again under every case of every
//! `[[unknown]]` that applies to it (one unknown moved at a time, the others at their central
//! value), at the variant's own scale, and the results kept beside the central one
//! ([`VariantResult::spread`]).

use crate::results::{SpreadRow, VariantResult};
use crate::run::{run_variants, Progress, RunOptions};
use crate::schema::Variant;
use anyhow::{Context, Result};

/// One case to run: which variant it belongs to and what it is.
pub struct CaseRun {
    /// Index of the variant in the slice given to [`cases`].
    pub of: usize,
    /// The unknown's name.
    pub unknown: String,
    /// The case's label.
    pub label: String,
    /// The variant with the case's overrides, scaled as the variant was.
    pub variant: Variant,
}

/// The cases of `vs`' unknowns, resolved and scaled, in the order of the variants, their
/// unknowns and cases. A case variant is named "VARIANT / LABEL" (progress shows it so).
pub fn cases(vs: &[Variant]) -> Result<Vec<CaseRun>> {
    let mut out = Vec::new();
    for (of, v) in vs.iter().enumerate() {
        for u in &v.spec.unknown {
            for c in u.case.iter().filter(|c| c.applies_to(&v.name)) {
                let ctx = || format!("variant {:?}: unknown {:?}, case {:?}", v.name, u.name, c.label);
                let mut cv = crate::plan::variant_with(v, &c.set).with_context(ctx)?;
                crate::plan::scale::scale_spec(&mut cv.spec, v.spec.scale).with_context(ctx)?;
                cv.name = format!("{} / {}", v.name, c.label);
                cv.spec.variant_name = cv.name.clone();
                out.push(CaseRun { of, unknown: u.name.clone(), label: c.label.clone(), variant: cv });
            }
        }
    }
    Ok(out)
}

/// Run `runs` (from [`cases`]; in parallel, as `run_variants` does) and put their rows into
/// `results` (one per variant given to [`cases`], in order). Cases run untimed or timed as their
/// variant does, without time series or images.
pub fn run_spread(runs: &[CaseRun], results: &mut [VariantResult], progress: &(dyn Fn(&str, Progress) + Sync)) -> Result<()> {
    let variants: Vec<Variant> = runs.iter().map(|c| c.variant.clone()).collect();
    let opts = RunOptions { sample_every_bytes: None, save_images: None };
    for (c, r) in runs.iter().zip(run_variants(&variants, opts, progress)) {
        let r = r.with_context(|| format!("unknown {:?}, case {:?}", c.unknown, c.label))?;
        results[c.of].spread.push(SpreadRow::of(&c.unknown, &c.label, &r));
    }
    Ok(())
}

/// The lowest and highest device WAF over the central result and its spread rows; `None`
/// without rows.
pub fn waf_range(r: &VariantResult) -> Option<(f64, f64)> {
    (!r.spread.is_empty()).then(|| r.spread.iter().map(|s| s.waf).fold((r.waf(), r.waf()), |(lo, hi), w| (lo.min(w), hi.max(w))))
}
