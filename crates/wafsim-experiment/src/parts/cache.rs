//! `[[phase.kv]] store = "flash-cache"`: a CacheLib-like flash cache (wafsim_apps::flashcache)
//! on a raw namespace under CacheBench-like requests (wafsim_workload::cachegen). With FDP on
//! the drive and two placement handles on the namespace, the small-object engine (BigHash)
//! writes with placement handle 0 and the large-object engine (BlockCache) with handle 1, as
//! CacheLib does when FDP is enabled; `placement = false` turns that off.

use crate::parts::FsProbe;
use crate::parts::{ErrorSlots, Label, Part, PartTiming, Target};
use crate::schema::{size, KvSpec};
use anyhow::{anyhow, bail, Context, Result};
use std::sync::{Arc, Mutex};
use wafsim_apps::{CacheSize, FlashCache, FlashCacheConfig, FlashCacheReport, FlashCacheSource, RegionEviction};
use wafsim_core::{Io, Pid, Placement};
use wafsim_host::fs::FsReport;
use wafsim_workload::cachegen::{CacheGen, CacheGenConfig, Popularity};
use wafsim_core::pipeline::IoSource;

/// The cache's source: passes its counts to the results' row, stops once the cache wrote
/// `limit` device bytes, passes a refusal to the phase's error slots.
struct CachePart {
    inner: FlashCacheSource<CacheGen>,
    cache: Arc<Mutex<FlashCacheReport>>,
    out: Arc<Mutex<FsReport>>,
    limit: Option<u64>,
    done: bool,
    slot: Arc<Mutex<Option<String>>>,
}

impl IoSource for CachePart {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        if self.done {
            return 0;
        }
        let n = self.inner.fill(out, max);
        let c = self.cache.lock().expect("cache report");
        let written = c.counters.device_write_bytes();
        {
            let mut o = self.out.lock().expect("row");
            o.file_write_bytes = c.counters.inserted_object_bytes;
            o.dev_write_bytes = written;
            o.pending_write_bytes = c.pending_write_bytes;
            // Filling until every region has been reclaimed once: before that, evictions (and
            // the drive's view of region lifetimes) are not what they will be.
            o.warming = c.counters.blockcache.regions_reclaimed < self.inner.cache().layout().regions as u64;
            o.metrics = vec![
                ("hit ratio".into(), c.counters.hit_ratio()),
                ("BigHash hit ratio".into(), c.counters.bighash_hit_ratio()),
                ("BlockCache hit ratio".into(), c.counters.blockcache_hit_ratio()),
                ("BigHash share of device writes".into(), c.counters.bighash.write_bytes as f64 / written.max(1) as f64),
            ];
        }
        if self.limit.is_some_and(|l| written >= l) {
            self.done = true;
        }
        if n == 0 && c.error.is_some() {
            *self.slot.lock().expect("slot") = c.error.clone();
        }
        n
    }
}

/// `cache_size`: "50%", a fraction ("0.5") or bytes ("940GB").
fn cache_size(text: &str) -> Result<CacheSize> {
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| anyhow!("cache_size {text:?}: expected a percentage such as \"50%\""))?;
        return Ok(CacheSize::Fraction(v / 100.0));
    }
    if let Ok(v) = t.parse::<f64>() {
        if v <= 1.0 {
            return Ok(CacheSize::Fraction(v));
        }
    }
    Ok(CacheSize::Bytes(size("cache_size", t)?))
}

/// A scaled run shrinks the regions with the drive's erase units, so a region keeps its share
/// of an erase unit as far as the objects allow: never below 1 MiB (the largest default object
/// is 449 KiB) nor above Navy's 16 MiB.
fn scaled_region(region: u32, scale: f64) -> u32 {
    let r = (region as f64 * scale) as u32;
    r.clamp(1 << 20, region) / 4096 * 4096
}

/// The flash cache of `k` (entry `i`) on `target`.
#[allow(clippy::too_many_arguments)]
pub fn cache_part(k: &KvSpec, i: usize, target: &Target, seed: u64, parts: &mut Vec<Part>, errors: &mut ErrorSlots, probes: &mut Vec<FsProbe>, group: u32) -> Result<()> {
    let ctx = || format!("[[phase.kv]] #{} on {}", i + 1, k.namespace);
    let Some((g, ns, ns_bytes)) = target.find(&k.namespace) else { return Ok(()) };
    if target.zones_of(g).is_some() {
        bail!("{}: a flash cache writes its namespace in place; a zoned namespace cannot take it", ctx());
    }
    let fdp = matches!(target.cfg.placement, Placement::Fdp { .. });
    let handles = target.cfg.namespaces[g as usize].placement_handles.len();
    let placement = match k.placement {
        Some(true) if handles < 2 => bail!("{}: placement = true needs two placement handles on namespace {:?} (placement_handles = [0, 1])", ctx(), k.namespace),
        Some(p) => p,
        None => fdp && handles >= 2,
    };
    let mut cfg = FlashCacheConfig { ns, namespace_bytes: ns_bytes, trim_evicted_regions: k.trim, ..FlashCacheConfig::default() };
    if let Some(c) = &k.cache_size {
        cfg.cache_size = cache_size(c).with_context(ctx)?;
    }
    if let Some(p) = k.bighash_pct {
        cfg.bighash_pct = p;
    }
    cfg.region_bytes = scaled_region(cfg.region_bytes, k.scale);
    cfg.eviction = match k.region_eviction.as_deref() {
        None | Some("lru") => RegionEviction::Lru,
        Some("fifo") => RegionEviction::Fifo,
        Some(e) => bail!("{}: region_eviction {e:?}: expected \"lru\" or \"fifo\"", ctx()),
    };
    if placement {
        cfg.bighash_pid = Pid::new(0, 0);
        cfg.blockcache_pid = Pid::new(0, 1);
    }
    let cache = FlashCache::new(cfg).map_err(|e| anyhow!("{e}")).with_context(ctx)?;
    let cache_bytes = cache.layout().cache_bytes;
    let mut gen = CacheGenConfig::default().with_footprint((cache_bytes as f64 * k.footprint.unwrap_or(2.0)) as u64);
    if let Some(z) = k.zipf {
        gen.popularity = if z == 0.0 { Popularity::Uniform } else { Popularity::Zipfian { exponent: z } };
    }
    let limit = k.amount.as_deref().map(|a| crate::schema::amount_bytes(a, ns_bytes)).transpose().with_context(ctx)?;
    if limit.is_none() {
        gen.ops = Some(10_000_000);
    }
    let requests = CacheGen::try_new(&gen, seed).map_err(|e| anyhow!("{e}")).with_context(ctx)?;
    let (inner, report) = FlashCacheSource::new(requests, cache);
    let out = Arc::new(Mutex::new(FsReport::default()));
    let slot = Arc::new(Mutex::new(None));
    errors.0.push(slot.clone());
    let label = Label { name: format!("kv{} (flash cache{})", i + 1, if placement { ", engines on handles 0/1" } else { "" }), namespace: k.namespace.clone() };
    probes.push(FsProbe { label: label.clone(), filesystem: "flash cache".into(), report: out.clone() });
    parts.push(Part {
        source: Box::new(CachePart { inner, cache: report, out, limit, done: false, slot }),
        weight: 1,
        label,
        timing: PartTiming { iodepth: k.iodepth.unwrap_or(1).max(1), mean_io_bytes: 4096.0, ..Default::default() },
        group,
        stage: 0,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_and_regions() {
        assert_eq!(cache_size("50%").unwrap(), CacheSize::Fraction(0.5));
        assert_eq!(cache_size("1").unwrap(), CacheSize::Fraction(1.0));
        assert_eq!(cache_size("940GB").unwrap(), CacheSize::Bytes(940_000_000_000));
        assert!(cache_size("half").is_err());
        assert_eq!(scaled_region(16 << 20, 1.0), 16 << 20);
        assert_eq!(scaled_region(16 << 20, 0.25), 4 << 20);
        assert_eq!(scaled_region(16 << 20, 0.001), 1 << 20);
    }
}
