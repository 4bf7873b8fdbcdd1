//! Uniform random 4 KiB writes against the closed forms of experiments.md section 1.
mod common;
use common::*;
use wafsim_core::theory;
use wafsim_core::GcPolicy;

fn check(policy: GcPolicy, np: u32, eus: u32, op: f64) {
    let mut dev = uniform_device(eus, np, op, policy);
    let geo = dev.geometry().clone();
    let u = geo.namespace_units;
    let sim = steady_waf(&mut dev, 42, 4 * u, 4 * u);
    let alpha = geo.effective_alpha();
    let want = match policy {
        GcPolicy::Greedy => theory::waf_greedy(alpha, np as f64),
        GcPolicy::Fifo => theory::waf_fifo(alpha),
        _ => unreachable!(),
    };
    let err = (sim - want) / want;
    eprintln!("{policy} np={np} eus={eus} op={op}: alpha_eff={alpha:.5} sim={sim:.4} theory={want:.4} err={:+.2}%", err * 100.0);
    assert!(err.abs() < 0.03, "{policy} OP {op}: simulated WAF {sim:.4} vs theory {want:.4} ({:+.2}%)", err * 100.0);
}

#[test]
fn greedy_op7() { check(GcPolicy::Greedy, 64, 4096, 0.07); }
#[test]
fn greedy_op28() { check(GcPolicy::Greedy, 64, 4096, 0.28); }
#[test]
fn greedy_op100() { check(GcPolicy::Greedy, 64, 4096, 1.00); }
#[test]
fn fifo_op7() { check(GcPolicy::Fifo, 64, 4096, 0.07); }
#[test]
fn fifo_op28() { check(GcPolicy::Fifo, 64, 4096, 0.28); }
#[test]
fn fifo_op100() { check(GcPolicy::Fifo, 64, 4096, 1.00); }
