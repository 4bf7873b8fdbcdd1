//! The measurement concerns of a phase, one object each, fed by the phase loop at every batch
//! end: where `measure_last`'s window starts, the `checkpoints`, where the stores' load ended
//! (`measure_from = "run"`), the rounds of the steady-state check, and the batch size that keeps
//! rounds and samples close to where they are due. Each keeps what it needs of the counters it
//! is shown and answers once the phase has ended; the loop keeps none of their state.

use std::collections::VecDeque;

use wafsim_core::counters::waf;
use wafsim_core::pipeline::LayerFigures;
use wafsim_core::Counters;

use crate::results::Checkpoint;
use crate::schema::{MeasureFrom, PhaseSpec, SteadyStateSpec};

/// The drives' counters and the layers' figures at a point of a phase, `.0` host bytes into it.
pub(super) type Snap = (u64, Vec<Counters>, Vec<LayerFigures>);

/// `measure_last`: snapshots on a grid of 1/32 of the window, the oldest still needed kept.
pub(super) struct LastWindow {
    last: u64,
    grid: u64,
    next_grid: u64,
    kept: VecDeque<Snap>,
}

impl LastWindow {
    /// A window of the last `last` host bytes, from the phase start's snapshot.
    pub(super) fn new(last: u64, start: Snap) -> LastWindow {
        let grid = (last / 32).max(1);
        LastWindow { last, grid, next_grid: grid, kept: VecDeque::from([start]) }
    }

    /// Whether a snapshot is due `at` host bytes into the phase.
    pub(super) fn due(&self, at: u64) -> bool {
        at >= self.next_grid
    }

    /// Keep a due snapshot. The window's start is the newest snapshot at least `last` before
    /// the end: an older one is not needed once a newer one is that far back.
    pub(super) fn keep(&mut self, snap: Snap) {
        let at = snap.0;
        self.kept.push_back(snap);
        while self.kept.len() >= 2 && self.kept[1].0 + self.last <= at {
            self.kept.pop_front();
        }
        self.next_grid = (at / self.grid + 1) * self.grid;
    }

    /// Where the window of a phase that wrote `end` host bytes starts (None: shorter than it).
    pub(super) fn start(&self, end: u64) -> Option<&Snap> {
        self.kept.iter().rev().find(|w| w.0 + self.last <= end)
    }

    /// The window's length in host bytes.
    pub(super) fn bytes(&self) -> u64 {
        self.last
    }
}

/// Counts where a checkpoint was taken: host bytes from the phase start, media units, and
/// application bytes (where the phase has file systems or stores).
pub(super) type Taken = (u64, u64, Option<u64>);

/// `checkpoints`: each taken at the first batch end at or past it, counted from the phase start
/// or, with `measure_from = "run"`, from where the stores' load ended.
pub(super) struct Checkpoints {
    marks: Vec<u64>,
    taken: Vec<Taken>,
    base: u64,
}

impl Checkpoints {
    /// Checkpoints at `marks` host bytes (increasing), counted from `origin`.
    pub(super) fn new(marks: Vec<u64>, origin: Taken) -> Checkpoints {
        Checkpoints { marks, taken: vec![origin], base: 0 }
    }

    /// Count from `origin` instead (where the load ended): the checkpoints fall after it.
    pub(super) fn restart(&mut self, origin: Taken) {
        self.base = origin.0;
        self.taken = vec![origin];
    }

    /// Host bytes into the phase where the checkpoints' clock starts.
    pub(super) fn base(&self) -> u64 {
        self.base
    }

    /// Whether the next checkpoint is reached `host` bytes into the phase.
    pub(super) fn due(&self, host: u64) -> bool {
        self.marks.get(self.taken.len() - 1).is_some_and(|&at| host >= self.base + at)
    }

    /// Take the next checkpoint.
    pub(super) fn take(&mut self, t: Taken) {
        self.taken.push(t);
    }

    /// The first checkpoint not reached (index), if the phase ended before one.
    pub(super) fn missed(&self) -> Option<usize> {
        (self.taken.len() <= self.marks.len()).then(|| self.taken.len() - 1)
    }

    /// Where checkpoint `i` was due, in host bytes from the checkpoints' origin.
    pub(super) fn mark(&self, i: usize) -> u64 {
        self.marks[i]
    }

    /// The rows of the phase's checkpoints.
    pub(super) fn rows(&self, p: &PhaseSpec, mu: u64) -> Vec<Checkpoint> {
        checkpoint_rows(p, &self.marks, &self.taken, mu)
    }
}

/// Rows of the checkpoints at `marks` from the counts `taken` at the origin and at each
/// checkpoint reached (untimed and timed phases).
pub(super) fn checkpoint_rows(p: &PhaseSpec, marks: &[u64], taken: &[Taken], mu: u64) -> Vec<Checkpoint> {
    let (h0, m0, a0) = taken[0];
    let origin = if p.measure_from == MeasureFrom::Run { "the run start" } else { "the phase start" };
    marks
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let Some(&(h, m, a)) = taken.get(i + 1) else {
                return Checkpoint { label: p.checkpoints[i].clone(), origin, at_bytes: at, reached: None, waf: 0.0, interval_waf: 0.0, total_waf: None };
            };
            let (hp, mp, ap) = taken[i];
            let total = match (a, ap, a0) {
                (Some(a), Some(ap), Some(a0)) if a > a0 => Some((waf((m - m0) * mu, a - a0), waf((m - mp) * mu, a.saturating_sub(ap)))),
                _ => None,
            };
            Checkpoint { label: p.checkpoints[i].clone(), origin, at_bytes: at, reached: Some(h - h0), waf: waf((m - m0) * mu, h - h0), interval_waf: waf((m - mp) * mu, h - hp), total_waf: total }
        })
        .collect()
}

/// The steady-state check's rounds of `round_bytes` host bytes: each round's WAF and erases,
/// and, when the phase stops once steady, the snapshots at round ends its window starts from.
pub(super) struct Rounds {
    ss: SteadyStateSpec,
    stop_when_steady: bool,
    round_bytes: u64,
    /// Host bytes, media units and erases at the last round end.
    end: (u64, u64, u64),
    wafs: Vec<(f64, u64)>,
    snaps: Vec<Vec<Counters>>,
    fs_snaps: Vec<Vec<LayerFigures>>,
    steady_at: Option<usize>,
}

impl Rounds {
    /// Rounds from the phase start (`end`: its host bytes, media units and erases; `start`:
    /// its counters and figures, kept when the phase stops once steady).
    pub(super) fn new(ss: SteadyStateSpec, stop_when_steady: bool, round_bytes: u64, end: (u64, u64, u64), start: (Vec<Counters>, Vec<LayerFigures>)) -> Rounds {
        let (snaps, fs_snaps) = if stop_when_steady { (vec![start.0], vec![start.1]) } else { (Vec::new(), Vec::new()) };
        Rounds { ss, stop_when_steady, round_bytes, end, wafs: Vec::new(), snaps, fs_snaps, steady_at: None }
    }

    /// Host bytes per round.
    pub(super) fn round_bytes(&self) -> u64 {
        self.round_bytes
    }

    /// Whether a round ends at `host` bytes (absolute, as `end`).
    pub(super) fn due(&self, host: u64) -> bool {
        host - self.end.0 >= self.round_bytes
    }

    /// End a round at `now` (host bytes, media units, erases). `unsettled`: a store is still
    /// filling (or loading, when measured from the run), so the rounds so far are not judged
    /// and the window starts here. Returns true when the phase should stop (steady, or
    /// `max_rounds` reached).
    pub(super) fn close(&mut self, now: (u64, u64, u64), mu: u64, unsettled: bool, counters: impl Fn() -> Vec<Counters>, figures: impl Fn() -> Vec<LayerFigures>) -> bool {
        self.wafs.push((waf((now.1 - self.end.1) * mu, now.0 - self.end.0), now.2 - self.end.2));
        self.end = now;
        if !self.stop_when_steady {
            return false;
        }
        if unsettled {
            self.wafs.clear();
            self.snaps = vec![counters()];
            self.fs_snaps = vec![figures()];
            return false;
        }
        self.snaps.push(counters());
        self.fs_snaps.push(figures());
        if crate::run::steady::judge(&self.wafs, self.round_bytes, &self.ss).steady {
            self.steady_at = Some(self.wafs.len());
            return true;
        }
        self.ss.max_rounds.is_some_and(|m| self.wafs.len() >= m as usize)
    }

    /// Where the steady window starts (counters and figures) and its description, if the phase
    /// stopped steady.
    pub(super) fn window(&self) -> Option<(&Vec<Counters>, &[LayerFigures], String)> {
        let r = self.steady_at?;
        let i = r - self.ss.window as usize;
        Some((&self.snaps[i], &self.fs_snaps[i][..], format!("steady state (the last {} rounds of {})", self.ss.window, wafsim_core::units::human(self.round_bytes))))
    }

    /// The steady-state verdict over every round of the phase.
    pub(super) fn verdict(&self) -> crate::results::SteadyState {
        crate::run::steady::judge(&self.wafs, self.round_bytes, &self.ss)
    }
}

/// The size of the next batch: below a hundredth of a round or 256 I/Os, whichever is larger
/// (and below a tenth of the sampling interval), so rounds and samples end close to where they
/// are due.
pub(super) struct BatchSize(pub(super) usize);

impl BatchSize {
    /// After a batch of `bytes` in `ios` commands.
    pub(super) fn after(&mut self, bytes: u64, ios: usize, round_bytes: u64, sample_every: Option<u64>) {
        let per_io = (bytes / ios as u64).max(1);
        // Rounds need no batches finer than 256 I/Os (the device prefetches within a batch).
        let mut limit = ((round_bytes / 100) / per_io).max(256);
        if let Some(every) = sample_every {
            limit = limit.min((every / 10) / per_io);
        }
        self.0 = limit.clamp(16, crate::drives::BATCH as u64) as usize;
    }
}
