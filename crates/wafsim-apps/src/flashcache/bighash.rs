//! BigHash, Navy's small-object engine: a hash table of fixed-size buckets on the device, each
//! read and rewritten whole, FIFO within a bucket, a bloom filter per bucket in memory.

use wafsim_core::{Io, Op, Pid};

use super::{key_hash, FlashCacheConfig, Layout};

/// Bytes of a bucket's header (checksum, generation time, storage header; Navy `Bucket`).
pub const BUCKET_HEADER_BYTES: u32 = 24;
/// Bytes an item takes besides its key and value (4-byte slot size + 16-byte entry header).
pub const ITEM_OVERHEAD_BYTES: u32 = 20;
/// Hash functions of the bloom filter (Navy sets 4 unconditionally).
pub const BLOOM_HASHES: u32 = 4;

/// What BigHash has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BigHashCounters {
    /// Inserts (each a bucket write).
    pub inserts: u64,
    /// Item (key + value) bytes inserted.
    pub inserted_item_bytes: u64,
    /// Lookups that reached BigHash.
    pub lookups: u64,
    /// Of which found.
    pub hits: u64,
    /// Lookups and removes the bloom filter answered without a read.
    pub bloom_rejects: u64,
    /// Reads the bloom filter let through for a key that was not there.
    pub bloom_false_positives: u64,
    /// Removes of keys found (each a bucket write).
    pub removes: u64,
    /// Inserts that replaced the key's older copy in its bucket.
    pub replaced: u64,
    /// Items pushed out of a full bucket.
    pub evicted_items: u64,
    /// Bucket reads (lookups, inserts, removes).
    pub bucket_reads: u64,
    /// Bucket writes.
    pub bucket_writes: u64,
    /// Device bytes read.
    pub read_bytes: u64,
    /// Device bytes written.
    pub write_bytes: u64,
}

/// One item in a bucket: its key and the bytes it takes there (overhead included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    key: u64,
    bytes: u32,
}

/// The engine.
pub struct BigHash {
    ns: u32,
    pid: Pid,
    base: u64,
    bucket_bytes: u32,
    capacity: u32,
    n_buckets: u32,
    /// Bloom filter words per bucket (0: no filter) and bits per hash function.
    bloom_words: usize,
    bloom_bits: u32,
    bloom: Vec<u64>,
    skip_empty_read: bool,
    /// Items per bucket, oldest first.
    slots: Vec<Vec<Slot>>,
    used: Vec<u32>,
    items: u64,
    /// Keys pushed out of full buckets, for the DRAM tier's `NvmEvicted` mark (kept only when
    /// collecting).
    evicted_keys: super::EvictedKeys,
    c: BigHashCounters,
}

/// Seeds of the bloom filter's hash functions.
const BLOOM_SEEDS: [u64; 4] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0x27D4_EB2F_1656_67C5];

impl BigHash {
    pub(crate) fn new(cfg: &FlashCacheConfig, layout: &Layout) -> BigHash {
        let n = layout.buckets as usize;
        let bloom_bits = cfg.bloom_bytes * 8 / BLOOM_HASHES;
        let bloom_words = if cfg.bloom_bytes > 0 { (BLOOM_HASHES * bloom_bits).div_ceil(64) as usize } else { 0 };
        BigHash {
            ns: cfg.ns,
            pid: cfg.bighash_pid,
            base: layout.bighash_offset,
            bucket_bytes: cfg.bucket_bytes,
            capacity: cfg.bucket_bytes - BUCKET_HEADER_BYTES,
            n_buckets: layout.buckets,
            bloom_words,
            bloom_bits,
            bloom: vec![0; n * bloom_words],
            skip_empty_read: cfg.skip_read_of_empty_buckets,
            slots: vec![Vec::new(); n],
            used: vec![0; n],
            items: 0,
            evicted_keys: super::EvictedKeys::default(),
            c: BigHashCounters::default(),
        }
    }

    /// Counters so far.
    pub fn counters(&self) -> &BigHashCounters {
        &self.c
    }

    /// Buckets.
    pub fn buckets(&self) -> u32 {
        self.n_buckets
    }

    /// Items stored.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The bucket `key` hashes to.
    #[inline(always)]
    pub fn bucket_of(&self, key: u64) -> u32 {
        ((key_hash(key) as u128 * self.n_buckets as u128) >> 64) as u32
    }

    /// Byte offset of bucket `b` in the namespace.
    pub fn bucket_offset(&self, b: u32) -> u64 {
        self.base + b as u64 * self.bucket_bytes as u64
    }

    /// Bytes an item of `item_bytes` (key + value) takes in a bucket.
    pub fn slot_bytes(item_bytes: u32) -> u32 {
        item_bytes + ITEM_OVERHEAD_BYTES
    }

    /// Keys in bucket `b`, oldest first.
    pub fn bucket_keys(&self, b: u32) -> Vec<u64> {
        self.slots[b as usize].iter().map(|s| s.key).collect()
    }

    /// Bytes in use in bucket `b` (items with their overhead, header not included).
    pub fn bucket_used(&self, b: u32) -> u32 {
        self.used[b as usize]
    }

    /// Whether `key` is stored.
    pub fn contains(&self, key: u64) -> bool {
        self.n_buckets > 0 && self.slots[self.bucket_of(key) as usize].iter().any(|s| s.key == key)
    }

    #[inline(always)]
    fn bloom_pos(&self, hash: u64, i: usize) -> usize {
        let h = (hash ^ BLOOM_SEEDS[i]).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        let h = h ^ (h >> 29);
        i * self.bloom_bits as usize + (((h as u128) * self.bloom_bits as u128) >> 64) as usize
    }

    #[inline(always)]
    fn bloom_set(&mut self, b: usize, key: u64) {
        let hash = key_hash(key);
        for i in 0..BLOOM_HASHES as usize {
            let p = self.bloom_pos(hash, i);
            self.bloom[b * self.bloom_words + p / 64] |= 1 << (p % 64);
        }
    }

    /// Whether the filter lets `key` through (always without a filter).
    #[inline(always)]
    fn could_exist(&self, b: usize, key: u64) -> bool {
        if self.bloom_words == 0 {
            return true;
        }
        let hash = key_hash(key);
        (0..BLOOM_HASHES as usize).all(|i| {
            let p = self.bloom_pos(hash, i);
            self.bloom[b * self.bloom_words + p / 64] & (1 << (p % 64)) != 0
        })
    }

    fn bloom_rebuild(&mut self, b: usize) {
        if self.bloom_words == 0 {
            return;
        }
        self.bloom[b * self.bloom_words..(b + 1) * self.bloom_words].fill(0);
        for i in 0..self.slots[b].len() {
            let k = self.slots[b][i].key;
            self.bloom_set(b, k);
        }
    }

    #[inline(always)]
    fn read_bucket(&mut self, b: u32, out: &mut Vec<Io>) {
        self.c.bucket_reads += 1;
        self.c.read_bytes += self.bucket_bytes as u64;
        out.push(Io { op: Op::Read, ns: self.ns, offset: self.bucket_offset(b), len: self.bucket_bytes, pid: Pid::NONE });
    }

    #[inline(always)]
    fn write_bucket(&mut self, b: u32, out: &mut Vec<Io>) {
        self.c.bucket_writes += 1;
        self.c.write_bytes += self.bucket_bytes as u64;
        out.push(Io { op: Op::Write, ns: self.ns, offset: self.bucket_offset(b), len: self.bucket_bytes, pid: self.pid });
    }

    /// Collect the keys of evicted items from now on (see [`BigHash::take_evicted`]).
    pub(crate) fn collect_evicted(&mut self) {
        self.evicted_keys.collect();
    }

    /// The keys evicted since the last call (empty unless collecting).
    pub(crate) fn take_evicted(&mut self, into: &mut Vec<u64>) {
        self.evicted_keys.take(into);
    }

    /// Look `key` up: the bloom filter, then a bucket read. The item's bytes if found.
    pub(crate) fn lookup(&mut self, key: u64, out: &mut Vec<Io>) -> Option<u32> {
        if self.n_buckets == 0 {
            return None;
        }
        self.c.lookups += 1;
        let b = self.bucket_of(key);
        if !self.could_exist(b as usize, key) {
            self.c.bloom_rejects += 1;
            return None;
        }
        self.read_bucket(b, out);
        if let Some(s) = self.slots[b as usize].iter().find(|s| s.key == key) {
            self.c.hits += 1;
            Some(s.bytes - ITEM_OVERHEAD_BYTES)
        } else {
            self.c.bloom_false_positives += 1;
            None
        }
    }

    /// Store `key` with an item of `item_bytes` (key + value, at most the small-item limit):
    /// read the bucket, drop the old copy, push out the oldest items until it fits, write.
    pub(crate) fn insert(&mut self, key: u64, item_bytes: u32, out: &mut Vec<Io>) {
        let b = self.bucket_of(key);
        let bi = b as usize;
        let need = Self::slot_bytes(item_bytes);
        debug_assert!(need <= self.capacity);
        if !(self.skip_empty_read && self.slots[bi].is_empty()) {
            self.read_bucket(b, out);
        }
        self.c.inserts += 1;
        self.c.inserted_item_bytes += item_bytes as u64;
        let mut changed = false;
        if let Some(i) = self.slots[bi].iter().position(|s| s.key == key) {
            let old = self.slots[bi].remove(i);
            self.used[bi] -= old.bytes;
            self.items -= 1;
            self.c.replaced += 1;
            changed = true;
        }
        if self.used[bi] + need > self.capacity {
            let mut free = self.capacity - self.used[bi];
            let mut n = 0;
            while free < need {
                free += self.slots[bi][n].bytes;
                n += 1;
            }
            self.evicted_keys.note(self.slots[bi][..n].iter().map(|s| s.key));
            self.slots[bi].drain(..n);
            self.used[bi] = self.capacity - free;
            self.items -= n as u64;
            self.c.evicted_items += n as u64;
            changed = true;
        }
        self.slots[bi].push(Slot { key, bytes: need });
        self.used[bi] += need;
        self.items += 1;
        if self.bloom_words > 0 {
            if changed {
                self.bloom_rebuild(bi);
            } else {
                self.bloom_set(bi, key);
            }
        }
        self.write_bucket(b, out);
    }

    /// Remove `key`: the bloom filter, a read, and a write if it was there. Whether it was.
    pub(crate) fn remove(&mut self, key: u64, out: &mut Vec<Io>) -> bool {
        if self.n_buckets == 0 {
            return false;
        }
        let b = self.bucket_of(key);
        let bi = b as usize;
        if !self.could_exist(bi, key) {
            self.c.bloom_rejects += 1;
            return false;
        }
        self.read_bucket(b, out);
        let Some(i) = self.slots[bi].iter().position(|s| s.key == key) else {
            self.c.bloom_false_positives += 1;
            return false;
        };
        let old = self.slots[bi].remove(i);
        self.used[bi] -= old.bytes;
        self.items -= 1;
        self.c.removes += 1;
        self.bloom_rebuild(bi);
        self.write_bucket(b, out);
        true
    }

    pub(crate) fn check_invariants(&self) {
        let mut items = 0;
        for (b, s) in self.slots.iter().enumerate() {
            let used: u32 = s.iter().map(|x| x.bytes).sum();
            assert_eq!(used, self.used[b], "bucket {b} used bytes");
            assert!(used <= self.capacity, "bucket {b} overfull");
            for x in s {
                assert_eq!(self.bucket_of(x.key) as usize, b, "key {} in the wrong bucket", x.key);
                assert!(self.could_exist(b, x.key), "bloom filter of bucket {b} misses key {}", x.key);
            }
            items += s.len() as u64;
        }
        assert_eq!(items, self.items);
    }
}
