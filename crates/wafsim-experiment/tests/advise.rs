//! The placement advisor on synthetic cases whose best grouping is known: hot/cold separation,
//! sequential vs random tenants, more tenants than handles (greedy path, and local search from a
//! bad start); exhaustive and greedy agree; candidate counts; errors name the file.
//!
//! Every case is a 512 MiB drive with 1 MiB erase units (512 of them) and persistently isolated
//! RUHs, so a simulation takes tens of milliseconds. Runs are seeded: the assertions are exact
//! groupings, not "it ran".

use std::path::PathBuf;
use wafsim_experiment::studies::advise::{advise, AdviseOptions, Advisor, Search};

/// A tenant: name, namespace size, pattern, weight (relative IOPS), amount per phase.
struct T(&'static str, &'static str, &'static str, u32, &'static str);

/// An experiment of `tenants` on one drive (a warm-up phase, then the measured phase).
fn experiment(tenants: &[T], fdp: &str) -> String {
    let mut s = format!(
        "name = \"advisor test\"\nseed = 3\n[device]\ncapacity = \"512MiB\"\nover_provisioning = 0.14\nerase_unit = \"1MiB\"\n{fdp}\n"
    );
    for (i, t) in tenants.iter().enumerate() {
        s += &format!("[[namespace]]\nname = \"{}\"\nsize = \"{}\"\nplacement_handles = [{}]\n", t.0, t.1, i % 2);
    }
    for (ph, measure) in [("warm-up", false), ("measure", true)] {
        s += &format!("[[phase]]\nname = \"{ph}\"\nmeasure = {measure}\n");
        for t in tenants {
            s += &format!("[[phase.workload]]\nnamespace = \"{}\"\npattern = \"{}\"\nbs = \"4KiB\"\namount = \"{}\"\nweight = {}\n", t.0, t.2, t.4, t.3);
        }
    }
    s
}

// The drives here are tiny (256 erase units): eight handles holding a unit each from the start
// would take a fifth of the spare, and the tests are about the search, so idle handles hold none.
const PI8: &str = "[device.fdp]\nenabled = true\nruhs = 8\nruh_type = \"persistently-isolated\"\nidle_handles_hold_units = false";

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wafsim-advise-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn opts(handles: u32) -> AdviseOptions {
    AdviseOptions { handles, ..AdviseOptions::default() }
}

/// Two hot tenants (64 MiB each, 8 of every 18 I/Os each) and two cold ones (192 MiB, 1 in 18).
fn hot_cold() -> String {
    experiment(
        &[T("hot1", "64MiB", "random", 8, "1GiB"), T("hot2", "64MiB", "random", 8, "1GiB"), T("cold1", "192MiB", "random", 1, "128MiB"), T("cold2", "192MiB", "random", 1, "128MiB")],
        PI8,
    )
}

/// Two hot, two cold, two sequential tenants.
fn six() -> String {
    experiment(
        &[
            T("hot1", "32MiB", "random", 8, "512MiB"),
            T("hot2", "32MiB", "random", 8, "512MiB"),
            T("cold1", "160MiB", "random", 1, "64MiB"),
            T("cold2", "160MiB", "random", 1, "64MiB"),
            T("log1", "64MiB", "sequential", 2, "128MiB"),
            T("log2", "64MiB", "sequential", 2, "128MiB"),
        ],
        PI8,
    )
}

#[test]
fn hot_and_cold_tenants_get_a_handle_each() {
    let p = write("hot-cold.toml", &hot_cold());
    let r = advise(&p, &opts(2), &|_| {}).unwrap();
    assert!(matches!(r.search, Search::Exhaustive { candidates: 8 }), "{:?}", r.search);
    // Every partition of four streams into at most two groups was simulated, plus the
    // one-handle-per-stream reference (four handles: not a candidate).
    assert_eq!((r.ranking.len(), r.evaluations), (8, 9));
    let names: Vec<&str> = r.ranking.iter().map(|k| k.label.as_str()).collect();
    assert_eq!(r.best().label, "{hot1,hot2}{cold1,cold2}", "{names:?}");
    assert_eq!(r.best().groups, [vec!["hot1", "hot2"], vec!["cold1", "cold2"]]);
    assert_eq!(r.no_placement.label, "{hot1,hot2,cold1,cold2}");
    // Clearly better than no placement (not a tie within noise), and the ranking is sorted.
    assert!(r.best().waf < 0.95 * r.no_placement.waf, "best {} vs none {}", r.best().waf, r.no_placement.waf);
    assert!(r.ranking.windows(2).all(|w| w[0].waf <= w[1].waf));
    // The features say why: hot streams have the short lifetimes.
    let life = |n: &str| r.features.iter().find(|f| f.stream == n).unwrap().lifetime;
    assert!(life("hot1") * 10.0 < life("cold1"), "{:?}", r.features);
}

#[test]
fn ruh_types_are_crossed_and_only_separated_streams_feel_them() {
    use wafsim_core::RuhType::{InitiallyIsolated as Ii, PersistentlyIsolated as Pi};
    let p = write("hot-cold-types.toml", &hot_cold());
    let o = AdviseOptions { ruh_types: vec![Ii, Pi], op_top: 1, exhaustive_limit: 8, ..opts(2) };
    let r = advise(&p, &o, &|_| {}).unwrap();
    // Baselines and the best assignment, each at both types: 3 rows x 2 simulations more.
    assert_eq!(r.op_rows.len(), 3, "{:?}", r.op_rows);
    assert_eq!(r.evaluations, r.search_evaluations + 6);
    let row = |prefix: &str| r.op_rows.iter().find(|o| o.label.starts_with(prefix)).unwrap();
    for o in &r.op_rows {
        assert_eq!(o.points.iter().map(|p| (p.op, p.ruh_type)).collect::<Vec<_>>(), [(None, Some("initially-isolated")), (None, Some("persistently-isolated"))]);
    }
    // All streams on one handle: one host frontier and one GC frontier either way, so the
    // type cannot matter: the same simulation, the same WAF.
    let none = row("no placement");
    assert_eq!(none.points[0].waf, none.points[1].waf);
    // Hot and cold on their own handles: initially isolated handles mix their GC copies again,
    // persistently isolated ones keep them apart, which is worth more at this OP.
    let best = row("{hot1,hot2}{cold1,cold2}");
    assert!(best.points[1].waf < 0.97 * best.points[0].waf, "{:?}", best.points);
    // The experiment's own type (PI) reproduces the ranking's figure.
    assert_eq!(best.points[1].waf, r.best().waf);
}

#[test]
fn sequential_tenants_are_kept_apart_from_random_ones() {
    let doc = experiment(
        &[T("seq1", "128MiB", "sequential", 1, "512MiB"), T("seq2", "128MiB", "sequential", 1, "512MiB"), T("rnd1", "128MiB", "random", 1, "512MiB"), T("rnd2", "128MiB", "random", 1, "512MiB")],
        PI8,
    );
    let p = write("seq-rand.toml", &doc);
    let r = advise(&p, &opts(2), &|_| {}).unwrap();
    let names: Vec<(&str, f64)> = r.ranking.iter().map(|k| (k.label.as_str(), k.waf)).collect();
    assert_eq!(r.best().label, "{seq1,seq2}{rnd1,rnd2}", "{names:?}");
    assert!(r.best().waf < 0.9 * r.no_placement.waf, "{names:?}");
    // The sequential tenants on their own handle see (almost) no GC.
    let seq = r.best().ns_waf.iter().find(|(n, _)| n == "seq1").unwrap().1;
    assert!(seq < 1.1, "{:?}", r.best().ns_waf);
}

#[test]
fn more_tenants_than_handles_greedy_finds_the_exhaustive_best() {
    let p = write("six.toml", &six());
    // Greedy: the exhaustive limit below the 122 candidates.
    let g = advise(&p, &AdviseOptions { exhaustive_limit: 20, ..opts(3) }, &|_| {}).unwrap();
    let Search::Greedy { candidates, ref start, .. } = g.search else { panic!("{:?}", g.search) };
    assert_eq!(candidates, 122);
    assert_eq!(g.best().label, "{hot1,hot2}{cold1,cold2}{log1,log2}", "greedy start {start}; {:?}", g.ranking.iter().map(|k| (&k.label, k.waf)).collect::<Vec<_>>());
    assert!(g.evaluations < 60, "{}", g.evaluations);
    // Exhaustive: every candidate; the greedy answer is its best (the same simulations, so the
    // same WAF to the last bit).
    let e = advise(&p, &opts(3), &|_| {}).unwrap();
    assert!(matches!(e.search, Search::Exhaustive { candidates: 122 }));
    assert_eq!(e.ranking.len(), 122);
    assert_eq!(e.best().label, g.best().label);
    assert_eq!(e.best().waf, g.best().waf);
    assert_eq!(e.no_placement.waf, g.no_placement.waf);
    // One handle per stream needed six handles (the drive has eight): reported, not ranked.
    assert_eq!(e.one_per_stream.label, "{hot1}{hot2}{cold1}{cold2}{log1}{log2}");
    assert!(e.best().waf < 0.8 * e.no_placement.waf);
}

#[test]
fn local_search_recovers_from_a_bad_start() {
    let p = write("six-local.toml", &six());
    let mut adv = Advisor::new(&p, &opts(3)).unwrap();
    // Hot and cold mixed, the loggers split: about the worst start there is.
    let start = [0, 1, 1, 2, 0, 2];
    let ls = adv.local_search(&start, 200, &|_| {}).unwrap();
    assert_eq!(adv.label(&ls.best), "{hot1,hot2}{cold1,cold2}{log1,log2}", "after {} rounds", ls.rounds);
    assert!(ls.rounds >= 2 && !ls.budget_exhausted, "{} rounds", ls.rounds);
    assert!(ls.best_eval.waf < ls.evaluated[0].1.waf);
}

#[test]
fn candidates_are_set_partitions_and_mixed_types_label_them() {
    let six = write("six-count.toml", &six());
    for (n, want) in [(1, 1), (2, 32), (3, 122), (6, 203)] {
        let adv = Advisor::new(&six, &opts(n)).unwrap();
        // Stirling numbers: sum of S(6, k) for k <= n; the enumeration matches the count.
        assert_eq!(adv.count(), want, "n = {n}");
        assert_eq!(adv.enumerate(1000).unwrap().len(), want as usize);
    }
    assert!(Advisor::new(&six, &opts(3)).unwrap().enumerate(100).is_none());
    // Two initially isolated handles and one persistently isolated: a group on the PI handle
    // differs from the same group on an II handle.
    let mixed = six.with_file_name("mixed.toml");
    let doc = std::fs::read_to_string(&six).unwrap().replace(PI8, "[device.fdp]\nenabled = true\nruhs = 3\nruh_type = [\"ii\", \"ii\", \"pi\"]\nidle_handles_hold_units = false");
    std::fs::write(&mixed, doc).unwrap();
    let adv = Advisor::new(&mixed, &opts(3)).unwrap();
    assert!(adv.mixed_types());
    let all = adv.enumerate(10_000).unwrap();
    assert_eq!(all.len() as u64, adv.count());
    // Partitions with one group: 2 (II or PI); with two: 31 x 3 (II+II, II+PI, PI+II);
    // with three: 90 x 3 (which group is on the PI handle).
    assert_eq!(all.len(), 2 + 31 * 3 + 90 * 3);
    assert_eq!(adv.label(&[0, 0, 2, 2, 1, 1]), "0{hot1,hot2} 2{cold1,cold2} 1{log1,log2}");
    // Canonical forms: the two II handles are interchangeable, the PI one is not.
    assert_eq!(adv.canonical(&[1, 1, 0, 0, 2, 2]), [0, 0, 1, 1, 2, 2]);
    assert_eq!(adv.canonical(&[2, 2, 0, 0, 1, 1]), [2, 2, 0, 0, 1, 1]);
}

#[test]
fn handles_of_one_namespace_are_streams() {
    // One namespace whose two workloads write through placement handles 0 and 1, and a second
    // namespace: three streams.
    let doc = "name = \"t\"\n[device]\ncapacity = \"64MiB\"\nover_provisioning = 0.2\nerase_unit = \"256KiB\"\n[device.fdp]\nenabled = true\nruhs = 4\n\
[[namespace]]\nname = \"cache\"\nsize = \"32MiB\"\nplacement_handles = [0, 1]\n[[namespace]]\nname = \"log\"\nsize = \"32MiB\"\n\
[[workload]]\nnamespace = \"cache\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"2x\"\nplacement_handle = 0\n\
[[workload]]\nnamespace = \"cache\"\npattern = \"sequential\"\nbs = \"4KiB\"\namount = \"2x\"\nplacement_handle = 1\n\
[[workload]]\nnamespace = \"log\"\npattern = \"sequential\"\nbs = \"4KiB\"\namount = \"2x\"\n";
    let p = write("handles.toml", doc);
    let r = advise(&p, &AdviseOptions { ops: vec![0.1, 0.3], ..opts(2) }, &|_| {}).unwrap();
    let names: Vec<&str> = r.streams.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cache/0", "cache/1", "log"]);
    assert!(matches!(r.search, Search::Exhaustive { candidates: 4 }));
    // Both writers of "cache" cover the whole namespace, so each overwrites the other's data:
    // they belong on one handle, and the sequential log on the other.
    assert_eq!(r.best().label, "{cache/0,cache/1}{log}", "{:?}", r.ranking.iter().map(|k| (&k.label, k.waf)).collect::<Vec<_>>());
    // --op: the two baselines and the three other assignments (no placement is one of the four
    // and is not repeated) at both OPs; more OP, less WAF.
    assert_eq!(r.op_rows.len(), 5);
    assert!(r.op_rows.iter().all(|o| o.points.len() == 2 && o.points[0].waf > o.points[1].waf), "{:?}", r.op_rows);
}

#[test]
fn errors_name_the_file_and_the_problem() {
    let err = |name: &str, doc: &str, o: AdviseOptions| -> String {
        let p = write(name, doc);
        let e = advise(&p, &o, &|_| {}).map(|_| ()).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains(name), "{msg}");
        msg
    };
    let base = hot_cold();
    let m = err("nofdp.toml", &base.replace("enabled = true", "enabled = false"), opts(2));
    assert!(m.contains("needs an FDP drive"), "{m}");
    let m = err("toomany.toml", &base, opts(9));
    assert!(m.contains("--handles 9") && m.contains("8 reclaim unit handles"), "{m}");
    let m = err("zero.toml", &base, opts(0));
    assert!(m.contains("at least 1"), "{m}");
    let one = experiment(&[T("only", "256MiB", "random", 1, "1x")], PI8);
    let m = err("one.toml", &one, opts(2));
    assert!(m.contains("1 stream") && m.contains("at least 2"), "{m}");
    let raw = base.replace("over_provisioning = 0.14", "raw_capacity = \"600MiB\"");
    let m = err("raw.toml", &raw, AdviseOptions { ops: vec![0.1], ..opts(2) });
    assert!(m.contains("--op") && m.contains("raw_capacity"), "{m}");
    // Variants: two with FDP need --variant; a name that does not exist is refused.
    let two = format!("{base}[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n");
    let m = err("twovariants.toml", &two, opts(2));
    assert!(m.contains("--variant") && m.contains("a, b"), "{m}");
    let m = err("novariant.toml", &two, AdviseOptions { variant: Some("c".into()), ..opts(2) });
    assert!(m.contains("no variant named \"c\""), "{m}");
}

#[test]
fn the_variant_with_fdp_is_chosen_and_its_keys_stay() {
    // The base has FDP off; the "fdp" variant turns it on and sets the OP. The advisor's points
    // override the namespaces' handles on top of the variant without colliding with it.
    let doc = hot_cold().replace("enabled = true", "enabled = false").replace("over_provisioning = 0.14", "over_provisioning = 0.07")
        + "[[variant]]\nname = \"plain\"\n[[variant]]\nname = \"fdp\"\ndevice.fdp.enabled = true\ndevice.over_provisioning = 0.14\n";
    let p = write("variants.toml", &doc);
    let r = advise(&p, &opts(2), &|_| {}).unwrap();
    assert_eq!(r.variant, "fdp");
    assert_eq!(r.op, Some(0.14));
    let plain = advise(&write("hot-cold-again.toml", &hot_cold()), &opts(2), &|_| {}).unwrap();
    assert_eq!(r.best().label, plain.best().label);
    assert_eq!(r.best().waf, plain.best().waf);
}

#[test]
fn one_trace_split_by_lba_range_into_streams() {
    // A fio iolog writing 4 KiB blocks: 95% of the writes to the first tenth of the namespace,
    // 5% to the rest (a seeded LCG). placement_split = [0.1] sends the hot range through
    // placement handle 0 and the cold range through handle 1: two streams of one trace.
    let ns: u64 = 64 << 20;
    let blocks = ns / 4096;
    let mut x: u64 = 12345;
    let mut log = String::from("fio version 2 iolog\n/dev/t add\n/dev/t open\n");
    for _ in 0..(6 * blocks) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = x >> 33;
        let hot = blocks / 10;
        let b = if r % 20 < 19 { (r / 20) % hot } else { hot + (r / 20) % (blocks - hot) };
        log += &format!("/dev/t write {} 4096\n", b * 4096);
    }
    log += "/dev/t close\n";
    let trace = write("split.log", &log);
    let doc = format!(
        "name = \"split\"\n[device]\ncapacity = \"64MiB\"\nover_provisioning = 0.14\nerase_unit = \"256KiB\"\n{PI8}\n\
[[namespace]]\nname = \"t\"\nsize = \"64MiB\"\nplacement_handles = [0, 1]\n\
[[phase]]\nname = \"warm-up\"\nmeasure = false\n[[phase.trace]]\nfile = {f:?}\nnamespace = \"t\"\nplacement_split = [0.1]\n\
[[phase]]\nname = \"measure\"\n[[phase.trace]]\nfile = {f:?}\nnamespace = \"t\"\nplacement_split = [0.1]\n",
        f = trace.file_name().unwrap().to_str().unwrap()
    );
    let p = write("split.toml", &doc);
    let r = advise(&p, &opts(2), &|_| {}).unwrap();
    let names: Vec<&str> = r.streams.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["t/0", "t/1"]);
    // Two candidates: both ranges on one handle, or one each; apart is clearly better.
    assert_eq!(r.ranking.len(), 2);
    assert_eq!(r.best().label, "{t/0}{t/1}", "{:?}", r.ranking.iter().map(|k| (&k.label, k.waf)).collect::<Vec<_>>());
    // -10.4% (4.373 vs 4.883): well beyond the 0.1% between symmetric candidates.
    assert!(r.best().waf < 0.95 * r.no_placement.waf, "{} vs {}", r.best().waf, r.no_placement.waf);
    // Fractions out of order: refused, naming the trace.
    let bad = write("split-bad.toml", &doc.replace("placement_split = [0.1]", "placement_split = [0.5, 0.2]"));
    let e = format!("{:#}", advise(&bad, &opts(2), &|_| {}).map(|_| ()).unwrap_err());
    assert!(e.contains("placement_split") && e.contains("ascending"), "{e}");
}
