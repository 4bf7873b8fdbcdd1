//! File-level workloads: [`SyntheticFiles`] makes file operations ([`FileOp`], the vocabulary
//! of wafsim-core's `pipeline::files`, re-exported here) from a few figures per group (file
//! sizes, how many files stay live, how writes interleave).

pub use wafsim_core::pipeline::files::{FileId, FileOp, FileSource};
use wafsim_core::Rng;

/// Which live file a group deletes when it holds more than its live files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteOrder {
    /// The oldest (first completed): files live for a fixed number of successors, as the
    /// SSTables of a compaction generation or the segments of a log.
    Oldest,
    /// A uniformly random one: lifetimes spread out.
    Random,
}

/// One group of a synthetic file workload.
///
/// ```
/// use wafsim_workload::files::{DeleteOrder, FileGroup};
/// // Files of 64 to 256 MiB written in 1 MiB appends, 16 kept, the oldest deleted first.
/// let g = FileGroup { file_bytes: (64 << 20, 256 << 20), live_files: 16, write_bytes: 1 << 20, ..FileGroup::default() };
/// assert_eq!(g.order, DeleteOrder::Oldest);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FileGroup {
    /// File size range, uniform (rounded down to whole `write_bytes`, at least one write).
    pub file_bytes: (u64, u64),
    /// Completed files kept; one more completed file deletes one.
    pub live_files: u32,
    /// Bytes per write.
    pub write_bytes: u32,
    /// Share of the workload's writes that go to this group (relative to the other groups).
    pub weight: f64,
    /// Which completed file is deleted when the group holds more than `live_files`.
    pub order: DeleteOrder,
    /// Fraction of this group's writes that rewrite a random write-sized piece of a random live
    /// file in place instead of appending (0 = append only).
    pub overwrite: f64,
}

impl Default for FileGroup {
    fn default() -> Self {
        FileGroup { file_bytes: (64 << 20, 64 << 20), live_files: 8, write_bytes: 1 << 20, weight: 1.0, order: DeleteOrder::Oldest, overwrite: 0.0 }
    }
}

/// A configuration [`SyntheticFiles::new`] rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("file group {group}: {reason}")]
pub struct FileGroupError {
    /// Index of the rejected group in the list given.
    pub group: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// A completed or growing file of a group.
#[derive(Debug, Clone, Copy)]
struct Open {
    file: FileId,
    size: u64,
    target: u64,
}

#[derive(Debug, Clone)]
struct GroupState {
    cfg: FileGroup,
    open: Option<Open>,
    /// Completed files, oldest first, with their sizes.
    live: Vec<(FileId, u64)>,
}

/// Counts of what a [`SyntheticFiles`] produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileStats {
    /// Files created.
    pub creates: u64,
    /// Files deleted.
    pub deletes: u64,
    /// Write operations (appends and in-place updates).
    pub writes: u64,
    /// Bytes written by them, appends and in-place updates together.
    pub write_bytes: u64,
    /// Bytes of in-place updates among `write_bytes`.
    pub overwrite_bytes: u64,
}

/// Groups writing files concurrently until `amount` bytes are written. Each step picks a group
/// by weight and gives it one write: the group's growing file gets its next append (a new file
/// is created when none grows); a file reaching its size completes, and a completed file beyond
/// the group's live files deletes one. Deterministic for a seed.
#[derive(Debug, Clone)]
pub struct SyntheticFiles {
    groups: Vec<GroupState>,
    /// Cumulative weights for the group choice.
    cum: Vec<f64>,
    rng: Rng,
    amount: u64,
    next_id: FileId,
    stats: FileStats,
}

impl SyntheticFiles {
    /// Groups writing together until `amount` bytes are written, deterministic for `seed`; fails on
    /// a group whose sizes, weight or overwrite fraction make no sense, or when no group has a
    /// positive weight.
    pub fn new(groups: Vec<FileGroup>, amount: u64, seed: u64) -> Result<SyntheticFiles, FileGroupError> {
        let mut cum = Vec::with_capacity(groups.len());
        let mut total = 0.0;
        for (i, g) in groups.iter().enumerate() {
            let err = |reason| Err(FileGroupError { group: i, reason });
            if g.write_bytes == 0 {
                return err("write_bytes must be positive");
            }
            if g.file_bytes.0 > g.file_bytes.1 || g.file_bytes.1 == 0 {
                return err("file_bytes must be a non-empty range (min <= max, max > 0)");
            }
            if !(g.weight.is_finite() && g.weight >= 0.0) {
                return err("weight must be a non-negative number");
            }
            if !(0.0..=1.0).contains(&g.overwrite) {
                return err("overwrite must be a fraction in [0, 1]");
            }
            total += g.weight;
            cum.push(total);
        }
        if groups.is_empty() || total <= 0.0 {
            return Err(FileGroupError { group: 0, reason: "need at least one group with a positive weight" });
        }
        let groups = groups.into_iter().map(|cfg| GroupState { cfg, open: None, live: Vec::new() }).collect();
        Ok(SyntheticFiles { groups, cum, rng: Rng::new(seed), amount, next_id: 0, stats: FileStats::default() })
    }

    /// Counts of what has been produced so far.
    pub fn stats(&self) -> FileStats {
        self.stats
    }

    fn pick_group(&mut self) -> usize {
        let x = self.rng.unit_f64() * self.cum[self.cum.len() - 1];
        self.cum.iter().position(|&c| x < c).unwrap_or(self.cum.len() - 1)
    }

    /// File size for group `g`: uniform in its range, whole writes, at least one.
    fn target(&mut self, g: usize) -> u64 {
        let c = &self.groups[g].cfg;
        let (lo, hi, w) = (c.file_bytes.0, c.file_bytes.1, c.write_bytes as u64);
        let size = lo + self.rng.below(hi - lo + 1);
        (size / w).max(1) * w
    }

    /// One write of group `g` (with the create and delete it causes).
    fn step(&mut self, g: usize, out: &mut Vec<FileOp>) {
        let w = self.groups[g].cfg.write_bytes;
        if self.groups[g].cfg.overwrite > 0.0 && !self.groups[g].live.is_empty() && self.rng.unit_f64() < self.groups[g].cfg.overwrite {
            let k = self.rng.below(self.groups[g].live.len() as u64) as usize;
            let (file, size) = self.groups[g].live[k];
            let pieces = (size / w as u64).max(1);
            let offset = self.rng.below(pieces) * w as u64;
            let len = (w as u64).min(size - offset) as u32;
            out.push(FileOp::Write { file, offset, len });
            self.stats.writes += 1;
            self.stats.write_bytes += len as u64;
            self.stats.overwrite_bytes += len as u64;
            return;
        }
        if self.groups[g].open.is_none() {
            let file = self.next_id;
            self.next_id += 1;
            let target = self.target(g);
            self.groups[g].open = Some(Open { file, size: 0, target });
            out.push(FileOp::Create { file, group: g as u32 });
            self.stats.creates += 1;
        }
        let o = self.groups[g].open.as_mut().expect("a file grows");
        let len = (w as u64).min(o.target - o.size) as u32;
        out.push(FileOp::Write { file: o.file, offset: o.size, len });
        o.size += len as u64;
        self.stats.writes += 1;
        self.stats.write_bytes += len as u64;
        if o.size == o.target {
            let done = (o.file, o.size);
            out.push(FileOp::Close { file: done.0 });
            let st = &mut self.groups[g];
            st.open = None;
            st.live.push(done);
            if st.live.len() > st.cfg.live_files as usize {
                let k = match st.cfg.order {
                    DeleteOrder::Oldest => 0,
                    DeleteOrder::Random => self.rng.below(st.live.len() as u64) as usize,
                };
                let (file, _) = self.groups[g].live.remove(k);
                out.push(FileOp::Delete { file });
                self.stats.deletes += 1;
            }
        }
    }
}

impl FileSource for SyntheticFiles {
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, wafsim_core::pipeline::SourceError> {
        let before = out.len();
        // A step emits at most four operations (create, write, close, delete).
        while out.len() - before + 4 <= max.max(4) && self.stats.write_bytes < self.amount {
            let g = self.pick_group();
            self.step(g, out);
        }
        Ok(out.len() - before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const MIB: u64 = 1 << 20;

    fn drain(s: &mut SyntheticFiles) -> Vec<FileOp> {
        let mut v = Vec::new();
        while s.fill(&mut v, 100).unwrap() > 0 {}
        v
    }

    /// Replay the operations against a model of the files: every write lands inside or at the
    /// end of a live file and deletes name live files. Returns the live files (group, size).
    fn check(ops: &[FileOp], groups: &[FileGroup]) -> HashMap<FileId, (u32, u64)> {
        let mut files: HashMap<FileId, (u32, u64)> = HashMap::new();
        for op in ops {
            match *op {
                FileOp::Create { file, group } => assert!(files.insert(file, (group, 0)).is_none(), "file {file} created twice"),
                FileOp::Write { file, offset, len } => {
                    let (g, size) = files.get_mut(&file).expect("write to a live file");
                    assert!(offset <= *size && len > 0, "write at {offset} past the end {size}");
                    assert!(len <= groups[*g as usize].write_bytes);
                    *size = (*size).max(offset + len as u64);
                }
                FileOp::Delete { file } => {
                    files.remove(&file).expect("delete of a live file");
                }
                FileOp::Read { .. } | FileOp::Truncate { .. } | FileOp::Sync { .. } | FileOp::Clock { .. } => {}
                FileOp::Close { file } => assert!(files.contains_key(&file), "close of a live file"),
            }
        }
        files
    }

    #[test]
    fn oldest_files_die_first_and_the_live_set_is_bounded() {
        let g = FileGroup { file_bytes: (4 * MIB, 4 * MIB), live_files: 3, write_bytes: MIB as u32, ..FileGroup::default() };
        let mut s = SyntheticFiles::new(vec![g.clone()], 40 * MIB, 1).unwrap();
        let ops = drain(&mut s);
        let live = check(&ops, &[g]);
        // 10 files of 4 MiB: the last 3 completed live on, the first 7 were deleted in order.
        assert_eq!(s.stats(), FileStats { creates: 10, deletes: 7, writes: 40, write_bytes: 40 * MIB, overwrite_bytes: 0 });
        let mut ids: Vec<_> = live.keys().copied().collect();
        ids.sort();
        assert_eq!(ids, vec![7, 8, 9]);
        let deleted: Vec<_> = ops.iter().filter_map(|o| if let FileOp::Delete { file } = o { Some(*file) } else { None }).collect();
        assert_eq!(deleted, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn groups_share_writes_by_weight_and_runs_repeat() {
        let a = FileGroup { weight: 3.0, file_bytes: (MIB, 8 * MIB), write_bytes: 256 << 10, order: DeleteOrder::Random, ..FileGroup::default() };
        let b = FileGroup { weight: 1.0, overwrite: 0.25, ..a.clone() };
        let groups = vec![a, b];
        let mut s = SyntheticFiles::new(groups.clone(), 2048 * MIB, 7).unwrap();
        let ops = drain(&mut s);
        check(&ops, &groups);
        let mut per = [0u64; 2];
        let mut group_of = HashMap::new();
        for op in &ops {
            match *op {
                FileOp::Create { file, group } => {
                    group_of.insert(file, group);
                }
                FileOp::Write { file, len, .. } => per[group_of[&file] as usize] += len as u64,
                _ => {}
            }
        }
        let share = per[0] as f64 / (per[0] + per[1]) as f64;
        assert!((share - 0.75).abs() < 0.02, "group a's share {share:.3}");
        let st = s.stats();
        assert!(st.write_bytes >= 2048 * MIB && st.write_bytes < 2048 * MIB + (256 << 10));
        // A quarter of group b's writes (a quarter of all) rewrite in place, once it has files.
        let ow = st.overwrite_bytes as f64 / per[1] as f64;
        assert!((ow - 0.25).abs() < 0.03, "overwrite share of group b {ow:.3}");
        assert_eq!(drain(&mut SyntheticFiles::new(groups, 2048 * MIB, 7).unwrap()), ops, "same seed, same operations");
    }

    #[test]
    fn bad_groups_are_refused_with_the_reason() {
        let bad = |g: FileGroup| SyntheticFiles::new(vec![g], MIB, 1).unwrap_err().reason;
        assert!(bad(FileGroup { write_bytes: 0, ..FileGroup::default() }).contains("write_bytes"));
        assert!(bad(FileGroup { file_bytes: (2, 1), ..FileGroup::default() }).contains("file_bytes"));
        assert!(bad(FileGroup { overwrite: 1.5, ..FileGroup::default() }).contains("overwrite"));
        assert!(bad(FileGroup { weight: 0.0, ..FileGroup::default() }).contains("positive weight"));
    }
}
