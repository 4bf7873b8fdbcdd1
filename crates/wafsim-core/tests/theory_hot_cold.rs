//! Hot/cold 90/10 in one frontier under FIFO against the hot/cold formula (experiments.md §1).
mod common;
use common::*;
use wafsim_core::{theory, GcPolicy, Rng};

#[test]
fn hot_cold_90_10_fifo() {
    for op in [0.07, 0.28] {
        let mut dev = uniform_device(4096, 64, op, GcPolicy::Fifo);
        let geo = dev.geometry().clone();
        let u = geo.namespace_units;
        let hot = u / 10;
        precondition(&mut dev);
        let mut rng = Rng::new(9);
        let mut run = |dev: &mut wafsim_core::Device, n: u64| {
            let mut batch = Vec::with_capacity(1024);
            for i in 0..n {
                let lba = if rng.unit_f64() < 0.9 { rng.below(hot) } else { hot + rng.below(u - hot) };
                batch.push(write(0, lba, 1));
                if batch.len() == 1024 || i + 1 == n {
                    dev.submit_batch(&batch).unwrap();
                    batch.clear();
                }
            }
        };
        run(&mut dev, 6 * u);
        let before = dev.counters().clone();
        run(&mut dev, 4 * u);
        let d = dev.counters().delta(&before);
        let sim = d.media_units() as f64 / d.host_units as f64;
        let f_hot = hot as f64 / u as f64;
        let want = theory::waf_hot_cold_fifo(geo.effective_alpha(), &[(0.9, f_hot), (0.1, 1.0 - f_hot)]);
        let err = (sim - want) / want;
        eprintln!("hot/cold 90/10 FIFO OP {op}: sim {sim:.4} theory {want:.4} ({:+.2}%)", err * 100.0);
        assert!(err.abs() < 0.05, "OP {op}: sim {sim:.4} vs theory {want:.4}");
    }
}
