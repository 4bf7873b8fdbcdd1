//! The measurement concerns of a phase, one object each: where `measure_last`'s window starts,
//! the `checkpoints`, the rounds of the steady-state check, and the batch size that keeps rounds
//! and samples close to where they are due. An untimed phase feeds them at every batch end, a
//! timed one feeds the window and the checkpoints its engine's counter snapshots; each keeps
//! what it needs of the counters it is shown and answers once the phase has ended.

use std::collections::VecDeque;

use wafsim_core::counters::waf;
use wafsim_core::pipeline::LayerFigures;
use wafsim_core::Counters;

use crate::results::Checkpoint;
use crate::schema::{MeasureFrom, PhaseSpec, SteadyStateSpec};

/// The drives' counters and the layers' figures at a point of an untimed phase.
pub(super) type Snap = (Vec<Counters>, Vec<LayerFigures>);

/// Where a snapshot lies in a phase: host bytes written and model time (0 untimed) since it
/// started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct At {
    /// Host bytes written since the phase started.
    pub(super) host: u64,
    /// Model time since the phase started, ns (0 in an untimed phase).
    pub(super) ns: u64,
}

impl At {
    /// A point of an untimed phase, `host` bytes into it.
    pub(super) fn bytes(host: u64) -> At {
        At { host, ns: 0 }
    }
}

/// A distance in a phase: host bytes, or model time in a timed phase (durations describe the
/// full-scale run, as bytes do, so both are scaled with it).
#[derive(Debug, Clone, Copy)]
pub(super) enum Mark {
    /// Host bytes written.
    Bytes(u64),
    /// Model time, ns.
    Ns(u64),
}

impl Mark {
    /// `text` of key `field` in a timed phase: a duration is model time, anything else host
    /// bytes (see `plan::window::window_bytes`; `logical`: the drives' logical bytes).
    pub(super) fn parse(field: &str, w: &crate::schema::Window, logical: u64, scale: f64) -> anyhow::Result<Mark> {
        if let crate::schema::WindowOf::Duration(ns) = *w.value() {
            return Ok(Mark::Ns(((ns as f64 * scale) as u64).max(1)));
        }
        Ok(Mark::Bytes(crate::plan::window::window_bytes(field, w, None, logical, scale)?))
    }

    /// Whether `to` lies at least this far after `from`.
    pub(super) fn reached(self, from: At, to: At) -> bool {
        match self {
            Mark::Bytes(b) => to.host - from.host >= b,
            Mark::Ns(ns) => to.ns - from.ns >= ns,
        }
    }
}

/// `measure_last`: the snapshots the window may start at, the oldest still needed kept. An
/// untimed phase offers one every 1/32 of the window (`thinned`); a timed phase offers each of
/// the engine's snapshots.
pub(super) struct LastWindow<S> {
    last: Mark,
    /// The grid of offered snapshots and the next point on it (untimed).
    grid: Option<(u64, u64)>,
    kept: VecDeque<(At, S)>,
}

impl<S> LastWindow<S> {
    /// A window of the last `last` host bytes of an untimed phase, from the phase start's
    /// snapshot, offered snapshots on a grid of 1/32 of it.
    pub(super) fn thinned(last: u64, start: S) -> LastWindow<S> {
        let grid = (last / 32).max(1);
        LastWindow { last: Mark::Bytes(last), grid: Some((grid, grid)), kept: VecDeque::from([(At::bytes(0), start)]) }
    }

    /// A window of `last` (bytes or model time), from the phase start's snapshot.
    pub(super) fn new(last: Mark, start: S) -> LastWindow<S> {
        LastWindow { last, grid: None, kept: VecDeque::from([(At::default(), start)]) }
    }

    /// Whether a snapshot is wanted at `at`.
    pub(super) fn due(&self, at: At) -> bool {
        self.grid.is_none_or(|(_, next)| at.host >= next)
    }

    /// Keep a snapshot. The window's start is the newest snapshot at least `last` before the
    /// end: an older one is not needed once a newer one is that far back.
    pub(super) fn keep(&mut self, at: At, snap: S) {
        self.kept.push_back((at, snap));
        while self.kept.len() >= 2 && self.last.reached(self.kept[1].0, at) {
            self.kept.pop_front();
        }
        if let Some((grid, next)) = &mut self.grid {
            *next = (at.host / *grid + 1) * *grid;
        }
    }

    /// Where the window of a phase that ended at `end` starts (None: shorter than it).
    pub(super) fn start(&self, end: At) -> Option<&(At, S)> {
        self.kept.iter().rev().find(|w| self.last.reached(w.0, end))
    }
}

/// Counts where a checkpoint was taken: host bytes from the phase start, media units, and
/// application bytes (where the phase has file systems or stores).
pub(super) type Taken = (u64, u64, Option<u64>);

/// `checkpoints`: each taken at the first snapshot at or past it (an untimed phase's batch
/// ends, a timed phase's engine snapshots), counted from the phase start or, with
/// `measure_from = "run"`, from where the stores' load ended.
pub(super) struct Checkpoints {
    marks: Vec<Mark>,
    taken: Vec<Taken>,
    base: At,
}

impl Checkpoints {
    /// Checkpoints at `marks` (increasing), counted from `origin` at the phase start.
    pub(super) fn new(marks: Vec<Mark>, origin: Taken) -> Checkpoints {
        Checkpoints { marks, taken: vec![origin], base: At::default() }
    }

    /// Count from `origin` at `at` instead (where the load ended): the checkpoints fall after it.
    pub(super) fn restart(&mut self, at: At, origin: Taken) {
        self.base = at;
        self.taken = vec![origin];
    }

    /// Host bytes into the phase where the checkpoints' clock starts.
    pub(super) fn base(&self) -> u64 {
        self.base.host
    }

    /// Whether the next checkpoint is reached at `at`.
    pub(super) fn due(&self, at: At) -> bool {
        self.marks.get(self.taken.len() - 1).is_some_and(|m| m.reached(self.base, at))
    }

    /// Take the next checkpoint.
    pub(super) fn take(&mut self, t: Taken) {
        self.taken.push(t);
    }

    /// The first checkpoint not reached (index), if the phase ended before one.
    pub(super) fn missed(&self) -> Option<usize> {
        (self.taken.len() <= self.marks.len()).then(|| self.taken.len() - 1)
    }

    /// The rows of the phase's checkpoints, at `marks` host bytes from the origin.
    pub(super) fn rows(&self, p: &PhaseSpec, marks: &[u64], mu: u64) -> Vec<Checkpoint> {
        checkpoint_rows(p, marks, &self.taken, mu)
    }
}

/// Rows of the checkpoints at `marks` from the counts `taken` at the origin and at each
/// checkpoint reached.
fn checkpoint_rows(p: &PhaseSpec, marks: &[u64], taken: &[Taken], mu: u64) -> Vec<Checkpoint> {
    let (h0, m0, a0) = taken[0];
    let origin = if p.measure_from == MeasureFrom::Run { "the run start" } else { "the phase start" };
    marks
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let Some(&(h, m, a)) = taken.get(i + 1) else {
                return Checkpoint { label: p.checkpoints[i].to_string(), origin, at_bytes: at, reached: None, waf: 0.0, interval_waf: 0.0, total_waf: None };
            };
            let (hp, mp, ap) = taken[i];
            let total = match (a, ap, a0) {
                (Some(a), Some(ap), Some(a0)) if a > a0 => Some((waf((m - m0) * mu, a - a0), waf((m - mp) * mu, a.saturating_sub(ap)))),
                _ => None,
            };
            Checkpoint { label: p.checkpoints[i].to_string(), origin, at_bytes: at, reached: Some(h - h0), waf: waf((m - m0) * mu, h - h0), interval_waf: waf((m - mp) * mu, h - hp), total_waf: total }
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
    /// its counters and figures, taken only when the phase stops once steady).
    pub(super) fn new(ss: SteadyStateSpec, stop_when_steady: bool, round_bytes: u64, end: (u64, u64, u64), start: impl FnOnce() -> Snap) -> Rounds {
        let (snaps, fs_snaps) = if stop_when_steady {
            let (c, f) = start();
            (vec![c], vec![f])
        } else {
            (Vec::new(), Vec::new())
        };
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

    /// Host bytes (absolute) at which the current round ends.
    pub(super) fn next_due(&self) -> u64 {
        self.end.0.saturating_add(self.round_bytes)
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
