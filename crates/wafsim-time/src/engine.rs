//! The discrete-event loop: fio-like closed-loop jobs (iodepth, rate limits, runtime, ramp
//! time) issue I/O against the device; writes complete once buffered, reads once the data has
//! crossed the die, the channel and the host link. Resources are reserved in event order.

use crate::config::TimingConfig;
use crate::hist::Histogram;
use crate::media::{Busy, Media};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use wafsim_core::device::MediaOp;
use wafsim_core::{DeviceError, Io, MediaDevice, Op};
use wafsim_workload::IoSource;

/// Fixed completion time of a trim (a command without data transfer or NAND work).
const TRIM_NS: u64 = 1_000;

/// One job: a source of I/O with fio's host-side knobs.
pub struct JobSpec {
    pub name: String,
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
    pub ios: u64,
    pub bytes: u64,
    pub lat: Histogram,
}

/// Result of one job over its measurement window (after ramp time, up to its last completion).
#[derive(Debug, Clone)]
pub struct JobResult {
    pub name: String,
    pub read: DirStats,
    pub write: DirStats,
    pub trim: DirStats,
    pub window_ns: u64,
    /// Time-averaged I/Os in flight over the window (for Little's law).
    pub mean_inflight: f64,
}

impl JobResult {
    fn secs(&self) -> f64 {
        self.window_ns.max(1) as f64 * 1e-9
    }
    pub fn iops(&self, d: &DirStats) -> f64 {
        d.ios as f64 / self.secs()
    }
    pub fn bandwidth(&self, d: &DirStats) -> f64 {
        d.bytes as f64 / self.secs()
    }
    /// All directions: completions per second and mean latency in ns.
    pub fn total_iops(&self) -> f64 {
        (self.read.ios + self.write.ios + self.trim.ios) as f64 / self.secs()
    }
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
    pub jobs: Vec<JobResult>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// When the dies finish the work booked during the run (programs of buffered writes and
    /// GC run on after the last completion): at least `end_ns`.
    pub drained_ns: u64,
    /// Die-busy time during the run, by cause.
    pub busy: Busy,
}

/// Device-side state that lives across phases: media, host link, write buffer, clock.
pub struct Timeline {
    pub cfg: TimingConfig,
    pub media: Media,
    link_in_free: u64,
    link_out_free: u64,
    link_ns_per_byte: f64,
    /// Bytes in the write buffer: written by the host, not yet programmed.
    buffered: u64,
    pub now: u64,
    ops: Vec<MediaOp>,
    /// Mapping units per page type (a program unit holds its pages LSB first, each page on every
    /// plane: `units_per_program / bits_per_cell` units per page type).
    units_per_page_type: u32,
}

impl Timeline {
    /// Start the clock at 0 and turn on the device's media log.
    pub fn new<D: MediaDevice>(cfg: TimingConfig, dev: &mut D) -> Timeline {
        dev.set_die_groups(cfg.reclaim_groups);
        dev.enable_media_log(cfg.units_per_program(), cfg.units_per_page(), cfg.dies_per_rg());
        Timeline {
            media: Media::new(&cfg),
            link_in_free: 0,
            link_out_free: 0,
            link_ns_per_byte: 1e9 / cfg.host_link_bytes_per_sec,
            buffered: 0,
            now: 0,
            ops: Vec::new(),
            units_per_page_type: (cfg.units_per_program() / cfg.nand.bits_per_cell.max(1)).max(1),
            cfg,
        }
    }

    fn link_ns(&self, bytes: u64) -> u64 {
        (bytes as f64 * self.link_ns_per_byte).round() as u64
    }

    /// Queue the NAND work the FTL logged; host data is buffered from `at` on.
    fn charge_media<D: MediaDevice>(&mut self, dev: &mut D, at: u64) {
        dev.drain_media_ops(&mut self.ops);
        for op in self.ops.drain(..) {
            match op {
                MediaOp::ProgramHost { die } => self.media.queue_host_program(at, die),
                MediaOp::ProgramGc { die } => self.media.queue_gc_program(die),
                MediaOp::ReadGc { die, units } => self.media.queue_gc_read(die, units),
                MediaOp::Erase { rg } => self.media.queue_erase(rg),
            }
        }
        self.media.end_command();
    }

    fn write_need(&self, io: &Io) -> u64 {
        let mu = self.cfg.mapping_unit as u64;
        let first = io.offset / mu;
        let last = (io.offset + io.len as u64 - 1) / mu;
        (last - first + 1) * mu
    }

    /// Free the buffer space of host programs the media finished.
    fn release(&mut self) -> bool {
        let freed = self.media.take_released();
        // Saturating: a program can complete a program unit partly written before the timeline
        // started (the untimed precondition), whose data was never counted in.
        self.buffered = self.buffered.saturating_sub(freed);
        freed > 0
    }

    /// Whether a write fits in the buffer now.
    fn fits(&self, io: &Io) -> bool {
        // An empty buffer takes any write, so one larger than the buffer cannot wait forever.
        self.buffered == 0 || self.buffered + self.write_need(io) <= self.cfg.write_buffer_bytes
    }

    /// Take a write into the buffer at `now` (it fits): transfer over the host link, update the
    /// FTL, queue the NAND work it causes. Returns the write's completion time.
    fn admit_write<D: MediaDevice>(&mut self, dev: &mut D, io: &Io, now: u64) -> Result<u64, DeviceError> {
        let start = now.max(self.link_in_free);
        let done = start + self.link_ns(io.len as u64);
        self.link_in_free = done;
        self.buffered += self.write_need(io);
        dev.submit(io)?;
        self.charge_media(dev, done);
        Ok(done + self.cfg.write_overhead_ns)
    }

    /// Issue one read or trim at `now` (every media event up to `now` has run); returns its
    /// completion time.
    fn issue<D: MediaDevice>(&mut self, dev: &mut D, io: &Io, now: u64) -> Result<u64, DeviceError> {
        match io.op {
            Op::Write | Op::Append => unreachable!("writes go through admit_write"),
            Op::Read => {
                dev.submit(io)?;
                let mu = self.cfg.mapping_unit as u64;
                let mut ready = now;
                let mut off = io.offset - io.offset % mu;
                let end = io.offset + io.len as u64;
                // Consecutive units in one physical page of one die are read with one array read.
                let upp = self.cfg.units_per_page();
                let mut run_die = u32::MAX;
                let mut run_page = u32::MAX;
                let mut run_type = 0;
                let mut run_bytes = 0u64;
                while off < end {
                    if let Some(p) = dev.lookup(io.ns, off) {
                        let (die, pos) = dev.media_pos(p);
                        let page = p / upp;
                        if (die != run_die || page != run_page) && run_bytes > 0 {
                            ready = ready.max(self.media.host_read(now, run_die, run_bytes, run_type));
                            run_bytes = 0;
                        }
                        run_die = die;
                        run_page = page;
                        run_type = pos / self.units_per_page_type;
                        run_bytes += mu;
                    }
                    off += mu;
                }
                if run_bytes > 0 {
                    ready = ready.max(self.media.host_read(now, run_die, run_bytes, run_type));
                }
                let start = (ready + self.cfg.read_overhead_ns).max(self.link_out_free);
                let done = start + self.link_ns(io.len as u64);
                self.link_out_free = done;
                Ok(done)
            }
            Op::Trim | Op::Flush => {
                dev.submit(io)?;
                Ok(now + TRIM_NS)
            }
            // Zone management (the flash FTL refuses it: not zoned): a ZNS Finish pads and a
            // Reset erases; that NAND work is queued like GC work.
            Op::Zone(_) => {
                dev.submit(io)?;
                self.charge_media(dev, now);
                Ok(now + TRIM_NS)
            }
        }
    }
}

/// Writes and Zone Appends: data commands that go through the write buffer.
#[inline]
fn is_write(op: Op) -> bool {
    matches!(op, Op::Write | Op::Append)
}

/// Commands the drive has not taken yet, in arrival order: writes waiting for buffer space and
/// commands queued behind them in the same submission queue.
struct Waiting {
    q: std::collections::VecDeque<(u32, Io, u64)>,
    /// Submission queue of each job, and writes waiting per queue.
    queue_of: Vec<u32>,
    writes: Vec<u32>,
}

impl Waiting {
    fn new(jobs: &[JobSpec]) -> Waiting {
        let mut ids: Vec<Option<u32>> = Vec::new();
        // Dense queue indices: a shared id maps to its first index, a job of its own gets one.
        let queue_of = jobs
            .iter()
            .map(|spec| match spec.queue.and_then(|q| ids.iter().position(|&i| i == Some(q))) {
                Some(k) => k as u32,
                None => {
                    ids.push(spec.queue);
                    ids.len() as u32 - 1
                }
            })
            .collect();
        Waiting { q: Default::default(), queue_of, writes: vec![0; ids.len()] }
    }
    fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    /// Whether job `j`'s commands must wait (a write of its queue waits).
    fn blocks(&self, j: u32) -> bool {
        self.writes[self.queue_of[j as usize] as usize] > 0
    }
    fn push(&mut self, j: u32, io: Io, submitted: u64) {
        if is_write(io.op) {
            self.writes[self.queue_of[j as usize] as usize] += 1;
        }
        self.q.push_back((j, io, submitted));
    }
    fn pop(&mut self) -> Option<(u32, Io, u64)> {
        let e = self.q.pop_front()?;
        if is_write(e.1.op) {
            self.writes[self.queue_of[e.0 as usize] as usize] -= 1;
        }
        Some(e)
    }
}

/// Schedule the completion of job `j`'s `io`, submitted at `submitted`, at `done`.
fn push_completion(heap: &mut BinaryHeap<Reverse<Event>>, j: u32, io: &Io, submitted: u64, done: u64) {
    let op = match io.op {
        Op::Write | Op::Append => 0,
        Op::Read => 1,
        // Commands without data.
        Op::Trim | Op::Flush | Op::Zone(_) => 2,
    };
    heap.push(Reverse(Event { time: done, job: j, kind: 0, submitted, op, len: io.len }));
}

/// Hand waiting commands to the drive at `t`, in order: writes while they fit in the buffer
/// (the first one regardless when `force`), and the commands queued behind them.
fn drain_waiting<D: MediaDevice>(dev: &mut D, tl: &mut Timeline, heap: &mut BinaryHeap<Reverse<Event>>, waiting: &mut Waiting, t: u64, mut force: bool) -> Result<(), DeviceError> {
    while let Some(&(j, io, submitted)) = waiting.q.front() {
        if is_write(io.op) {
            if !force && !tl.fits(&io) {
                break;
            }
            force = false;
            waiting.pop();
            let done = tl.admit_write(dev, &io, t)?;
            push_completion(heap, j, &io, submitted, done);
        } else {
            waiting.pop();
            let done = tl.issue(dev, &io, t)?;
            push_completion(heap, j, &io, submitted, done);
        }
    }
    Ok(())
}

struct JobState {
    spec: JobSpec,
    /// Its stage has started (it may issue I/O).
    started: bool,
    /// Exhausted or past its runtime, with nothing in flight.
    finished: bool,
    buf: Vec<Io>,
    pos: usize,
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
}

impl JobState {
    fn next_io(&mut self) -> Option<Io> {
        if self.pos == self.buf.len() {
            if self.exhausted {
                return None;
            }
            self.buf.clear();
            self.pos = 0;
            if self.spec.source.fill(&mut self.buf, 256) == 0 {
                self.exhausted = true;
                return None;
            }
        }
        self.pos += 1;
        Some(self.buf[self.pos - 1])
    }

    /// Start the job at `t`: its runtime, ramp time and rate limits count from here.
    fn start(&mut self, t: u64) {
        self.started = true;
        // fio: ramp_time adds to the runtime.
        self.stop_at = self.spec.runtime_ns.map_or(u64::MAX, |r| t + self.spec.ramp_ns + r);
        self.measure_from = t + self.spec.ramp_ns;
        self.next_allowed = t;
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

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: u64,
    job: u32,
    /// 0 = completion, 1 = wake-up (rate limit or start).
    kind: u8,
    submitted: u64,
    op: u8,
    len: u32,
}

/// Run `jobs` concurrently from the timeline's current time until every job has finished.
pub fn run<D: MediaDevice>(dev: &mut D, tl: &mut Timeline, jobs: Vec<JobSpec>) -> Result<TimedRun, DeviceError> {
    let t0 = tl.now;
    let busy0 = tl.media.busy;
    let mut waiting = Waiting::new(&jobs);
    let mut states: Vec<JobState> = jobs
        .into_iter()
        .map(|spec| JobState {
            started: false,
            finished: false,
            stop_at: u64::MAX,
            measure_from: t0,
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
        })
        .collect();
    let mut heap = BinaryHeap::new();
    // Writes waiting for buffer space, in arrival order: (job, io, submitted).
    let mut end = t0;
    // NAND work left from earlier runs runs up to the start.
    while let Some(mt) = tl.media.next_event() {
        if mt > t0 {
            break;
        }
        tl.media.advance(mt);
        tl.media.step();
        tl.release();
    }
    tl.media.advance(t0);
    let first = startable(&states);
    start_jobs(dev, tl, &mut states, &mut heap, &mut waiting, &first, t0)?;
    finish_jobs(dev, tl, &mut states, &mut heap, &mut waiting, t0)?;
    let mut last_t = t0;
    loop {
        if heap.is_empty() && waiting.is_empty() {
            // Every job is done; queued NAND work carries over to the next run.
            break;
        }
        // Media events up to the next host event run first (so a read arriving at t finds every
        // operation that started by t); a finished host program frees buffer space and admits
        // waiting writes, in order.
        let host_t = heap.peek().map_or(u64::MAX, |Reverse(e)| e.time);
        if let Some(mt) = tl.media.next_event() {
            if mt <= host_t {
                tl.media.advance(mt);
                tl.media.step();
                if tl.release() && !waiting.is_empty() {
                    last_t = last_t.max(mt);
                    drain_waiting(dev, tl, &mut heap, &mut waiting, mt, false)?;
                }
                continue;
            }
        }
        // Nothing queued can free buffer space (the buffer holds only partly filled program
        // units): take the front waiting write now rather than let it wait for other jobs.
        if !waiting.is_empty() && tl.media.host_programs_pending() == 0 {
            drain_waiting(dev, tl, &mut heap, &mut waiting, last_t, true)?;
            continue;
        }
        let Some(Reverse(ev)) = heap.pop() else { break };
        let now = ev.time;
        last_t = last_t.max(now);
        tl.media.advance(now);
        end = end.max(now);
        let j = ev.job as usize;
        {
            let s = &mut states[j];
            if ev.kind == 0 {
                s.advance(now);
                s.inflight -= 1;
                s.last_completion = now;
                if now >= s.measure_from {
                    let d = match ev.op {
                        0 => &mut s.write,
                        1 => &mut s.read,
                        _ => &mut s.trim,
                    };
                    d.ios += 1;
                    d.bytes += ev.len as u64;
                    d.lat.record(now - ev.submitted);
                }
            } else {
                s.wake_pending = false;
            }
        }
        submit_some(dev, tl, &mut states, &mut heap, &mut waiting, j, now, u32::MAX)?;
        if states[j].is_done(now) {
            finish_jobs(dev, tl, &mut states, &mut heap, &mut waiting, now)?;
        }
        // Idle host (nothing in flight, next arrival far enough away): background GC.
        if tl.cfg.background_gc_free > 0 && waiting.is_empty() && states.iter().all(|s| s.inflight == 0) {
            if let Some(Reverse(next)) = heap.peek() {
                if next.time > now + crate::config::IDLE_NS && dev.background_gc(tl.cfg.background_gc_free, 1)? > 0 {
                    tl.charge_media(dev, now);
                }
            }
        }
    }
    assert!(waiting.is_empty(), "timing engine: {} writes still wait for buffer space with nothing left to free it", waiting.len());
    debug_assert!(states.iter().all(|s| s.started), "every stage started");
    tl.now = end;
    let busy = tl.media.busy;
    let results = states
        .into_iter()
        .map(|s| {
            let window = s.last_completion.saturating_sub(s.measure_from);
            JobResult {
                name: s.spec.name,
                mean_inflight: if window > 0 { s.inflight_area / window as f64 } else { 0.0 },
                read: s.read,
                write: s.write,
                trim: s.trim,
                window_ns: window,
            }
        })
        .collect();
    Ok(TimedRun {
        jobs: results,
        start_ns: t0,
        end_ns: end,
        drained_ns: end.max(tl.media.drained_at()),
        busy: busy.since(&busy0),
    })
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

/// Start `jobs` at `now`: fill their queues round-robin, one I/O per job at a time, as parallel
/// submission queues arbitrated round-robin would (filling job after job would convoy them).
fn start_jobs<D: MediaDevice>(
    dev: &mut D,
    tl: &mut Timeline,
    states: &mut [JobState],
    heap: &mut BinaryHeap<Reverse<Event>>,
    waiting: &mut Waiting,
    jobs: &[usize],
    now: u64,
) -> Result<(), DeviceError> {
    for &j in jobs {
        states[j].start(now);
    }
    let max_depth = jobs.iter().map(|&j| states[j].spec.iodepth.max(1)).max().unwrap_or(0);
    for _ in 0..max_depth {
        for &j in jobs {
            submit_some(dev, tl, states, heap, waiting, j, now, 1)?;
        }
    }
    for &j in jobs {
        let s = &mut states[j];
        s.wake_pending = false;
        if s.next_allowed > now && s.inflight < s.spec.iodepth.max(1) && now < s.stop_at {
            s.wake_pending = true;
            heap.push(Reverse(Event { time: s.next_allowed, job: j as u32, kind: 1, submitted: 0, op: 0, len: 0 }));
        }
    }
    Ok(())
}

/// Mark jobs that are done as finished and start the next stage of every group whose current
/// stage has no unfinished job left (repeatedly: a stage may finish at once, e.g. with no I/O).
fn finish_jobs<D: MediaDevice>(
    dev: &mut D,
    tl: &mut Timeline,
    states: &mut [JobState],
    heap: &mut BinaryHeap<Reverse<Event>>,
    waiting: &mut Waiting,
    now: u64,
) -> Result<(), DeviceError> {
    loop {
        let mut changed = false;
        for s in states.iter_mut() {
            if !s.finished && s.is_done(now) {
                s.finished = true;
                changed = true;
            }
        }
        if !changed {
            return Ok(());
        }
        // Groups whose started jobs have all finished: start their next stage.
        let next = startable(states);
        if next.is_empty() {
            return Ok(());
        }
        start_jobs(dev, tl, states, heap, waiting, &next, now)?;
    }
}

/// Let job `j` issue up to `max` I/Os at `now` (bounded by its queue depth, rate and runtime).
fn submit_some<D: MediaDevice>(
    dev: &mut D,
    tl: &mut Timeline,
    states: &mut [JobState],
    heap: &mut BinaryHeap<Reverse<Event>>,
    waiting: &mut Waiting,
    j: usize,
    now: u64,
    max: u32,
) -> Result<(), DeviceError> {
    let mut issued = 0;
    while issued < max {
        let s = &mut states[j];
        if s.inflight >= s.spec.iodepth.max(1) || now >= s.stop_at {
            break;
        }
        if now < s.next_allowed {
            if !s.wake_pending {
                s.wake_pending = true;
                heap.push(Reverse(Event { time: s.next_allowed, job: j as u32, kind: 1, submitted: 0, op: 0, len: 0 }));
            }
            break;
        }
        let Some(io) = s.next_io() else { break };
        if let Some(ahead) = s.buf.get(s.pos + 16) {
            dev.prefetch_io(ahead);
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
        if is_write(io.op) {
            if waiting.is_empty() && tl.fits(&io) {
                let done = tl.admit_write(dev, &io, now)?;
                push_completion(heap, j as u32, &io, now, done);
            } else {
                waiting.push(j as u32, io, now);
            }
            continue;
        }
        if waiting.blocks(j as u32) {
            waiting.push(j as u32, io, now);
            continue;
        }
        let done = tl.issue(dev, &io, now)?;
        push_completion(heap, j as u32, &io, now, done);
    }
    Ok(())
}
