//! SSTables as sorted arrays: one entry per key (keys ascending), the entry's stored size with
//! a tombstone flag, the sequence number of the write it holds, and a sparse offset index (the
//! file offset of every 64th entry, as an SSTable's index block names the offsets of its data
//! blocks), so a record's offset costs at most 63 additions.

use wafsim_workload::files::FileId;

/// Flag in a stored size: the entry is a tombstone (a delete).
pub const TOMBSTONE: u32 = 1 << 31;
/// Entries per sparse-index step.
const SPARSE: usize = 64;

/// Stored bytes of an entry (flag removed).
#[inline(always)]
pub fn entry_bytes(size: u32) -> u32 {
    size & !TOMBSTONE
}

/// Whether an entry is a tombstone.
#[inline(always)]
pub fn is_tombstone(size: u32) -> bool {
    size & TOMBSTONE != 0
}

/// Sorted entries: keys ascending and unique, their stored sizes and sequence numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    pub(crate) keys: Vec<u64>,
    pub(crate) sizes: Vec<u32>,
    pub(crate) seqs: Vec<u64>,
}

impl Run {
    pub(crate) fn with_capacity(n: usize) -> Run {
        Run { keys: Vec::with_capacity(n), sizes: Vec::with_capacity(n), seqs: Vec::with_capacity(n) }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, key: u64, size: u32, seq: u64) {
        debug_assert!(self.keys.last().is_none_or(|&k| k < key), "run keys must ascend");
        self.keys.push(key);
        self.sizes.push(size);
        self.seqs.push(seq);
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
}

impl Table {
    /// A table over `run` in `file`; the file is `block`-rounded.
    pub(crate) fn new(run: Run, file: FileId, group: u32, level: u32, block: u64) -> Table {
        let mut sparse = Vec::with_capacity(run.len() / SPARSE + 1);
        let mut off = 0u64;
        let mut tombstones = 0;
        for (i, &s) in run.sizes.iter().enumerate() {
            if i % SPARSE == 0 {
                sparse.push(off);
            }
            off += entry_bytes(s) as u64;
            tombstones += is_tombstone(s) as u64;
        }
        Table { run, sparse, data_bytes: off, file_bytes: off.div_ceil(block) * block, file, group, level, tombstones }
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
        let base = i / SPARSE * SPARSE;
        let mut off = self.sparse[i / SPARSE];
        for &s in &self.run.sizes[base..i] {
            off += entry_bytes(s) as u64;
        }
        off
    }

    /// First entry with a key at or above `key`.
    #[inline]
    pub fn lower_bound(&self, key: u64) -> usize {
        self.run.keys.partition_point(|&k| k < key)
    }

    /// Whether the key ranges of `self` and [lo, hi] meet.
    #[inline]
    pub fn overlaps(&self, lo: u64, hi: u64) -> bool {
        self.min_key() <= hi && lo <= self.max_key()
    }
}

/// One entry a merge keeps: the newest of its key among the inputs, found at entry `pos` of
/// the piece tagged `tag`.
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

/// Merge sorted inputs linearly, keeping the entry with the highest sequence number of each
/// key. Each input is a list of pieces in key order whose key ranges do not overlap (one
/// SSTable, or the overlapping files of one level), each piece a run with a tag (its table).
/// Tombstones are marked dropped when `drop_tombstones`. `sink` gets each kept entry in
/// ascending key order.
pub(crate) fn merge<F: FnMut(Kept)>(inputs: &[Vec<(&Run, u32)>], drop_tombstones: bool, mut sink: F) {
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
    while let Some(min) = head.iter().flatten().copied().min() {
        let mut best: Option<Kept> = None;
        for i in 0..inputs.len() {
            if head[i] != Some(min) {
                continue;
            }
            let (run, tag) = inputs[i][piece[i]];
            let (size, seq) = (run.sizes[pos[i]], run.seqs[pos[i]]);
            if best.is_none_or(|b| seq > b.seq) {
                best = Some(Kept { key: min, size, seq, tag, pos: pos[i], dropped: false });
            }
            pos[i] += 1;
            settle(i, &mut piece, &mut pos, &mut head);
        }
        let mut k = best.expect("an input holds the key");
        k.dropped = drop_tombstones && is_tombstone(k.size);
        sink(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(entries: &[(u64, u32, u64)]) -> Run {
        let mut r = Run::default();
        for &(k, s, q) in entries {
            r.push(k, s, q);
        }
        r
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
        assert_eq!(t.data_bytes, total);
        assert_eq!(t.file_bytes, total.div_ceil(4096) * 4096);
        assert_eq!((t.min_key(), t.max_key(), t.lower_bound(150), t.lower_bound(1000)), (0, 199, 150, 200));
    }

    #[test]
    fn merge_keeps_the_newest_version_and_drops_tombstones_when_asked() {
        let old = run(&[(1, 10, 1), (2, 10, 2), (5, 10, 3)]);
        let new = run(&[(2, 20, 9), (3, TOMBSTONE | 4, 8), (5, TOMBSTONE | 4, 7)]);
        let inputs = vec![vec![(&old, 0u32)], vec![(&new, 1u32)]];
        let mut out = Vec::new();
        merge(&inputs, false, |k| out.push((k.key, k.size, k.seq, k.tag, k.pos, k.dropped)));
        assert_eq!(
            out,
            vec![(1, 10, 1, 0, 0, false), (2, 20, 9, 1, 0, false), (3, TOMBSTONE | 4, 8, 1, 1, false), (5, TOMBSTONE | 4, 7, 1, 2, false)]
        );
        let mut out = Vec::new();
        merge(&inputs, true, |k| out.push((k.key, k.dropped)));
        assert_eq!(out, vec![(1, false), (2, false), (3, true), (5, true)]);
        // Disjoint pieces of one input are walked in order; positions are per piece.
        let p1 = run(&[(1, 1, 1), (2, 1, 1)]);
        let p2 = run(&[(7, 1, 1)]);
        let inputs = vec![vec![(&p1, 4u32), (&p2, 5u32)]];
        let mut keys = Vec::new();
        merge(&inputs, false, |k| keys.push((k.key, k.tag, k.pos)));
        assert_eq!(keys, vec![(1, 4, 0), (2, 4, 1), (7, 5, 0)]);
    }
}
