//! SSTables as sorted arrays: one entry per key (keys ascending), the entry's stored size with
//! a tombstone or partial flag, the sequence number of the write it holds, and a sparse offset
//! index (the file offset of every 64th entry, as an SSTable's index block names the offsets of
//! its data blocks) with each entry's offset from its block's start beside its size.
//!
//! Partial rows (Cassandra's cell-level updates, `LsmConfig::partial_updates`): an entry
//! flagged [`PARTIAL`] holds only some cells of its row; older versions of the key still
//! matter until a full version or a tombstone. `Cells::combine` is the one rule every merge
//! (memtable, compaction, read) uses to put a partial version over an older one.

use wafsim_core::pipeline::FileId;

/// Flag in a stored size: the entry is a tombstone (a delete).
pub const TOMBSTONE: u32 = 1 << 31;
/// Flag in a stored size: the entry is a partial row (some cells only; never with
/// [`TOMBSTONE`]). Stored sizes stay below this bit.
pub const PARTIAL: u32 = 1 << 30;
/// Entries per sparse-index step.
const SPARSE: usize = 64;

/// Stored bytes of an entry (flags removed).
#[inline(always)]
pub fn entry_bytes(size: u32) -> u32 {
    size & !(TOMBSTONE | PARTIAL)
}

/// Whether an entry is a tombstone.
#[inline(always)]
pub fn is_tombstone(size: u32) -> bool {
    size & TOMBSTONE != 0
}

/// Whether an entry is a partial row.
#[inline(always)]
pub fn is_partial(size: u32) -> bool {
    size & PARTIAL != 0
}

/// Record sizes: how a stored size splits into key, value and overhead, and how a partial
/// version combines with an older one.
///
/// The cell approximation: a row's cells are YCSB's fields, all the same length, and an
/// update rewrites whole fields. The union of a full row and any of its cells is the full
/// row; the union of partial rows is taken as the largest of them (exact when the updates
/// rewrote the same fields, as a hot key's repeated one-field updates often do; an
/// underestimate otherwise: two one-field updates of different fields hold two cells). A sum
/// capped at the full size would be exact for distinct fields but needs the row's full size,
/// which a partial row with no full version below does not know; the largest is the bound
/// that needs nothing. Combined sizes are combined values: value = max of the values,
/// overhead that of the result's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cells {
    pub key_bytes: u32,
    /// Overhead of a full row (and of a tombstone).
    pub full_overhead: u32,
    /// Overhead of a partial row.
    pub partial_overhead: u32,
}

impl Cells {
    /// Value bytes of a stored entry (0 for a tombstone).
    #[inline]
    pub fn value(self, size: u32) -> u32 {
        let o = if is_partial(size) { self.partial_overhead } else { self.full_overhead };
        entry_bytes(size) - self.key_bytes - o
    }

    /// A full row of `value` bytes.
    #[inline]
    pub fn full(self, value: u32) -> u32 {
        self.key_bytes + value + self.full_overhead
    }

    /// A partial row of `value` bytes.
    #[inline]
    pub fn partial(self, value: u32) -> u32 {
        (self.key_bytes + value + self.partial_overhead) | PARTIAL
    }

    /// A partial version `new` over the older version `old`: over a full row, the full row
    /// (value the larger of the two); over a partial row, a partial row (the larger); over a
    /// tombstone, the partial row alone, which is then complete (nothing older matters), so a
    /// full row of the partial's value (counted with the full-row overhead).
    #[inline]
    pub fn combine(self, new: u32, old: u32) -> u32 {
        debug_assert!(is_partial(new));
        if is_tombstone(old) {
            return self.full(self.value(new));
        }
        let v = self.value(new).max(self.value(old));
        if is_partial(old) {
            self.partial(v)
        } else {
            self.full(v)
        }
    }

    /// A partial row with nothing older anywhere is complete: a full row of its value.
    #[inline]
    pub fn complete(self, size: u32) -> u32 {
        if is_partial(size) {
            self.full(self.value(size))
        } else {
            size
        }
    }
}

/// What a table knows of one entry besides its key. Kept together because a point read
/// needs all three at once (the version's age, its size and where it sits in the file): apart,
/// they were three cache misses per table a read visits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Sequence number of the write this version holds.
    pub seq: u64,
    /// Stored size with the tombstone and partial flags.
    pub size: u32,
    /// File offset of the entry from the start of its 64-entry block ([`REL_FAR`]: too far
    /// for 32 bits, sum the sizes).
    pub rel: u32,
}

/// `Meta::rel` of an entry further than 4 GiB into its block (records of tens of MiB).
const REL_FAR: u32 = u32::MAX;

/// Sorted entries: keys ascending and unique, each with its [`Meta`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    pub(crate) keys: Vec<u64>,
    pub(crate) meta: Vec<Meta>,
}

impl Run {
    pub(crate) fn with_capacity(n: usize) -> Run {
        Run { keys: Vec::with_capacity(n), meta: Vec::with_capacity(n) }
    }

    /// Stored size (with flags) of entry `i`.
    #[inline(always)]
    pub(crate) fn size(&self, i: usize) -> u32 {
        self.meta[i].size
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, key: u64, size: u32, seq: u64) {
        debug_assert!(self.keys.last().is_none_or(|&k| k < key), "run keys must ascend");
        self.keys.push(key);
        self.meta.push(Meta { seq, size, rel: 0 });
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// One SSTable: its entries, the file holding them and where it sits in the tree.
#[derive(Debug, Clone)]
pub struct Table {
    pub(crate) run: Run,
    /// File offset of entries 0, 64, 128, ...
    sparse: Vec<u64>,
    /// Bytes of the entries (sum of stored sizes).
    pub(crate) data_bytes: u64,
    /// File size: `data_bytes` rounded up to whole file-system blocks.
    pub(crate) file_bytes: u64,
    pub(crate) file: FileId,
    pub(crate) group: u32,
    /// Leveled: the level. Size-tiered: the tier (compactions its oldest data went through).
    pub(crate) level: u32,
    /// Tombstones among the entries.
    pub(crate) tombstones: u64,
    /// Partial rows among the entries.
    pub(crate) partials: u64,
    /// A blocked bloom filter over the keys (one 64-bit word per key, three bits in it, about
    /// 16 bits per key): the model's bloom filters are perfect (an exact search follows a
    /// "maybe"), this one only spares the simulator a binary search through a table that
    /// cannot hold the key.
    filter: Vec<u64>,
    /// Keys of entries 0, 64, 128, ... (for [`Table::lower_bound`]).
    sparse_keys: Vec<u64>,
}

/// The filter word and the three bits of `key` in a filter of `mask + 1` words.
#[inline(always)]
fn filter_probe(key: u64, mask: u64) -> (usize, u64) {
    let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let h2 = (h >> 32) ^ key.rotate_left(17).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    let bits = (1u64 << (h2 & 63)) | (1u64 << ((h2 >> 6) & 63)) | (1u64 << ((h2 >> 12) & 63));
    ((h & mask) as usize, bits)
}

impl Table {
    /// A table over `run` in `file`; the file is `block`-rounded.
    pub(crate) fn new(mut run: Run, file: FileId, group: u32, level: u32, block: u64) -> Table {
        let mut sparse = Vec::with_capacity(run.len() / SPARSE + 1);
        let mut off = 0u64;
        let (mut tombstones, mut partials) = (0, 0);
        for (i, m) in run.meta.iter_mut().enumerate() {
            if i % SPARSE == 0 {
                sparse.push(off);
            }
            let rel = off - sparse[i / SPARSE];
            m.rel = if rel < REL_FAR as u64 { rel as u32 } else { REL_FAR };
            let s = m.size;
            off += entry_bytes(s) as u64;
            tombstones += is_tombstone(s) as u64;
            partials += is_partial(s) as u64;
        }
        let sparse_keys = run.keys.iter().step_by(SPARSE).copied().collect();
        let words = (run.len() / 4).max(1).next_power_of_two();
        let mut filter = vec![0u64; words];
        for &k in &run.keys {
            let (w, bits) = filter_probe(k, words as u64 - 1);
            filter[w] |= bits;
        }
        Table { run, sparse, data_bytes: off, file_bytes: off.div_ceil(block) * block, file, group, level, tombstones, partials, filter, sparse_keys }
    }

    /// False when the table cannot hold `key`; true when it may (a search decides).
    #[inline]
    pub(crate) fn may_contain(&self, key: u64) -> bool {
        let (w, bits) = filter_probe(key, self.filter.len() as u64 - 1);
        self.filter[w] & bits == bits
    }

    /// Smallest key (tables are never empty).
    #[inline]
    pub fn min_key(&self) -> u64 {
        self.run.keys[0]
    }

    /// Largest key.
    #[inline]
    pub fn max_key(&self) -> u64 {
        *self.run.keys.last().expect("tables are not empty")
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.run.len()
    }

    /// No entries (never true for a live table).
    pub fn is_empty(&self) -> bool {
        self.run.is_empty()
    }

    /// File offset of entry `i` (`i == len()` gives the data size).
    #[inline]
    pub fn offset(&self, i: usize) -> u64 {
        if i >= self.run.len() {
            return self.data_bytes;
        }
        let base = self.sparse[i / SPARSE];
        let rel = self.run.meta[i].rel;
        if rel != REL_FAR {
            return base + rel as u64;
        }
        base + self.run.meta[i / SPARSE * SPARSE..i].iter().map(|m| entry_bytes(m.size) as u64).sum::<u64>()
    }

    /// First entry with a key at or above `key`.
    #[inline]
    pub fn lower_bound(&self, key: u64) -> usize {
        // Two steps, as a table's index block then a data block: the sparse keys (every 64th,
        // a small array that stays in cache) name the 64-entry block; inside it the key's
        // place is guessed by interpolation between the block's bounding keys and then walked
        // to. A binary search inside the block touched three or four of its eight cache lines,
        // one after the other; the guess lands within a line or two of the entry for the
        // spread-out keys stores hold (YCSB's are hashed), and the walk is exact for any keys.
        let b = self.sparse_keys.partition_point(|&k| k < key);
        if b == 0 {
            return 0;
        }
        let start = (b - 1) * SPARSE;
        let keys = &self.run.keys[start..(start + SPARSE).min(self.run.keys.len())];
        // keys[0] < key <= hi, where hi is the next block's first key (or the last key).
        let lo = self.sparse_keys[b - 1];
        let (hi, span) = match self.sparse_keys.get(b) {
            Some(&h) => (h, keys.len()),
            None => (keys[keys.len() - 1], keys.len() - 1),
        };
        if key > hi {
            return start + keys.len();
        }
        let mut i = if hi > lo { ((key - lo) as u128 * span as u128 / (hi - lo) as u128) as usize } else { 0 };
        i = i.clamp(1, keys.len());
        while i < keys.len() && keys[i] < key {
            i += 1;
        }
        while i > 1 && keys[i - 1] >= key {
            i -= 1;
        }
        start + i
    }

    /// Whether the key ranges of `self` and [lo, hi] meet.
    #[inline]
    pub fn overlaps(&self, lo: u64, hi: u64) -> bool {
        self.min_key() <= hi && lo <= self.max_key()
    }
}

/// One entry a merge keeps: the newest version of its key among the inputs (combined with
/// older ones when it is partial), found at entry `pos` of the piece tagged `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kept {
    pub key: u64,
    pub size: u32,
    pub seq: u64,
    pub tag: u32,
    pub pos: usize,
    /// A tombstone the merge drops (it covers the oldest data of its key).
    pub dropped: bool,
}

/// Merge sorted inputs linearly, one entry per key. Each input is a list of pieces in key
/// order whose key ranges do not overlap (one SSTable, or the overlapping files of one level),
/// each piece a run with a tag (its table). Per key the versions are walked newest first (by
/// sequence number): a full version or a tombstone is kept as it is; a partial version is
/// combined ([`Cells::combine`]) with the older ones down to the first full version or
/// tombstone (older versions than that are shadowed); with none in the merge it stays partial
/// (older versions may live in tables outside the merge). The kept entry has the newest
/// version's sequence number, tag and position. With `bottom` (the merge holds the oldest data
/// of its key range) tombstones are marked dropped and a partial result is complete (made
/// full). `sink` gets each kept entry in ascending key order.
pub(crate) fn merge<F: FnMut(Kept)>(inputs: &[Vec<(&Run, u32)>], bottom: bool, cells: Cells, mut sink: F) {
    // Per input: piece, entry, and the head key (None: exhausted).
    let mut piece = vec![0usize; inputs.len()];
    let mut pos = vec![0usize; inputs.len()];
    let mut head: Vec<Option<u64>> = vec![None; inputs.len()];
    let settle = |i: usize, piece: &mut [usize], pos: &mut [usize], head: &mut [Option<u64>]| {
        let pieces = &inputs[i];
        while piece[i] < pieces.len() && pos[i] >= pieces[piece[i]].0.len() {
            piece[i] += 1;
            pos[i] = 0;
        }
        head[i] = pieces.get(piece[i]).map(|p| p.0.keys[pos[i]]);
    };
    for i in 0..inputs.len() {
        settle(i, &mut piece, &mut pos, &mut head);
    }
    // The versions of one key: (seq, size).
    let mut versions: Vec<(u64, u32)> = Vec::with_capacity(inputs.len());
    while let Some(min) = head.iter().flatten().copied().min() {
        let mut best: Option<Kept> = None;
        let mut any_partial = false;
        versions.clear();
        for i in 0..inputs.len() {
            if head[i] != Some(min) {
                continue;
            }
            let (run, tag) = inputs[i][piece[i]];
            let Meta { size, seq, .. } = run.meta[pos[i]];
            any_partial |= is_partial(size);
            versions.push((seq, size));
            if best.is_none_or(|b| seq > b.seq) {
                best = Some(Kept { key: min, size, seq, tag, pos: pos[i], dropped: false });
            }
            pos[i] += 1;
            settle(i, &mut piece, &mut pos, &mut head);
        }
        let mut k = best.expect("an input holds the key");
        if any_partial && is_partial(k.size) {
            versions.sort_unstable_by_key(|v| std::cmp::Reverse(v.0));
            k.size = combine_down(cells, versions.iter().map(|v| v.1));
        }
        if bottom {
            k.dropped = is_tombstone(k.size);
            k.size = cells.complete(k.size);
        }
        sink(k);
    }
}

/// The versions of one key, newest first, combined: the newest if full or a tombstone, else
/// the partial newest over the older ones down to the first full version or tombstone.
pub(crate) fn combine_down(cells: Cells, mut newest_first: impl Iterator<Item = u32>) -> u32 {
    let mut acc = newest_first.next().expect("a version");
    for older in newest_first {
        if !is_partial(acc) {
            break;
        }
        acc = cells.combine(acc, older);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Key 24, full-row overhead 0, partial-row overhead 4: a 100-byte cell is 128 bytes.
    const CELLS: Cells = Cells { key_bytes: 24, full_overhead: 0, partial_overhead: 4 };

    fn run(entries: &[(u64, u32, u64)]) -> Run {
        let mut r = Run::default();
        for &(k, s, q) in entries {
            r.push(k, s, q);
        }
        r
    }

    #[test]
    fn the_filter_never_misses_a_key_and_rejects_most_others() {
        let mut r = Run::default();
        for k in 0..10_000u64 {
            r.push(k * 7919, 100, k);
        }
        let t = Table::new(r, 1, 0, 0, 4096);
        assert!((0..10_000u64).all(|k| t.may_contain(k * 7919)));
        let false_pos = (0..100_000u64).filter(|k| k % 7919 != 0 && t.may_contain(*k)).count();
        assert!(false_pos < 10_000, "{false_pos} of 100000 absent keys pass");
    }

    #[test]
    fn offsets_follow_sizes_and_files_round_up() {
        let mut r = Run::default();
        for k in 0..200u64 {
            r.push(k, 100 + k as u32, k);
        }
        let t = Table::new(r, 7, 1, 0, 4096);
        assert_eq!(t.offset(0), 0);
        assert_eq!(t.offset(1), 100);
        // Sum of 100..=169 = 70 * 100 + (0..70).sum()
        assert_eq!(t.offset(70), 70 * 100 + 69 * 70 / 2);
        let total: u64 = (0..200u64).map(|k| 100 + k).sum();
        assert_eq!(t.offset(200), total);
        // Entries more than 4 GiB into their block fall back to summing sizes.
        let mut r = Run::default();
        for k in 0..70u64 {
            r.push(k, (1 << 29) + 7, k);
        }
        let far = Table::new(r, 8, 1, 0, 4096);
        for i in [0, 7, 8, 9, 63, 64, 65, 70] {
            assert_eq!(far.offset(i), i as u64 * ((1 << 29) + 7), "entry {i}");
        }
        assert_eq!(t.data_bytes, total);
        assert_eq!(t.file_bytes, total.div_ceil(4096) * 4096);
        assert_eq!((t.min_key(), t.max_key(), t.lower_bound(150), t.lower_bound(1000)), (0, 199, 150, 200));
        // The two-step search agrees with a plain one everywhere, at block edges too.
        for k in 0..=200u64 {
            assert_eq!(t.lower_bound(k), t.run.keys.partition_point(|&x| x < k), "key {k}");
        }
    }

    #[test]
    fn the_interpolated_search_agrees_with_a_binary_one_on_skewed_keys() {
        // Keys bunched at both ends of a block, runs of neighbours, huge gaps, u64::MAX: the
        // interpolation's guess lands far off and the walk must still find the exact place.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut keys = std::collections::BTreeSet::new();
        for i in 0..3000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            keys.insert(match i % 5 {
                0 => x,
                1 => x % 1000,
                2 => u64::MAX - x % 50,
                3 => (1 << 40) + i,
                _ => x >> 40,
            });
        }
        let mut r = Run::default();
        for (q, &k) in keys.iter().enumerate() {
            r.push(k, 100, q as u64);
        }
        let t = Table::new(r, 1, 0, 0, 4096);
        let probes = keys.iter().flat_map(|&k| [k, k.wrapping_add(1), k.wrapping_sub(1)]).chain([0, u64::MAX, 1 << 63]);
        for k in probes {
            assert_eq!(t.lower_bound(k), t.run.keys.partition_point(|&x| x < k), "key {k}");
        }
    }

    #[test]
    fn merge_keeps_the_newest_version_and_drops_tombstones_when_asked() {
        let old = run(&[(1, 10, 1), (2, 10, 2), (5, 10, 3)]);
        let new = run(&[(2, 20, 9), (3, TOMBSTONE | 4, 8), (5, TOMBSTONE | 4, 7)]);
        let inputs = vec![vec![(&old, 0u32)], vec![(&new, 1u32)]];
        let mut out = Vec::new();
        merge(&inputs, false, CELLS, |k| out.push((k.key, k.size, k.seq, k.tag, k.pos, k.dropped)));
        assert_eq!(
            out,
            vec![(1, 10, 1, 0, 0, false), (2, 20, 9, 1, 0, false), (3, TOMBSTONE | 4, 8, 1, 1, false), (5, TOMBSTONE | 4, 7, 1, 2, false)]
        );
        let mut out = Vec::new();
        merge(&inputs, true, CELLS, |k| out.push((k.key, k.dropped)));
        assert_eq!(out, vec![(1, false), (2, false), (3, true), (5, true)]);
        // Disjoint pieces of one input are walked in order; positions are per piece.
        let p1 = run(&[(1, 1, 1), (2, 1, 1)]);
        let p2 = run(&[(7, 1, 1)]);
        let inputs = vec![vec![(&p1, 4u32), (&p2, 5u32)]];
        let mut keys = Vec::new();
        merge(&inputs, false, CELLS, |k| keys.push((k.key, k.tag, k.pos)));
        assert_eq!(keys, vec![(1, 4, 0), (2, 4, 1), (7, 5, 0)]);
    }

    #[test]
    fn partial_versions_combine_down_to_the_first_full_version_or_tombstone() {
        let (full, part, tomb) = (|v: u32| CELLS.full(v), |v: u32| CELLS.partial(v), TOMBSTONE | 24);
        assert_eq!((entry_bytes(full(1000)), entry_bytes(part(100))), (1024, 128));
        assert_eq!((CELLS.value(full(1000)), CELLS.value(part(100)), CELLS.value(tomb)), (1000, 100, 0));
        let keep = |inputs: &[Vec<(&Run, u32)>], bottom: bool| {
            let mut out = Vec::new();
            merge(inputs, bottom, CELLS, |k| out.push((k.key, k.size, k.seq, k.tag, k.pos, k.dropped)));
            out
        };
        // Key 1: full, then two partials: one full row of the full size, the newest's seq,
        // tag and position. Key 2: two partials, no full version in the merge: a partial of
        // the larger. Key 3: a tombstone, then a partial: the partial alone, complete (full).
        // Key 4: a partial over a full row over an older partial larger than both: the older
        // partial is shadowed (the walk stops at the full row). Key 5: a full row newer than
        // a partial: kept as it is.
        let a = run(&[(1, full(1000), 1), (2, part(100), 2), (3, tomb, 3), (4, part(1500), 4), (5, part(300), 5)]);
        let b = run(&[(1, part(100), 6), (2, part(300), 7), (4, full(1000), 8), (5, full(900), 9)]);
        let c = run(&[(1, part(100), 10), (3, part(200), 11), (4, part(100), 12)]);
        let inputs = vec![vec![(&a, 0u32)], vec![(&b, 1u32)], vec![(&c, 2u32)]];
        assert_eq!(
            keep(&inputs, false),
            vec![
                (1, full(1000), 10, 2, 0, false),
                (2, part(300), 7, 1, 1, false),
                (3, full(200), 11, 2, 1, false),
                (4, full(1000), 12, 2, 2, false),
                (5, full(900), 9, 1, 3, false),
            ]
        );
        // At the bottom (the merge holds the key's oldest data), a partial row is complete.
        let bottom = keep(&inputs, true);
        assert_eq!(bottom[1], (2, full(300), 7, 1, 1, false));
        // Order of the inputs does not matter: the sequence numbers decide.
        let swapped = vec![vec![(&c, 2u32)], vec![(&a, 0u32)], vec![(&b, 1u32)]];
        assert_eq!(keep(&swapped, false), keep(&inputs, false));
        // A lone partial stays partial; a tombstone over a partial is the tombstone.
        let d = run(&[(7, part(100), 1), (8, part(100), 2)]);
        let e = run(&[(8, tomb, 3)]);
        let inputs = vec![vec![(&d, 0u32)], vec![(&e, 1u32)]];
        assert_eq!(keep(&inputs, false), vec![(7, part(100), 1, 0, 0, false), (8, tomb, 3, 1, 0, false)]);
        assert_eq!(keep(&inputs, true), vec![(7, full(100), 1, 0, 0, false), (8, tomb, 3, 1, 0, true)]);
    }
}
