//! The weighted interleaving of several block I/O sources (the sources and their counts are
//! wafsim-core's pipeline vocabulary).

use wafsim_core::pipeline::{IoSource, SourceError, SourceStats};
use wafsim_core::Io;

/// How an [`Interleave`] picks the source of the next I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InterleaveMode {
    /// Strict weighted turns (smooth weighted round-robin): equal weights alternate exactly.
    #[default]
    RoundRobin,
    /// Each I/O's source drawn at random in proportion to the weights (seeded). The merge of
    /// independent Poisson arrival processes with rates proportional to the weights gives the
    /// same order, so this is also the untimed model of Poisson arrivals.
    Random {
        /// Seed of the draws.
        seed: u64,
    },
}

/// Interleaves several sources per I/O by weight (see [`InterleaveMode`]). When a source is
/// exhausted the others go on.
///
/// Sources may be grouped into stages (fio `stonewall` inside one job file): a source of
/// stage k of a group starts only once every source of the group's earlier stages is
/// exhausted. Sources of different groups run concurrently.
///
/// An error of one source ends the interleave: the I/Os already taken from the others are
/// dropped, and the error names the source (see [`Interleave::named`]).
pub struct Interleave {
    sources: Vec<Box<dyn IoSource>>,
    weights: Vec<i64>,
    current: Vec<i64>,
    bufs: Vec<Vec<Io>>,
    pos: Vec<usize>,
    done: Vec<bool>,
    stats: Vec<SourceStats>,
    /// (group, stage) per source, and the stage each group is at.
    stage: Vec<(u32, u32)>,
    group_stage: Vec<u32>,
    /// Some group has more than one stage (otherwise the stage check is skipped).
    staged: bool,
    rng: Option<wafsim_core::Rng>,
    /// Per source, what its error names first (none: the source's index).
    names: Vec<String>,
    /// The error that ended the interleave, until it is returned.
    error: Option<SourceError>,
}

const CHUNK: usize = 256;

impl Interleave {
    /// `weights[i]` I/Os of source i for every `weights[j]` of source j, in strict turns.
    pub fn new(sources: Vec<Box<dyn IoSource>>, weights: Vec<u32>) -> Self {
        let n = sources.len();
        Self::staged(sources, weights, (0..n as u32).map(|i| (i, 0)).collect(), InterleaveMode::RoundRobin)
    }

    /// Sources with `(group, stage)` each (see the type's docs) and a mode.
    pub fn staged(sources: Vec<Box<dyn IoSource>>, weights: Vec<u32>, stage: Vec<(u32, u32)>, mode: InterleaveMode) -> Self {
        assert_eq!(sources.len(), weights.len());
        assert_eq!(sources.len(), stage.len());
        let n = sources.len();
        let groups = stage.iter().map(|&(g, _)| g as usize + 1).max().unwrap_or(0);
        let mut group_stage = vec![u32::MAX; groups];
        for &(g, st) in &stage {
            group_stage[g as usize] = group_stage[g as usize].min(st);
        }
        let staged = stage.iter().any(|&(g, st)| st != group_stage[g as usize]);
        Interleave {
            staged,
            sources,
            weights: weights.into_iter().map(|w| w.max(1) as i64).collect(),
            current: vec![0; n],
            bufs: (0..n).map(|_| Vec::with_capacity(CHUNK)).collect(),
            pos: vec![0; n],
            done: vec![false; n],
            stats: vec![SourceStats::default(); n],
            stage,
            group_stage,
            rng: match mode {
                InterleaveMode::RoundRobin => None,
                InterleaveMode::Random { seed } => Some(wafsim_core::Rng::new(seed)),
            },
            names: Vec::new(),
            error: None,
        }
    }

    /// Name the sources (in the order given) for their errors.
    pub fn named(mut self, names: Vec<String>) -> Self {
        assert_eq!(names.len(), self.sources.len());
        self.names = names;
        self
    }

    /// Source `i` (for its figures).
    pub fn source(&self, i: usize) -> &dyn IoSource {
        &*self.sources[i]
    }

    /// What each source has emitted so far, in the order given to [`Interleave::new`].
    pub fn stats(&self) -> &[SourceStats] {
        &self.stats
    }

    /// Make sure source `i` has a buffered I/O; false if it is exhausted or its stage has not
    /// started.
    /// Source `i`'s stage is the current one of its group.
    #[inline]
    fn in_stage(&self, i: usize) -> bool {
        !self.staged || self.group_stage[self.stage[i].0 as usize] == self.stage[i].1
    }

    #[inline]
    fn ready(&mut self, i: usize) -> bool {
        if !self.in_stage(i) {
            return false;
        }
        if self.pos[i] < self.bufs[i].len() {
            return true;
        }
        self.refill(i)
    }

    #[cold]
    fn refill(&mut self, i: usize) -> bool {
        let g = self.stage[i].0;
        if self.done[i] {
            return false;
        }
        self.bufs[i].clear();
        self.pos[i] = 0;
        match self.sources[i].fill(&mut self.bufs[i], CHUNK) {
            Ok(0) => {
                self.done[i] = true;
                self.advance_group(g);
                false
            }
            Ok(_) => true,
            Err(e) => {
                let name = self.names.get(i).cloned().unwrap_or_else(|| format!("source {i}"));
                self.error = Some(e.within(name));
                self.stop_all();
                false
            }
        }
    }

    /// Every source done, nothing buffered (after an error).
    fn stop_all(&mut self) {
        self.done.iter_mut().for_each(|d| *d = true);
        self.pos.iter_mut().zip(&self.bufs).for_each(|(p, b)| *p = b.len());
        self.group_stage.iter_mut().for_each(|s| *s = u32::MAX);
    }

    /// Move group `g` to its next stage once every source of the current one is exhausted.
    fn advance_group(&mut self, g: u32) {
        let cur = self.group_stage[g as usize];
        let members = || self.stage.iter().enumerate().filter(move |(_, &(gg, _))| gg == g);
        if members().any(|(i, &(_, st))| st == cur && !self.done[i]) {
            return;
        }
        self.group_stage[g as usize] = members().map(|(_, &(_, st))| st).filter(|&st| st > cur).min().unwrap_or(u32::MAX);
    }

    fn pick_round_robin(&mut self) -> Option<usize> {
        // Smooth WRR (as in nginx): add weights, pick the largest, subtract the total.
        let mut best = usize::MAX;
        let mut total = 0;
        for i in 0..self.sources.len() {
            if !self.ready(i) {
                continue;
            }
            total += self.weights[i];
            self.current[i] += self.weights[i];
            if best == usize::MAX || self.current[i] > self.current[best] {
                best = i;
            }
        }
        if best == usize::MAX {
            return None;
        }
        self.current[best] -= total;
        Some(best)
    }

    fn pick_random(&mut self) -> Option<usize> {
        let mut total = 0;
        for i in 0..self.sources.len() {
            if self.ready(i) {
                total += self.weights[i];
            }
        }
        if total == 0 {
            return None;
        }
        let mut r = self.rng.as_mut().expect("random mode").below(total as u64) as i64;
        for i in 0..self.sources.len() {
            if self.in_stage(i) && self.pos[i] < self.bufs[i].len() {
                if r < self.weights[i] {
                    return Some(i);
                }
                r -= self.weights[i];
            }
        }
        unreachable!("the weights of ready sources add up to total")
    }
}

impl IoSource for Interleave {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        let mut n = 0;
        while n < max {
            let pick = if self.rng.is_some() { self.pick_random() } else { self.pick_round_robin() };
            let Some(best) = pick else {
                // A stage may have just started (its sources are not buffered yet): retry until
                // every group is past its last stage, i.e. every source is exhausted.
                if self.group_stage.iter().all(|&s| s == u32::MAX) {
                    break;
                }
                continue;
            };
            let io = self.bufs[best][self.pos[best]];
            self.stats[best].count(&io);
            out.push(io);
            self.pos[best] += 1;
            n += 1;
        }
        match self.error.take() {
            Some(e) if n == 0 => Err(e),
            Some(e) => {
                self.error = Some(e);
                Ok(n)
            }
            None => Ok(n),
        }
    }

    /// Every source is finished; the first error is returned, named.
    fn finish(&mut self) -> Result<(), SourceError> {
        let mut first = Ok(());
        for i in 0..self.sources.len() {
            if let Err(e) = self.sources[i].finish() {
                if first.is_ok() {
                    let name = self.names.get(i).cloned().unwrap_or_else(|| format!("source {i}"));
                    first = Err(e.within(name));
                }
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::pipeline::Script;
    use wafsim_core::{Op, Pid};

    fn ios(ns: u32, n: usize, len: u32) -> Box<dyn IoSource> {
        Box::new(Script::new((0..n).map(|i| Io { op: Op::Write, ns, offset: i as u64 * len as u64, len, pid: Pid::NONE }).collect()))
    }

    #[test]
    fn weighted_interleave_and_stats() {
        let mut il = Interleave::new(vec![ios(0, 10, 4096), ios(1, 100, 8192)], vec![1, 3]);
        let mut out = Vec::new();
        while il.fill(&mut out, 7).unwrap() > 0 {}
        assert_eq!(out.len(), 110);
        // While both run, source 1 gets 3 of every 4 I/Os.
        let first40: Vec<u32> = out[..40].iter().map(|io| io.ns).collect();
        assert_eq!(first40.iter().filter(|&&n| n == 1).count(), 30);
        assert_eq!(il.stats()[0], SourceStats { ios: 10, write_ios: 10, write_bytes: 40960, ..Default::default() });
        assert_eq!(il.stats()[1].ios, 100);
    }
}
