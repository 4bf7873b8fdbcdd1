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

/// Requests per second of `src` into a plain device of `ns` bytes in three rounds of 5 M
/// requests after `warm` requests, slowest first.
fn three_rounds(src: &mut FlashCacheSource<CacheGen>, ns: u64, warm: u64) -> Vec<f64> {
    let mut dev = wafsim_core::plain::PlainDevice::new(ns, 4096).unwrap();
    let mut buf = Vec::with_capacity(1024);
    let mut drive = |target: u64| {
        while src.cache().counters().ops < target {
            buf.clear();
            assert!(src.fill(&mut buf, 1024).unwrap() > 0);
            dev.submit_batch(&buf).unwrap();
        }
    };
    drive(warm);
    let mut rates = Vec::new();
    for k in 1..=3u64 {
        let t = Instant::now();
        drive(warm + k * 5_000_000);
        rates.push(5e6 / t.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    rates
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
    let rates = three_rounds(&mut src, ns, 5_000_000);
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

// ---------------------------------------------------------------------------------------------
// Navy as the published setup runs it: FIFO, hits reinsertion, RetentionAP, a DRAM tier.

/// A drive of `logical` bytes, 15% spare, erase units of `eu` bytes, greedy GC, no FDP.
fn drive(logical: u64, eu: u64) -> wafsim_core::Device {
    use wafsim_core::{Device, DeviceConfig, GcPolicy, NamespaceConfig, Placement};
    Device::new(DeviceConfig {
        logical_bytes: logical,
        physical_bytes: ((logical as f64 * 1.15) as u64).div_ceil(eu) * eu,
        mapping_unit: 4096,
        erase_unit_bytes: eu,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "cache".into(), size_bytes: logical, placement_handles: vec![0] }],
        seed: 1,
        slc_cache: None,
    })
    .unwrap()
}

/// Quarter-region objects over 64 regions of 1 MiB (no BigHash), one get of a written key per
/// set so LRU has regions to move: the region write order, and the drive's copies with erase
/// units of two regions (aligned: the cache starts at 0).
fn region_log(eviction: RegionEviction) -> (Vec<u64>, u64, u64) {
    let cfg = FlashCacheConfig { namespace_bytes: 64 * MIB, ..regions_cfg(eviction) };
    let mut c = FlashCache::new(cfg).unwrap();
    let mut dev = drive(64 * MIB, 2 * MIB);
    let mut regions = Vec::new();
    let mut out = Vec::new();
    let mut rng = wafsim_core::Rng::new(5);
    for k in 0..64 * 4 * 20u64 {
        out.clear();
        c.apply(&set(k, QUARTER), &mut out);
        // A recent key (the last ~40 regions' worth) gets read: some still cached, some not.
        let back = rng.below(k + 1).min(320);
        c.apply(&get(k - back, QUARTER), &mut out);
        for io in &out {
            if io.op == Op::Write && io.offset % MIB == 0 {
                regions.push(io.offset / MIB);
            }
            dev.submit(io).unwrap();
        }
    }
    let d = dev.counters();
    (regions, d.host_units, d.gc_units)
}

/// FIFO reclaims regions in the order they were written, so the cache's regions are a circular
/// log (Navy: `FifoPolicy::track` appends, `evict` pops the front, `touch` does nothing): the
/// writes go 0, 1, ..., 63, 0, 1, ... whatever is read, and a drive whose erase units hold whole
/// regions (two here) finds every erase unit wholly overwritten before it needs it: GC copies
/// nothing (device WAF 1). LRU under the same reads reuses regions out of order, so erase
/// units die piecemeal and the drive copies.
#[test]
fn fifo_regions_overwrite_in_write_order_and_an_aligned_drive_copies_nothing() {
    let (order, host, gc) = region_log(RegionEviction::Fifo);
    assert!(order.len() > 64 * 15, "{} region writes", order.len());
    for (i, &r) in order.iter().enumerate() {
        assert_eq!(r, i as u64 % 64, "write {i}");
    }
    assert!(host > 0);
    assert_eq!(gc, 0, "FIFO: device WAF {:.4}", (host + gc) as f64 / host as f64);
    let (order, host, gc) = region_log(RegionEviction::Lru);
    assert!(order.iter().enumerate().any(|(i, &r)| r != i as u64 % 64), "LRU keeps write order");
    let waf = (host + gc) as f64 / host as f64;
    assert!(waf > 1.01, "LRU: device WAF {waf:.4}");
}

/// Hits reinsertion at threshold 1 (Navy `HitsReinsertionPolicy`): of region 0's four items,
/// the two looked up since they were written (keys 1 and 3) are written again into the open
/// region when region 0 is reclaimed; the other two are evicted. A reinserted item's hits
/// start again at 0, so when its new region goes it is evicted unless read again.
#[test]
fn reinsertion_keeps_exactly_the_hit_items() {
    let cfg = FlashCacheConfig { reinsertion_hits: 1, ..regions_cfg(RegionEviction::Fifo) };
    let mut c = FlashCache::new(cfg).unwrap();
    // Keys 0..20: regions 0..=4 (4 each), region 5 clean.
    apply_all(&mut c, (0..20).map(|k| set(k, QUARTER)));
    // Key 1 read twice, key 3 once (from the device), key 5 (region 1) once.
    let out = apply_all(&mut c, [get(1, QUARTER), get(1, QUARTER), get(3, QUARTER), get(5, QUARTER)]);
    assert_eq!(out.iter().filter(|i| i.op == Op::Read).count(), 4);
    assert_eq!(c.blockcache().lookup_loc(1).unwrap().hits, 2);
    assert_eq!(c.blockcache().lookup_loc(0).unwrap().hits, 0);
    // Key 20 closes region 4, opens region 5 and reclaims region 0: keys 1 and 3 go into
    // region 5 (after nothing: the reclaim runs before key 20 is placed), key 20 after them.
    let out = apply_all(&mut c, [set(20, QUARTER)]);
    assert!(out.iter().all(|i| i.op != Op::Write || i.offset >= 4 * MIB), "only region 4 written: {out:?}");
    let s = c.counters().blockcache;
    assert_eq!((s.reinserted, s.evicted_items, s.reinsert_dropped), (2, 2, 0));
    assert_eq!(s.reinserted_bytes, 2 * 256 * 1024);
    assert_eq!(region_of(&c, 0), None);
    assert_eq!(region_of(&c, 2), None);
    assert_eq!(c.blockcache().lookup_loc(1).map(|l| (l.region, l.offset, l.hits)), Some((5, 0, 0)));
    assert_eq!(c.blockcache().lookup_loc(3).map(|l| (l.region, l.offset, l.hits)), Some((5, 256 * 1024, 0)));
    assert_eq!(c.blockcache().lookup_loc(20).map(|l| (l.region, l.offset)), Some((5, 512 * 1024)));
    // Key 21 fills region 5; key 22 closes it and reclaims region 1: key 5 (read once) is
    // reinserted, 4, 6, 7 evicted.
    apply_all(&mut c, [set(21, QUARTER), set(22, QUARTER)]);
    let s = c.counters().blockcache;
    assert_eq!((s.reinserted, s.evicted_items), (3, 5));
    assert_eq!(region_of(&c, 5), Some(0));
    // Run on until region 5 (keys 1, 3, 20, 21) is reclaimed: nothing was read since the
    // reinsertion, so all four are evicted, none reinserted again.
    let before = c.counters().blockcache.reinserted;
    let mut k = 23;
    while region_of(&c, 1).is_some() {
        apply_all(&mut c, [set(k, QUARTER)]);
        k += 1;
    }
    assert!([1, 3, 20, 21].iter().all(|&k| region_of(&c, k).is_none()));
    assert_eq!(c.counters().blockcache.reinserted, before, "no hits since the reinsertion");
    c.check_invariants();
}

/// A DRAM tier of 2 items over BigHash, one request per simulated second, RetentionAP at 5 s,
/// LRU refresh 60 s. Hand-computed timeline (t = request index):
/// - t0 set A, t1 set B, t2..4 misses, t5 set C evicts A (last access 0, age 5: admitted),
///   t6 set D evicts B (age 5: admitted);
/// - t7..11 misses, t12 set E evicts C (last access 5, age 7: rejected);
/// - t13 get D: first access, moved to the head, last access 13; t14 set F evicts E (age 2:
///   admitted); t15 get D again: within 60 s of the refresh, so neither moved nor refreshed;
/// - t16..19 misses, t20 set G evicts D (last access 13, age 7: rejected; had t15 refreshed it,
///   the age would be 5 and D admitted).
#[test]
fn admission_rejects_exactly_the_items_older_than_the_threshold() {
    let cfg = FlashCacheConfig { dram_bytes: 2 * 116, admission_retention_secs: 5, ops_per_sec: 1.0, lookaside: false, ..small_cfg() };
    let mut c = FlashCache::new(cfg).unwrap();
    let [a, b, cc, d, e, f, g, z] = [1u64, 2, 3, 4, 5, 6, 7, 99];
    let miss = || get(z, 100);
    let mut ops = vec![set(a, 100), set(b, 100), miss(), miss(), miss(), set(cc, 100), set(d, 100)];
    ops.extend((7..12).map(|_| miss()));
    ops.extend([set(e, 100), get(d, 100), set(f, 100), get(d, 100)]);
    ops.extend((16..20).map(|_| miss()));
    ops.push(set(g, 100));
    let mut out = Vec::new();
    let mut admitted_at = Vec::new();
    for (t, op) in ops.iter().enumerate() {
        let before = c.counters().admitted;
        c.apply(op, &mut out);
        assert_eq!(c.now_secs(), t as u32);
        if c.counters().admitted > before {
            admitted_at.push(t);
        }
    }
    let s = c.counters();
    assert_eq!((s.admitted, s.admission_rejects, s.clean_evictions), (3, 2, 0));
    assert_eq!(admitted_at, vec![5, 6, 14]);
    for (k, on_flash) in [(a, true), (b, true), (cc, false), (d, false), (e, true), (f, false), (g, false)] {
        assert_eq!(c.bighash().contains(k), on_flash, "key {k}");
    }
    assert_eq!(c.dram().unwrap().order(), vec![g, f]);
    assert_eq!(s.dram.promotions, 1, "t15's access fell inside the refresh time");
    c.check_invariants();
}

/// With a DRAM tier, sets write nothing to flash until DRAM evicts: DRAM of 3 items, BigHash
/// items (every flash write a 4 KiB bucket). A flash hit copies the item into DRAM as clean and
/// keeps the flash copy, so its later DRAM eviction writes nothing; a set of a key whose clean
/// copy is in DRAM removes the flash copy (bucket read + write); a set of a key DRAM holds from
/// a set does not touch flash.
#[test]
fn dram_tier_items_reach_flash_only_on_dram_eviction() {
    let cfg = FlashCacheConfig { dram_bytes: 3 * 116, lookaside: false, ..small_cfg() };
    let mut c = FlashCache::new(cfg).unwrap();
    let writes = |out: &[Io]| out.iter().filter(|i| i.op == Op::Write).count();
    let out = apply_all(&mut c, [set(1, 100), set(2, 100), set(3, 100), set(3, 100), get(2, 100)]);
    assert!(out.is_empty(), "all in DRAM: {out:?}");
    // Set 4 evicts 1 (the LRU tail: 3 was replaced, 2 read): one bucket read-modify-write.
    let out = apply_all(&mut c, [set(4, 100)]);
    assert_eq!((out.len(), writes(&out)), (2, 1));
    assert!(c.bighash().contains(1) && !c.dram().unwrap().contains(1));
    // Get 1: DRAM miss, flash hit (bucket read), copied into DRAM as clean; it evicts 3
    // (dirty: written to flash).
    let out = apply_all(&mut c, [get(1, 100)]);
    assert_eq!((out.len(), writes(&out)), (3, 1));
    assert_eq!(c.dram().unwrap().flags(1), Some(wafsim_apps::flashcache::dram::NVM_CLEAN));
    assert!(c.bighash().contains(1) && c.bighash().contains(3));
    // Sets of 5 and 6 evict 2 (dirty: written) and 4 (dirty: written); set 7 evicts 1, clean:
    // nothing written, its flash copy stays.
    let out = apply_all(&mut c, [set(5, 100), set(6, 100)]);
    assert_eq!(writes(&out), 2);
    let out = apply_all(&mut c, [get(5, 100), get(6, 100), set(7, 100)]);
    assert_eq!(writes(&out), 0, "{out:?}");
    assert_eq!(c.counters().clean_evictions, 1);
    assert!(c.bighash().contains(1));
    // Get 1 again (flash hit, clean in DRAM; it evicts 5, dirty: written), then set 1: the
    // flash copy is removed (bucket read + write), the new value waits in DRAM.
    let out = apply_all(&mut c, [get(1, 100)]);
    assert_eq!(writes(&out), 1);
    let out = apply_all(&mut c, [set(1, 100)]);
    assert_eq!((out.len(), writes(&out)), (2, 1), "{out:?}");
    assert!(!c.bighash().contains(1) && c.dram().unwrap().contains(1));
    // Set 1 again: DRAM holds it from a set, so flash is not asked.
    let removes = c.counters().nvm_removes;
    let out = apply_all(&mut c, [set(1, 100)]);
    assert!(out.is_empty());
    assert_eq!(c.counters().nvm_removes, removes);
    // Only DRAM evictions and removes wrote: 1, 3, 2, 4, 5 admitted (5 bucket writes) + 1
    // remove.
    let s = c.counters();
    assert_eq!(s.admitted, 5);
    assert_eq!(s.bighash.bucket_writes, 6);
    assert_eq!(s.dram_hits, 3);
    c.check_invariants();
}

/// A flash copy that Navy evicts while DRAM holds the item clean marks it `NvmEvicted`, so its
/// DRAM eviction writes it again (`NvmCache::evictCB`, `shouldWriteToNvmCache`).
#[test]
fn an_item_whose_flash_copy_was_evicted_is_written_again() {
    let cfg = FlashCacheConfig { dram_bytes: 2 * (16 + QUARTER as u64), lookaside: false, ..regions_cfg(RegionEviction::Fifo) };
    let mut c = FlashCache::new(cfg).unwrap();
    // Keys 0..22 pass through DRAM (2 items) into regions: region 0 gets 0..4.
    apply_all(&mut c, (0..6).map(|k| set(k, QUARTER)));
    assert_eq!(region_of(&c, 0), Some(0));
    // Get 0: flash hit, DRAM copy clean (it evicts 4 to flash).
    apply_all(&mut c, [get(0, QUARTER)]);
    assert_eq!(c.dram().unwrap().flags(0), Some(wafsim_apps::flashcache::dram::NVM_CLEAN));
    // Keep 0 hot in DRAM while sets push region 0 out of flash.
    let mut k = 6;
    while region_of(&c, 0).is_some() {
        apply_all(&mut c, [set(k, QUARTER), get(0, QUARTER)]);
        k += 1;
    }
    let evicted = wafsim_apps::flashcache::dram::NVM_CLEAN | wafsim_apps::flashcache::dram::NVM_EVICTED;
    assert_eq!(c.dram().unwrap().flags(0), Some(evicted));
    // Now let 0 fall out of DRAM: it is written to flash again.
    let admitted = c.counters().admitted;
    apply_all(&mut c, [set(1000, QUARTER), set(1001, QUARTER)]);
    assert!(region_of(&c, 0).is_some(), "written again");
    assert_eq!(c.counters().admitted, admitted + 2);
    c.check_invariants();
}

/// The published CacheLib FDP setup (DRAM tier of 4.5%, FIFO, hits reinsertion, retention
/// admission) under kvcache-shaped requests (objects 2.9 times the flash cache) on a 4 GiB
/// namespace, its I/O taken by a device without a media model, as `wafsim bench --apps cache`
/// builds it. Run: cargo test --release -p wafsim-apps --test flashcache -- --ignored --nocapture
#[test]
#[ignore]
fn speed_published_setup() {
    let ns = 4u64 << 30;
    let cfg = FlashCacheConfig { namespace_bytes: ns, bighash_pid: BH, blockcache_pid: BC, ..FlashCacheConfig::default() }.published();
    let gen = CacheGenConfig::kvcache_202210().with_footprint((2.9 * ns as f64) as u64);
    let mut src = FlashCacheSource::new(CacheGen::try_new(&gen, 1).unwrap(), FlashCache::new(cfg).unwrap());
    let rates = three_rounds(&mut src, ns, 10_000_000);
    let c = src.report().counters;
    eprintln!(
        "published setup speed: {:.2} M ops/s (rounds {:?}); {} keys, hit ratio {:.3} (DRAM {:.3}, BigHash {:.3}, BlockCache {:.3}), regions reclaimed {}, app WAF {:.2}",
        rates[1] / 1e6,
        rates.iter().map(|x| (x / 1e4).round() / 100.0).collect::<Vec<_>>(),
        gen.keys,
        c.hit_ratio(),
        c.dram_hit_ratio(),
        c.bighash_hit_ratio(),
        c.blockcache_hit_ratio(),
        c.blockcache.regions_reclaimed,
        c.app_waf(),
    );
    assert!(rates[1] > 1e6, "below 1 M ops/s");
}

/// Spread region writes: a sealed region goes out in `max_io_bytes` pieces over as many requests
/// as it took to fill, between the other engine's writes; every byte of it is written once, in
/// order, before it can be evicted, and its items are read from memory until then.
#[test]
fn spread_region_writes_interleave_with_bucket_writes() {
    let cfg = FlashCacheConfig { spread_region_writes: true, max_io_bytes: 64 * KIB, ..small_cfg() };
    let mut c = FlashCache::new(cfg).unwrap();
    let bh_offset = c.layout().bighash_offset;
    // Alternate a large object (a quarter region: 4 fill a region) and 3 small ones.
    let mut ops = Vec::new();
    for k in 0..400u64 {
        ops.push(set(k, if k % 4 == 0 { QUARTER } else { 100 }));
    }
    let mut out = Vec::new();
    let mut trail = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        out.clear();
        c.apply(op, &mut out);
        for io in out.iter().filter(|io| io.op == Op::Write) {
            trail.push((i, io.offset >= bh_offset, io.offset, io.len));
        }
        // Region 0 was sealed at request 16 (its 4 items are keys 0, 4, 8, 12): until its
        // last piece is out its items are served from memory.
        if i == 17 {
            let before = c.counters().blockcache.buffer_hits;
            let mut o = Vec::new();
            c.lookup(4, &mut o);
            assert!(o.is_empty() && c.counters().blockcache.buffer_hits == before + 1);
        }
    }
    let region: Vec<&(usize, bool, u64, u32)> = trail.iter().filter(|t| !t.1).collect();
    assert!(region.iter().all(|t| t.3 == 64 * KIB), "pieces of 64 KiB");
    // Region pieces are in address order within each region and regions in FIFO order.
    let offsets: Vec<u64> = region.iter().map(|t| t.2).collect();
    for (n, &o) in offsets.iter().enumerate() {
        assert_eq!(o, (n as u64 * 64 * 1024) % (18 * MIB), "piece {n}");
    }
    // A region's 16 pieces go out over the 16 requests after it sealed, between bucket writes.
    let first: Vec<usize> = region.iter().take(16).map(|t| t.0).collect();
    assert_eq!(first, (16..32).collect::<Vec<_>>());
    let mixed = trail.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(mixed > 100, "region and bucket writes alternate: {mixed} switches");
    let s = c.counters().blockcache;
    assert_eq!(s.write_bytes, offsets.len() as u64 * 64 * 1024);
    assert_eq!(s.write_bytes, s.regions_written * MIB + 64 * 1024 * (offsets.len() as u64 % 16));
    c.check_invariants();
}
