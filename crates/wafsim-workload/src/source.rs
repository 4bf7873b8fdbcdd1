//! The one interface every workload implements, and the weighted interleaving of several.

use wafsim_core::{Io, Op};

/// A stream of host I/Os.
pub trait IoSource: Send {
    /// Append up to `max` I/Os to `out` and return how many were appended; 0 means the source
    /// is exhausted (and stays so).
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize;
}

/// What one source of an [`Interleave`] has emitted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceStats {
    pub ios: u64,
    pub write_ios: u64,
    pub read_ios: u64,
    pub trim_ios: u64,
    pub write_bytes: u64,
    pub read_bytes: u64,
    pub trim_bytes: u64,
}

impl SourceStats {
    fn count(&mut self, io: &Io) {
        self.ios += 1;
        match io.op {
            Op::Write => {
                self.write_ios += 1;
                self.write_bytes += io.len as u64;
            }
            Op::Read => {
                self.read_ios += 1;
                self.read_bytes += io.len as u64;
            }
            Op::Trim => {
                self.trim_ios += 1;
                self.trim_bytes += io.len as u64;
            }
        }
    }
}

/// Runs sources one after another (fio `stonewall` phases inside one job file).
pub struct Chain {
    parts: Vec<Box<dyn IoSource>>,
    current: usize,
}

impl Chain {
    pub fn new(parts: Vec<Box<dyn IoSource>>) -> Self {
        Chain { parts, current: 0 }
    }
}

impl IoSource for Chain {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        while self.current < self.parts.len() {
            let n = self.parts[self.current].fill(out, max);
            if n > 0 {
                return n;
            }
            self.current += 1;
        }
        0
    }
}

/// Interleaves several sources per I/O by integer weight with smooth weighted round-robin
/// (deterministic; equal weights give strict alternation, i.e. equal IOPS). When a source is
/// exhausted the others go on.
pub struct Interleave {
    sources: Vec<Box<dyn IoSource>>,
    weights: Vec<i64>,
    current: Vec<i64>,
    bufs: Vec<Vec<Io>>,
    pos: Vec<usize>,
    done: Vec<bool>,
    stats: Vec<SourceStats>,
}

const CHUNK: usize = 256;

impl Interleave {
    /// `weights[i]` I/Os of source i for every `weights[j]` of source j.
    pub fn new(sources: Vec<Box<dyn IoSource>>, weights: Vec<u32>) -> Self {
        assert_eq!(sources.len(), weights.len());
        let n = sources.len();
        Interleave {
            sources,
            weights: weights.into_iter().map(|w| w.max(1) as i64).collect(),
            current: vec![0; n],
            bufs: (0..n).map(|_| Vec::with_capacity(CHUNK)).collect(),
            pos: vec![0; n],
            done: vec![false; n],
            stats: vec![SourceStats::default(); n],
        }
    }

    /// What each source has emitted so far, in the order given to [`Interleave::new`].
    pub fn stats(&self) -> &[SourceStats] {
        &self.stats
    }

    /// Make sure source `i` has a buffered I/O; false if it is exhausted.
    fn ready(&mut self, i: usize) -> bool {
        if self.pos[i] < self.bufs[i].len() {
            return true;
        }
        if self.done[i] {
            return false;
        }
        self.bufs[i].clear();
        self.pos[i] = 0;
        if self.sources[i].fill(&mut self.bufs[i], CHUNK) == 0 {
            self.done[i] = true;
            return false;
        }
        true
    }
}

impl IoSource for Interleave {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
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
                break;
            }
            self.current[best] -= total;
            let io = self.bufs[best][self.pos[best]];
            self.stats[best].count(&io);
            out.push(io);
            self.pos[best] += 1;
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::Pid;

    struct Fixed(Vec<Io>);
    impl IoSource for Fixed {
        fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
            let n = max.min(self.0.len());
            out.extend(self.0.drain(..n));
            n
        }
    }

    fn ios(ns: u32, n: usize, len: u32) -> Box<dyn IoSource> {
        Box::new(Fixed((0..n).map(|i| Io { op: Op::Write, ns, offset: i as u64 * len as u64, len, pid: Pid::NONE }).collect()))
    }

    #[test]
    fn weighted_interleave_and_stats() {
        let mut il = Interleave::new(vec![ios(0, 10, 4096), ios(1, 100, 8192)], vec![1, 3]);
        let mut out = Vec::new();
        while il.fill(&mut out, 7) > 0 {}
        assert_eq!(out.len(), 110);
        // While both run, source 1 gets 3 of every 4 I/Os.
        let first40: Vec<u32> = out[..40].iter().map(|io| io.ns).collect();
        assert_eq!(first40.iter().filter(|&&n| n == 1).count(), 30);
        assert_eq!(il.stats()[0], SourceStats { ios: 10, write_ios: 10, write_bytes: 40960, ..Default::default() });
        assert_eq!(il.stats()[1].ios, 100);
    }

    #[test]
    fn chain_runs_in_order() {
        let mut c = Chain::new(vec![ios(0, 3, 512), ios(1, 2, 512)]);
        let mut out = Vec::new();
        while c.fill(&mut out, 2) > 0 {}
        let order: Vec<u32> = out.iter().map(|io| io.ns).collect();
        assert_eq!(order, vec![0, 0, 0, 1, 1]);
    }
}
