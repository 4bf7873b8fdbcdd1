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
    /// In time order: each I/O comes from the source whose next I/O is earliest (the lowest
    /// index on a tie). Every source must keep a clock ([`IoSource::clocked`]; a source with
    /// a rate but no clock of its own gets one from [`RateClock`]). Weights are ignored.
    Clock,
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
///
/// Picking a source costs O(log n) in the number of sources n (O(k log n) in round-robin mode
/// with k distinct weights): only sources whose state can have changed are looked at per pick.
/// The order is that of the plain definition (every pick scans every source in index order,
/// refilling the ones that ran dry; see the reference in the tests).
pub struct Interleave {
    sources: Vec<Box<dyn IoSource>>,
    weights: Vec<i64>,
    bufs: Vec<Vec<Io>>,
    pos: Vec<usize>,
    done: Vec<bool>,
    stats: Vec<SourceStats>,
    /// Per source, the times of the buffered I/Os (clock mode only).
    times: Vec<Vec<u64>>,
    /// (group, stage) per source, and the stage each group is at.
    stage: Vec<(u32, u32)>,
    group_stage: Vec<u32>,
    /// Some group has more than one stage (otherwise the stage check is skipped).
    staged: bool,
    /// Sources in their group's current stage with nothing buffered and not exhausted: the
    /// ones a scan would refill. Every other source's readiness is known without a look.
    pending: std::collections::BTreeSet<usize>,
    /// Where the ready sources are kept for the pick.
    pick: Pick,
    /// Per source, what its error names first (none: the source's index).
    names: Vec<String>,
    /// The error that ended the interleave, until it is returned.
    error: Option<SourceError>,
}

/// The ready sources, arranged for the mode's pick.
enum Pick {
    /// Smooth weighted round-robin (as in nginx): every pick adds each ready source's weight to
    /// its counter, takes the largest counter (the lowest index on a tie) and subtracts the
    /// ready sources' total weight from it. Counters are kept lazily: a ready source's counter
    /// after pick `t`'s addition is `base + t * weight`, so between its own picks nothing
    /// changes; within one weight, the order of counters is the order of bases (one heap per
    /// distinct weight).
    RoundRobin {
        /// Picks so far (the `t` above).
        t: i128,
        /// Per source: its base (meaningful while ready or refilling).
        base: Vec<i128>,
        /// Per distinct weight: the weight and a max-heap of (base, lowest index first) of the
        /// ready sources of that weight.
        classes: Vec<(i64, std::collections::BinaryHeap<(i128, std::cmp::Reverse<usize>)>)>,
        /// Per source: its class.
        class_of: Vec<usize>,
        /// Total weight of the ready sources.
        total: i64,
        /// Per source: it has been ready once (its base is set).
        joined: Vec<bool>,
    },
    /// Each pick draws from the ready sources in proportion to their weights: the draw falls
    /// in the cumulative weights in index order (a Fenwick tree of the ready weights).
    Random { rng: wafsim_core::Rng, tree: Fenwick },
    /// The ready sources by the time of their next buffered I/O, earliest first.
    Clock { heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> },
}

/// Prefix sums of per-source weights with O(log n) update and search.
struct Fenwick {
    t: Vec<i64>,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick { t: vec![0; n + 1] }
    }
    fn add(&mut self, i: usize, d: i64) {
        let mut k = i + 1;
        while k < self.t.len() {
            self.t[k] += d;
            k += k & k.wrapping_neg();
        }
    }
    fn total(&self) -> i64 {
        let mut k = self.t.len() - 1;
        let mut s = 0;
        while k > 0 {
            s += self.t[k];
            k &= k - 1;
        }
        s
    }
    /// The lowest index whose cumulative weight (itself included) exceeds `r` (< total).
    fn find(&self, mut r: i64) -> usize {
        let n = self.t.len() - 1;
        let mut k = 0;
        let mut step = n.next_power_of_two();
        while step > 0 {
            if k + step <= n && self.t[k + step] <= r {
                k += step;
                r -= self.t[k];
            }
            step >>= 1;
        }
        k
    }
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
        let weights: Vec<i64> = weights.into_iter().map(|w| w.max(1) as i64).collect();
        let pick = match mode {
            InterleaveMode::RoundRobin => {
                let mut classes: Vec<(i64, std::collections::BinaryHeap<_>)> = Vec::new();
                let mut class_of = Vec::with_capacity(n);
                for &w in &weights {
                    let c = match classes.iter().position(|(cw, _)| *cw == w) {
                        Some(c) => c,
                        None => {
                            classes.push((w, std::collections::BinaryHeap::new()));
                            classes.len() - 1
                        }
                    };
                    class_of.push(c);
                }
                Pick::RoundRobin { t: 0, base: vec![0; n], classes, class_of, total: 0, joined: vec![false; n] }
            }
            InterleaveMode::Random { seed } => Pick::Random { rng: wafsim_core::Rng::new(seed), tree: Fenwick::new(n) },
            InterleaveMode::Clock => {
                assert!(sources.iter().all(|s| s.clocked()), "a clock interleave of a source without a clock");
                Pick::Clock { heap: std::collections::BinaryHeap::new() }
            }
        };
        // Every source of its group's first stage is refilled by the first pick.
        let pending = (0..n).filter(|&i| group_stage[stage[i].0 as usize] == stage[i].1).collect();
        Interleave {
            staged,
            sources,
            weights,
            bufs: (0..n).map(|_| Vec::with_capacity(CHUNK)).collect(),
            pos: vec![0; n],
            done: vec![false; n],
            stats: vec![SourceStats::default(); n],
            times: vec![Vec::new(); n],
            stage,
            group_stage,
            pending,
            pick,
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

    /// Source `i`'s stage is the current one of its group.
    #[inline]
    fn in_stage(&self, i: usize) -> bool {
        !self.staged || self.group_stage[self.stage[i].0 as usize] == self.stage[i].1
    }

    /// Refill source `i` (in its stage, nothing buffered); false if it is exhausted or failed.
    #[cold]
    fn refill(&mut self, i: usize) -> bool {
        let g = self.stage[i].0;
        if self.done[i] {
            return false;
        }
        self.bufs[i].clear();
        self.pos[i] = 0;
        let filled = if let Pick::Clock { .. } = self.pick {
            self.times[i].clear();
            let r = self.sources[i].fill_timed(&mut self.bufs[i], &mut self.times[i], CHUNK).expect("a clocked source gives times");
            debug_assert!(r.is_err() || self.times[i].len() == self.bufs[i].len());
            r
        } else {
            self.sources[i].fill(&mut self.bufs[i], CHUNK)
        };
        match filled {
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
        self.pending.clear();
        match &mut self.pick {
            Pick::RoundRobin { classes, total, .. } => {
                classes.iter_mut().for_each(|(_, h)| h.clear());
                *total = 0;
            }
            Pick::Random { tree, .. } => *tree = Fenwick::new(self.sources.len()),
            Pick::Clock { heap } => heap.clear(),
        }
    }

    /// Move group `g` to its next stage once every source of the current one is exhausted; the
    /// new stage's sources are then refilled by a scan (this pick's for those after the one
    /// being looked at, the next pick's for those before it).
    fn advance_group(&mut self, g: u32) {
        let cur = self.group_stage[g as usize];
        let members = || self.stage.iter().enumerate().filter(move |(_, &(gg, _))| gg == g);
        if members().any(|(i, &(_, st))| st == cur && !self.done[i]) {
            return;
        }
        let next = members().map(|(_, &(_, st))| st).filter(|&st| st > cur).min().unwrap_or(u32::MAX);
        self.group_stage[g as usize] = next;
        if next != u32::MAX {
            let new: Vec<usize> = members().filter(|(i, &(_, st))| st == next && !self.done[*i]).map(|(i, _)| i).collect();
            self.pending.extend(new);
        }
    }

    /// Source `i` has I/O buffered and is in its stage: it takes part in picks.
    fn join(&mut self, i: usize) {
        let w = self.weights[i];
        match &mut self.pick {
            Pick::RoundRobin { classes, class_of, base, total, .. } => {
                classes[class_of[i]].1.push((base[i], std::cmp::Reverse(i)));
                *total += w;
            }
            Pick::Random { tree, .. } => tree.add(i, w),
            Pick::Clock { heap } => heap.push(std::cmp::Reverse((self.times[i][self.pos[i]], i))),
        }
    }

    /// The scan at the start of a pick: refill, in index order, the sources that ran dry or
    /// whose stage started (a stage that starts during the scan adds its sources after the
    /// current one to this scan, the others to the next).
    fn scan(&mut self) {
        let mut cursor = 0;
        while let Some(&i) = self.pending.range(cursor..).next() {
            self.pending.remove(&i);
            cursor = i + 1;
            if !self.in_stage(i) {
                continue;
            }
            if self.refill(i) {
                if let Pick::RoundRobin { t, base, joined, .. } = &mut self.pick {
                    // A source's counter starts at 0: after this pick's addition it is its
                    // weight, i.e. base = -(t - 1) * weight. A source refilled after running
                    // dry keeps its base (it never stopped being ready).
                    if !joined[i] {
                        joined[i] = true;
                        base[i] = -(*t - 1) * self.weights[i] as i128;
                    }
                }
                self.join(i);
            }
            if self.error.is_some() {
                return;
            }
        }
    }

    /// The next source to take an I/O from (its I/O is at `pos`), or None if no source is
    /// ready. The source stays ready if it has more buffered; otherwise the next scan refills it.
    fn next_source(&mut self) -> Option<usize> {
        if let Pick::RoundRobin { t, .. } = &mut self.pick {
            *t += 1;
        }
        self.scan();
        if self.error.is_some() {
            return None;
        }
        match &mut self.pick {
            Pick::RoundRobin { t, base, classes, class_of, total, .. } => {
                let mut best: Option<(i128, usize, usize)> = None;
                for (c, (w, heap)) in classes.iter().enumerate() {
                    if let Some(&(b, std::cmp::Reverse(i))) = heap.peek() {
                        let cur = b + *t * *w as i128;
                        if best.is_none_or(|(bc, bi, _)| cur > bc || (cur == bc && i < bi)) {
                            best = Some((cur, i, c));
                        }
                    }
                }
                let (_, i, c) = best?;
                classes[c].1.pop();
                base[i] -= *total as i128;
                if self.pos[i] + 1 == self.bufs[i].len() {
                    // Its last buffered I/O: the next scan refills it (and it rejoins, or not).
                    *total -= self.weights[i];
                    self.pending.insert(i);
                } else {
                    classes[class_of[i]].1.push((base[i], std::cmp::Reverse(i)));
                }
                Some(i)
            }
            Pick::Random { rng, tree } => {
                let total = tree.total();
                if total == 0 {
                    return None;
                }
                let r = rng.below(total as u64) as i64;
                let i = tree.find(r);
                if self.pos[i] + 1 == self.bufs[i].len() {
                    tree.add(i, -self.weights[i]);
                    self.pending.insert(i);
                }
                Some(i)
            }
            Pick::Clock { heap } => {
                let std::cmp::Reverse((_, i)) = heap.pop()?;
                if self.pos[i] + 1 == self.bufs[i].len() {
                    self.pending.insert(i);
                } else {
                    heap.push(std::cmp::Reverse((self.times[i][self.pos[i] + 1], i)));
                }
                Some(i)
            }
        }
    }
}

/// A source with a rate but no clock of its own, given one for a [`InterleaveMode::Clock`]
/// interleave: its I/O number k is issued at k / rate.
pub struct RateClock {
    inner: Box<dyn IoSource>,
    ns_per_io: f64,
    issued: u64,
}

impl RateClock {
    /// `inner` issuing `iops` I/Os per second.
    pub fn new(inner: Box<dyn IoSource>, iops: f64) -> Self {
        assert!(iops > 0.0 && iops.is_finite(), "a rate clock needs a positive rate");
        RateClock { inner, ns_per_io: 1e9 / iops, issued: 0 }
    }
}

impl IoSource for RateClock {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        let n = self.inner.fill(out, max)?;
        self.issued += n as u64;
        Ok(n)
    }
    fn figures(&self) -> Option<wafsim_core::pipeline::LayerFigures> {
        self.inner.figures()
    }
    fn finish(&mut self) -> Result<(), SourceError> {
        self.inner.finish()
    }
    fn clocked(&self) -> bool {
        true
    }
    fn fill_timed(&mut self, out: &mut Vec<Io>, times: &mut Vec<u64>, max: usize) -> Option<Result<usize, SourceError>> {
        let first = self.issued;
        let r = self.fill(out, max);
        if let Ok(n) = r {
            times.extend((first..first + n as u64).map(|k| (k as f64 * self.ns_per_io) as u64));
        }
        Some(r)
    }
}

impl Interleave {
    /// Up to `max` I/Os in the mode's order; in clock mode with `times`, each one's time too.
    fn take(&mut self, out: &mut Vec<Io>, mut times: Option<&mut Vec<u64>>, max: usize) -> Result<usize, SourceError> {
        let mut n = 0;
        while n < max {
            let Some(best) = self.next_source() else {
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
            if let Some(t) = times.as_deref_mut() {
                t.push(self.times[best][self.pos[best]]);
            }
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
}

impl IoSource for Interleave {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        self.take(out, None, max)
    }

    /// In clock mode the interleave keeps its sources' clocks: each I/O's time is its source's.
    fn clocked(&self) -> bool {
        matches!(self.pick, Pick::Clock { .. })
    }

    fn fill_timed(&mut self, out: &mut Vec<Io>, times: &mut Vec<u64>, max: usize) -> Option<Result<usize, SourceError>> {
        self.clocked().then(|| self.take(out, Some(times), max))
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

    /// The definition the interleave keeps to (its code before picks became O(log n), in
    /// short): every pick scans every source in index order, refilling the ones that ran dry
    /// (a refill that finds a source exhausted may start its group's next stage, whose later
    /// sources join this scan), then picks by smooth weighted round-robin or a weighted draw.
    struct Reference {
        sources: Vec<Box<dyn IoSource>>,
        weights: Vec<i64>,
        counters: Vec<i64>,
        queued: Vec<std::collections::VecDeque<Io>>,
        exhausted: Vec<bool>,
        stage: Vec<(u32, u32)>,
        at: Vec<u32>,
        rng: Option<wafsim_core::Rng>,
    }

    impl Reference {
        fn new(sources: Vec<Box<dyn IoSource>>, weights: &[u32], stage: &[(u32, u32)], mode: InterleaveMode) -> Self {
            let groups = stage.iter().map(|s| s.0 as usize + 1).max().unwrap_or(0);
            let mut at = vec![u32::MAX; groups];
            stage.iter().for_each(|&(g, st)| at[g as usize] = at[g as usize].min(st));
            let n = sources.len();
            let rng = match mode {
                InterleaveMode::Random { seed } => Some(wafsim_core::Rng::new(seed)),
                InterleaveMode::RoundRobin => None,
                InterleaveMode::Clock => unreachable!("the reference covers the weighted modes"),
            };
            let weights = weights.iter().map(|&w| w.max(1) as i64).collect();
            Reference { sources, weights, counters: vec![0; n], queued: (0..n).map(|_| Default::default()).collect(), exhausted: vec![false; n], stage: stage.to_vec(), at, rng }
        }

        fn is_ready(&mut self, i: usize) -> bool {
            let (g, st) = self.stage[i];
            if self.at[g as usize] != st || self.exhausted[i] {
                return false;
            }
            if !self.queued[i].is_empty() {
                return true;
            }
            let mut v = Vec::new();
            if self.sources[i].fill(&mut v, CHUNK).unwrap() > 0 {
                self.queued[i].extend(v);
                return true;
            }
            self.exhausted[i] = true;
            let members: Vec<usize> = (0..self.stage.len()).filter(|&j| self.stage[j].0 == g).collect();
            if members.iter().all(|&j| self.stage[j].1 != st || self.exhausted[j]) {
                self.at[g as usize] = members.iter().map(|&j| self.stage[j].1).filter(|&s| s > st).min().unwrap_or(u32::MAX);
            }
            false
        }

        fn all(mut self) -> Vec<Io> {
            let mut out = Vec::new();
            while self.at.iter().any(|&s| s != u32::MAX) {
                let ready: Vec<usize> = (0..self.sources.len()).filter(|&i| self.is_ready(i)).collect();
                let total: i64 = ready.iter().map(|&i| self.weights[i]).sum();
                let pick = if let Some(rng) = &mut self.rng {
                    if total == 0 {
                        continue;
                    }
                    let r = rng.below(total as u64) as i64;
                    // The first ready source whose cumulative weight passes the draw.
                    let mut sum = 0;
                    *ready.iter().find(|&&i| {
                        sum += self.weights[i];
                        r < sum
                    }).unwrap()
                } else {
                    let Some(&first) = ready.first() else { continue };
                    ready.iter().for_each(|&i| self.counters[i] += self.weights[i]);
                    let best = ready.iter().copied().fold(first, |b, i| if self.counters[i] > self.counters[b] { i } else { b });
                    self.counters[best] -= total;
                    best
                };
                out.push(self.queued[pick].pop_front().unwrap());
            }
            out
        }
    }

    /// Random weights, sizes (some sources empty, some shorter than a refill), stages and
    /// modes: the same I/Os in the same order as the reference.
    #[test]
    fn picks_as_the_reference_does() {
        let mut rng = wafsim_core::Rng::new(7);
        for round in 0..300 {
            let n = 1 + rng.below(if round % 10 == 0 { 60 } else { 8 }) as usize;
            let weights: Vec<u32> = (0..n).map(|_| [1, 1, 2, 3, 1000, u32::MAX][rng.below(6) as usize]).collect();
            let sizes: Vec<usize> = (0..n).map(|_| [0, 1, 255, 256, 257, 700][rng.below(6) as usize]).collect();
            let groups = 1 + rng.below(3) as u32;
            let stage: Vec<(u32, u32)> = (0..n).map(|_| (rng.below(groups as u64) as u32, rng.below(3) as u32)).collect();
            let mode = if round % 2 == 0 { InterleaveMode::RoundRobin } else { InterleaveMode::Random { seed: round } };
            let make = || (0..n).map(|i| ios(i as u32, sizes[i], 4096)).collect::<Vec<_>>();
            let mut new = Interleave::staged(make(), weights.clone(), stage.clone(), mode);
            let mut a = Vec::new();
            let chunk = 1 + rng.below(300) as usize;
            while new.fill(&mut a, chunk).unwrap() > 0 {}
            let b = Reference::new(make(), &weights, &stage, mode).all();
            let key = |v: &[Io]| v.iter().map(|io| (io.ns, io.offset)).collect::<Vec<_>>();
            assert_eq!(key(&a), key(&b), "round {round}: weights {weights:?} sizes {sizes:?} stages {stage:?}");
            assert_eq!(a.len(), sizes.iter().sum::<usize>());
        }
    }

    /// A source that fails while others are ready ends the interleave with its error (the
    /// scan used to pick an earlier source whose buffer the error had emptied).
    #[test]
    fn an_error_mid_scan_ends_the_interleave() {
        struct Fails(bool);
        impl IoSource for Fails {
            fn fill(&mut self, out: &mut Vec<Io>, _max: usize) -> Result<usize, SourceError> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(SourceError::input("bad line"));
                }
                out.push(Io { op: Op::Write, ns: 9, offset: 0, len: 4096, pid: Pid::NONE });
                Ok(1)
            }
        }
        for mode in [InterleaveMode::RoundRobin, InterleaveMode::Random { seed: 3 }] {
            let mut il = Interleave::staged(vec![ios(0, 1000, 4096), Box::new(Fails(false))], vec![1, 1], vec![(0, 0), (1, 0)], mode);
            let mut out = Vec::new();
            let r = loop {
                match il.fill(&mut out, 64) {
                    Ok(0) => break Ok(()),
                    Ok(_) => {}
                    Err(e) => break Err(e),
                }
            };
            assert!(r.unwrap_err().to_string().contains("bad line"));
        }
    }


    /// Clock mode merges by time: two sources at 1000 and 4000 I/Os per second give four of
    /// the second's I/Os per one of the first's, each at its own time, and the one that ends
    /// first leaves the other alone.
    #[test]
    fn clock_mode_merges_by_time() {
        let a = RateClock::new(ios(0, 10, 4096), 1000.0);
        let b = RateClock::new(ios(1, 100, 4096), 4000.0);
        let mut il = Interleave::staged(vec![Box::new(a), Box::new(b)], vec![1, 1], vec![(0, 0), (1, 0)], InterleaveMode::Clock);
        let mut out = Vec::new();
        while il.fill(&mut out, 7).unwrap() > 0 {}
        assert_eq!(out.len(), 110);
        // Times: a at 0, 1, 2 ms ...; b at 0, 0.25, 0.5 ms ...; ties go to the lower index.
        let order: String = out[..11].iter().map(|io| if io.ns == 0 { 'a' } else { 'b' }).collect();
        assert_eq!(order, "abbbbabbbba");
        // a's last I/O (9 ms) follows b's 36 I/Os before 9 ms; then only b is left.
        assert_eq!(out[45].ns, 0);
        assert_eq!(out[..46].iter().filter(|io| io.ns == 0).count(), 10);
        assert!(out[46..].iter().all(|io| io.ns == 1));
    }

    /// A clock interleave hands out each I/O's time (its source's clock); a weighted one has
    /// no clock.
    #[test]
    fn clock_mode_gives_each_io_its_sources_time() {
        let a = RateClock::new(ios(0, 10, 4096), 1000.0);
        let b = RateClock::new(ios(1, 100, 4096), 4000.0);
        let mut il = Interleave::staged(vec![Box::new(a), Box::new(b)], vec![1, 1], vec![(0, 0), (1, 0)], InterleaveMode::Clock);
        assert!(il.clocked());
        let (mut out, mut times) = (Vec::new(), Vec::new());
        while il.fill_timed(&mut out, &mut times, 7).unwrap().unwrap() > 0 {}
        assert_eq!((out.len(), times.len()), (110, 110));
        // a at k ms, b at k/4 ms: the first eleven as in the order "abbbbabbbba".
        let want: Vec<u64> = vec![0, 0, 250_000, 500_000, 750_000, 1_000_000, 1_000_000, 1_250_000, 1_500_000, 1_750_000, 2_000_000];
        assert_eq!(times[..11], want[..]);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*times.last().unwrap(), 99 * 250_000);
        let mut weighted = Interleave::new(vec![ios(0, 10, 4096)], vec![1]);
        assert!(!weighted.clocked());
        assert!(weighted.fill_timed(&mut out, &mut times, 7).is_none());
    }
}
