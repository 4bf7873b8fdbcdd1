//! fio job -> I/O stream semantics.

use std::collections::HashMap;
use std::path::Path;

use wafsim_core::{Io, Op, Pid};
use wafsim_workload::fio::{parse_job_str, FioJob, SourceParams};

fn job(text: &str) -> FioJob {
    let jf = parse_job_str(text, "g.fio", Path::new("."), &|_| None).unwrap();
    jf.phases[0][0].clone()
}

fn collect(j: &FioJob, ns_bytes: u64, seed: u64) -> Vec<Io> {
    let mut src = j.source(3, ns_bytes, seed).unwrap();
    let mut v = Vec::new();
    while src.fill(&mut v, 4096).unwrap() > 0 {
        assert!(v.len() < 10_000_000, "runaway source");
    }
    v
}

const MIB: u64 = 1 << 20;

#[test]
fn sequential_write_exact_offsets_and_loops() {
    let j = job("[w]\nrw=write\nbs=64k\noffset=1m\nsize=256k\nloops=2\n");
    let v = collect(&j, 4 * MIB, 1);
    let offs: Vec<u64> = v.iter().map(|io| io.offset).collect();
    let one_pass: Vec<u64> = (0..4).map(|i| MIB + i * 65536).collect();
    assert_eq!(offs, [one_pass.clone(), one_pass].concat());
    assert!(v.iter().all(|io| io.op == Op::Write && io.len == 65536 && io.ns == 3 && io.pid == Pid::NONE));
}

#[test]
fn precondition_job_covers_98_percent_twice() {
    let j = job("[global]\nioengine=io_uring\ndirect=1\niodepth=256\n[precondition]\nrw=write\nbs=128k\nsize=98%\nloops=2\n");
    let ns = 64 * MIB;
    let v = collect(&j, ns, 1);
    let region = ns * 98 / 100 / (128 << 10) * (128 << 10);
    assert_eq!(v.len() as u64, 2 * region / (128 << 10));
    assert_eq!(v.iter().map(|io| io.len as u64).sum::<u64>(), 2 * region);
    assert_eq!(j.write_bytes_hint(ns), Some(2 * region));
    assert!(v.iter().all(|io| io.offset + io.len as u64 <= region));
}

#[test]
fn sequential_hole_modifier() {
    let j = job("[w]\nrw=write:4k\nbs=4k\nsize=32k\nio_size=16k\n");
    let offs: Vec<u64> = collect(&j, MIB, 1).iter().map(|io| io.offset).collect();
    assert_eq!(offs, [0, 8192, 16384, 24576]);
}

#[test]
fn randwrite_with_random_map_touches_every_block_once_per_pass() {
    let j = job("[r]\nrw=randwrite\nbs=4k\nsize=4m\nloops=3\n");
    let v = collect(&j, 8 * MIB, 11);
    let blocks = 1024;
    assert_eq!(v.len(), 3 * blocks);
    for pass in v.chunks(blocks) {
        let mut seen = vec![false; blocks];
        for io in pass {
            assert_eq!(io.offset % 4096, 0);
            let b = (io.offset / 4096) as usize;
            assert!(!seen[b], "block {b} twice in one pass");
            seen[b] = true;
        }
    }
    // not sequential, and each pass is a different order
    assert_ne!(v[0..blocks].iter().map(|i| i.offset).collect::<Vec<_>>(), (0..blocks as u64).map(|b| b * 4096).collect::<Vec<_>>());
    assert_ne!(v[..blocks].iter().map(|i| i.offset).collect::<Vec<_>>(), v[blocks..2 * blocks].iter().map(|i| i.offset).collect::<Vec<_>>());
}

#[test]
fn norandommap_repeats_blocks() {
    let j = job("[r]\nrw=randwrite\nbs=4k\nsize=4m\nnorandommap\n");
    let v = collect(&j, 8 * MIB, 11);
    let mut seen = std::collections::HashSet::new();
    let dups = v.iter().filter(|io| !seen.insert(io.offset)).count();
    // uniform draws: about n/e blocks are missed, so many repeats
    assert!(dups > 200, "{dups}");
}

#[test]
fn deterministic_per_seed_and_randseed_overrides() {
    let j = job("[r]\nrw=randrw\nbs=4k\nsize=1m\n");
    assert_eq!(collect(&j, 8 * MIB, 5), collect(&j, 8 * MIB, 5));
    assert_ne!(collect(&j, 8 * MIB, 5), collect(&j, 8 * MIB, 6));
    let j = job("[r]\nrw=randrw\nbs=4k\nsize=1m\nrandseed=99\n");
    assert_eq!(collect(&j, 8 * MIB, 5), collect(&j, 8 * MIB, 6));
}

#[test]
fn rwmixread_70() {
    let j = job("[m]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=64m\nio_size=80m\nnorandommap\n");
    let v = collect(&j, 64 * MIB, 3);
    let reads = v.iter().filter(|io| io.op == Op::Read).count() as f64;
    let frac = reads / v.len() as f64;
    assert!((frac - 0.70).abs() < 0.02, "{frac}");
    assert_eq!(v.len(), 20480);
    assert!(v.iter().filter(|io| io.op == Op::Read).all(|io| io.pid == Pid::NONE));
}

#[test]
fn zipf_is_skewed_and_spread() {
    let j = job("[z]\nrw=randwrite\nbs=4k\nsize=40m\nio_size=40m\nrandom_distribution=zipf:1.1\n");
    let v = collect(&j, 64 * MIB, 8);
    let mut hits: HashMap<u64, u32> = HashMap::new();
    for io in &v {
        *hits.entry(io.offset / 4096).or_default() += 1;
    }
    let blocks = 10240usize;
    let mut counts: Vec<u32> = (0..blocks as u64).map(|b| *hits.get(&b).unwrap_or(&0)).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u32 = counts[..blocks / 10].iter().sum();
    let share = top as f64 / v.len() as f64;
    assert!(share > 0.6, "top 10% of blocks get only {share}");
    // scrambled: the hottest block is not simply block 0
    let hottest = hits.iter().max_by_key(|e| (e.1, std::cmp::Reverse(*e.0))).unwrap().0;
    assert_ne!(*hottest, 0);
}

#[test]
fn pareto_and_zoned_shapes() {
    let j = job("[p]\nrw=randread\nbs=4k\nsize=40m\nrandom_distribution=pareto:0.9\n");
    let v = collect(&j, 64 * MIB, 8);
    let mut hits: HashMap<u64, u32> = HashMap::new();
    for io in &v {
        *hits.entry(io.offset).or_default() += 1;
    }
    let mut counts: Vec<u32> = hits.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u32 = counts.iter().take(1024).sum(); // 10% of 10240 blocks
    assert!((top as f64 / v.len() as f64) > 0.85);

    let j = job("[z]\nrw=randwrite\nbs=4k\nsize=10m\nrandom_distribution=zoned:60/10:40/90\n");
    let v = collect(&j, 64 * MIB, 8);
    let first = v.iter().filter(|io| io.offset < MIB).count() as f64 / v.len() as f64;
    assert!((first - 0.6).abs() < 0.03, "{first}");
}

#[test]
fn bssplit_proportions() {
    let j = job("[b]\nrw=randwrite\nbssplit=4k/50:64k/30:16k/20\nsize=64m\nio_size=300m\nnorandommap\n");
    let v = collect(&j, 64 * MIB, 2);
    let n = v.len() as f64;
    let frac = |len: u32| v.iter().filter(|io| io.len == len).count() as f64 / n;
    assert!((frac(4096) - 0.5).abs() < 0.02);
    assert!((frac(65536) - 0.3).abs() < 0.02);
    assert!((frac(16384) - 0.2).abs() < 0.02);
    assert!(v.iter().all(|io| io.offset % 4096 == 0 && io.offset + io.len as u64 <= 64 * MIB));
    let j = job("[b]\nrw=write\nbsrange=4k-16k\nsize=1m\n");
    let v = collect(&j, 64 * MIB, 2);
    assert!(v.iter().all(|io| [4096, 8192, 12288, 16384].contains(&io.len)));
    assert!(v.windows(2).all(|w| w[1].offset == w[0].offset + w[0].len as u64 || w[1].offset == 0));
}

#[test]
fn fdp_roundrobin_and_random_pids() {
    let j = job("[f]\nioengine=io_uring_cmd\nrw=write\nbs=4k\nsize=64k\nfdp=1\nfdp_pli=0,1,3\n");
    let pids: Vec<Pid> = collect(&j, MIB, 1).iter().map(|io| io.pid).collect();
    let expect: Vec<Pid> = [0u16, 1, 3].iter().cycle().take(16).map(|&h| Pid::new(0, h)).collect();
    assert_eq!(pids, expect);

    let j = job("[f]\nioengine=io_uring_cmd\nrw=write\nbs=4k\nsize=4m\ndataplacement=fdp\nplids=0-3\nplid_select=random\n");
    let v = collect(&j, 8 * MIB, 1);
    let mut c = [0u32; 4];
    for io in &v {
        assert_eq!(io.pid.rg(), 0);
        c[io.pid.handle() as usize] += 1;
    }
    assert!(c.iter().all(|&x| (200..312).contains(&x)), "{c:?}");

    // No list: all handles the namespace offers, in turn; ids out of range are rejected.
    let j = job("[f]\nioengine=io_uring_cmd\nrw=write\nbs=4k\nsize=16k\nfdp=1\n");
    let p = SourceParams { ns: 0, ns_bytes: MIB, seed: 1, available_plids: Some(2), ..SourceParams::default() };
    let mut src = j.source_with(p).unwrap();
    let mut v = Vec::new();
    src.fill(&mut v, 100).unwrap();
    assert_eq!(v.iter().map(|io| io.pid.handle()).collect::<Vec<_>>(), [0, 1, 0, 1]);
    let j = job("[f]\nioengine=io_uring_cmd\nrw=write\nfdp=1\nfdp_pli=5\n");
    assert!(j.source_with(p).is_err());

    // Without fdp: no directive; streams use the same ids.
    assert!(collect(&job("[f]\nrw=write\nsize=16k\nfdp_pli=1\n"), MIB, 1).iter().all(|io| io.pid == Pid::NONE));
    let v = collect(&job("[s]\nioengine=io_uring_cmd\nrw=write\nsize=8k\ndataplacement=streams\nplids=7\n"), MIB, 1);
    assert!(v.iter().all(|io| io.pid == Pid::new(0, 7)));
}

#[test]
fn trimwrite_trims_then_writes_same_block() {
    let j = job("[t]\nrw=trimwrite\nbs=8k\nsize=32k\n");
    let v = collect(&j, MIB, 1);
    assert_eq!(v.len(), 8);
    for (i, pair) in v.chunks(2).enumerate() {
        assert_eq!((pair[0].op, pair[1].op), (Op::Trim, Op::Write));
        assert_eq!(pair[0].offset, i as u64 * 8192);
        assert_eq!(pair[1].offset, pair[0].offset);
    }
}

#[test]
fn amount_limits() {
    let j = job("[n]\nrw=randread\nbs=4k\nnumber_ios=100\n");
    assert_eq!(collect(&j, 64 * MIB, 1).len(), 100);
    let j = job("[n]\nrw=read\nbs=4k\nsize=1m\nio_size=3m\n");
    let v = collect(&j, 64 * MIB, 1);
    assert_eq!(v.len(), 768);
    assert_eq!(v[256].offset, 0, "wraps after the region");
    // One random offset, then 3 sequential ones (fio falls back to a random offset when the
    // sequential one would pass the region end).
    let j = job("[p]\nrw=randwrite:4\nbs=4k\nsize=1m\n");
    let v = collect(&j, 64 * MIB, 1);
    assert!(v.chunks(4).all(|c| c.windows(2).all(|w| w[1].offset == w[0].offset + 4096 || w[0].offset + 4096 == MIB)));
    let j = job("[p]\nrw=randwrite\npercentage_random=0\nbs=4k\nsize=64k\n");
    let offs: Vec<u64> = collect(&j, 64 * MIB, 1).iter().map(|io| io.offset).collect();
    assert_eq!(offs, (0..16).map(|i| i * 4096).collect::<Vec<_>>());
}

/// fio on a block device: a sequential region past the end stops at the end; a random one
/// from 0 draws from the whole device (the random map ends the pass when it is full); a random
/// one that starts further in is refused (fio would stop it at a random point).
#[test]
fn region_past_the_end_is_capped_like_fio() {
    let j = job("[w]\nrw=write\noffset=1m\nsize=1m\n");
    let v = collect(&j, MIB + 4096, 1);
    assert_eq!(v.iter().map(|io| (io.offset, io.len)).collect::<Vec<_>>(), [(MIB, 4096)]);
    assert_eq!(j.write_bytes_hint(MIB + 4096), Some(4096));
    // sequential, 2 loops: each pass ends at the device end (fio 3.33 on a 16 MiB loop device
    // with size=32M loops=2: 512 writes of 64 KiB)
    let j = job("[w]\nrw=write\nbs=64k\nsize=32m\nloops=2\n");
    let v = collect(&j, 16 * MIB, 1);
    assert_eq!(v.len(), 512);
    assert!(v.iter().all(|io| io.offset + io.len as u64 <= 16 * MIB));
    // random from 0 with the random map: one pass over the device (fio: 256 writes)
    let v = collect(&job("[r]\nrw=randwrite\nbs=64k\nsize=32m\n"), 16 * MIB, 1);
    assert_eq!(v.len(), 256);
    // without the map, size bytes of I/O (fio: 512 writes)
    let v = collect(&job("[r]\nrw=randwrite\nbs=64k\nsize=32m\nnorandommap\n"), 16 * MIB, 1);
    assert_eq!(v.len(), 512);
    let v = collect(&job("[r]\nrw=randwrite\nbs=64k\nsize=32m\nrandom_distribution=zipf:1.2\n"), 16 * MIB, 1);
    assert_eq!(v.len(), 512);
    let e = job("[r]\nrw=randwrite\nbs=64k\noffset=12m\nsize=8m\n").source(0, 16 * MIB, 1).err().unwrap().to_string();
    assert!(e.starts_with("g.fio:1: job \"r\"") && e.contains("past the namespace end") && e.contains("random"), "{e}");
    assert!(job("[w]\nrw=write\noffset=2m\n").source(0, MIB, 1).is_err());
}

#[test]
fn runtime_only_jobs_need_io_size() {
    let text = "[global]\nioengine=io_uring\ndirect=1\niodepth=256\ntime_based\nruntime=21600\n[read]\nrw=randread\nbs=4k\n[write]\nrw=write\nbs=16k\n";
    let jf = parse_job_str(text, "steady.fio", Path::new("."), &|_| None).unwrap();
    for j in jf.jobs() {
        let e = j.source(0, 64 * MIB, 1).err().expect("runtime-only job must not generate").to_string();
        assert!(e.contains("runtime") && e.contains("io_size"), "{e}");
        assert_eq!(j.write_bytes_hint(64 * MIB), None);
    }
    let text = text.replace("runtime=21600\n", "runtime=21600\nio_size=8m\n");
    let jf = parse_job_str(&text, "steady.fio", Path::new("."), &|_| None).unwrap();
    let jobs: Vec<_> = jf.jobs().collect();
    let r = collect(jobs[0], 64 * MIB, 1);
    let w = collect(jobs[1], 64 * MIB, 1);
    assert_eq!(r.len(), 2048);
    assert!(r.iter().all(|io| io.op == Op::Read && io.len == 4096));
    assert_eq!(w.len(), 512);
    assert_eq!(jobs[1].write_bytes_hint(64 * MIB), Some(8 * MIB));
}

/// Under time_based, fio loops over the region until the runtime ends: size does not bound the
/// job, number_ios (or io_size, wafsim's stand-in for the runtime) does.
#[test]
fn time_based_loops_past_size_until_number_ios() {
    use wafsim_workload::fio::parse_job_str;
    let text = "[w]\nrw=write\nbs=64k\ntime_based\nruntime=60\nnumber_ios=100\n";
    let jf = parse_job_str(text, "t.fio", std::path::Path::new("."), &|_| None).unwrap();
    let job = &jf.phases[0][0];
    let mut src = job.source(0, 1 << 20, 1).unwrap(); // 16 blocks of 64 KiB
    let mut out = Vec::new();
    while src.fill(&mut out, 64).unwrap() > 0 {}
    assert_eq!(out.len(), 100);
    assert_eq!(out[16].offset, 0, "wraps to the start after 16 blocks");
    let text = "[w]\nrw=write\nbs=64k\ntime_based\nruntime=60\nio_size=3m\n";
    let jf = parse_job_str(text, "t.fio", std::path::Path::new("."), &|_| None).unwrap();
    let mut src = jf.phases[0][0].source(0, 1 << 20, 1).unwrap();
    let mut out = Vec::new();
    while src.fill(&mut out, 64).unwrap() > 0 {}
    assert_eq!(out.iter().map(|io| io.len as u64).sum::<u64>(), 3 << 20);
}

// ---- fio fidelity: the expected sequences come from fio 3.33's --write_iolog ----

const K: u64 = 1024;

fn offsets_k(j: &FioJob, ns_bytes: u64) -> Vec<u64> {
    collect(j, ns_bytes, 1).iter().map(|io| io.offset / K).collect()
}

/// Item 6: `rw=read:-8k` reads backwards (fio's backwards-read.fio, butterfly.fio). fio 3.33
/// on a 16 MiB file, bs=4k, size=64k.
#[test]
fn backward_sequential_matches_fio() {
    let ns = 16 * MIB;
    let j = job("[b]\nrw=read:-8k\nbs=4k\nsize=64k\n");
    assert_eq!(offsets_k(&j, ns), [0, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0]);
    // from an offset: fio first rewinds to `io_size` (its absolute/relative mix included)
    let j = job("[b]\nrw=read:-8k\nbs=4k\noffset=16k\nsize=64k\n");
    assert_eq!(offsets_k(&j, ns), [56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 72, 68, 64, 60, 56]);
    let j = job("[b]\nrw=read:-8k\nbs=4k\noffset=4m\nsize=64k\n");
    let mut expect: Vec<u64> = (0..15).map(|i| 4152 - 4 * i).collect();
    expect.push(4152);
    assert_eq!(offsets_k(&j, ns), expect);
    let j = job("[b]\nrw=read:-12k\nbs=4k\nsize=64k\n");
    assert_eq!(offsets_k(&j, ns), [0, 52, 44, 36, 28, 20, 12, 4, 52, 44, 36, 28, 20, 12, 4, 52]);
    // a skip of exactly the block size stays put, as in fio
    assert_eq!(offsets_k(&job("[b]\nrw=read:-4k\nbs=4k\nsize=16k\n"), ns), [0, 0, 0, 0]);
    // with a synchronous engine (psync, fio's default) the loops read on where the last one
    // ended (fio: 0 56 .. 4 0 56 .. 4 0 56); an engine that queues I/O starts each loop afresh
    let v = offsets_k(&job("[b]\nrw=read:-8k\nbs=4k\nsize=64k\nloops=2\n"), ns);
    assert_eq!(v.len(), 32);
    assert_eq!((v[15], v[16], v[30], v[31]), (0, 56, 0, 56));
    let v = offsets_k(&job("[b]\nioengine=libaio\nrw=read:-8k\nbs=4k\nsize=64k\nloops=2\n"), ns);
    assert_eq!(v.len(), 32);
    assert_eq!((v[15], v[16], v[17], v[31]), (0, 0, 56, 0));
}

/// Passes: holes end a pass early; io_size and loops as fio's do_io/keep_running count them.
#[test]
fn passes_and_amounts_match_fio() {
    let ns = 16 * MIB;
    let count = |text: &str| collect(&job(text), ns, 1).len();
    // forward holes: one pass is half the blocks; loops repeat it; io_size wraps
    assert_eq!(offsets_k(&job("[h]\nrw=read:8k\nbs=4k\nsize=64k\nloops=2\n"), ns), [0, 12, 24, 36, 48, 60, 0, 12, 24, 36, 48, 60]);
    assert_eq!(count("[h]\nrw=read:8k\nbs=4k\nsize=64k\nio_size=128k\n"), 32);
    assert_eq!(count("[h]\nrw=read:4k\nbs=4k\nsize=64k\nio_size=96k\n"), 24);
    assert_eq!(count("[h]\nrw=write:4k\nbs=4k\nsize=64k\nloops=3\n"), 24);
    assert_eq!(count("[h]\nrw=write:4k\nbs=4k\nsize=64k\nio_size=40k\nloops=3\n"), 24);
    assert_eq!(
        offsets_k(&job("[h]\nrw=read:8k\nbs=4k\noffset=64k\nsize=64k\nio_size=128k\n"), ns)[..8],
        [64, 76, 88, 100, 112, 124, 64, 76]
    );
    // io_size x loops, each pass at most size
    assert_eq!(count("[s]\nrw=write\nbs=4k\nsize=64k\nio_size=128k\nloops=2\n"), 32);
    assert_eq!(count("[s]\nrw=write\nbs=4k\nsize=64k\nio_size=32k\nloops=2\n"), 16);
    assert_eq!(count("[s]\nrw=write\nbs=4k\nsize=64k\nio_size=96k\nloops=3\n"), 48);
    assert_eq!(count("[s]\nrw=write\nbs=4k\nsize=64k\nio_size=40k\nloops=2\n"), 20);
    assert_eq!(count("[s]\nrw=write\nbs=4k\nsize=64k\nio_size=100k\nloops=2\n"), 32);
    assert_eq!(count("[s]\nrw=write\nbs=4k\nsize=64k\nnumber_ios=10\nloops=2\n"), 20);
    assert_eq!(count("[s]\nrw=randwrite\nbs=4k\nsize=64k\nio_size=100k\nloops=2\nnorandommap\n"), 50);
    assert_eq!(count("[s]\nrw=randwrite\nbs=4k\nsize=64k\nio_size=128k\nloops=2\n"), 32);
    // trimwrite: number_ios counts trims and writes
    assert_eq!(count("[t]\nrw=trimwrite\nbs=4k\nsize=64k\nnumber_ios=6\n"), 12);
    assert_eq!(count("[t]\nrw=trimwrite\nbs=4k\nsize=64k\nio_size=32k\n"), 16);
    assert_eq!(count("[t]\nrw=trimwrite\nbs=4k\nsize=64k\nloops=2\n"), 64);
    // a fixed block size is not fitted to the region: the last block crosses its end
    // (fio 3.33: size=671088 bs=32k writes 21 blocks, the last at 655360; 2 loops: 41)
    let v = offsets_k(&job("[s]\nrw=write\nbs=32k\nsize=671088\n"), ns);
    assert_eq!((v.len(), v[20]), (21, 640));
    assert_eq!(count("[s]\nrw=write\nbs=32k\nsize=671088\nloops=2\n"), 41);
    assert_eq!(offsets_k(&job("[s]\nrw=write:4k\nbs=4k\nsize=10000\n"), ns), [0, 8]);
    // randwrite:0 is never random in fio
    assert_eq!(offsets_k(&job("[r]\nrw=randwrite:0\nbs=4k\nsize=16k\n"), ns), [0, 4, 8, 12]);
    // hints agree with the generated amount
    for text in ["[h]\nrw=write:4k\nbs=4k\nsize=64k\nloops=3\n", "[s]\nrw=write\nbs=4k\nsize=64k\nio_size=40k\nloops=2\n", "[s]\nrw=write\nbs=64k\nsize=32m\n"] {
        let j = job(text);
        let bytes: u64 = collect(&j, ns, 1).iter().map(|io| io.len as u64).sum();
        assert_eq!(j.write_bytes_hint(ns), Some(bytes), "{text}");
    }
}

/// Item 6: zone counts become bytes with zonesize (fio 3.33, zonemode=strided zonesize=1m:
/// size=2z writes 2 MiB).
#[test]
fn zone_sizes_generate_like_bytes() {
    let j = job("[z]\nrw=write\nbs=64k\nzonemode=strided\nzonesize=1m\nsize=2z\noffset=1z\n");
    let v = collect(&j, 16 * MIB, 1);
    assert_eq!(v.len(), 32);
    assert_eq!((v[0].offset, v[31].offset + v[31].len as u64), (MIB, 3 * MIB));
}

/// Item 4: nrfiles lays files out back to back; file_service_type picks them (fio 3.33 in a
/// directory: size=48k nrfiles=3 gives three 16k files).
#[test]
fn nrfiles_follow_file_service_type() {
    let ns = 16 * MIB;
    let files = |text: &str| -> Vec<(u64, u64)> { offsets_k(&job(text), ns).iter().map(|o| (o / 16, o % 16)).collect() };
    // round robin, one I/O per file: f0:0 f1:0 f2:0 f0:4 ...
    let rr = files("[f]\nrw=write\nbs=4k\nsize=48k\nnrfiles=3\n");
    let expect: Vec<(u64, u64)> = (0..4).flat_map(|b| (0..3).map(move |f| (f, 4 * b))).collect();
    assert_eq!(rr, expect);
    // roundrobin:2: 0:0 0:4 1:0 1:4 2:0 2:4 0:8 0:12 ...
    let rr2 = files("[f]\nrw=write\nbs=4k\nsize=48k\nnrfiles=3\nfile_service_type=roundrobin:2\n");
    assert_eq!(&rr2[..8], &[(0, 0), (0, 4), (1, 0), (1, 4), (2, 0), (2, 4), (0, 8), (0, 12)]);
    // sequential: one file after the other
    let seq = files("[f]\nrw=write\nbs=4k\nsize=48k\nnrfiles=3\nfile_service_type=sequential\n");
    let expect: Vec<(u64, u64)> = (0..3).flat_map(|f| (0..4).map(move |b| (f, 4 * b))).collect();
    assert_eq!(seq, expect);
    // random files, random map per file: every block of every file once
    let v = collect(&job("[f]\nrw=randwrite\nbs=4k\nsize=48k\nnrfiles=3\nfile_service_type=random\n"), ns, 3);
    let mut offs: Vec<u64> = v.iter().map(|io| io.offset).collect();
    offs.sort_unstable();
    assert_eq!(offs, (0..12).map(|i| i * 4 * K).collect::<Vec<_>>());
    // 100k over 3 files: 34133-byte files hold 8 blocks each (fio: 24 writes, 96k)
    assert_eq!(collect(&job("[f]\nrw=write\nbs=4k\nsize=100k\nnrfiles=3\n"), ns, 1).len(), 24);
    assert_eq!(collect(&job("[f]\nrw=write\nbs=4k\nsize=40k\nnrfiles=3\n"), ns, 1).len(), 9);
    // filesize: fixed per file; size caps the I/O, not the files; io_size wraps
    assert_eq!(collect(&job("[f]\nrw=write\nbs=4k\nnrfiles=3\nfilesize=8k\n"), ns, 1).len(), 6);
    assert_eq!(collect(&job("[f]\nrw=write\nbs=4k\nnrfiles=3\nfilesize=8k\nsize=64k\n"), ns, 1).len(), 6);
    assert_eq!(collect(&job("[f]\nrw=write\nbs=4k\nnrfiles=3\nfilesize=8k\nio_size=64k\n"), ns, 1).len(), 16);
    assert_eq!(collect(&job("[f]\nrw=write\nbs=4k\nsize=48k\nnrfiles=3\nloops=2\n"), ns, 1).len(), 24);
    assert_eq!(collect(&job("[f]\nrw=write\nbs=4k\nsize=48k\nnrfiles=3\nio_size=60k\n"), ns, 1).len(), 15);
    // the offset places the group of files
    assert_eq!(offsets_k(&job("[f]\nrw=write\nbs=4k\nsize=48k\nnrfiles=3\noffset=1m\n"), ns)[..3], [1024, 1040, 1056]);
    // what wafsim does not model is refused with a reason
    for (text, why) in [
        ("[f]\nrw=write\nnrfiles=2\nfilesize=1m-2m\n", "random file sizes"),
        ("[f]\nrw=write\nnrfiles=2\nfile_service_type=zipf:1.2\n", "skewed"),
        ("[f]\nrw=write\nnrfiles=4\nfilesize=8m\n", "past the namespace end"),
    ] {
        let e = job(text).source(0, ns, 1).err().unwrap().to_string();
        assert!(e.contains(why), "{text}: {e}");
    }
}

/// Item 7: a drive without the requested placement fails the job, as fio does; unknown keeps
/// today's behaviour.
#[test]
fn placement_must_exist_on_the_drive() {
    use wafsim_workload::fio::DevicePlacement;
    let fdp = job("[f]\nioengine=io_uring_cmd\nrw=write\nbs=4k\nsize=16k\nfdp=1\n");
    let streams = job("[s]\nioengine=io_uring_cmd\nrw=write\nbs=4k\nsize=16k\ndataplacement=streams\nplids=1\n");
    let plain = job("[p]\nrw=write\nbs=4k\nsize=16k\n");
    let p = |placement| SourceParams { ns_bytes: MIB, placement, ..SourceParams::default() };
    let e = fdp.source_with(p(DevicePlacement::NoPlacement)).err().unwrap().to_string();
    assert!(e.starts_with("g.fio:1: job \"f\": fdp=1 but the namespace's drive has no FDP (fio fails"), "{e}");
    let e = streams.source_with(p(DevicePlacement::Fdp)).err().unwrap().to_string();
    assert!(e.contains("offers FDP, not streams"), "{e}");
    assert!(fdp.source_with(p(DevicePlacement::Streams)).is_err());
    assert!(streams.source_with(p(DevicePlacement::NoPlacement)).is_err());
    for ok in [DevicePlacement::Unknown, DevicePlacement::Fdp] {
        assert!(fdp.source_with(p(ok)).is_ok());
    }
    assert!(streams.source_with(p(DevicePlacement::Streams)).is_ok());
    for any in [DevicePlacement::Unknown, DevicePlacement::NoPlacement, DevicePlacement::Fdp, DevicePlacement::Streams] {
        assert!(plain.source_with(p(any)).is_ok());
    }
    assert_eq!(SourceParams::default().placement, DevicePlacement::Unknown);
}

/// Item 2: offset=0% runs (uring-cmd-fdp.fio); percentages round the start up, as fio's
/// get_start_offset does.
#[test]
fn percent_offsets_like_fio() {
    let v = collect(&job("[w]\nrw=write\nbs=4k\noffset=0%\nsize=30%\n"), MIB, 1);
    assert_eq!(v[0].offset, 0);
    assert_eq!(v.len() as u64, (MIB * 30 / 100) / 4096);
    // 1% of 1 MiB = 10485 bytes, rounded up to the 4k block: 12288
    assert_eq!(collect(&job("[w]\nrw=write\nbs=4k\noffset=1%\nsize=8k\n"), MIB, 1)[0].offset, 12288);
    // fio 3.33 on a 16 MiB device: the percentages add up before the rounding
    let jf = parse_job_str("[w]\nrw=write\nbs=4k\noffset=1%\noffset_increment=1%\nnumjobs=2\nsize=8k\n", "g.fio", Path::new("."), &|_| None).unwrap();
    let starts: Vec<u64> = jf.jobs().map(|j| collect(j, 16 * MIB, 1)[0].offset).collect();
    assert_eq!(starts, [167936, 335872]);
    // size=30% from offset=80%: capped to what is left, in whole blocks (819 writes)
    let v = collect(&job("[w]\nrw=write\nbs=4k\nsize=30%\noffset=80%\n"), 16 * MIB, 1);
    assert_eq!((v.len(), v[0].offset), (819, 13422592));
}
