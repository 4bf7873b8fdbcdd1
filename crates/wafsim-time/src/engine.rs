//! The discrete-event loop: fio-like closed-loop jobs (iodepth, rate limits, runtime, ramp
//! time) issue I/O against the device; writes complete once buffered, reads once the data has
//! crossed the die, the channel and the host link. Resources are reserved in event order.

use crate::config::TimingConfig;
use crate::hist::Histogram;
use crate::media::{Busy, Media};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use wafsim_core::device::MediaOp;
use wafsim_core::{Device, DeviceError, Io, Op};
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
}

impl JobSpec {
    /// A job that starts at once and runs alone in its group.
    pub fn new(name: impl Into<String>, source: Box<dyn IoSource>, iodepth: u32, group: u32) -> JobSpec {
        JobSpec { name: name.into(), source, iodepth, rate_iops: None, rate_bytes: None, runtime_ns: None, ramp_ns: 0, group, stage: 0 }
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

/// Device-side state that lives across phases: media timelines, host link, write buffer, clock.
pub struct Timeline {
    pub cfg: TimingConfig,
    pub media: Media,
    link_in_free: u64,
    link_out_free: u64,
    link_ns_per_byte: f64,
    buffered: u64,
    /// Host programs in flight: (completion, bytes, die, the die's suspend delay when booked).
    releases: BinaryHeap<Reverse<(u64, u64, u32, u64)>>,
    pub now: u64,
    ops: Vec<MediaOp>,
}

impl Timeline {
    /// Start the clock at 0 and turn on the device's media log.
    pub fn new(cfg: TimingConfig, dev: &mut Device) -> Timeline {
        dev.enable_media_log(cfg.units_per_program(), cfg.units_per_page(), cfg.dies_per_rg());
        Timeline {
            media: Media::new(&cfg),
            link_in_free: 0,
            link_out_free: 0,
            link_ns_per_byte: 1e9 / cfg.host_link_bytes_per_sec,
            buffered: 0,
            releases: BinaryHeap::new(),
            now: 0,
            ops: Vec::new(),
            cfg,
        }
    }

    fn link_ns(&self, bytes: u64) -> u64 {
        (bytes as f64 * self.link_ns_per_byte).round() as u64
    }

    /// Charge the NAND work the FTL logged, with data available at `at`.
    fn charge_media(&mut self, dev: &mut Device, at: u64) {
        dev.drain_media_ops(&mut self.ops);
        let program_bytes = self.cfg.program_bytes();
        // The FTL logs a GC copy's page reads before the program units they fill: a GC program
        // starts no earlier than the reads logged before it have their data out.
        let mut gc_ready = at;
        for op in self.ops.drain(..) {
            match op {
                MediaOp::ProgramHost { die } => {
                    let done = self.media.program(at, die, true);
                    self.releases.push(Reverse((done, program_bytes, die, self.media.suspend_delay(die))));
                }
                MediaOp::ProgramGc { die } => {
                    self.media.program(gc_ready, die, false);
                }
                MediaOp::ReadGc { die } => {
                    gc_ready = gc_ready.max(self.media.read(at, die, 0, false));
                }
                MediaOp::Erase { rg } => self.media.erase(at, rg),
            }
        }
    }

    fn write_need(&self, io: &Io) -> u64 {
        let mu = self.cfg.mapping_unit as u64;
        let first = io.offset / mu;
        let last = (io.offset + io.len as u64 - 1) / mu;
        (last - first + 1) * mu
    }

    /// Free the buffer space of programs finished by `t`.
    fn release_until(&mut self, t: u64) {
        while let Some(&Reverse((r, b, die, delay))) = self.releases.peek() {
            if r > t {
                break;
            }
            self.releases.pop();
            // Reads that suspended this die since the program was booked pushed it back.
            let now_delay = self.media.suspend_delay(die);
            if now_delay > delay {
                self.releases.push(Reverse((r + (now_delay - delay), b, die, now_delay)));
                continue;
            }
            // Saturating: a program can complete a program unit partly written before the
            // timeline started (the untimed precondition), whose data was never counted in.
            self.buffered = self.buffered.saturating_sub(b);
        }
    }

    /// Whether a write fits in the buffer now (after releasing what finished by `now`).
    fn fits(&mut self, io: &Io, now: u64) -> bool {
        self.release_until(now);
        // An empty buffer takes any write, so one larger than the buffer cannot wait forever.
        self.buffered == 0 || self.buffered + self.write_need(io) <= self.cfg.write_buffer_bytes
    }

    /// Take a write into the buffer at `now` (it fits): transfer over the host link, update the
    /// FTL, schedule the NAND work it causes. Returns the write's completion time.
    fn admit_write(&mut self, dev: &mut Device, io: &Io, now: u64) -> Result<u64, DeviceError> {
        let start = now.max(self.link_in_free);
        let done = start + self.link_ns(io.len as u64);
        self.link_in_free = done;
        self.buffered += self.write_need(io);
        dev.submit(io)?;
        self.charge_media(dev, done);
        Ok(done)
    }

    /// Issue one read or trim at `now`; returns its completion time.
    fn issue(&mut self, dev: &mut Device, io: &Io, now: u64) -> Result<u64, DeviceError> {
        match io.op {
            Op::Write => unreachable!("writes go through admit_write"),
            Op::Read => {
                dev.submit(io)?;
                let mu = self.cfg.mapping_unit as u64;
                let mut ready = now;
                let mut off = io.offset - io.offset % mu;
                let end = io.offset + io.len as u64;
                // Units on the same die as the previous one are read together.
                // Consecutive units in one physical page are read with one array read.
                let upp = self.cfg.units_per_page();
                let mut run_die = u32::MAX;
                let mut run_page = u32::MAX;
                let mut run_bytes = 0u64;
                while off < end {
                    if let Some(p) = dev.lookup(io.ns, off) {
                        let die = dev.die_of(p);
                        let page = p / upp;
                        if (die != run_die || page != run_page) && run_bytes > 0 {
                            ready = ready.max(self.media.read(now, run_die, run_bytes, true));
                            run_bytes = 0;
                        }
                        run_die = die;
                        run_page = page;
                        run_bytes += mu;
                    }
                    off += mu;
                }
                if run_bytes > 0 {
                    ready = ready.max(self.media.read(now, run_die, run_bytes, true));
                }
                let start = ready.max(self.link_out_free);
                let done = start + self.link_ns(io.len as u64);
                self.link_out_free = done;
                Ok(done)
            }
            Op::Trim => {
                dev.submit(io)?;
                Ok(now + TRIM_NS)
            }
        }
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
pub fn run(dev: &mut Device, tl: &mut Timeline, jobs: Vec<JobSpec>) -> Result<TimedRun, DeviceError> {
    let t0 = tl.now;
    let busy0 = tl.media.busy;
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
    let mut waiting: std::collections::VecDeque<(u32, Io, u64)> = std::collections::VecDeque::new();
    let mut end = t0;
    let first = startable(&states);
    start_jobs(dev, tl, &mut states, &mut heap, &mut waiting, &first, t0)?;
    finish_jobs(dev, tl, &mut states, &mut heap, &mut waiting, t0)?;
    let mut last_t = t0;
    loop {
        // Nothing in flight can free buffer space (the buffer holds only partly filled program
        // units): take the front waiting write now rather than let it wait for other jobs.
        if !waiting.is_empty() && tl.releases.is_empty() {
            let (j, io, submitted) = waiting.pop_front().expect("non-empty");
            let done = tl.admit_write(dev, &io, last_t)?;
            heap.push(Reverse(Event { time: done, job: j, kind: 0, submitted, op: 0, len: io.len }));
            continue;
        }
        // Buffer space freed before the next event admits waiting writes, in order.
        if !waiting.is_empty() {
            let next_ev = heap.peek().map_or(u64::MAX, |Reverse(e)| e.time);
            if let Some(&Reverse((r, ..))) = tl.releases.peek() {
                if r <= next_ev {
                    last_t = last_t.max(r);
                    tl.release_until(r);
                    while let Some(&(j, io, submitted)) = waiting.front() {
                        if !tl.fits(&io, r) {
                            break;
                        }
                        waiting.pop_front();
                        let done = tl.admit_write(dev, &io, r)?;
                        heap.push(Reverse(Event { time: done, job: j, kind: 0, submitted, op: 0, len: io.len }));
                    }
                    continue;
                }
            }
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
    debug_assert!(waiting.is_empty());
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
        busy: Busy {
            host_program_ns: busy.host_program_ns - busy0.host_program_ns,
            host_read_ns: busy.host_read_ns - busy0.host_read_ns,
            gc_program_ns: busy.gc_program_ns - busy0.gc_program_ns,
            gc_read_ns: busy.gc_read_ns - busy0.gc_read_ns,
            erase_ns: busy.erase_ns - busy0.erase_ns,
        },
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
fn start_jobs(
    dev: &mut Device,
    tl: &mut Timeline,
    states: &mut [JobState],
    heap: &mut BinaryHeap<Reverse<Event>>,
    waiting: &mut std::collections::VecDeque<(u32, Io, u64)>,
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
fn finish_jobs(
    dev: &mut Device,
    tl: &mut Timeline,
    states: &mut [JobState],
    heap: &mut BinaryHeap<Reverse<Event>>,
    waiting: &mut std::collections::VecDeque<(u32, Io, u64)>,
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
fn submit_some(
    dev: &mut Device,
    tl: &mut Timeline,
    states: &mut [JobState],
    heap: &mut BinaryHeap<Reverse<Event>>,
    waiting: &mut std::collections::VecDeque<(u32, Io, u64)>,
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
        if io.op == Op::Write {
            if waiting.is_empty() && tl.fits(&io, now) {
                let done = tl.admit_write(dev, &io, now)?;
                heap.push(Reverse(Event { time: done, job: j as u32, kind: 0, submitted: now, op: 0, len: io.len }));
            } else {
                waiting.push_back((j as u32, io, now));
            }
            continue;
        }
        let done = tl.issue(dev, &io, now)?;
        let op = if io.op == Op::Read { 1 } else { 2 };
        heap.push(Reverse(Event { time: done, job: j as u32, kind: 0, submitted: now, op, len: io.len }));
    }
    Ok(())
}
