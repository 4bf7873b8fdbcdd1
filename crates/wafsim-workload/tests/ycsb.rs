//! YCSB core workload generator: operation mixes, distributions, key space, determinism.

use std::collections::{HashMap, HashSet};
use wafsim_workload::ycsb::{
    fnvhash64, ycsb_key, zeta, ScrambledZipfian, Zipfian, SCRAMBLED_ITEM_COUNT, SCRAMBLED_ZETAN,
    ZIPFIAN_CONSTANT,
};
use wafsim_workload::{InsertOrder, KvOp, KvSource, RequestDistribution, Ycsb, YcsbConfig, YcsbPhases};
use wafsim_core::Rng;

fn drain(src: &mut impl KvSource) -> Vec<KvOp> {
    let mut out = Vec::new();
    while src.fill(&mut out, 4096) > 0 {}
    out
}

fn key_of(op: &KvOp) -> u64 {
    match *op {
        KvOp::Insert { key, .. }
        | KvOp::Update { key, .. }
        | KvOp::Read { key }
        | KvOp::Scan { key, .. }
        | KvOp::ReadModifyWrite { key, .. }
        | KvOp::Delete { key } | KvOp::Get { key, .. } => key,
    }
}

#[test]
fn operation_mix_of_each_preset() {
    let ops = 1_000_000u64;
    for letter in 'a'..='f' {
        let mut cfg = YcsbConfig::workload(letter);
        cfg.operationcount = ops;
        let stream = drain(&mut Ycsb::new(&cfg, YcsbPhases::Run, 11));
        assert_eq!(stream.len() as u64, ops, "workload {letter}");
        let mut n = [0u64; 5];
        for op in &stream {
            match *op {
                KvOp::Read { .. } => n[0] += 1,
                KvOp::Update { bytes, .. } => {
                    assert_eq!(bytes, 100);
                    n[1] += 1
                }
                KvOp::Insert { bytes, .. } => {
                    assert_eq!(bytes, 1000);
                    n[2] += 1
                }
                KvOp::Scan { records, .. } => {
                    assert!((1..=100).contains(&records), "{records}");
                    n[3] += 1
                }
                KvOp::ReadModifyWrite { bytes, .. } => {
                    assert_eq!(bytes, 100);
                    n[4] += 1
                }
                KvOp::Delete { .. } | KvOp::Get { .. } => panic!("YCSB core workloads do not delete"),
            }
        }
        let want = [
            cfg.readproportion,
            cfg.updateproportion,
            cfg.insertproportion,
            cfg.scanproportion,
            cfg.readmodifywriteproportion,
        ];
        for i in 0..5 {
            let got = n[i] as f64 / ops as f64;
            assert!((got - want[i]).abs() < 0.01, "workload {letter}: kind {i}: {got} vs {}", want[i]);
            assert_eq!(want[i] == 0.0, n[i] == 0, "workload {letter}: kind {i}");
        }
    }
    // The presets themselves, as the shipped workload files set them.
    let d = YcsbConfig::workload('d');
    assert_eq!(d.requestdistribution, RequestDistribution::Latest);
    let e = YcsbConfig::workload('E');
    assert_eq!((e.scanproportion, e.insertproportion, e.maxscanlength), (0.95, 0.05, 100));
    for l in ['a', 'b', 'c', 'e', 'f'] {
        assert_eq!(YcsbConfig::workload(l).requestdistribution, RequestDistribution::Zipfian);
    }
    assert!(YcsbConfig::try_workload('g').is_none());
}

#[test]
fn writeallfields_updates_send_whole_records() {
    let mut cfg = YcsbConfig::workload('f');
    cfg.writeallfields = true;
    cfg.fieldcount = 4;
    cfg.fieldlength = 250;
    let stream = drain(&mut Ycsb::new(&cfg, YcsbPhases::Run, 1));
    assert!(stream.iter().any(|op| matches!(op, KvOp::ReadModifyWrite { bytes: 1000, .. })));
    assert!(!stream.iter().any(|op| matches!(op, KvOp::ReadModifyWrite { bytes, .. } if *bytes != 1000)));
}

#[test]
fn zipfian_rank_frequency_matches_zipf_099() {
    let n = 1000u64;
    let draws = 10_000_000u64;
    let mut z = Zipfian::new(n);
    let mut rng = Rng::new(5);
    let mut count = vec![0u64; n as usize + 1];
    for _ in 0..draws {
        let v = z.next(&mut rng);
        assert!(v < n);
        count[v as usize] += 1;
    }
    let zn = zeta(n, ZIPFIAN_CONSTANT);
    assert!((z.zetan() - zn).abs() < 1e-12);
    let ideal = |i: u64| 1.0 / ((i as f64).powf(ZIPFIAN_CONSTANT) * zn);
    let share = |i: u64| count[i as usize - 1] as f64 / draws as f64;
    // Ranks 1 and 2 are exact in Gray's method.
    for i in 1..=2u64 {
        assert!((share(i) / ideal(i) - 1.0).abs() < 0.01, "rank {i}: {} vs {}", share(i), ideal(i));
    }
    // Further ranks come from Gray's continuous approximation: exactly its masses ...
    let gray = gray_pmf(n, zn);
    for i in 3..=100u64 {
        let want = gray(i - 1);
        assert!((share(i) / want - 1.0).abs() < 0.03, "rank {i}: {} vs Gray {want}", share(i));
    }
    // ... which are zipf(0.99) within 18% at rank 3 and within 2% from rank 10 to 30 (3.1%
    // up to rank 100). YCSB's own generator has this error; it is not smoothed away here.
    for i in 3..=30u64 {
        let tol = if i < 10 { 0.18 } else { 0.02 };
        assert!((share(i) / ideal(i) - 1.0).abs() < tol + 0.01, "rank {i}: {} vs zipf {}", share(i), ideal(i));
    }
    let head: f64 = (1..=10).map(share).sum();
    let want_head: f64 = (1..=10).map(ideal).sum();
    assert!((head / want_head - 1.0).abs() < 0.05, "{head} vs {want_head}");
    assert!(count[0] > count[1] && count[1] > count[2] && count[2] > count[9] && count[9] > count[99]);
}

/// The probability of item x (0-based) under Gray et al.'s method as YCSB implements it, for
/// `items` items with zeta `zn`: 1/zn and 0.5^theta/zn for the first two, then differences of
/// the method's inverse: P(X <= x) = 1 - (1 - ((x + 1) / items)^(1 - theta)) / eta.
fn gray_pmf(items: u64, zn: f64) -> impl Fn(u64) -> f64 {
    let th = ZIPFIAN_CONSTANT;
    let z2 = zeta(2, th);
    let eta = (1.0 - (2.0 / items as f64).powf(1.0 - th)) / (1.0 - z2 / zn);
    let cdf = move |x: u64| -> f64 {
        if x == 0 {
            1.0 / zn
        } else if x == 1 {
            z2 / zn
        } else {
            1.0 - (1.0 - ((x + 1) as f64 / items as f64).powf(1.0 - th)) / eta
        }
    };
    move |x: u64| if x == 0 { cdf(0) } else { cdf(x) - cdf(x - 1) }
}

#[test]
fn scrambled_zipfian_constant_is_zeta_of_ten_billion() {
    // Euler-Maclaurin for zeta(N, s) = sum_{i=1..N} i^-s with the first M terms summed.
    let (s, n, m) = (ZIPFIAN_CONSTANT, SCRAMBLED_ITEM_COUNT as f64, 100_000u64);
    let head = zeta(m - 1, s);
    let a = m as f64;
    let tail = (n.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s)
        + 0.5 * (a.powf(-s) + n.powf(-s))
        + s / 12.0 * (a.powf(-s - 1.0) - n.powf(-s - 1.0));
    assert!((head + tail - SCRAMBLED_ZETAN).abs() < 1e-6, "{}", head + tail);
}

#[test]
fn scrambled_zipfian_spreads_popular_items_with_ycsbs_profile() {
    let n = 1000u64;
    let draws = 10_000_000u64;
    let mut z = ScrambledZipfian::new(0, n - 1);
    let mut rng = Rng::new(9);
    let mut count = vec![0u64; n as usize];
    for _ in 0..draws {
        count[z.next(&mut rng) as usize] += 1;
    }
    // Expected mass per item: Gray's zipfian over 10^10 ranks (YCSB's draw) for the first
    // million ranks, each hashed to its item; the remaining mass is spread evenly.
    let gray = gray_pmf(SCRAMBLED_ITEM_COUNT + 1, SCRAMBLED_ZETAN);
    let mut want = vec![0.0f64; n as usize];
    let mut head = 0.0;
    for r in 0..1_000_000u64 {
        let p = gray(r);
        want[(fnvhash64(r) % n) as usize] += p;
        head += p;
    }
    for w in want.iter_mut() {
        *w += (1.0 - head) / n as f64;
    }
    let mut by_count: Vec<usize> = (0..n as usize).collect();
    by_count.sort_by_key(|&i| std::cmp::Reverse(count[i]));
    let top = by_count[0];
    assert_ne!(top, 0, "the most popular item is scattered away from item 0");
    assert_eq!(top as u64, fnvhash64(0) % n, "the most popular item is where rank 0 hashes to");
    // The head of the profile matches item by item.
    for &i in &by_count[..10] {
        let got = count[i] as f64 / draws as f64;
        assert!((got / want[i] - 1.0).abs() < 0.05, "item {i}: {got} vs {}", want[i]);
    }
    // Popular items are not clustered: the ten most popular are not ten neighbours.
    let mut top10: Vec<usize> = by_count[..10].to_vec();
    top10.sort();
    assert!(top10[9] - top10[0] > 100, "{top10:?}");
    // The same ranks are popular at any item count: item counts differ, rank 0 still tops.
    let mut z2 = ScrambledZipfian::new(0, 4999);
    let mut c2 = HashMap::new();
    for _ in 0..1_000_000 {
        *c2.entry(z2.next(&mut rng)).or_insert(0u64) += 1;
    }
    let best = c2.iter().max_by_key(|(_, c)| **c).unwrap().0;
    assert_eq!(*best, fnvhash64(0) % 5000);
}

#[test]
fn zipfian_request_keys_stay_in_the_loaded_key_space() {
    let mut cfg = YcsbConfig::workload('a');
    cfg.insertorder = InsertOrder::Ordered;
    cfg.operationcount = 200_000;
    for op in drain(&mut Ycsb::new(&cfg, YcsbPhases::Run, 3)) {
        assert!(key_of(&op) < cfg.recordcount);
    }
}

#[test]
fn latest_favours_recent_inserts() {
    let mut cfg = YcsbConfig::workload('d');
    cfg.insertorder = InsertOrder::Ordered;
    cfg.recordcount = 100_000;
    cfg.operationcount = 1_000_000;
    let stream = drain(&mut Ycsb::new(&cfg, YcsbPhases::Run, 21));
    let mut records = cfg.recordcount;
    let mut age = vec![0u64; 16];
    let mut reads = 0u64;
    let mut old_half = 0u64;
    for op in &stream {
        match *op {
            KvOp::Insert { key, .. } => {
                assert_eq!(key, records, "run-phase inserts continue the record numbers");
                records += 1;
            }
            KvOp::Read { key } => {
                assert!(key < records, "reads only existing records");
                let a = records - 1 - key;
                if (a as usize) < age.len() {
                    age[a as usize] += 1;
                }
                if key < records / 2 {
                    old_half += 1;
                }
                reads += 1;
            }
            _ => panic!("workload D reads and inserts"),
        }
    }
    let share = |a: usize| age[a] as f64 / reads as f64;
    // The newest record is read most: 1/zeta(count) (count 100,000 plus about 50,000 inserts).
    let zn = zeta(records - 1, ZIPFIAN_CONSTANT);
    assert!(share(0) > 0.8 / zn && share(0) < 1.2 / zn, "{} vs {}", share(0), 1.0 / zn);
    // YCSB keeps eta of the initial item count as the key space grows, which dents the
    // profile past the second newest record; the newest records still dominate.
    assert!(age[0] > age[1] && age[1] > age[10] && age[3] > age[15], "{age:?}");
    let recent10: f64 = (0..10).map(share).sum();
    assert!(recent10 > 0.2, "{recent10}: uniform would give 1e-4");
    assert!((old_half as f64 / reads as f64) < 0.1, "older half of the records: {old_half}/{reads}");
}

#[test]
fn hotspot_sends_opn_fraction_to_data_fraction() {
    for (data, opn) in [(0.2, 0.8), (0.1, 0.9), (0.5, 0.3)] {
        let cfg = YcsbConfig {
            requestdistribution: RequestDistribution::Hotspot,
            hotspotdatafraction: data,
            hotspotopnfraction: opn,
            insertorder: InsertOrder::Ordered,
            recordcount: 10_000,
            operationcount: 1_000_000,
            ..YcsbConfig::default()
        };
        let stream = drain(&mut Ycsb::new(&cfg, YcsbPhases::Run, 2));
        let hot_keys = (cfg.recordcount as f64 * data) as u64;
        let mut hot = 0u64;
        let mut seen_hot = HashSet::new();
        for op in &stream {
            let k = key_of(op);
            assert!(k < cfg.recordcount);
            if k < hot_keys {
                hot += 1;
                seen_hot.insert(k);
            }
        }
        let got = hot as f64 / stream.len() as f64;
        assert!((got - opn).abs() < 0.01, "{data}/{opn}: {got}");
        assert_eq!(seen_hot.len() as u64, hot_keys, "every hot key is used");
    }
}

#[test]
fn uniform_covers_the_key_space_evenly() {
    let cfg = YcsbConfig {
        insertorder: InsertOrder::Ordered,
        recordcount: 100,
        operationcount: 1_000_000,
        ..YcsbConfig::default()
    };
    let mut c = vec![0u64; 100];
    for op in drain(&mut Ycsb::new(&cfg, YcsbPhases::Run, 4)) {
        c[key_of(&op) as usize] += 1;
    }
    for x in c {
        assert!((9_400..10_600).contains(&x), "{x}");
    }
}

#[test]
fn load_phase_inserts_every_key_exactly_once() {
    for order in [InsertOrder::Hashed, InsertOrder::Ordered] {
        let mut cfg = YcsbConfig::workload('a');
        cfg.recordcount = 200_000;
        cfg.insertorder = order;
        let stream = drain(&mut Ycsb::new(&cfg, YcsbPhases::Load, 8));
        assert_eq!(stream.len() as u64, cfg.recordcount);
        let mut keys = HashSet::new();
        for (i, op) in stream.iter().enumerate() {
            match *op {
                KvOp::Insert { key, bytes } => {
                    assert_eq!(bytes, 1000);
                    assert_eq!(key, ycsb_key(i as u64, order), "insert order");
                    assert!(keys.insert(key), "key {key} inserted twice");
                }
                _ => panic!("the load phase only inserts"),
            }
        }
    }
    // Hashed keys are YCSB's: FNV-1a 64 over the record number's bytes, as a positive long.
    assert_eq!(ycsb_key(7, InsertOrder::Ordered), 7);
    let h = fnvhash64(0);
    assert!(h < 1 << 63);
    let mut want = 0xCBF2_9CE4_8422_2325u64;
    for _ in 0..8 {
        want = want.wrapping_mul(1_099_511_628_211);
    }
    assert_eq!(h, (want as i64).wrapping_abs() as u64);
}

#[test]
fn load_then_run_and_run_phase_inserts_extend_the_key_space() {
    let mut cfg = YcsbConfig::workload('e');
    cfg.recordcount = 5_000;
    cfg.operationcount = 100_000;
    let stream = drain(&mut Ycsb::new(&cfg, YcsbPhases::LoadAndRun, 12));
    assert_eq!(stream.len() as u64, cfg.recordcount + cfg.operationcount);
    let loaded: HashSet<u64> = stream[..5_000].iter().map(key_of).collect();
    let mut next = cfg.recordcount;
    let mut existing = loaded.clone();
    let mut new_scanned = 0;
    for op in &stream[5_000..] {
        match *op {
            KvOp::Insert { key, .. } => {
                assert_eq!(key, fnvhash64(next));
                assert!(!loaded.contains(&key));
                existing.insert(key);
                next += 1;
            }
            KvOp::Scan { key, .. } => {
                assert!(existing.contains(&key), "scans start at existing records");
                if !loaded.contains(&key) {
                    new_scanned += 1;
                }
            }
            _ => panic!("workload E scans and inserts"),
        }
    }
    assert!(next - cfg.recordcount > 4_000);
    assert!(new_scanned > 0, "records inserted in the run phase get chosen");
}

#[test]
fn same_seed_same_stream_whatever_the_batch_size() {
    for letter in 'a'..='f' {
        let mut cfg = YcsbConfig::workload(letter);
        cfg.operationcount = 50_000;
        let a = drain(&mut Ycsb::new(&cfg, YcsbPhases::LoadAndRun, 77));
        let mut src = Ycsb::new(&cfg, YcsbPhases::LoadAndRun, 77);
        let mut b = Vec::new();
        while src.fill(&mut b, 7) > 0 {}
        assert_eq!(a, b, "workload {letter}");
        let c = drain(&mut Ycsb::new(&cfg, YcsbPhases::LoadAndRun, 78));
        assert_ne!(a, c, "workload {letter}: another seed, another stream");
        assert_eq!(a[..1000], c[..1000], "the load phase does not depend on the seed");
    }
}

#[test]
fn byte_budget_stops_at_a_multiple_of_the_capacity() {
    let cfg = YcsbConfig::workload('a');
    let budget = 3 * 1_000_000u64;
    let mut src = Ycsb::new(&cfg, YcsbPhases::LoadAndRun, 5).with_byte_budget(budget);
    let stream = drain(&mut src);
    let written: u64 = stream
        .iter()
        .map(|op| match *op {
            KvOp::Insert { bytes, .. } | KvOp::Update { bytes, .. } | KvOp::ReadModifyWrite { bytes, .. } => bytes as u64,
            _ => 0,
        })
        .sum();
    assert_eq!(written, src.bytes_written());
    assert!(written >= budget && written < budget + 100, "{written}");
    assert!(src.operations() > cfg.operationcount, "the budget replaces operationcount");
    assert_eq!(src.fill(&mut Vec::new(), 10), 0);
    // Budget within the load phase.
    let stream = drain(&mut Ycsb::new(&cfg, YcsbPhases::LoadAndRun, 5).with_byte_budget(10_500));
    assert_eq!(stream.len(), 11);
}

#[test]
fn properties_by_name() {
    let mut cfg = YcsbConfig::default();
    cfg.set("requestdistribution", "hotspot").unwrap();
    cfg.set("hotspotopnfraction", "0.9").unwrap();
    cfg.set("insertorder", "ordered").unwrap();
    cfg.set("zeropadding", "12").unwrap();
    cfg.set("writeallfields", "true").unwrap();
    assert_eq!(cfg.requestdistribution, RequestDistribution::Hotspot);
    assert_eq!(cfg.hotspotopnfraction, 0.9);
    assert_eq!(cfg.insertorder, InsertOrder::Ordered);
    assert!(cfg.writeallfields);
    assert!(cfg.set("requestdistribution", "exponential").is_err());
    assert!(cfg.set("recordcount", "many").is_err());
    assert!(cfg.set("nosuchproperty", "1").is_err());
    cfg.readproportion = 0.0;
    cfg.updateproportion = 0.0;
    assert!(Ycsb::try_new(&cfg, YcsbPhases::Run, 0).is_err());
}

/// Release-mode speed: `cargo test --release -p wafsim-workload --test ycsb -- --ignored --nocapture`.
#[test]
#[ignore]
fn speed_workload_a_zipfian() {
    let mut cfg = YcsbConfig::workload('a');
    cfg.recordcount = 10_000_000;
    cfg.operationcount = 200_000_000;
    let mut src = Ycsb::new(&cfg, YcsbPhases::Run, 1);
    let mut buf = Vec::with_capacity(4096);
    let mut n = 0u64;
    let mut sink = 0u64;
    let t = std::time::Instant::now();
    loop {
        buf.clear();
        let k = src.fill(&mut buf, 4096);
        if k == 0 {
            break;
        }
        n += k as u64;
        sink = sink.wrapping_add(key_of(&buf[k - 1]));
    }
    let s = t.elapsed().as_secs_f64();
    println!("YCSB A zipfian: {n} requests in {s:.2} s = {:.1} M requests/s ({sink})", n as f64 / s / 1e6);
}
