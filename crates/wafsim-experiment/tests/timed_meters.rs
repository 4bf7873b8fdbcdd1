//! The phase meters that end a phase early work in timed runs as in untimed ones: the same
//! document, run through both engines, gives the same answer within what the timing model
//! itself changes (the order in which commands reach the drive).

mod common;

/// A 4 KiB random writer on a fresh drive, with `steady_state`: both engines stop once the
/// per-round WAF is steady, long before the phase's amount, and measure the same window.
#[test]
fn steady_state_stops_a_timed_phase_as_an_untimed_one() {
    let doc = r#"
name = "steady"
seed = 3
[device]
preset = "enterprise-tlc-1.92tb"
[device.fdp]
enabled = false
[[namespace]]
name = "a"
size = "1.92TB"
[[phase]]
name = "p"
steady_state = { round = "0.25x", window = 5, excursion = 0.1, slope = 0.05 }
[[phase.workload]]
namespace = "a"
pattern = "random"
bs = "4KiB"
amount = "20x"
iodepth = 32
"#;
    // 1/1000: below it the timing model's scaled superblocks leave the drive fewer, larger erase
    // units than the untimed one (at 1/5000, 13.0% OP as simulated against 14.2%).
    let scale = 0.001;
    let untimed = common::run_doc(doc, scale).unwrap();
    let timed = common::run_doc(&format!("{doc}[timing]\nenabled = true\n"), scale).unwrap();
    let logical = untimed.logical_bytes as f64;
    for (what, r) in [("untimed", &untimed), ("timed", &timed)] {
        let p = &r.phases[0];
        let v = p.steady.as_ref().unwrap_or_else(|| panic!("{what}: a verdict"));
        assert!(v.steady, "{what}: steady ({v:?})");
        assert!(p.window.starts_with("steady state (the last 5 rounds of"), "{what}: {}", p.window);
        // Stopped once steady: far short of its 20 drive writes, and the window is 5 rounds.
        let written: u64 = r.jobs.iter().map(|j| j.stats.write_bytes).sum();
        assert!((written as f64) < 10.0 * logical, "{what}: wrote {written} B of {logical} B x 20");
        let window = r.counters.host_write_bytes as f64 / logical;
        assert!((1.24..1.3).contains(&window), "{what}: the window is 5 rounds of 0.25x: {window:.3}x");
        assert!(p.whole_waf.is_some(), "{what}: the whole phase's WAF beside the window's");
    }
    let (a, b) = (untimed.waf(), timed.waf());
    eprintln!("steady WAF untimed {a:.4}, timed {b:.4}; verdicts {:?} / {:?}; whole {:?} / {:?}", untimed.phases[0].steady, timed.phases[0].steady, untimed.phases[0].whole_waf, timed.phases[0].whole_waf);
    assert!(a > 1.5, "a random writer's steady state on a full drive: {a}");
    assert!((a - b).abs() / a < 0.03, "untimed {a} vs timed {b}");
}

/// `stop_when_full`: a store whose database outgrows its file system ends a timed phase where it
/// filled, as it ends an untimed one; without the key the timed run fails as the untimed does.
#[test]
fn stop_when_full_ends_a_timed_phase_where_the_store_filled() {
    let doc = r#"
name = "full"
seed = 1
[device]
preset = "enterprise-tlc-1.92tb"
[[namespace]]
name = "db"
size = "1.92TB"
[[phase]]
name = "p"
STOP
[[phase.kv]]
namespace = "db"
store = "lsm"
ycsb = "d"
fill = 0.5
amount = "30x"
"#;
    let scale = 0.0005;
    let timed = |d: &str| format!("{d}[timing]\nenabled = true\n");
    let e = format!("{:#}", common::run_doc(&timed(&doc.replace("STOP", "")), scale).unwrap_err());
    assert!(e.contains("store full"), "{e}");
    let stop = doc.replace("STOP", "stop_when_full = true");
    let untimed = common::run_doc(&stop, scale).unwrap();
    let t = common::run_doc(&timed(&stop), scale).unwrap();
    let why = t.phases[0].stopped.as_deref().expect("the timed phase says why it ended");
    assert!(why.starts_with("out of space after ") && why.contains("s of model time") && why.contains("store full"), "{why}");
    assert!(t.warnings.iter().any(|w| w.contains("ended out of space")), "{:?}", t.warnings);
    assert!(t.timed.is_some(), "a timed result");
    // The store fills at a point of its own request stream, which both engines issue in the
    // same order: the host bytes written by then agree closely.
    let (a, b) = (untimed.counters.host_write_bytes as f64, t.counters.host_write_bytes as f64);
    eprintln!("filled after {a} B untimed, {b} B timed");
    assert!(a > 0.0 && (a - b).abs() / a < 0.02, "untimed {a} vs timed {b}");
}
