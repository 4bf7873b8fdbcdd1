//! The flash cache (Navy-like BigHash + BlockCache) against hand-computed cases: layout, hit
//! ratios, bucket and region I/O, eviction order, coverage of the device, determinism, speed.

use std::time::Instant;

use wafsim_apps::flashcache::{BigHash, Layout};
use wafsim_apps::{CacheSize, FlashCache, FlashCacheConfig, FlashCacheSource, RegionEviction};
use wafsim_core::pipeline::{IoSource, KvOp, KvScript};
use wafsim_core::{BlockDevice, Io, Op, Pid};
use wafsim_workload::cachegen::{CacheGen, CacheGenConfig, Popularity, SizeRange};

const KIB: u32 = 1024;
const MIB: u64 = 1 << 20;
const BH: Pid = Pid(0);
const BC: Pid = Pid(1);

/// 20 MiB namespace, whole cache, no metadata, BigHash 10% (512 buckets at 18 MiB), 18 regions
/// of 1 MiB written in 256 KiB pieces, items up to 2048 bytes small, 16-byte keys, no `NvmItem`
/// header (so an item is key + object).
fn small_cfg() -> FlashCacheConfig {
    FlashCacheConfig {
        nvm_item_header_bytes: 0,
        namespace_bytes: 20 * MIB,
        metadata_bytes: Some(0),
        bighash_pct: 10,
        small_item_max_bytes: 2048,
        region_bytes: MIB as u32,
        bighash_pid: BH,
        blockcache_pid: BC,
        ..FlashCacheConfig::default()
    }
}

/// 6 regions of 1 MiB, no BigHash.
fn regions_cfg(eviction: RegionEviction) -> FlashCacheConfig {
    FlashCacheConfig { namespace_bytes: 6 * MIB, metadata_bytes: Some(0), bighash_pct: 0, region_bytes: MIB as u32, eviction, blockcache_pid: BC, nvm_item_header_bytes: 0, ..FlashCacheConfig::default() }
}

fn apply_all(c: &mut FlashCache, ops: impl IntoIterator<Item = KvOp>) -> Vec<Io> {
    let mut out = Vec::new();
    for op in ops {
        c.apply(&op, &mut out);
    }
    out
}

fn set(key: u64, bytes: u32) -> KvOp {
    KvOp::Update { key, bytes }
}
fn get(key: u64, bytes: u32) -> KvOp {
    KvOp::Get { key, bytes }
}

/// Keys `from..` that hash to BigHash bucket `b`.
fn keys_in_bucket(c: &FlashCache, b: u32, n: usize) -> Vec<u64> {
    (0u64..).filter(|&k| c.bighash().bucket_of(k) == b).take(n).collect()
}

#[test]
fn layout_follows_navy_setup() {
    // 1 GiB, defaults: metadata 0.5% = 5,368,709 -> 5,365,760 (block aligned down); BigHash 4%
    // = 42,949,672 reserved, starts at 1,073,741,824 - 42,949,672 = 1,030,792,152 aligned up to
    // 1,030,795,264: 10,485 buckets; BlockCache (1,030,795,264 - 5,365,760) / 16 MiB = 61.
    let l = Layout::new(&FlashCacheConfig::default()).unwrap();
    assert_eq!(l.cache_bytes, 1 << 30);
    assert_eq!(l.metadata_bytes, 5_365_760);
    assert_eq!(l.blockcache_offset, 5_365_760);
    assert_eq!(l.bighash_offset, 1_030_795_264);
    assert_eq!(l.buckets, 10_485);
    assert_eq!(l.regions, 61);
    assert_eq!(l.alloc_align, 512);
    // Half of a 1.88 TB namespace: the cache ends at 940 GB, the rest is never addressed.
    let half = FlashCacheConfig { namespace_bytes: 1_880_000_000_000, cache_size: CacheSize::Fraction(0.5), ..FlashCacheConfig::default() };
    let l = Layout::new(&half).unwrap();
    assert_eq!(l.cache_bytes, 940_000_000_000 / 4096 * 4096);
    assert!(l.bighash_offset + l.buckets as u64 * 4096 <= l.cache_bytes);
    assert_eq!(l.buckets as u64, (l.cache_bytes - l.bighash_offset) / 4096);
    // Above 2 TiB the allocation alignment grows: 3 TiB >> 32 = 768 -> 1024.
    let big = FlashCacheConfig { namespace_bytes: 3 << 40, ..FlashCacheConfig::default() };
    assert_eq!(Layout::new(&big).unwrap().alloc_align, 1024);
    // The small config.
    let l = Layout::new(&small_cfg()).unwrap();
    assert_eq!((l.blockcache_offset, l.regions, l.bighash_offset, l.buckets), (0, 18, 18 * MIB, 512));
    // Refusals.
    assert!(Layout::new(&FlashCacheConfig { small_item_max_bytes: 4096 - 43, ..small_cfg() }).is_err());
    assert!(Layout::new(&FlashCacheConfig { namespace_bytes: 2 * MIB, ..regions_cfg(RegionEviction::Lru) }).is_err());
    assert!(Layout::new(&FlashCacheConfig { cache_size: CacheSize::Bytes(21 * MIB), ..small_cfg() }).is_err());
    assert!(Layout::new(&FlashCacheConfig { block_bytes: 512, ..small_cfg() }).is_err());
}

#[test]
fn working_set_that_fits_misses_only_cold() {
    // 200 small objects (100 B) and 300 large ones (10,000 B: 10,016 + 32 -> 10,240 region
    // bytes, 102 per region, 3 regions of 18): everything fits, so three passes of gets miss
    // exactly once per key and hit twice.
    let mut c = FlashCache::new(small_cfg()).unwrap();
    let keys: Vec<(u64, u32)> = (0..500).map(|k| (k, if k < 200 { 100 } else { 10_000 })).collect();
    let mut reads = Vec::new();
    for pass in 0..3 {
        let out = apply_all(&mut c, keys.iter().map(|&(k, b)| get(k, b)));
        if pass > 0 {
            assert!(out.iter().all(|i| i.op == Op::Read), "a warm pass writes nothing");
            reads.extend(out);
        }
    }
    let s = c.counters();
    assert_eq!(s.gets, 1500);
    assert_eq!(s.hits, 1000);
    assert_eq!(s.misses(), 500);
    assert_eq!(s.lookaside_inserts, 500);
    assert!((s.hit_ratio() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(s.bighash_hits, 400);
    assert_eq!(s.blockcache_hits, 600);
    assert!((s.bighash_hit_ratio() + s.blockcache_hit_ratio() - s.hit_ratio()).abs() < 1e-12);
    assert_eq!(s.inserted_object_bytes, 200 * 100 + 300 * 10_000);
    assert_eq!(s.inserted_item_bytes, 500 * 16 + 200 * 100 + 300 * 10_000);
    assert_eq!(s.evicted_items(), 0);
    assert_eq!(s.bighash.inserts, 200);
    assert_eq!(s.blockcache.inserts, 300);
    // Keys 200..403 filled regions 0 and 1 (written), 404..499 sit in the buffer of region 2:
    // their 2 x 96 hits read nothing; the others read their extent rounded out to 4 KiB.
    assert_eq!(c.blockcache().current_region(), Some((2, 96 * 10_240)));
    assert_eq!(s.blockcache.buffer_hits, 2 * 96);
    assert_eq!(s.blockcache.regions_written, 2);
    for k in 200..404u64 {
        let l = c.blockcache().lookup_loc(k).unwrap();
        assert_eq!((l.region, l.offset, l.size), (((k - 200) / 102) as u32, ((k - 200) % 102) as u32 * 10_240, 10_240));
    }
    let item_reads: Vec<&Io> = reads.iter().filter(|i| i.offset < 18 * MIB).collect();
    assert_eq!(item_reads.len(), 2 * 204);
    for r in &item_reads {
        assert!(r.offset % 4096 == 0 && r.len % 4096 == 0 && (r.len == 12 * KIB || r.len == 16 * KIB), "{r:?}");
        assert_eq!(r.pid, Pid::NONE);
    }
    // Small hits each read their 4 KiB bucket.
    let bucket_reads = reads.iter().filter(|i| i.offset >= 18 * MIB).count();
    assert_eq!(bucket_reads, 400);
    c.check_invariants();
}

#[test]
fn one_small_insert_is_one_bucket_write() {
    let mut c = FlashCache::new(small_cfg()).unwrap();
    let ks = keys_in_bucket(&c, 7, 2);
    let at = 18 * MIB + 7 * 4096;
    // Navy reads the bucket before every insert, even an empty one.
    let out = apply_all(&mut c, [set(ks[0], 100)]);
    assert_eq!(out, vec![Io { op: Op::Read, ns: 0, offset: at, len: 4096, pid: Pid::NONE }, Io { op: Op::Write, ns: 0, offset: at, len: 4096, pid: BH }]);
    // With the read of empty buckets skipped: a write alone, then read + write once it holds an item.
    let mut c = FlashCache::new(FlashCacheConfig { skip_read_of_empty_buckets: true, ..small_cfg() }).unwrap();
    let out = apply_all(&mut c, [set(ks[0], 100)]);
    assert_eq!(out, vec![Io { op: Op::Write, ns: 0, offset: at, len: 4096, pid: BH }]);
    let out = apply_all(&mut c, [set(ks[1], 100)]);
    assert_eq!(out, vec![Io { op: Op::Read, ns: 0, offset: at, len: 4096, pid: Pid::NONE }, Io { op: Op::Write, ns: 0, offset: at, len: 4096, pid: BH }]);
    let s = c.counters();
    assert_eq!((s.bighash.bucket_writes, s.bighash.write_bytes, s.device_write_bytes()), (2, 8192, 8192));
    assert_eq!(s.inserted_object_bytes, 200);
    assert!((s.app_waf() - 8192.0 / 200.0).abs() < 1e-12);
    // A hit reads the bucket; a get of an absent key is answered by the bloom filter.
    let out = apply_all(&mut c, [get(ks[1], 100)]);
    assert_eq!(out, vec![Io { op: Op::Read, ns: 0, offset: at, len: 4096, pid: Pid::NONE }]);
    c.check_invariants();
}

#[test]
fn bucket_overflow_evicts_the_oldest() {
    // 1000-byte objects: 1016-byte items take 1036 bytes; 3 fit in 4072 (3108), a fourth
    // pushes out the oldest.
    assert_eq!(BigHash::slot_bytes(1016), 1036);
    let mut c = FlashCache::new(small_cfg()).unwrap();
    let b = 300;
    let k = keys_in_bucket(&c, b, 6);
    apply_all(&mut c, [set(k[0], 1000), set(k[1], 1000), set(k[2], 1000)]);
    assert_eq!(c.bighash().bucket_keys(b), vec![k[0], k[1], k[2]]);
    assert_eq!(c.bighash().bucket_used(b), 3108);
    apply_all(&mut c, [set(k[3], 1000)]);
    assert_eq!(c.bighash().bucket_keys(b), vec![k[1], k[2], k[3]]);
    assert_eq!(c.counters().bighash.evicted_items, 1);
    // A set of a stored key moves it to the back ([k2, k3, k1]); the next overflow takes the
    // new oldest, k2.
    apply_all(&mut c, [set(k[1], 1000), set(k[4], 1000)]);
    assert_eq!(c.bighash().bucket_keys(b), vec![k[3], k[1], k[4]]);
    assert_eq!(c.counters().bighash.replaced, 1);
    // One big item (2000 + 16 + 20 = 2036) pushes out two.
    apply_all(&mut c, [set(k[5], 2000)]);
    assert_eq!(c.bighash().bucket_keys(b), vec![k[4], k[5]], "k3 and k1 went");
    assert_eq!(c.counters().bighash.evicted_items, 4);
    // The evicted keys miss.
    for &gone in &[k[0], k[1], k[2], k[3]] {
        assert!(!c.lookup(gone, &mut Vec::new()));
    }
    assert!(c.lookup(k[5], &mut Vec::new()));
    c.check_invariants();
}

#[test]
fn bloom_filter_spares_reads_of_absent_keys() {
    let mut c = FlashCache::new(small_cfg()).unwrap();
    let out = apply_all(&mut c, (0..1000).map(|k| KvOp::Read { key: k }));
    assert!(out.is_empty(), "an empty cache reads nothing");
    // One small item per bucket in the first 200 buckets' worth of keys; absent keys then rarely
    // pass the 4 x 16-bit filter (about (1/16)^4 per key with one item in the bucket).
    apply_all(&mut c, (0..500).map(|k| set(k, 100)));
    let out = apply_all(&mut c, (1_000_000..1_010_000).map(|k| KvOp::Read { key: k }));
    let s = c.counters();
    assert!(out.len() < 100, "{} reads for 10,000 absent keys", out.len());
    assert_eq!(out.len() as u64, s.bighash.bloom_false_positives);
    // Without the filter every lookup reads its bucket.
    let mut c = FlashCache::new(FlashCacheConfig { bloom_bytes: 0, ..small_cfg() }).unwrap();
    let out = apply_all(&mut c, (0..1000).map(|k| KvOp::Read { key: k }));
    assert_eq!(out.len(), 1000);
}

#[test]
fn a_key_lives_in_one_engine() {
    let mut c = FlashCache::new(small_cfg()).unwrap();
    let k = 42;
    let b = c.bighash().bucket_of(k);
    let at = 18 * MIB + b as u64 * 4096;
    apply_all(&mut c, [set(k, 100)]);
    assert!(c.bighash().contains(k));
    // Now large: appended to region 0 (in memory, no write yet), and removed from its bucket:
    // the filter lets the key through, so the bucket is read and rewritten without it.
    let out = apply_all(&mut c, [set(k, 5000)]);
    assert_eq!(out, vec![Io { op: Op::Read, ns: 0, offset: at, len: 4096, pid: Pid::NONE }, Io { op: Op::Write, ns: 0, offset: at, len: 4096, pid: BH }]);
    assert!(!c.bighash().contains(k));
    assert_eq!(c.blockcache().lookup_loc(k).unwrap().size, 5120);
    // Small again: into the bucket, out of the index (no I/O for that).
    apply_all(&mut c, [set(k, 100)]);
    assert!(c.bighash().contains(k) && c.blockcache().lookup_loc(k).is_none());
    // Delete: BigHash first (read + write), then nothing left.
    let out = apply_all(&mut c, [KvOp::Delete { key: k }]);
    assert_eq!(out.len(), 2);
    assert_eq!(c.items(), 0);
    let out = apply_all(&mut c, [KvOp::Delete { key: k }, get(k, 100)]);
    // The delete finds the filter empty (no I/O); the get misses and inserts (read + write).
    assert_eq!(out.iter().filter(|i| i.op == Op::Write).count(), 1);
    assert_eq!(c.counters().misses(), 1);
    // Too large for a region: refused, counted, nothing written.
    let mut c = FlashCache::new(regions_cfg(RegionEviction::Lru)).unwrap();
    let out = apply_all(&mut c, [set(1, MIB as u32)]);
    assert!(out.is_empty());
    assert_eq!((c.counters().rejected, c.counters().inserts, c.counters().inserted_object_bytes), (1, 0, 0));
    c.check_invariants();
}

/// Objects of 262,096 bytes take 262,144 region bytes (+16 key, +32 descriptor): four per
/// 1 MiB region.
const QUARTER: u32 = 262_096;

fn region_of(c: &FlashCache, k: u64) -> Option<u32> {
    c.blockcache().lookup_loc(k).map(|l| l.region)
}

#[test]
fn regions_fill_in_order_and_fifo_evicts_the_oldest() {
    let mut c = FlashCache::new(regions_cfg(RegionEviction::Fifo)).unwrap();
    assert_eq!(c.blockcache().entry_bytes(QUARTER + 16), 256 * 1024);
    let out = apply_all(&mut c, (0..20).map(|k| set(k, QUARTER)));
    // Regions 0..=3 written whole in four 256 KiB pieces each, region 4 in memory, 5 clean.
    let want: Vec<Io> = (0..16u64).map(|i| Io { op: Op::Write, ns: 0, offset: i * 256 * 1024, len: 256 * KIB, pid: BC }).collect();
    assert_eq!(out, want);
    assert_eq!(c.blockcache().current_region(), Some((4, MIB as u32)));
    assert_eq!(c.blockcache().clean_regions(), vec![5]);
    assert_eq!(c.blockcache().eviction_order(), vec![0, 1, 2, 3]);
    for k in 0..20 {
        assert_eq!(region_of(&c, k), Some(k as u32 / 4));
    }
    // A hit in region 0 does not change FIFO order.
    apply_all(&mut c, [get(1, QUARTER)]);
    // Key 20: region 4 written, region 5 taken, region 0 reclaimed to refill the reserve:
    // read whole (4 x 256 KiB), its four items evicted.
    let out = apply_all(&mut c, [set(20, QUARTER)]);
    let mut want: Vec<Io> = (16..20u64).map(|i| Io { op: Op::Write, ns: 0, offset: i * 256 * 1024, len: 256 * KIB, pid: BC }).collect();
    want.extend((0..4u64).map(|i| Io { op: Op::Read, ns: 0, offset: i * 256 * 1024, len: 256 * KIB, pid: Pid::NONE }));
    assert_eq!(out, want);
    assert!((0..4).all(|k| region_of(&c, k).is_none()));
    assert_eq!(region_of(&c, 20), Some(5));
    let s = c.counters().blockcache;
    assert_eq!((s.regions_evicted, s.evicted_items, s.reclaim_read_bytes), (1, 4, MIB));
    // Key 24 evicts region 1 (keys 4..8), and reuses region 0.
    apply_all(&mut c, (21..25).map(|k| set(k, QUARTER)));
    assert!((4..8).all(|k| region_of(&c, k).is_none()));
    assert_eq!(region_of(&c, 24), Some(0));
    assert_eq!(c.counters().blockcache.evicted_items, 8);
    c.check_invariants();
}

#[test]
fn lru_keeps_the_region_that_was_read() {
    let mut c = FlashCache::new(regions_cfg(RegionEviction::Lru)).unwrap();
    apply_all(&mut c, (0..20).map(|k| set(k, QUARTER)));
    // A hit in region 0 moves it to the front; a hit in region 4 (in memory) reads nothing
    // and moves nothing.
    let out = apply_all(&mut c, [get(1, QUARTER), get(17, QUARTER)]);
    assert_eq!(out, vec![Io { op: Op::Read, ns: 0, offset: 256 * 1024, len: 256 * KIB, pid: Pid::NONE }]);
    assert_eq!(c.blockcache().eviction_order(), vec![1, 2, 3, 0]);
    apply_all(&mut c, (20..25).map(|k| set(k, QUARTER)));
    // Regions 1 and 2 went (keys 4..12); region 0's keys stay.
    assert!((0..4).all(|k| region_of(&c, k) == Some(0)));
    assert!((4..12).all(|k| region_of(&c, k).is_none()));
    assert_eq!(region_of(&c, 24), Some(1));
    assert_eq!(c.counters().blockcache.evicted_items, 8);
    // Replaced copies are holes: not evicted again when their region goes.
    apply_all(&mut c, [set(12, QUARTER)]);
    assert_eq!(c.counters().blockcache.replaced, 1);
    c.check_invariants();
}

#[test]
fn trim_of_evicted_regions_is_optional() {
    let mut c = FlashCache::new(FlashCacheConfig { trim_evicted_regions: true, ..regions_cfg(RegionEviction::Fifo) }).unwrap();
    let out = apply_all(&mut c, (0..21).map(|k| set(k, QUARTER)));
    let trims: Vec<&Io> = out.iter().filter(|i| i.op == Op::Trim).collect();
    // Never-written regions are not trimmed; region 0 is, once evicted.
    assert_eq!(trims, vec![&Io { op: Op::Trim, ns: 0, offset: 0, len: MIB as u32, pid: Pid::NONE }]);
    let mut c = FlashCache::new(regions_cfg(RegionEviction::Fifo)).unwrap();
    let out = apply_all(&mut c, (0..40).map(|k| set(k, QUARTER)));
    assert!(out.iter().all(|i| i.op != Op::Trim), "Navy never trims");
}

/// Mixed objects: 70% small (100-600 B), 30% large (4-64 KiB), uniform over `keys` keys,
/// look-aside gets only.
fn mixed_gen(keys: u64, ops: Option<u64>, seed: u64) -> CacheGen {
    CacheGen::new(
        &CacheGenConfig {
            keys,
            popularity: Popularity::Uniform,
            sizes: vec![SizeRange { min: 100, max: 600, weight: 0.7 }, SizeRange { min: 4096, max: 65536, weight: 0.3 }],
            get_ratio: 1.0,
            lone_get_ratio: 0.0,
            ops,
            ..CacheGenConfig::default()
        },
        seed,
    )
}

#[test]
fn a_full_cache_writes_all_its_space_with_one_pid_per_engine() {
    let cfg = small_cfg();
    let cache = FlashCache::new(cfg.clone()).unwrap();
    let l = *cache.layout();
    let mut src = FlashCacheSource::new(mixed_gen(16_000, None, 3), cache);
    let mut written = vec![0u32; (20 * MIB / 4096) as usize];
    let mut buf = Vec::new();
    let mut region_pieces = 0u64;
    while src.report().counters.blockcache.regions_written < 150 {
        buf.clear();
        assert!(src.fill(&mut buf, 1000).unwrap() > 0);
        for io in &buf {
            assert_eq!(io.ns, 0);
            if io.op != Op::Write {
                continue;
            }
            assert!(io.offset % 4096 == 0 && io.len % 4096 == 0);
            if io.offset >= l.bighash_offset {
                assert_eq!((io.pid, io.len), (BH, 4096), "{io:?}");
                assert!(io.offset + 4096 <= 20 * MIB);
            } else {
                assert_eq!((io.pid, io.len), (BC, 256 * KIB), "{io:?}");
                assert_eq!(io.offset % (256 * 1024), 0);
                region_pieces += 1;
            }
            for b in io.offset / 4096..(io.offset + io.len as u64) / 4096 {
                written[b as usize] += 1;
            }
        }
    }
    let r = src.report();
    let c = &r.counters;
    // Every block of the cache was written: all 18 regions (sequential 256 KiB pieces) and all
    // 512 buckets (random 4 KiB rewrites).
    let unwritten: Vec<usize> = (0..written.len()).filter(|&b| written[b] == 0).collect();
    assert!(unwritten.is_empty(), "unwritten blocks: {unwritten:?}");
    let seen: u64 = written.iter().map(|&w| w as u64 * 4096).sum();
    assert_eq!(seen, c.device_write_bytes() - r.pending_write_bytes, "the writes seen are the counted ones");
    assert!(region_pieces >= 4 * 150);
    assert!(c.blockcache.regions_evicted >= 150 - 18);
    assert_eq!(c.device_write_bytes(), c.bighash.bucket_writes * 4096 + c.blockcache.regions_written * MIB);
    // Conservation: every stored object is in an engine, was evicted, or was replaced.
    assert_eq!(c.inserts, r.bighash_items + r.blockcache_items + c.evicted_items() + c.bighash.replaced + c.blockcache.replaced);
    assert!(c.app_waf() > 1.0);
    src.cache().check_invariants();
}

fn stream(ops: u64, seed: u64, batch: usize) -> Vec<Io> {
    let mut src = FlashCacheSource::new(mixed_gen(4000, Some(ops), seed), FlashCache::new(small_cfg()).unwrap());
    let mut all = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if src.fill(&mut buf, batch).unwrap() == 0 {
            break;
        }
        all.extend_from_slice(&buf);
    }
    all
}

#[test]
fn the_stream_is_deterministic_and_independent_of_batch_sizes() {
    let a = stream(30_000, 9, 1);
    let b = stream(30_000, 9, 7);
    let c = stream(30_000, 9, 4096);
    assert!(a.len() > 10_000, "{}", a.len());
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_ne!(a, stream(30_000, 10, 4096));
    // The source ends with its requests and reports them all.
    let mut src = FlashCacheSource::new(KvScript::new(vec![set(1, 100), get(1, 100), get(2, 5000)]), FlashCache::new(small_cfg()).unwrap());
    let mut buf = Vec::new();
    while src.fill(&mut buf, 1).unwrap() > 0 {}
    let r = src.report();
    assert_eq!((r.counters.ops, r.counters.hits, r.counters.misses(), r.pending_write_bytes), (3, 1, 1, 0));
    assert_eq!(r.bighash_items + r.blockcache_items, 2);
    // Either part refuses bad settings (the caller builds both: the requests and the cache).
    assert!(CacheGen::try_new(&CacheGenConfig { keys: 0, ..CacheGenConfig::default() }, 1).is_err());
    assert!(FlashCache::new(FlashCacheConfig { bighash_pct: 101, ..small_cfg() }).is_err());
}

/// The CacheBench-like workload through the cache, as `wafsim bench` would build it: the
/// default request mix (kvcache sizes, zipf 1.0, 12% lone gets) over a population of twice the
/// cache, on a 4 GiB namespace (BigHash 4%, 16 MiB regions), its I/O taken by a device without a
/// media model. Run: cargo test --release -p wafsim-apps --test flashcache -- --ignored --nocapture
#[test]
#[ignore]
fn speed_cachebench_like() {
    let ns = 4u64 << 30;
    let cfg = FlashCacheConfig { namespace_bytes: ns, bighash_pid: BH, blockcache_pid: BC, ..FlashCacheConfig::default() };
    let gen = CacheGenConfig::default().with_footprint(2 * ns);
    let mut src = FlashCacheSource::new(CacheGen::try_new(&gen, 1).unwrap(), FlashCache::new(cfg).unwrap());
    let mut dev = wafsim_core::plain::PlainDevice::new(ns, 4096).unwrap();
    let mut buf = Vec::with_capacity(1024);
    let mut drive = |target: u64| {
        while src.cache().counters().ops < target {
            buf.clear();
            assert!(src.fill(&mut buf, 1024).unwrap() > 0);
            dev.submit_batch(&buf).unwrap();
        }
    };
    let warm = 5_000_000;
    drive(warm);
    let mut rates = Vec::new();
    for k in 1..=3u64 {
        let t = Instant::now();
        drive(warm + k * 5_000_000);
        rates.push(5e6 / t.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    let r = src.report();
    let c = &r.counters;
    eprintln!(
        "flash cache speed: {:.2} M ops/s (rounds {:?}); {} keys, hit ratio {:.3} (BigHash {:.3}, BlockCache {:.3}), app WAF {:.2}, BigHash {:.1} GiB / BlockCache {:.1} GiB written",
        rates[1] / 1e6,
        rates.iter().map(|x| (x / 1e4).round() / 100.0).collect::<Vec<_>>(),
        gen.keys,
        c.hit_ratio(),
        c.bighash_hit_ratio(),
        c.blockcache_hit_ratio(),
        c.app_waf(),
        c.bighash.write_bytes as f64 / (1u64 << 30) as f64,
        c.blockcache.write_bytes as f64 / (1u64 << 30) as f64,
    );
    assert!(rates[1] > 1e6, "below 1 M ops/s");
}
