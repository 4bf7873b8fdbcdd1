//! `[[phase.kv]] store = "hse"`: an HSE 1.x-like engine (wafsim_apps::hse) under MongoDB
//! (hse-mongo: documents in MainKvs under 12-byte keys). HSE 1.x keeps its media blocks in an
//! mpool on raw devices: the capacity class on the store's namespace and, with
//! `staging_namespace`, the staging class on another (one mpool, two media classes; blocks go
//! where the `mclass_policy` table says, the c1 log to staging whenever it exists). On a
//! conventional namespace the mpool places 32 MiB objects first fit in four regions and
//! discards each deleted one (wafsim_host::fs::mpool). mpool has no zoned support: on a zoned
//! namespace the objects go through the zone-aware log-structured file system instead, one
//! zone stream per kind of block (role and keys or values), with its host GC: how mblocks were
//! mapped onto zones in the published run is not known, and this is an assumption
//! (docs/model.md, "HSE-like engine").

use crate::parts::files::{make_fs, FsChoice};
use crate::parts::part::budgeted;
use crate::parts::{Label, Part, PartTiming, Target};
use crate::schema::{FsKind, KvSpec, KvWorkload};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_apps::hse::policy::HSE_CAPACITY_BIT;
use wafsim_apps::{Hse, HseConfig, HseFiles, MclassPolicy};
use wafsim_core::pipeline::{Chain, KvSource, Script};
use wafsim_core::Io;
use wafsim_host::fs::{FileSystem, FsSource, MediaClassFs, MpoolConfig, MpoolFs};

/// The engine's configuration from `k`, its sizes scaled with the run.
fn hse_config(k: &KvSpec, staging: bool) -> Result<HseConfig> {
    let mut cfg = HseConfig::default();
    crate::parts::wiredtiger::store_clock(k, &mut cfg.ops_per_sec, &mut cfg.dur_intvl_ms)?;
    if let Some(p) = k.hse.mclass_policy {
        cfg.policy = p;
        if !staging && cfg.policy != MclassPolicy::CapacityOnly {
            // HSE forces capacity_only when the mpool has no staging class (cn_open).
            bail!("mclass_policy \"{}\" needs a staging class: give staging_namespace", p.name());
        }
    }
    cfg.staging = staging;
    let div = if k.scale < 1.0 { (1.0 / k.scale).round() as u64 } else { 1 };
    let cfg = cfg.scaled(div);
    cfg.validate().map_err(|e| anyhow!("{e} (at scale 1/{div})"))?;
    Ok(cfg)
}

/// An mpool media class on a conventional namespace, objects the engine's mblock size.
fn mpool(ns: u32, bytes: u64, mblock: u64) -> Result<Box<dyn FileSystem>> {
    let fs = MpoolFs::new(MpoolConfig { zone_bytes: mblock, ..MpoolConfig::new(ns, bytes) }).map_err(|e| anyhow!("{e}"))?;
    Ok(Box::new(fs))
}

/// The class's file system on namespace `g`: mpool on a conventional one; the zone-aware file
/// system on a zoned one (zones reset at mkfs).
fn class_fs(k: &KvSpec, target: &Target, g: u32, ns: u32, bytes: u64, mblock: u64) -> Result<(Box<dyn FileSystem>, Vec<Io>)> {
    if target.zones_of(g).is_some() {
        make_fs(&FsChoice::of_kv(k, FsKind::Zoned), target, g, ns, bytes)
    } else {
        Ok((mpool(ns, bytes, mblock)?, Vec::new()))
    }
}

/// Records that fill `share` of `bytes`: documents of `record_bytes` of fields with MongoDB's
/// per-document bytes, their 12-byte key and the kblock's bytes per key.
fn records_for(cfg: &HseConfig, bytes: u64, share: f64, record_bytes: u64) -> u64 {
    let per = record_bytes + cfg.doc_overhead_bytes as u64 + cfg.key_bytes as u64 + cfg.kblock_entry_overhead_bytes as u64;
    (bytes as f64 * share / per as f64) as u64
}

/// The engine of `k` (entry `i`) on `target`, reading requests from `requests`.
pub fn hse_part(k: &KvSpec, i: usize, target: &Target, requests: impl FnOnce(&dyn Fn(f64, u64) -> u64, u64) -> Result<Box<dyn KvSource>>, parts: &mut Vec<Part>, group: u32) -> Result<()> {
    let ctx = || format!("[[phase.kv]] #{} on {}", i + 1, k.namespace);
    let Some((g, ns, ns_bytes)) = target.find(&k.namespace) else { return Ok(()) };
    let cfg = hse_config(k, k.hse.staging_namespace.is_some()).with_context(ctx)?;
    let (cap_fs, mut mkfs) = class_fs(k, target, g, ns, ns_bytes, cfg.mblock_bytes).with_context(ctx)?;
    let room = target.room(g, ns_bytes);
    let zoned = target.zones_of(g).is_some();
    let fs: Box<dyn FileSystem> = match &k.hse.staging_namespace {
        None => cap_fs,
        Some(st) => {
            let (sg, sns, sbytes) = crate::parts::lsm::staging_target(k, st, target).with_context(ctx)?;
            if target.zones_of(sg).is_some() {
                bail!("{}: staging_namespace {st:?} is zoned: the staging class is an mpool on a conventional drive", ctx());
            }
            let (sfs, smkfs) = class_fs(k, target, sg, sns, sbytes, cfg.mblock_bytes).with_context(|| format!("{}: staging namespace {st:?}", ctx()))?;
            mkfs.extend(smkfs);
            Box::new(MediaClassFs::new(sfs, cap_fs, HSE_CAPACITY_BIT))
        }
    };
    let limit = k.amount.as_ref().map(|a| a.of(room));
    let records = |share: f64, record_bytes: u64| records_for(&cfg, room, share, record_bytes);
    let kv = requests(&records, room).with_context(ctx)?;
    let policy = cfg.policy.name();
    let mblock = cfg.mblock_bytes;
    let hse = Hse::new(cfg).map_err(|e| anyhow!("{e}")).with_context(ctx)?;
    let inner = Chain::new(vec![Box::new(Script::new(mkfs)), Box::new(FsSource::new(HseFiles::new(kv, hse), fs))]);
    let workload = if k.workload == KvWorkload::Tpcc { "tpcc".to_string() } else { format!("ycsb-{}", k.ycsb) };
    let under = if zoned { "zoned file system" } else { "mpool" };
    let staged = if k.hse.staging_namespace.is_some() { " + staging" } else { "" };
    parts.push(Part {
        source: budgeted(Box::new(inner), limit),
        weight: 1,
        label: Label { name: format!("kv{} (hse, {workload})", i + 1), namespace: k.namespace.clone() },
        timing: PartTiming { iodepth: k.iodepth.unwrap_or(8).max(1), mean_io_bytes: (mblock as f64).min(1048576.0), ..Default::default() },
        group,
        stage: 0,
        row: Some(format!("HSE ({policy}) on {under}{staged}")),
    });
    Ok(())
}
