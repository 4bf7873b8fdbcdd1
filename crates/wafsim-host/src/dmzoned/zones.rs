//! The zone pool: every zone's type, device, write pointer, weight and mapping links, and the
//! zone lists of `drivers/md/dm-zoned-metadata.c`.
//!
//! - Cache zones (emulated on the regular device) and random zones (conventional zones of a disk)
//!   are randomly writable; sequential zones are written at their write pointer only.
//! - Free ("unmapped") lists are FIFO: allocation takes the head, freeing appends at the tail
//!   (`dmz_alloc_zone`, `dmz_free_zone`). There is one global cache list, per disk one random
//!   and one sequential list, and the global list of zones reserved for reclaim.
//! - Mapped lists (data and buffer zones) are kept in LRU order: every access moves a zone to the
//!   tail (`dmz_lru_zone`), and reclaim walks them from the head.
//!
//! A zone is on at most one list at a time, as in the kernel (`zone->link`), so the lists are
//! intrusive doubly linked lists over zone ids: O(1) rotate, allocate and free.

use super::config::{DiskLayout, Layout};
use super::{DevId, NONE};

/// Kind of a zone (`DMZ_CACHE`, `DMZ_RND`, `DMZ_SEQ`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZoneKind {
    /// Emulated zone of the regular cache device.
    Cache,
    /// Conventional zone of a zoned disk.
    Rnd,
    /// Sequential-write-required zone of a zoned disk.
    Seq,
}

pub(crate) const F_META: u8 = 1;
pub(crate) const F_RESERVED: u8 = 2;
pub(crate) const F_BUF: u8 = 4;
pub(crate) const F_RECLAIM: u8 = 8;

/// List ids: 0 unmapped cache, 1 mapped cache, 2 reserved, then four per disk.
pub(crate) type ListId = u16;
pub(crate) const L_NONE: ListId = u16::MAX;
pub(crate) const L_UNMAP_CACHE: ListId = 0;
pub(crate) const L_MAP_CACHE: ListId = 1;
pub(crate) const L_RESERVED: ListId = 2;

pub(crate) fn l_unmap_rnd(disk: u32) -> ListId {
    3 + 4 * disk as ListId
}
pub(crate) fn l_map_rnd(disk: u32) -> ListId {
    4 + 4 * disk as ListId
}
pub(crate) fn l_unmap_seq(disk: u32) -> ListId {
    5 + 4 * disk as ListId
}
pub(crate) fn l_map_seq(disk: u32) -> ListId {
    6 + 4 * disk as ListId
}

#[derive(Debug, Clone, Copy)]
pub(super) struct ListHead {
    pub(super) head: u32,
    pub(super) tail: u32,
    pub(super) len: u32,
}

const EMPTY: ListHead = ListHead { head: NONE, tail: NONE, len: 0 };

/// All zones, struct-of-arrays, indexed by global zone id.
#[derive(Debug, Clone)]
pub(crate) struct ZonePool {
    pub kind: Vec<ZoneKind>,
    pub dev: Vec<DevId>,
    /// Byte offset of the zone on its device.
    pub start: Vec<u64>,
    /// Write pointer in blocks from the zone start (sequential zones; 0 otherwise).
    pub wp: Vec<u32>,
    /// Valid blocks (`weight`).
    pub weight: Vec<u32>,
    /// Chunk mapped to the zone (data or buffer), `NONE` when unmapped.
    pub chunk: Vec<u32>,
    /// Data zone -> its buffer zone; buffer zone -> its data zone; else `NONE`.
    pub bzone: Vec<u32>,
    pub flags: Vec<u8>,
    /// User commands in flight on the zone (`zone->refcount`, `dmz_activate_zone`); only a
    /// timed driver sets it.
    pub active: Vec<u32>,
    pub(super) list: Vec<ListId>,
    pub(super) prev: Vec<u32>,
    pub(super) next: Vec<u32>,
    pub(super) heads: Vec<ListHead>,
    /// Cache zones that can hold data (metadata zones excluded), `zmd->nr_cache`.
    pub nr_cache: u32,
    /// Per disk: random zones that can hold data, `dev->nr_rnd`.
    pub nr_rnd: Vec<u32>,
    /// Per disk: sequential zones neither metadata nor reserved, `dev->nr_seq`.
    pub nr_seq: Vec<u32>,
}

impl ZonePool {
    /// Build the zones of a freshly formatted set and put every non-metadata zone on its free
    /// list in id order, reserving the first `reserved_seq` sequential zones (as
    /// `dmz_load_mapping` does on a set without mappings).
    pub fn new(l: &Layout) -> ZonePool {
        let n = l.nr_zones as usize;
        let ndisks = l.disks.len();
        let mut p = ZonePool {
            kind: Vec::with_capacity(n),
            dev: Vec::with_capacity(n),
            start: Vec::with_capacity(n),
            wp: vec![0; n],
            weight: vec![0; n],
            chunk: vec![NONE; n],
            bzone: vec![NONE; n],
            flags: vec![0; n],
            active: vec![0; n],
            list: vec![L_NONE; n],
            prev: vec![NONE; n],
            next: vec![NONE; n],
            heads: vec![EMPTY; 3 + 4 * ndisks],
            nr_cache: 0,
            nr_rnd: vec![0; ndisks],
            nr_seq: vec![0; ndisks],
        };
        for z in 0..l.cache_zones {
            p.kind.push(ZoneKind::Cache);
            p.dev.push(DevId::Cache);
            p.start.push(z as u64 * l.zone_size);
        }
        for (d, dl) in l.disks.iter().enumerate() {
            let DiskLayout { zones, conventional, .. } = *dl;
            for i in 0..zones {
                p.kind.push(if i < conventional { ZoneKind::Rnd } else { ZoneKind::Seq });
                p.dev.push(DevId::Disk(d as u32));
                p.start.push(i as u64 * l.zone_size);
            }
        }
        for z in l.meta_zone_ids() {
            p.flags[z as usize] |= F_META;
        }
        let mut reserved = 0;
        for z in 0..l.nr_zones {
            let zi = z as usize;
            if p.flags[zi] & F_META != 0 {
                continue;
            }
            match p.kind[zi] {
                ZoneKind::Cache => {
                    p.nr_cache += 1;
                    p.push_back(L_UNMAP_CACHE, z);
                }
                ZoneKind::Rnd => {
                    let d = p.disk(z);
                    p.nr_rnd[d as usize] += 1;
                    p.push_back(l_unmap_rnd(d), z);
                }
                ZoneKind::Seq => {
                    let d = p.disk(z);
                    if reserved < l.reserved_seq {
                        reserved += 1;
                        p.flags[zi] |= F_RESERVED;
                        p.push_back(L_RESERVED, z);
                    } else {
                        p.nr_seq[d as usize] += 1;
                        p.push_back(l_unmap_seq(d), z);
                    }
                }
            }
        }
        p
    }

    pub fn len(&self) -> usize {
        self.kind.len()
    }

    /// Disk index of a disk zone (0 for cache zones; callers check the kind first).
    pub fn disk(&self, z: u32) -> u32 {
        match self.dev[z as usize] {
            DevId::Disk(d) => d,
            DevId::Cache => 0,
        }
    }

    pub fn is_seq(&self, z: u32) -> bool {
        self.kind[z as usize] == ZoneKind::Seq
    }

    pub fn has(&self, z: u32, f: u8) -> bool {
        self.flags[z as usize] & f != 0
    }

    pub fn set_flag(&mut self, z: u32, f: u8) {
        self.flags[z as usize] |= f;
    }

    pub fn clear_flag(&mut self, z: u32, f: u8) {
        self.flags[z as usize] &= !f;
    }

    /// Zone `z` can be locked for reclaim (`dmz_lock_zone_reclaim`): not being reclaimed
    /// already and no user command in flight on it (never the case between two calls of the
    /// untimed driver).
    pub fn lockable(&self, z: u32) -> bool {
        !self.has(z, F_RECLAIM) && self.active[z as usize] == 0
    }

    // ----- intrusive lists -----

    pub fn list_len(&self, l: ListId) -> u32 {
        self.heads[l as usize].len
    }

    pub fn first(&self, l: ListId) -> u32 {
        self.heads[l as usize].head
    }

    pub fn next_in_list(&self, z: u32) -> u32 {
        self.next[z as usize]
    }

    pub fn list_of(&self, z: u32) -> ListId {
        self.list[z as usize]
    }

    #[inline]
    pub fn push_back(&mut self, l: ListId, z: u32) {
        debug_assert_eq!(self.list[z as usize], L_NONE, "zone {z} is already on a list");
        let h = &mut self.heads[l as usize];
        let old_tail = h.tail;
        self.prev[z as usize] = old_tail;
        self.next[z as usize] = NONE;
        if old_tail == NONE {
            h.head = z;
        } else {
            self.next[old_tail as usize] = z;
        }
        h.tail = z;
        h.len += 1;
        self.list[z as usize] = l;
    }

    /// Take `z` off its list (no-op when it is on none: `list_del_init`).
    #[inline]
    pub fn remove(&mut self, z: u32) {
        let l = self.list[z as usize];
        if l == L_NONE {
            return;
        }
        let (p, n) = (self.prev[z as usize], self.next[z as usize]);
        let h = &mut self.heads[l as usize];
        if p == NONE {
            h.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NONE {
            h.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        h.len -= 1;
        self.prev[z as usize] = NONE;
        self.next[z as usize] = NONE;
        self.list[z as usize] = L_NONE;
    }

    pub fn pop_front(&mut self, l: ListId) -> Option<u32> {
        let z = self.heads[l as usize].head;
        if z == NONE {
            return None;
        }
        self.remove(z);
        Some(z)
    }

    /// Move `z` to the tail of the list it is on, if any (`__dmz_lru_zone`). A zone already at
    /// the tail stays (the common case: a chunk written again before any other).
    #[inline]
    pub fn rotate(&mut self, z: u32) {
        let l = self.list[z as usize];
        if l != L_NONE && self.heads[l as usize].tail != z {
            self.remove(z);
            self.push_back(l, z);
        }
    }

    /// The mapped list a zone of this kind joins when a chunk is mapped to it.
    pub fn map_list(&self, z: u32) -> ListId {
        match self.kind[z as usize] {
            ZoneKind::Cache => L_MAP_CACHE,
            ZoneKind::Rnd => l_map_rnd(self.disk(z)),
            ZoneKind::Seq => l_map_seq(self.disk(z)),
        }
    }

    /// The free list a zone returns to (`dmz_free_zone`).
    pub fn unmap_list(&self, z: u32) -> ListId {
        match self.kind[z as usize] {
            ZoneKind::Cache => L_UNMAP_CACHE,
            ZoneKind::Rnd => l_unmap_rnd(self.disk(z)),
            ZoneKind::Seq if self.has(z, F_RESERVED) => L_RESERVED,
            ZoneKind::Seq => l_unmap_seq(self.disk(z)),
        }
    }

    /// The free list user writes allocate from: the cache zones with a cache device, else the
    /// single disk's random zones (`dmz_get_chunk_mapping`, `dmz_get_chunk_buffer`).
    pub fn user_list(&self) -> ListId {
        if self.nr_cache > 0 {
            L_UNMAP_CACHE
        } else {
            l_unmap_rnd(0)
        }
    }

    /// Allocate a zone for a user write (never a reserved zone); `None` when the list is empty.
    pub fn alloc_user(&mut self) -> Option<u32> {
        self.pop_front(self.user_list())
    }

    /// Allocate a reclaim destination for worker `disk` (`dmz_alloc_zone` with
    /// `DMZ_ALLOC_SEQ | DMZ_ALLOC_RECLAIM` from `dmz_reclaim_rnd_data`): a free sequential zone
    /// of this disk, then of the next disks round robin, then a reserved zone; with a cache
    /// device the same again for random (conventional) zones.
    pub fn alloc_reclaim(&mut self, disk: u32) -> Option<u32> {
        let n = self.nr_seq.len() as u32;
        for i in 0..n {
            if let Some(z) = self.pop_front(l_unmap_seq((disk + i) % n)) {
                return Some(z);
            }
        }
        if let Some(z) = self.pop_front(L_RESERVED) {
            return Some(z);
        }
        if self.nr_cache > 0 {
            for i in 0..n {
                if let Some(z) = self.pop_front(l_unmap_rnd((disk + i) % n)) {
                    return Some(z);
                }
            }
        }
        None
    }

    /// Return `z` to its free list; for a sequential zone the write pointer is rewound, and the
    /// zone's (device, byte offset) is returned when a RESET WRITE POINTER must be issued (the
    /// zone was not empty: `dmz_reset_zone`).
    pub fn free(&mut self, z: u32) -> Option<(DevId, u64)> {
        let zi = z as usize;
        debug_assert_eq!(self.weight[zi], 0, "freeing zone {z} with valid blocks");
        let mut reset = None;
        if self.kind[zi] == ZoneKind::Seq {
            if self.wp[zi] != 0 {
                reset = Some((self.dev[zi], self.start[zi]));
            }
            self.wp[zi] = 0;
        }
        let l = self.unmap_list(z);
        self.push_back(l, z);
        reset
    }

    /// Zones on a list, head first.
    pub fn iter_list(&self, l: ListId) -> ListIter<'_> {
        ListIter { pool: self, cur: self.first(l) }
    }

    /// List consistency (tests): links agree, lengths agree, every zone is on the list its
    /// state calls for.
    pub fn check_lists(&self) -> Result<(), String> {
        for (l, h) in self.heads.iter().enumerate() {
            let mut n = 0;
            let mut prev = NONE;
            let mut z = h.head;
            while z != NONE {
                if self.list[z as usize] as usize != l {
                    return Err(format!("zone {z} linked in list {l} but tagged {}", self.list[z as usize]));
                }
                if self.prev[z as usize] != prev {
                    return Err(format!("zone {z}: bad prev link in list {l}"));
                }
                prev = z;
                z = self.next[z as usize];
                n += 1;
                if n > self.len() as u32 {
                    return Err(format!("list {l} has a cycle"));
                }
            }
            if prev != h.tail || n != h.len {
                return Err(format!("list {l}: tail/len mismatch ({n} linked, {} counted)", h.len));
            }
        }
        Ok(())
    }
}

/// Iterator over a zone list, head (oldest) first.
pub(crate) struct ListIter<'a> {
    pool: &'a ZonePool,
    cur: u32,
}

impl Iterator for ListIter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.cur == NONE {
            return None;
        }
        let z = self.cur;
        self.cur = self.pool.next_in_list(z);
        Some(z)
    }
}
