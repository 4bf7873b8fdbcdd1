//! `[[phase.kv]] store = "wiredtiger"`: a WiredTiger-like engine (wafsim_apps::wiredtiger) on a
//! conventional file system on one namespace. Requests -> engine (a collection and its `_id`
//! index written copy-on-write at checkpoints and by eviction, the journal) -> file operations
//! -> file system -> block I/O; the row carries the documents' bytes, the engine's file bytes
//! and the device bytes.

use crate::parts::files::{make_fs, FsChoice};
use crate::parts::part::budgeted;
use crate::parts::{Label, Part, PartTiming, Target};
use crate::schema::{FsKind, KvSpec, KvWorkload, Share, ShareOf};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_apps::wiredtiger::{Layout, WiredTiger, WtConfig, WtFiles};
use wafsim_core::pipeline::{Chain, KvSource, Script};
use wafsim_host::fs::page_cache::DEFAULT_EXPIRE_NS;
use wafsim_host::fs::{FsSource, PageCache};

/// The engine's configuration from `k` on a namespace of `ns_bytes`.
fn wt_config(k: &KvSpec, ns_bytes: u64) -> Result<WtConfig> {
    let mut cfg = WtConfig::default();
    store_clock(k, &mut cfg.ops_per_sec, &mut cfg.journal_flush_ms)?;
    if let Some(c) = k.wiredtiger.compression {
        if !(c > 0.0 && c <= 1.0) {
            bail!("compression {c}: expected compressed over raw bytes, above 0 and at most 1");
        }
        cfg.compression_ratio = c;
    }
    cfg.journal = k.wiredtiger.journal.unwrap_or(true);
    // A scaled run's journal files shrink with the namespace: a removed file's blocks stay
    // mapped on the drive (no trim) until the file system reuses them, so a full-size file
    // would hold the scale's inverse more of the namespace than at full scale.
    let s = k.scale.min(1.0);
    cfg.journal_file_bytes = ((cfg.journal_file_bytes as f64 * s) as u64).max(cfg.fs_block_bytes);
    cfg.cache_bytes = match k.wiredtiger.wt_cache.as_ref() {
        None => ns_bytes / 20,
        Some(c) => bytes_or_share("wt_cache", c, ns_bytes)?,
    };
    if k.workload == KvWorkload::Tpcc {
        cfg.layout = Layout::Tpcc;
    }
    if k.wiredtiger.replica_set.unwrap_or(k.workload == KvWorkload::Tpcc) {
        cfg.oplog_bytes = Some(match k.wiredtiger.oplog_size.as_ref() {
            // MongoDB's default (WiredTiger on Linux): 5% of free space at first start, within
            // 990 MB and 50 GB.
            None => {
                ((ns_bytes as f64 * 0.05) as u64).clamp((990e6 * s) as u64, (50e9 * s) as u64)
            }
            Some(o) => bytes_or_share("oplog_size", o, ns_bytes)?,
        });
        if cfg.oplog_bytes == Some(0) {
            bail!("oplog_size: the oplog must hold at least one byte");
        }
    } else if k.wiredtiger.oplog_size.is_some() {
        bail!("oplog_size: a replica set's setting (replica_set = true)");
    }
    if cfg.cache_bytes == 0 {
        bail!("wt_cache: the cache must hold at least one byte");
    }
    Ok(cfg)
}

/// A clocked store's request rate and log sync period (ms) from `k`: `rate` if given, then
/// scaled. A scaled run has the scale's share of the documents and of the requests, so the clock
/// runs at the scale's share of the rate: a checkpoint covers the same share of the database as
/// at full scale and the run lasts as long in model time. A log sync (WiredTiger's journal,
/// HSE's c1) writes whole blocks or strips, so its period stretches by the scale's inverse: it
/// syncs as many requests as at full scale, or its rewritten tail would weigh more.
pub(crate) fn store_clock(k: &KvSpec, ops_per_sec: &mut f64, sync_ms: &mut u32) -> Result<()> {
    if let Some(r) = k.rate {
        if !(r > 0.0 && r.is_finite()) {
            bail!("rate {r}: expected requests per second, a positive number");
        }
        *ops_per_sec = r;
    }
    let s = k.scale.min(1.0);
    *ops_per_sec *= s;
    *sync_ms = (*sync_ms as f64 / s).round() as u32;
    Ok(())
}

/// The file system in a row's words.
fn fs_name(f: FsKind) -> &'static str {
    match f {
        FsKind::Conventional => "conventional file system",
        FsKind::Zoned => "zoned file system",
        FsKind::Btrfs => "Btrfs-like file system",
    }
}

/// `share` of `ns_bytes`, for the setting `name`: a share (a percentage or a fraction) above 0
/// and at most all of it, or bytes.
fn bytes_or_share(name: &str, share: &Share, ns_bytes: u64) -> Result<u64> {
    let part = match *share.value() {
        ShareOf::Bytes(_) => None,
        ShareOf::Percent(p) => Some(p / 100.0),
        ShareOf::Fraction(f) => Some(f),
    };
    if part.is_some_and(|f| !(f > 0.0 && f <= 1.0)) {
        bail!("{name} {share:?}: a share of the namespace above 0% and at most 100%");
    }
    Ok(share.of(ns_bytes))
}

/// Records that fill `share` of `bytes` once compressed: documents of `record_bytes` of fields
/// and the engine's per-document bytes, at the compression ratio, in leaves filled to 90%.
fn records_for(cfg: &WtConfig, bytes: u64, share: f64, record_bytes: u64) -> u64 {
    let per = (record_bytes + cfg.doc_overhead_bytes as u64) as f64 * cfg.compression_ratio / 0.9;
    (bytes as f64 * share / per) as u64
}

/// The engine of `k` (entry `i`) on `target`, reading requests from `requests` (given the
/// configuration and its record count rule).
pub fn wiredtiger_part(k: &KvSpec, i: usize, target: &Target, requests: impl FnOnce(&dyn Fn(f64, u64) -> u64, u64) -> Result<Box<dyn KvSource>>, parts: &mut Vec<Part>, group: u32) -> Result<()> {
    let ctx = || format!("[[phase.kv]] #{} on {}", i + 1, k.namespace);
    let Some((g, ns, ns_bytes)) = target.find(&k.namespace) else { return Ok(()) };
    let choice = FsChoice::of_kv(k, k.filesystem);
    let (fs, mkfs) = make_fs(&choice, target, g, ns, ns_bytes).with_context(ctx)?;
    let room = target.room(g, ns_bytes);
    let cfg = wt_config(k, room).with_context(ctx)?;
    let limit = k.amount.as_ref().map(|a| a.of(room));
    let records = |share: f64, record_bytes: u64| records_for(&cfg, room, share, record_bytes);
    let kv = requests(&records, room).with_context(ctx)?;
    let journal = match (cfg.journal, cfg.oplog_bytes.is_some()) {
        (false, _) => "no journal",
        (true, false) => "journaled",
        (true, true) => "replica set, oplog journaled",
    };
    let wt = WiredTiger::new(cfg).map_err(|e| anyhow!("{e}")).with_context(ctx)?;
    let files = WtFiles::new(kv, wt);
    let below: Box<dyn wafsim_core::pipeline::IoSource + Send> = if k.fs.page_cache.unwrap_or(true) {
        let expire = match k.fs.writeback_expire.as_ref() {
            None => Some(DEFAULT_EXPIRE_NS),
            Some(e) => e.given().map(|d| d.ns()),
        };
        if expire == Some(0) {
            bail!("{}: writeback_expire = \"0\": a duration above 0, or \"none\"", ctx());
        }
        Box::new(FsSource::new(PageCache::new(files, expire), fs))
    } else {
        if k.fs.writeback_expire.is_some() {
            bail!("{}: writeback_expire is the page cache's (page_cache = false)", ctx());
        }
        Box::new(FsSource::new(files, fs))
    };
    let inner = Chain::new(vec![Box::new(Script::new(mkfs)), below]);
    let workload = if k.workload == KvWorkload::Tpcc { "tpcc".to_string() } else { format!("ycsb-{}", k.ycsb) };
    parts.push(Part {
        source: budgeted(Box::new(inner), limit),
        weight: 1,
        label: Label { name: format!("kv{} (wiredtiger, {workload})", i + 1), namespace: k.namespace.clone() },
        timing: PartTiming { iodepth: k.iodepth.unwrap_or(8).max(1), mean_io_bytes: 32768.0, ..Default::default() },
        group,
        stage: 0,
        row: Some(format!("WiredTiger ({journal}) on {}", fs_name(k.filesystem))),
    });
    Ok(())
}
