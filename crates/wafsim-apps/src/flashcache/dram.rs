//! The DRAM cache in front of Navy: CacheLib's `MMLru` over a byte capacity, with the item
//! flags the hybrid cache keeps for the flash tier.
//!
//! Sources (facebook/CacheLib, paths under `cachelib/`):
//! - `allocator/MMLru.h` (`add`, `recordAccess`): an item enters at the head of the LRU with
//!   its update time set to now; an access moves it to the head and refreshes the update time
//!   only on the item's first access after insertion or when at least `lruRefreshTime` seconds
//!   passed since the last refresh (CacheBench `lruRefreshSec` 60). The update time is what
//!   `getLastAccessTime()` returns, so the admission policy sees it with that resolution.
//! - `allocator/CacheAllocator.h` (eviction path, `shouldWriteToNvmCache`): an item evicted
//!   from DRAM that came from flash and still has its copy there (`NvmClean` and not
//!   `NvmEvicted`) is not written again; `NvmCache::evictCB` marks a DRAM item `NvmEvicted`
//!   when its flash copy is evicted.
//!
//! Modelling choices: the capacity counts key + value bytes of each item (slab classes, item
//! headers and per-slab rounding are not modelled; they shrink the effective capacity, which the
//! DRAM size's range covers); one pool, one LRU (CacheBench's default allocator "LRU" with
//! the insertion point at the head); the refresh time is fixed (the `lruRefreshRatio` raise
//! with the tail age is not modelled; it can only make refreshes rarer).

use std::collections::HashMap;

use super::BuildKeyHasher;

const NIL: u32 = u32::MAX;

/// The item's copy on flash is valid (it was read from flash, or written there).
pub const NVM_CLEAN: u8 = 1;
/// The item was `NVM_CLEAN` but its flash copy has since been evicted.
pub const NVM_EVICTED: u8 = 2;
/// Accessed since it was inserted (`MMLru`'s accessed bit).
const ACCESSED: u8 = 4;

#[derive(Debug, Clone, Copy)]
struct Node {
    key: u64,
    prev: u32,
    next: u32,
    bytes: u32,
    /// Seconds of simulated time at the last refresh (`MMLru` update time).
    update: u32,
    flags: u8,
}

/// An item the DRAM cache evicted, as the flash tier's gates see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DramEvicted {
    /// The key.
    pub key: u64,
    /// Key + value bytes.
    pub bytes: u32,
    /// Its flags ([`NVM_CLEAN`], [`NVM_EVICTED`]).
    pub flags: u8,
    /// Its last access time as the LRU recorded it (seconds).
    pub last_access: u32,
}

/// What the DRAM cache has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DramCounters {
    /// Lookups.
    pub lookups: u64,
    /// Of which found.
    pub hits: u64,
    /// Items inserted (new items, replacements and copies read back from flash).
    pub inserts: u64,
    /// Items evicted to make room.
    pub evictions: u64,
    /// Accesses that moved an item to the head (the others fell inside the refresh time).
    pub promotions: u64,
}

/// An LRU of items over a byte capacity.
pub struct DramCache {
    capacity: u64,
    used: u64,
    refresh: u32,
    map: HashMap<u64, u32, BuildKeyHasher>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    c: DramCounters,
}

impl DramCache {
    /// An empty cache of `capacity` bytes (key + value) whose accesses refresh an item at most
    /// every `refresh_secs` seconds.
    pub fn new(capacity: u64, refresh_secs: u32) -> DramCache {
        DramCache { capacity, used: 0, refresh: refresh_secs, map: HashMap::default(), nodes: Vec::new(), free: Vec::new(), head: NIL, tail: NIL, c: DramCounters::default() }
    }

    /// Counters so far.
    pub fn counters(&self) -> &DramCounters {
        &self.c
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes held.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Items held.
    pub fn items(&self) -> u64 {
        self.map.len() as u64
    }

    /// Whether `key` is held.
    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    /// `key`'s flags, if held.
    pub fn flags(&self, key: u64) -> Option<u8> {
        self.map.get(&key).map(|&i| self.nodes[i as usize].flags & (NVM_CLEAN | NVM_EVICTED))
    }

    /// `key`'s last access time (seconds), if held.
    pub fn last_access(&self, key: u64) -> Option<u32> {
        self.map.get(&key).map(|&i| self.nodes[i as usize].update)
    }

    /// Keys from the most to the least recently refreshed.
    pub fn order(&self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.map.len());
        let mut i = self.head;
        while i != NIL {
            v.push(self.nodes[i as usize].key);
            i = self.nodes[i as usize].next;
        }
        v
    }

    #[inline(always)]
    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.nodes[i as usize].prev, self.nodes[i as usize].next);
        if p != NIL {
            self.nodes[p as usize].next = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.nodes[n as usize].prev = p;
        } else {
            self.tail = p;
        }
    }

    #[inline(always)]
    fn push_head(&mut self, i: u32) {
        self.nodes[i as usize].prev = NIL;
        self.nodes[i as usize].next = self.head;
        if self.head != NIL {
            self.nodes[self.head as usize].prev = i;
        } else {
            self.tail = i;
        }
        self.head = i;
    }

    /// Look `key` up at time `now` (seconds); a hit records the access as `MMLru` does.
    #[inline]
    pub fn get(&mut self, key: u64, now: u32) -> bool {
        self.c.lookups += 1;
        let Some(&i) = self.map.get(&key) else { return false };
        self.c.hits += 1;
        let n = self.nodes[i as usize];
        if n.flags & ACCESSED == 0 || now >= n.update.saturating_add(self.refresh) {
            self.c.promotions += 1;
            self.nodes[i as usize].flags |= ACCESSED;
            self.nodes[i as usize].update = now;
            if self.head != i {
                self.unlink(i);
                self.push_head(i);
            }
        }
        true
    }

    /// Insert `key` (`bytes` of key + value, `flags`) at the head at time `now`, replacing an
    /// older copy; push what the capacity then forces out (oldest first) to `evicted`. An item
    /// larger than the whole capacity evicts itself.
    pub fn insert(&mut self, key: u64, bytes: u32, flags: u8, now: u32, evicted: &mut Vec<DramEvicted>) {
        self.remove(key);
        self.c.inserts += 1;
        let node = Node { key, prev: NIL, next: NIL, bytes, update: now, flags: flags & (NVM_CLEAN | NVM_EVICTED) };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.push_head(i);
        self.map.insert(key, i);
        self.used += bytes as u64;
        while self.used > self.capacity {
            let t = self.tail;
            let n = self.nodes[t as usize];
            self.unlink(t);
            self.map.remove(&n.key);
            self.free.push(t);
            self.used -= n.bytes as u64;
            self.c.evictions += 1;
            evicted.push(DramEvicted { key: n.key, bytes: n.bytes, flags: n.flags & (NVM_CLEAN | NVM_EVICTED), last_access: n.update });
        }
    }

    /// Drop `key`; its flags if it was held.
    pub fn remove(&mut self, key: u64) -> Option<u8> {
        let i = self.map.remove(&key)?;
        self.unlink(i);
        self.free.push(i);
        let n = self.nodes[i as usize];
        self.used -= n.bytes as u64;
        Some(n.flags & (NVM_CLEAN | NVM_EVICTED))
    }

    /// The flash copy of `key` was evicted: a clean DRAM copy becomes `NVM_EVICTED` (it will be
    /// written again when DRAM evicts it).
    #[inline]
    pub fn mark_nvm_evicted(&mut self, key: u64) {
        if let Some(&i) = self.map.get(&key) {
            let f = &mut self.nodes[i as usize].flags;
            if *f & NVM_CLEAN != 0 {
                *f |= NVM_EVICTED;
            }
        }
    }

    pub(crate) fn check_invariants(&self) {
        let order = self.order();
        assert_eq!(order.len(), self.map.len(), "LRU list and map disagree");
        let used: u64 = order.iter().map(|k| self.nodes[self.map[k] as usize].bytes as u64).sum();
        assert_eq!(used, self.used);
        assert!(self.used <= self.capacity);
    }
}
