//! `[[unknown]]`: facts an experiment's source does not give, each case run beside the central
//! result (`wafsim run --spread`, the catalog).
use wafsim_experiment::studies::spread::{cases, run_spread, waf_range};
use wafsim_experiment::{parse_experiment, run_variant, RunOptions, VariantResult};

/// 256 MiB drive, 12% OP, 1 MiB erase units (Np = 256), greedy GC; a measured window of random
/// 4 KiB writes of half the drive.
const BASE: &str = "seed = 3\n[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.12\nerase_unit = \"1MiB\"\n[[namespace]]\nname = \"ns1\"\nsize = \"256MiB\"\n\
    [[phase]]\nname = \"measure\"\n[[phase.workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"0.5x\"\n";

const UNKNOWN: &str = "[[unknown]]\nname = \"drive preparation\"\nwhy = \"not published\"\ncentral = \"fresh\"\n\
    [[unknown.case]]\nlabel = \"filled\"\nset = { \"history.kind\" = \"sequential\" }\n\
    [[unknown.case]]\nlabel = \"aged\"\nset = { history = { kind = \"random\", amount = \"4x\" } }\n";

fn run_text(doc: &str) -> VariantResult {
    run_variant(&parse_experiment(doc, "t.toml").unwrap().remove(0), RunOptions::default(), &|_| {}).unwrap()
}

/// Each case gives exactly what the experiment written with the case's values gives, and the
/// cases bracket the drive's histories as their closed forms say: a fresh drive needs no GC for
/// half a drive of writes (1.0), an aged one is at greedy's steady state.
#[test]
fn each_case_is_the_experiment_with_its_values() {
    let doc = format!("{BASE}[history]\nkind = \"fresh\"\n{UNKNOWN}");
    let vs = parse_experiment(&doc, "t.toml").unwrap();
    let mut results: Vec<VariantResult> = vs.iter().map(|v| run_variant(v, RunOptions::default(), &|_| {}).unwrap()).collect();
    let runs = cases(&vs).unwrap();
    assert_eq!(runs.len(), 2);
    run_spread(&runs, &mut results, &|_, _| {}).unwrap();
    let r = &results[0];
    assert_eq!(r.waf(), 1.0, "central: fresh");
    assert_eq!(r.spread.len(), 2);
    let filled = run_text(&format!("{BASE}[history]\nkind = \"sequential\"\n"));
    let aged = run_text(&format!("{BASE}[history]\nkind = \"random\"\namount = \"4x\"\n"));
    assert_eq!((r.spread[0].case.as_str(), r.spread[0].waf), ("filled", filled.waf()));
    assert_eq!((r.spread[1].case.as_str(), r.spread[1].waf), ("aged", aged.waf()));
    assert_eq!(r.spread[1].history, "sequential fill, then random 4KiB writes of 4x");
    let cfg = vs[0].spec.device_config().unwrap();
    let theory = wafsim_core::theory::waf_greedy(cfg.geometry().unwrap().effective_alpha(), 256.0);
    assert!((aged.waf() - theory).abs() / theory < 0.05, "aged {:.3} vs greedy closed form {theory:.3}", aged.waf());
    assert_eq!(waf_range(r), Some((1.0, aged.waf())));
}

/// A case may name the variants it applies to; the others keep the central result only.
#[test]
fn a_case_applies_to_the_variants_it_names() {
    let doc = format!(
        "{BASE}[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\ndevice = {{ over_provisioning = 0.28 }}\n\
         [[unknown]]\nname = \"prep\"\ncentral = \"filled\"\n[[unknown.case]]\nlabel = \"fresh\"\nset = {{ \"history.kind\" = \"fresh\" }}\nvariants = [\"b\"]\n"
    );
    let vs = parse_experiment(&doc, "t.toml").unwrap();
    let runs = cases(&vs).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].of, runs[0].variant.name.as_str()), (1, "b / fresh"));
    assert_eq!(runs[0].variant.spec.device.over_provisioning, Some(0.28), "the case keeps its variant's own keys");
}

/// Unknowns that cannot run are refused before anything runs, naming what is wrong.
#[test]
fn bad_unknowns_are_refused_clearly() {
    let err = |u: &str| format!("{:#}", parse_experiment(&format!("{BASE}{u}"), "t.toml").and_then(|vs| cases(&vs).map(|_| ())).unwrap_err());
    let head = "[[unknown]]\nname = \"prep\"\ncentral = \"filled\"\n";
    let e = err(head);
    assert!(e.contains("unknown \"prep\"") && e.contains("no [[unknown.case]]"), "{e}");
    let e = err(&format!("{head}[[unknown.case]]\nlabel = \"x\"\nset = {{}}\n"));
    assert!(e.contains("changes nothing"), "{e}");
    let e = err(&format!("{head}[[unknown.case]]\nlabel = \"x\"\nset = {{ \"history.kind\" = \"fresh\" }}\nvariants = [\"nope\"]\n"));
    assert!(e.contains("no variant named \"nope\"") && e.contains("default"), "{e}");
    let e = err(&format!("{head}[[unknown.case]]\nlabel = \"x\"\nset = {{ \"phase.4.workload\" = [] }}\n"));
    assert!(e.contains("case \"x\"") && e.contains("phase.4.workload") && e.contains("no index 4"), "{e}");
    let e = err(&format!("{head}[[unknown.case]]\nlabel = \"x\"\nset = {{ \"history.kind\" = \"aged\" }}\n"));
    assert!(e.contains("case \"x\"") && e.contains("aged"), "{e}");
}

/// A store on a ZNS drive reads drive WAF 1.000 under every case, so the catalog's spread of an
/// unknown also gives the total WAF (media / application bytes) per case, which does move:
/// leveled compaction rewrites more than size-tiered.
#[test]
fn the_catalog_spreads_total_waf_where_stores_run() {
    let doc = r#"
name = "lsm"
seed = 1
[device]
preset = "zns-prototype-2tb"
[[namespace]]
name = "data"
[[phase]]
name = "ycsb"
[[phase.kv]]
namespace = "data"
store = "lsm"
compaction = "size-tiered"
filesystem = "zoned"
fill = 0.2
amount = "1x"
[[unknown]]
name = "compaction"
why = "not published"
central = "size-tiered"
[[unknown.case]]
label = "leveled"
set = { "phase.0.kv.0.lsm.compaction" = "leveled" }
[published]
source = "a test"
"#;
    let mut vs = parse_experiment(doc, "t.toml").unwrap();
    for v in &mut vs {
        wafsim_experiment::plan::scale::scale_spec(&mut v.spec, 0.001).unwrap();
    }
    let mut results: Vec<VariantResult> = vs.iter().map(|v| run_variant(v, RunOptions::default(), &|_| {}).unwrap()).collect();
    run_spread(&cases(&vs).unwrap(), &mut results, &|_, _| {}).unwrap();
    let r = &results[0];
    let (central, case) = (r.total_waf().unwrap(), r.spread[0].total_waf.unwrap());
    assert_eq!((r.waf(), r.spread[0].waf), (1.0, 1.0), "a ZNS drive copies nothing");
    assert!(case > central, "leveled rewrites more: total WAF {central:.4} -> {case:.4}");
    let entry = wafsim_experiment::studies::catalog::Entry {
        path: "t.toml".into(),
        name: "lsm".into(),
        scale: 0.001,
        seconds: 1.0,
        results,
        published: toml::toml! { source = "a test" },
        random_interleave: Vec::new(),
        written_random: false,
        unknowns: vs[0].spec.unknown.clone(),
    };
    let md = wafsim_experiment::studies::catalog::markdown(&[entry], &[Vec::new()], "test", "a test machine");
    let tail = &md[md.find("Total WAF (media / application bytes) under the same cases").expect("a total WAF table")..];
    let row = format!("| {} | {central:.4} | {case:.4} | {central:.4} - {case:.4} |", vs[0].name);
    assert!(tail.contains(&row), "expected {row:?} in\n{tail}");
}


/// A timed case carries its slowest reader's p99 (the noisy-neighbour entry's quiet tenant under
/// each case): the same figure the experiment written with the case's values gives, and none
/// without reads.
#[test]
fn a_timed_case_carries_the_slowest_readers_p99() {
    let doc = |rate: &str| {
        format!(
            "seed = 1\n[device]\ncapacity = \"48MiB\"\nover_provisioning = 0.125\n[device.geometry]\npage_size = \"16KiB\"\npages_per_block = 24\nplanes_per_die = 1\ndies_per_channel = 1\nchannels = 2\n\
             [[namespace]]\nname = \"ns1\"\n[timing]\nenabled = true\n\
             [[phase]]\nname = \"m\"\n[[phase.fio]]\nnamespace = \"ns1\"\n\
             args = \"--name=w --rw=randwrite --bs=4k --iodepth=8 --number_ios=4000 --direct=1 --name=r --rw=randread --bs=4k --iodepth=4 --rate_iops={rate} --number_ios=1000 --direct=1\"\n"
        )
    };
    let unknown = "[[unknown]]\nname = \"reader's rate\"\nwhy = \"a choice\"\ncentral = \"2000\"\n[[unknown.case]]\nlabel = \"20000\"\nset = { \"phase.0.fio.0.args\" = \"--name=w --rw=randwrite --bs=4k --iodepth=8 --number_ios=4000 --direct=1 --name=r --rw=randread --bs=4k --iodepth=4 --rate_iops=20000 --number_ios=1000 --direct=1\" }\n";
    let vs = parse_experiment(&format!("{}{unknown}", doc("2000")), "t.toml").unwrap();
    let mut results: Vec<VariantResult> = vs.iter().map(|v| run_variant(v, RunOptions::default(), &|_| {}).unwrap()).collect();
    run_spread(&cases(&vs).unwrap(), &mut results, &|_, _| {}).unwrap();
    let r = &results[0];
    let direct = run_text(&doc("20000"));
    let (central, case) = (r.worst_read_p99_ns().unwrap(), r.spread[0].read_p99_ns.unwrap());
    eprintln!("reader p99 {central} ns at 2,000 IOPS, {case} ns at 20,000 IOPS");
    assert_eq!(Some(case), direct.worst_read_p99_ns());
    assert!(central > 0.0 && case > 0.0);
    // An untimed run has no latency to report.
    assert_eq!(run_text(&format!("{BASE}")).worst_read_p99_ns(), None);
}
