//! BlockCache, Navy's large-object engine: items appended to the buffer of the current region,
//! whole regions written, regions evicted (LRU or FIFO) when a clean region is needed, items of
//! an evicted region that were looked up since they were written reinserted (hits policy).

use std::collections::HashMap;

use wafsim_core::{Io, Op, Pid};

use super::{push_split, BuildKeyHasher, FlashCacheConfig, Layout, RegionEviction};

/// Bytes of an entry's descriptor (Navy `EntryDesc`).
pub const ENTRY_DESC_BYTES: u32 = 32;

const NIL: u32 = u32::MAX;

/// What BlockCache has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockCacheCounters {
    /// Items inserted.
    pub inserts: u64,
    /// Item (key + value) bytes inserted.
    pub inserted_item_bytes: u64,
    /// Region bytes those items take (descriptor and alignment included).
    pub stored_bytes: u64,
    /// Inserts refused (entry larger than a region).
    pub rejected: u64,
    /// Lookups that reached BlockCache.
    pub lookups: u64,
    /// Of which found.
    pub hits: u64,
    /// Hits served from the region buffer (no read).
    pub buffer_hits: u64,
    /// Inserts that replaced an older copy (which stays on the device as a hole).
    pub replaced: u64,
    /// Removes of keys found.
    pub removes: u64,
    /// Regions written.
    pub regions_written: u64,
    /// Regions reclaimed (taken by the eviction policy), with or without items.
    pub regions_reclaimed: u64,
    /// Of which held items (and were read).
    pub regions_evicted: u64,
    /// Items still in the index when their region was reclaimed.
    pub evicted_items: u64,
    /// Device bytes read for hits.
    pub item_read_bytes: u64,
    /// Device bytes read by reclaims.
    pub reclaim_read_bytes: u64,
    /// Device bytes read (hits and reclaims).
    pub read_bytes: u64,
    /// Device bytes written.
    pub write_bytes: u64,
    /// Device bytes trimmed.
    pub trim_bytes: u64,
    /// Items of reclaimed regions written again into the open region (hits reinsertion).
    pub reinserted: u64,
    /// Region bytes those reinsertions took.
    pub reinserted_bytes: u64,
    /// Items the reinsertion policy kept that found no room in the open region (dropped, as
    /// Navy drops a reinsertion whose allocation returns `Retry`); counted in `evicted_items`.
    pub reinsert_dropped: u64,
}

/// Where an item's newest copy is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemLoc {
    /// Region.
    pub region: u32,
    /// Byte offset in the region.
    pub offset: u32,
    /// Bytes it takes (descriptor and alignment included).
    pub size: u32,
    /// Item (key + serialized value) bytes.
    pub item: u32,
    /// Lookups since it was last written (Navy's index `currentHits`, saturating at 255).
    pub hits: u8,
}

/// Regions in eviction order: a doubly linked list, head = most recent, tail = next victim.
struct RegionList {
    prev: Vec<u32>,
    next: Vec<u32>,
    in_list: Vec<bool>,
    head: u32,
    tail: u32,
}

impl RegionList {
    fn new(n: u32) -> RegionList {
        RegionList { prev: vec![NIL; n as usize], next: vec![NIL; n as usize], in_list: vec![false; n as usize], head: NIL, tail: NIL }
    }

    fn push_head(&mut self, r: u32) {
        debug_assert!(!self.in_list[r as usize]);
        self.prev[r as usize] = NIL;
        self.next[r as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = r;
        } else {
            self.tail = r;
        }
        self.head = r;
        self.in_list[r as usize] = true;
    }

    fn unlink(&mut self, r: u32) {
        let (p, n) = (self.prev[r as usize], self.next[r as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
        self.in_list[r as usize] = false;
    }

    fn pop_tail(&mut self) -> Option<u32> {
        let t = self.tail;
        if t == NIL {
            return None;
        }
        self.unlink(t);
        Some(t)
    }

    fn touch(&mut self, r: u32) {
        if self.in_list[r as usize] && self.head != r {
            self.unlink(r);
            self.push_head(r);
        }
    }

    /// From the next victim to the most recent.
    fn order(&self) -> Vec<u32> {
        let mut v = Vec::new();
        let mut r = self.tail;
        while r != NIL {
            v.push(r);
            r = self.prev[r as usize];
        }
        v
    }
}

/// A sealed region being written in the background (see
/// [`super::FlashCacheConfig::spread_region_writes`]).
#[derive(Debug, Clone, Copy)]
struct Flushing {
    region: u32,
    /// Bytes written so far.
    done: u64,
    /// Request tick the flush started at, and the ticks it is spread over.
    start: u64,
    span: u64,
}

/// The engine.
pub struct BlockCache {
    ns: u32,
    pid: Pid,
    base: u64,
    region_bytes: u32,
    n_regions: u32,
    alloc_align: u32,
    block: u32,
    max_io: u32,
    lru: bool,
    /// Reinsert an evicted item with at least this many hits (0: no reinsertion).
    reinsert_hits: u32,
    /// Keys of evicted items, for the DRAM tier's `NvmEvicted` mark (kept only when collecting).
    evicted_keys: super::EvictedKeys,
    clean_target: usize,
    trim: bool,
    index: HashMap<u64, ItemLoc, BuildKeyHasher>,
    /// Items appended to each region since it was last reclaimed: (key, offset).
    entries: Vec<Vec<(u64, u32)>>,
    /// End of the last entry in each region.
    fill: Vec<u32>,
    /// Written since last trimmed (for the trim option).
    written: Vec<bool>,
    policy: RegionList,
    /// Clean regions, taken from the back.
    clean: Vec<u32>,
    /// The region being filled (in memory).
    current: Option<u32>,
    /// Spread region writes over the requests that fill the next region.
    spread: bool,
    flushing: Option<Flushing>,
    /// Requests seen ([`BlockCache::tick`]) and the tick of the last region seal.
    ticks: u64,
    last_seal: u64,
    c: BlockCacheCounters,
}

impl BlockCache {
    pub(crate) fn new(cfg: &FlashCacheConfig, layout: &Layout) -> BlockCache {
        let n = layout.regions;
        let mut policy = RegionList::new(n);
        // Navy tracks every empty region in index order: region 0 is the first victim.
        for r in 0..n {
            policy.push_head(r);
        }
        BlockCache {
            ns: cfg.ns,
            pid: cfg.blockcache_pid,
            base: layout.blockcache_offset,
            region_bytes: cfg.region_bytes,
            n_regions: n,
            alloc_align: layout.alloc_align,
            block: cfg.block_bytes,
            max_io: cfg.max_io_bytes,
            lru: cfg.eviction == RegionEviction::Lru,
            reinsert_hits: cfg.reinsertion_hits,
            evicted_keys: super::EvictedKeys::default(),
            clean_target: cfg.clean_regions as usize,
            trim: cfg.trim_evicted_regions,
            index: HashMap::default(),
            entries: vec![Vec::new(); n as usize],
            fill: vec![0; n as usize],
            written: vec![false; n as usize],
            policy,
            clean: Vec::new(),
            current: None,
            spread: cfg.spread_region_writes,
            flushing: None,
            ticks: 0,
            last_seal: 0,
            c: BlockCacheCounters::default(),
        }
    }

    /// Counters so far.
    pub fn counters(&self) -> &BlockCacheCounters {
        &self.c
    }

    /// Regions.
    pub fn regions(&self) -> u32 {
        self.n_regions
    }

    /// Items in the index.
    pub fn items(&self) -> u64 {
        self.index.len() as u64
    }

    /// Region bytes an item of `item_bytes` (key + value) takes: descriptor added, rounded up
    /// to the allocation alignment.
    pub fn entry_bytes(&self, item_bytes: u32) -> u64 {
        let a = self.alloc_align as u64;
        (item_bytes as u64 + ENTRY_DESC_BYTES as u64).div_ceil(a) * a
    }

    /// Byte offset of region `r` in the namespace.
    pub fn region_offset(&self, r: u32) -> u64 {
        self.base + r as u64 * self.region_bytes as u64
    }

    /// Where `key`'s newest copy is.
    pub fn lookup_loc(&self, key: u64) -> Option<ItemLoc> {
        self.index.get(&key).copied()
    }

    /// The region being filled and its fill.
    pub fn current_region(&self) -> Option<(u32, u32)> {
        self.current.map(|r| (r, self.fill[r as usize]))
    }

    /// Regions in eviction order, next victim first (clean and current regions are not in it).
    pub fn eviction_order(&self) -> Vec<u32> {
        self.policy.order()
    }

    /// Clean regions in reserve.
    pub fn clean_regions(&self) -> Vec<u32> {
        self.clean.clone()
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.index.keys().copied()
    }

    /// Collect the keys of evicted items from now on (see [`BlockCache::take_evicted`]).
    pub(crate) fn collect_evicted(&mut self) {
        self.evicted_keys.collect();
    }

    /// The keys evicted since the last call (empty unless collecting).
    pub(crate) fn take_evicted(&mut self, into: &mut Vec<u64>) {
        self.evicted_keys.take(into);
    }

    /// Look `key` up: the index (which counts the hit, as Navy's `SparseMapIndex::lookup`
    /// bumps `currentHits`), then a read of its extent unless its region is in memory. The
    /// item's bytes if found.
    pub(crate) fn lookup(&mut self, key: u64, out: &mut Vec<Io>) -> Option<u32> {
        self.c.lookups += 1;
        let loc = match self.index.get_mut(&key) {
            Some(l) => {
                l.hits = l.hits.saturating_add(1);
                *l
            }
            None => return None,
        };
        self.c.hits += 1;
        // A region still in a buffer (being filled, or being flushed) is read from memory.
        if self.current == Some(loc.region) || self.flushing.is_some_and(|f| f.region == loc.region) {
            self.c.buffer_hits += 1;
            return Some(loc.item);
        }
        let b = self.block as u64;
        let start = self.region_offset(loc.region) + loc.offset as u64;
        let end = start + loc.size as u64;
        let lo = start / b * b;
        let hi = end.div_ceil(b) * b;
        self.c.item_read_bytes += hi - lo;
        self.c.read_bytes += hi - lo;
        push_split(out, Op::Read, self.ns, lo, hi - lo, self.max_io, Pid::NONE);
        // Navy's FifoPolicy::touch is an empty override: only LRU reorders on a hit.
        if self.lru {
            self.policy.touch(loc.region);
        }
        Some(loc.item)
    }

    /// Append `key` with an item of `item_bytes` (key + value). False if the entry is larger
    /// than a region (Navy rejects it).
    pub(crate) fn insert(&mut self, key: u64, item_bytes: u32, out: &mut Vec<Io>) -> bool {
        let size = self.entry_bytes(item_bytes);
        if size > self.region_bytes as u64 {
            self.c.rejected += 1;
            return false;
        }
        let size = size as u32;
        // Reinsertions made by the reclaim that taking a clean region starts go into the new
        // open region first, so the item may not fit there any more: then close it too.
        let r = loop {
            if let Some(r) = self.current {
                if self.fill[r as usize] + size <= self.region_bytes {
                    break r;
                }
                self.current = None;
                self.write_region(r, out);
            }
            self.take_clean(out);
        };
        let offset = self.fill[r as usize];
        self.fill[r as usize] += size;
        self.entries[r as usize].push((key, offset));
        self.c.inserts += 1;
        self.c.inserted_item_bytes += item_bytes as u64;
        self.c.stored_bytes += size as u64;
        if self.index.insert(key, ItemLoc { region: r, offset, size, item: item_bytes, hits: 0 }).is_some() {
            self.c.replaced += 1;
        }
        true
    }

    /// Drop `key` from the index (its copy stays on the device as a hole). Whether it was there.
    pub(crate) fn remove(&mut self, key: u64) -> bool {
        if self.index.remove(&key).is_some() {
            self.c.removes += 1;
            true
        } else {
            false
        }
    }

    /// Write the current region now, partly filled (and finish a flush in progress).
    pub(crate) fn flush(&mut self, out: &mut Vec<Io>) {
        self.finish_flush(out);
        if let Some(r) = self.current.take() {
            self.write_region(r, out);
            self.finish_flush(out);
        }
    }

    /// One request has been applied: with spread region writes, write the flushing region's
    /// share of pieces due by now.
    #[inline(always)]
    pub(crate) fn tick(&mut self, out: &mut Vec<Io>) {
        self.ticks += 1;
        let Some(f) = self.flushing else { return };
        let rb = self.region_bytes as u64;
        let piece = self.max_io as u64;
        let elapsed = self.ticks - f.start;
        let due = if elapsed >= f.span { rb } else { (rb * elapsed).div_ceil(f.span).div_ceil(piece) * piece };
        self.write_pieces(due.min(rb), out);
    }

    /// Write the flushing region's pieces up to `upto` bytes; track it once it is whole.
    fn write_pieces(&mut self, upto: u64, out: &mut Vec<Io>) {
        let Some(f) = &mut self.flushing else { return };
        if upto > f.done {
            let (r, from) = (f.region, f.done);
            f.done = upto;
            self.c.write_bytes += upto - from;
            push_split(out, Op::Write, self.ns, self.region_offset(r) + from, upto - from, self.max_io, self.pid);
        }
        let f = self.flushing.expect("flushing");
        if f.done >= self.region_bytes as u64 {
            self.flushing = None;
            self.c.regions_written += 1;
            self.policy.push_head(f.region);
        }
    }

    /// Write what is left of the flushing region at once.
    fn finish_flush(&mut self, out: &mut Vec<Io>) {
        self.write_pieces(self.region_bytes as u64, out);
    }

    /// Write region `r`'s whole buffer and hand it to the eviction policy once it is on the
    /// device (Navy tracks a region when its flush completes). With spread writes the pieces go
    /// out over as many requests as the region took to fill (Navy flushes on a background
    /// thread while the next region fills; a flush still running when the next region seals
    /// is finished first, as Navy's second buffer must be free by then).
    fn write_region(&mut self, r: u32, out: &mut Vec<Io>) {
        self.written[r as usize] = true;
        self.finish_flush(out);
        let span = (self.ticks - self.last_seal).max(1);
        self.last_seal = self.ticks;
        self.flushing = Some(Flushing { region: r, done: 0, start: self.ticks, span });
        if !self.spread {
            self.finish_flush(out);
        }
    }

    /// Open a clean region for the allocator: reclaim one if none is left, take it, and
    /// reclaim until the reserve is full again (Navy schedules that reclaim when a region is
    /// taken, `RegionManager::getCleanRegion`; its reinsertions land in the region just taken).
    fn take_clean(&mut self, out: &mut Vec<Io>) {
        if self.clean.is_empty() {
            self.reclaim(out);
        }
        let r = self.clean.pop().expect("a clean region after reclaim");
        self.current = Some(r);
        while self.clean.len() < self.clean_target {
            self.reclaim(out);
        }
    }

    /// Evict the policy's victim: read it if it has items, drop its items from the index.
    fn reclaim(&mut self, out: &mut Vec<Io>) {
        // The layout guarantees clean_regions + 2 regions, so a victim always exists.
        let r = self.policy.pop_tail().expect("a region to evict");
        let ri = r as usize;
        self.c.regions_reclaimed += 1;
        if !self.entries[ri].is_empty() {
            self.c.regions_evicted += 1;
            let b = self.block as u64;
            let len = (self.fill[ri] as u64).div_ceil(b) * b;
            self.c.reclaim_read_bytes += len;
            self.c.read_bytes += len;
            push_split(out, Op::Read, self.ns, self.region_offset(r), len, self.max_io, Pid::NONE);
            let entries = std::mem::take(&mut self.entries[ri]);
            // Navy's `BlockCache::onRegionReclaim`: an entry the index no longer points at is
            // a hole; a live one is reinserted when the policy keeps it (`HitsReinsertionPolicy`:
            // currentHits >= threshold) and the open region has room, else evicted.
            for &(key, off) in &entries {
                let Some(loc) = self.index.get(&key).copied() else { continue };
                if loc.region != r || loc.offset != off {
                    continue;
                }
                if self.reinsert_hits > 0 && loc.hits as u32 >= self.reinsert_hits {
                    if let Some(c) = self.current.filter(|&c| self.fill[c as usize] + loc.size <= self.region_bytes) {
                        let o = self.fill[c as usize];
                        self.fill[c as usize] += loc.size;
                        self.entries[c as usize].push((key, o));
                        self.index.insert(key, ItemLoc { region: c, offset: o, hits: 0, ..loc });
                        self.c.reinserted += 1;
                        self.c.reinserted_bytes += loc.size as u64;
                        self.c.stored_bytes += loc.size as u64;
                        continue;
                    }
                    self.c.reinsert_dropped += 1;
                }
                self.index.remove(&key);
                self.c.evicted_items += 1;
                self.evicted_keys.note([key]);
            }
            let mut entries = entries;
            entries.clear();
            self.entries[ri] = entries;
        }
        self.fill[ri] = 0;
        if self.trim && self.written[ri] {
            let rb = self.region_bytes as u64;
            self.c.trim_bytes += rb;
            self.written[ri] = false;
            out.push(Io { op: Op::Trim, ns: self.ns, offset: self.region_offset(r), len: self.region_bytes, pid: Pid::NONE });
        }
        self.clean.push(r);
    }

    pub(crate) fn check_invariants(&self) {
        for (&k, loc) in &self.index {
            let r = loc.region as usize;
            assert!(!self.clean.contains(&loc.region), "key {k} in clean region {r}");
            assert!(self.entries[r].contains(&(k, loc.offset)), "key {k} not listed in region {r}");
            assert!(loc.offset + loc.size <= self.fill[r], "key {k} past the fill of region {r}");
        }
        let listed = self.policy.order();
        for r in 0..self.n_regions {
            let n = listed.iter().filter(|&&x| x == r).count()
                + self.clean.iter().filter(|&&x| x == r).count()
                + usize::from(self.current == Some(r))
                + usize::from(self.flushing.is_some_and(|f| f.region == r));
            assert_eq!(n, 1, "region {r} is in {n} places (policy, clean, current, flushing)");
        }
    }
}
