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

/// `measure_from = "run"`: a timed phase's window and checkpoints start where the stores'
/// clients sent their last load request, as an untimed phase's do (there seen at a batch end,
/// here at the first write completion past a look every thousandth of the capacity).
#[test]
fn measure_from_run_leaves_the_load_out_of_a_timed_phase() {
    let doc = r#"
name = "wiredtiger"
seed = 1
[device]
preset = "enterprise-tlc-1.92tb"
[device.fdp]
enabled = false
[[namespace]]
name = "db"
size = "1.92TB"
[[phase]]
name = "ycsb"
measure_from = "run"
checkpoints = ["0.5x"]
[[phase.kv]]
namespace = "db"
store = "wiredtiger"
ycsb = "a"
fill = 0.05
rate = 5000
amount = "4x"
[phase.kv.wiredtiger]
wt_cache = "10%"
"#;
    let scale = 0.001;
    let untimed = common::run_doc(doc, scale).unwrap();
    let timed = common::run_doc(&format!("{doc}[timing]\nenabled = true\n"), scale).unwrap();
    for (what, r) in [("untimed", &untimed), ("timed", &timed)] {
        let p = &r.phases[0];
        assert!(p.window.starts_with("the run after the stores' load"), "{what}: {}", p.window);
        assert_eq!(p.checkpoints[0].origin, "the run start", "{what}");
        assert!(p.checkpoints[0].reached.is_some(), "{what}: {:?}", p.checkpoints[0]);
        assert!(p.whole_waf.is_some(), "{what}");
    }
    let close = |what: &str, a: f64, b: f64, tol: f64| {
        eprintln!("{what}: untimed {a}, timed {b}");
        assert!((a - b).abs() / a < tol, "{what}: untimed {a} vs timed {b}");
    };
    // Seen: 6,341,210,112 / 6,341,939,200 host bytes and 220,942,792 / 220,942,792 application
    // bytes after the load, checkpoint at 964,304,896 / 961,617,920 host bytes (untimed / timed).
    close("host bytes after the load", untimed.counters.host_write_bytes as f64, timed.counters.host_write_bytes as f64, 0.01);
    close("application bytes after the load", untimed.filesystems[0].file_write_bytes as f64, timed.filesystems[0].file_write_bytes as f64, 0.01);
    close("drive WAF after the load", untimed.waf(), timed.waf(), 0.02);
    let (a, b) = (untimed.phases[0].checkpoints[0].reached.unwrap(), timed.phases[0].checkpoints[0].reached.unwrap());
    close("host bytes at the checkpoint, from the run start", a as f64, b as f64, 0.01);
}
