//! `[[phase.kv]]`: a key-value store (wafsim-apps) on one namespace, driven by a YCSB core
//! workload, as one source of a phase. The store starts empty at the start of the phase; its
//! report joins the file systems' rows (application bytes = field bytes of the records the
//! clients wrote, device bytes = what the store wrote), so results show its own write
//! amplification and the total from application to media.

use crate::parts::part::budgeted;
use crate::parts::{Label, Part, PartTiming, Target};
use crate::schema::{Duration, FsKind, KvPhases, KvSpec, KvStore, KvWorkload};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_apps::{LsKv, LsKvConfig, LsKvSource};
use wafsim_core::pipeline::KvSource;
use wafsim_workload::tpcc::{Tpcc, TpccConfig};
use wafsim_workload::ycsb::{Ycsb, YcsbConfig, YcsbPhases};

/// Default queue depth of a key-value workload in timed runs.
const DEFAULT_IODEPTH: u32 = 8;

/// Keys of the entry itself that some stores do not read, given to one of those: named. (A
/// store's own settings are in its sub-table, which the other stores leave alone.)
fn check_entry_keys(k: &KvSpec) -> Result<()> {
    use KvStore::{Hse, LogStructured, Lsm, WiredTiger};
    let readers: [(&str, bool, &[KvStore]); 5] = [
        ("rate", k.rate.is_some(), &[LogStructured, WiredTiger, Hse]),
        ("fill", k.fill.is_some(), &[LogStructured, Lsm, WiredTiger, Hse]),
        ("warehouses", k.warehouses.is_some(), &[LogStructured, Lsm]),
        // Only an engine that syncs its files and says its clock can sit on a page cache.
        ("fs.page_cache", k.fs.page_cache.is_some(), &[WiredTiger]),
        ("fs.writeback_expire", k.fs.writeback_expire.is_some(), &[WiredTiger]),
    ];
    for (field, set, stores) in readers {
        if set && !stores.contains(&k.store) {
            let of: Vec<String> = stores.iter().map(|s| format!("store = \"{s}\"")).collect();
            bail!("{field}: a setting of {}, not of store = \"{}\"", of.join(" or "), k.store);
        }
    }
    if k.filesystem != FsKind::Conventional && !k.store.chooses_file_system() {
        let of: Vec<String> = KvStore::ALL.iter().filter(|s| s.chooses_file_system()).map(|s| format!("store = \"{s}\"")).collect();
        bail!("filesystem: a setting of {}, not of store = \"{}\"", of.join(" or "), k.store);
    }
    if k.store == KvStore::FlashCache && k.workload == KvWorkload::Tpcc {
        bail!("workload \"{}\": a flash cache runs the CacheBench-like generator (workload = \"cachebench\", the default for this store)", k.workload);
    }
    Ok(())
}

/// The YCSB configuration of `k`: the core workload's properties, then `ycsb_properties`.
fn ycsb_config(k: &KvSpec) -> Result<YcsbConfig> {
    let mut letters = k.ycsb.chars();
    let (Some(letter), None) = (letters.next(), letters.next()) else {
        bail!("ycsb {:?}: expected one of the core workloads a, b, c, d, e, f", k.ycsb);
    };
    let mut cfg = YcsbConfig::try_workload(letter.to_ascii_lowercase()).ok_or_else(|| anyhow!("ycsb {:?}: expected one of the core workloads a to f", k.ycsb))?;
    for (name, v) in &k.ycsb_properties {
        let text = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => bail!("ycsb_properties.{name}: {other} is not a string, number or boolean"),
        };
        cfg.set(name, &text).map_err(|e| anyhow!("ycsb_properties.{name}: {e}"))?;
    }
    Ok(cfg)
}

/// The parts of `[[phase.kv]]` entries on `target`.
pub fn kv_parts(
    kvs: &[KvSpec],
    target: &Target,
    base_dir: &std::path::Path,
    seed: impl Fn(usize, u32) -> u64,
    parts: &mut Vec<Part>,
    notes: &mut Vec<String>,
    mut next_group: impl FnMut() -> u32,
) -> Result<()> {
    for (i, k) in kvs.iter().enumerate() {
        let ctx = || format!("[[phase.kv]] #{} on {}", i + 1, k.namespace);
        let Some((g, ns, ns_bytes)) = target.find(&k.namespace) else { continue };
        check_entry_keys(k).with_context(ctx)?;
        match k.store {
            KvStore::LogStructured => {}
            KvStore::Lsm => {
                let requests = |cfg: &wafsim_apps::lsm::LsmConfig, capacity: u64| -> Result<Box<dyn KvSource>> {
                    let records = |share: f64, record_bytes: u64| crate::parts::lsm::records_for(cfg, capacity, share, record_bytes);
                    requests(k, k.amount.is_some(), seed(i, g), capacity, records)
                };
                crate::parts::lsm::lsm_part(k, i, target, requests, parts, next_group())?;
                continue;
            }
            KvStore::FlashCache => {
                crate::parts::cache::cache_part(k, i, target, base_dir, seed(i, g), parts, next_group())?;
                continue;
            }
            KvStore::Hse => {
                let requests = |records: &dyn Fn(f64, u64) -> u64, capacity: u64| requests(k, k.amount.is_some(), seed(i, g), capacity, records);
                crate::parts::hse::hse_part(k, i, target, requests, parts, next_group())?;
                continue;
            }
            KvStore::WiredTiger => {
                let requests = |records: &dyn Fn(f64, u64) -> u64, capacity: u64| requests(k, k.amount.is_some(), seed(i, g), capacity, records);
                crate::parts::wiredtiger::wiredtiger_part(k, i, target, requests, parts, next_group())?;
                continue;
            }
        }
        let cfg = log_structured_config(k, ns, ns_bytes, target.cfg.erase_unit_bytes, notes).with_context(ctx)?;
        let wb = cfg.write_block_bytes;
        let store = LsKv::new(cfg)
            .map_err(|e| anyhow!("{e} (the namespace holds {ns_bytes} bytes in this run, {wb}-byte write blocks: a scaled run shrinks the namespace, not the write blocks; give a smaller write_block or a larger --scale)"))
            .with_context(ctx)?;
        let limit = k.amount.as_ref().map(|a| a.of(ns_bytes));
        let records = |share: f64, record_bytes: u64| (store.records_per_block(record_bytes as u32) as f64 * store.data_blocks() as f64 * share) as u64;
        let until = k.log_structured.runtime.as_ref().map(|r| runtime_ns(r, k.scale)).transpose().with_context(ctx)?;
        let requests = requests(k, limit.is_some() || until.is_some(), seed(i, g), ns_bytes, records).with_context(ctx)?;
        let mean_io = store.config().write_block_bytes as f64;
        // The store's row: the clients' record bytes over what it wrote to its namespace.
        let mut store_source = LsKvSource::new(requests, store);
        match until {
            Some(ns) => store_source = store_source.until(ns),
            // An amount the store would never write (it refuses every write for good) is an error.
            None if limit.is_some() => store_source = store_source.fail_when_stuck(),
            None => {}
        }
        let source = budgeted(Box::new(store_source), limit);
        let what = if k.workload == KvWorkload::Tpcc { "tpcc".to_string() } else { format!("ycsb-{}", k.ycsb) };
        let label = Label { name: format!("kv{} (log-structured, {what})", i + 1), namespace: k.namespace.clone() };
        parts.push(Part {
            source,
            weight: 1,
            label,
            timing: PartTiming { iodepth: k.iodepth.unwrap_or(DEFAULT_IODEPTH).max(1), mean_io_bytes: mean_io, ..Default::default() },
            group: next_group(),
            stage: 0,
            row: Some("log-structured KV".into()),
        });
    }
    Ok(())
}

/// A log-structured store's configuration from `k` on a namespace of `ns_bytes`, on a drive
/// with erase units of `erase_unit` bytes (this run's). A scaled run keeps the write blocks,
/// the clients' rate, `defrag-sleep` and `flush-max-ms` (their ratios to one another set
/// whether defrag keeps up and whether blocks are flushed partly), and shrinks what is a share
/// of the namespace with it: the header, the post-write queue, and the stop-writes evaluation
/// period (the free space a store uses up between two evaluations). What cannot keep its
/// full-scale proportion is said in `notes`.
fn log_structured_config(k: &KvSpec, ns: u32, ns_bytes: u64, erase_unit: u64, notes: &mut Vec<String>) -> Result<LsKvConfig> {
    let mut cfg = LsKvConfig { ns, device_bytes: ns_bytes, trim_freed_blocks: k.log_structured.trim, read_ios: k.read_ios, ..LsKvConfig::default() };
    if let Some(w) = &k.log_structured.write_block {
        let b = w.get();
        if b == 0 || b > u32::MAX as u64 {
            bail!("write_block {w:?}: expected a size up to 2 GiB");
        }
        cfg.write_block_bytes = b as u32;
    }
    if let Some(l) = k.log_structured.defrag_lwm {
        cfg.defrag_lwm_pct = l;
    }
    if let Some(r) = k.rate {
        if !(r > 0.0 && r.is_finite()) {
            bail!("rate {r}: expected client requests per second, a positive number");
        }
        cfg.client_ops_per_sec = r;
    }
    if let Some(d) = &k.log_structured.defrag_sleep {
        cfg.defrag_sleep_us = u32::try_from(d.ns() / 1000).map_err(|_| anyhow!("defrag_sleep {:?}: at most 4294 s", d.text()))?;
    }
    if let Some(f) = k.log_structured.flush_max_ms {
        cfg.flush_max_ms = f;
    }
    for (name, v, slot) in [("stop_writes_avail_pct", k.log_structured.stop_writes_avail_pct, &mut cfg.stop_writes_avail_pct), ("stop_writes_used_pct", k.log_structured.stop_writes_used_pct, &mut cfg.stop_writes_used_pct)] {
        if let Some(p) = v {
            if p > 100 {
                bail!("{name} {p}: expected a percent, 0 to 100");
            }
            *slot = p;
        }
    }
    if let Some(b) = &k.log_structured.device_write_bw {
        let bw = b.get();
        if bw == 0 {
            bail!("device_write_bw {:?}: expected bytes per second, e.g. \"400MB\" (leave it out for a drive that takes writes at once)", b.text());
        }
        cfg.device_write_bytes_per_sec = bw as f64;
    }
    if let Some(c) = &k.log_structured.max_write_cache {
        cfg.max_write_cache_bytes = c.get();
    }
    if k.log_structured.max_write_cache.is_some() && k.log_structured.device_write_bw.is_none() {
        notes.push(format!("store on {}: max_write_cache acts only with device_write_bw (without it the drive takes writes at once and nothing queues)", k.namespace));
    }
    let s = k.scale;
    let wbs = cfg.write_block_bytes as u64;
    let pwq = k.log_structured.post_write_queue.unwrap_or(cfg.post_write_queue_blocks);
    cfg.post_write_queue_blocks = if pwq == 0 { 0 } else { ((pwq as f64 * s).round() as u32).max(1) };
    cfg.header_bytes = (((cfg.header_bytes as f64 * s) as u64).div_ceil(wbs) * wbs).max(wbs);
    cfg.stop_writes_period_ms = ((cfg.stop_writes_period_ms as f64 * s).round() as u32).max(1);
    if s < 1.0 {
        let blocks = ns_bytes / wbs;
        let per_eu = erase_unit as f64 / wbs as f64;
        notes.push(format!(
            "scaled store on {} ({} write blocks of {}): {:.1} write blocks per erase unit (full scale about {:.0}); the defrag reserve keeps {} blocks ({:.3}% of the blocks; a negligible share at full scale); the post-write queue keeps {} blocks, the header {} block(s) and stop-writes is evaluated every {} ms, each scaled with the namespace",
            k.namespace,
            blocks,
            wafsim_core::units::human(wbs),
            per_eu,
            per_eu / s,
            cfg.defrag_reserve_blocks,
            cfg.defrag_reserve_blocks as f64 * 100.0 / blocks.max(1) as f64,
            cfg.post_write_queue_blocks,
            cfg.header_bytes / wbs,
            cfg.stop_writes_period_ms
        ));
    }
    Ok(cfg)
}

/// A store's `runtime` at `scale`, in ns.
fn runtime_ns(r: &Duration, scale: f64) -> Result<u64> {
    let ns = r.ns();
    if ns == 0 {
        bail!("runtime {:?}: expected a positive duration, e.g. \"10h\"", r.text());
    }
    Ok(((ns as f64 * scale) as u64).max(1))
}

/// The request generator of `k`: YCSB (`fill` sets the record count through `records(share,
/// record bytes)`) or TPC-C (`fill` sets the warehouses by the store's `capacity`). With `limited`, the store's writes end the run, not the generator.
fn requests(k: &KvSpec, limited: bool, seed: u64, capacity: u64, records: impl Fn(f64, u64) -> u64) -> Result<Box<dyn KvSource>> {
    Ok(match k.workload {
        KvWorkload::Ycsb => Box::new(ycsb_source(k, limited, seed, records)?),
        KvWorkload::Tpcc => {
            let warehouses = match (k.warehouses, k.fill) {
                (Some(_), Some(_)) => bail!("give warehouses or fill, not both"),
                (Some(w), None) => w,
                // The initial population takes `fill` of the store's space.
                (None, Some(f)) if f > 0.0 && f < 1.0 => {
                    let per = wafsim_workload::tpcc::initial_bytes(2) - wafsim_workload::tpcc::initial_bytes(1);
                    (((capacity as f64 * f) as u64).saturating_sub(wafsim_workload::tpcc::initial_bytes(0)) / per).max(1)
                }
                (None, Some(f)) => bail!("fill {f}: expected a share of the namespace between 0 and 1"),
                (None, None) => 1,
            };
            let cfg = TpccConfig {
                warehouses,
                transactions: if limited { None } else { Some(100_000) },
                load: k.phases != KvPhases::Run,
                ..TpccConfig::default()
            };
            Box::new(Tpcc::new(cfg, seed).map_err(|e| anyhow!("{e}"))?)
        }
        w @ KvWorkload::Cachebench => bail!("workload \"{w}\": expected \"ycsb\" or \"tpcc\""),
    })
}

/// The YCSB source of `k`.
fn ycsb_source(k: &KvSpec, limited: bool, seed: u64, records: impl Fn(f64, u64) -> u64) -> Result<Ycsb> {
    let mut y = ycsb_config(k)?;
    if let Some(f) = k.fill {
        if !(f > 0.0 && f < 1.0) {
            bail!("fill {f}: expected a share of the namespace between 0 and 1");
        }
        y.recordcount = records(f, y.record_bytes() as u64);
    }
    let phases = match k.phases {
        KvPhases::Load => YcsbPhases::Load,
        KvPhases::Run => YcsbPhases::Run,
        KvPhases::LoadAndRun => YcsbPhases::LoadAndRun,
    };
    let ycsb = Ycsb::try_new(&y, phases, seed).map_err(|e| anyhow!("{e}"))?;
    // With `amount`, the store's writes end the run (see `Budget`); the generator does not stop.
    Ok(if limited { ycsb.with_byte_budget(u64::MAX) } else { ycsb })
}
