//! Inputs nobody here wrote must never hang, panic or give a silent wrong answer: stonewalled
//! fio files in timed runs, empty phases, scaled sizes, dedicated time series, interleaving
//! modes and steady state (issue 7).
use std::path::PathBuf;
use wafsim_experiment::plan::scale::scale_spec;
use wafsim_experiment::{parse_experiment, run_variant, RunOptions, VariantResult};

/// A fresh directory for one test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wafsim-inputs-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small timed drive (16 dies, 64 MiB erase units at full size) with one namespace.
const TIMED_DEVICE: &str = r#"
precondition = false
[device]
capacity = "16GiB"
over_provisioning = 0.12
[device.geometry]
page_size = "16KiB"
pages_per_block = 256
planes_per_die = 2
dies_per_channel = 2
channels = 8
[[namespace]]
name = "ns1"
size = "16GiB"
[timing]
enabled = true
"#;

fn run_doc(doc: &str, base: &std::path::Path, scale: f64) -> anyhow::Result<VariantResult> {
    let mut v = parse_experiment(doc, "t.toml")?.remove(0);
    v.spec.base_dir = base.to_path_buf();
    scale_spec(&mut v.spec, scale)?;
    run_variant(&v, RunOptions::default(), &|_| {})
}

fn fio_phase(file: &str) -> String {
    format!("[[phase]]\nname = \"run\"\n[[phase.fio]]\nfile = \"{file}\"\nnamespace = \"ns1\"\n")
}

/// fio's examples/e4defrag.fio shape: a size-bounded job, then `stonewall` and a time_based
/// job. The time_based job used to run forever (it inherited the first job's unbounded runtime).
#[test]
fn timed_stonewall_after_size_bounded_job_ends() {
    let d = dir("e4defrag");
    std::fs::write(d.join("j.fio"), "[global]\nbs=32k\nsize=64M\n[first]\nrw=write\n[second]\nstonewall\ntime_based\nruntime=2\nrw=randwrite\n").unwrap();
    let r = run_doc(&format!("{TIMED_DEVICE}{}", fio_phase("j.fio")), &d, 0.01).unwrap();
    let names: Vec<&str> = r.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["first", "second"], "one row per job, named after its section");
    // The first job writes its (scaled) 64M region once (fio never shortens the last block, so
    // 20.48 blocks of 32k become 21); the second runs 2 s x scale 0.01.
    assert_eq!(r.jobs[0].stats.write_bytes, 21 * (32 << 10));
    assert!(r.jobs[1].stats.write_ios > 0);
    let t = r.jobs[1].timing.unwrap();
    // Issuing stops at the runtime; in-flight I/O drains after it.
    assert!((20e6..21.5e6).contains(&(t.window_ns as f64)), "second job ran {} ns, expected its 20 ms runtime", t.window_ns);
}

/// Two time_based phases in one file: the second used to do no I/O at all.
#[test]
fn timed_two_time_based_stages_both_run_their_runtime() {
    let d = dir("two-stages");
    std::fs::write(d.join("j.fio"), "[global]\ntime_based\nruntime=1\nbs=4k\niodepth=16\n[reads]\nrw=randread\n[writes]\nstonewall\nrw=randwrite\nruntime=2\n").unwrap();
    let r = run_doc(&format!("{TIMED_DEVICE}{}", fio_phase("j.fio")), &d, 0.01).unwrap();
    assert_eq!(r.jobs.len(), 2);
    let (reads, writes) = (&r.jobs[0], &r.jobs[1]);
    assert_eq!((reads.name.as_str(), writes.name.as_str()), ("reads", "writes"));
    assert!(reads.stats.read_ios > 0 && reads.stats.write_ios == 0);
    assert!(writes.stats.write_ios > 0 && writes.stats.read_ios == 0);
    let (tr, tw) = (reads.timing.unwrap(), writes.timing.unwrap());
    // Issuing stops at the runtime; in-flight I/O drains after it.
    assert!((10e6..11.5e6).contains(&(tr.window_ns as f64)), "{}", tr.window_ns);
    assert!((20e6..21.5e6).contains(&(tw.window_ns as f64)), "{}", tw.window_ns);
    // The stages ran one after the other: the measured time is their sum.
    let elapsed = r.timed.unwrap().elapsed_ns as f64;
    assert!((elapsed - (tr.window_ns + tw.window_ns) as f64).abs() < 1e3, "{elapsed}");
}

/// Untimed: stonewalled jobs of one file run in order, each reported on its own row, while a
/// job of another source runs alongside both stages.
#[test]
fn untimed_stages_report_one_row_per_job() {
    let d = dir("untimed-stages");
    std::fs::write(d.join("j.fio"), "[global]\nbs=64k\nsize=4M\n[fill]\nrw=write\n[over]\nstonewall\nrw=randwrite\nnumjobs=2\n").unwrap();
    let doc = format!(
        "precondition = false\n[device]\ncapacity = \"64MiB\"\nover_provisioning = 0.25\nerase_unit = \"256KiB\"\n[[namespace]]\nname = \"ns1\"\nsize = \"64MiB\"\n{}",
        fio_phase("j.fio")
    );
    let r = run_doc(&doc, &d, 1.0).unwrap();
    let rows: Vec<(&str, u64)> = r.jobs.iter().map(|j| (j.name.as_str(), j.stats.write_bytes)).collect();
    assert_eq!(rows, [("fill", 4 << 20), ("over", 4 << 20), ("over.1", 4 << 20)]);
}

#[test]
fn a_phase_without_io_is_an_error_not_a_success() {
    let d = dir("no-io");
    // A read-only job on a namespace... still issues reads; an fio job region past the end is
    // refused by the job; here every source is empty: a trace-free, job-free phase.
    let doc = "[device]\ncapacity = \"64MiB\"\nover_provisioning = 0.25\nerase_unit = \"256KiB\"\n[[phase]]\nname = \"empty\"\n";
    let e = run_doc(doc, &d, 1.0).unwrap_err();
    assert!(format!("{e:#}").contains("phase \"empty\" has no workload"), "{e:#}");
}

#[test]
fn duplicate_namespace_names_are_refused() {
    let doc = "[device]\ncapacity = \"64MiB\"\nover_provisioning = 0.25\nerase_unit = \"256KiB\"\n[[namespace]]\nname = \"a\"\nsize = \"32MiB\"\n[[namespace]]\nname = \"a\"\nsize = \"32MiB\"\n[[workload]]\nnamespace = \"a\"\npattern = \"sequential\"\nbs = \"4KiB\"\namount = \"1x\"\n";
    let e = parse_experiment(doc, "t.toml").unwrap_err();
    assert!(format!("{e:#}").contains("two [[namespace]] tables are named \"a\""), "{e:#}");
}

/// A job size that scaling would shrink below one block runs on one block, with a warning
/// naming the scale and the unscaled value; an error caused by the scaled namespace says so.
#[test]
fn scaling_messages_name_the_scale_and_the_unscaled_values() {
    let d = dir("scale");
    std::fs::write(d.join("small.fio"), "[tiny]\nrw=write\nbs=4k\nsize=1M\n").unwrap();
    std::fs::write(d.join("big.fio"), "[huge-block]\nrw=write\nbs=8M\n").unwrap();
    let dev = "precondition = false\n[device]\ncapacity = \"16GB\"\nover_provisioning = 0.25\nerase_unit = \"64MiB\"\n[[namespace]]\nname = \"ns1\"\nsize = \"16GB\"\n";
    let r = run_doc(&format!("{dev}{}", fio_phase("small.fio")), &d, 0.001).unwrap();
    assert_eq!(r.jobs[0].stats.write_bytes, 4096);
    let w = r.warnings.iter().find(|w| w.contains("size=1048576")).expect("a warning about the scaled size");
    assert!(w.contains("scale 1/1000") && w.contains("--scale"), "{w}");
    // 16 GB / 1000 = 16 MB namespace: an 8 MiB block still fits; at 1/10,000 (1.6 MB) it does not.
    let e = run_doc(&format!("{dev}{}", fio_phase("big.fio")), &d, 0.0001).unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("scale 1/10000") && msg.contains("unscaled") && msg.contains("--full-scale"), "{msg}");
}

const TWO_TENANTS: &str = r#"
precondition = true
[device]
capacity = "512MiB"
over_provisioning = 0.125
erase_unit = "1MiB"
[[namespace]]
name = "a"
size = "256MiB"
[[namespace]]
name = "b"
size = "256MiB"
[[workload]]
namespace = "a"
pattern = "sequential"
bs = "4KiB"
amount = "2x"
[[workload]]
namespace = "b"
pattern = "sequential"
bs = "64KiB"
amount = "32x"
"#;

/// Dedicated layout: the time series covers every drive and all drives together, and the last
/// sample of all drives agrees with the table.
#[test]
fn dedicated_time_series_covers_every_drive_and_the_total() {
    let doc = TWO_TENANTS.replace("precondition = true\n", "precondition = true\nlayout = \"dedicated\"\n");
    let v = parse_experiment(&doc, "t").unwrap().remove(0);
    let r = run_variant(&v, RunOptions { sample_every_bytes: Some(64 << 20), ..RunOptions::default() }, &|_| {}).unwrap();
    assert_eq!(r.devices, 2);
    let last = |dev: Option<u32>| *r.timeseries.iter().rev().find(|s| s.device == dev).unwrap();
    let all = last(None);
    assert_eq!(all.host_bytes, r.hbmw());
    assert_eq!(all.media_bytes, r.mbmw());
    let (d0, d1) = (last(Some(0)), last(Some(1)));
    assert_eq!(d0.host_bytes + d1.host_bytes, all.host_bytes);
    assert_eq!(d0.host_bytes, 2 * (256 << 20));
    assert_eq!(d1.host_bytes, 32 * (256 << 20));
    // The drives are sampled at the same moments: as many samples per drive as for the total.
    let n = |dev| r.timeseries.iter().filter(|s| s.device == dev).count();
    assert_eq!(n(None), n(Some(0)));
    assert_eq!(n(None), n(Some(1)));
}

/// Strict turns vs random turns of the same two tenants: both deterministic (seeded), same
/// host bytes; random turns change the interleaving and hence WAF.
#[test]
fn interleave_modes_are_deterministic_and_differ() {
    let run = |mode: &str, seed: u64| {
        let doc = format!("seed = {seed}\ninterleave = \"{mode}\"\n{TWO_TENANTS}");
        run_variant(&parse_experiment(&doc, "t").unwrap().remove(0), RunOptions::default(), &|_| {}).unwrap()
    };
    let rr = run("round-robin", 1);
    let r1 = run("random", 1);
    let r1b = run("random", 1);
    let r2 = run("random", 2);
    assert_eq!(rr.hbmw(), r1.hbmw());
    assert_eq!(r1.mbmw(), r1b.mbmw(), "seeded: identical reruns");
    assert_ne!(r1.mbmw(), r2.mbmw(), "another seed, another interleaving");
    assert_ne!(rr.mbmw(), r1.mbmw());
    let e = parse_experiment(&format!("interleave = \"shuffle\"\n{TWO_TENANTS}"), "t").unwrap_err();
    assert!(format!("{e:#}").contains("\"round-robin\" or \"random\""), "{e:#}");
}

/// A steady_state phase stops once WAF is steady and reports its measurement window; a
/// measured phase that ends before steady state warns.
#[test]
fn steady_state_phase_stops_when_steady_and_short_phases_warn() {
    let base = "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.125\nerase_unit = \"512KiB\"\n";
    let doc = format!(
        "{base}[[phase]]\nname = \"measure\"\nsteady_state = {{ round = \"0.25x\", window = 5 }}\n[[phase.workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"50x\"\n"
    );
    let r = run_variant(&parse_experiment(&doc, "t").unwrap().remove(0), RunOptions::default(), &|_| {}).unwrap();
    let ss = r.phases[0].steady.clone().unwrap();
    assert!(ss.steady, "{ss:?}");
    assert!(ss.rounds < 200, "stopped early: {} rounds of 0.25x instead of 50x", ss.rounds);
    let round = (0.25 * (256u64 << 20) as f64) as u64;
    assert_eq!(ss.round_bytes, round);
    // The reported counters are the window's: 5 rounds (a batch of 256 I/Os may overshoot a
    // round of 16,384 by 1.6%).
    let h = r.hbmw() as f64 / (5 * round) as f64;
    assert!((1.0..1.02).contains(&h), "{h}");
    // The window's WAF is the steady value: near the greedy closed form for OP 12.5%.
    assert!((3.5..5.5).contains(&r.waf()), "{}", r.waf());
    // Without steady_state, phases are judged by 5 rounds of 0.1x: 0.3x of random writes is
    // too short to tell, and says so; 2x is steady (random writes settle within ~0.3x).
    let doc = |amount: &str| format!("{base}[[workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"{amount}\"\n");
    let r = run_variant(&parse_experiment(&doc("0.3x"), "t").unwrap().remove(0), RunOptions::default(), &|_| {}).unwrap();
    let w = r.warnings.iter().find(|w| w.contains("ended before WAF was steady")).expect("a warning");
    assert!(w.contains("only 2 complete round(s)") && w.contains("judging needs 5"), "{w}");
    let r = run_variant(&parse_experiment(&doc("2x"), "t").unwrap().remove(0), RunOptions::default(), &|_| {}).unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(r.phases[0].steady.as_ref().unwrap().steady);
    // Before garbage collection starts WAF is 1.0 and flat, but not steady: the first 0.075x
    // (5 rounds of 0.015x, each overshooting by at most 256 I/Os) of random writes after the
    // fill still uses free erase units (OP 12.5%).
    let doc = format!("{base}[[phase]]\nname = \"m\"\nsteady_state = {{ round = \"0.015x\", max_rounds = 5 }}\n[[phase.workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"1x\"\n");
    let r = run_variant(&parse_experiment(&doc, "t").unwrap().remove(0), RunOptions::default(), &|_| {}).unwrap();
    let ss = r.phases[0].steady.clone().unwrap();
    assert!(!ss.steady && ss.window_waf == [1.0; 5], "{ss:?}");
    assert!(r.warnings.iter().any(|w| w.contains("garbage collection has not started")), "{:?}", r.warnings);
}

/// `over_provisioning = 0` is accepted by the spec (zoned drives keep no spare); a flash FTL
/// with no spare erase unit is refused with the reason and what to write instead, and a client
/// drive's GB/GiB difference is expressed with raw_capacity and runs.
#[test]
fn zero_over_provisioning_explains_itself_and_client_drives_run() {
    let doc = |dev: &str| format!("[device]\n{dev}erase_unit = \"1MiB\"\n[[workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"1x\"\n");
    let e = parse_experiment(&doc("capacity = \"2GB\"\nover_provisioning = 0\n"), "t.toml").unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("no spare erase units") && msg.contains("raw_capacity"), "{msg}");
    assert!(!msg.contains("must be > 0"), "{msg}");
    let r = run_variant(&parse_experiment(&doc("capacity = \"2GB\"\nraw_capacity = \"2GiB\"\n"), "t.toml").unwrap().remove(0), RunOptions::default(), &|_| {}).unwrap();
    assert!((r.op_logical - 0.0737).abs() < 0.001, "{}", r.op_logical);
    assert!(r.waf() > 2.0, "random writes with 7.4% spare need GC: {}", r.waf());
}

#[test]
fn capacity_beyond_64_bits_says_so() {
    let e = parse_experiment("[device]\ncapacity = \"18446744073709551615\"\nover_provisioning = 0.5\nerase_unit = \"1GiB\"\n[[workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"1x\"\n", "t.toml").unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("2^64") && !msg.contains("must be > 0"), "{msg}");
}

const SMALL: &str = "precondition = false\n[device]\ncapacity = \"64MiB\"\nover_provisioning = 0.25\nerase_unit = \"256KiB\"\n[[namespace]]\nname = \"ns1\"\nsize = \"64MiB\"\n";

/// fio's command-line form runs through the same interpreter as a job file.
#[test]
fn fio_command_line_form_runs_like_the_job_file() {
    let d = dir("args");
    std::fs::write(d.join("j.fio"), "[mix]\nfilename=/dev/vdb\nrw=randrw\nrwmixread=70\nbs=4k\nsize=8M\n").unwrap();
    let file = run_doc(&format!("{SMALL}{}", fio_phase("j.fio")), &d, 1.0).unwrap();
    let doc = format!("{SMALL}[[phase]]\nname = \"run\"\n[[phase.fio]]\nargs = \"fio --name=mix --filename=/dev/vdb --rw=randrw --rwmixread=70 --bs=4k --size=8M\"\nnamespace = \"ns1\"\n");
    let args = run_doc(&doc, &d, 1.0).unwrap();
    assert_eq!(args.jobs[0].name, "mix");
    assert_eq!(args.jobs[0].stats, file.jobs[0].stats);
    assert_eq!(args.mbmw(), file.mbmw());
    // Errors name the argument.
    let bad = doc.replace("--rwmixread=70", "--rwmixread=170");
    let e = run_doc(&bad, &d, 1.0).unwrap_err();
    assert!(format!("{e:#}").contains("args:") && format!("{e:#}").contains("rwmixread"), "{e:#}");
}

/// `[fio_env]` fills a job file's `${NAME}`s below a `[[phase.fio]]` entry's own `env`; a variant
/// changes one with a dotted key. `default_scale` is the scale a run takes without `--scale`.
#[test]
fn experiment_wide_fio_env_and_default_scale() {
    let d = dir("fio-env");
    std::fs::write(d.join("j.fio"), "[w]\nrw=write\nbs=${BS}\nsize=${SIZE}\n").unwrap();
    let doc = format!(
        "{SMALL}[fio_env]\nBS = \"64k\"\nSIZE = \"8M\"\n{}[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nfio_env.SIZE = \"4M\"\n",
        fio_phase("j.fio")
    );
    let run_named = |doc: &str, name: &str| {
        let mut v = parse_experiment(doc, "t.toml").unwrap().into_iter().find(|v| v.name == name).unwrap();
        v.spec.base_dir = d.clone();
        run_variant(&v, RunOptions::default(), &|_| {}).unwrap()
    };
    let a = run_named(&doc, "a");
    assert_eq!((a.jobs[0].stats.write_bytes, a.jobs[0].stats.write_ios), (8 << 20, 128));
    assert_eq!(run_named(&doc, "b").jobs[0].stats.write_bytes, 4 << 20);
    // The entry's own env wins.
    let own = doc.replace("namespace = \"ns1\"\n[[variant]]", "namespace = \"ns1\"\nenv = { SIZE = \"2M\" }\n[[variant]]");
    assert_eq!(run_named(&own, "b").jobs[0].stats.write_bytes, 2 << 20);
    // default_scale: taken when no --scale is given; out of range is refused with its name.
    let vs = parse_experiment(&format!("default_scale = 0.25\n{doc}"), "t.toml").unwrap();
    assert_eq!(wafsim_experiment::plan::scale::auto_scale_all(vs.iter().map(|v| &v.spec)).unwrap(), 0.25);
    let vs = parse_experiment(&format!("default_scale = 2.0\n{doc}"), "t.toml").unwrap();
    let e = wafsim_experiment::plan::scale::auto_scale_all(vs.iter().map(|v| &v.spec)).unwrap_err();
    assert!(format!("{e:#}").contains("default_scale"), "{e:#}");
}

/// `fdp=1` on a drive without FDP fails, as fio fails there.
#[test]
fn fdp_jobs_on_a_drive_without_fdp_are_refused() {
    let d = dir("fdp-off");
    std::fs::write(d.join("j.fio"), "[w]\nioengine=io_uring_cmd\nfdp=1\nrw=write\nbs=64k\nsize=1M\n").unwrap();
    let e = run_doc(&format!("{SMALL}{}", fio_phase("j.fio")), &d, 1.0).unwrap_err();
    assert!(format!("{e:#}").contains("j.fio:1") && format!("{e:#}").contains("FDP"), "{e:#}");
}

/// `write_iolog=` writes a fio iolog v3 of what the job issued; replaying it as a trace gives
/// the same I/O.
#[test]
fn write_iolog_records_what_the_job_issued() {
    let d = dir("iolog");
    let log = d.join("w.log");
    std::fs::write(d.join("j.fio"), format!("[w]\nrw=randwrite\nbs=16k\nsize=2M\nwrite_iolog={}\n", log.display())).unwrap();
    let r = run_doc(&format!("{SMALL}{}", fio_phase("j.fio")), &d, 1.0).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n"), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains(" write ")).count() as u64, r.jobs[0].stats.write_ios);
    let doc = format!("{SMALL}[[phase]]\nname = \"replay\"\n[[phase.trace]]\nfile = \"w.log\"\nnamespace = \"ns1\"\n");
    let replay = run_doc(&doc, &d, 1.0).unwrap();
    assert_eq!(replay.hbmw(), r.hbmw());
    assert_eq!(replay.mbmw(), r.mbmw());
}

/// A log that cannot be written (the disk is full) fails the run with the operating system's
/// reason, naming the log: when the job runs dry (untimed), and when a time limit stops it
/// first (timed, `time_based`: the log's last lines are written after the run).
#[test]
fn write_iolog_errors_reach_the_user() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("no /dev/full; skipped");
        return;
    }
    let d = dir("iolog-full");
    std::fs::write(d.join("j.fio"), "[w]\nrw=randwrite\nbs=4k\nsize=1M\nwrite_iolog=/dev/full\n").unwrap();
    let e = run_doc(&format!("{SMALL}{}", fio_phase("j.fio")), &d, 1.0).unwrap_err();
    let text = format!("{e:#}");
    assert!(text.contains("write_iolog /dev/full") && text.contains("No space left"), "{text}");
    std::fs::write(d.join("t.fio"), "[w]\nrw=randwrite\nbs=4k\ntime_based=1\nruntime=20ms\nwrite_iolog=/dev/full\n").unwrap();
    let e = run_doc(&format!("{TIMED_DEVICE}{}", fio_phase("t.fio")), &d, 0.046875).unwrap_err();
    let text = format!("{e:#}");
    assert!(text.contains("write_iolog /dev/full") && text.contains("No space left"), "{text}");
}

/// Timing decides when the FTL's NAND work happens, never what it is: the same I/O sequence
/// (one job, so no interleaving chosen by the queues) gives the same WAF timed and untimed,
/// including a measurement that starts part-way into GC. (At this scale the erase unit, 6 MiB,
/// is whole program-unit stripes over the 16 dies, so the timed drive needs no rounding; at
/// other scales the timed erase unit is rounded to stripes and the run says "as simulated".)
#[test]
fn timing_does_not_change_the_waf_of_one_io_sequence() {
    let body = r#"
[[phase]]
name = "fill"
measure = false
[[phase.workload]]
namespace = "ns1"
pattern = "sequential"
bs = "128KiB"
amount = "1x"
[[phase]]
name = "season"
measure = false
[[phase.workload]]
namespace = "ns1"
pattern = "random"
bs = "4KiB"
amount = "0.5x"
[[phase]]
name = "measure"
[[phase.workload]]
namespace = "ns1"
pattern = "random"
bs = "4KiB"
amount = "1.5x"
"#;
    let d = dir("timed-vs-untimed");
    let scale = 0.046875;
    let timed = run_doc(&format!("{TIMED_DEVICE}{body}"), &d, scale).unwrap();
    let untimed = run_doc(&format!("{}{body}", TIMED_DEVICE.replace("enabled = true", "enabled = false")), &d, scale).unwrap();
    assert!(timed.timed.is_some() && untimed.timed.is_none());
    assert!(timed.waf() > 1.5, "GC ran in the measured phase (WAF {})", timed.waf());
    assert_eq!(timed.waf(), untimed.waf());
    assert_eq!((timed.counters.gc_units, timed.counters.erases), (untimed.counters.gc_units, untimed.counters.erases));
}

/// A sole namespace without a size is the whole drive, at any scale; with several, each needs
/// one, and the error says so (it used to read `invalid size ""`).
#[test]
fn a_sole_namespace_without_a_size_is_the_whole_drive() {
    let doc = |namespaces: &str| format!("[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.12\nerase_unit = \"1MiB\"\n{namespaces}[[workload]]\nnamespace = \"a\"\npattern = \"sequential\"\nbs = \"128KiB\"\namount = \"1x\"\n");
    for scale in [1.0, 0.5] {
        let mut v = parse_experiment(&doc("[[namespace]]\nname = \"a\"\n"), "t.toml").unwrap().remove(0);
        scale_spec(&mut v.spec, scale).unwrap();
        let r = run_variant(&v, RunOptions::default(), &|_| {}).unwrap();
        assert_eq!(r.namespaces[0].size_bytes, r.logical_bytes, "scale {scale}");
        assert_eq!(r.hbmw(), r.logical_bytes, "1x of the namespace is the drive");
    }
    let e = format!("{:#}", parse_experiment(&doc("[[namespace]]\nname = \"a\"\n[[namespace]]\nname = \"b\"\nsize = \"64MiB\"\n"), "t.toml").unwrap_err());
    assert!(e.contains("namespace \"a\": size missing"), "{e}");
}
