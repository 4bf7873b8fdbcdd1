//! The timed dm-zoned driver: [`DmZoned`] over the timing models of its devices (a cache
//! device and one model per disk), itself a [`TimedDevice`], so the engine runs fio-like jobs
//! against the whole target and sees when each user command completes.
//!
//! What happens in time, after the kernel (`dm-zoned-{target,reclaim,metadata}.c`,
//! `dm-kcopyd.c`; docs/model.md, "dm-zoned in time"):
//! - **User commands** are mapped when they arrive; the device commands they cause go to their
//!   devices at once, and the user command completes when the last of them has. A write that
//!   needs a zone when none is free, or touches a chunk being reclaimed, waits
//!   (`dmz_wait_for_free_zones`, `dmz_wait_for_reclaim`) and is mapped again when a reclaim job
//!   ends; later commands touching the same chunks wait behind it (the kernel serves a chunk's
//!   BIOs in order from one work item).
//! - **Reclaim**: one worker per disk. A worker reclaims one zone at a time and re-checks its
//!   rule after each (`dmz_reclaim_work` requeued at once while reclaim is needed); when the
//!   rule says no, it polls every 10 s (`DMZ_IDLE_PERIOD`), and every user zone allocation
//!   wakes it (`dmz_schedule_reclaim`). "Idle" is per worker: no user command whose chunk's
//!   data zone is on the worker's disk for 10 s. With a cache device, user writes to chunks held
//!   in cache zones refresh the cache's time, not a disk's, so disk workers turn idle 10 s into
//!   a run of such writes and reclaim without watermark, throttle 100 %, as the kernel does.
//! - **Copies** go extent by extent (one kcopyd job each, the next after the previous ended);
//!   within an extent up to [`SPLIT_COUNT`] pieces of the sub-job size run at once, each a read
//!   then a write, writes issued in offset order (`DM_KCOPYD_WRITE_SEQ`). Zero-filling a hole
//!   before a sequential destination's write pointer is synchronous. Finishing a zone (resets,
//!   metadata flush) completes before the next zone starts.
//! - **kcopyd throttle** (per worker; set before each zone to [`DmZoned::throttle`]): before
//!   each read or write of a piece, the worker compares the time with at least one of its
//!   copy I/Os in flight against `throttle`% of the time accounted (both halved as the
//!   account passes ~1 s); while over, it sleeps 100 ms (at most 10 times, then issues anyway).
//! - **Metadata** is flushed every 10 s (`DMZ_FLUSH_PERIOD`), after every reclaimed zone, and
//!   on a user Flush (which completes when the flush's writes and cache flushes have).
//!
//! Left out: the 1 s timeouts of the waits (a waiter is retried whenever a reclaim job ends,
//! which is when zones are freed or a chunk is released); the kernel's tight retry when an
//! idle worker finds no victim (here: the next poll or wake-up; it costs CPU, not I/O); CPU
//! time of the target.

use super::device::host_err;
use super::reclaim::ReclaimProgress;
use super::{DevId, DevIo, DmZoned, IoClass, MapStatus, StallReason};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use wafsim_core::{DeviceError, Io, Op};
use wafsim_time::timed::{Cmd, Completions, TimedDevice};

/// kcopyd's concurrent sub-jobs per job (`SPLIT_COUNT`).
pub const SPLIT_COUNT: usize = 8;
/// `DMZ_IDLE_PERIOD`: a worker without user I/O on its disk for this long is idle; a worker
/// with nothing to do checks again after this long.
pub const IDLE_PERIOD_NS: u64 = 10_000_000_000;
/// `DMZ_FLUSH_PERIOD`: the periodic metadata flush.
pub const FLUSH_PERIOD_NS: u64 = 10_000_000_000;
/// kcopyd's throttle sleep (`SLEEP_USEC`) and most sleeps before issuing anyway (`MAX_SLEEPS`).
const THROTTLE_SLEEP_NS: u64 = 100_000_000;
const THROTTLE_MAX_SLEEPS: u32 = 10;
/// kcopyd's accounting interval (`1 << ACCOUNT_INTERVAL_SHIFT` jiffies; 256 jiffies at HZ=250,
/// the usual distribution kernel): past it, both periods are halved.
const THROTTLE_WINDOW_NS: u64 = 1_024_000_000;
/// User commands that waited this long without any being mapped: the target cannot free a
/// zone for them (the kernel would hang its writers); the run fails.
const STALL_LIMIT_NS: u64 = 600_000_000_000;

/// Who a device command belongs to.
#[derive(Debug, Clone, Copy)]
enum Owner {
    /// User command slot.
    User(u32),
    /// The read of worker `w`'s piece `id`.
    Read(u32, u64),
    /// The write of worker `w`'s oldest piece with a write in flight.
    Write(u32),
    /// A command worker `w` waits for before its next step (zero-fill, zone finish).
    Barrier(u32),
    /// The periodic metadata flush: nobody waits.
    Background,
    Free,
}

/// Internal events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Device command `tag` completed.
    Done(u32),
    /// Worker `w` wakes (throttle sleep over, or its poll).
    Wake(u32),
    /// Periodic metadata flush.
    Flush,
    /// A reclaim job ended (zones freed, chunk released): waiting user commands go on.
    Retry,
}

/// A user command in the driver.
#[derive(Debug, Clone)]
struct UserSlot {
    cmd: Cmd,
    /// The part not yet mapped (a stalled command's rest).
    rest: Io,
    /// Device commands in flight.
    pending: u32,
    /// Mapped completely.
    mapped: bool,
    live: bool,
    /// Why it waits (None: behind another waiting command, or not waiting).
    wait: Option<StallReason>,
    /// Data zones it keeps active (not lockable for reclaim) until it completes.
    active: Vec<u32>,
}

/// One kcopyd piece: a read, then the write of the same bytes.
#[derive(Debug, Clone, Copy)]
struct Piece {
    id: u64,
    read: DevIo,
    write: DevIo,
    read_sent: bool,
    read_done: bool,
    write_sent: bool,
    write_done: bool,
}

/// kcopyd's throttle account (`struct dm_kcopyd_throttle`), in ns.
#[derive(Debug, Clone, Copy, Default)]
struct Throttle {
    percent: u32,
    io_period: u64,
    total_period: u64,
    last: u64,
    in_flight: u32,
}

impl Throttle {
    fn account(&mut self, now: u64) {
        let d = now.saturating_sub(self.last);
        self.last = now;
        if self.in_flight > 0 {
            self.io_period += d;
        }
        self.total_period += d;
        if self.total_period >= THROTTLE_WINDOW_NS {
            // fls(total >> shift): halve once per doubling past the window.
            let shift = 64 - (self.total_period / THROTTLE_WINDOW_NS).leading_zeros();
            self.total_period >>= shift;
            self.io_period >>= shift;
        }
    }

    /// `io_job_start`: may a copy I/O start at `now`?
    fn may_start(&mut self, now: u64) -> bool {
        if self.percent >= 100 {
            return true;
        }
        self.account(now);
        self.io_period as u128 * 100 <= self.percent as u128 * self.total_period as u128
    }

    fn started(&mut self) {
        self.in_flight += 1;
    }

    /// `io_job_finish`.
    fn finished(&mut self, now: u64) {
        self.in_flight -= 1;
        if self.percent < 100 && self.in_flight == 0 {
            self.account(now);
        }
    }
}

/// A reclaim worker's timing state.
#[derive(Debug, Clone, Default)]
struct Worker {
    /// Last user command on this worker's disk.
    atime: u64,
    /// Pieces in flight, in emission order (their writes go out in this order).
    pieces: VecDeque<Piece>,
    next_piece: u64,
    /// Commands of a zero-fill or zone finish in flight.
    barrier: u32,
    /// Sleeping (throttle) until.
    sleep_until: u64,
    sleeps: u32,
    /// A wake-up is queued at this time.
    wake_at: Option<u64>,
    throttle: Throttle,
    /// Bytes copied (reclaim writes and zero-fill) so far, for the samples.
    copied: u64,
    /// Found no lockable victim: try again when a user command releases its zones.
    retry_on_release: bool,
}

/// One sample of the target's state at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct DmzSample {
    /// Model time, ns.
    pub t_ns: u64,
    /// Cache (or single-device random) zones free.
    pub cache_free: u32,
    /// Cache (or single-device random) zones in all.
    pub cache_total: u32,
    /// User bytes written so far.
    pub user_write_bytes: u64,
    /// Bytes each disk's reclaim worker has written so far (copies and zero-fill).
    pub reclaim_write_bytes: Vec<u64>,
}

/// The driver's state that lives across runs (the engine runs one phase at a time).
#[derive(Debug, Clone)]
pub struct DmZonedClock {
    users: Vec<UserSlot>,
    free_users: Vec<u32>,
    live_users: usize,
    owners: Vec<Owner>,
    free_tags: Vec<u32>,
    events: BinaryHeap<Reverse<(u64, Ev)>>,
    /// User commands waiting (stalled, or behind a stalled one on the same chunks), in order.
    stalled: VecDeque<u32>,
    workers: Vec<Worker>,
    cache_atime: u64,
    /// Consecutive reclaim attempts without a victim or destination.
    fail_streak: u32,
    /// Last time a user command was (partly) mapped.
    last_progress: u64,
    sample_ns: Option<u64>,
    next_sample: u64,
    /// Samples taken so far (see [`DmZonedClock::take_samples`]).
    samples: Vec<DmzSample>,
    flush_at: u64,
    now: u64,
}

impl DmZonedClock {
    /// A target at time 0 for `layer`; `sample_ns`: record a [`DmzSample`] at every multiple
    /// of it.
    pub fn new(layer: &DmZoned, sample_ns: Option<u64>) -> DmZonedClock {
        let sample_ns = sample_ns.filter(|&s| s > 0);
        DmZonedClock {
            users: Vec::new(),
            free_users: Vec::new(),
            live_users: 0,
            owners: Vec::new(),
            free_tags: Vec::new(),
            events: BinaryHeap::new(),
            stalled: VecDeque::new(),
            workers: vec![Worker::default(); layer.workers() as usize],
            cache_atime: 0,
            fail_streak: 0,
            last_progress: 0,
            sample_ns,
            next_sample: sample_ns.unwrap_or(u64::MAX),
            samples: Vec::new(),
            flush_at: FLUSH_PERIOD_NS,
            now: 0,
        }
    }

    /// The samples recorded since the last call.
    pub fn take_samples(&mut self) -> Vec<DmzSample> {
        std::mem::take(&mut self.samples)
    }

    /// The model's clock.
    pub fn now(&self) -> u64 {
        self.now
    }
}

/// dm-zoned over timed devices, for one run of the engine: `C` times the cache device, `Z`
/// each disk.
pub struct DmZonedTimed<'a, C: TimedDevice, Z: TimedDevice> {
    layer: &'a mut DmZoned,
    cache: Option<C>,
    disks: Vec<Z>,
    st: &'a mut DmZonedClock,
    buf: Vec<DevIo>,
    list: Vec<(Cmd, u64)>,
}

impl<'a, C: TimedDevice, Z: TimedDevice> DmZonedTimed<'a, C, Z> {
    /// The target over `cache` (required when the layer has a cache device) and one model per
    /// disk, in the layer's disk order.
    pub fn new(layer: &'a mut DmZoned, cache: Option<C>, disks: Vec<Z>, st: &'a mut DmZonedClock) -> Self {
        assert_eq!(layer.layout().has_cache(), cache.is_some(), "a cache device model exactly when the layer has a cache device");
        assert_eq!(disks.len(), layer.workers() as usize, "one model per disk");
        assert_eq!(st.workers.len(), disks.len(), "the clock was made for this layer");
        let t = DmZonedTimed { layer, cache, disks, st, buf: Vec::new(), list: Vec::new() };
        if t.st.events.iter().all(|Reverse((_, e))| *e != Ev::Flush) {
            let at = t.st.flush_at.max(t.st.now);
            t.st.events.push(Reverse((at, Ev::Flush)));
        }
        t
    }

    fn model(&mut self, dev: DevId) -> &mut dyn TimedDevice {
        match dev {
            DevId::Cache => self.cache.as_mut().expect("cache device model") as &mut dyn TimedDevice,
            DevId::Disk(i) => &mut self.disks[i as usize] as &mut dyn TimedDevice,
        }
    }

    fn tag(&mut self, owner: Owner) -> u32 {
        match self.st.free_tags.pop() {
            Some(t) => {
                self.st.owners[t as usize] = owner;
                t
            }
            None => {
                self.st.owners.push(owner);
                self.st.owners.len() as u32 - 1
            }
        }
    }

    /// Send one device command at `now`; its completion arrives as an event.
    fn send(&mut self, d: DevIo, owner: Owner, now: u64) -> Result<(), DeviceError> {
        let tag = self.tag(owner);
        let cmd = Cmd { job: tag, queue: 0, submitted: now, io: d.io };
        let mut list = std::mem::take(&mut self.list);
        let r = self.model(d.dev).submit(cmd, now, &mut Completions::list(&mut list));
        self.list = list;
        r?;
        self.collect();
        Ok(())
    }

    /// Completions the devices reported become events.
    fn collect(&mut self) {
        for (c, t) in self.list.drain(..) {
            self.st.events.push(Reverse((t, Ev::Done(c.job))));
        }
    }

    fn sample_until(&mut self, t: u64) {
        let Some(every) = self.st.sample_ns else { return };
        while self.st.next_sample <= t {
            let u = self.layer.cache_usage();
            let s = DmzSample {
                t_ns: self.st.next_sample,
                cache_free: u.free,
                cache_total: u.total,
                user_write_bytes: self.layer.counters().host_write_bytes,
                reclaim_write_bytes: self.st.workers.iter().map(|w| w.copied).collect(),
            };
            self.st.samples.push(s);
            self.st.next_sample += every;
        }
    }

    fn worker_idle(&self, w: u32, now: u64) -> bool {
        self.st.workers[w as usize].atime + IDLE_PERIOD_NS < now
    }

    /// Chunks `io` touches (first, last), in the layer's chunk size.
    fn chunks(&self, io: &Io) -> (u64, u64) {
        let zb = self.layer.layout().zone_size;
        (io.offset / zb, (io.offset + (io.len.max(1) as u64) - 1) / zb)
    }

    /// A user command touching `io`'s chunks must wait behind one of the `waiting` ones.
    fn behind(&self, io: &Io, waiting: &VecDeque<u32>) -> bool {
        if waiting.is_empty() {
            return false;
        }
        if io.op == Op::Flush {
            return true;
        }
        let (a, b) = self.chunks(io);
        waiting.iter().any(|&u| {
            let r = &self.st.users[u as usize].rest;
            if r.op == Op::Flush {
                return true;
            }
            let (c, d) = self.chunks(r);
            a <= d && c <= b
        })
    }

    /// Map (the rest of) user command `u` at `now`. Returns false when it stalled again.
    fn map_user(&mut self, u: u32, now: u64, done: &mut Completions) -> Result<bool, DeviceError> {
        let rest = self.st.users[u as usize].rest;
        let status = match rest.op {
            Op::Write => self.layer.map_write(&rest, &mut self.buf).map_err(host_err)?,
            Op::Read => self.layer.map_read(&rest, &mut self.buf).map_err(host_err)?,
            Op::Trim => self.layer.map_trim(&rest, &mut self.buf).map_err(host_err)?,
            Op::Flush => {
                if rest.ns != 0 {
                    return Err(DeviceError::NoSuchNamespace(rest.ns));
                }
                self.layer.map_flush(&mut self.buf);
                MapStatus::Done
            }
            Op::Append | Op::Zone(_) => return Err(DeviceError::NotZoned { ns: rest.ns }),
        };
        let out = std::mem::take(&mut self.buf);
        for d in &out {
            self.st.users[u as usize].pending += 1;
            self.send(*d, Owner::User(u), now)?;
        }
        self.buf = out;
        self.buf.clear();
        match status {
            MapStatus::Done => {
                self.st.last_progress = now;
                // The chunks' data zones stay active until the command completes.
                let io = self.st.users[u as usize].cmd.io;
                if matches!(io.op, Op::Read | Op::Write | Op::Trim) {
                    let zb = self.layer.layout().zone_size;
                    let mut off = io.offset;
                    while off < io.offset + io.len as u64 {
                        if let Some(z) = self.layer.activate_chunk(off) {
                            self.st.users[u as usize].active.push(z);
                        }
                        off = (off / zb + 1) * zb;
                    }
                }
                self.st.users[u as usize].wait = None;
                self.st.users[u as usize].mapped = true;
                self.maybe_complete(u, now, done)?;
                Ok(true)
            }
            MapStatus::Stalled { done_bytes, reason } => {
                if done_bytes > 0 {
                    self.st.last_progress = now;
                }
                let s = &mut self.st.users[u as usize];
                s.wait = Some(reason);
                s.rest.offset += done_bytes;
                s.rest.len -= done_bytes as u32;
                if let StallReason::NoFreeZone = reason {
                    // Every worker is asked to reclaim (the allocation failed).
                    self.wake_all(now)?;
                }
                Ok(false)
            }
        }
    }

    fn maybe_complete(&mut self, u: u32, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
        let s = &mut self.st.users[u as usize];
        if s.mapped && s.pending == 0 && s.live {
            s.live = false;
            done.push(&s.cmd, now.max(s.cmd.submitted));
            self.st.live_users -= 1;
            self.st.free_users.push(u);
            let mut active = std::mem::take(&mut self.st.users[u as usize].active);
            for &z in &active {
                self.layer.deactivate_zone(z);
            }
            active.clear();
            self.st.users[u as usize].active = active;
            for w in 0..self.st.workers.len() as u32 {
                if std::mem::take(&mut self.st.workers[w as usize].retry_on_release) {
                    self.pump(w, now)?;
                }
            }
        }
        Ok(())
    }

    /// A reclaim job ended: map waiting commands again, in order. Those waiting for a chunk
    /// under reclaim go on (`dmz_unlock_zone_reclaim` wakes them); those waiting for a free
    /// zone only when one is free (`dmz_free_zone` wakes them): mapping them again at once
    /// would stop the reclaim of their own chunk before it could free anything.
    fn retry_stalled(&mut self, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
        let mut waiting = std::mem::take(&mut self.st.stalled);
        let mut still = VecDeque::new();
        while let Some(u) = waiting.pop_front() {
            // Behind an earlier one still stalled on the same chunks: keep the order.
            let blocked = self.behind(&self.st.users[u as usize].rest, &still);
            let no_zone = matches!(self.st.users[u as usize].wait, Some(StallReason::NoFreeZone)) && self.layer.free_user_zones() == 0;
            if blocked || no_zone || !self.map_user(u, now, done)? {
                still.push_back(u);
            }
        }
        self.st.stalled = still;
        Ok(())
    }

    fn wake_all(&mut self, now: u64) -> Result<(), DeviceError> {
        for w in 0..self.st.workers.len() as u32 {
            self.pump(w, now)?;
        }
        Ok(())
    }

    fn schedule_wake(&mut self, w: u32, at: u64) {
        let wk = &mut self.st.workers[w as usize];
        if wk.wake_at.is_none_or(|t| t > at) {
            wk.wake_at = Some(at);
            self.st.events.push(Reverse((at, Ev::Wake(w))));
        }
    }

    /// The throttle lets worker `w` issue a copy I/O at `now`; otherwise it sleeps.
    fn throttle_ok(&mut self, w: u32, now: u64) -> bool {
        let wk = &mut self.st.workers[w as usize];
        if wk.sleep_until > now {
            return false;
        }
        if wk.throttle.may_start(now) || wk.sleeps >= THROTTLE_MAX_SLEEPS {
            wk.sleeps = 0;
            return true;
        }
        wk.sleeps += 1;
        wk.sleep_until = now + THROTTLE_SLEEP_NS;
        let at = wk.sleep_until;
        self.schedule_wake(w, at);
        false
    }

    /// Issue worker `w`'s copy I/O that can go: the next write (in emission order) whose read
    /// is done, else the next read, each only when the throttle allows.
    fn send_pending(&mut self, w: u32, now: u64) -> Result<(), DeviceError> {
        loop {
            let wk = &self.st.workers[w as usize];
            let write = wk.pieces.iter().position(|p| !p.write_sent).filter(|&i| wk.pieces[i].read_done);
            let read = wk.pieces.iter().position(|p| !p.read_sent);
            let Some((i, is_write)) = write.map(|i| (i, true)).or(read.map(|i| (i, false))) else { return Ok(()) };
            if !self.throttle_ok(w, now) {
                return Ok(());
            }
            let wk = &mut self.st.workers[w as usize];
            wk.throttle.started();
            let p = &mut wk.pieces[i];
            if is_write {
                p.write_sent = true;
                let d = p.write;
                self.send(d, Owner::Write(w), now)?;
            } else {
                p.read_sent = true;
                let (d, id) = (p.read, p.id);
                self.send(d, Owner::Read(w, id), now)?;
            }
        }
    }

    /// Let worker `w` do what it can at `now`: start or continue a zone, issue pieces.
    fn pump(&mut self, w: u32, now: u64) -> Result<(), DeviceError> {
        let wi = w as usize;
        loop {
            let wk = &self.st.workers[wi];
            if wk.barrier > 0 {
                return Ok(());
            }
            let in_extent = self.layer.reclaim_in_extent(w);
            if (in_extent && wk.pieces.len() >= SPLIT_COUNT) || (!in_extent && !wk.pieces.is_empty()) {
                return Ok(());
            }
            let idle = self.worker_idle(w, now);
            let starting = !self.layer.reclaim_active(w);
            if starting {
                if !self.layer.should_reclaim(w, idle) {
                    self.schedule_wake(w, now + IDLE_PERIOD_NS);
                    return Ok(());
                }
                self.st.workers[wi].throttle.percent = self.layer.throttle(w, idle);
            }
            let mut out = std::mem::take(&mut self.buf);
            let p = self.layer.reclaim_step_worker(w, idle, &mut out);
            let r = self.run_step(w, p, &out, now);
            out.clear();
            self.buf = out;
            if !r? {
                return Ok(());
            }
        }
    }

    /// Send the commands of one reclaim step; whether the worker may go on at once.
    fn run_step(&mut self, w: u32, p: Option<ReclaimProgress>, out: &[DevIo], now: u64) -> Result<bool, DeviceError> {
        let wi = w as usize;
        match p {
            None => {
                self.schedule_wake(w, now + IDLE_PERIOD_NS);
                Ok(false)
            }
            Some(ReclaimProgress::Copy { .. }) => {
                self.st.fail_streak = 0;
                debug_assert_eq!(out.len(), 2, "a piece is a read and a write");
                debug_assert!(out[0].class == IoClass::ReclaimRead && out[1].class == IoClass::ReclaimWrite);
                let wk = &mut self.st.workers[wi];
                let id = wk.next_piece;
                wk.next_piece += 1;
                wk.copied += out[1].io.len as u64;
                wk.pieces.push_back(Piece { id, read: out[0], write: out[1], read_sent: false, read_done: false, write_sent: false, write_done: false });
                self.send_pending(w, now)?;
                Ok(true)
            }
            Some(ReclaimProgress::ZeroFill { bytes, .. }) => {
                self.st.fail_streak = 0;
                self.st.workers[wi].copied += bytes;
                self.barrier(w, out, now)?;
                Ok(false)
            }
            Some(ReclaimProgress::Done { .. } | ReclaimProgress::Aborted { .. }) => {
                self.st.fail_streak = 0;
                // Waiters go on (none waiting: a no-op). Not conditional on `stalled`: during a
                // retry the waiting commands are out of it.
                self.st.events.push(Reverse((now, Ev::Retry)));
                self.barrier(w, out, now)?;
                Ok(false)
            }
            Some(ReclaimProgress::NoVictim { .. }) => {
                // Every candidate is being reclaimed or has user I/O in flight: the kernel
                // retries at once (`-EBUSY`); here when a user command releases its zones, or at
                // the next poll.
                self.st.fail_streak += 1;
                self.st.workers[wi].retry_on_release = self.st.live_users > 0;
                self.schedule_wake(w, now + IDLE_PERIOD_NS);
                Ok(false)
            }
            Some(ReclaimProgress::NoSpace { .. }) => {
                self.st.fail_streak += 1;
                self.schedule_wake(w, now + IDLE_PERIOD_NS);
                Ok(false)
            }
        }
    }

    /// Send `out` as commands worker `w` waits for before its next step.
    fn barrier(&mut self, w: u32, out: &[DevIo], now: u64) -> Result<(), DeviceError> {
        self.st.workers[w as usize].barrier += out.len() as u32;
        for d in out {
            self.send(*d, Owner::Barrier(w), now)?;
        }
        Ok(())
    }

    /// Handle internal event `ev` at `t`.
    fn handle(&mut self, ev: Ev, t: u64, done: &mut Completions) -> Result<(), DeviceError> {
        match ev {
            Ev::Done(tag) => {
                let owner = std::mem::replace(&mut self.st.owners[tag as usize], Owner::Free);
                self.st.free_tags.push(tag);
                match owner {
                    Owner::User(u) => {
                        self.st.users[u as usize].pending -= 1;
                        self.maybe_complete(u, t, done)?;
                    }
                    Owner::Read(w, id) => {
                        let wk = &mut self.st.workers[w as usize];
                        wk.throttle.finished(t);
                        let front = wk.pieces.front().expect("piece in flight").id;
                        wk.pieces[(id - front) as usize].read_done = true;
                        self.send_pending(w, t)?;
                    }
                    Owner::Write(w) => {
                        let wk = &mut self.st.workers[w as usize];
                        wk.throttle.finished(t);
                        // Writes complete in any order; count them against the oldest sent.
                        let i = wk.pieces.iter().position(|p| p.write_sent && !p.write_done).expect("write in flight");
                        wk.pieces[i].write_done = true;
                        while wk.pieces.front().is_some_and(|p| p.write_done) {
                            wk.pieces.pop_front();
                        }
                        self.send_pending(w, t)?;
                        self.pump(w, t)?;
                    }
                    Owner::Barrier(w) => {
                        let wk = &mut self.st.workers[w as usize];
                        wk.barrier -= 1;
                        if wk.barrier == 0 {
                            self.pump(w, t)?;
                        }
                    }
                    Owner::Background => {}
                    Owner::Free => unreachable!("completion of a free tag"),
                }
            }
            Ev::Wake(w) => {
                let wk = &mut self.st.workers[w as usize];
                if wk.wake_at == Some(t) {
                    wk.wake_at = None;
                }
                self.send_pending(w, t)?;
                self.pump(w, t)?;
                self.check_progress(t)?;
            }
            Ev::Retry => self.retry_stalled(t, done)?,
            Ev::Flush => {
                self.st.flush_at = t + FLUSH_PERIOD_NS;
                let mut out = std::mem::take(&mut self.buf);
                self.layer.flush_metadata(&mut out);
                for d in &out {
                    self.send(*d, Owner::Background, t)?;
                }
                out.clear();
                self.buf = out;
                self.st.events.push(Reverse((self.st.flush_at, Ev::Flush)));
            }
        }
        Ok(())
    }

    /// Commands wait for a free zone that no worker can make, or wait on and on while reclaim
    /// cannot free a zone for them: fail rather than wait forever.
    fn check_progress(&self, t: u64) -> Result<(), DeviceError> {
        if !self.st.stalled.is_empty() && t.saturating_sub(self.st.last_progress) > STALL_LIMIT_NS {
            return Err(DeviceError::NoReclaimableSpace { rg: 0 });
        }
        let workers = self.st.workers.len() as u32;
        let waiting = !self.st.stalled.is_empty();
        let busy = (0..workers).any(|w| {
            let wk = &self.st.workers[w as usize];
            self.layer.reclaim_active(w) || wk.barrier > 0 || !wk.pieces.is_empty()
        });
        if waiting && !busy && self.st.fail_streak > 2 * workers && self.layer.free_user_zones() == 0 {
            return Err(DeviceError::NoReclaimableSpace { rg: 0 });
        }
        Ok(())
    }

    fn own_next(&self) -> Option<u64> {
        self.st.events.peek().map(|Reverse((t, _))| *t)
    }
}

impl<C: TimedDevice, Z: TimedDevice> TimedDevice for DmZonedTimed<'_, C, Z> {
    fn next_event(&mut self) -> Option<u64> {
        let mut t = self.own_next();
        let mut min = |x: Option<u64>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        };
        if let Some(c) = self.cache.as_mut() {
            min(c.next_event());
        }
        for d in &mut self.disks {
            min(d.next_event());
        }
        t
    }

    fn step(&mut self, t: u64, done: &mut Completions) -> Result<(), DeviceError> {
        self.sample_until(t);
        self.st.now = self.st.now.max(t);
        let mut list = std::mem::take(&mut self.list);
        if let Some(c) = self.cache.as_mut() {
            while c.next_event().is_some_and(|x| x <= t) {
                c.step(t, &mut Completions::list(&mut list))?;
            }
        }
        for d in &mut self.disks {
            while d.next_event().is_some_and(|x| x <= t) {
                d.step(t, &mut Completions::list(&mut list))?;
            }
        }
        self.list = list;
        self.collect();
        while let Some(&Reverse((et, ev))) = self.st.events.peek() {
            if et > t {
                break;
            }
            self.st.events.pop();
            self.handle(ev, t, done)?;
        }
        Ok(())
    }

    fn advance(&mut self, now: u64) {
        self.sample_until(now);
        self.st.now = self.st.now.max(now);
        if let Some(c) = self.cache.as_mut() {
            c.advance(now);
        }
        for d in &mut self.disks {
            d.advance(now);
        }
    }

    fn submit(&mut self, cmd: Cmd, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
        self.sample_until(now);
        // The worker whose disk holds the chunk's data sees the access (`dmz_reclaim_bio_acc`).
        if matches!(cmd.io.op, Op::Read | Op::Write | Op::Trim) {
            match self.layer.chunk_device(cmd.io.offset) {
                Some(DevId::Disk(i)) => self.st.workers[i as usize].atime = now,
                Some(DevId::Cache) => self.st.cache_atime = now,
                None => {}
            }
        }
        let u = match self.st.free_users.pop() {
            Some(u) => {
                let s = &mut self.st.users[u as usize];
                debug_assert!(s.active.is_empty());
                (s.cmd, s.rest, s.pending, s.mapped, s.live, s.wait) = (cmd, cmd.io, 0, false, true, None);
                u
            }
            None => {
                self.st.users.push(UserSlot { cmd, rest: cmd.io, pending: 0, mapped: false, live: true, wait: None, active: Vec::new() });
                self.st.users.len() as u32 - 1
            }
        };
        self.st.live_users += 1;
        if self.behind(&cmd.io, &self.st.stalled) || !self.map_user(u, now, done)? {
            self.st.stalled.push_back(u);
        }
        if cmd.io.op == Op::Write {
            // dmz_alloc_zone schedules reclaim; checking after every write sees each allocation.
            self.wake_all(now)?;
        }
        Ok(())
    }

    fn holding(&self) -> usize {
        self.st.live_users
    }

    fn clock(&self) -> u64 {
        self.st.now
    }

    fn set_clock(&mut self, t: u64) {
        self.st.now = t;
        if let Some(c) = self.cache.as_mut() {
            c.set_clock(t);
        }
        for d in &mut self.disks {
            d.set_clock(t);
        }
    }

    fn drained_at(&self) -> u64 {
        let mut t = self.st.now;
        if let Some(c) = self.cache.as_ref() {
            t = t.max(c.drained_at());
        }
        for d in &self.disks {
            t = t.max(d.drained_at());
        }
        t
    }
}
