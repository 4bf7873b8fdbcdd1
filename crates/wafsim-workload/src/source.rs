//! The one interface every workload implements, and the weighted interleaving of several.

use wafsim_core::Io;

/// A stream of host I/Os.
pub trait IoSource: Send {
    /// Append up to `max` I/Os to `out` and return how many were appended; 0 means the source
    /// is exhausted (and stays so).
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize;
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
        }
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
            out.push(self.bufs[best][self.pos[best]]);
            self.pos[best] += 1;
            n += 1;
        }
        n
    }
}
