//! `[[phase.kv]] store = "flash-cache"`: a CacheLib-like flash cache (wafsim_apps::flashcache)
//! on a raw namespace, under requests shaped like Meta's kvcache traces
//! (wafsim_workload::cachegen), CacheBench's flat_kvcache_reg generator, or a replayed
//! CacheBench kvcache trace (wafsim_workload::kvtrace).
//!
//! Defaults are the published CacheLib FDP setup (CacheLib issue 302): FIFO region eviction,
//! hits reinsertion at 1, retention admission at 7200 s, a DRAM cache of 43,000 MiB per
//! 952,320 MiB of flash cache, no look-aside insert (CacheBench's trace replay default).
//!
//! Placement: Navy gives each engine its own placement handle in creation order, BigHash
//! first, and keeps handle index 0 as the default (metadata, and every engine once the
//! namespace's handles run out; `navy/common/FdpNvme.cpp` `allocateFdpHandle`,
//! `navy/Factory.cpp` `EnginePairProtoImpl::create`). Navy's handle index i is index i of the
//! namespace's `placement_handles` list (the namespace's RUH status list): with three or more
//! handles (the FDP guide's recipe makes four) BigHash writes with index 1 and BlockCache with
//! index 2; with two, BigHash 1 and BlockCache 0 (shared with the default); with one, both 0.
//! This is on when the drive has FDP on and the namespace at least two handles, or with
//! `placement = true`; `placement = false` sends no directives.
//!
//! Time: the DRAM LRU's refresh (60 s) and the admission threshold are seconds of simulated
//! time, one request per 1 / `ops_per_sec`; a scaled run multiplies `ops_per_sec` by the scale,
//! because the caches (and the key population) shrink with it and so turn over that much
//! faster per request: an item's DRAM eviction age in seconds is then what it is at full scale.

use crate::parts::part::budgeted;
use crate::parts::{Label, Part, PartTiming, Target};
use crate::schema::{KvSpec, RegionOrder, Share, ShareOf};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_apps::flashcache::PUBLISHED_DRAM_SHARE;
use wafsim_apps::{CacheSize, FlashCache, FlashCacheConfig, FlashCacheSource, RegionEviction};
use wafsim_core::pipeline::KvSource;
use wafsim_core::{Pid, Placement};
use wafsim_workload::cachegen::{CacheGen, CacheGenConfig, Popularity};

/// Navy's region size (`NavyConfig.h` `regionSize_`).
const NAVY_REGION: u32 = 16 << 20;

/// The published setup's request rate (`opRatePerSec`, CacheLib issue 302).
const PUBLISHED_OPS_PER_SEC: f64 = 550_000.0;

/// The key population's objects over the flash cache, by default, for kvcache-shaped requests:
/// the kvcache_202206 traces' working set (24.9 GiB, third-party analysis) over the per-host
/// SSD the CacheBench docs give for them scaled by their traffic factor (930 GB / 100): 2.9.
const KVCACHE_FOOTPRINT: f64 = 2.9;

/// `cache_size`: "50%", a fraction ("0.5") or bytes ("940GB").
fn cache_size(c: &Share) -> CacheSize {
    match *c.value() {
        ShareOf::Percent(p) => CacheSize::Fraction(p / 100.0),
        ShareOf::Fraction(f) => CacheSize::Fraction(f),
        ShareOf::Bytes(b) => CacheSize::Bytes(b),
    }
}

/// A scaled run shrinks the regions with the drive's erase units, so a region keeps its share
/// of an erase unit as far as the objects allow: never below 1 MiB (objects reach 511 KiB) nor
/// above Navy's 16 MiB.
fn scaled_region(region: u32, scale: f64) -> u32 {
    let r = (region as f64 * scale) as u32;
    r.clamp(1 << 20, region) / 4096 * 4096
}

/// The write piece of a scaled run: `piece` times the scale, in whole 4 KiB blocks, at least one.
fn scaled_piece(piece: u32, scale: f64) -> u32 {
    (((piece as f64 * scale) as u32) / 4096 * 4096).clamp(4096, piece)
}

/// Navy's placement handle indexes (BigHash, BlockCache) on a namespace with `handles`.
fn navy_handles(handles: usize) -> (u16, u16) {
    let idx = |i: usize| if i < handles { i as u16 } else { 0 };
    (idx(1), idx(2))
}

/// The flash cache of `k` (entry `i`) on `target`.
#[allow(clippy::too_many_arguments)]
pub fn cache_part(k: &KvSpec, i: usize, target: &Target, base_dir: &std::path::Path, seed: u64, parts: &mut Vec<Part>, group: u32) -> Result<()> {
    let ctx = || format!("[[phase.kv]] #{} on {}", i + 1, k.namespace);
    let Some((g, ns, ns_bytes)) = target.find(&k.namespace) else { return Ok(()) };
    if target.zones_of(g).is_some() {
        bail!("{}: a flash cache writes its namespace in place; a zoned namespace cannot take it", ctx());
    }
    let fdp = matches!(target.cfg.placement, Placement::Fdp { .. });
    let handles = target.cfg.namespaces[g as usize].placement_handles.len();
    let placement = match k.flash_cache.placement {
        Some(true) if handles < 2 => bail!("{}: placement = true needs at least two placement handles on namespace {:?} (placement_handles = [0, 1, 2]: Navy keeps index 0 as the default, BigHash takes 1, BlockCache 2)", ctx(), k.namespace),
        Some(p) => p,
        None => fdp && handles >= 2,
    };
    let flat = k.flash_cache.requests.unwrap_or_default() == crate::schema::CacheRequests::FlatKvcache;
    if k.flash_cache.trace.is_some() && (k.flash_cache.requests.is_some() || k.flash_cache.zipf.is_some() || k.flash_cache.footprint.is_some()) {
        bail!("{}: trace replays a file; requests, zipf and footprint shape generated requests: give one or the other", ctx());
    }
    let mut cfg = FlashCacheConfig { ns, namespace_bytes: ns_bytes, trim_evicted_regions: k.flash_cache.trim, ..FlashCacheConfig::default() };
    if let Some(c) = &k.flash_cache.cache_size {
        cfg.cache_size = cache_size(c);
    }
    if let Some(p) = k.flash_cache.bighash_pct {
        cfg.bighash_pct = p;
    }
    cfg.region_bytes = scaled_region(NAVY_REGION, k.scale);
    // Region flushes run beside the bucket writes (Navy's flush threads), in pieces of the
    // drive's largest write (256 KiB with FDP) that shrink with the run, so a scaled erase unit
    // gets region and bucket data in the proportion a full-scale one does.
    cfg.spread_region_writes = true;
    cfg.max_io_bytes = scaled_piece(cfg.max_io_bytes, k.scale);
    cfg.eviction = match k.flash_cache.region_eviction.unwrap_or(RegionOrder::Fifo) {
        RegionOrder::Lru => RegionEviction::Lru,
        RegionOrder::Fifo => RegionEviction::Fifo,
    };
    if placement {
        let (bh, bc) = navy_handles(handles);
        cfg.bighash_pid = Pid::new(0, bh);
        cfg.blockcache_pid = Pid::new(0, bc);
    }
    cfg.reinsertion_hits = k.flash_cache.reinsertion_hits.unwrap_or(1);
    cfg.admission_retention_secs = k.flash_cache.admission_retention.unwrap_or(7200);
    let rate = k.flash_cache.ops_per_sec.unwrap_or(PUBLISHED_OPS_PER_SEC);
    if !(rate.is_finite() && rate > 0.0) {
        bail!("{}: ops_per_sec {rate}: expected a positive rate", ctx());
    }
    cfg.ops_per_sec = rate * k.scale;
    cfg.lookaside = k.flash_cache.lookaside.unwrap_or(flat);
    cfg.key_size_in_key = !flat;
    let cache_bytes = wafsim_apps::flashcache::Layout::new(&cfg).map_err(|e| anyhow!("{e}")).with_context(ctx)?.cache_bytes;
    cfg.dram_bytes = match &k.flash_cache.dram {
        Some(d) => d.of(cache_bytes),
        None => (cache_bytes as f64 * PUBLISHED_DRAM_SHARE) as u64,
    };
    let cache = FlashCache::new(cfg.clone()).map_err(|e| anyhow!("{e}")).with_context(ctx)?;
    let limit = k.amount.as_ref().map(|a| a.of(ns_bytes));
    let requests: Box<dyn KvSource> = if let Some(path) = &k.flash_cache.trace {
        Box::new(wafsim_workload::kvtrace::KvTrace::open(&base_dir.join(path)).map_err(|e| anyhow!("{e}")).with_context(ctx)?)
    } else {
        let base = if flat { CacheGenConfig::default() } else { CacheGenConfig::kvcache_202210() };
        let footprint = k.flash_cache.footprint.unwrap_or(if flat { 2.0 } else { KVCACHE_FOOTPRINT });
        if !(footprint.is_finite() && footprint > 0.0) {
            bail!("{}: footprint {footprint}: expected a positive multiple of the cache", ctx());
        }
        let mut gen = base.with_footprint((cache_bytes as f64 * footprint) as u64);
        if let Some(z) = k.flash_cache.zipf {
            gen.popularity = if z == 0.0 { Popularity::Uniform } else { Popularity::Zipfian { exponent: z } };
        }
        if limit.is_none() {
            gen.ops = Some(10_000_000);
        }
        Box::new(CacheGen::try_new(&gen, seed).map_err(|e| anyhow!("{e}")).with_context(ctx)?)
    };
    // How this run's proportions compare with full scale (the regions per erase unit cannot
    // keep theirs once regions stop shrinking at 1 MiB): shown with the cache's figures.
    let eu = target.cfg.erase_unit_bytes as f64;
    let full_eu = eu / k.scale;
    let metrics = vec![
        ("regions per erase unit".to_string(), eu / cfg.region_bytes as f64),
        ("regions per erase unit at full scale (approx.)".to_string(), full_eu / NAVY_REGION as f64),
        ("DRAM share of the flash cache".to_string(), cfg.dram_bytes as f64 / cache_bytes as f64),
    ];
    // The cache's row: objects inserted into flash over what it wrote, its hit ratios, warming
    // until its log has wrapped (the cache's own figures).
    let source = budgeted(Box::new(FlashCacheSource::new(requests, cache).with_metrics(metrics)), limit);
    let handles_said = if placement {
        let (bh, bc) = navy_handles(handles);
        format!(", BigHash on handle {bh}, BlockCache on handle {bc}")
    } else {
        String::new()
    };
    let label = Label { name: format!("kv{} (flash cache{handles_said})", i + 1), namespace: k.namespace.clone() };
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
        let share = |t: &str| t.parse::<Share>();
        assert_eq!(cache_size(&share("50%").unwrap()), CacheSize::Fraction(0.5));
        assert_eq!(cache_size(&share("1").unwrap()), CacheSize::Fraction(1.0));
        assert_eq!(cache_size(&share("940GB").unwrap()), CacheSize::Bytes(940_000_000_000));
        assert!(share("half").is_err());
        assert_eq!(scaled_region(16 << 20, 1.0), 16 << 20);
        assert_eq!(scaled_region(16 << 20, 0.25), 4 << 20);
        assert_eq!(scaled_region(16 << 20, 0.001), 1 << 20);
        assert_eq!(scaled_piece(256 << 10, 1.0), 256 << 10);
        assert_eq!(scaled_piece(256 << 10, 0.1), 24 << 10);
        assert_eq!(scaled_piece(256 << 10, 0.0001), 4096);
        assert_eq!(share("4.5%").unwrap().of(1000), 45, "dram as a share of the flash cache");
        assert_eq!(share("0").unwrap().of(1000), 0);
        assert_eq!(share("1MiB").unwrap().of(1000), 1 << 20);
        assert!(share("-1%").is_err());
        // Navy's handle order: 0 default, BigHash 1, BlockCache 2, 0 once they run out.
        assert_eq!(navy_handles(4), (1, 2));
        assert_eq!(navy_handles(3), (1, 2));
        assert_eq!(navy_handles(2), (1, 0));
        assert_eq!(navy_handles(1), (0, 0));
    }
}
