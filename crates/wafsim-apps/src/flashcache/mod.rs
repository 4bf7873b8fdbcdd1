//! A flash cache on a raw namespace, modelled on CacheLib's flash engine Navy
//! (facebook/CacheLib, `cachelib/navy/`), as CacheBench drives it.
//!
//! Navy splits objects by size: an item (key + value) of at most `smallItemMaxSize` bytes goes
//! to the small-object cache, BigHash ([`bighash`]): the key hashes to one bucket (4 KiB); an
//! insert reads the bucket, removes the key's old copy, evicts the oldest items (FIFO within the
//! bucket) until the new one fits, and writes the whole bucket back; a bloom filter per bucket
//! (in memory) answers most lookups of absent keys without a read. Larger items go to the
//! large-object cache, BlockCache ([`blockcache`]): items are appended to an in-memory buffer
//! of the current region (16 MiB); a full region is written to the device whole; an in-memory
//! index maps each key to its newest copy; when a new region is needed the eviction policy
//! (region LRU by default, FIFO as an option: the published setup's) picks a region to reclaim,
//! which is read and whose items leave the index or are reinserted. Lookups try BlockCache first, then BigHash; an insert into one engine
//! removes the key from the other; a delete tries BigHash first. Each engine writes with its
//! own placement handle (Navy allocates one per engine when FDP is on).
//!
//! Sources (facebook/CacheLib at 278ffc74, August 2026; paths under `cachelib/`):
//! - Engine choice: an item is large when key + value > `smallItemMaxSize`
//!   (`navy/common/Types.h`, `isItemLarge`); lookups BlockCache then BigHash, inserts remove the
//!   key from the other engine, removes BigHash then BlockCache (`navy/engine/EnginePair.cpp`).
//! - Layout: metadata first (default 0.5% of the device, `allocator/nvmcache/NavySetup.cpp`
//!   `kDefaultMetadataPercent`), BlockCache after it, BigHash at the end of the device with
//!   `sizePct`% of the whole device (start aligned up to a bucket), BlockCache the space between,
//!   aligned down to whole regions (`setupCacheProtos`, `setupBigHash`, `setupBlockCache`).
//! - BigHash: bucket 4096 bytes (`NavyConfig.h` `bucketSize_`), bloom filter 8 bytes per bucket
//!   (`bucketBfSize_`) with 4 hash functions of 16 bits each (`NavySetup.cpp`, `kNumHashes`);
//!   a bucket's header is 24 bytes (`navy/bighash/Bucket.cpp`, static_assert), an item takes
//!   a 4-byte slot header (`BucketStorage.h` `Slot`) + a 16-byte entry header
//!   (`Bucket.h` `BucketEntry`) + key + value; space is made by removing items from the front
//!   (`Bucket::makeSpace`, `BucketStorage::removeUntil`); insert = read bucket, remove old copy,
//!   insert, rebuild the bloom filter if anything left, write bucket (`BigHash::insert`: the
//!   read is unconditional); lookup = bloom check, then read (`BigHash::lookup`); remove =
//!   bloom check, read, and a write only if the key was there (`BigHash::remove`).
//! - BlockCache: region 16 MiB (`NavyConfig.h` `regionSize_`), an entry is a 32-byte
//!   `EntryDesc` + key + value rounded up to the allocation alignment, 512 bytes unless the
//!   device exceeds 2 TiB (`BlockCache::serializedSize`, `calcAllocAlignSize`,
//!   `kMinAllocAlignSize`); an item that does not fit in the rest of the region closes it and
//!   opens a new one (`Allocator::allocateWith`); a closed region's whole buffer is written in
//!   one device write (`Region::flushBuffer`) that the device splits into writes of at most
//!   `deviceMaxWriteSize` (`navy/common/Device.cpp` `writeInternal`; CacheBench default 1 MiB,
//!   `cachebench/util/CacheConfig.h`; with FDP capped by the drive's maximum I/O size). One
//!   clean region is kept in reserve (`cleanRegions_` 1): taking a clean region schedules the
//!   reclaim of another (`RegionManager::getCleanRegion`); reclaim evicts the policy's victim,
//!   reads the region up to its last entry if it has items and drops the items from the index
//!   (`RegionManager::doReclaim`, `BlockCache::onRegionReclaim`). Eviction policy LRU by
//!   default (`NavyConfig.h` `lru_{true}`), touched on a hit in a region not in a buffer
//!   (`RegionManager::touch`), a region tracked when its flush completes; initially every
//!   (empty) region is tracked in index order (`resetEvictionPolicy`), so regions are used in
//!   order 0, 1, 2, ... A hit reads the entry's extent ending at its end address, rounded out to
//!   the device block (`BlockCache::readEntry`, `Device::read`), or copies from the region buffer
//!   when the region is still in memory. A remove only drops the index entry.
//! - Navy never trims (no discard in `cachelib/navy/`); trimming evicted regions is an option.
//! - Defaults of the published FDP setup (CacheLib issue 302, wafsim's reference §10): BigHash
//!   4% of the cache, small items up to 640 bytes, 4096-byte blocks, writes up to 256 KiB.
//!   CacheBench's own defaults differ: `navyBigHashSizePct` 50, `navySmallItemMaxSize` 2048,
//!   `navyBlockSize` 512, `deviceMaxWriteSize` 1 MiB (`cachebench/util/CacheConfig.h`).
//!
//! - In front of Navy, optionally, CacheLib's DRAM cache ([`dram`]): items reach flash only
//!   when DRAM evicts them and the admission policy (`RetentionAP`, retention time) accepts
//!   them; reinsertion of BlockCache items with flash hits (`HitsReinsertionPolicy`). The
//!   sources are in [`dram`] and in [`FlashCacheConfig`]'s fields; docs/model.md has the table.
//!
//! Modelling choices (untimed): reclaims run at once, in request order (Navy runs them on
//! worker threads; a reclaim runs when a clean region is taken, so it lands before the next
//! region fills either way); a sealed region is written at once, or spread over the next
//! region's fill (`spread_region_writes`, Navy's background flush beside bucket writes). Keys
//! are `u64` with a fixed size (`key_bytes`) or their size in the top byte; the index is exact
//! (Navy's is keyed by a 64-bit hash). No expiry, no checksum or encryption, metadata written
//! only at shutdown (not modelled).

pub mod bighash;
pub mod blockcache;
pub mod dram;
mod source;

/// Keys an engine evicted, kept only once collecting is switched on (the DRAM tier marks their
/// DRAM copies `NvmEvicted`, so they are written again when DRAM evicts them).
#[derive(Debug, Default)]
pub(crate) struct EvictedKeys(Option<Vec<u64>>);

impl EvictedKeys {
    /// Keep the keys evicted from now on.
    pub(crate) fn collect(&mut self) {
        self.0 = Some(Vec::new());
    }

    /// Note evicted keys (nothing unless collecting).
    #[inline]
    pub(crate) fn note(&mut self, keys: impl IntoIterator<Item = u64>) {
        if let Some(v) = &mut self.0 {
            v.extend(keys);
        }
    }

    /// Move the keys noted since the last call to `into`.
    pub(crate) fn take(&mut self, into: &mut Vec<u64>) {
        if let Some(v) = &mut self.0 {
            into.append(v);
        }
    }
}


use wafsim_core::{Io, Pid};
use wafsim_core::pipeline::KvOp;

pub use bighash::{BigHash, BigHashCounters};
pub use dram::{DramCache, DramCounters, DramEvicted};
pub use blockcache::{BlockCache, BlockCacheCounters, ItemLoc};
pub use source::{FlashCacheEngine, FlashCacheReport, FlashCacheSource};

/// How much of the namespace the cache uses (from offset 0; the rest stays unused, the host's
/// over-provisioning).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CacheSize {
    /// This many bytes.
    Bytes(u64),
    /// This fraction of the namespace (0 < f <= 1).
    Fraction(f64),
}

/// BlockCache's region eviction policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionEviction {
    /// Least recently used region (Navy's default): a hit moves its region to the front.
    Lru,
    /// Oldest written region first (Navy `enableFifo`).
    Fifo,
}

/// Configuration of a [`FlashCache`]. [`FlashCacheConfig::default`] is the published CacheLib
/// FDP setup's engine settings and Navy's defaults otherwise, on a whole 1 GiB namespace 0.
#[derive(Debug, Clone, PartialEq)]
pub struct FlashCacheConfig {
    /// Namespace the cache's I/O is addressed to.
    pub ns: u32,
    /// Size of that namespace in bytes.
    pub namespace_bytes: u64,
    /// Bytes the cache uses from offset 0 (Navy's device or file size). Default: the whole
    /// namespace.
    pub cache_size: CacheSize,
    /// Metadata space at the start of the cache (written only at shutdown; not modelled).
    /// `None`: Navy's default, 0.5% of the cache rounded down to a block
    /// (`NavySetup.cpp` `kDefaultMetadataPercent`).
    pub metadata_bytes: Option<u64>,
    /// Percent of the cache given to BigHash, at its end (Navy `sizePct`; reference 4,
    /// CacheBench default 50; 0 disables BigHash and every item goes to BlockCache).
    pub bighash_pct: u32,
    /// Largest item (key + value) BigHash takes (Navy `smallItemMaxSize`; reference 640,
    /// CacheBench default 2048).
    pub small_item_max_bytes: u32,
    /// BigHash bucket size (Navy `bucketSize_`, 4096; a power of two, a multiple of the block).
    pub bucket_bytes: u32,
    /// Bloom filter bytes per bucket (Navy `bucketBfSize_`, 8; 0 disables the filter).
    pub bloom_bytes: u32,
    /// Skip the read of a bucket that holds no items before an insert (Navy always reads:
    /// default off; the host could know an empty bucket by its all-zero bloom filter).
    pub skip_read_of_empty_buckets: bool,
    /// BlockCache region size (Navy `regionSize_`, 16 MiB).
    pub region_bytes: u32,
    /// Clean regions kept in reserve (Navy `cleanRegions_`, 1).
    pub clean_regions: u32,
    /// Region eviction policy (Navy default LRU).
    pub eviction: RegionEviction,
    /// Device block size: I/O alignment of reads and writes (Navy `blockSize_` 4096; reference
    /// 4096; CacheBench default 512 is not supported, wafsim addresses whole 4 KiB blocks).
    pub block_bytes: u32,
    /// Largest device write (and read): a region is written in pieces of this size (reference
    /// 256 KiB; CacheBench `deviceMaxWriteSize` 1 MiB).
    pub max_io_bytes: u32,
    /// Key size of every item in bytes (CacheBench draws key sizes per key, e.g. 16..255 in
    /// `ssd_perf/flat_kvcache_reg`; here fixed, default 16).
    pub key_bytes: u32,
    /// Placement identifier of BigHash's writes (default none; the FDP experiment sets
    /// placement handle 0).
    pub bighash_pid: Pid,
    /// Placement identifier of BlockCache's writes (default none; the FDP experiment sets
    /// placement handle 1).
    pub blockcache_pid: Pid,
    /// Trim a region when it is evicted (Navy does not; default off).
    pub trim_evicted_regions: bool,
    /// Bytes of the serialized `NvmItem` header added to every value Navy stores: 18 bytes of
    /// fields (pool id, flags, creation and expiry time, blob count) + 8 bytes per blob
    /// (`allocator/nvmcache/NvmItem.h`, packed), 26 for a single-blob item. The engine choice
    /// compares key + this + value with `small_item_max_bytes` (`NvmCache::put` serializes
    /// the item before Navy sees it).
    pub nvm_item_header_bytes: u32,
    /// Each key's size is in its top byte (1..=255; a 0 there means `key_bytes`), as the
    /// kvcache generator and trace reader make them; default off: every key is `key_bytes`.
    pub key_size_in_key: bool,
    /// BlockCache reinsertion: an item of an evicted region that was looked up at least this
    /// many times since it was written is written again into the open region (Navy
    /// `HitsReinsertionPolicy`, CacheBench `navyHitsReinsertionThreshold`; 0, Navy's default,
    /// reinserts nothing; the published setup 1).
    pub reinsertion_hits: u32,
    /// DRAM cache in front of flash, bytes of key + value (0: none, every set goes straight
    /// to flash). With it, items reach flash only when DRAM evicts them ([`dram`]).
    pub dram_bytes: u64,
    /// The DRAM LRU refreshes an item's position and access time at most this often (CacheBench
    /// `lruRefreshSec` 60).
    pub dram_refresh_secs: u32,
    /// Admission to flash of a DRAM-evicted item (CacheBench `RetentionAP`,
    /// `nvmAdmissionRetentionTimeThreshold`): admitted iff now - its last DRAM access <= this
    /// many seconds; 0 admits everything (the published setup: 7200).
    pub admission_retention_secs: u32,
    /// Requests per second of simulated time: the clock the DRAM LRU and the admission policy
    /// read advances by one request per 1 / this (the published setup's `opRatePerSec`,
    /// 550,000; CacheBench reads wall-clock time during the replay).
    pub ops_per_sec: f64,
    /// A get that misses everywhere inserts the object (CacheBench `enableLookaside`; its
    /// default is off). Default on, this model's behaviour without a DRAM tier.
    pub lookaside: bool,
    /// Write a sealed region in `max_io_bytes` pieces spread over the requests that fill the
    /// next region, instead of all at once (default off). Navy flushes on background threads
    /// while bucket writes go on, so at full scale the drive's erase units (hundreds of regions
    /// each) get region and bucket data in their overall proportion; a scaled run whose erase
    /// units are no larger than a region keeps that mixing only when the pieces are small and
    /// spread.
    pub spread_region_writes: bool,
}

impl Default for FlashCacheConfig {
    fn default() -> Self {
        FlashCacheConfig {
            ns: 0,
            namespace_bytes: 1 << 30,
            cache_size: CacheSize::Fraction(1.0),
            metadata_bytes: None,
            bighash_pct: 4,
            small_item_max_bytes: 640,
            bucket_bytes: 4096,
            bloom_bytes: 8,
            skip_read_of_empty_buckets: false,
            region_bytes: 16 << 20,
            clean_regions: 1,
            eviction: RegionEviction::Lru,
            block_bytes: 4096,
            max_io_bytes: 256 << 10,
            key_bytes: 16,
            bighash_pid: Pid::NONE,
            blockcache_pid: Pid::NONE,
            trim_evicted_regions: false,
            nvm_item_header_bytes: NVM_ITEM_HEADER_BYTES,
            key_size_in_key: false,
            reinsertion_hits: 0,
            dram_bytes: 0,
            dram_refresh_secs: 60,
            admission_retention_secs: 0,
            ops_per_sec: 550_000.0,
            lookaside: true,
            spread_region_writes: false,
        }
    }
}

/// Serialized `NvmItem` header of a single-blob item (see
/// [`FlashCacheConfig::nvm_item_header_bytes`]).
pub const NVM_ITEM_HEADER_BYTES: u32 = 26;

/// The published CacheLib FDP runs' DRAM cache over their NVM cache: `cacheSizeMB` 43000 over
/// `nvmCacheSizeMB` 952320 (CacheLib issue 302), 4.52%.
pub const PUBLISHED_DRAM_SHARE: f64 = 43_000.0 / 952_320.0;

impl FlashCacheConfig {
    /// The published CacheLib FDP setup (CacheLib issue 302, the reference's section 10) on top
    /// of `self`'s namespace and sizes: FIFO region eviction (`navySegmentedFifoSegmentRatio
    /// [1.0]`, which CacheBench turns into `enableFifo()`), hits reinsertion at 1, retention
    /// admission at 7200 s, a DRAM cache of [`PUBLISHED_DRAM_SHARE`] of the flash cache, keys
    /// with their own sizes, no look-aside insert (CacheBench's trace replay default).
    pub fn published(self) -> FlashCacheConfig {
        let cache = Layout::new(&self).map(|l| l.cache_bytes).unwrap_or(self.namespace_bytes);
        FlashCacheConfig {
            eviction: RegionEviction::Fifo,
            reinsertion_hits: 1,
            admission_retention_secs: 7200,
            dram_bytes: (cache as f64 * PUBLISHED_DRAM_SHARE) as u64,
            key_size_in_key: true,
            lookaside: false,
            ..self
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlashCacheError {
    /// The configuration is unusable.
    #[error("bad flash cache configuration: {0}")]
    Config(String),
}

/// Where the cache's parts lie in the namespace (bytes), as Navy lays them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bytes the cache uses (from offset 0).
    pub cache_bytes: u64,
    /// Metadata at `0 .. metadata_bytes` (never written by the model).
    pub metadata_bytes: u64,
    /// BlockCache regions at `blockcache_offset ..`, `regions` of `region_bytes`.
    pub blockcache_offset: u64,
    /// Regions.
    pub regions: u32,
    /// BigHash buckets at `bighash_offset ..`, `buckets` of `bucket_bytes`.
    pub bighash_offset: u64,
    /// Buckets (0: no BigHash).
    pub buckets: u32,
    /// BlockCache's allocation alignment.
    pub alloc_align: u32,
}

impl Layout {
    /// Navy's layout of a cache of `cfg` (see the module documentation).
    pub fn new(cfg: &FlashCacheConfig) -> Result<Layout, FlashCacheError> {
        let bad = |s: String| Err(FlashCacheError::Config(s));
        let blk = cfg.block_bytes as u64;
        if cfg.block_bytes < 4096 || !cfg.block_bytes.is_power_of_two() {
            return bad(format!("block_bytes {} must be a power of two of at least 4096", cfg.block_bytes));
        }
        let raw = match cfg.cache_size {
            CacheSize::Bytes(b) => b,
            CacheSize::Fraction(f) => {
                if !(f > 0.0 && f <= 1.0) {
                    return bad(format!("cache fraction {f} must be in (0, 1]"));
                }
                (cfg.namespace_bytes as f64 * f) as u64
            }
        };
        let cache_bytes = raw / blk * blk;
        if cache_bytes > cfg.namespace_bytes || cache_bytes == 0 {
            return bad(format!("cache of {raw} bytes does not fit a namespace of {} bytes", cfg.namespace_bytes));
        }
        let metadata_bytes = match cfg.metadata_bytes {
            Some(m) => m.div_ceil(blk) * blk,
            None => (cache_bytes as f64 * 0.5 / 100.0) as u64 / blk * blk,
        };
        if cfg.bighash_pct > 100 {
            return bad("bighash_pct must be at most 100".into());
        }
        let (bighash_offset, buckets) = if cfg.bighash_pct > 0 {
            let b = cfg.bucket_bytes as u64;
            if !cfg.bucket_bytes.is_power_of_two() || !b.is_multiple_of(blk) {
                return bad(format!("bucket_bytes {} must be a power of two and a multiple of the block", cfg.bucket_bytes));
            }
            let reserved = cache_bytes * cfg.bighash_pct as u64 / 100;
            let off = (cache_bytes - reserved).div_ceil(b) * b;
            let n = (cache_bytes - off.min(cache_bytes)) / b;
            if n > u32::MAX as u64 {
                return bad("too many BigHash buckets".into());
            }
            if cfg.small_item_max_bytes as u64 + 20 > b - 24 {
                return bad(format!("small items of {} bytes do not fit a {b}-byte bucket (24-byte header, 20 bytes per item)", cfg.small_item_max_bytes));
            }
            if cfg.bloom_bytes > 0 && cfg.bloom_bytes * 8 / 4 == 0 {
                return bad("bloom_bytes too small for 4 hash functions".into());
            }
            (off, n as u32)
        } else {
            (cache_bytes, 0)
        };
        let r = cfg.region_bytes as u64;
        let shifted = cache_bytes >> 32;
        let alloc_align = if shifted <= 512 { 512 } else { shifted.next_power_of_two() as u32 };
        if r == 0 || !r.is_multiple_of(blk) || !r.is_multiple_of(alloc_align as u64) {
            return bad(format!("region_bytes {r} must be a multiple of the block and of the allocation alignment {alloc_align}"));
        }
        if bighash_offset < metadata_bytes {
            return bad("no room for BlockCache after the metadata and BigHash".into());
        }
        let regions = (bighash_offset - metadata_bytes) / r;
        if regions > u32::MAX as u64 {
            return bad("too many regions".into());
        }
        let regions = regions as u32;
        if (regions as u64) < cfg.clean_regions as u64 + 2 || cfg.clean_regions == 0 {
            return bad(format!("{regions} BlockCache regions; at least clean_regions + 2 = {} needed (clean_regions >= 1)", cfg.clean_regions as u64 + 2));
        }
        if cfg.max_io_bytes == 0 || !(cfg.max_io_bytes as u64).is_multiple_of(blk) {
            return bad("max_io_bytes must be a positive multiple of the block".into());
        }
        Ok(Layout { cache_bytes, metadata_bytes, blockcache_offset: metadata_bytes, regions, bighash_offset, buckets, alloc_align })
    }
}


pub(crate) type BuildKeyHasher = std::hash::BuildHasherDefault<crate::keymap::KeyHasher>;

/// Navy's hash of a key (here of its number): picks the bucket and the bloom bits.
#[inline(always)]
pub(crate) fn key_hash(key: u64) -> u64 {
    let mut z = key ^ 0x5851_F42D_4C95_7F2D;
    z = (z ^ (z >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    z = (z ^ (z >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    z ^ (z >> 33)
}

/// Append reads or writes of `bytes` at `offset`, in pieces of at most `max_io`.
#[inline]
pub(crate) fn push_split(out: &mut Vec<Io>, op: wafsim_core::Op, ns: u32, offset: u64, bytes: u64, max_io: u32, pid: Pid) {
    let mut off = offset;
    let end = offset + bytes;
    while off < end {
        let len = (end - off).min(max_io as u64) as u32;
        out.push(Io { op, ns, offset: off, len, pid });
        off += len as u64;
    }
}

/// What a [`FlashCache`] has done so far (requests, and each engine's counters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlashCacheCounters {
    /// Requests applied.
    pub ops: u64,
    /// Lookups (gets, reads, scan entries, the read of read-modify-writes).
    pub gets: u64,
    /// Lookups that found the object.
    pub hits: u64,
    /// Of which in BigHash.
    pub bighash_hits: u64,
    /// Of which in BlockCache.
    pub blockcache_hits: u64,
    /// Gets that missed and inserted the object (look-aside).
    pub lookaside_inserts: u64,
    /// Explicit sets (inserts, updates, the write of read-modify-writes).
    pub sets: u64,
    /// Deletes requested.
    pub deletes: u64,
    /// Inserts stored by an engine.
    pub inserts: u64,
    /// Object (value) bytes of the stored inserts: the application's bytes.
    pub inserted_object_bytes: u64,
    /// Item (key + value) bytes of the stored inserts (Navy's logical bytes written).
    pub inserted_item_bytes: u64,
    /// Inserts refused because the entry is larger than a region.
    pub rejected: u64,
    /// Value bytes the clients set (sets, and look-aside inserts after a miss).
    pub set_object_bytes: u64,
    /// Gets answered by the DRAM cache.
    pub dram_hits: u64,
    /// Items DRAM evicted that were written to flash.
    pub admitted: u64,
    /// Items DRAM evicted that the admission policy refused (older than the retention time).
    pub admission_rejects: u64,
    /// Items DRAM evicted whose flash copy was still valid (not written again).
    pub clean_evictions: u64,
    /// Flash removes asked for by sets and deletes (each may cost a bucket read and write).
    pub nvm_removes: u64,
    /// The DRAM cache's counters.
    pub dram: DramCounters,
    /// BigHash's counters.
    pub bighash: BigHashCounters,
    /// BlockCache's counters.
    pub blockcache: BlockCacheCounters,
}

impl FlashCacheCounters {
    /// Misses (lookups that did not find the object).
    pub fn misses(&self) -> u64 {
        self.gets - self.hits
    }
    /// Hits per lookup.
    pub fn hit_ratio(&self) -> f64 {
        self.hits as f64 / self.gets.max(1) as f64
    }
    /// Lookups answered by the DRAM cache, per lookup.
    pub fn dram_hit_ratio(&self) -> f64 {
        self.dram_hits as f64 / self.gets.max(1) as f64
    }
    /// Lookups answered by BigHash, per lookup (DRAM's and the two engines' ratios add up to
    /// the whole).
    pub fn bighash_hit_ratio(&self) -> f64 {
        self.bighash_hits as f64 / self.gets.max(1) as f64
    }
    /// Lookups answered by BlockCache, per lookup.
    pub fn blockcache_hit_ratio(&self) -> f64 {
        self.blockcache_hits as f64 / self.gets.max(1) as f64
    }
    /// Bytes written to the device by both engines.
    pub fn device_write_bytes(&self) -> u64 {
        self.bighash.write_bytes + self.blockcache.write_bytes
    }
    /// Bytes read from the device by both engines.
    pub fn device_read_bytes(&self) -> u64 {
        self.bighash.read_bytes + self.blockcache.read_bytes
    }
    /// Objects evicted (BigHash items pushed out of their bucket, BlockCache items of evicted
    /// regions).
    pub fn evicted_items(&self) -> u64 {
        self.bighash.evicted_items + self.blockcache.evicted_items
    }
    /// Application WAF: device bytes written per object byte inserted.
    pub fn app_waf(&self) -> f64 {
        self.device_write_bytes() as f64 / self.inserted_object_bytes.max(1) as f64
    }
}

/// The cache: pure logic, requests in, block I/O out.
pub struct FlashCache {
    cfg: FlashCacheConfig,
    layout: Layout,
    bh: BigHash,
    bc: BlockCache,
    dram: Option<DramCache>,
    /// Scratch lists: items DRAM evicted, keys flash evicted.
    dram_evicted: Vec<DramEvicted>,
    nvm_evicted: Vec<u64>,
    secs_per_op: f64,
    counters: FlashCacheCounters,
}

impl FlashCache {
    /// An empty cache (Navy after a reset: every bucket and region empty; DRAM empty).
    pub fn new(cfg: FlashCacheConfig) -> Result<FlashCache, FlashCacheError> {
        let layout = Layout::new(&cfg)?;
        if !(cfg.ops_per_sec.is_finite() && cfg.ops_per_sec > 0.0) {
            return Err(FlashCacheError::Config(format!("ops_per_sec {} must be a positive number", cfg.ops_per_sec)));
        }
        let mut bh = BigHash::new(&cfg, &layout);
        let mut bc = BlockCache::new(&cfg, &layout);
        let dram = (cfg.dram_bytes > 0).then(|| DramCache::new(cfg.dram_bytes, cfg.dram_refresh_secs));
        if dram.is_some() {
            bh.collect_evicted();
            bc.collect_evicted();
        }
        let secs_per_op = 1.0 / cfg.ops_per_sec;
        Ok(FlashCache { cfg, layout, bh, bc, dram, dram_evicted: Vec::new(), nvm_evicted: Vec::new(), secs_per_op, counters: FlashCacheCounters::default() })
    }

    /// The configuration.
    pub fn config(&self) -> &FlashCacheConfig {
        &self.cfg
    }

    /// Where the parts lie.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The small-object engine.
    pub fn bighash(&self) -> &BigHash {
        &self.bh
    }

    /// The large-object engine.
    pub fn blockcache(&self) -> &BlockCache {
        &self.bc
    }

    /// The DRAM cache in front, if any.
    pub fn dram(&self) -> Option<&DramCache> {
        self.dram.as_ref()
    }

    /// Counters so far (the engines' included).
    pub fn counters(&self) -> FlashCacheCounters {
        let mut c = self.counters.clone();
        c.bighash = self.bh.counters().clone();
        c.blockcache = self.bc.counters().clone();
        if let Some(d) = &self.dram {
            c.dram = d.counters().clone();
        }
        c
    }

    /// Simulated time now, whole seconds: the requests applied so far at `ops_per_sec`
    /// (the first request at 0).
    #[inline(always)]
    pub fn now_secs(&self) -> u32 {
        (self.counters.ops.saturating_sub(1) as f64 * self.secs_per_op) as u32
    }

    /// The size of `key` in bytes (see [`FlashCacheConfig::key_size_in_key`]).
    #[inline(always)]
    pub fn key_size(&self, key: u64) -> u32 {
        let k = (key >> 56) as u32;
        if self.cfg.key_size_in_key && k > 0 {
            k
        } else {
            self.cfg.key_bytes
        }
    }

    /// Whether an object of `bytes` goes to BigHash (with a key of `key_bytes`).
    #[inline(always)]
    pub fn is_small(&self, bytes: u32) -> bool {
        self.is_small_item(self.cfg.key_bytes as u64 + self.cfg.nvm_item_header_bytes as u64 + bytes as u64)
    }

    /// Whether an item of `item` bytes (key + serialized value) goes to BigHash (Navy
    /// `isItemLarge`).
    #[inline(always)]
    fn is_small_item(&self, item: u64) -> bool {
        self.layout.buckets > 0 && item <= self.cfg.small_item_max_bytes as u64
    }

    /// Apply one request, appending the block I/O it causes to `out` in order.
    pub fn apply(&mut self, op: &KvOp, out: &mut Vec<Io>) {
        self.apply_request(op, out);
        self.bc.tick(out);
    }

    fn apply_request(&mut self, op: &KvOp, out: &mut Vec<Io>) {
        self.counters.ops += 1;
        if self.dram.is_some() {
            return self.apply_hybrid(op, out);
        }
        match *op {
            KvOp::Get { key, bytes } => {
                if !self.lookup(key, out) && self.cfg.lookaside {
                    self.counters.lookaside_inserts += 1;
                    self.counters.set_object_bytes += bytes as u64;
                    self.insert(key, bytes, out);
                }
            }
            KvOp::Insert { key, bytes } | KvOp::Update { key, bytes } => {
                self.counters.sets += 1;
                self.counters.set_object_bytes += bytes as u64;
                self.insert(key, bytes, out);
            }
            KvOp::Read { key } => {
                self.lookup(key, out);
            }
            KvOp::Scan { key, records } => {
                for k in key..key.saturating_add(records as u64) {
                    self.lookup(k, out);
                }
            }
            KvOp::ReadModifyWrite { key, bytes } => {
                self.lookup(key, out);
                self.counters.sets += 1;
                self.counters.set_object_bytes += bytes as u64;
                self.insert(key, bytes, out);
            }
            KvOp::Delete { key } => {
                self.counters.deletes += 1;
                self.nvm_remove(key, out);
            }
        }
    }

    /// A request through the DRAM cache (CacheLib's hybrid cache as CacheBench drives it).
    fn apply_hybrid(&mut self, op: &KvOp, out: &mut Vec<Io>) {
        let now = self.now_secs();
        match *op {
            KvOp::Get { key, bytes } => self.hybrid_get(key, bytes, now, out),
            KvOp::Read { key } => self.hybrid_get(key, 0, now, out),
            KvOp::Scan { key, records } => {
                for k in key..key.saturating_add(records as u64) {
                    self.hybrid_get(k, 0, now, out);
                }
            }
            KvOp::Insert { key, bytes } | KvOp::Update { key, bytes } => {
                self.counters.sets += 1;
                self.hybrid_set(key, bytes, now, out);
            }
            KvOp::ReadModifyWrite { key, bytes } => {
                self.hybrid_get(key, 0, now, out);
                self.counters.sets += 1;
                self.hybrid_set(key, bytes, now, out);
            }
            KvOp::Delete { key } => {
                // CacheAllocator::remove drops the DRAM copy and asks NvmCache to remove.
                self.counters.deletes += 1;
                if let Some(d) = &mut self.dram {
                    d.remove(key);
                }
                self.nvm_remove(key, out);
            }
        }
    }

    /// A get: DRAM, then flash (BlockCache, then BigHash); a flash hit is copied into DRAM as
    /// clean and keeps its flash copy (`NvmCache::find`, `onGetComplete`).
    fn hybrid_get(&mut self, key: u64, bytes: u32, now: u32, out: &mut Vec<Io>) {
        self.counters.gets += 1;
        if self.dram.as_mut().is_some_and(|d| d.get(key, now)) {
            self.counters.hits += 1;
            self.counters.dram_hits += 1;
            return;
        }
        if let Some(item) = self.nvm_lookup(key, out) {
            self.counters.hits += 1;
            let in_dram = item.saturating_sub(self.cfg.nvm_item_header_bytes);
            self.dram_insert(key, in_dram, dram::NVM_CLEAN, now, out);
        } else if self.cfg.lookaside && bytes > 0 {
            self.counters.lookaside_inserts += 1;
            self.hybrid_set(key, bytes, now, out);
        }
    }

    /// A set: into DRAM (`insertOrReplace`), removing the flash copy first unless the DRAM copy
    /// it replaces was written by a set (then flash holds no copy).
    fn hybrid_set(&mut self, key: u64, bytes: u32, now: u32, out: &mut Vec<Io>) {
        self.counters.set_object_bytes += bytes as u64;
        let flags = self.dram.as_ref().and_then(|d| d.flags(key));
        if !matches!(flags, Some(f) if f & dram::NVM_CLEAN == 0) {
            self.nvm_remove(key, out);
        }
        let kb = self.key_size(key);
        self.dram_insert(key, kb.saturating_add(bytes), 0, now, out);
    }

    /// Put `key` (`bytes` of key + value) into DRAM and send what it evicts to flash.
    fn dram_insert(&mut self, key: u64, bytes: u32, flags: u8, now: u32, out: &mut Vec<Io>) {
        let mut ev = std::mem::take(&mut self.dram_evicted);
        if let Some(d) = &mut self.dram {
            d.insert(key, bytes, flags, now, &mut ev);
        }
        for e in ev.drain(..) {
            self.send_to_flash(e, now, out);
        }
        self.dram_evicted = ev;
    }

    /// The gates a DRAM-evicted item passes on its way to flash (`shouldWriteToNvmCache`, then
    /// `RetentionAP::acceptImpl`), then Navy's insert; flash evictions mark clean DRAM copies.
    fn send_to_flash(&mut self, e: DramEvicted, now: u32, out: &mut Vec<Io>) {
        if e.flags & dram::NVM_CLEAN != 0 && e.flags & dram::NVM_EVICTED == 0 {
            self.counters.clean_evictions += 1;
            return;
        }
        let keep = self.cfg.admission_retention_secs;
        if keep > 0 && now.saturating_sub(e.last_access) > keep {
            self.counters.admission_rejects += 1;
            return;
        }
        self.counters.admitted += 1;
        let value = e.bytes.saturating_sub(self.key_size(e.key));
        self.insert(e.key, value, out);
        self.bh.take_evicted(&mut self.nvm_evicted);
        self.bc.take_evicted(&mut self.nvm_evicted);
        if let Some(d) = &mut self.dram {
            for &k in &self.nvm_evicted {
                d.mark_nvm_evicted(k);
            }
        }
        self.nvm_evicted.clear();
    }

    /// Remove `key` from flash (`NvmCache::remove`): BigHash first (a bloom filter miss costs
    /// nothing, a hit a bucket read and, if the key is there, a bucket write), then BlockCache's
    /// index (no I/O).
    fn nvm_remove(&mut self, key: u64, out: &mut Vec<Io>) {
        self.counters.nvm_removes += 1;
        if !self.bh.remove(key, out) {
            self.bc.remove(key);
        }
    }

    /// Look `key` up in flash: BlockCache, then BigHash. The item's bytes (key + serialized
    /// value) if found.
    fn nvm_lookup(&mut self, key: u64, out: &mut Vec<Io>) -> Option<u32> {
        if let Some(i) = self.bc.lookup(key, out) {
            self.counters.blockcache_hits += 1;
            Some(i)
        } else if let Some(i) = self.bh.lookup(key, out) {
            self.counters.bighash_hits += 1;
            Some(i)
        } else {
            None
        }
    }

    /// Look `key` up: BlockCache, then BigHash (without a DRAM tier). Whether it was found.
    pub fn lookup(&mut self, key: u64, out: &mut Vec<Io>) -> bool {
        self.counters.gets += 1;
        let found = self.nvm_lookup(key, out).is_some();
        if found {
            self.counters.hits += 1;
        }
        found
    }

    /// Store `key` with an object of `bytes` in the engine its item size (key + serialized
    /// value) picks, then remove it from the other engine.
    pub fn insert(&mut self, key: u64, bytes: u32, out: &mut Vec<Io>) {
        let item = self.key_size(key).saturating_add(self.cfg.nvm_item_header_bytes).saturating_add(bytes);
        let stored = if self.is_small_item(item as u64) {
            self.bh.insert(key, item, out);
            self.bc.remove(key);
            true
        } else {
            let ok = self.bc.insert(key, item, out);
            if self.layout.buckets > 0 {
                self.bh.remove(key, out);
            }
            ok
        };
        if stored {
            self.counters.inserts += 1;
            self.counters.inserted_object_bytes += bytes as u64;
            self.counters.inserted_item_bytes += item as u64;
        } else {
            self.counters.rejected += 1;
        }
    }

    /// Write the current region now, partly filled (Navy's flush at shutdown).
    pub fn flush(&mut self, out: &mut Vec<Io>) {
        self.bc.flush(out);
    }

    /// Objects in flash (BigHash items, BlockCache index entries).
    pub fn items(&self) -> u64 {
        self.bh.items() + self.bc.items()
    }

    /// Check the bookkeeping (tests): the engines' own invariants, and no key in both.
    pub fn check_invariants(&self) {
        self.bh.check_invariants();
        self.bc.check_invariants();
        if let Some(d) = &self.dram {
            d.check_invariants();
        }
        for k in self.bc.keys() {
            assert!(!self.bh.contains(k), "key {k} in both engines");
        }
    }
}
