//! The discrete-event loop: fio-like closed-loop jobs (iodepth, rate limits, runtime, ramp
//! time, stages) issue I/O against a [`TimedDevice`], which says when each command completes.
//! Host events and the device's internal events run in time order.

use crate::flash::{FlashTimed, Timeline};
use crate::hist::Histogram;
use crate::media::Busy;
use crate::timed::{Class, Cmd, Completions, Event, TimedDevice};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use wafsim_core::{Counters, DeviceError, Io, MediaDevice};
use wafsim_core::pipeline::{IoSource, LayerFigures, SourceError};

/// Why a timed run stopped: the device refused a command, or a job's source failed (the run
/// stops at once; the error names the job).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The device refused a command.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A job's source failed (its context starts with the job's name). Boxed so the results
    /// the engine passes around on every event stay as small as a device error.
    #[error(transparent)]
    Source(Box<SourceError>),
}

impl From<SourceError> for RunError {
    fn from(e: SourceError) -> RunError {
        RunError::Source(Box::new(e))
    }
}

/// One job: a source of I/O with fio's host-side knobs.
pub struct JobSpec {
    /// Job name, as reported in [`JobResult::name`].
    pub name: String,
    /// Where the job's I/Os come from, in issue order.
    pub source: Box<dyn IoSource>,
    /// I/Os kept in flight (closed loop).
    pub iodepth: u32,
    /// Cap on I/Os per second (fio rate_iops), if any.
    pub rate_iops: Option<f64>,
    /// Cap on bytes per second (fio rate), if any.
    pub rate_bytes: Option<f64>,
    /// Stop issuing this long after the job starts (fio runtime with time_based).
    pub runtime_ns: Option<u64>,
    /// Leave completions of the first ramp_ns out of the statistics (fio ramp_time).
    pub ramp_ns: u64,
    /// Jobs of one group run their stages one after another (fio `stonewall` inside one job
    /// file): a job of stage k starts when every job of the group's earlier stages has
    /// finished. Jobs of different groups run concurrently. Give each job its own group (and
    /// stage 0) for plain concurrent jobs.
    pub group: u32,
    /// The job's stage within its group (see `group`); a group's stages run in increasing order.
    pub stage: u32,
    /// Submission queue: jobs with the same value share one queue, whose commands the drive
    /// takes in order, so a command behind a write that waits for buffer space waits too
    /// (head-of-line blocking, as when the jobs of one VM share its virtual disk's queue).
    /// None: the job has a queue of its own.
    pub queue: Option<u32>,
}

impl JobSpec {
    /// A job that starts at once and runs alone in its group.
    pub fn new(name: impl Into<String>, source: Box<dyn IoSource>, iodepth: u32, group: u32) -> JobSpec {
        JobSpec { name: name.into(), source, iodepth, rate_iops: None, rate_bytes: None, runtime_ns: None, ramp_ns: 0, group, stage: 0, queue: None }
    }
}

/// Statistics of one direction of one job.
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    /// Completed commands (inside the measurement window).
    pub ios: u64,
    /// Bytes those commands carried.
    pub bytes: u64,
    /// Their latencies, submission to completion, ns.
    pub lat: Histogram,
}

/// Result of one job over its measurement window (after ramp time, up to its last completion).
#[derive(Debug, Clone)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// Reads.
    pub read: DirStats,
    /// Writes, Zone Append included.
    pub write: DirStats,
    /// Trims, flushes and zone management commands (resets and finishes included).
    pub trim: DirStats,
    /// Zone Management Send Reset / Finish commands among `trim`.
    pub zone_resets: u64,
    /// Zone Finish commands among `trim`.
    pub zone_finishes: u64,
    /// Length of the measurement window, ns: from the end of the ramp time to the job's last
    /// completion, or to the end of its last I/O's rate slot for a
    /// rate-limited job (fio counts the time waiting for the rate).
    pub window_ns: u64,
    /// Time-averaged I/Os in flight over the window (for Little's law).
    pub mean_inflight: f64,
    /// The source's figures at the end of the run (a store's, a file system's; see
    /// [`IoSource::figures`]).
    pub figures: Option<LayerFigures>,
}

impl JobResult {
    fn secs(&self) -> f64 {
        self.window_ns.max(1) as f64 * 1e-9
    }
    /// Completions of direction `d` per second over the window.
    pub fn iops(&self, d: &DirStats) -> f64 {
        d.ios as f64 / self.secs()
    }
    /// Bytes of direction `d` per second over the window.
    pub fn bandwidth(&self, d: &DirStats) -> f64 {
        d.bytes as f64 / self.secs()
    }
    /// All directions: completions per second and mean latency in ns.
    pub fn total_iops(&self) -> f64 {
        (self.read.ios + self.write.ios + self.trim.ios) as f64 / self.secs()
    }
    /// Mean latency over all directions, ns (0 when nothing completed).
    pub fn mean_latency_ns(&self) -> f64 {
        let n = self.read.ios + self.write.ios + self.trim.ios;
        if n == 0 {
            return 0.0;
        }
        (self.read.lat.mean() * self.read.ios as f64 + self.write.lat.mean() * self.write.ios as f64 + self.trim.lat.mean() * self.trim.ios as f64)
            / n as f64
    }
}

/// A phase's timed run.
#[derive(Debug, Clone)]
pub struct TimedRun {
    /// Per-job results, in the order of the jobs given.
    pub jobs: Vec<JobResult>,
    /// Model time (ns) at which the run started (the device's clock).
    pub start_ns: u64,
    /// Model time (ns) of the run's last host event (the last completion); the device's clock
    /// is set here.
    pub end_ns: u64,
    /// When the dies finish the work booked during the run (programs of buffered writes and
    /// GC run on after the last completion): at least `end_ns`.
    pub drained_ns: u64,
    /// Die-busy time during the run, by cause.
    pub busy: Busy,
    /// Bandwidth over time (fio's `write_bw_log` with `log_avg_msec`): the completions of all
    /// jobs, ramp time included (a log, not a statistic), by completion time in consecutive
    /// intervals of [`EngineOptions::sample_ns`] from `start_ns`. Interval `k` holds the
    /// completions in `(start_ns + k*sample_ns, start_ns + (k+1)*sample_ns]` (the first one
    /// also those at `start_ns` itself). Every interval up to the one holding the last
    /// completion is present, empty ones zero-filled; the last one is partial when the run
    /// ends inside it (its `end_ns` is then `end_ns` of the run). Empty when sampling is off or
    /// nothing completed.
    pub series: Vec<Interval>,
    /// The device's counters along the run ([`EngineOptions::snapshots`]): `(time, counters)`
    /// at the run's start, then on a grid of model time as the run passes it (taken at the
    /// first event at or after each grid point), at most [`SNAPSHOTS`] of them; empty when
    /// off or when the device has no counters to give.
    pub snapshots: Vec<(u64, Counters)>,
    /// Why the run ended before its jobs did, when its [`Watch`] ended it: `None` when the watch
    /// did (steady), the error of the source that ran out of space when that ended it
    /// ([`Watch::stop_on_no_space`]).
    pub stopped: Option<Stop>,
}

/// How a [`Watch`] ended a run early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The watch said so at model time `at_ns`.
    Watch {
        /// Model time (ns) of the completion the watch looked at.
        at_ns: u64,
    },
    /// A job's source ran out of space at model time `at_ns` (a file system or store full).
    NoSpace {
        /// Model time (ns) the source failed.
        at_ns: u64,
        /// The source's error.
        error: SourceError,
    },
}

/// Looks at the device's counters as a run goes and may end it early: no job issues anything
/// more, and what is in flight completes (a phase that stops once steady, or when a layer is
/// full). A watch is asked at write completions once the device's host bytes written reach
/// [`Watch::next_bytes`], so a run without one pays one comparison per event.
pub trait Watch {
    /// Host bytes written (the device's counter, absolute) at which to look next; `u64::MAX`:
    /// never.
    fn next_bytes(&self) -> u64;
    /// Look at the counters at model time `now` (and, where it needs them, the jobs' sources:
    /// a store's figures); true ends the run.
    fn look(&mut self, now: u64, c: &Counters, sources: &Sources) -> bool;
    /// Whether a source out of space ends the run (recorded in [`TimedRun::stopped`]) instead
    /// of failing it.
    fn stop_on_no_space(&self) -> bool {
        false
    }
}

/// The watch of a run nothing ends early.
pub struct NoWatch;

impl Watch for NoWatch {
    #[inline]
    fn next_bytes(&self) -> u64 {
        u64::MAX
    }
    fn look(&mut self, _: u64, _: &Counters, _: &Sources) -> bool {
        false
    }
}

/// The jobs' sources as a [`Watch`] sees them, in job order.
pub struct Sources<'a>(&'a [JobState]);

impl Sources<'_> {
    /// The figures of every job's source (a store's or a file system's; `None` for a plain
    /// workload), in job order.
    pub fn figures(&self) -> Vec<Option<LayerFigures>> {
        self.0.iter().map(|s| s.spec.source.figures()).collect()
    }
}

/// Most counter snapshots a run keeps: when the grid fills, every other one is dropped and the
/// grid doubles, so a run of any length keeps between half and all of these, evenly spaced.
pub const SNAPSHOTS: usize = 4096;

/// Options of a timed run that do not change what the device does, only what is recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Length in ns of the intervals of [`TimedRun::series`] (fio `log_avg_msec` x 10^6);
    /// None (the default): no series. Must not be zero.
    pub sample_ns: Option<u64>,
    /// Record [`TimedRun::snapshots`] of the device's counters (for measurement windows inside
    /// a phase: the last N bytes or seconds, checkpoints).
    pub snapshots: bool,
}

/// Counter snapshots on a model-time grid that coarsens as the run grows.
struct SnapLog {
    grid_ns: u64,
    next: u64,
    snaps: Vec<(u64, Counters)>,
}

impl SnapLog {
    fn new(t0: u64, first: Counters) -> SnapLog {
        // 1 us to start: a short run keeps fine snapshots, a long one coarsens the grid.
        SnapLog { grid_ns: 1_000, next: t0 + 1_000, snaps: vec![(t0, first)] }
    }

    #[cold]
    #[inline(never)]
    fn take(&mut self, now: u64, c: &Counters) {
        self.snaps.push((now, c.clone()));
        if self.snaps.len() >= SNAPSHOTS {
            // Keep the start and every other one after it.
            let mut k = 0;
            self.snaps.retain(|_| {
                k += 1;
                k % 2 == 1
            });
            self.grid_ns *= 2;
        }
        let t0 = self.snaps[0].0;
        self.next = t0 + ((now - t0) / self.grid_ns + 1) * self.grid_ns;
    }
}

/// Completions in one interval of [`TimedRun::series`]. The interval starts where the
/// previous one ends (the first at [`TimedRun::start_ns`]), so its length is `sample_ns`
/// except for a partial last one. Reads and writes (Zone Append included) only: trims, flushes
/// and zone management commands move no data and are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Interval {
    /// Absolute model time (ns) at which the interval ends.
    pub end_ns: u64,
    /// Bytes of the reads completed in the interval.
    pub read_bytes: u64,
    /// Bytes of the writes completed in the interval.
    pub write_bytes: u64,
    /// Reads completed in the interval.
    pub read_ios: u64,
    /// Writes completed in the interval.
    pub write_ios: u64,
    /// Latency of the reads completed in the interval (fio's `read_lat_log` with
    /// `log_avg_msec`, plus percentiles).
    pub read_lat: LatSummary,
    /// Latency of the writes completed in the interval.
    pub write_lat: LatSummary,
}

/// Latencies (submission to completion, ns) of the commands of one direction completed in one
/// interval of [`TimedRun::series`]; all zero when none completed. Percentiles are the lower
/// edges of the histogram's buckets (about 0.4% wide), as [`Histogram::percentile`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LatSummary {
    /// Mean, rounded to the nanosecond.
    pub mean_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

impl LatSummary {
    fn of(h: &Histogram) -> LatSummary {
        if h.count() == 0 {
            return LatSummary::default();
        }
        LatSummary { mean_ns: h.mean().round() as u64, p50_ns: h.percentile(50.0), p99_ns: h.percentile(99.0), p999_ns: h.percentile(99.9), max_ns: h.max() }
    }
}

/// The series being recorded: closed intervals and the open one, which ends at `cur_end`.
struct SeriesLog {
    sample_ns: u64,
    cur_end: u64,
    cur: Interval,
    /// A completion has been recorded (the open interval belongs in the series).
    any: bool,
    closed: Vec<Interval>,
    /// Latencies of the open interval's reads and writes.
    read_lat: Histogram,
    write_lat: Histogram,
}

impl SeriesLog {
    fn new(t0: u64, sample_ns: u64) -> SeriesLog {
        assert!(sample_ns > 0, "timing engine: the sampling interval must be at least 1 ns");
        SeriesLog {
            sample_ns,
            cur_end: t0.saturating_add(sample_ns),
            cur: Interval::default(),
            any: false,
            closed: Vec::new(),
            read_lat: Histogram::default(),
            write_lat: Histogram::default(),
        }
    }

    /// A completion at `now` (never earlier than the previous one: events run in time order).
    /// Out of line: the event loop keeps only the test whether sampling is on.
    #[inline(never)]
    fn record(&mut self, now: u64, class: Class, len: u32, lat: u64) {
        if now > self.cur_end {
            self.roll(now);
        }
        self.any = true;
        match class {
            Class::Write => {
                self.cur.write_ios += 1;
                self.cur.write_bytes += len as u64;
                self.write_lat.record(lat);
            }
            Class::Read => {
                self.cur.read_ios += 1;
                self.cur.read_bytes += len as u64;
                self.read_lat.record(lat);
            }
            Class::Other | Class::ZoneReset | Class::ZoneFinish => {}
        }
    }

    /// Close the open interval and the empty ones up to the interval holding `now`.
    #[cold]
    #[inline(never)]
    fn roll(&mut self, now: u64) {
        let empty = (now - self.cur_end - 1) / self.sample_ns;
        self.cur.end_ns = self.cur_end;
        self.close_latencies();
        self.closed.push(std::mem::take(&mut self.cur));
        for _ in 0..empty {
            self.cur_end = self.cur_end.saturating_add(self.sample_ns);
            self.closed.push(Interval { end_ns: self.cur_end, ..Interval::default() });
        }
        self.cur_end = self.cur_end.saturating_add(self.sample_ns);
    }

    /// The open interval's latency summaries, and the histograms emptied for the next one.
    fn close_latencies(&mut self) {
        self.cur.read_lat = LatSummary::of(&self.read_lat);
        self.cur.write_lat = LatSummary::of(&self.write_lat);
        self.read_lat.clear();
        self.write_lat.clear();
    }

    /// The series of a run that ended at `end` (no earlier than the last completion).
    fn finish(mut self, end: u64) -> Vec<Interval> {
        if self.any {
            self.close_latencies();
            self.cur.end_ns = self.cur_end.min(end);
            self.closed.push(self.cur);
        }
        self.closed
    }
}

struct JobState {
    spec: JobSpec,
    /// Its stage has started (it may issue I/O).
    started: bool,
    /// Exhausted or past its runtime, with nothing in flight.
    finished: bool,
    buf: Vec<Io>,
    pos: usize,
    /// A source with a clock of its own (a store whose clients send requests at a rate): the
    /// time of each buffered I/O, from the job's start; an I/O is not issued before it.
    clocked: bool,
    times: Vec<u64>,
    /// When the job started (its clock's origin).
    origin: u64,
    exhausted: bool,
    inflight: u32,
    next_allowed: u64,
    wake_pending: bool,
    stop_at: u64,
    measure_from: u64,
    last_change: u64,
    inflight_area: f64,
    last_completion: u64,
    read: DirStats,
    write: DirStats,
    trim: DirStats,
    zone_resets: u64,
    zone_finishes: u64,
    /// The source's error, named by the job, until the run returns it.
    error: Option<SourceError>,
}

impl JobState {
    /// The next I/O of the job's source; `None` once it is exhausted or failed (its error
    /// kept in `error`: the per-I/O path returns no large `Result`).
    #[inline]
    fn next_io(&mut self) -> Option<Io> {
        if self.pos == self.buf.len() && !self.refill() {
            return None;
        }
        self.pos += 1;
        Some(self.buf[self.pos - 1])
    }

    /// When the next I/O of a clocked source is due (its time from the job's start), refilling
    /// the buffer if needed; `None` once the source is exhausted or failed.
    #[inline]
    fn next_due(&mut self) -> Option<u64> {
        if self.pos == self.buf.len() && !self.refill() {
            return None;
        }
        Some(self.origin + self.times[self.pos])
    }

    /// Take the next batch from the source; false when it is exhausted or failed.
    #[cold]
    fn refill(&mut self) -> bool {
        if self.exhausted {
            return false;
        }
        self.buf.clear();
        self.pos = 0;
        let filled = if self.clocked {
            self.times.clear();
            self.spec.source.fill_timed(&mut self.buf, &mut self.times, 256).expect("a clocked source gives times")
        } else {
            self.spec.source.fill(&mut self.buf, 256)
        };
        match filled {
            Ok(0) => {
                self.exhausted = true;
                false
            }
            Ok(_) => true,
            Err(e) => {
                self.exhausted = true;
                self.error = Some(e.within(self.spec.name.clone()));
                false
            }
        }
    }

    /// Start the job at `t`: its runtime, ramp time and rate limits count from here.
    fn start(&mut self, t: u64) {
        self.started = true;
        // fio: ramp_time adds to the runtime.
        self.stop_at = self.spec.runtime_ns.map_or(u64::MAX, |r| t + self.spec.ramp_ns + r);
        self.measure_from = t + self.spec.ramp_ns;
        self.next_allowed = t;
        self.origin = t;
        self.last_change = t;
        self.last_completion = t;
    }

    /// Whether the job is done: nothing in flight and nothing more to issue.
    fn is_done(&self, now: u64) -> bool {
        self.started && self.inflight == 0 && (self.exhausted || now >= self.stop_at)
    }

    /// Account the in-flight count up to time `t` (inside the measurement window only).
    fn advance(&mut self, t: u64) {
        let from = self.last_change.max(self.measure_from);
        if t > from {
            self.inflight_area += self.inflight as f64 * (t - from) as f64;
        }
        self.last_change = t;
    }
}

/// Dense submission-queue index of every job: a shared id maps to its first index, a job of
/// its own gets one.
fn queue_indices(jobs: &[JobSpec]) -> Vec<u32> {
    let mut ids: Vec<Option<u32>> = Vec::new();
    jobs.iter()
        .map(|spec| match spec.queue.and_then(|q| ids.iter().position(|&i| i == Some(q))) {
            Some(k) => k as u32,
            None => {
                ids.push(spec.queue);
                ids.len() as u32 - 1
            }
        })
        .collect()
}

/// Run `jobs` concurrently on a flash device from the timeline's current time until every job
/// has finished.
pub fn run<D: MediaDevice>(dev: &mut D, tl: &mut Timeline, jobs: Vec<JobSpec>) -> Result<TimedRun, RunError> {
    run_with(dev, tl, jobs, &EngineOptions::default())
}

/// [`run`] with options (e.g. a bandwidth series).
pub fn run_with<D: MediaDevice>(dev: &mut D, tl: &mut Timeline, jobs: Vec<JobSpec>, opts: &EngineOptions) -> Result<TimedRun, RunError> {
    run_on_with(&mut FlashTimed::new(dev, tl), jobs, opts)
}

/// The host side of a run: jobs, their events, and the commands in flight.
struct Host {
    states: Vec<JobState>,
    queue_of: Vec<u32>,
    heap: BinaryHeap<Reverse<Event>>,
    /// Commands issued and not completed, over all jobs.
    inflight: u64,
    /// The bandwidth series, when sampling is on.
    series: Option<SeriesLog>,
    /// Counter snapshots, when asked for and the device has counters.
    snaps: Option<SnapLog>,
    /// Host bytes at which the watch looks next (`u64::MAX`: never).
    watch_next: u64,
    /// The watch ended the run: no job issues more, jobs not started yet start done. Boxed: the
    /// host side stays as small as before watches.
    stopped: Option<Box<Stop>>,
    /// A source out of space ends the run ([`Watch::stop_on_no_space`]) instead of failing it.
    no_space_stops: bool,
}

impl Host {
    /// End the run at `now` ([`Watch`]): no job issues anything more. Rate limits' wake-ups go
    /// (nothing to issue, no time to add); every job with nothing in flight is done now, and
    /// the stages after it start done; the others finish at their last completions.
    #[cold]
    fn halt(&mut self, now: u64, why: Stop) {
        self.stopped = Some(Box::new(why));
        self.watch_next = u64::MAX;
        self.heap.retain(|Reverse(e)| e.kind == 0);
        for s in &mut self.states {
            s.stop_at = s.stop_at.min(now);
            s.wake_pending = false;
        }
        loop {
            for s in &mut self.states {
                if !s.finished && s.is_done(now) {
                    s.finished = true;
                }
            }
            let next = startable(&self.states);
            if next.is_empty() {
                return;
            }
            for j in next {
                self.states[j].start(now);
                self.states[j].stop_at = now;
            }
        }
    }
}

/// Run `jobs` concurrently on `m` from its clock until every job has finished.
pub fn run_on<M: TimedDevice>(m: &mut M, jobs: Vec<JobSpec>) -> Result<TimedRun, RunError> {
    run_on_with(m, jobs, &EngineOptions::default())
}

/// [`run_on`] with options (e.g. a bandwidth series). Panics if `opts.sample_ns` is `Some(0)`.
pub fn run_on_with<M: TimedDevice>(m: &mut M, jobs: Vec<JobSpec>, opts: &EngineOptions) -> Result<TimedRun, RunError> {
    run_on_watched(m, jobs, opts, &mut NoWatch)
}

/// [`run_on_with`] under `watch`, if any: a run without one is the engine instantiated for
/// [`NoWatch`], which pays nothing for watching.
pub fn run_on_watched_if<M: TimedDevice>(m: &mut M, jobs: Vec<JobSpec>, opts: &EngineOptions, watch: Option<&mut dyn Watch>) -> Result<TimedRun, RunError> {
    match watch {
        Some(w) => run_on_watched(m, jobs, opts, w),
        None => run_on_watched(m, jobs, opts, &mut NoWatch),
    }
}

/// [`run_on_with`] under a [`Watch`] that may end the run early.
pub fn run_on_watched<M: TimedDevice, W: Watch + ?Sized>(m: &mut M, jobs: Vec<JobSpec>, opts: &EngineOptions, watch: &mut W) -> Result<TimedRun, RunError> {
    let t0 = m.clock();
    let busy0 = m.busy();
    let queue_of = queue_indices(&jobs);
    let states: Vec<JobState> = jobs
        .into_iter()
        .map(|spec| JobState {
            started: false,
            finished: false,
            stop_at: u64::MAX,
            measure_from: t0,
            clocked: spec.source.clocked(),
            times: Vec::new(),
            origin: t0,
            spec,
            buf: Vec::with_capacity(256),
            pos: 0,
            exhausted: false,
            inflight: 0,
            next_allowed: t0,
            wake_pending: false,
            last_change: t0,
            inflight_area: 0.0,
            last_completion: t0,
            read: DirStats::default(),
            write: DirStats::default(),
            trim: DirStats::default(),
            zone_resets: 0,
            zone_finishes: 0,
            error: None,
        })
        .collect();
    // Sampling off costs one predictable branch per completion.
    let series = opts.sample_ns.map(|s| SeriesLog::new(t0, s));
    let snaps = if opts.snapshots { m.counters().map(|c| SnapLog::new(t0, c.clone())) } else { None };
    // A device without counters cannot be watched.
    let watch_next = if m.counters().is_some() { watch.next_bytes() } else { u64::MAX };
    let mut h = Host { states, queue_of, heap: BinaryHeap::new(), inflight: 0, series, snaps, watch_next, stopped: None, no_space_stops: watch.stop_on_no_space() };
    // Kept in a register: a run nothing watches pays one predictable branch per event.
    let mut watching = watch_next != u64::MAX;
    let mut end = t0;
    // Device work left from earlier runs runs up to the start.
    while let Some(mt) = m.next_event() {
        if mt > t0 {
            break;
        }
        m.step(mt, &mut Completions::engine(&mut h.heap))?;
    }
    m.advance(t0);
    let first = startable(&h.states);
    start_jobs(m, &mut h, &first, t0)?;
    finish_jobs(m, &mut h, t0)?;
    loop {
        if h.heap.is_empty() && m.holding() == 0 {
            // Every job is done; the device's queued work carries over to the next run.
            break;
        }
        // Device events up to the next host event run first (so a read arriving at t finds
        // every operation that started by t).
        let host_t = h.heap.peek().map_or(u64::MAX, |Reverse(e)| e.time);
        if let Some(mt) = m.next_event() {
            if mt <= host_t {
                m.step(mt, &mut Completions::engine(&mut h.heap))?;
                continue;
            }
        }
        if m.holding() > 0 && m.unstick(&mut Completions::engine(&mut h.heap))? {
            continue;
        }
        let Some(Reverse(ev)) = h.heap.pop() else { break };
        let now = ev.time;
        if let Some(log) = h.snaps.as_mut().filter(|l| now >= l.next) {
            // Before the event: the counters as they stood when model time reached `now`.
            if let Some(c) = m.counters() {
                log.take(now, c);
            }
        }
        m.advance(now);
        end = end.max(now);
        let j = ev.job as usize;
        {
            let s = &mut h.states[j];
            if ev.kind == 0 {
                if let Some(log) = h.series.as_mut() {
                    log.record(now, ev.class, ev.len, now - ev.submitted);
                }
                s.advance(now);
                s.inflight -= 1;
                h.inflight -= 1;
                s.last_completion = now;
                if now >= s.measure_from {
                    let d = match ev.class {
                        Class::Write => &mut s.write,
                        Class::Read => &mut s.read,
                        Class::ZoneReset => {
                            s.zone_resets += 1;
                            &mut s.trim
                        }
                        Class::ZoneFinish => {
                            s.zone_finishes += 1;
                            &mut s.trim
                        }
                        Class::Other => &mut s.trim,
                    };
                    d.ios += 1;
                    d.bytes += ev.len as u64;
                    d.lat.record(now - ev.submitted);
                }
            } else {
                s.wake_pending = false;
            }
        }
        if watching && ev.kind == 0 && ev.class == Class::Write {
            watching = watch_at(m, &mut h, watch, now);
        }
        submit_some(m, &mut h, j, now, u32::MAX)?;
        if h.states[j].is_done(now) {
            finish_jobs(m, &mut h, now)?;
        }
        if h.inflight == 0 {
            if let Some(Reverse(next)) = h.heap.peek() {
                m.idle(now, next.time)?;
            }
        }
    }
    assert!(m.holding() == 0, "timing engine: {} commands still wait at the device with nothing left to move them", m.holding());
    debug_assert!(h.states.iter().all(|s| s.started), "every stage started");
    m.set_clock(end);
    // The jobs' sources finish their side outputs (an iolog's last lines) before the figures
    // are read.
    for s in &mut h.states {
        s.spec.source.finish().map_err(|e| e.within(s.spec.name.clone()))?;
    }
    let results = h
        .states
        .into_iter()
        .map(|s| {
            // A rate-limited job (rate_iops, rate) runs until its last I/O's rate slot ends, as
            // in fio, where the runtime includes the time spent waiting for the rate: one I/O
            // at rate_iops=1 takes a second (1 IOPS), not just its latency (which gave millions).
            let paced_end = if s.spec.rate_iops.is_some() || s.spec.rate_bytes.is_some() { s.next_allowed.min(s.stop_at) } else { 0 };
            let window = s.last_completion.max(paced_end).saturating_sub(s.measure_from);
            JobResult {
                figures: s.spec.source.figures(),
                name: s.spec.name,
                mean_inflight: if window > 0 { s.inflight_area / window as f64 } else { 0.0 },
                read: s.read,
                write: s.write,
                trim: s.trim,
                zone_resets: s.zone_resets,
                zone_finishes: s.zone_finishes,
                window_ns: window,
            }
        })
        .collect();
    let series = h.series.take().map_or_else(Vec::new, |log| log.finish(end));
    let snapshots = h.snaps.take().map_or_else(Vec::new, |l| l.snaps);
    Ok(TimedRun { jobs: results, start_ns: t0, end_ns: end, drained_ns: end.max(m.drained_at()), busy: m.busy().since(&busy0), series, snapshots, stopped: h.stopped.map(|s| *s) })
}

/// A job's source failed at `now`: the run fails, or ends there when the failure is a layer out
/// of space and the watch takes that as the end ([`Watch::stop_on_no_space`]).
#[cold]
#[inline(never)]
fn source_failed(h: &mut Host, now: u64, e: SourceError) -> Result<(), RunError> {
    if h.no_space_stops && e.is_no_space() {
        h.halt(now, Stop::NoSpace { at_ns: now, error: e });
        return Ok(());
    }
    Err(e.into())
}

/// Show the watch the counters once they reach its next look; end the run if it says so.
/// Whether to go on watching.
#[inline(never)]
fn watch_at<M: TimedDevice, W: Watch + ?Sized>(m: &M, h: &mut Host, watch: &mut W, now: u64) -> bool {
    let Some(c) = m.counters() else { return false };
    if h.stopped.is_some() {
        return false;
    }
    if c.host_write_bytes >= h.watch_next {
        if watch.look(now, c, &Sources(&h.states)) {
            h.halt(now, Stop::Watch { at_ns: now });
            return false;
        }
        h.watch_next = watch.next_bytes();
    }
    h.watch_next != u64::MAX
}

/// Jobs not yet started whose group has no unfinished job at an earlier stage (at the start:
/// the first stage of every group).
fn startable(states: &[JobState]) -> Vec<usize> {
    (0..states.len())
        .filter(|&j| {
            let (g, st) = (states[j].spec.group, states[j].spec.stage);
            !states[j].started && !states.iter().any(|s| s.spec.group == g && s.spec.stage < st && !s.finished)
        })
        .collect()
}

/// A wake-up of job `j` at `t` (rate limit or stage start).
fn wake(j: usize, t: u64) -> Reverse<Event> {
    Reverse(Event { time: t, job: j as u32, kind: 1, submitted: 0, class: Class::Other, len: 0 })
}

/// Start `jobs` at `now`: fill their queues round-robin, one I/O per job at a time, as parallel
/// submission queues arbitrated round-robin would (filling job after job would convoy them).
fn start_jobs<M: TimedDevice>(m: &mut M, h: &mut Host, jobs: &[usize], now: u64) -> Result<(), RunError> {
    for &j in jobs {
        h.states[j].start(now);
        if h.stopped.is_some() {
            // A later stage of a run already ended: it starts done.
            h.states[j].stop_at = now;
        }
    }
    let max_depth = jobs.iter().map(|&j| h.states[j].spec.iodepth.max(1)).max().unwrap_or(0);
    for _ in 0..max_depth {
        for &j in jobs {
            submit_some(m, h, j, now, 1)?;
        }
    }
    for &j in jobs {
        let s = &mut h.states[j];
        s.wake_pending = false;
        if s.next_allowed > now && s.inflight < s.spec.iodepth.max(1) && now < s.stop_at {
            s.wake_pending = true;
            h.heap.push(wake(j, s.next_allowed));
        }
    }
    Ok(())
}

/// Mark jobs that are done as finished and start the next stage of every group whose current
/// stage has no unfinished job left (repeatedly: a stage may finish at once, e.g. with no I/O).
fn finish_jobs<M: TimedDevice>(m: &mut M, h: &mut Host, now: u64) -> Result<(), RunError> {
    loop {
        let mut changed = false;
        for s in h.states.iter_mut() {
            if !s.finished && s.is_done(now) {
                s.finished = true;
                changed = true;
            }
        }
        if !changed {
            return Ok(());
        }
        // Groups whose started jobs have all finished: start their next stage.
        let next = startable(&h.states);
        if next.is_empty() {
            return Ok(());
        }
        start_jobs(m, h, &next, now)?;
    }
}

/// Let job `j` issue up to `max` I/Os at `now` (bounded by its queue depth, rate and runtime).
fn submit_some<M: TimedDevice>(m: &mut M, h: &mut Host, j: usize, now: u64, max: u32) -> Result<(), RunError> {
    let mut issued = 0;
    while issued < max {
        let s = &mut h.states[j];
        if s.inflight >= s.spec.iodepth.max(1) || now >= s.stop_at {
            break;
        }
        if s.clocked {
            // Not before its time on the source's clock (an open-loop arrival).
            if let Some(due) = s.next_due() {
                s.next_allowed = s.next_allowed.max(due);
            }
        }
        if now < s.next_allowed {
            if !s.wake_pending {
                s.wake_pending = true;
                h.heap.push(wake(j, s.next_allowed));
            }
            break;
        }
        let Some(io) = s.next_io() else {
            if let Some(e) = s.error.take() {
                return source_failed(h, now, e);
            }
            break;
        };
        if let Some(ahead) = s.buf.get(s.pos + 16) {
            m.prefetch(ahead);
        }
        s.advance(now);
        s.inflight += 1;
        let mut gap = 0f64;
        if let Some(r) = s.spec.rate_iops {
            gap = gap.max(1e9 / r);
        }
        if let Some(r) = s.spec.rate_bytes {
            gap = gap.max(io.len as f64 * 1e9 / r);
        }
        if gap > 0.0 {
            s.next_allowed = now + gap.round() as u64;
        }
        issued += 1;
        h.inflight += 1;
        let cmd = Cmd { job: j as u32, queue: h.queue_of[j], submitted: now, io };
        m.submit(cmd, now, &mut Completions::engine(&mut h.heap))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::blockdev::ZoneAction;
    use wafsim_core::{Op, Pid};

    /// Completes every command a fixed latency after it is taken; no internal events.
    struct FixedLatency {
        clock: u64,
        lat: u64,
    }

    impl TimedDevice for FixedLatency {
        fn submit(&mut self, cmd: Cmd, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
            done.push(&cmd, now + self.lat);
            Ok(())
        }
        fn holding(&self) -> usize {
            0
        }
        fn clock(&self) -> u64 {
            self.clock
        }
        fn set_clock(&mut self, t: u64) {
            self.clock = t;
        }
        fn drained_at(&self) -> u64 {
            self.clock
        }
    }

    /// Plays back a fixed list of I/Os.
    struct Listed(std::vec::IntoIter<Io>);

    impl IoSource for Listed {
        fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
            let n = out.len();
            out.extend(self.0.by_ref().take(max));
            Ok(out.len() - n)
        }
    }

    /// A fixed list of I/Os, then an error.
    struct Failing(Listed);

    impl IoSource for Failing {
        fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
            match self.0.fill(out, max)? {
                0 => Err(SourceError::input("trace.log:3: expected a timestamp")),
                n => Ok(n),
            }
        }
    }

    fn io(op: Op, len: u32) -> Io {
        Io { op, ns: 0, offset: 0, len, pid: Pid::NONE }
    }

    const BS: u32 = 4096;

    /// `n` I/Os alternating write and read, `BS` bytes each, at `iops` per second.
    fn paced(n: usize, iops: f64, ramp_ns: u64) -> JobSpec {
        let ios = (0..n).map(|i| io(if i % 2 == 0 { Op::Write } else { Op::Read }, BS)).collect::<Vec<_>>();
        JobSpec { rate_iops: Some(iops), ramp_ns, ..JobSpec::new("paced", Box::new(Listed(ios.into_iter())), 8, 0) }
    }

    /// A source with a clock of its own: I/O k at the k-th of `times`.
    struct Stamped {
        ios: Vec<Io>,
        times: Vec<u64>,
        pos: usize,
    }

    impl IoSource for Stamped {
        fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
            let n = max.min(self.ios.len() - self.pos);
            out.extend_from_slice(&self.ios[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
        fn clocked(&self) -> bool {
            true
        }
        fn fill_timed(&mut self, out: &mut Vec<Io>, times: &mut Vec<u64>, max: usize) -> Option<Result<usize, SourceError>> {
            let from = self.pos;
            let r = self.fill(out, max);
            times.extend_from_slice(&self.times[from..self.pos]);
            Some(r)
        }
    }

    /// A clocked source's I/Os are issued at their times from the job's start (open-loop
    /// arrivals), not as fast as the queue depth allows: ten writes 1 ms apart, two of them at
    /// the same instant, complete 3 us after their times.
    #[test]
    fn a_clocked_source_issues_each_io_at_its_time() {
        let t0 = 7_000;
        let mut m = FixedLatency { clock: t0, lat: 3_000 };
        let times: Vec<u64> = vec![0, 1, 2, 3, 3, 4, 5, 6, 7, 8].into_iter().map(|k| k * 1_000_000).collect();
        let src = Stamped { ios: vec![io(Op::Write, BS); 10], times: times.clone(), pos: 0 };
        let r = run_on_with(&mut m, vec![JobSpec::new("clocked", Box::new(src), 8, 0)], &sampled(1_000_000)).unwrap();
        assert_eq!(r.jobs[0].write.ios, 10);
        assert_eq!(r.end_ns, t0 + 8_000_000 + 3_000, "the last I/O at 8 ms, done 3 us later");
        // One I/O per 1 ms interval, two in the interval of 3 ms.
        let per: Vec<u64> = r.series.iter().map(|iv| iv.write_ios).collect();
        assert_eq!(per, vec![1, 1, 1, 2, 1, 1, 1, 1, 1]);
    }

    fn sampled(ns: u64) -> EngineOptions {
        EngineOptions { sample_ns: Some(ns), ..Default::default() }
    }

    #[test]
    fn a_constant_rate_gives_constant_intervals_and_the_series_sums_to_every_completion() {
        // 100k IOPS for 10.5 ms (ramp 2 ms included) in 1 ms intervals: 100 I/Os per interval,
        // 50 in the last, partial one.
        let t0 = 5_000;
        let mut m = FixedLatency { clock: t0, lat: 3_000 };
        let s = 1_000_000;
        let r = run_on_with(&mut m, vec![paced(1050, 1e5, 2_000_000)], &sampled(s)).unwrap();
        let series = &r.series;
        assert_eq!(series.len(), 11);
        let mut start = r.start_ns;
        for (k, iv) in series.iter().enumerate() {
            let want_end = if k + 1 < series.len() { t0 + (k as u64 + 1) * s } else { r.end_ns };
            assert_eq!(iv.end_ns, want_end, "interval {k}");
            // rate x interval length, within one I/O.
            let want = 1e5 * (iv.end_ns - start) as f64 * 1e-9 * BS as f64;
            let got = (iv.read_bytes + iv.write_bytes) as f64;
            assert!((got - want).abs() <= BS as f64, "interval {k}: {got} B vs {want}");
            assert_eq!(iv.read_ios + iv.write_ios, (iv.read_bytes + iv.write_bytes) / BS as u64);
            start = iv.end_ns;
        }
        assert!(r.end_ns - series[series.len() - 2].end_ns < s, "the last interval is partial");
        // Every completion, ramp included; the job's statistics leave the ramp out.
        let j = &r.jobs[0];
        let (w, rd) = (series.iter().map(|i| i.write_bytes).sum::<u64>(), series.iter().map(|i| i.read_bytes).sum::<u64>());
        assert_eq!((w, rd), (525 * BS as u64, 525 * BS as u64));
        assert!(j.write.bytes + j.read.bytes < w + rd, "ramp left out of the job statistics");
        assert_eq!(series.iter().map(|i| i.write_ios + i.read_ios).sum::<u64>(), 1050);
    }

    #[test]
    fn a_rate_limited_job_runs_until_its_last_rate_slot_ends() {
        // One I/O at 1 IOPS takes a second (fio: the runtime includes the wait for the rate),
        // not its 3 us latency (which reported 333,333 IOPS); 10 at 1000 IOPS take 10 ms.
        for (n, iops, want_ns) in [(1, 1.0, 1_000_000_000u64), (10, 1000.0, 10_000_000)] {
            let mut m = FixedLatency { clock: 0, lat: 3_000 };
            let r = run_on_with(&mut m, vec![paced(n, iops, 0)], &EngineOptions::default()).unwrap();
            let j = &r.jobs[0];
            assert_eq!(j.window_ns, want_ns, "{n} I/Os at {iops}");
            assert!((j.total_iops() - iops).abs() < 1e-6, "{n} I/Os at {iops}: {}", j.total_iops());
        }
    }

    #[test]
    fn a_failing_source_stops_the_run_with_its_error_named_by_its_job() {
        let mut m = FixedLatency { clock: 0, lat: 3_000 };
        let ios = (0..10).map(|_| io(Op::Write, BS)).collect::<Vec<_>>();
        let failing = JobSpec::new("replay", Box::new(Failing(Listed(ios.into_iter()))), 4, 0);
        let e = run_on(&mut m, vec![paced(1000, 1e3, 0), failing]).unwrap_err();
        assert!(matches!(e, RunError::Source(_)), "{e:?}");
        assert_eq!(e.to_string(), "replay: trace.log:3: expected a timestamp");
        // It stopped at once: the paced job (1 s of I/O) did not run to its end.
        assert!(m.clock < 100_000_000, "clock {} ns", m.clock);
    }

    /// [`FixedLatency`] that counts the bytes written, for a watch to look at.
    struct Counting {
        inner: FixedLatency,
        c: Counters,
    }

    impl TimedDevice for Counting {
        fn submit(&mut self, cmd: Cmd, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
            if cmd.io.op == Op::Write {
                self.c.host_write_bytes += cmd.io.len as u64;
            }
            self.inner.submit(cmd, now, done)
        }
        fn holding(&self) -> usize {
            0
        }
        fn clock(&self) -> u64 {
            self.inner.clock
        }
        fn set_clock(&mut self, t: u64) {
            self.inner.clock = t;
        }
        fn drained_at(&self) -> u64 {
            self.inner.clock
        }
        fn counters(&self) -> Option<&Counters> {
            Some(&self.c)
        }
    }

    /// Ends the run once `at` bytes are written, and looks at nothing before.
    struct EndAt {
        at: u64,
        looks: u32,
        no_space: bool,
    }

    impl Watch for EndAt {
        fn next_bytes(&self) -> u64 {
            self.at
        }
        fn look(&mut self, _: u64, c: &Counters, _: &Sources) -> bool {
            self.looks += 1;
            assert!(c.host_write_bytes >= self.at, "looked at {} before {}", c.host_write_bytes, self.at);
            true
        }
        fn stop_on_no_space(&self) -> bool {
            self.no_space
        }
    }

    fn writes(n: usize) -> Box<Listed> {
        Box::new(Listed((0..n).map(|_| io(Op::Write, BS)).collect::<Vec<_>>().into_iter()))
    }

    /// A watch that says stop ends the run there: nothing more is issued, what was in flight
    /// completes, a later stage starts done, and a rate-limited job's next wake-up adds no time.
    #[test]
    fn a_watch_ends_the_run_where_it_says() {
        let dev = || Counting { inner: FixedLatency { clock: 0, lat: 3_000 }, c: Counters::default() };
        let jobs = || vec![JobSpec::new("writer", writes(10_000), 4, 0), JobSpec { stage: 1, ..JobSpec::new("later", writes(100), 4, 0) }, paced(100, 1e3, 0)];
        let mut m = dev();
        let whole = run_on(&mut m, jobs()).unwrap();
        assert_eq!(whole.stopped, None);
        let mut m = dev();
        let mut w = EndAt { at: 400 * BS as u64, looks: 0, no_space: false };
        let r = run_on_watched(&mut m, jobs(), &EngineOptions::default(), &mut w).unwrap();
        assert_eq!(w.looks, 1, "looked once, at the first write completion past its bytes");
        let Some(Stop::Watch { at_ns }) = r.stopped else { panic!("{:?}", r.stopped) };
        // In flight when it ended: at most the writer's 4 and the paced job's 8.
        let written = m.c.host_write_bytes / BS as u64;
        assert!((400..=400 + 12).contains(&written), "{written} writes");
        assert_eq!(r.jobs[1].write.ios, 0, "the later stage started done");
        assert!(r.end_ns <= at_ns + 3_000, "the run ends with the last in-flight completion ({} vs {at_ns})", r.end_ns);
        assert!(r.end_ns < whole.end_ns / 10);
    }

    /// A source out of space fails the run, unless the watch takes it as the end.
    #[test]
    fn a_source_out_of_space_ends_the_run_when_the_watch_says_so() {
        struct Full(Listed);
        impl IoSource for Full {
            fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
                match self.0.fill(out, max)? {
                    0 => Err(SourceError::no_space("write of 4 KiB", "store full")),
                    n => Ok(n),
                }
            }
        }
        let full = || JobSpec::new("store", Box::new(Full(Listed((0..50).map(|_| io(Op::Write, BS)).collect::<Vec<_>>().into_iter()))), 4, 0);
        let mut m = Counting { inner: FixedLatency { clock: 0, lat: 3_000 }, c: Counters::default() };
        let e = run_on_watched(&mut m, vec![full(), paced(1000, 1e3, 0)], &EngineOptions::default(), &mut EndAt { at: u64::MAX, looks: 0, no_space: false }).unwrap_err();
        assert!(e.to_string().contains("store full"), "{e}");
        let mut m = Counting { inner: FixedLatency { clock: 0, lat: 3_000 }, c: Counters::default() };
        let r = run_on_watched(&mut m, vec![full(), paced(1000, 1e3, 0)], &EngineOptions::default(), &mut EndAt { at: u64::MAX, looks: 0, no_space: true }).unwrap();
        let Some(Stop::NoSpace { error, .. }) = &r.stopped else { panic!("{:?}", r.stopped) };
        assert!(error.to_string().contains("store full"), "{error}");
        assert_eq!(r.jobs[0].write.ios, 50, "the store's writes before it filled completed");
        // The paced job (1 s of I/O at 1,000 IOPS) stopped with the store.
        assert!(r.end_ns < 100_000_000, "{} ns", r.end_ns);
    }

    #[test]
    fn no_sampling_gives_an_empty_series() {
        let mut m = FixedLatency { clock: 0, lat: 3_000 };
        assert!(run_on_with(&mut m, vec![paced(100, 1e5, 0)], &EngineOptions::default()).unwrap().series.is_empty());
        assert!(run_on(&mut m, vec![paced(100, 1e5, 0)]).unwrap().series.is_empty());
    }

    #[test]
    fn a_gap_in_completions_gives_zero_filled_intervals() {
        // 1000 IOPS, 3 I/Os: completions at 3 us, 1.003 ms and 2.003 ms; 100 us intervals.
        let mut m = FixedLatency { clock: 7, lat: 3_000 };
        let s = 100_000;
        let r = run_on_with(&mut m, vec![paced(3, 1e3, 0)], &sampled(s)).unwrap();
        assert_eq!(r.series.len(), 21);
        for (k, iv) in r.series.iter().enumerate() {
            if k < 20 {
                assert_eq!(iv.end_ns, 7 + (k as u64 + 1) * s);
            }
            let n = if k % 10 == 0 { 1 } else { 0 };
            assert_eq!(iv.read_ios + iv.write_ios, n, "interval {k}");
            assert_eq!(iv.read_bytes + iv.write_bytes, n * BS as u64, "interval {k}");
            // Each command takes 3 us: an interval with one says so, an empty one has zeros.
            let lat = if iv.read_ios > 0 { iv.read_lat } else { iv.write_lat };
            let other = if iv.read_ios > 0 { iv.write_lat } else { iv.read_lat };
            assert_eq!(other, LatSummary::default(), "interval {k}");
            if n == 1 {
                assert_eq!((lat.mean_ns, lat.max_ns), (3_000, 3_000), "interval {k}");
                for p in [lat.p50_ns, lat.p99_ns, lat.p999_ns] {
                    assert!(p <= 3_000 && p as f64 >= 3_000.0 * 0.995, "interval {k}: percentile {p} ns");
                }
            } else {
                assert_eq!(lat, LatSummary::default(), "interval {k}");
            }
        }
        assert_eq!(r.series[20].end_ns, r.end_ns.min(7 + 21 * s));
    }

    #[test]
    fn zone_append_counts_as_a_write_and_commands_without_data_are_not_counted() {
        let ios = vec![
            io(Op::Append, BS),
            io(Op::Write, BS),
            io(Op::Read, 2 * BS),
            io(Op::Trim, 8 * BS),
            io(Op::Flush, 0),
            io(Op::Zone(ZoneAction::Reset), 0),
            io(Op::Zone(ZoneAction::Finish), 0),
        ];
        let mut m = FixedLatency { clock: 0, lat: 10 };
        let job = JobSpec::new("mix", Box::new(Listed(ios.into_iter())), 1, 0);
        let r = run_on_with(&mut m, vec![job], &sampled(1_000_000)).unwrap();
        let ten = LatSummary { mean_ns: 10, p50_ns: 10, p99_ns: 10, p999_ns: 10, max_ns: 10 };
        let want = Interval { end_ns: r.end_ns, read_bytes: 2 * BS as u64, write_bytes: 2 * BS as u64, read_ios: 1, write_ios: 2, read_lat: ten, write_lat: ten };
        assert_eq!(r.series, vec![want]);
        assert_eq!(r.jobs[0].trim.ios, 4);
    }
}
