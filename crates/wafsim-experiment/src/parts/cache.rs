//! `[[phase.kv]] store = "flash-cache"`: a CacheLib-like flash cache (wafsim_apps::flashcache)
//! on a raw namespace under CacheBench-like requests (wafsim_workload::cachegen). With FDP on
//! the drive and two placement handles on the namespace, the small-object engine (BigHash)
//! writes with placement handle 0 and the large-object engine (BlockCache) with handle 1, as
//! CacheLib does when FDP is enabled; `placement = false` turns that off.

use crate::parts::part::budgeted;
use crate::parts::{Label, Part, PartTiming, Target};
use crate::schema::{size, KvSpec, RegionOrder};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_apps::{CacheSize, FlashCache, FlashCacheConfig, FlashCacheSource, RegionEviction};
use wafsim_core::{Pid, Placement};
use wafsim_workload::cachegen::{CacheGen, CacheGenConfig, Popularity};

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
pub fn cache_part(k: &KvSpec, i: usize, target: &Target, seed: u64, parts: &mut Vec<Part>, group: u32) -> Result<()> {
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
    cfg.eviction = match k.region_eviction.unwrap_or_default() {
        RegionOrder::Lru => RegionEviction::Lru,
        RegionOrder::Fifo => RegionEviction::Fifo,
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
    // The cache's row: objects inserted over what it wrote, its hit ratios, warming until its
    // log has wrapped (the cache's own figures).
    let source = budgeted(Box::new(FlashCacheSource::new(requests, cache)), limit);
    let label = Label { name: format!("kv{} (flash cache{})", i + 1, if placement { ", engines on handles 0/1" } else { "" }), namespace: k.namespace.clone() };
    parts.push(Part {
        source,
        weight: 1,
        label,
        timing: PartTiming { iodepth: k.iodepth.unwrap_or(1).max(1), mean_io_bytes: 4096.0, ..Default::default() },
        group,
        stage: 0,
        row: Some("flash cache".into()),
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
