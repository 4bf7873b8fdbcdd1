//! The leveled LSM store under RocksDB's write controller (`LsmConfig::write_controller`):
//! compactions picked when the compaction lane frees let L0 pile up while the background is
//! slower than the clients, the stall triggers bound it, each L0 compaction takes all of it,
//! and the clock adds up. Independent expectations: the triggers' bounds, the clock's sum of
//! its parts, and the at-once store's flushes and keys.

use wafsim_apps::lsm::{CompactionConfig, LeveledConfig, Lsm, LsmConfig, LsmFiles, WriteControllerConfig};
use wafsim_core::pipeline::{FileOp, FileSource, KvOp, KvScript};
use wafsim_core::Rng;

mod common;
use common::{key, KIB, VALUE};

/// 1 KiB records (24-byte keys, no overheads), 64 KiB memtables and target files, 256 KiB
/// level base: 1 MiB of client writes makes 16 flushes.
fn small() -> LsmConfig {
    let lc = LeveledConfig { target_file_bytes: 64 * KIB, max_bytes_for_level_base: 256 * KIB, ..LeveledConfig::default() };
    LsmConfig {
        compaction: CompactionConfig::Leveled(lc),
        memtable_bytes: 64 * KIB,
        key_bytes: 24,
        record_overhead_bytes: 0,
        log_record_overhead_bytes: 0,
        write_bytes: 16 << 10,
        read_chunk_bytes: 16 << 10,
        capacity_bytes: 1 << 30,
        ..LsmConfig::rocksdb()
    }
}

/// The write controller with `bandwidth` bytes/s per job, db_bench's 8 MiB/s delayed rate and
/// clients as fast as they can.
fn clocked(bandwidth: f64) -> LsmConfig {
    LsmConfig { write_controller: Some(WriteControllerConfig { delayed_write_rate: 8.0 * 1048576.0, ..WriteControllerConfig::rocksdb(bandwidth) }), ..small() }
}

/// `n` unique keys in scrambled order, then `n` uniform updates (db_bench's fill + overwrite).
fn fill_overwrite(n: u64, seed: u64) -> Vec<KvOp> {
    let mut rng = Rng::new(seed);
    let mut v: Vec<KvOp> = (0..n).map(|i| KvOp::Insert { key: key(i), bytes: VALUE }).collect();
    v.extend((0..n).map(|_| KvOp::Update { key: key(rng.below(n)), bytes: VALUE }));
    v
}

struct Run {
    ops: Vec<FileOp>,
    store: Lsm,
    max_l0: u32,
}

fn run(cfg: LsmConfig, reqs: &[KvOp]) -> Run {
    let mut s = Lsm::new(cfg).unwrap();
    let mut ops = Vec::new();
    let mut max_l0 = 0;
    for r in reqs {
        s.apply(r, &mut ops).unwrap();
        max_l0 = max_l0.max(s.l0_stall_files());
    }
    s.flush(&mut ops).unwrap();
    s.check_invariants();
    Run { ops, store: s, max_l0 }
}

#[test]
fn a_slow_background_lets_l0_pile_up_to_the_triggers_and_l0_compactions_take_it_all() {
    let reqs = fill_overwrite(16_000, 3);
    let at_once = run(LsmConfig { background: false, ..small() }, &reqs);
    let a = at_once.store.counters();
    // Clients at 4 MiB/s; the background per job from far faster than needed down to twice
    // the clients' rate (the jobs need about 20 bytes per client byte here).
    let mut last: Option<f64> = None;
    for bw in [1e6, 256.0, 64.0, 16.0, 8.0] {
        let mut cfg = clocked(bw * 1048576.0);
        cfg.write_controller.as_mut().unwrap().client_rate = 4.0 * 1048576.0;
        let r = run(cfg, &reqs);
        let c = r.store.counters();
        let per_l0 = c.l0_compaction_files as f64 / c.l0_compactions as f64;
        eprintln!("{bw} MiB/s: {per_l0:.2} L0 files per L0 compaction, max L0 {}, compaction {} B (at once {}), stopped {} delayed {}", r.max_l0, c.compaction_write_bytes, a.compaction_write_bytes, c.stopped_writes, c.delayed_writes);
        // The stop trigger holds L0: a write waits while 36 are installed; at most the two
        // memtables' flushes install during that wait.
        assert!(r.max_l0 <= 36 + 2, "{bw}: L0 reached {}", r.max_l0);
        // A slower background: at least as many L0 files per L0 compaction.
        if let Some(p) = last {
            assert!(per_l0 >= p, "{bw}: {per_l0:.2} files per L0 compaction after {p:.2}");
        } else {
            // Far faster than the clients: a lane is free at every flush, L0 compacts at the
            // trigger, as the at-once store does, and writes what it writes (within 1%: the
            // levels below are scored by RocksDB 7.8's rule here).
            assert!(per_l0 < 4.5, "{per_l0}");
            assert!((c.compaction_write_bytes as f64 / a.compaction_write_bytes as f64 - 1.0).abs() < 0.01);
        }
        if per_l0 > 5.0 {
            // The base level is rewritten less often: fewer compaction bytes.
            assert!(c.compaction_write_bytes as f64 <= 0.9 * a.compaction_write_bytes as f64, "{bw}: {} B", c.compaction_write_bytes);
        }
        last = Some(per_l0);
        // The clients and flushes are the at-once store's; every key is where it was.
        assert_eq!((c.log_bytes, c.flush_bytes, c.flushes), (a.log_bytes, a.flush_bytes, a.flushes));
        assert_eq!(r.store.keys(), at_once.store.keys());
        for i in (0..16_000).step_by(97) {
            assert_eq!(r.store.value_of(key(i)), at_once.store.value_of(key(i)));
        }
        // The clock is the sum of its parts.
        let clients = (c.writes - c.delayed_writes) as f64 * (24 + VALUE) as f64 / (4.0 * 1048576.0);
        let sum = clients + c.delay_seconds + c.stop_seconds;
        assert!((c.clock_seconds - sum).abs() < 1e-6 * sum, "clock {} s, parts {sum} s", c.clock_seconds);
    }
    let per_l0 = last.unwrap();
    assert!(per_l0 > 8.0, "a background twice the clients' rate lets L0 pile up: {per_l0:.2}");
}

#[test]
fn clients_as_fast_as_they_can_meet_the_stops_and_the_delays() {
    let reqs = fill_overwrite(16_000, 3);
    let r = run(clocked(64.0 * 1048576.0), &reqs);
    let c = r.store.counters();
    // Every memtable fills in no time: the next one waits for its flush (two not flushed
    // stop writes), and L0 reaches the slowdown trigger.
    assert!(c.stopped_writes >= c.flushes / 2, "{} stops, {} flushes", c.stopped_writes, c.flushes);
    assert!(c.delayed_writes > 0 && r.max_l0 >= 20 && r.max_l0 <= 38);
    assert!((c.clock_seconds - c.delay_seconds - c.stop_seconds).abs() < 1e-6 * c.clock_seconds);
    // Every byte the store counts went out as a file write, once.
    let written: u64 = r.ops.iter().map(|op| if let FileOp::Write { len, .. } = *op { len as u64 } else { 0 }).sum();
    assert_eq!(written, c.file_write_bytes());
}

#[test]
fn a_background_faster_than_the_clients_never_stalls_and_the_clock_is_the_clients() {
    let reqs = fill_overwrite(4_000, 5);
    let client = 1.0 * 1048576.0;
    let mut cfg = clocked(1e12);
    cfg.write_controller.as_mut().unwrap().client_rate = client;
    let r = run(cfg, &reqs);
    let c = r.store.counters();
    assert_eq!((c.stopped_writes, c.delayed_writes), (0, 0));
    let want = c.log_bytes as f64 / client;
    assert!((c.clock_seconds - want).abs() < 1e-9 * want, "clock {} s, clients {want} s", c.clock_seconds);
    // The trigger (4) is never passed by much: a lane is free at every flush.
    assert!(r.max_l0 <= 5, "max L0 {}", r.max_l0);
}

#[test]
fn the_clocked_store_is_deterministic_through_its_file_source() {
    let reqs = fill_overwrite(6_000, 9);
    let once = |cfg: LsmConfig| {
        let mut files = LsmFiles::new(KvScript::new(reqs.clone()), Lsm::new(cfg).unwrap()).with_flush_at_end(true);
        let mut v = Vec::new();
        while files.fill(&mut v, 1000).unwrap() > 0 {}
        assert_eq!(files.report().pending_write_bytes, 0);
        v
    };
    let a = once(clocked(12.0 * 1048576.0));
    assert!(a == once(clocked(12.0 * 1048576.0)));
    assert!(a != once(clocked(48.0 * 1048576.0)), "the bandwidth moves the stream");
}

#[test]
fn the_write_controller_is_refused_where_it_does_not_apply() {
    let wc = Some(WriteControllerConfig::rocksdb(1e8));
    assert!(Lsm::new(LsmConfig { write_controller: wc.clone(), ..LsmConfig::cassandra() }).is_err(), "size-tiered");
    assert!(Lsm::new(LsmConfig { write_controller: wc.clone(), background: false, ..small() }).is_err(), "at once");
    let bad = |f: fn(&mut WriteControllerConfig)| {
        let mut w = WriteControllerConfig::rocksdb(1e8);
        f(&mut w);
        Lsm::new(LsmConfig { write_controller: Some(w), ..small() }).is_err()
    };
    assert!(bad(|w| w.background_bandwidth = 0.0));
    assert!(bad(|w| w.background_bandwidth = f64::INFINITY));
    assert!(bad(|w| w.delayed_write_rate = f64::NAN));
    assert!(bad(|w| w.level0_stop_writes_trigger = 10));
    assert!(bad(|w| w.max_write_buffer_number = 1));
}

/// Universal compaction under the write controller: runs stay in time order (the store's
/// invariants, checked as it goes), the stall triggers count sorted runs (L0 files and the
/// levels below) and hold them, and every key ends where the at-once store puts it.
#[test]
fn universal_compaction_under_the_write_controller_keeps_runs_in_time_order() {
    use wafsim_apps::lsm::UniversalConfig;
    let reqs = fill_overwrite(16_000, 7);
    let universal = |cfg: LsmConfig| LsmConfig { compaction: CompactionConfig::Universal(UniversalConfig { target_file_bytes: 64 * KIB, ..UniversalConfig::default() }), ..cfg };
    let at_once = run(universal(LsmConfig { background: false, ..small() }), &reqs);
    let a = at_once.store.counters();
    for bw in [1e6, 16.0] {
        let mut cfg = universal(clocked(bw * 1048576.0));
        cfg.write_controller.as_mut().unwrap().client_rate = 4.0 * 1048576.0;
        let mut s = Lsm::new(cfg).unwrap();
        let mut ops = Vec::new();
        let mut max_runs = 0;
        for (i, r) in reqs.iter().enumerate() {
            s.apply(r, &mut ops).unwrap();
            max_runs = max_runs.max(s.l0_stall_files());
            if i % 997 == 0 {
                s.check_invariants();
            }
        }
        s.flush(&mut ops).unwrap();
        s.check_invariants();
        let c = s.counters();
        eprintln!("{bw} MiB/s: max runs {max_runs}, compaction {} B (at once {}), picks {:?} (at once {:?}), stopped {} delayed {}", c.compaction_write_bytes, a.compaction_write_bytes, c.universal_picks, a.universal_picks, c.stopped_writes, c.delayed_writes);
        assert!(max_runs <= 36 + 2, "{bw}: {max_runs} sorted runs");
        assert_eq!((c.log_bytes, c.flush_bytes, c.flushes), (a.log_bytes, a.flush_bytes, a.flushes));
        assert_eq!(s.keys(), at_once.store.keys());
        for i in (0..16_000).step_by(97) {
            assert_eq!(s.value_of(key(i)), at_once.store.value_of(key(i)));
        }
        if bw > 1e5 {
            // A lane free at every flush: the at-once store's compactions.
            assert_eq!(c.universal_picks, a.universal_picks);
            assert_eq!(c.compaction_write_bytes, a.compaction_write_bytes);
        } else {
            // A slow background: runs pile up and are merged more at a time, fewer times.
            assert!(max_runs > 4 && c.compactions < a.compactions, "{} compactions, at once {}", c.compactions, a.compactions);
        }
    }
}
