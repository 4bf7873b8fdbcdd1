//! Which compaction runs next: the two strategies' choices as pure functions of table sizes
//! and level sizes (the store carries them out).
//!
//! - Size-tiered (Cassandra `SizeTieredCompactionStrategy.getBuckets`,
//!   `mostInterestingBucket`, `trimToThresholdWithHotness`): tables sorted by size join the
//!   first bucket whose average they are within (bucket_low, bucket_high) of, or that is small
//!   with them (both below min_sstable_size); a bucket's average is updated as tables join.
//!   Buckets with at least min_threshold tables are trimmed to max_threshold tables and the
//!   hottest is compacted; hotness is a read rate over two hours, which an untimed model does
//!   not have, so every table is equally cold and Cassandra's tie-break decides: the bucket
//!   with the smallest average size. (Cassandra keeps buckets in a hash map keyed by average
//!   size, so which of several matching buckets a table joins is unspecified; here the oldest
//!   bucket.)
//! - Leveled (RocksDB `VersionStorageInfo::CalculateBaseBytes` and `ComputeCompactionScore`):
//!   level targets, static (L1 = max_bytes_for_level_base, each next level x multiplier) or
//!   dynamic (the last level's target is its size, upper levels a multiplier smaller each, L0
//!   compacts into the base level, the highest level whose target is still above
//!   max_bytes_for_level_base / multiplier; no level's target below max_bytes_for_level_base);
//!   the score of L0 is the larger of files / level0_file_num_compaction_trigger and bytes /
//!   its size target, of L1.. the level's bytes / target; the level with the highest score
//!   of at least 1 is compacted (the last level never is).

use super::LeveledConfig;
use super::SizeTieredConfig;
use super::UniversalConfig;

/// Size-tiered: the tables of the next compaction, as indices into `sizes` (table bytes on
/// disk, in table creation order), or None when no bucket is full enough.
pub fn size_tiered_pick(sizes: &[u64], cfg: &SizeTieredConfig) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    // (average, members) in creation order of the buckets.
    let mut buckets: Vec<(u64, Vec<usize>)> = Vec::new();
    'tables: for &i in &order {
        let size = sizes[i];
        for b in buckets.iter_mut() {
            let avg = b.0;
            let similar = (size as f64) > avg as f64 * cfg.bucket_low && (size as f64) < avg as f64 * cfg.bucket_high;
            let small = size < cfg.min_sstable_bytes && avg < cfg.min_sstable_bytes;
            if similar || small {
                let n = b.1.len() as u64;
                b.0 = (avg * n + size) / (n + 1);
                b.1.push(i);
                continue 'tables;
            }
        }
        buckets.push((size, vec![i]));
    }
    let mut best: Option<(u64, Vec<usize>)> = None;
    for (_, mut members) in buckets {
        members.truncate(cfg.max_threshold as usize);
        if members.len() < cfg.min_threshold as usize {
            continue;
        }
        let avg = members.iter().map(|&i| sizes[i]).sum::<u64>() / members.len() as u64;
        if best.as_ref().is_none_or(|b| avg < b.0) {
            best = Some((avg, members));
        }
    }
    best.map(|b| b.1)
}

/// A sorted run as RocksDB's universal picker sees it (`UniversalCompactionBuilder::SortedRun`):
/// an L0 file, or a whole level below L0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortedRun {
    /// Its level (0: one L0 file).
    pub level: u32,
    /// Its bytes.
    pub bytes: u64,
}

/// A universal compaction: sorted runs `start..end` (indices into the runs, newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniversalPick {
    /// First run (the newest) merged.
    pub start: usize,
    /// One past the last (the oldest) run merged.
    pub end: usize,
    /// Why (RocksDB's compaction reason).
    pub reason: UniversalReason,
}

/// RocksDB's `CompactionReason` of a universal compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniversalReason {
    /// kUniversalSizeAmplification: every run into the oldest.
    SizeAmplification,
    /// kUniversalSizeRatio: newer runs of similar total size.
    SizeRatio,
    /// kUniversalSortedRunNum: too many runs, merged regardless of size.
    SortedRunNum,
}

/// Universal: the runs of the next compaction (`runs` newest first: L0 files newest first,
/// then L1, L2, ... as RocksDB 7.8.3's `CalculateSortedRuns` lists them; none being
/// compacted), or None. `UniversalCompactionBuilder::PickCompaction` without periodic, delete-
/// triggered and incremental compactions: nothing below the trigger; else the size
/// amplification (`PickCompactionToReduceSizeAmp`: the runs before the oldest add up to at
/// least `max_size_amplification_percent` of it), then the size ratio
/// (`PickCompactionToReduceSortedRuns` with `size_ratio`), then the run count (the same with
/// no ratio and at most runs - trigger + 1 runs) when there are more runs than the trigger.
pub fn universal_pick(runs: &[SortedRun], cfg: &UniversalConfig) -> Option<UniversalPick> {
    let trigger = cfg.level0_file_num_compaction_trigger as usize;
    if runs.is_empty() || runs.len() < trigger {
        return None;
    }
    if runs.len() >= 2 {
        let newer: u64 = runs[..runs.len() - 1].iter().map(|r| r.bytes).sum();
        let oldest = runs[runs.len() - 1].bytes;
        if newer as u128 * 100 >= cfg.max_size_amplification_percent as u128 * oldest as u128 {
            return Some(UniversalPick { start: 0, end: runs.len(), reason: UniversalReason::SizeAmplification });
        }
    }
    if let Some((start, end)) = reduce_sorted_runs(runs, cfg.size_ratio as f64, u32::MAX, cfg) {
        return Some(UniversalPick { start, end, reason: UniversalReason::SizeRatio });
    }
    if runs.len() > trigger {
        let n = (runs.len() - trigger + 1) as u32;
        if let Some((start, end)) = reduce_sorted_runs(runs, f64::INFINITY, n, cfg) {
            return Some(UniversalPick { start, end, reason: UniversalReason::SortedRunNum });
        }
    }
    None
}

/// `PickCompactionToReduceSortedRuns`: from each run in turn (newest first), take the next
/// older runs while the next is no larger than the bytes taken so far x (100 + ratio) / 100
/// (the default stop style, kCompactionStopStyleTotalSize), at most `max_files` (and
/// `max_merge_width`) runs; the first start that takes `min_merge_width` (at least 2) wins.
/// An infinite ratio takes runs regardless of size.
fn reduce_sorted_runs(runs: &[SortedRun], ratio: f64, max_files: u32, cfg: &UniversalConfig) -> Option<(usize, usize)> {
    let max = cfg.max_merge_width.min(max_files) as usize;
    let min = cfg.min_merge_width.max(2) as usize;
    for start in 0..runs.len() {
        let mut taken = runs[start].bytes as f64;
        let mut count = 1;
        for next in &runs[start + 1..] {
            if count >= max {
                break;
            }
            if taken * (100.0 + ratio) / 100.0 < next.bytes as f64 {
                break;
            }
            taken += next.bytes as f64;
            count += 1;
        }
        if count >= min {
            return Some((start, start + count));
        }
    }
    None
}

/// The output level of universal runs `start..end` of `runs` over `num_levels` levels
/// (`PickCompactionToReduceSortedRuns`, `PickCompactionWithSortedRunRange`): the last level
/// when the oldest run is merged, L0 when the next older run is an L0 file, else the level
/// just above the next older run.
pub fn universal_output_level(runs: &[SortedRun], end: usize, num_levels: u32) -> u32 {
    match runs.get(end) {
        None => num_levels - 1,
        Some(r) if r.level == 0 => 0,
        Some(r) => r.level - 1,
    }
}

/// Level targets of a leveled tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelTargets {
    /// The level L0 compacts into.
    pub base_level: usize,
    /// Target bytes per level (index 0 unused; u64::MAX: no target, never compacted by size).
    pub max_bytes: Vec<u64>,
    /// Size at which L0 scores 1.
    pub l0_target: u64,
}

/// Targets for levels holding `level_bytes` (index 0 = L0).
pub fn level_targets(level_bytes: &[u64], cfg: &LeveledConfig) -> LevelTargets {
    let n = cfg.num_levels as usize;
    let mult = cfg.max_bytes_for_level_multiplier.max(1) as u64;
    let base = cfg.max_bytes_for_level_base;
    let mut max_bytes = vec![u64::MAX; n];
    if !cfg.dynamic_level_bytes {
        let mut t = base;
        for m in max_bytes.iter_mut().skip(1) {
            *m = t;
            t = t.saturating_mul(mult);
        }
        return LevelTargets { base_level: 1, max_bytes, l0_target: base };
    }
    let first_non_empty = (1..n).find(|&l| level_bytes[l] > 0);
    let max_level_size = level_bytes[1..].iter().copied().max().unwrap_or(0);
    let Some(first) = first_non_empty else {
        // No data below L0: L0 compacts straight into the last level.
        return LevelTargets { base_level: n - 1, max_bytes, l0_target: base };
    };
    let l0_size = level_bytes[0];
    let base_max = base.max(l0_size);
    let base_min = base_max / mult;
    let mut cur = max_level_size;
    for _ in first..n - 1 {
        cur /= mult;
    }
    let (base_level, base_size) = if cur <= base_min {
        (first, base_min + 1)
    } else {
        let mut bl = first;
        while bl > 1 && cur > base_max {
            bl -= 1;
            cur /= mult;
        }
        (bl, cur.min(base_max).max(1))
    };
    let mut size = base_size;
    for (l, m) in max_bytes.iter_mut().enumerate().skip(base_level) {
        if l > base_level {
            size = size.saturating_mul(mult);
        }
        *m = size.max(base_max);
    }
    let l0_target = base.max(max_bytes[base_level] / mult);
    LevelTargets { base_level, max_bytes, l0_target }
}

/// The level to compact next (0 = L0 into the base level), or None when every score is
/// below 1. Ties go to the upper level.
pub fn pick_level(level_bytes: &[u64], l0_files: usize, targets: &LevelTargets, cfg: &LeveledConfig) -> Option<usize> {
    let n = cfg.num_levels as usize;
    let mut best: Option<(f64, usize)> = None;
    let l0 = (l0_files as f64 / cfg.level0_file_num_compaction_trigger.max(1) as f64).max(level_bytes[0] as f64 / targets.l0_target.max(1) as f64);
    if l0_files > 0 && l0 >= 1.0 {
        best = Some((l0, 0));
    }
    for (l, (&bytes, &t)) in level_bytes.iter().zip(&targets.max_bytes).enumerate().take(n - 1).skip(1) {
        if t == u64::MAX || bytes == 0 {
            continue;
        }
        let s = bytes as f64 / t as f64;
        if s >= 1.0 && best.is_none_or(|b| s > b.0) {
            best = Some((s, l));
        }
    }
    best.map(|b| b.1)
}

/// Where a leveled compaction cuts its output files (RocksDB 7.8.3
/// `CompactionOutputs::ShouldStopBefore` and `UpdateGrandparentBoundaryInfo`,
/// `db/compaction/compaction_outputs.cc`). Without `level_compaction_dynamic_file_size` a file
/// ends once it holds the target size. With it (RocksDB's default since 7.8) the files of the
/// first level below the output that overlap the compaction (the grandparents) shape the cuts,
/// so that an output file tends to end where a grandparent file does and its next compaction
/// rewrites fewer files below: at a grandparent boundary once the file holds 50% of the target
/// plus 5% per boundary it has passed (at most 90%), before a key that jumps over whole
/// grandparent files worth more than 1/8 of the target, once file plus overlapped grandparent
/// bytes pass `max_compaction_bytes` (25 targets), and at twice the target in any case; with
/// no grandparents (the output is the bottommost data of its range) at the target.
#[derive(Debug, Clone)]
pub struct OutputCutter {
    /// Grandparent files: (smallest key, largest key, bytes), in key order.
    g: Vec<(u64, u64, u64)>,
    target: u64,
    max_file: u64,
    max_compaction: u64,
    dynamic: bool,
    idx: usize,
    gap: bool,
    seen: bool,
    overlapped: u64,
    switched: u64,
}

impl OutputCutter {
    /// Cuts for output files of `target` bytes over `grandparents`.
    pub fn new(grandparents: Vec<(u64, u64, u64)>, target: u64, dynamic: bool) -> OutputCutter {
        let max_file = if grandparents.is_empty() || !dynamic { target } else { 2 * target };
        OutputCutter { g: grandparents, target, max_file, max_compaction: 25 * target, dynamic, idx: 0, gap: true, seen: false, overlapped: 0, switched: 0 }
    }

    /// Whether a new file starts before output key `k`, the current file holding `size` bytes
    /// (0: none open). Called for every output key, in order.
    pub fn cut_before(&mut self, k: u64, size: u64) -> bool {
        let prev = self.overlapped;
        let mut crossed = 0u64;
        while self.idx < self.g.len() {
            let (lo, hi, bytes) = self.g[self.idx];
            if self.gap {
                if k < lo {
                    break;
                }
                if self.seen {
                    crossed += 1;
                    self.switched += 1;
                    self.overlapped += bytes;
                }
                self.gap = false;
            } else {
                if k <= hi {
                    break;
                }
                if self.seen {
                    crossed += 1;
                    self.switched += 1;
                }
                self.gap = true;
                self.idx += 1;
            }
        }
        if !self.seen && !self.gap {
            self.overlapped = self.g[self.idx].2;
        }
        self.seen = true;
        if size == 0 {
            return false;
        }
        let t = self.target;
        let cut = size >= self.max_file
            || (crossed > 0
                && (self.overlapped + size > self.max_compaction
                    || (self.dynamic && crossed >= if self.gap { 2 } else { 3 } && self.overlapped - prev > t / 8)
                    || (self.dynamic && size >= t.div_ceil(100) * (50 + (5 * self.switched).min(40)))));
        if cut {
            self.switched = 0;
            self.overlapped = if self.gap { 0 } else { self.g[self.idx].2 };
        }
        cut
    }
}

/// RocksDB 7.8's choice (`VersionStorageInfo::ComputeCompactionScore`, `db/version_set.cc`),
/// used by the write-controller mode, where compactions are picked when a lane frees and L0
/// can hold many files: `idle` are the bytes of files no compaction is reading (index 0 =
/// L0), `l0_idle_files` L0's files no compaction is reading, `l0_all_bytes` L0's bytes with
/// those being compacted, `l0_busy` whether an L0 compaction runs (then L0 is not picked:
/// `LevelCompactionBuilder::PickFileToCompact`). Scores: L0 files / trigger; with dynamic
/// level bytes at least 1.01 once L0 holds max_bytes_for_level_base, at least L0 bytes / the
/// base level's (actual or target, the larger) once L0 outgrows the base target, and x 10
/// above 1. A level below its target scores bytes / target; above it, with dynamic level
/// bytes, bytes / (target + the bytes coming down: all of L0 and every upper level's excess)
/// x 10. The highest score of at least 1 wins; ties go to the upper level.
pub fn pick_level_v7(idle: &[u64], l0_idle_files: usize, l0_all_bytes: u64, l0_busy: bool, targets: &LevelTargets, cfg: &LeveledConfig) -> Option<usize> {
    let n = cfg.num_levels as usize;
    let mut best: Option<(f64, usize)> = None;
    if !l0_busy && l0_idle_files > 0 {
        let mut s = l0_idle_files as f64 / cfg.level0_file_num_compaction_trigger.max(1) as f64;
        if cfg.dynamic_level_bytes {
            if idle[0] >= cfg.max_bytes_for_level_base {
                s = s.max(1.01);
            }
            let base_target = targets.max_bytes[targets.base_level];
            if idle[0] > base_target {
                s = s.max(idle[0] as f64 / idle[targets.base_level].max(base_target) as f64);
            }
            if s > 1.0 {
                s *= 10.0;
            }
        } else {
            s = s.max(idle[0] as f64 / cfg.max_bytes_for_level_base as f64);
        }
        if s >= 1.0 {
            best = Some((s, 0));
        }
    }
    let mut coming_down = l0_all_bytes as f64;
    for l in 1..n - 1 {
        let (bytes, t) = (idle[l], targets.max_bytes[l]);
        if t == u64::MAX || bytes == 0 {
            continue;
        }
        let s = if !cfg.dynamic_level_bytes || bytes < t {
            bytes as f64 / t as f64
        } else {
            let s = bytes as f64 / (t as f64 + coming_down) * 10.0;
            coming_down += (bytes - t) as f64;
            s
        };
        if s >= 1.0 && best.is_none_or(|b| s > b.0) {
            best = Some((s, l));
        }
    }
    best.map(|b| b.1)
}

/// The compaction debt RocksDB's write controller watches
/// (`VersionStorageInfo::EstimateCompactionBytesNeeded`): once L0 is due (files at the trigger
/// or bytes at max_bytes_for_level_base), its bytes and the base level's; then, from the base
/// level down, each level's excess over its target (with what comes into it from above) times
/// one plus the size ratio of the next level to it. `bytes` are every file's, those being
/// compacted included.
pub fn compaction_debt(bytes: &[u64], l0_files: usize, targets: &LevelTargets, cfg: &LeveledConfig) -> u64 {
    let n = cfg.num_levels as usize;
    let mut debt = 0f64;
    let mut down = 0f64;
    let l0_due = l0_files >= cfg.level0_file_num_compaction_trigger as usize || bytes[0] >= cfg.max_bytes_for_level_base;
    if l0_due {
        debt += bytes[0] as f64;
        down = bytes[0] as f64;
    }
    for l in targets.base_level..n - 1 {
        let mut size = bytes[l] as f64;
        if l == targets.base_level && l0_due {
            debt += size;
        }
        size += down;
        down = 0.0;
        let t = targets.max_bytes[l];
        if t != u64::MAX && size > t as f64 {
            down = size - t as f64;
            let next = bytes[l + 1] as f64;
            if next > 0.0 {
                debt += next / size * down + down;
            }
        }
    }
    debt as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(spec: &[(u32, u64)]) -> Vec<SortedRun> {
        spec.iter().map(|&(level, bytes)| SortedRun { level, bytes }).collect()
    }

    /// The three reasons in RocksDB's order, each on a tree where the earlier ones do not
    /// apply; nothing below the trigger.
    #[test]
    fn universal_picks_size_amplification_then_size_ratio_then_run_count() {
        let c = UniversalConfig::default();
        let pick = |spec: &[(u32, u64)]| universal_pick(&runs(spec), &c).map(|p| (p.start, p.end, p.reason));
        use UniversalReason::*;
        // Three runs: below the trigger, whatever their sizes.
        assert_eq!(pick(&[(0, 10), (0, 10), (6, 1)]), None);
        // Newer runs 300% of the oldest: all of them (size amplification).
        assert_eq!(pick(&[(0, 1), (0, 1), (0, 1), (6, 1)]), Some((0, 4, SizeAmplification)));
        // 199% is not enough; 200% is.
        assert_eq!(pick(&[(0, 50), (0, 50), (0, 99), (6, 100)]), Some((0, 4, SizeRatio)));
        assert_eq!(pick(&[(0, 50), (0, 50), (0, 100), (6, 100)]), Some((0, 4, SizeAmplification)));
        // Size ratio: 1 + 1 (+1% slack) takes the next 1 and 2, not the 5 after.
        assert_eq!(pick(&[(0, 1), (0, 1), (4, 2), (5, 5), (6, 100)]), Some((0, 3, SizeRatio)));
        // A run more than 1% above the newer ones stops the candidate; the next start wins.
        assert_eq!(pick(&[(0, 1), (4, 3), (5, 3), (6, 100)]), Some((1, 3, SizeRatio)));
        // No two neighbours within the ratio, five runs over a trigger of 4: the newest
        // 5 - 4 + 1 = 2 runs regardless of size.
        assert_eq!(pick(&[(0, 1), (2, 3), (3, 10), (4, 30), (6, 100)]), Some((0, 2, SortedRunNum)));
        // Four runs not within the ratio: at the trigger, nothing.
        assert_eq!(pick(&[(0, 1), (3, 3), (4, 10), (6, 100)]), None);
        // max_merge_width bounds the size-ratio pick.
        let narrow = UniversalConfig { max_merge_width: 2, ..UniversalConfig::default() };
        let p = universal_pick(&runs(&[(0, 1), (0, 1), (0, 1), (4, 2), (6, 100)]), &narrow).unwrap();
        assert_eq!((p.start, p.end), (0, 2));
    }

    /// Outputs: the last level with the oldest run, L0 above an L0 file, else the level
    /// above the next older run.
    #[test]
    fn universal_outputs_go_just_above_the_next_older_run() {
        let r = runs(&[(0, 1), (0, 1), (0, 1), (4, 2), (6, 100)]);
        assert_eq!(universal_output_level(&r, 5, 7), 6);
        assert_eq!(universal_output_level(&r, 2, 7), 0);
        assert_eq!(universal_output_level(&r, 3, 7), 3);
        assert_eq!(universal_output_level(&r, 4, 7), 5);
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn size_tiered_buckets_similar_sizes_and_takes_the_smallest_full_bucket() {
        let cfg = SizeTieredConfig { min_sstable_bytes: 0, ..SizeTieredConfig::default() };
        // Three of 100 MiB and four of 10 MiB: only the small bucket has four.
        let sizes = [100 * MIB, 10 * MIB, 100 * MIB, 10 * MIB, 100 * MIB, 10 * MIB, 10 * MIB];
        assert_eq!(size_tiered_pick(&sizes, &cfg), Some(vec![1, 3, 5, 6]));
        // A fourth 100 MiB table: both full, the smaller average wins.
        let sizes = [100 * MIB, 10 * MIB, 100 * MIB, 10 * MIB, 100 * MIB, 10 * MIB, 10 * MIB, 100 * MIB];
        assert_eq!(size_tiered_pick(&sizes, &cfg), Some(vec![1, 3, 5, 6]));
        // 150 MiB is not below 1.5 x 100: its own bucket.
        let sizes = [100 * MIB, 100 * MIB, 100 * MIB, 150 * MIB];
        assert_eq!(size_tiered_pick(&sizes, &cfg), None);
        // Below min_sstable_size everything is one bucket, trimmed to max_threshold.
        let cfg = SizeTieredConfig { max_threshold: 5, ..SizeTieredConfig::default() };
        let sizes: Vec<u64> = (1..=8).map(|k| k * MIB).collect();
        assert_eq!(size_tiered_pick(&sizes, &cfg), Some(vec![0, 1, 2, 3, 4]));
    }

    #[test]
    fn static_targets_multiply_from_the_base() {
        let cfg = LeveledConfig { dynamic_level_bytes: false, ..LeveledConfig::default() };
        let t = level_targets(&[0; 7], &cfg);
        assert_eq!(t.base_level, 1);
        assert_eq!(&t.max_bytes[1..4], &[256 * MIB, 2560 * MIB, 25600 * MIB]);
    }

    #[test]
    fn dynamic_targets_grow_from_the_last_level() {
        let cfg = LeveledConfig::default();
        // Empty tree: L0 goes to L6.
        assert_eq!(level_targets(&[0; 7], &cfg).base_level, 6);
        // 200 MiB in L6 is not above max_bytes_for_level_base: L0 still goes to L6.
        let mut b = [0u64; 7];
        b[6] = 200 * MIB;
        assert_eq!(level_targets(&b, &cfg).base_level, 6);
        // 1 GiB in L6: L5's target would be 102.4 MiB, below the base: L0 goes to L5.
        b[6] = 1024 * MIB;
        let t = level_targets(&b, &cfg);
        assert_eq!((t.base_level, t.max_bytes[5], t.max_bytes[6]), (5, 256 * MIB, 1024 * MIB / 10 * 10));
        // 30 GiB in L6: 30 GiB / 10 = 3 GiB (L5), 307 MiB (L4) > 256 MiB, 30.7 MiB (L3) fits.
        b[6] = 30 * 1024 * MIB;
        let t = level_targets(&b, &cfg);
        assert_eq!(t.base_level, 3);
        assert_eq!(t.max_bytes[6], 30 * 1024 * MIB / 1000 * 1000);
        assert_eq!(t.max_bytes[3], 256 * MIB, "no target below the base");
        assert_eq!(t.max_bytes[5], 30 * 1024 * MIB / 1000 * 100);
        assert_eq!(t.max_bytes[2], u64::MAX);
    }

    #[test]
    fn version_7_scores_put_a_piled_up_l0_first_and_weigh_what_comes_down() {
        let cfg = LeveledConfig::default();
        let mut b = [0u64; 7];
        b[6] = 30 * 1024 * MIB;
        let t = level_targets(&b, &cfg);
        assert_eq!(t.base_level, 3);
        // Three idle L0 files: below the trigger. Running L0 compaction: never L0.
        assert_eq!(pick_level_v7(&b, 3, 3 * 64 * MIB, false, &t, &cfg), None);
        let mut idle = b;
        idle[0] = 29 * 64 * MIB;
        assert_eq!(pick_level_v7(&idle, 29, idle[0], true, &t, &cfg), None);
        // L3 at 1.5x its target against 29 L0 files: L0's 72.5 beats L3's
        // 384 / (256 + 1856) x 10 = 1.8.
        idle[3] = 384 * MIB;
        assert_eq!(pick_level_v7(&idle, 29, idle[0], false, &t, &cfg), Some(0));
        // With L0 busy, L3 is the one.
        assert_eq!(pick_level_v7(&idle, 29, idle[0], true, &t, &cfg), Some(3));
        // L3 at 1.1x its target with 29 L0 files coming down scores 282 / 2112 x 10 = 1.3:
        // still due; with 200 GiB coming down it would not be.
        idle[3] = 282 * MIB;
        assert_eq!(pick_level_v7(&idle, 0, 29 * 64 * MIB, true, &t, &cfg), Some(3));
        assert_eq!(pick_level_v7(&idle, 0, 200 * 1024 * MIB, true, &t, &cfg), None);
    }

    #[test]
    fn dynamic_file_sizes_cut_at_grandparent_boundaries() {
        // Target 100 bytes a key... in bytes: keys 0..; each key adds 10 bytes; grandparents
        // [100, 199], [200, 299], [300, 399] of 50 bytes each.
        let g = vec![(100, 199, 50), (200, 299, 50), (300, 399, 50)];
        // Where files start for keys 0, 10, .. 490 of 10 bytes each.
        let cuts = |g: &[(u64, u64, u64)], dynamic: bool| {
            let mut c = OutputCutter::new(g.to_vec(), 100, dynamic);
            let (mut size, mut starts) = (0u64, vec![]);
            for k in (0..500).step_by(10) {
                if c.cut_before(k, size) {
                    size = 0;
                }
                if size == 0 {
                    starts.push(k);
                }
                size += 10;
            }
            starts
        };
        // Fixed size: every 10 keys (100 bytes).
        assert_eq!(cuts(&g, false), vec![0, 100, 200, 300, 400]);
        // Dynamic: the file from 0 passes 55 bytes by key 60 but crosses its first boundary at
        // key 100 (entering [100, 199]), 100 bytes: cut there. From 100: at 200 it leaves one
        // and enters the next (2 boundaries seen, 60% = 60 bytes; it holds 100): cut; and so on.
        assert_eq!(cuts(&g, true), vec![0, 100, 200, 300, 400]);
        // A grandparent every 25 keys-worth: the file cuts at the first boundary past 55%.
        let starts = cuts(&[(0, 59, 50), (60, 139, 50), (140, 219, 50), (220, 499, 50)], true);
        // From 0: boundary at 60 (left [0, 59], entered [60, 139]: 2 crossings, 60 bytes >= 60%):
        // cut. From 60: at 140 (80 bytes >= 60%): cut. From 140: at 220 (80 bytes): cut. From
        // 220 the last grandparent runs to 499: no boundary, so the 2x target (200 bytes) cuts.
        assert_eq!(starts, vec![0, 60, 140, 220, 420]);
        // No grandparents: the target.
        let mut c = OutputCutter::new(vec![], 100, true);
        assert!(!c.cut_before(0, 0) && !c.cut_before(10, 90) && c.cut_before(20, 100));
    }

    #[test]
    fn the_debt_is_l0_and_the_base_level_once_l0_is_due_plus_the_excess_below() {
        let cfg = LeveledConfig::default();
        let mut b = [0u64; 7];
        b[6] = 30 * 1024 * MIB;
        let t = level_targets(&b, &cfg);
        b[3] = 200 * MIB;
        assert_eq!(compaction_debt(&b, 0, &t, &cfg), 0);
        // Four L0 files of 64 MiB: L0 and L3 are owed; L3 then holds 456 MiB, 200 over its
        // 256 MiB target, and L4 (empty) adds no fan-out.
        b[0] = 256 * MIB;
        assert_eq!(compaction_debt(&b, 4, &t, &cfg), (256 + 200) * MIB);
        // With 3 GiB in L4: the 200 MiB excess fans out x (1 + 3072 / 456).
        b[4] = 3072 * MIB;
        let want = (456.0 + 3072.0 / 456.0 * 200.0 + 200.0) * MIB as f64;
        assert!((compaction_debt(&b, 4, &t, &cfg) as f64 - want).abs() < 2.0 * MIB as f64);
    }

    #[test]
    fn the_highest_score_of_at_least_one_is_picked() {
        let cfg = LeveledConfig { dynamic_level_bytes: false, ..LeveledConfig::default() };
        let t = level_targets(&[0; 7], &cfg);
        assert_eq!(pick_level(&[0, 100 * MIB, 0, 0, 0, 0, 0], 3, &t, &cfg), None);
        assert_eq!(pick_level(&[0, 100 * MIB, 0, 0, 0, 0, 0], 4, &t, &cfg), Some(0));
        assert_eq!(pick_level(&[0, 600 * MIB, 0, 0, 0, 0, 0], 4, &t, &cfg), Some(1));
        // The last level is never picked.
        assert_eq!(pick_level(&[0, 0, 0, 0, 0, 0, u64::MAX / 2], 0, &t, &cfg), None);
    }
}
