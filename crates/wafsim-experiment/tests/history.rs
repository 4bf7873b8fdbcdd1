//! Drive history (`[history]`): what the drive held before the first phase, and drive images
//! that carry an aged drive from one run to the next.
use std::path::{Path, PathBuf};
use wafsim_experiment::{parse_experiment, run_variant, RunOptions, VariantResult};

/// A fresh directory for one test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wafsim-history-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 256 MiB drive, 12% OP, 1 MiB erase units (Np = 256), greedy GC, one namespace.
const DRIVE: &str = "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.12\nerase_unit = \"1MiB\"\n[[namespace]]\nname = \"ns1\"\nsize = \"256MiB\"\n";

fn phase(name: &str, pattern: &str, amount: &str, measure: bool) -> String {
    format!("[[phase]]\nname = \"{name}\"\nmeasure = {measure}\n[[phase.workload]]\nnamespace = \"ns1\"\npattern = \"{pattern}\"\nbs = \"4KiB\"\namount = \"{amount}\"\n")
}

fn run(doc: &str, base: &Path, save: Option<&Path>) -> anyhow::Result<VariantResult> {
    let mut v = parse_experiment(doc, "t.toml")?.remove(0);
    v.spec.base_dir = base.to_path_buf();
    run_variant(&v, RunOptions { save_images: save, ..RunOptions::default() }, &|_| {})
}

/// WAF of the measured phase.
fn waf(r: &VariantResult) -> f64 {
    r.phases.iter().find(|p| p.measured).unwrap().waf()
}

/// Random aging leaves the drive in the random-write steady state: a short random-write window
/// right after it shows greedy GC's closed-form WAF, while after a sequential fill the same
/// window is still far below it (the drive's history, not the workload, makes the difference).
#[test]
fn random_aging_reaches_the_steady_state_a_sequential_fill_does_not() {
    let d = dir("aging");
    let window = phase("measure", "random", "0.5x", true);
    let aged = run(&format!("[history]\nkind = \"random\"\nbs = \"4KiB\"\namount = \"4x\"\n{DRIVE}{window}"), &d, None).unwrap();
    let filled = run(&format!("{DRIVE}{window}"), &d, None).unwrap();
    let fresh = run(&format!("[history]\nkind = \"fresh\"\n{DRIVE}{window}"), &d, None).unwrap();
    // Desnoyers' greedy closed form at the drive's effective alpha (spare net of the reserved
    // free pool and half of each open frontier; docs/model.md).
    let cfg = parse_experiment(&format!("{DRIVE}{window}"), "t.toml").unwrap().remove(0).spec.device_config().unwrap();
    let theory = wafsim_core::theory::waf_greedy(cfg.geometry().unwrap().effective_alpha(), 256.0);
    let (a, f, z) = (waf(&aged), waf(&filled), waf(&fresh));
    eprintln!("aged {a:.3}, filled {f:.3}, fresh {z:.3}, greedy closed form {theory:.3}");
    assert!((a - theory).abs() / theory < 0.05, "aged {a:.3} vs closed form {theory:.3}");
    // After a sequential fill the first random writes find erase units of fully valid data, so
    // the window's WAF is still climbing towards the steady state (well beyond the window's
    // noise, about 1% at this size).
    assert!(f < 0.95 * a, "after a sequential fill the window is not steady yet: {f:.3} vs {a:.3}");
    assert_eq!(z, 1.0, "half a drive of random writes on a fresh drive needs no GC");
    assert_eq!(aged.history, "sequential fill, then random 4KiB writes of 4x");
    assert_eq!(filled.history, "sequential fill");
    assert_eq!(fresh.history, "fresh (every LBA unmapped)");
}

/// A drive saved at the end of one run and loaded by the next continues exactly as one run
/// that never stopped: the same counters in the continued phase.
#[test]
fn a_saved_drive_continues_where_it_stopped() {
    let d = dir("image");
    let age = phase("age", "random", "2x", false);
    let next = phase("next", "sequential", "1.5x", true);
    let one_run = run(&format!("seed = 7\n{DRIVE}{age}{next}"), &d, None).unwrap();
    let first = run(&format!("seed = 7\n{DRIVE}{age}"), &d, Some(&d)).unwrap();
    assert!(d.join("default.img").exists());
    let second = run(&format!("seed = 7\n[history]\nkind = \"image\"\nimage = \"default.img\"\n{DRIVE}{next}"), &d, None).unwrap();
    assert_eq!(second.history, "image default.img");
    let continued = second.phases.iter().find(|p| p.name == "next").unwrap();
    let whole = one_run.phases.iter().find(|p| p.name == "next").unwrap();
    assert_eq!(continued.counters, whole.counters, "the continued phase is the never-stopped run's");
    assert!(whole.counters.gc_units > 0, "the continued phase collects garbage left by the aging");
    assert_eq!(first.phases[0].counters.host_write_bytes, one_run.phases[0].counters.host_write_bytes);

    // A scaled run is another drive: refused, naming the difference.
    let mut v = parse_experiment(&format!("[history]\nkind = \"image\"\nimage = \"default.img\"\n{}{next}", DRIVE.replace("256MiB", "128MiB")), "t.toml").unwrap().remove(0);
    v.spec.base_dir = d.clone();
    let e = format!("{:#}", run_variant(&v, RunOptions::default(), &|_| {}).unwrap_err());
    assert!(e.contains("another configuration") && e.contains("default.img"), "{e}");
    // A missing or damaged image is refused too.
    let e = format!("{:#}", run(&format!("[history]\nkind = \"image\"\nimage = \"nope.img\"\n{DRIVE}{next}"), &d, None).unwrap_err());
    assert!(e.contains("cannot open the drive image") && e.contains("nope.img"), "{e}");
    let mut bytes = std::fs::read(d.join("default.img")).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 4;
    std::fs::write(d.join("bad.img"), bytes).unwrap();
    let e = format!("{:#}", run(&format!("seed = 7\n[history]\nkind = \"image\"\nimage = \"bad.img\"\n{DRIVE}{next}"), &d, None).unwrap_err());
    assert!(e.contains("checksum"), "{e}");
}

/// Settings of one history kind on another, both `precondition` and `[history]`, an image
/// kind without a file: refused before anything runs.
#[test]
fn history_settings_are_checked() {
    let d = dir("checks");
    let next = phase("p", "sequential", "1x", true);
    let e = |doc: String| format!("{:#}", run(&doc, &d, None).unwrap_err());
    assert!(e(format!("precondition = false\n[history]\nkind = \"fresh\"\n{DRIVE}{next}")).contains("not both"));
    assert!(e(format!("[history]\nkind = \"fresh\"\nbs = \"4KiB\"\n{DRIVE}{next}")).contains("history.bs: a setting of history.kind = \"random\""));
    assert!(e(format!("[history]\nkind = \"image\"\n{DRIVE}{next}")).contains("needs history.image"));
    assert!(e(format!("[history]\nkind = \"aged\"\n{DRIVE}{next}")).contains("expected \"fresh\", \"sequential\", \"random\" or \"image\""));
    assert!(e(format!("[history]\nkind = \"random\"\nbs = \"1000\"\n{DRIVE}{next}")).contains("multiple of 4 KiB"));
}

/// `measure_last`: the counters are those of the phase's last bytes (to 1/32 of the window),
/// with the whole phase's WAF beside; the end of a long random phase after a sequential fill is
/// steady (greedy's closed form) while the whole phase, transient included, is not.
#[test]
fn measure_last_reports_the_end_of_a_phase() {
    let d = dir("window");
    let doc = format!("{DRIVE}[[phase]]\nname = \"random\"\nmeasure_last = \"1x\"\n[[phase.workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"3x\"\n");
    let r = run(&doc, &d, None).unwrap();
    let p = &r.phases[0];
    let cap = r.logical_bytes;
    assert!(p.counters.host_write_bytes >= cap && p.counters.host_write_bytes <= cap + cap / 32 + (1 << 20), "window {} B for a 1x window of {cap} B", p.counters.host_write_bytes);
    let cfg = parse_experiment(&doc, "t.toml").unwrap().remove(0).spec.device_config().unwrap();
    let theory = wafsim_core::theory::waf_greedy(cfg.geometry().unwrap().effective_alpha(), 256.0);
    let whole = p.whole_waf.expect("the whole phase's WAF beside the window's");
    eprintln!("window {:.3} ({}), whole phase {whole:.3}, closed form {theory:.3}", p.waf(), p.window);
    assert!((p.waf() - theory).abs() / theory < 0.05, "window {:.3} vs {theory:.3}", p.waf());
    assert!(whole < p.waf(), "the whole phase includes the transient after the fill");
    assert!(p.window.starts_with("last 1x ("), "{}", p.window);
    assert_eq!(r.counters.host_write_bytes, p.counters.host_write_bytes, "the variant's totals are the window's");
    // Longer than the phase: the whole phase, with a warning.
    let short = run(&doc.replace("amount = \"3x\"", "amount = \"0.5x\""), &d, None).unwrap();
    assert!(short.warnings.iter().any(|w| w.contains("less than measure_last")), "{:?}", short.warnings);
    assert_eq!(short.phases[0].window, "whole phase");
    let e = format!("{:#}", run(&doc.replace("measure_last = \"1x\"", "measure_last = \"1x\"\nsteady_state = { window = 5 }"), &d, None).unwrap_err());
    assert!(e.contains("give one"), "{e}");
}

/// Checkpoints of a phase: each reports what a run stopped there would report (to the batch it
/// fell in), the interval since the previous one is the difference of the two, a duration is
/// bytes at the stated write rate, and a point past the phase's end is reported as not reached.
#[test]
fn checkpoints_report_the_run_up_to_them_and_between_them() {
    let d = dir("checkpoints");
    let with = |amount: &str, extra: &str| format!("[history]\nkind = \"random\"\namount = \"1x\"\n{DRIVE}{}", phase("measure", "random", amount, true).replacen("measure = true\n", &format!("measure = true\n{extra}"), 1));
    // 64 s at 1 MiB/s is 64 MiB of host writes.
    let r = run(&with("0.75x", "checkpoints = [\"64s\", \"0.5x\", \"2x\"]\nwrite_rate = \"1MiB/s\"\n"), &d, None).unwrap();
    let cps = &r.phases[0].checkpoints;
    assert_eq!(cps.iter().map(|c| c.at_bytes).collect::<Vec<_>>(), [64 << 20, 128 << 20, 512 << 20]);
    for (c, amount) in cps.iter().zip(["64MiB", "128MiB"]) {
        let stopped = run(&with(amount, ""), &d, None).unwrap();
        let reached = c.reached.expect("reached");
        assert!(reached >= c.at_bytes && reached - c.at_bytes <= 4096 * 4096, "{} taken at {reached}", c.label);
        // The checkpoint is taken at the end of the batch it falls in, so its run wrote a little
        // more: media beyond the stopped run's at most those bytes at a high WAF plus the
        // reclaims they may set off (each copies up to an erase unit, 1 MiB, at once).
        let stopped_media = stopped.phases[0].counters.media_units() as f64 * 4096.0;
        let extra = c.waf * reached as f64 - stopped_media;
        assert!(extra >= -1.0 && extra <= (reached - c.at_bytes) as f64 * 10.0 + 4.0 * 1048576.0, "checkpoint {}: {extra} media bytes beyond a run stopped there", c.label);
    }
    // The interval is the media and host bytes between the two checkpoints.
    let (a, b) = (&cps[0], &cps[1]);
    let (ha, hb) = (a.reached.unwrap() as f64, b.reached.unwrap() as f64);
    let between = (b.waf * hb - a.waf * ha) / (hb - ha);
    assert!((b.interval_waf - between).abs() < 1e-9, "interval {:.6} vs {between:.6}", b.interval_waf);
    assert_eq!(cps[2].reached, None);
    assert!(r.warnings.iter().any(|w| w.contains("before checkpoint \"2x\"")), "{:?}", r.warnings);
    // Out of order, or a duration without a rate: refused, naming the key.
    let e = format!("{:#}", run(&with("0.75x", "checkpoints = [\"0.5x\", \"0.25x\"]\n"), &d, None).unwrap_err());
    assert!(e.contains("checkpoints") && e.contains("increasing"), "{e}");
    let e = format!("{:#}", run(&with("0.75x", "checkpoints = [\"5h\"]\n"), &d, None).unwrap_err());
    assert!(e.contains("write_rate"), "{e}");
}

/// `doc` run at `scale` from `base`, saving its drives' images in `save`.
fn run_scaled(doc: &str, scale: f64, base: &Path, save: Option<&Path>) -> VariantResult {
    let mut v = parse_experiment(doc, "t.toml").unwrap().remove(0);
    wafsim_experiment::plan::scale::scale_spec(&mut v.spec, scale).unwrap();
    v.spec.base_dir = base.to_path_buf();
    run_variant(&v, RunOptions { save_images: save, ..RunOptions::default() }, &|_| {}).unwrap()
}

/// A host layer's drive saved after an aging run and loaded by a second run continues as one
/// run over both phases: the continued phase's counters, and what the layer sent each of its
/// devices over the drive's life (the image carries that too). The continued phase is
/// sequential: a random one would draw other offsets as the second run's first phase (sources
/// are seeded by their phase's index).
fn layer_continues(name: &str, drive: &str, age: &str, next: &str, scale: f64) -> (VariantResult, VariantResult) {
    let d = dir(name);
    let fresh = "[history]\nkind = \"fresh\"\n";
    let one_run = run_scaled(&format!("seed = 3\n{fresh}{drive}{age}{next}"), scale, &d, None);
    run_scaled(&format!("seed = 3\n{fresh}{drive}{age}"), scale, &d, Some(&d));
    let second = run_scaled(&format!("seed = 3\n[history]\nkind = \"image\"\nimage = \"default.img\"\n{drive}{next}"), scale, &d, None);
    let (continued, whole) = (second.phases.iter().find(|p| p.name == "next").unwrap(), one_run.phases.iter().find(|p| p.name == "next").unwrap());
    assert_eq!(continued.counters, whole.counters, "{name}: the continued phase is the never-stopped run's");
    assert_eq!(format!("{:?}", second.host_devices), format!("{:?}", one_run.host_devices), "{name}: per-device traffic");
    (one_run, second)
}

/// dm-zoned over two SMR disks and a cache device: the aging writes a target's worth of
/// random 16 KiB writes (reclaim moves chunks to the disks), and the continued phase's
/// sequential overwrite lands in buffer zones that reclaim merges.
#[test]
fn a_saved_dm_zoned_drive_continues_where_it_stopped() {
    let drive = "[device]\nkind = \"smr\"\n[device.zones]\nzones = 48\nzone_size = \"4MiB\"\nconventional_zones = 2\nmax_open = 8\n[host]\nlayer = \"dm-zoned\"\ndisks = 2\ncache_size = \"64MiB\"\nreserved_zones = 4\n[[namespace]]\nname = \"ns1\"\n";
    let age = phase("age", "random", "1x", false).replace("4KiB", "16KiB");
    let next = phase("next", "sequential", "0.5x", true).replace("4KiB", "16KiB");
    let (one_run, second) = layer_continues("dm-zoned", drive, &age, &next, 1.0);
    let next = second.phases.iter().find(|p| p.name == "next").unwrap();
    assert!(next.counters.gc_units > 0 && one_run.phases[0].counters.gc_units > 0, "reclaim ran before and after the save");
    eprintln!("dm-zoned: aging WAF {:.3}, continued phase WAF {:.3}", one_run.phases[0].waf(), next.waf());
}

/// Tiering (a staging drive in front of a capacity drive, experiments/tiering/hot-cold.toml's
/// drives at a small scale): hot extents stay on the staging drive, the rest migrates, before
/// the save and in the sequential overwrite after it.
#[test]
fn a_saved_tiering_drive_continues_where_it_stopped() {
    let drive = "[device]\npreset = \"enterprise-tlc-7.68tb\"\n[host]\nlayer = \"tiering\"\nhot = \"enterprise-tlc-1.92tb\"\nextent = \"256KiB\"\n[[namespace]]\nname = \"ns1\"\nsize = \"7681501126656\"\n";
    let workload = |name: &str, amount: &str, measure: bool| phase(name, "random", amount, measure).replace("pattern = \"random\"", "pattern = \"random\"\ndistribution = \"hotcold:90/10\"").replace("4KiB", "64KiB");
    let (one_run, second) = layer_continues("tiering", drive, &workload("age", "1x", false), &phase("next", "sequential", "0.5x", true).replace("4KiB", "64KiB"), 0.00002);
    let cold = &second.host_devices[1];
    assert!(cold.reclaim_write_bytes > one_run.host_devices[1].reclaim_write_bytes / 2 && one_run.phases[0].counters.gc_units > 0, "migration ran before and after the save");
    eprintln!("tiering: aging WAF {:.3}, continued phase WAF {:.3}", one_run.phases[0].waf(), second.phases[0].waf());
}

/// Windows in a timed phase: `measure_last` and checkpoints in bytes pick the same window as
/// in the untimed run of the same writes (one job: the drive sees the same commands in the
/// same order), to the precision of the timed run's counter snapshots; durations are model
/// time; several drives and `write_rate` are refused with a reason.
#[test]
fn timed_phases_have_the_same_windows_as_untimed_ones() {
    let d = dir("timed-windows");
    let drive = "[device]\ncapacity = \"256MiB\"\nraw_capacity = \"288MiB\"\ngc_policy = \"greedy\"\n\
        [device.geometry]\npage_size = \"16KiB\"\npages_per_block = 12\nplanes_per_die = 2\ndies_per_channel = 2\nchannels = 2\n\
        [[namespace]]\nname = \"ns1\"\nsize = \"256MiB\"\n";
    let timing = "[timing]\nenabled = true\nnand = \"tlc\"\nchannel_rate = \"1600MT/s\"\nhost_link = \"pcie4x4\"\nwrite_buffer = \"4MiB\"\n";
    let phase = "[[phase]]\nname = \"random\"\nmeasure_last = \"1x\"\ncheckpoints = [\"0.5x\", \"2x\"]\n\
        [[phase.workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"3x\"\niodepth = 16\n";
    let untimed = run(&format!("{drive}{phase}"), &d, None).unwrap();
    let timed = run(&format!("{drive}{timing}{phase}"), &d, None).unwrap();
    let (u, t) = (&untimed.phases[0], &timed.phases[0]);
    eprintln!("untimed: window {:.4} ({}), whole {:?}; timed: window {:.4} ({}), whole {:?}", u.waf(), u.window, u.whole_waf, t.waf(), t.window, t.whole_waf);
    assert!(timed.timed.is_some(), "the timed run ran timed");
    assert!(t.window.starts_with("last 1x (") && t.window.contains("s of model time"), "{}", t.window);
    assert!((t.whole_waf.unwrap() - u.whole_waf.unwrap()).abs() < 1e-9, "the same commands in the same order");
    assert!((t.waf() - u.waf()).abs() / u.waf() < 0.01, "window WAF timed {:.4} vs untimed {:.4}", t.waf(), u.waf());
    assert!(t.waf() > t.whole_waf.unwrap(), "the window leaves out the transient after the fill");
    let cap = timed.logical_bytes;
    assert!(t.counters.host_write_bytes >= cap && t.counters.host_write_bytes < cap + cap / 100, "window of {} B for 1x of {cap}", t.counters.host_write_bytes);
    for (cu, ct) in u.checkpoints.iter().zip(&t.checkpoints) {
        assert!((ct.waf - cu.waf).abs() / cu.waf < 0.01, "checkpoint {}: timed {:.4} vs untimed {:.4}", ct.label, ct.waf, cu.waf);
    }
    // Durations are model time: half the phase's model time is reached, twice it is not.
    let secs = timed.timed.unwrap().elapsed_ns as f64 * 1e-9;
    let by_time = phase.replace("checkpoints = [\"0.5x\", \"2x\"]", &format!("checkpoints = [\"{:.3}s\", \"{:.3}s\"]", secs / 2.0, secs * 2.0));
    let r = run(&format!("{drive}{timing}{by_time}"), &d, None).unwrap();
    let c = &r.phases[0].checkpoints;
    let reached = c[0].reached.expect("half the model time is reached");
    assert!(reached > 0 && reached < 3 * cap, "{reached}");
    assert!(c[1].reached.is_none() && r.warnings.iter().any(|w| w.contains("before checkpoint")), "{:?}", r.warnings);
    let e = format!("{:#}", run(&format!("{drive}{timing}{}", phase.replace("measure_last", "write_rate = \"1MB/s\"\nmeasure_last")), &d, None).unwrap_err());
    assert!(e.contains("durations are model time"), "{e}");
}
