//! The store on a drive: what the drive sees from Aerospike-like stores, against an independent
//! expectation. With uniform keys, a small fill and defrag that keeps up, blocks cross the
//! low-water mark in about the order they were written, so the free queue hands them out again in
//! about that order: the store rewrites its blocks nearly as a circular log, which costs a drive
//! what a sequential writer cycling over the same span costs (nearly nothing). "Nearly": a block's
//! live count is binomial, so blocks cross the mark with a spread of about a tenth of a cycle
//! (124 records of 1056 B per 128 KiB block), and blocks written together are reused apart.
//! Four stores at request rates 1:2:4:8 on one drive show it: the mix costs the drive more than
//! four sequential writers at the same byte rates over the same spans.

use wafsim_apps::{LsKv, LsKvConfig, LsKvSource};
use wafsim_core::pipeline::IoSource;
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid};
use wafsim_workload::synthetic::{Pattern, Synthetic, SyntheticSpec};
use wafsim_workload::{Interleave, InterleaveMode, RateClock, Ycsb, YcsbConfig, YcsbPhases};

const MU: u64 = 4096;
const WBS: u32 = 128 << 10;

/// 512 erase units of 4 MiB, OP 7%, greedy GC; four equal namespaces of whole write blocks, every
/// LBA written once in order (a sequentially filled drive).
fn drive() -> Device {
    let mut cfg = DeviceConfig::single_namespace(512, 1024, MU as u32, 0.07, GcPolicy::Greedy, 1);
    let each = cfg.logical_bytes / 4 / WBS as u64 * WBS as u64;
    cfg.namespaces = (0..4).map(|i| NamespaceConfig { name: format!("ns{i}"), size_bytes: each, placement_handles: vec![0] }).collect();
    let mut dev = Device::new(cfg).unwrap();
    for ns in 0..4 {
        for u in 0..dev.namespace_bytes(ns) / WBS as u64 {
            dev.submit(&Io { op: Op::Write, ns, offset: u * WBS as u64, len: WBS, pid: Pid::NONE }).unwrap();
        }
    }
    dev
}

/// Media units written per host unit between two counter snapshots.
fn window_waf(a: &wafsim_core::Counters, b: &wafsim_core::Counters) -> f64 {
    let host = b.host_units - a.host_units;
    let media = (b.host_units + b.gc_units + b.pad_units) - (a.host_units + a.gc_units + a.pad_units);
    media as f64 / host as f64
}

/// What a run of `src` into `dev` showed: the drive's counters when `mark` host bytes were in
/// and at the end, per namespace the bytes written after the mark and one past the highest byte
/// written.
struct Run {
    at_mark: wafsim_core::Counters,
    end: wafsim_core::Counters,
    window_bytes: Vec<u64>,
    span: Vec<u64>,
}

fn pump(src: &mut dyn IoSource, dev: &mut Device, mark: u64) -> Run {
    let mut buf = Vec::with_capacity(256);
    let mut at_mark = None;
    let mut window_bytes = vec![0; 4];
    let mut span = vec![0; 4];
    loop {
        buf.clear();
        if src.fill(&mut buf, 256).unwrap() == 0 {
            break;
        }
        dev.submit_batch(&buf).unwrap();
        for io in buf.iter().filter(|io| io.op == Op::Write) {
            span[io.ns as usize] = span[io.ns as usize].max(io.offset + io.len as u64);
            if at_mark.is_some() {
                window_bytes[io.ns as usize] += io.len as u64;
            }
        }
        if at_mark.is_none() && dev.counters().host_write_bytes >= mark {
            at_mark = Some(dev.counters().clone());
        }
    }
    Run { at_mark: at_mark.expect("reached the mark"), end: dev.counters().clone(), window_bytes, span }
}

/// Store `i` on namespace `i` of `ns_bytes`: 128 KiB blocks, no header or post-write queue,
/// YCSB A with uniform keys at fill 0.1, `rate` requests/s for 400 s.
fn store(i: u32, ns_bytes: u64, rate: f64) -> Box<dyn IoSource> {
    let cfg = LsKvConfig { ns: i, write_block_bytes: WBS, device_bytes: ns_bytes, header_bytes: 0, post_write_queue_blocks: 0, client_ops_per_sec: rate, ..LsKvConfig::default() };
    let store = LsKv::new(cfg).unwrap();
    let mut y = YcsbConfig::try_workload('a').unwrap();
    y.set("requestdistribution", "uniform").unwrap();
    y.recordcount = (store.records_per_block(1000) as f64 * store.data_blocks() as f64 * 0.1) as u64;
    let ycsb = Ycsb::try_new(&y, YcsbPhases::LoadAndRun, 10 + i as u64).unwrap().with_byte_budget(u64::MAX);
    Box::new(LsKvSource::new(ycsb, store).until(400_000_000_000))
}

/// Sequential writers, writer i over `span[i]` of namespace i with `share[i]` of `total` bytes,
/// at rates in proportion to the shares.
fn writers(span: &[u64], share: &[f64], total: u64) -> Interleave {
    let ws: Vec<Box<dyn IoSource>> = (0..span.len())
        .map(|i| {
            let s = Synthetic::new(SyntheticSpec {
                ns: i as u32,
                ns_bytes: span[i],
                pattern: Pattern::Sequential,
                block_size: WBS,
                amount: (total as f64 * share[i]) as u64 / WBS as u64 * WBS as u64,
                trim_fraction: 0.0,
                pid: Pid::NONE,
                seed: 1,
            })
            .unwrap();
            Box::new(RateClock::new(Box::new(s), share[i] * 1e6)) as Box<dyn IoSource>
        })
        .collect();
    let n = ws.len();
    Interleave::staged(ws, vec![1; n], (0..n as u32).map(|i| (i, 0)).collect(), InterleaveMode::Clock)
}

/// One store alone on a filled drive with 7% spare: its ~15% of the LBAs are rewritten nearly as
/// a circular log, so the drive copies almost nothing, as for a sequential writer over the span.
#[test]
fn a_store_that_keeps_up_rewrites_its_blocks_nearly_as_a_circular_log() {
    let mut dev = drive();
    let ns_bytes = dev.namespace_bytes(0);
    let start = dev.counters().host_write_bytes;
    let mut src = store(0, ns_bytes, 16_000.0);
    let run = pump(&mut *src, &mut dev, start + 4 * ns_bytes);
    let waf = window_waf(&run.at_mark, &run.end);
    let mut w = writers(&run.span[..1], &[1.0], run.end.host_write_bytes - start);
    let mut dev2 = drive();
    let seq = pump(&mut w, &mut dev2, start + 4 * ns_bytes);
    let seq_waf = window_waf(&seq.at_mark, &seq.end);
    eprintln!("one store: window WAF {waf:.4}, sequential writer {seq_waf:.4}, span {} of {ns_bytes}", run.span[0]);
    assert!(run.span[0] < ns_bytes / 4);
    assert!(waf < 1.02 && (waf - seq_waf).abs() < 0.02, "store {waf:.4} vs sequential {seq_waf:.4}");
}

#[test]
fn four_stores_at_rates_interleave_by_time_and_mix_blocks_of_different_ages() {
    let mut dev = drive();
    let ns_bytes = dev.namespace_bytes(0);
    let start = dev.counters().host_write_bytes;
    let stores: Vec<Box<dyn IoSource>> = (0..4u32).map(|i| store(i, ns_bytes, 2000.0 * (1u32 << i) as f64)).collect();
    let mut il = Interleave::staged(stores, vec![1; 4], (0..4).map(|i| (i, 0)).collect(), InterleaveMode::Clock);
    // The window starts well past every store's load (the slowest loads in about 25 s of 400).
    let stores_run = pump(&mut il, &mut dev, start + 2 * 4 * ns_bytes);
    let total = stores_run.end.host_write_bytes - start;
    let store_waf = window_waf(&stores_run.at_mark, &stores_run.end);
    let share: Vec<f64> = stores_run.window_bytes.iter().map(|&b| b as f64 / stores_run.window_bytes.iter().sum::<u64>() as f64).collect();
    for i in 1..4 {
        let ratio = share[i] / share[i - 1];
        assert!((ratio - 2.0).abs() < 0.1, "store byte rates follow the request rates 1:2:4:8: {share:?}");
    }
    for i in 0..4 {
        assert!(stores_run.span[i] < ns_bytes / 2, "a store at fill 0.1 cycles over part of its namespace: {:?}", stores_run.span);
    }

    // Four sequential writers, each cycling over its store's span, at the stores' byte rates.
    let mut dev2 = drive();
    let mut il2 = writers(&stores_run.span, &share, total);
    let writers_run = pump(&mut il2, &mut dev2, start + 2 * 4 * ns_bytes);
    let seq_waf = window_waf(&writers_run.at_mark, &writers_run.end);
    eprintln!("stores: window WAF {store_waf:.4}; sequential writers: {seq_waf:.4}; spans {:?} of {ns_bytes}; shares {share:?}", stores_run.span);
    // Writers at different speeds mix data of different ages in the drive's erase units (section
    // 3's mechanism): the sequential writers cost the drive something; the stores' reuse order,
    // only nearly circular, costs it more.
    assert!(seq_waf > 1.05, "the mix costs the drive something ({seq_waf:.4})");
    assert!(store_waf > seq_waf + 0.1, "stores {store_waf:.4} vs sequential writers {seq_waf:.4}");
}
