//! The log-structured KV store's mechanics against hand-computed cases (allocation order,
//! defrag's queue, pacing and vacated blocks, partial flushes, stop-writes and the reserve),
//! its WAF against the low-water-mark theory, its index against a HashMap reference, and its
//! speed.

use std::collections::HashMap;
use std::time::Instant;

use proptest::prelude::*;
use wafsim_apps::{LsKv, LsKvConfig, LsKvError, LsKvSource};
use wafsim_core::pipeline::{IoSource, KvOp, KvScript};
use wafsim_core::{Io, Op, Pid, Rng};

const KIB: u32 = 1024;

fn io(op: Op, offset: u64, len: u32) -> Io {
    Io { op, ns: 0, offset, len, pid: Pid::NONE }
}

/// Defrag that takes no time: no sleep, no read time (it runs before the next request).
fn instant_defrag(cfg: LsKvConfig) -> LsKvConfig {
    LsKvConfig { defrag_sleep_us: 0, defrag_read_latency_us: 0, defrag_read_bytes_per_sec: 1e30, ..cfg }
}

/// 128 KiB blocks, 64 blocks, no header, no post-write queue, records stored as exactly their
/// data (1 KiB data = 1024 stored bytes: 128 per block, LWM 65536 bytes = 64 records), clients
/// at 10,000 requests/s, defrag instant.
fn small_cfg(post_write_queue_blocks: u32, trim: bool) -> LsKvConfig {
    instant_defrag(LsKvConfig {
        write_block_bytes: 128 * KIB,
        device_bytes: 64 * 128 * 1024,
        header_bytes: 0,
        record_header_bytes: 0,
        post_write_queue_blocks,
        trim_freed_blocks: trim,
        ..LsKvConfig::default()
    })
}

fn small(post_write_queue_blocks: u32, trim: bool) -> LsKv {
    LsKv::new(small_cfg(post_write_queue_blocks, trim)).unwrap()
}

fn apply_all(kv: &mut LsKv, ops: impl IntoIterator<Item = KvOp>) -> Vec<Io> {
    let mut out = Vec::new();
    for op in ops {
        kv.apply(&op, &mut out).unwrap();
    }
    out
}

fn ins(key: u64) -> KvOp {
    KvOp::Insert { key, bytes: KIB }
}
fn upd(key: u64) -> KvOp {
    KvOp::Update { key, bytes: KIB }
}

#[test]
fn records_fill_blocks_exactly() {
    // Default header (47 bytes) and 16-byte alignment: 1024 + 47 = 1071 -> 1072 stored;
    // 131072 / 1072 = 122 records per 128 KiB block (288 bytes left unused).
    let mut kv = LsKv::new(LsKvConfig { write_block_bytes: 128 * KIB, device_bytes: 64 << 17, header_bytes: 0, post_write_queue_blocks: 0, ..LsKvConfig::default() }).unwrap();
    assert_eq!(kv.stored_size(1024), 1072);
    assert_eq!(kv.records_per_block(1024), 122);
    let out = apply_all(&mut kv, (0..122).map(ins));
    assert!(out.is_empty(), "122 records fit in the open block");
    assert_eq!(kv.lookup(121).unwrap().offset, 121 * 1072);
    assert_eq!(kv.client_block(), Some((0, 122 * 1072)));
    let out = apply_all(&mut kv, [ins(122)]);
    assert_eq!(out, vec![io(Op::Write, 0, 128 * KIB)], "the 123rd record writes block 0 whole");
    let l = kv.lookup(122).unwrap();
    assert_eq!((l.block, l.offset, l.stored, l.data), (1, 0, 1072, 1024));
    assert_eq!(kv.counters().device_write_bytes, 131072);
    assert_eq!(kv.counters().record_write_bytes, 123 * 1024);
    assert_eq!(kv.counters().client_stored_bytes, 123 * 1072);
    // A record larger than a block is refused.
    let mut out = Vec::new();
    assert!(matches!(kv.apply(&KvOp::Insert { key: 9, bytes: 128 * KIB }, &mut out), Err(LsKvError::RecordTooLarge { .. })));
}

/// Block 0 full of keys 0..128 and written; key 128 opens block 1.
fn block0_written(kv: &mut LsKv) {
    let out = apply_all(kv, (0..129).map(ins));
    assert_eq!(out, vec![io(Op::Write, 0, 128 * KIB)]);
}

#[test]
fn defrag_queue_entered_below_the_mark_not_at_it() {
    let mut kv = small(0, false);
    assert_eq!(kv.lwm_bytes(), 65536);
    block0_written(&mut kv);
    // 64 updates leave 64 live records = 65536 bytes = exactly 50%: not below the mark.
    let out = apply_all(&mut kv, (0..64).map(upd));
    assert!(out.is_empty());
    assert_eq!(kv.block_live_bytes(0), 65536);
    assert!(kv.defrag_queue().is_empty(), "at 50% the block is not eligible");
    // One more: 63 live records < 50%: queued, not defragged yet (no new block needed).
    let out = apply_all(&mut kv, [upd(64)]);
    assert!(out.is_empty());
    assert_eq!(kv.defrag_queue(), vec![0]);
    assert_eq!(kv.block_live_bytes(0), 63 * 1024);
    assert_eq!(kv.counters().blocks_defragged, 0);
    kv.check_invariants();
}

/// Defrag pops block 0 at the first request after it was queued, reads it and moves its 63
/// live records into the defrag buffer (pristine block 2; block 1 is the client's). Block 0 is
/// not free until that buffer is written: the client's next block is pristine block 3, not
/// block 0. At 3 s the defrag buffer, holding records of a vacated block and with no full
/// defrag block written since the last check, is written whole in place; that frees block 0,
/// which the client's next block then takes (the free queue before pristine blocks).
#[test]
fn defrag_moves_the_live_records_and_frees_the_block_once_they_are_written() {
    for trim in [false, true] {
        let mut kv = small(0, trim);
        block0_written(&mut kv);
        apply_all(&mut kv, (0..65).map(upd)); // block 1: key 128 + 65 updates = 66 records
        assert_eq!(kv.defrag_queue(), vec![0]);
        let out = apply_all(&mut kv, [ins(1000)]);
        assert_eq!(out, vec![io(Op::Read, 0, 128 * KIB)], "defrag reads block 0 before the request");
        assert_eq!(kv.defrag_block(), Some((2, 63 * 1024)));
        for k in 65..128u64 {
            let l = kv.lookup(k).unwrap();
            assert_eq!((l.block, l.offset), (2, (k as u32 - 65) * 1024), "key {k}");
        }
        for k in 0..65u64 {
            assert_eq!(kv.lookup(k).unwrap().block, 1, "updated key {k} stays in block 1");
        }
        assert!(!kv.is_free(0), "vacated, its records not written yet");
        // 61 more fill block 1 (128 records); the next writes it and takes pristine block 3.
        let out = apply_all(&mut kv, (1001..1062).map(ins));
        assert!(out.is_empty());
        let out = apply_all(&mut kv, [ins(2000)]);
        assert_eq!(out, vec![io(Op::Write, 131072, 128 * KIB)]);
        assert_eq!(kv.lookup(2000).unwrap().block, 3, "block 0 is not reused before its records are written");
        // Requests arrive every 100 us: request 30000 is the first at or after 3 s.
        let before = kv.counters().ops;
        let mut out = Vec::new();
        for k in before..30_000 {
            kv.apply(&KvOp::Read { key: k % 100 }, &mut out).unwrap();
        }
        // Meanwhile, at 1 s, the client's buffer (block 3, one record, nothing written from it)
        // had its partial flush.
        assert_eq!(out.iter().filter(|i| i.op == Op::Write).copied().collect::<Vec<_>>(), vec![io(Op::Write, 3 * 131072, 128 * KIB)]);
        assert!(!kv.is_free(0));
        let mut out = Vec::new();
        kv.apply(&KvOp::Read { key: 5000 }, &mut out).unwrap();
        let mut want = vec![io(Op::Write, 2 * 131072, 128 * KIB)];
        if trim {
            want.push(io(Op::Trim, 0, 128 * KIB));
        }
        assert_eq!(out, want, "the defrag buffer's partial flush at 3 s frees block 0");
        let mut times = Vec::new();
        kv.take_times(&mut times);
        assert_eq!(*times.last().unwrap(), 3_000_000_000);
        assert!(kv.is_free(0));
        assert_eq!(kv.defrag_block(), Some((2, 63 * 1024)), "the buffer stays current");
        let c = kv.counters();
        assert_eq!((c.blocks_defragged, c.defrag_records, c.defrag_write_bytes, c.defrag_read_bytes), (1, 63, 63 * 1024, 131072));
        assert_eq!((c.defrag_partial_flushes, c.defrag_blocks_written), (1, 0));
        assert_eq!(c.trim_bytes, if trim { 131072 } else { 0 });
        // Block 3 fills after 127 more records; the next block is block 0.
        apply_all(&mut kv, (3000..3128).map(ins));
        assert_eq!(kv.client_block().unwrap().0, 0, "the freed block is reused first");
        kv.check_invariants();
    }
}

/// Defrag takes one block per `defrag-sleep` (1 ms here, reads free). Blocks enter the queue
/// twice as fast (a block of 128 records drops below the mark at its 65th delete; 65 deletes
/// arrive in 0.5 ms at 130,000 requests/s), so after the deletes of 400 blocks the queue holds
/// what defrag could not reach: the count of steps is the hand count of 1 ms slots between the
/// first queueing and the last request.
#[test]
fn defrag_at_one_block_per_sleep_falls_behind_by_the_computed_amount() {
    let cfg = LsKvConfig {
        client_ops_per_sec: 130_000.0,
        defrag_sleep_us: 1000,
        defrag_read_latency_us: 0,
        defrag_read_bytes_per_sec: 1e30,
        device_bytes: 1024 * 131072,
        ..small_cfg(0, false)
    };
    let mut kv = LsKv::new(cfg).unwrap();
    let blocks = 400u64;
    let mut ops: Vec<KvOp> = (0..blocks * 128 + 1).map(ins).collect();
    for j in 0..blocks {
        ops.extend((j * 128..j * 128 + 65).map(|key| KvOp::Delete { key }));
    }
    apply_all(&mut kv, ops.iter().copied());
    // Request k arrives at k / 130000 s; block 0 is queued by request 128 * 400 + 1 + 64.
    let first = kv.request_time(blocks * 128 + 1 + 64);
    let last = kv.request_time(ops.len() as u64 - 1);
    let steps = (last - first) / 1_000_000 + 1;
    let c = kv.counters();
    assert_eq!(c.blocks_defragged, steps, "one block per ms from the first queueing to the last request");
    assert_eq!(kv.defrag_queue().len() as u64, blocks - steps);
    assert_eq!(c.defrag_busy_ns, steps * 1_000_000);
    assert!(steps > 190 && steps < 210, "{steps}: about half of 400 in 0.2 s");
    kv.check_invariants();
}

/// `flush-max-ms`: at 100 requests/s a 128 KiB block of 1 KiB records takes 1.28 s to fill; at
/// 1 s the current buffer (100 records, no full block written since the start) is written
/// whole in place, and again, full, when it fills.
#[test]
fn a_slow_buffer_is_flushed_partly_every_flush_max_ms() {
    let mut kv = LsKv::new(LsKvConfig { client_ops_per_sec: 100.0, ..small_cfg(0, false) }).unwrap();
    let mut out = Vec::new();
    for k in 0..129 {
        kv.apply(&ins(k), &mut out).unwrap();
    }
    let mut times = Vec::new();
    kv.take_times(&mut times);
    assert_eq!(out, vec![io(Op::Write, 0, 128 * KIB), io(Op::Write, 0, 128 * KIB)]);
    assert_eq!(times, vec![1_000_000_000, 1_280_000_000]);
    assert_eq!((kv.counters().client_partial_flushes, kv.counters().client_blocks_written), (1, 1));
    assert_eq!(kv.counters().device_write_bytes, 2 * 131072);
    // An update of a record in the buffer past the flushed part, at the same size, is written
    // in place: no space used, nothing dies.
    kv.apply(&upd(128), &mut out).unwrap();
    assert_eq!(kv.counters().writes_in_place, 1);
    assert_eq!(kv.lookup(128).unwrap().offset, 0);
    assert_eq!(kv.block_live_bytes(1), 1024);
    kv.check_invariants();
}

/// Stop-writes: evaluated every 10 s; at 1,000 requests/s the 8,960 inserts that make live
/// data 70% of the 100 blocks are in by 8.96 s, the next 1,040 (to 10 s) are accepted too, and
/// from the evaluation at 10 s (used 78% >= 70) every write is refused, reads still served.
#[test]
fn stop_writes_engages_at_the_thresholds() {
    let cfg = LsKvConfig { client_ops_per_sec: 1000.0, device_bytes: 100 * 131072, ..small_cfg(0, false) };
    let mut kv = LsKv::new(cfg).unwrap();
    apply_all(&mut kv, (0..10_960).map(ins));
    let c = kv.counters();
    assert_eq!((c.writes, c.refused_stop_writes, c.refused_no_block), (10_000, 960, 0));
    assert!(kv.stopped());
    assert_eq!((c.stop_writes_evaluations, c.stop_writes_checks), (1, 1));
    assert_eq!(kv.live_records(), 10_000);
    // Deleting brings it under both marks again at the next evaluation (20 s).
    apply_all(&mut kv, (0..5000).map(|key| KvOp::Delete { key }));
    apply_all(&mut kv, (20_000..24_100).map(ins));
    let c = kv.counters();
    assert!(!kv.stopped());
    assert_eq!(c.refused_stop_writes, 960 + 4040, "refused until 20 s, accepted after");
    // Off (both 0): never stops.
    let mut kv = LsKv::new(LsKvConfig { stop_writes_avail_pct: 0, stop_writes_used_pct: 0, client_ops_per_sec: 1000.0, device_bytes: 100 * 131072, ..small_cfg(0, false) }).unwrap();
    apply_all(&mut kv, (0..10_960).map(ins));
    assert!(!kv.stopped());
    assert_eq!(kv.counters().refused_stop_writes, 0);
}

/// The defrag reserve: a client buffer may not take one of the last 8 free blocks. With 100
/// blocks and nothing freed, the client takes 92 (free > 8 before each) and then every write
/// is refused; nothing errs.
#[test]
fn the_defrag_reserve_refuses_client_writes() {
    let cfg = LsKvConfig { client_ops_per_sec: 1e6, device_bytes: 100 * 131072, stop_writes_avail_pct: 0, stop_writes_used_pct: 0, ..small_cfg(0, false) };
    let mut kv = LsKv::new(cfg).unwrap();
    apply_all(&mut kv, (0..13_000).map(ins));
    let c = kv.counters();
    assert_eq!(c.writes, 92 * 128);
    assert_eq!(c.refused_no_block, 13_000 - 92 * 128);
    assert_eq!(kv.free_blocks(), 8);
    assert!(!kv.is_stuck(), "no evaluation yet (13 ms of 10 s)");
    kv.check_invariants();
}

/// `max-write-cache`: one 128 KiB record per block at 1,000 requests/s, the drive taking a block
/// in 4 ms, at most 2 blocks queued. Block k is written when request k + 1 arrives (its record no
/// longer fits). Requests at 1, 2 and 3 ms queue blocks ending at 5, 9 and 13 ms; at 4 ms three
/// wait, so the write is refused (`AS_ERR_DEVICE_OVERLOAD`). From then on a write is accepted
/// exactly when a block has just been written, at 5, 9, 13, ... ms: the client's pace becomes
/// the drive's. Over requests 0..=100 ms: 4 + 24 accepted, 73 refused.
#[test]
fn max_write_cache_refuses_writes_while_the_drive_is_behind() {
    let cfg = LsKvConfig {
        client_ops_per_sec: 1000.0,
        device_write_bytes_per_sec: 131072.0 / 0.004,
        max_write_cache_bytes: 2 * 131072,
        ..small_cfg(0, false)
    };
    let mut kv = LsKv::new(cfg).unwrap();
    let out = apply_all(&mut kv, (0..=100).map(|key| KvOp::Insert { key, bytes: 128 * KIB }));
    let c = kv.counters();
    assert_eq!(c.writes, 28);
    assert_eq!(c.refused_overload, 73);
    assert_eq!(c.refused_writes(), 73);
    assert_eq!(c.write_queue_peak, 3);
    assert_eq!(c.client_blocks_written, 27);
    assert_eq!(out.iter().filter(|io| io.op == Op::Write).count(), 27);
    // Accepted requests: 0..=3, then 5, 9, ..., 97.
    let mut accepted: Vec<u64> = (0..=100).filter(|&k| kv.lookup(k).is_some()).collect();
    let want: Vec<u64> = (0..=3).chain((5..=100).step_by(4)).collect();
    accepted.sort();
    assert_eq!(accepted, want);
    kv.check_invariants();
    // Without a drive pace nothing queues and nothing is refused.
    let mut free = LsKv::new(LsKvConfig { client_ops_per_sec: 1000.0, max_write_cache_bytes: 2 * 131072, ..small_cfg(0, false) }).unwrap();
    apply_all(&mut free, (0..=100).map(|key| KvOp::Insert { key: key % 50, bytes: 128 * KIB }));
    assert_eq!((free.counters().refused_overload, free.counters().write_queue_peak), (0, 0));
}

/// Defrag waits while more than `max-write-cache` + 128 blocks wait for the drive. 300 blocks of
/// 128 1 KiB records are written at a pace the drive keeps up with (a block per 1.28 ms, the drive
/// takes one per ms; at most 1 block cached); 64 records of each are deleted (none crosses the
/// low-water mark), then one more of each, 10 us apart: each block crosses and instant defrag moves
/// its 63 records, writing a defrag block about every second step, far faster than the drive
/// drains. Defrag stops once 129 blocks wait (the queue never passes 130: a step writes at most
/// one block), waits in whole 1 ms polls, and has caught up 200 ms later.
#[test]
fn defrag_waits_for_the_write_queue() {
    let cfg = LsKvConfig {
        client_ops_per_sec: 100_000.0,
        device_bytes: 400 * 131072,
        device_write_bytes_per_sec: 131072.0 / 0.001,
        max_write_cache_bytes: 131072,
        stop_writes_avail_pct: 0,
        stop_writes_used_pct: 0,
        flush_max_ms: 0,
        defrag_flush_ms: 0,
        ..small_cfg(0, false)
    };
    let mut kv = LsKv::new(cfg).unwrap();
    let blocks = 300u64;
    let mut ops: Vec<KvOp> = (0..blocks * 128 + 1).map(ins).collect();
    for j in 0..blocks {
        ops.extend((j * 128..j * 128 + 64).map(|key| KvOp::Delete { key }));
    }
    apply_all(&mut kv, ops);
    let c = kv.counters().clone();
    assert_eq!((c.refused_overload, c.blocks_defragged, c.defrag_stall_ns), (0, 0, 0));
    apply_all(&mut kv, (0..blocks).map(|j| KvOp::Delete { key: j * 128 + 64 }));
    let c = kv.counters().clone();
    assert!(c.defrag_stall_ns > 0 && c.defrag_stall_ns % 1_000_000 == 0, "{}", c.defrag_stall_ns);
    assert_eq!(c.write_queue_peak, 130, "the queue stops growing one block past the limit");
    assert!(kv.defrag_queue_len() > 0, "defrag is behind when the deletes end");
    let mut out = Vec::new();
    kv.advance_to(kv.now_ns() + 200_000_000, &mut out).unwrap();
    assert_eq!(kv.defrag_queue_len(), 0);
    assert_eq!(kv.counters().blocks_defragged, blocks);
    kv.check_invariants();
    // The same without a drive pace: defrag keeps up and never waits.
    let mut free = LsKv::new(LsKvConfig { device_write_bytes_per_sec: 0.0, ..kv.config().clone() }).unwrap();
    let mut ops: Vec<KvOp> = (0..blocks * 128 + 1).map(ins).collect();
    ops.extend((0..blocks).flat_map(|j| j * 128..j * 128 + 65).map(|key| KvOp::Delete { key }));
    apply_all(&mut free, ops);
    assert_eq!(free.counters().defrag_stall_ns, 0);
    assert!(free.defrag_queue_len() <= 1, "only the block the last delete queued waits");
}

/// A store refusing every write with nothing to free space (no deletes, defrag idle) is stuck
/// after two evaluations in a row find it so. At 1,000 requests/s the client fills its 92 blocks
/// by 11.8 s; the evaluations at 20 s (writes accepted since 10 s) and 30 s (none) do not make
/// it stuck, the one at 40 s does.
#[test]
fn a_store_that_can_never_write_again_is_stuck() {
    let cfg = LsKvConfig { client_ops_per_sec: 1000.0, device_bytes: 100 * 131072, stop_writes_avail_pct: 0, stop_writes_used_pct: 0, ..small_cfg(0, false) };
    let mut kv = LsKv::new(cfg).unwrap();
    apply_all(&mut kv, (0..40_000).map(ins));
    assert!(!kv.is_stuck(), "the 40 s evaluation comes with request 40,000");
    apply_all(&mut kv, [ins(40_000)]);
    assert!(kv.is_stuck());
    // A delete could free space: it is not stuck while deletes come.
    let mut kv = LsKv::new(LsKvConfig { client_ops_per_sec: 1000.0, device_bytes: 100 * 131072, stop_writes_avail_pct: 0, stop_writes_used_pct: 0, ..small_cfg(0, false) }).unwrap();
    apply_all(&mut kv, (0..50_000u64).map(|k| if k % 5000 == 4999 { KvOp::Delete { key: k % 11_000 } } else { ins(k) }));
    assert!(!kv.is_stuck());
}

/// Aerospike's 8 MiB header: with 1 MiB blocks the first data block is block 8.
#[test]
fn data_starts_after_the_header() {
    let mut kv = LsKv::new(LsKvConfig { post_write_queue_blocks: 0, ..LsKvConfig::default() }).unwrap();
    assert_eq!((kv.first_block(), kv.data_blocks()), (8, 1016));
    let per = kv.records_per_block(1000) as u64;
    let out = apply_all(&mut kv, (0..=per).map(|key| KvOp::Insert { key, bytes: 1000 }));
    assert_eq!(out, vec![Io { op: Op::Write, ns: 0, offset: 8 << 20, len: 1 << 20, pid: Pid::NONE }]);
}

#[test]
fn deletes_queue_skip_and_direct_free() {
    // A queued block that empties while defrag is busy elsewhere is skipped: no read. Blocks 0
    // and 1 full (keys 0..256), key 256 opens block 2; defrag sleeps 1 s after each block.
    let mut kv = LsKv::new(LsKvConfig { defrag_sleep_us: 1_000_000, ..small_cfg(0, false) }).unwrap();
    let out = apply_all(&mut kv, (0..257).map(ins));
    assert_eq!(out, vec![io(Op::Write, 0, 128 * KIB), io(Op::Write, 131072, 128 * KIB)]);
    // 65 deletes queue block 0; the next request finds defrag idle: block 0 is read and moved.
    apply_all(&mut kv, (0..65).map(|key| KvOp::Delete { key }));
    let out = apply_all(&mut kv, (128..256).map(|key| KvOp::Delete { key }));
    assert_eq!(out, vec![io(Op::Read, 0, 128 * KIB)]);
    assert_eq!(kv.defrag_queue(), vec![1], "block 1 waits, emptying, while defrag sleeps");
    assert_eq!(kv.block_live_bytes(1), 0);
    let out = apply_all(&mut kv, [KvOp::Read { key: 130 }, KvOp::Delete { key: 130 }]);
    assert!(out.is_empty());
    assert_eq!(kv.counters().missing_reads, 1);
    assert_eq!(kv.counters().deletes, 65 + 128);
    // Block 0 was queued by request 321 (32.1 ms), when the idle defrag thread took it; 1 s
    // later (request 10,321) defrag pops block 1: empty, so no read, and it is free at once.
    let n = kv.counters().ops;
    let out = apply_all(&mut kv, (n..10_321).map(|k| KvOp::Read { key: 100_000 + k }));
    assert_eq!(kv.counters().blocks_defragged, 1);
    let out2 = apply_all(&mut kv, [KvOp::Read { key: 7 }]);
    assert!(out2.is_empty());
    assert!(out.iter().all(|i| i.op == Op::Write), "{out:?}");
    let c = kv.counters();
    assert_eq!((c.blocks_defragged, c.defrag_skips, c.defrag_read_bytes), (2, 1, 131072));
    assert!(kv.is_free(1));
    kv.check_invariants();

    // With a post-write queue of 1 block, block 0 is held after its write; its records all
    // die meanwhile; when block 1's write pushes it out it is freed directly.
    let mut kv = small(1, false);
    block0_written(&mut kv);
    apply_all(&mut kv, (0..128).map(|key| KvOp::Delete { key }));
    assert!(kv.defrag_queue().is_empty(), "a block in the post-write queue is not eligible");
    assert!(!kv.is_free(0));
    let out = apply_all(&mut kv, (3000..3128).map(ins));
    assert_eq!(out, vec![io(Op::Write, 131072, 128 * KIB)]);
    assert_eq!(kv.counters().direct_frees, 1);
    assert_eq!(kv.counters().blocks_defragged, 0);
    assert_eq!(kv.client_block().unwrap().0, 0, "block 0 freed and reused");
    kv.check_invariants();
}

#[test]
fn reads_are_aligned_and_served_from_buffers() {
    let mut kv = LsKv::new(LsKvConfig { write_block_bytes: 128 * KIB, device_bytes: 64 << 17, header_bytes: 0, post_write_queue_blocks: 1, ..LsKvConfig::default() }).unwrap();
    apply_all(&mut kv, (0..250).map(ins)); // blocks 0, 1 written (122 each), block 2 open
    // Key 5 is in block 0, pushed out of the post-write queue by block 1: read from device.
    // Record at 5 * 1072 = 5360 .. 6432: 4 KiB pages 4096..8192.
    let out = apply_all(&mut kv, [KvOp::Read { key: 5 }]);
    assert_eq!(out, vec![io(Op::Read, 4096, 4096)]);
    // Key 127 (block 1, offset 5 * 1072) is in the post-write queue; key 245 in the open block.
    let out = apply_all(&mut kv, [KvOp::Read { key: 127 }, KvOp::Read { key: 245 }]);
    assert!(out.is_empty());
    assert_eq!(kv.counters().cached_reads, 2);
    // A record crossing a page: key 3 at 3216..4288 -> 0..8192.
    let out = apply_all(&mut kv, [KvOp::Read { key: 3 }]);
    assert_eq!(out, vec![io(Op::Read, 0, 8192)]);
    // A scan reads each existing key; a read-modify-write reads then rewrites.
    let out = apply_all(&mut kv, [KvOp::Scan { key: 0, records: 2 }]);
    assert_eq!(out.len(), 2);
    let out = apply_all(&mut kv, [KvOp::ReadModifyWrite { key: 3, bytes: 100 }]);
    assert_eq!(out, vec![io(Op::Read, 0, 8192)]);
    assert_eq!(kv.lookup(3).unwrap().data, 1024, "a partial update rewrites the whole record");
    assert_eq!(kv.lookup(3).unwrap().block, 2);
    // Reads can be switched off.
    let mut kv2 = LsKv::new(LsKvConfig { read_ios: false, ..kv.config().clone() }).unwrap();
    apply_all(&mut kv2, (0..250).map(ins));
    assert!(apply_all(&mut kv2, [KvOp::Read { key: 5 }]).is_empty());
}

/// Uniform random updates over `n` records of 1 KiB stored each on `blocks` blocks of
/// 128 KiB; returns the application WAF over the second half of `rounds * n` updates.
/// `blocks` blocks of 128 KiB, records stored as exactly their data, no post-write queue.
fn store(blocks: u32) -> LsKv {
    LsKv::new(LsKvConfig { device_bytes: blocks as u64 * 131072, ..small_cfg(0, false) }).unwrap()
}

fn uniform_waf(blocks: u32, n: u64, rounds: u64, seed: u64) -> (f64, LsKv) {
    let mut kv = store(blocks);
    let mut out = Vec::new();
    for k in 0..n {
        kv.apply(&ins(k), &mut out).unwrap();
    }
    let mut rng = Rng::new(seed);
    let total = rounds * n;
    let mut mark = None;
    for i in 0..total {
        if i == total / 2 {
            mark = Some(kv.counters().clone());
        }
        out.clear();
        kv.apply(&upd(rng.below(n)), &mut out).unwrap();
    }
    let (a, b) = (mark.unwrap(), kv.counters().clone());
    let waf = (b.device_write_bytes - a.device_write_bytes) as f64 / (b.record_write_bytes - a.record_write_bytes) as f64;
    (waf, kv)
}

/// Theory. A block of B records is written full; under uniform random updates over N
/// records each of its records survives an update with probability 1 - 1/N, so after `a`
/// updates its live fraction is about e^(-a/N). It is defragged when its live bytes drop
/// below the mark: with B = 128 records of 1024 bytes and LWM 65536 bytes, at 63 live
/// records (64 is exactly 50%, not below), u* = 63/128. Each block then yields
/// B (1 - u*) records of new space for u* B copied ones, so WAF = 1 / (1 - u*) =
/// 128/65 = 1.969 (defrag copies plus the client's own writes, all whole blocks, no
/// padding here). This holds while the blocks in use fit: a block lives N ln(1/u*) updates
/// and blocks are written at WAF / B per update, so WAF N ln 2 / B <= blocks, i.e. fill
/// factor f = N / (blocks B) <= 1 / (2 ln 2) = 0.72. Corrections: a queued block keeps decaying until the next client block switch
/// (at most B updates later: about 63 B / N records) and records die while their block is
/// filled (about B / 2N of it): both below 0.1% at N = 131072. Tolerance: 1.5%.
#[test]
fn uniform_updates_match_the_low_water_mark_theory() {
    let blocks = 2048u32;
    let n = 131072u64; // f = 0.5
    let (waf, kv) = uniform_waf(blocks, n, 12, 7);
    let theory = 128.0 / 65.0;
    assert!((waf - theory).abs() / theory < 0.015, "WAF {waf:.4} vs theory {theory:.4}");
    assert_eq!(kv.counters().refused_writes(), 0, "f = 0.5 stays in the LWM regime");
    kv.check_invariants();
    eprintln!("uniform f=0.5: WAF {waf:.4}, theory {theory:.4}, counters {:?}", kv.counters());
}

#[test]
fn source_reports_and_matches_the_store() {
    let ops: Vec<KvOp> = (0..2000).map(ins).chain((0..4000).map(|i| upd(i % 700))).collect();
    let mut src = LsKvSource::new(KvScript::new(ops.clone()), small(0, true));
    let mut got = Vec::new();
    while src.fill(&mut got, 7).unwrap() > 0 {}
    let mut kv = small(0, true);
    let want = apply_all(&mut kv, ops);
    assert_eq!(got, want);
    let r = src.report();
    assert_eq!(r.counters, *kv.counters());
    assert_eq!(r.pending_write_bytes, 0);
    assert_eq!(r.live_records, 2000);
    let written: u64 = got.iter().filter(|i| i.op == Op::Write).map(|i| i.len as u64).sum();
    assert_eq!(written, r.counters.device_write_bytes);
    assert!((r.app_waf() - written as f64 / (6000.0 * 1024.0)).abs() < 1e-12);
    assert!(r.counters.blocks_defragged > 0);
}

fn op_strategy() -> impl Strategy<Value = KvOp> {
    let key = 0u64..40;
    let bytes = 0u32..700;
    prop_oneof![
        (key.clone(), bytes.clone()).prop_map(|(key, bytes)| KvOp::Insert { key, bytes }),
        (key.clone(), bytes.clone()).prop_map(|(key, bytes)| KvOp::Update { key, bytes }),
        (key.clone(), bytes).prop_map(|(key, bytes)| KvOp::ReadModifyWrite { key, bytes }),
        key.clone().prop_map(|key| KvOp::Delete { key }),
        key.prop_map(|key| KvOp::Read { key }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The index always points at the newest copy: its field bytes follow a HashMap
    /// reference, every record lies in a non-free block listed with its offset, and the
    /// per-block live bytes add up (check_invariants).
    #[test]
    fn index_points_at_the_newest_copy(ops in proptest::collection::vec(op_strategy(), 1..1500), pwq in 0u32..3, trim in any::<bool>()) {
        let mut kv = LsKv::new(LsKvConfig {
            write_block_bytes: 4 * KIB,
            device_bytes: 40 * 4096,
            header_bytes: 0,
            post_write_queue_blocks: pwq,
            trim_freed_blocks: trim,
            ..LsKvConfig::default()
        }).unwrap();
        let mut reference: HashMap<u64, u32> = HashMap::new();
        let mut out = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let refused = kv.counters().refused_writes();
            kv.apply(op, &mut out).unwrap();
            if kv.counters().refused_writes() > refused {
                // Refused (stop-writes or the reserve): the record stays as it was.
                continue;
            }
            match *op {
                KvOp::Insert { key, bytes } => { reference.insert(key, bytes); }
                KvOp::Update { key, bytes } | KvOp::ReadModifyWrite { key, bytes } => {
                    let e = reference.entry(key).or_insert(bytes);
                    *e = (*e).max(bytes);
                }
                KvOp::Delete { key } => { reference.remove(&key); }
                _ => {}
            }
            let key = match *op { KvOp::Insert { key, .. } | KvOp::Update { key, .. } | KvOp::ReadModifyWrite { key, .. } | KvOp::Delete { key } | KvOp::Read { key } | KvOp::Get { key, .. } | KvOp::Scan { key, .. } => key };
            prop_assert_eq!(kv.lookup(key).map(|l| l.data), reference.get(&key).copied());
            if i % 50 == 0 { kv.check_invariants(); }
        }
        kv.check_invariants();
        for k in 0..40u64 {
            prop_assert_eq!(kv.lookup(k).map(|l| l.data), reference.get(&k).copied());
        }
        prop_assert_eq!(kv.live_records(), reference.len() as u64);
        // Every write is a whole block at a block boundary; defrag reads too.
        for io in &out {
            if io.op != Op::Read || io.len == 4096 {
                prop_assert_eq!(io.offset % 4096, 0);
            }
        }
    }
}

/// Speed (release, ignored by default): YCSB-A-like, 1 M records of 1000 bytes (10 fields
/// of 100), then 10 M requests, 50% reads and 50% updates of one field (the store rewrites
/// the whole record), keys uniform. Default Aerospike settings (1 MiB blocks, post-write
/// queue 256), namespace at fill factor 0.5.
/// Run: cargo test --release -p wafsim-apps --test lskv -- --ignored --nocapture
#[test]
#[ignore]
fn speed_ycsb_a_like() {
    let n = 1_000_000u64;
    let stored = 1056u64; // 1000 + 47 -> 1056
    let device_bytes = (n * stored * 2).next_multiple_of(1 << 20);
    let cfg = LsKvConfig { device_bytes, ..LsKvConfig::default() };
    let mut kv = LsKv::new(cfg.clone()).unwrap();
    assert_eq!(kv.stored_size(1000), 1056);
    let mut out = Vec::with_capacity(1024);
    let t = Instant::now();
    for k in 0..n {
        kv.apply(&KvOp::Insert { key: k, bytes: 1000 }, &mut out).unwrap();
        if out.len() > 512 {
            out.clear();
        }
    }
    let load = t.elapsed().as_secs_f64();
    let mut rng = Rng::new(11);
    let m = 10_000_000u64;
    let ops: Vec<KvOp> = (0..m)
        .map(|_| {
            let key = rng.below(n);
            if rng.below(2) == 0 { KvOp::Read { key } } else { KvOp::Update { key, bytes: 100 } }
        })
        .collect();
    let t = Instant::now();
    for op in &ops {
        kv.apply(op, &mut out).unwrap();
        if out.len() > 512 {
            out.clear();
        }
    }
    let run = t.elapsed().as_secs_f64();
    let c = kv.counters().clone();
    eprintln!(
        "lskv speed: load {:.2} M inserts/s; run {:.2} M ops/s (50/50 read/update), app WAF {:.3} over the run and load, {} blocks defragged",
        n as f64 / load / 1e6,
        m as f64 / run / 1e6,
        c.app_waf(),
        c.blocks_defragged
    );
    // Through the IoSource adapter (KvScript of the same requests).
    let mut src = LsKvSource::new(KvScript::new(ops), kv);
    let t = Instant::now();
    let mut buf = Vec::with_capacity(4096);
    while {
        buf.clear();
        src.fill(&mut buf, 4096).unwrap() > 0
    } {}
    let run2 = t.elapsed().as_secs_f64();
    eprintln!("lskv speed through LsKvSource: {:.2} M ops/s, app WAF {:.3}", m as f64 / run2 / 1e6, src.report().app_waf());
    assert!(m as f64 / run > 1e6, "below 1 M ops/s");
}

/// Live data that keep growing (every fourth request a new record): the store refuses writes
/// once stop-writes finds live data at 70% of the device, instead of moving the same records
/// again and again; it goes on answering reads, and never errs.
#[test]
fn growing_live_data_end_in_stop_writes() {
    let blocks = 512u32;
    let mut kv = store(blocks);
    let mut out = Vec::new();
    let mut rng = Rng::new(5);
    let mut n = 1u64;
    for i in 0..blocks as u64 * 128 * 4 {
        out.clear();
        let op = if i % 4 == 0 {
            n += 1;
            ins(n - 1)
        } else {
            upd(rng.below(n))
        };
        kv.apply(&op, &mut out).unwrap();
    }
    kv.check_invariants();
    let c = kv.counters();
    assert!(c.refused_stop_writes > 0 && kv.stopped());
    // Live bytes stop growing once refused: at most 70% plus one 10 s period of inserts (at
    // 10,000 requests/s a quarter are inserts of 1 KiB: 25,000 KiB).
    let cap = blocks as u64 * 131072;
    assert!(kv.live_bytes() * 100 >= cap * 70 && kv.live_bytes() <= cap * 70 / 100 + 25_000 * 1024, "{} of {cap}", kv.live_bytes());
    eprintln!("stop-writes after {} writes; refused {}", c.writes, c.refused_stop_writes);
}
