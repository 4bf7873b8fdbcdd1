//! The section 4 experiment (experiments/kv/four-aerospike.toml) with Aerospike's mechanisms:
//! its result must not depend on the scale it runs at by more than its unknowns move it, and the
//! stores report what a user needs to judge a run (refused writes, how busy defrag was).

mod common;
use common::experiment;
use wafsim_experiment::plan::scale::scale_spec;
use wafsim_experiment::studies::spread::{cases, run_spread, waf_range};
use wafsim_experiment::{run_variants, RunOptions, Variant};

fn at(scale: f64) -> Vec<Variant> {
    experiment("kv/four-aerospike.toml")
        .into_iter()
        .map(|mut v| {
            scale_spec(&mut v.spec, scale).unwrap();
            v
        })
        .collect()
}

/// Two scales (1/10,000 and 1/3,000): each variant's central device WAF moves by less than the
/// range its unknowns span at the smaller scale. Each store's row carries its refusals and its
/// defrag's busy share.
#[test]
fn four_stores_at_two_scales_move_less_than_their_unknowns() {
    let opts = || RunOptions { sample_every_bytes: None, save_images: None };
    let small_vs = at(0.0001);
    let mut small: Vec<_> = run_variants(&small_vs, opts(), &|_, _| {}).into_iter().map(Result::unwrap).collect();
    run_spread(&cases(&small_vs).unwrap(), &mut small, &|_, _| {}).unwrap();
    let large: Vec<_> = run_variants(&at(0.0003), opts(), &|_, _| {}).into_iter().map(Result::unwrap).collect();
    for (s, l) in small.iter().zip(&large) {
        let (lo, hi) = waf_range(s).expect("the experiment has unknowns");
        let moved = (l.waf() - s.waf()).abs();
        eprintln!("{}: 1/10000 {:.3} (unknowns {lo:.3}..{hi:.3}), 1/3000 {:.3}", s.name, s.waf(), l.waf());
        assert!(moved < hi - lo, "{}: moved {moved:.3} with the scale, more than the unknowns' range {lo:.3}..{hi:.3}", s.name);
        assert_eq!(s.spread.len(), 9, "every case ran");
        for f in &s.filesystems {
            let names: Vec<&str> = f.metrics.iter().map(|(k, _)| k.as_str()).collect();
            for want in ["writes refused (stop-writes)", "writes refused (defrag reserve)", "defrag busy"] {
                assert!(names.contains(&want), "{}: {} lacks {want:?}: {names:?}", s.name, f.namespace);
            }
        }
    }
}
