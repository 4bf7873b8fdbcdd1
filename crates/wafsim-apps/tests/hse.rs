//! The HSE-like engine (wafsim_apps::hse): hand-computed kvset sizes, what each job writes and
//! deletes, the media-class table and placement by destination role, c1 reuse, conservation of
//! bytes, and a run through mpool on two media classes.

use std::collections::HashMap;

use wafsim_apps::hse::{group_class, group_kind, BlockKind, Hse, HseConfig, HseFiles, JobKind, JobRecord, MclassPolicy, MediaClass, Role, HSE_CAPACITY_BIT, HSE_MLOG_BIT, HSE_MLOG_ZONES_MASK, HSE_MLOG_ZONES_SHIFT, HSE_SPARE_BIT};
use wafsim_core::pipeline::{FileOp, FileSource, IoSource, KvOp, KvScript};
use wafsim_core::Op;
use wafsim_host::fs::{mpool, FsSource, MediaClassFs, MpoolConfig, MpoolFs};

const KIB: u64 = 1 << 10;

/// 64 KiB mblocks written in 16 KiB chunks, 4 KiB pages and headers, 28 kblock bytes per key
/// (12 + 16), documents = the bytes sent (no BSON overhead), c1 off, no prefix levels, big nodes.
fn tiny() -> HseConfig {
    HseConfig {
        ops_per_sec: 1000.0,
        c0_bytes: 1,
        mblock_bytes: 64 * KIB,
        write_chunk_bytes: 16 * KIB,
        page_bytes: 4096,
        doc_overhead_bytes: 0,
        kblock_fixed_bytes: 4096,
        vblock_header_bytes: 4096,
        prefix_levels: 0,
        node_size_lo: 1 << 30,
        node_size_hi: 1 << 30,
        c1: false,
        ..HseConfig::default()
    }
}

fn put(hse: &mut Hse, key: u64, bytes: u32) -> Vec<FileOp> {
    let mut out = Vec::new();
    hse.apply(&KvOp::Update { key, bytes }, &mut out).unwrap();
    out
}

fn kinds(jobs: &[JobRecord]) -> Vec<JobKind> {
    jobs.iter().map(|j| j.kind).collect()
}

/// (creates by (role, kind), write bytes, deleted files) of a slice of operations.
fn summary(ops: &[FileOp]) -> (Vec<(Role, BlockKind)>, u64, Vec<u64>) {
    let mut creates = Vec::new();
    let mut bytes = 0;
    let mut deletes = Vec::new();
    for op in ops {
        match *op {
            FileOp::Create { group, .. } => creates.push(group_kind(group).expect("an mblock")),
            FileOp::Write { len, .. } => bytes += len as u64,
            FileOp::Delete { file } => deletes.push(file),
            _ => {}
        }
    }
    (creates, bytes, deletes)
}

#[test]
fn an_ingest_writes_one_kvset_sized_by_hand() {
    // 100 documents of 1000 B: c0 holds 100 x (12 + 1000) bytes when the 100th arrives.
    let mut hse = Hse::new(HseConfig { c0_bytes: 100 * 1012, ..tiny() }).unwrap();
    let mut out = Vec::new();
    for k in 0..100 {
        out = put(&mut hse, k, 1000);
        if k < 99 {
            assert!(out.is_empty() && hse.last_jobs().is_empty());
        }
    }
    assert_eq!(kinds(hse.last_jobs()), vec![JobKind::Ingest]);
    // kblock: 4096 + 100 x 28 = 6896 -> 2 pages. vblocks: 4096 + 61 x 1000 = 65096 (the 62nd
    // does not fit in 65536) -> 16 pages; 4096 + 39 x 1000 = 43096 -> 11 pages.
    let mut written: HashMap<u64, u64> = HashMap::new();
    let mut groups = HashMap::new();
    for op in &out {
        match *op {
            FileOp::Create { file, group } => {
                groups.insert(file, group);
            }
            FileOp::Write { file, offset, len } => {
                assert_eq!(offset, written.get(&file).copied().unwrap_or(0), "appends");
                assert!(len as u64 <= 16 * KIB && len % 4096 == 0);
                *written.entry(file).or_default() += len as u64;
            }
            FileOp::Close { .. } => {}
            ref o => panic!("unexpected {o}"),
        }
    }
    let mut k: Vec<u64> = written.iter().filter(|(f, _)| group_kind(groups[*f]) == Some((Role::Root, BlockKind::Key))).map(|(_, &b)| b).collect();
    let mut v: Vec<u64> = written.iter().filter(|(f, _)| group_kind(groups[*f]) == Some((Role::Root, BlockKind::Value))).map(|(_, &b)| b).collect();
    k.sort();
    v.sort();
    assert_eq!(k, vec![8192]);
    assert_eq!(v, vec![45056, 65536]);
    let c = hse.counters();
    assert_eq!((c.kblock_write_bytes, c.vblock_write_bytes, c.ingests), (8192, 110592, 1));
    assert_eq!(c.app_write_bytes(), 100 * 1012);
    assert_eq!(out.iter().filter(|o| matches!(o, FileOp::Close { .. })).count(), 3);
}

/// One key, put again and again; every put is an ingest (c0_bytes 1) and the root spills at
/// once (rspill 1): one leaf receives every version.
fn one_key(cfg: HseConfig) -> Hse {
    Hse::new(HseConfig { rspill_kvsets_min: 1, rspill_kvsets_max: 1, ..cfg }).unwrap()
}

#[test]
fn a_spill_rewrites_keys_and_values_and_deletes_its_inputs() {
    let mut hse = one_key(tiny());
    let out = put(&mut hse, 7, 1000);
    let jobs = hse.last_jobs().to_vec();
    assert_eq!(kinds(&jobs), vec![JobKind::Ingest, JobKind::Spill]);
    let ingest = summary(&out[jobs[0].ops.clone()]);
    let spill = summary(&out[jobs[1].ops.clone()]);
    // Ingest: one kblock (4096 + 28 -> 8192) and one vblock (4096 + 1000 -> 8192) at the root.
    assert_eq!(ingest.0, vec![(Role::Root, BlockKind::Key), (Role::Root, BlockKind::Value)]);
    assert_eq!(ingest.1, 16384);
    // Spill into a new child (a leaf): the same sizes again, and both root mblocks deleted.
    assert_eq!(spill.0, vec![(Role::Leaf, BlockKind::Key), (Role::Leaf, BlockKind::Value)]);
    assert_eq!(spill.1, 16384);
    let ingest_files: Vec<u64> = out[jobs[0].ops.clone()].iter().filter_map(|o| if let FileOp::Create { file, .. } = o { Some(*file) } else { None }).collect();
    assert_eq!(spill.2, ingest_files);
    assert_eq!((jobs[1].role, jobs[1].input_kblocks, jobs[1].input_vblocks), (Role::Root, 1, 1));
    let nodes = hse.nodes();
    assert_eq!(nodes.len(), 2);
    assert_eq!((nodes[1].level, nodes[1].role, nodes[1].compcs.clone()), (1, Role::Leaf, vec![0]));
    assert_eq!(hse.counters().root_spills, 1);
}

#[test]
fn kv_compaction_rewrites_both_and_deletes_every_input() {
    // HSE's space-amplification marks: a leaf of two versions of one key is mostly garbage.
    let mut hse = one_key(tiny());
    put(&mut hse, 7, 1000);
    let out = put(&mut hse, 7, 1000);
    let jobs = hse.last_jobs().to_vec();
    assert_eq!(kinds(&jobs), vec![JobKind::Ingest, JobKind::Spill, JobKind::KvCompact]);
    let kv = &jobs[2];
    assert_eq!((kv.role, kv.inputs, kv.input_kblocks, kv.input_vblocks), (Role::Leaf, 2, 2, 2));
    let (creates, bytes, deletes) = summary(&out[kv.ops.clone()]);
    // One version survives: one kblock and one vblock of 8192 bytes each.
    assert_eq!(creates, vec![(Role::Leaf, BlockKind::Key), (Role::Leaf, BlockKind::Value)]);
    assert_eq!(bytes, 16384);
    assert_eq!(deletes.len(), 4, "both kblocks and both vblocks");
    assert_eq!(hse.nodes()[1].compcs, vec![1]);
    assert_eq!(hse.counters().versions_dropped, 1);
    assert_eq!(hse.live_mblocks(), 2);
}

#[test]
fn k_compaction_rewrites_keys_and_keeps_the_vblocks() {
    // The garbage rule off (high mark = samp_max 10^7) and the short-leaf kv-compaction off
    // (leaf_short_bytes 0), so runs of 4 are k-compacted.
    let cfg = HseConfig { samp_max_pct: 1_000_000_000, samp_lo_pct: 0, samp_hi_pct: 0, leaf_short_bytes: 0, ..tiny() };
    let mut hse = one_key(cfg);
    for i in 1..=16u32 {
        let out = put(&mut hse, 7, 1000);
        let jobs = hse.last_jobs().to_vec();
        if i % 4 != 0 {
            assert_eq!(kinds(&jobs), vec![JobKind::Ingest, JobKind::Spill], "put {i}");
            continue;
        }
        // Puts 4, 8, 12: four compc-0 kvsets; put 16: also then four compc-1 ones.
        let want = if i == 16 { vec![JobKind::Ingest, JobKind::Spill, JobKind::KCompact, JobKind::KCompact] } else { vec![JobKind::Ingest, JobKind::Spill, JobKind::KCompact] };
        assert_eq!(kinds(&jobs), want, "put {i}");
        for k in &jobs[2..] {
            let (creates, bytes, deletes) = summary(&out[k.ops.clone()]);
            assert_eq!(creates, vec![(Role::Leaf, BlockKind::Key)], "only a kblock");
            assert_eq!(bytes, 8192, "4096 + 28 -> 8192");
            assert_eq!(deletes.len() as u64, k.input_kblocks, "only the input kblocks go");
            assert_eq!(k.inputs, 4);
        }
        let leaf = &hse.nodes()[1];
        assert_eq!(leaf.vblocks, i as u64, "every version's vblock is kept");
    }
    let leaf = &hse.nodes()[1];
    assert_eq!((leaf.compcs.clone(), leaf.kblocks, leaf.vblocks), (vec![2], 1, 16));
    let c = hse.counters();
    assert_eq!(c.k_compactions, 5);
    // Only the 16 root vblocks (deleted by the spills) are gone.
    assert_eq!(c.vblocks_deleted, 16);
    assert_eq!(c.vblock_write_bytes, 2 * 16 * 8192, "each version written at ingest and at the spill, never again");
}

#[test]
fn the_media_class_table() {
    use BlockKind::*;
    use MediaClass::*;
    use Role::*;
    let cells = [(Root, Key), (Root, Value), (Internal, Key), (Internal, Value), (Leaf, Key), (Leaf, Value)];
    let table = [
        (MclassPolicy::CapacityOnly, [Capacity; 6]),
        (MclassPolicy::StagingOnly, [Staging; 6]),
        (MclassPolicy::StagingMaxCapacity, [Staging, Staging, Staging, Staging, Staging, Capacity]),
        (MclassPolicy::StagingMinCapacity, [Staging, Staging, Capacity, Capacity, Capacity, Capacity]),
    ];
    for (p, want) in table {
        for (i, &(r, k)) in cells.iter().enumerate() {
            assert_eq!(p.class(r, k), want[i], "{} {r:?} {k:?}", p.name());
        }
        assert_eq!(MclassPolicy::from_name(p.name()), Some(p));
    }
    assert_eq!(MclassPolicy::default(), MclassPolicy::CapacityOnly, "HSE 1.9's default");
}

#[test]
fn group_bits_match_mpool() {
    assert_eq!(HSE_CAPACITY_BIT, wafsim_apps::lsm::CAPACITY_GROUP_BIT);
    assert_eq!(HSE_MLOG_BIT, mpool::MLOG_GROUP_BIT);
    assert_eq!(HSE_SPARE_BIT, mpool::SPARE_GROUP_BIT);
    assert_eq!(HSE_MLOG_ZONES_SHIFT, mpool::MLOG_ZONES_SHIFT);
    assert_eq!(HSE_MLOG_ZONES_MASK, mpool::MLOG_ZONES_MASK);
}

/// The classes of the mblocks a job created: (role, kind, class).
fn placed(ops: &[FileOp]) -> Vec<(Role, BlockKind, MediaClass)> {
    ops.iter()
        .filter_map(|o| match *o {
            FileOp::Create { group, .. } if group & HSE_MLOG_BIT == 0 => {
                let (r, k) = group_kind(group).unwrap();
                Some((r, k, group_class(group)))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn placement_is_by_the_destination_role_at_allocation() {
    use BlockKind::*;
    use MediaClass::*;
    use Role::*;
    // Root spills go to the level-1 node (one prefix level), which pops at 3 keys (3 x 1028 >=
    // 3000) and turns internal; internal nodes spill as soon as they hold anything.
    let cfg = HseConfig { staging: true, policy: MclassPolicy::StagingMaxCapacity, prefix_levels: 1, node_size_lo: 3000, node_size_hi: 3000, ispill_min_bytes: 1, ..tiny() };
    let mut hse = one_key(cfg);
    let out = put(&mut hse, 1, 1000);
    let jobs = hse.last_jobs().to_vec();
    assert_eq!(placed(&out[jobs[0].ops.clone()]), vec![(Root, Key, Staging), (Root, Value, Staging)]);
    assert_eq!(placed(&out[jobs[1].ops.clone()]), vec![(Leaf, Key, Staging), (Leaf, Value, Capacity)]);
    // Spill and compaction outputs may use the spare reserve; ingests may not.
    let spare = |ops: &[FileOp]| ops.iter().all(|o| !matches!(o, FileOp::Create { group, .. } if group & HSE_SPARE_BIT == 0));
    assert!(spare(&out[jobs[1].ops.clone()]));
    assert!(out[jobs[0].ops.clone()].iter().all(|o| !matches!(o, FileOp::Create { group, .. } if group & HSE_SPARE_BIT != 0)));
    put(&mut hse, 2, 1000); // the leaf kv-compacts (garbage rule): [compc 1] with keys 1, 2
    let out = put(&mut hse, 3, 1000);
    let jobs = hse.last_jobs().to_vec();
    // The leaf [compc 0 (key 3), compc 1 (keys 1, 2)] pops: its oldest kvset is a compaction's
    // output, so it spills that one alone (CN_CR_LBIG_ONE); then, internal, the other.
    assert_eq!(kinds(&jobs), vec![JobKind::Ingest, JobKind::Spill, JobKind::Spill, JobKind::Spill], "the leaf pops");
    assert_eq!((jobs[2].level, jobs[2].role, jobs[2].inputs), (1, Leaf, 1));
    assert_eq!((jobs[3].level, jobs[3].role, jobs[3].inputs), (1, Internal, 1));
    for j in &jobs[2..] {
        assert!(placed(&out[j.ops.clone()]).iter().all(|&(r, k, c)| r == Leaf && c == if k == Value { Capacity } else { Staging }));
    }
    assert_eq!(hse.nodes()[1].role, Internal);
    // Now the root spills into an internal child: staging for keys and values.
    let out = put(&mut hse, 4, 1000);
    let jobs = hse.last_jobs().to_vec();
    assert_eq!(kinds(&jobs)[..3], [JobKind::Ingest, JobKind::Spill, JobKind::Spill]);
    assert_eq!(placed(&out[jobs[1].ops.clone()]), vec![(Internal, Key, Staging), (Internal, Value, Staging)]);
    assert_eq!((jobs[2].role, placed(&out[jobs[2].ops.clone()])), (Internal, vec![(Leaf, Key, Staging), (Leaf, Value, Capacity)]));

    // Without a staging class, every policy is capacity_only (cn_open).
    let mut hse = one_key(HseConfig { staging: false, policy: MclassPolicy::StagingOnly, ..tiny() });
    let out = put(&mut hse, 1, 1000);
    assert!(placed(&out).iter().all(|&(_, _, c)| c == Capacity));
    assert_eq!(hse.counters().staging_write_bytes, 0);
}

#[test]
fn c1_is_on_staging_when_there_is_one_whatever_the_policy() {
    for (staging, class) in [(true, MediaClass::Staging), (false, MediaClass::Capacity)] {
        let cfg = HseConfig { c1: true, staging, policy: MclassPolicy::CapacityOnly, c0_bytes: 1 << 30, dur_capacity_bytes: 256 * KIB, ..tiny() };
        let mut hse = Hse::new(cfg).unwrap();
        let mut out = Vec::new();
        for k in 0..101 {
            hse.apply(&KvOp::Insert { key: k, bytes: 1000 }, &mut out).unwrap();
        }
        let mlogs: Vec<u32> = out.iter().filter_map(|o| if let FileOp::Create { group, .. } = *o { Some(group) } else { None }).collect();
        assert_eq!(mlogs.len(), 4, "one c1 tree of 4 mlogs");
        for g in mlogs {
            assert!(g & HSE_MLOG_BIT != 0 && group_kind(g).is_none());
            assert_eq!((g >> HSE_MLOG_ZONES_SHIFT) & HSE_MLOG_ZONES_MASK, 1, "64 KiB mlogs: one zone");
            assert_eq!(group_class(g), class);
        }
        let c = hse.counters();
        assert_eq!(if staging { c.staging_write_bytes } else { c.capacity_write_bytes }, c.c1_write_bytes);
    }
}

#[test]
fn c1_trees_are_erased_and_reused_once_ingested() {
    // A flush every 100 requests (1000/s, 100 ms); c0 ingests every 50 puts; mlogs of 64 KiB
    // (256 KiB / 4), 48 KiB usable. A flush of 100 puts x (12 + 1000 + 32) = 104400 bytes is
    // strips 32768, 32768, 32768, 6096 (-> 8192) on mlogs 0..3.
    let cfg = HseConfig { c1: true, c0_bytes: 50 * 1012, dur_capacity_bytes: 256 * KIB, ..tiny() };
    let mut hse = Hse::new(cfg).unwrap();
    let mut out = Vec::new();
    let mut mlog_files = Vec::new();
    for k in 0..301 {
        let from = out.len();
        hse.apply(&KvOp::Insert { key: k, bytes: 1000 }, &mut out).unwrap();
        for o in &out[from..] {
            if let FileOp::Create { file, group } = *o {
                if group & HSE_MLOG_BIT != 0 {
                    mlog_files.push(file);
                }
            }
        }
        let truncs: Vec<u64> = out[from..].iter().filter_map(|o| if let FileOp::Truncate { file, size: 0 } = *o { Some(file) } else { None }).collect();
        // Request 101 flushes into tree 0; 201 finds mlog 0 full (32768 + 32768 > 49152) and
        // tree 0 not yet reusable as the current tree: tree 1; 301 finds tree 1 full and tree 0
        // clean (ingested): erased and reused.
        if k == 300 {
            assert_eq!(truncs, mlog_files[..4].to_vec());
        } else {
            assert!(truncs.is_empty(), "request {k}");
        }
    }
    let c = hse.counters();
    assert_eq!((c.c1_trees, c.c1_erases, c.c1_forced_ingests), (2, 1, 0));
    assert_eq!(c.c1_write_bytes, 3 * (3 * 32768 + 8192));
    assert_eq!(mlog_files.len(), 8);
}

/// A mixed workload: inserts, updates, deletes, reads over `KEYS` keys.
const KEYS: u64 = 20_000;
fn workload(n: usize) -> Vec<KvOp> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ops: Vec<KvOp> = (0..KEYS).map(|k| KvOp::Insert { key: k, bytes: 500 + (k % 7) as u32 * 100 }).collect();
    while ops.len() < n {
        let r = next();
        let key = r % KEYS;
        ops.push(match r >> 60 {
            0 => KvOp::Delete { key },
            1..=3 => KvOp::Read { key },
            4 => KvOp::Insert { key, bytes: 900 },
            _ => KvOp::Update { key, bytes: 400 + (r >> 40) as u32 % 1200 },
        });
    }
    ops
}

/// Sizes about 1/1000 of HSE's relative to each other: 32 KiB mblocks, 512 KiB c0, 1 MiB
/// nodes; fanout 4 so that leaves fill with few keys.
fn busy() -> HseConfig {
    HseConfig {
        mblock_bytes: 32 * KIB,
        write_chunk_bytes: 8 * KIB,
        c0_bytes: 512 * KIB,
        node_size_lo: 1 << 20,
        node_size_hi: 3 << 19,
        ispill_min_bytes: 256 * KIB,
        leaf_short_bytes: 128 * KIB,
        fanout: 4,
        prefix_levels: 1,
        c1: true,
        dur_capacity_bytes: 1 << 20,
        doc_overhead_bytes: 64,
        staging: true,
        policy: MclassPolicy::StagingMaxCapacity,
        ..tiny()
    }
}

#[test]
fn conservation_and_job_invariants_over_a_mixed_workload() {
    // With HSE's space-amplification marks this update-heavy set is kept compact by
    // kv-compactions; with the garbage and short-leaf rules off, leaves k-compact runs.
    let with = mixed(busy());
    let without = mixed(HseConfig { samp_max_pct: 1_000_000_000, samp_lo_pct: 0, samp_hi_pct: 0, leaf_short_bytes: 0, ..busy() });
    for k in ["Ingest", "Spill", "KvCompact"] {
        assert!(with.get(k).copied().unwrap_or(0) > 0, "{k}: {with:?}");
    }
    assert!(without.get("KCompact").copied().unwrap_or(0) > 0, "{without:?}");
}

/// Run the mixed workload through `cfg`, checking every job and the totals; the job counts.
fn mixed(cfg: HseConfig) -> HashMap<String, u64> {
    let ops = workload(100_000);
    let mut hse = Hse::new(cfg).unwrap();
    let mut out = Vec::new();
    let mut want_app = 0u64;
    let mut docs: HashMap<u64, u32> = HashMap::new();
    let mut live: HashMap<u64, u32> = HashMap::new();
    let mut size: HashMap<u64, u64> = HashMap::new();
    let mut all_jobs = HashMap::new();
    for op in &ops {
        // The model's own document sizes: an insert sets, an update keeps the larger.
        match *op {
            KvOp::Insert { key, bytes } => {
                let d = bytes + 64;
                docs.insert(key, d);
                want_app += 12 + d as u64;
            }
            KvOp::Update { key, bytes } => {
                let d = docs.get(&key).map_or(bytes + 64, |&o| o.max(bytes + 64));
                docs.insert(key, d);
                want_app += 12 + d as u64;
            }
            KvOp::Delete { key } if docs.remove(&key).is_some() => want_app += 12,
            _ => {}
        }
        out.clear();
        hse.apply(op, &mut out).unwrap();
        for j in hse.last_jobs() {
            *all_jobs.entry(format!("{:?}", j.kind)).or_insert(0u64) += 1;
            let (creates, _, deletes) = summary(&out[j.ops.clone()]);
            let del_kinds: Vec<BlockKind> = deletes.iter().map(|f| group_kind(live[f]).unwrap().1).collect();
            let (dk, dv) = (del_kinds.iter().filter(|&&k| k == BlockKind::Key).count() as u64, del_kinds.iter().filter(|&&k| k == BlockKind::Value).count() as u64);
            match j.kind {
                JobKind::KCompact => {
                    assert!(creates.iter().all(|&(_, k)| k == BlockKind::Key), "k-compaction writes no vblock");
                    assert_eq!((dk, dv), (j.input_kblocks, 0), "k-compaction deletes its kblocks only");
                }
                JobKind::Spill | JobKind::KvCompact => assert_eq!((dk, dv), (j.input_kblocks, j.input_vblocks), "{:?} deletes every input mblock", j.kind),
                JobKind::Ingest => assert!(deletes.is_empty()),
            }
            for (r, _) in creates {
                if j.kind != JobKind::Spill {
                    assert_eq!(r, j.role, "compactions write for their own node's role");
                }
            }
            // Apply this job's operations to the file model below.
            for o in &out[j.ops.clone()] {
                if let FileOp::Create { file, group } = *o {
                    live.insert(file, group);
                }
                if let FileOp::Delete { file } = *o {
                    live.remove(&file);
                }
            }
        }
        // Files and writes: creates before writes, appends only, mblocks within 64 KiB.
        for o in &out {
            match *o {
                FileOp::Create { file, group } => {
                    live.insert(file, group);
                    size.insert(file, 0);
                }
                FileOp::Write { file, offset, len } => {
                    let g = live[&file];
                    let s = size.get_mut(&file).unwrap();
                    assert_eq!(offset, *s);
                    *s += len as u64;
                    if g & HSE_MLOG_BIT == 0 {
                        assert!(*s <= 32 * KIB);
                    }
                }
                FileOp::Truncate { file, size: 0 } => {
                    assert!(live[&file] & HSE_MLOG_BIT != 0);
                    size.insert(file, 0);
                }
                FileOp::Delete { file } => {
                    assert!(!live.contains_key(&file) || live[&file] & HSE_MLOG_BIT == 0);
                    live.remove(&file);
                }
                _ => {}
            }
        }
    }
    let c = hse.counters().clone();
    assert_eq!(c.app_write_bytes(), want_app, "key + value bytes in");
    let written: u64 = size.values().sum::<u64>();
    assert!(written <= c.engine_write_bytes());
    assert_eq!(c.staging_write_bytes + c.capacity_write_bytes, c.engine_write_bytes());
    assert_eq!(c.role_write_bytes.iter().flatten().sum::<u64>() + c.c1_write_bytes, c.engine_write_bytes());
    let mlogs = live.values().filter(|&&g| g & HSE_MLOG_BIT != 0).count() as u64;
    assert_eq!(live.len() as u64 - mlogs, hse.live_mblocks());
    assert_eq!(c.mblocks_allocated - c.mblocks_deleted(), live.len() as u64);
    // staging_max_capacity put leaf values on capacity, nothing else.
    assert_eq!(c.capacity_write_bytes, c.role_write_bytes[Role::Leaf as usize][BlockKind::Value as usize]);
    assert!(hse.nodes().iter().any(|n| n.role == Role::Internal && n.level >= 1));
    assert!(c.leaf_spills > 0 && c.internal_spills > 0);
    all_jobs
}

#[test]
fn the_sum_of_write_lengths_is_the_engine_bytes() {
    let mut hse = Hse::new(busy()).unwrap();
    let mut out = Vec::new();
    let mut sum = 0u64;
    for op in workload(20_000) {
        out.clear();
        hse.apply(&op, &mut out).unwrap();
        sum += out.iter().map(|o| if let FileOp::Write { len, .. } = *o { len as u64 } else { 0 }).sum::<u64>();
    }
    out.clear();
    hse.sync(&mut out);
    sum += out.iter().map(|o| if let FileOp::Write { len, .. } = *o { len as u64 } else { 0 }).sum::<u64>();
    assert_eq!(sum, hse.counters().engine_write_bytes());
}

#[test]
fn through_mpool_on_two_media_classes() {
    // Each class its own mpool with 32 KiB zones (= the mblock); deletes discard whole zones.
    let mk = |ns, bytes| MpoolFs::new(MpoolConfig { zone_bytes: 32 * KIB, ..MpoolConfig::new(ns, bytes) }).unwrap();
    let fs = MediaClassFs::new(mk(0, 64 << 20), mk(1, 256 << 20), HSE_CAPACITY_BIT);
    let files = HseFiles::new(KvScript::new(workload(30_000)), Hse::new(busy()).unwrap());
    let mut src = FsSource::new(files, fs);
    let mut io = Vec::new();
    let (mut w, mut t) = ([0u64; 2], [0u64; 2]);
    loop {
        io.clear();
        if src.fill(&mut io, 4096).unwrap() == 0 {
            break;
        }
        for i in &io {
            match i.op {
                Op::Write => w[i.ns as usize] += i.len as u64,
                Op::Trim => t[i.ns as usize] += i.len as u64,
                _ => {}
            }
        }
    }
    let c = src.files().counters().clone();
    assert_eq!(w, [c.staging_write_bytes, c.capacity_write_bytes]);
    // Trims: whole 64 KiB zones per deleted mblock, whole mlogs per erase (c1 on staging).
    let cap_deletes = src.file_system().class_bytes()[1];
    assert_eq!(cap_deletes.file_write_bytes, c.capacity_write_bytes);
    assert_eq!(t[0] + t[1], c.mblocks_deleted() * 32 * KIB + c.c1_erases * 4 * (256 * KIB));
    let f = src.files().figures().unwrap();
    assert_eq!(f.app_write_bytes, c.app_value_bytes);
    assert!(f.metrics.iter().any(|(n, v)| n == "staging share of engine writes" && *v > 0.0 && *v < 1.0));
}

/// Requests per second through the engine alone (no file system), at 1/1000 of HSE's sizes:
/// `cargo test --release -p wafsim-apps --test hse -- --ignored --nocapture speed`.
#[test]
#[ignore]
fn speed() {
    let n = 2_000_000usize;
    let mut x: u64 = 88172645463325252;
    let keys = 200_000u64;
    let mut ops: Vec<KvOp> = (0..keys).map(|k| KvOp::Insert { key: k, bytes: 1000 }).collect();
    while ops.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ops.push(if x.is_multiple_of(2) { KvOp::Read { key: x % keys } } else { KvOp::Update { key: x % keys, bytes: 1000 } });
    }
    let cfg = HseConfig { staging: true, policy: MclassPolicy::StagingMaxCapacity, ..HseConfig::default() }.scaled(1000);
    let mut hse = Hse::new(cfg).unwrap();
    let mut out = Vec::new();
    let t = std::time::Instant::now();
    for op in &ops {
        out.clear();
        hse.apply(op, &mut out).unwrap();
    }
    let s = t.elapsed().as_secs_f64();
    let c = hse.counters();
    eprintln!("{:.2} M ops/s; engine WAF {:.2}; staging share {:.2}; {c:?}", n as f64 / s / 1e6, c.app_waf(), c.staging_write_bytes as f64 / c.engine_write_bytes() as f64);
}

#[test]
fn defaults_and_derived_marks() {
    let d = HseConfig::default();
    d.validate().unwrap();
    assert_eq!((d.mblock_bytes, d.c0_bytes, d.fanout, d.node_size_lo, d.node_size_hi), (32 << 20, 2 << 30, 16, 20 << 30, 28 << 30));
    assert_eq!((d.rspill_kvsets_min, d.rspill_kvsets_max, d.runlen_min, d.runlen_max), (4, 8, 4, 8));
    assert_eq!(d.policy, MclassPolicy::CapacityOnly);
    // r = 0.1, S = 1.5: good_min = 1.1 / 1.5; hwm = 1.1 / (good_min + 0.25 (1 - good_min)) = 1.375,
    // lwm = 1.1 / (good_min + 0.75 (1 - good_min)) = 1.1 / 0.9333 = 1.1786.
    let (h, l) = d.samp_marks();
    assert!((h - 1.375).abs() < 1e-9 && (l - 1.1 / (1.1 / 1.5 + 0.75 * 0.4 / 1.5)).abs() < 1e-9, "{h} {l}");
    // c1: 6 GiB / 4 = 1.5 GiB mlogs, 48 zones of 32 MiB.
    assert_eq!((d.c1_log_bytes(), d.c1_log_zones()), (1536 << 20, 48));
    let s = d.clone().scaled(1000);
    s.validate().unwrap();
    assert_eq!((s.mblock_bytes, s.write_chunk_bytes, s.c0_bytes), (32 << 10, 32 << 10, (2u64 << 30) / 1000));
}

#[test]
fn real_mblocks_through_mpool_discard_whole_32_mib_zones() {
    // HSE's 32 MiB mblocks on mpool's 32 MiB zones: small kvsets (1 MiB c0), every delete trims
    // a whole zone, at a zone boundary.
    let cfg = HseConfig { c0_bytes: 1 << 20, rspill_kvsets_min: 1, rspill_kvsets_max: 1, c1: false, ..HseConfig::default() };
    let ops: Vec<KvOp> = (0..5000u64).map(|k| KvOp::Update { key: k % 700, bytes: 1000 }).collect();
    let files = HseFiles::new(KvScript::new(ops), Hse::new(cfg).unwrap());
    let fs = MpoolFs::new(MpoolConfig::new(0, 64 << 30)).unwrap();
    let mut src = FsSource::new(files, fs);
    let mut io = Vec::new();
    let mut trims = 0u64;
    while src.fill(&mut io, 1024).unwrap() > 0 {
        for i in io.drain(..) {
            if i.op == Op::Trim {
                assert_eq!((i.offset % (32 << 20), i.len as u64), (0, 32 << 20));
                trims += 1;
            }
        }
    }
    let c = src.files().counters();
    assert!(c.mblocks_deleted() > 0);
    assert_eq!(trims, c.mblocks_deleted());
    assert_eq!(src.file_system().counters().dev_trim_bytes, c.mblocks_deleted() * (32 << 20));
}
