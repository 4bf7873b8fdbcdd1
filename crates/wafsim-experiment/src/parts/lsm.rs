//! `[[phase.kv]] store = "lsm"`: an LSM store (wafsim_apps::lsm) on a file system on one
//! namespace, or on two (a staging namespace for the log and the upper levels, the rest on
//! the store's namespace: HSE-like media classes). Requests -> store -> file operations ->
//! file system(s) -> block I/O; the report row carries every level: application bytes (what
//! clients sent), store bytes (what the store wrote to files) and device bytes (what the file
//! systems wrote).

use crate::parts::files::{make_fs, FsChoice};
use crate::parts::part::budgeted;
use crate::parts::{Label, Part, PartTiming, Target};
use crate::schema::{Compaction, FileGroups, FsKind, KvSpec, KvWorkload};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_apps::lsm::{CompactionConfig, LsmConfig, WriteControllerConfig, CAPACITY_GROUP_BIT};
use wafsim_apps::{Lsm, LsmFiles};
use wafsim_core::pipeline::{Chain, KvSource, Script};
use wafsim_host::fs::{FileSystem, FsSource, MediaClassFs};

/// The store's configuration from `k`: the engine's defaults, then the spec's settings.
fn lsm_config(k: &KvSpec, capacity_bytes: u64) -> Result<LsmConfig> {
    let mut cfg = match k.lsm.compaction.unwrap_or_default() {
        Compaction::SizeTiered => LsmConfig::cassandra(),
        Compaction::Leveled => LsmConfig::rocksdb(),
        Compaction::Universal => LsmConfig::rocksdb_universal(),
    };
    if let Some(m) = &k.lsm.memtable {
        cfg.memtable_bytes = m.get();
    }
    if let Some(w) = &k.lsm.write_controller {
        if matches!(cfg.compaction, CompactionConfig::SizeTiered(_)) {
            bail!("[phase.kv.lsm.write_controller] models RocksDB's write stalls: it needs compaction = \"leveled\" or \"universal\"");
        }
        let d = WriteControllerConfig::rocksdb(w.background_bandwidth.bytes_per_s());
        cfg.write_controller = Some(WriteControllerConfig {
            client_rate: w.client_rate.as_ref().map_or(d.client_rate, |r| r.bytes_per_s()),
            delayed_write_rate: w.delayed_write_rate.as_ref().map_or(d.delayed_write_rate, |r| r.bytes_per_s()),
            level0_slowdown_writes_trigger: w.level0_slowdown_writes_trigger.unwrap_or(d.level0_slowdown_writes_trigger),
            level0_stop_writes_trigger: w.level0_stop_writes_trigger.unwrap_or(d.level0_stop_writes_trigger),
            max_write_buffer_number: w.max_write_buffer_number.unwrap_or(d.max_write_buffer_number),
            soft_pending_compaction_bytes: w.soft_pending_compaction_bytes.as_ref().map_or(d.soft_pending_compaction_bytes, |b| b.get()),
            hard_pending_compaction_bytes: w.hard_pending_compaction_bytes.as_ref().map_or(d.hard_pending_compaction_bytes, |b| b.get()),
            ..d
        });
    }
    scale_sizes(&mut cfg, k.scale);
    // The data directory: group 1 (the log's is 0).
    cfg.table_group = match k.lsm.file_groups.unwrap_or_default() {
        FileGroups::Directory => Some(1),
        FileGroups::Job => None,
    };
    cfg.read_ios = k.read_ios;
    cfg.capacity_bytes = capacity_bytes;
    if k.lsm.staging_namespace.is_some() {
        cfg.staging_levels = Some(k.lsm.staging_levels.unwrap_or(1));
    } else if k.lsm.staging_levels.is_some() {
        bail!("staging_levels needs a staging_namespace");
    }
    Ok(cfg)
}

/// A scaled run shrinks the store's sizes with the drive (memtable, tables, level targets, log
/// segments), so the tree has as many tables, tiers and levels over the namespace as at full
/// scale; every size stays whole file-system blocks and at least 16 of them.
fn scale_sizes(cfg: &mut LsmConfig, s: f64) {
    if s >= 1.0 {
        return;
    }
    let block = cfg.block_bytes as u64;
    let f = |b: u64| ((b as f64 * s) as u64 / block * block).max(16 * block);
    cfg.memtable_bytes = f(cfg.memtable_bytes);
    if cfg.log_segment_bytes > 0 {
        cfg.log_segment_bytes = f(cfg.log_segment_bytes);
    }
    if let Some(w) = &mut cfg.write_controller {
        w.soft_pending_compaction_bytes = f(w.soft_pending_compaction_bytes);
        w.hard_pending_compaction_bytes = f(w.hard_pending_compaction_bytes);
    }
    match &mut cfg.compaction {
        CompactionConfig::SizeTiered(t) => t.min_sstable_bytes = f(t.min_sstable_bytes),
        CompactionConfig::Leveled(l) => {
            l.max_bytes_for_level_base = f(l.max_bytes_for_level_base);
            l.target_file_bytes = f(l.target_file_bytes);
        }
        CompactionConfig::Universal(u) => u.target_file_bytes = f(u.target_file_bytes),
    }
}

/// The staging namespace `st` of store `k` on `target`: experiment namespace, I/O namespace and
/// bytes; refused when it is the store's own or on another drive.
pub(crate) fn staging_target(k: &KvSpec, st: &str, target: &Target) -> Result<(u32, u32, u64)> {
    if st == k.namespace {
        bail!("staging_namespace {st:?} is the store's own namespace; name another");
    }
    target.find(st).ok_or_else(|| anyhow!("staging_namespace {st:?} is on another drive: timed runs go drive by drive, so a store over two drives runs untimed (turn [timing] off)"))
}

/// The LSM store of `k` (entry `i`) on `target`, reading requests from `requests`.
pub fn lsm_part(k: &KvSpec, i: usize, target: &Target, requests: impl FnOnce(&LsmConfig, u64) -> Result<Box<dyn KvSource>>, parts: &mut Vec<Part>, group: u32) -> Result<()> {
    let ctx = || format!("[[phase.kv]] #{} on {}", i + 1, k.namespace);
    let Some((g, ns, ns_bytes)) = target.find(&k.namespace) else { return Ok(()) };
    let choice = FsChoice::of_kv(k, k.filesystem);
    let (main_fs, mut mkfs) = make_fs(&choice, target, g, ns, ns_bytes).with_context(ctx)?;
    let mut capacity = target.room(g, ns_bytes);
    let fs: Box<dyn FileSystem> = match &k.lsm.staging_namespace {
        None => main_fs,
        Some(st) => {
            let (sg, sns, sbytes) = staging_target(k, st, target).with_context(ctx)?;
            let staging = FsChoice { filesystem: FsKind::Conventional, ..choice };
            let (sfs, smkfs) = make_fs(&staging, target, sg, sns, sbytes).with_context(|| format!("{}: staging namespace {st:?}", ctx()))?;
            mkfs.extend(smkfs);
            capacity += target.room(sg, sbytes);
            Box::new(MediaClassFs::new(sfs, main_fs, CAPACITY_GROUP_BIT))
        }
    };
    let cfg = lsm_config(k, capacity).with_context(ctx)?;
    let limit = k.amount.as_ref().map(|a| a.of(target.room(g, ns_bytes)));
    let kv = requests(&cfg, capacity).with_context(ctx)?;
    let mean_io = cfg.write_bytes as f64;
    let what = match cfg.compaction {
        CompactionConfig::SizeTiered(_) => "size-tiered",
        CompactionConfig::Leveled(_) => "leveled",
        CompactionConfig::Universal(_) => "universal",
    };
    let store = Lsm::new(cfg).map_err(|e| anyhow!("{e}")).with_context(ctx)?;
    // The row carries every level: the clients' bytes (the store's figures), the store's file
    // bytes and the device bytes (the file system's), as FsSource composes them.
    let inner = Chain::new(vec![Box::new(Script::new(mkfs)), Box::new(FsSource::new(LsmFiles::new(kv, store).with_wait_for_compaction(k.lsm.wait_for_compaction.unwrap_or(false)), fs))]);
    let workload = if k.workload == KvWorkload::Tpcc { "tpcc".to_string() } else { format!("ycsb-{}", k.ycsb) };
    let label = Label { name: format!("kv{} (lsm {what}, {workload})", i + 1), namespace: k.namespace.clone() };
    let staged = if k.lsm.staging_namespace.is_some() { " + staging" } else { "" };
    parts.push(Part {
        source: budgeted(Box::new(inner), limit),
        weight: 1,
        label,
        timing: PartTiming { iodepth: k.iodepth.unwrap_or(8).max(1), mean_io_bytes: mean_io, ..Default::default() },
        group,
        stage: 0,
        row: Some(format!("LSM store ({what}) on {} file system{staged}", k.filesystem)),
    });
    Ok(())
}

/// Records that fill `share` of `bytes` with records of `record_bytes` of fields, as the
/// store keeps them (key and per-record overhead added).
pub fn records_for(cfg: &LsmConfig, bytes: u64, share: f64, record_bytes: u64) -> u64 {
    let per = record_bytes + cfg.key_bytes as u64 + cfg.record_overhead_bytes as u64;
    (bytes as f64 * share / per as f64) as u64
}
