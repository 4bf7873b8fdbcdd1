//! The validation cases of docs/validation.md at test scale (>= 1,000 erase units): the
//! simulator against closed forms and bounds. `wafsim validate --full` runs them larger.
use wafsim_core::GcPolicy;
use wafsim_experiment::studies::validate::*;

fn check(c: Case) {
    eprintln!("{}: sim {:.4} expected {:.4} ({:+.2}%) {}", c.name, c.simulated, c.expected, c.rel_error() * 100.0, c.note);
    assert!(c.passed(), "{}: simulated {:.4}, expected {:.4} within {:?}", c.name, c.simulated, c.expected, c.tolerance);
}

#[test]
fn single_sequential_writer_is_exactly_one() {
    let c = single_sequential_case(Scale::TEST, 1);
    assert_eq!(c.simulated, 1.0, "{}", c.simulated);
}
#[test]
fn greedy_op7() { check(uniform_case(GcPolicy::Greedy, 64, 0.07, Scale::TEST, 1)); }
#[test]
fn greedy_op28() { check(uniform_case(GcPolicy::Greedy, 64, 0.28, Scale::TEST, 1)); }
#[test]
fn greedy_op100() { check(uniform_case(GcPolicy::Greedy, 64, 1.0, Scale::TEST, 1)); }
#[test]
fn greedy_np256_op7() { check(uniform_case(GcPolicy::Greedy, 256, 0.07, Scale::TEST, 1)); }
#[test]
fn fifo_op7() { check(uniform_case(GcPolicy::Fifo, 64, 0.07, Scale::TEST, 1)); }
#[test]
fn fifo_op28() { check(uniform_case(GcPolicy::Fifo, 64, 0.28, Scale::TEST, 1)); }
#[test]
fn fifo_op100() { check(uniform_case(GcPolicy::Fifo, 64, 1.0, Scale::TEST, 1)); }
#[test]
fn random_victim_op28() { check(uniform_case(GcPolicy::DChoices(1), 256, 0.28, Scale::TEST, 1)); }
#[test]
fn hot_cold_90_10_fifo_op7() { check(hot_cold_case(0.9, 0.1, 0.07, Scale::TEST, 1)); }
#[test]
fn hot_cold_90_10_fifo_op28() { check(hot_cold_case(0.9, 0.1, 0.28, Scale::TEST, 1)); }

#[test]
fn d_choices_and_cost_benefit_lie_between_greedy_and_random() {
    for policy in [GcPolicy::DChoices(4), GcPolicy::CostBenefit] {
        let (c, lo, hi) = bounded_case(policy, 64, 0.28, Scale::TEST, 1);
        eprintln!("{}: {:.4} in [{lo:.4}, {hi:.4}]", c.name, c.simulated);
        assert!(c.simulated > lo * 0.99 && c.simulated < hi, "{}: {} not in [{lo}, {hi}]", c.name, c.simulated);
    }
}

#[test]
fn sequential_writers_blender_and_fdp() {
    let conventional = sequential_writers_case(false, Scale::TEST, 1);
    let fdp = sequential_writers_case(true, Scale::TEST, 1);
    eprintln!("8 sequential writers: conventional WAF {:.4}, FDP WAF {:.4}", conventional.simulated, fdp.simulated);
    assert!(conventional.simulated > 1.2, "blender WAF should be clearly above 1: {}", conventional.simulated);
    assert!(fdp.simulated <= 1.01, "FDP WAF {}", fdp.simulated);
}
