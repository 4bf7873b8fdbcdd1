//! A mechanical disk's timing model around any block device (the host-managed SMR disk of
//! `wafsim_core::smr`, whose zone rules decide what is accepted): commands go to the drive's
//! queue and write cache (hdd.rs: [`HddQueue`]), which serves one at a time by seek, rotation
//! and media rate. The device sees commands in arrival order, so zone rules (the write pointer)
//! apply to what the host sent, while the head serves them in its own order.
//!
//! Zone write plugging (host side): Linux lets one write per sequential-write-required zone be
//! in flight to a zoned disk at a time (mq-deadline's zone write lock, kernel 4.16 to 6.9; the
//! block layer's zone write plugging since 6.10), so the disk never gets two writes of one zone
//! out of order. A write to a zone whose previous write has not completed waits at the host
//! (here) until it does; a write the cache acknowledged has completed. Conventional zones are
//! not plugged.
//!
//! Non-data commands: a flush completes when every write acknowledged from the cache before it
//! is on the media; a zone command (reset, open, close, finish) completes after the drive's
//! command overhead without moving the head (ZBC keeps zone state in drive memory; a reset
//! moves the write pointer, no media is written); a trim completes at once.

use crate::hdd::{HddCmd, HddConfig, HddConfigError, HddQueue, Served};
use crate::timed::{Cmd, Completions, TimedDevice};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use wafsim_core::{BlockDevice, DeviceError, Op};

/// A command at the drive: what to complete, and the write-arrival order for flushes.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// `None` once its completion was reported (a cached write, acknowledged early).
    cmd: Option<Cmd>,
    /// Writes arrived before this one.
    seq: u64,
    /// The zone it plugs until it completes.
    plug: Option<u32>,
}

/// The disk's state that lives across runs: the drive, its queue, and the clock.
#[derive(Debug, Clone)]
pub struct DiskTimeline {
    queue: HddQueue,
    slots: Vec<Slot>,
    free: Vec<u32>,
    writes_seen: u64,
    /// Flushes waiting for cached writes: (command, writes arrived before it).
    flushes: Vec<(Cmd, u64)>,
    /// Commands without a reported completion.
    waiting: usize,
    /// Zone size on the device and on the disk, in bytes (module docs).
    zone_bytes: u64,
    disk_zone_bytes: u64,
    /// Leading zones that are conventional (not plugged).
    conventional_zones: u64,
    /// Per zone: a write of the zone is at the disk, not yet completed.
    plugged: Vec<bool>,
    /// Writes held at the host behind a plugged zone, in arrival order: (zone, command, HDD
    /// command, write sequence).
    held: VecDeque<(u32, Cmd, HddCmd, u64)>,
    /// When a plugged zone's write completes: (time, zone).
    unplug: BinaryHeap<Reverse<(u64, u32)>>,
    /// Head-busy time (positioning and transfer) so far.
    pub busy_ns: u64,
    /// Where the next run starts.
    pub now: u64,
}

impl DiskTimeline {
    /// A disk at rest (head at the outer diameter, time 0) whose zones of `disk_zone_bytes`
    /// hold the device's zones of `zone_bytes`: byte `o` of device zone `z` is byte `o` of
    /// disk zone `z`. Equal sizes map the device onto the disk one to one; a capacity-scaled
    /// device (smaller zones, same count) thus keeps the full-size drive's seek distances
    /// between zones and media rate at each zone.
    pub fn new(cfg: HddConfig, zone_bytes: u64, disk_zone_bytes: u64) -> Result<DiskTimeline, HddConfigError> {
        if zone_bytes == 0 || zone_bytes > disk_zone_bytes {
            return Err(HddConfigError("device zones must be non-empty and no larger than the disk's"));
        }
        Ok(DiskTimeline {
            zone_bytes,
            disk_zone_bytes,
            queue: HddQueue::new(crate::hdd::Hdd::new(cfg)?),
            slots: Vec::new(),
            free: Vec::new(),
            writes_seen: 0,
            flushes: Vec::new(),
            waiting: 0,
            conventional_zones: 0,
            plugged: Vec::new(),
            held: VecDeque::new(),
            unplug: BinaryHeap::new(),
            busy_ns: 0,
            now: 0,
        })
    }

    /// The disk's figures.
    pub fn config(&self) -> &HddConfig {
        self.queue.hdd().config()
    }

    /// Plug the sequential zones (all but the first `conventional_zones`): one write per zone
    /// in flight, as Linux does for a zoned block device.
    pub fn with_zone_write_plugging(mut self, conventional_zones: u32) -> DiskTimeline {
        let zones = self.config().capacity.div_ceil(self.disk_zone_bytes);
        self.conventional_zones = conventional_zones as u64;
        self.plugged = vec![false; zones as usize];
        self
    }

    /// The plug of the zone holding device byte `offset`, if writes there are plugged.
    fn plug_of(&self, offset: u64) -> Option<u32> {
        let z = offset / self.zone_bytes;
        (z >= self.conventional_zones && (z as usize) < self.plugged.len()).then_some(z as u32)
    }

    /// Send a write or read to the disk at `now`; a plugged zone's write unplugs when it
    /// completes.
    fn dispatch(&mut self, cmd: Cmd, hc: HddCmd, seq: u64, plug: Option<u32>, now: u64, done: &mut Completions) {
        let tag = self.slot(Slot { cmd: Some(cmd), seq, plug });
        if self.queue.submit(tag, hc) {
            self.complete(tag, now, done);
        }
        if self.queue.hdd().free_at() <= now {
            self.serve(now, done);
        }
    }

    /// Disk LBA of device byte `offset`.
    fn disk_lba(&self, offset: u64) -> u64 {
        let z = offset / self.zone_bytes;
        (z * self.disk_zone_bytes + offset % self.zone_bytes) / self.config().block_size as u64
    }

    fn slot(&mut self, s: Slot) -> u64 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = s;
                i as u64
            }
            None => {
                self.slots.push(s);
                self.slots.len() as u64 - 1
            }
        }
    }

    /// Report the completion of slot `tag` at `t` (once).
    fn complete(&mut self, tag: u64, t: u64, done: &mut Completions) {
        let slot = &mut self.slots[tag as usize];
        if let Some(cmd) = slot.cmd.take() {
            done.push(&cmd, t);
            self.waiting -= 1;
            if let Some(z) = slot.plug.take() {
                self.unplug.push(Reverse((t, z)));
            }
        }
    }

    /// Zone `z`'s write completed at `t`: send its next held write, if any.
    fn unplug_zone(&mut self, z: u32, t: u64, done: &mut Completions) {
        match self.held.iter().position(|h| h.0 == z) {
            Some(i) => {
                let (_, cmd, hc, seq) = self.held.remove(i).expect("found");
                self.dispatch(cmd, hc, seq, Some(z), t, done);
            }
            None => self.plugged[z as usize] = false,
        }
    }

    /// Time of the next unplug or head event.
    fn next_event(&self) -> Option<u64> {
        let head = (!self.queue.queued().is_empty()).then(|| self.queue.hdd().free_at());
        let unplug = self.unplug.peek().map(|Reverse((t, _))| *t);
        match (head, unplug) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn step(&mut self, t: u64, done: &mut Completions) {
        while let Some(&Reverse((u, z))) = self.unplug.peek() {
            if u > t {
                break;
            }
            self.unplug.pop();
            self.unplug_zone(z, t, done);
        }
        if !self.queue.queued().is_empty() && self.queue.hdd().free_at() <= t {
            self.serve(t, done);
        }
    }

    /// Oldest write still in the cache (by arrival), or `writes_seen` if none.
    fn oldest_dirty(&self) -> u64 {
        self.queue.queued().iter().filter(|q| q.acked).map(|q| self.slots[q.tag as usize].seq).min().unwrap_or(self.writes_seen)
    }

    /// Flushes whose writes are all on the media complete at `t`.
    fn complete_flushes(&mut self, t: u64, done: &mut Completions) {
        if self.flushes.is_empty() {
            return;
        }
        let oldest = self.oldest_dirty();
        let mut i = 0;
        while i < self.flushes.len() {
            if self.flushes[i].1 <= oldest {
                let (cmd, _) = self.flushes.swap_remove(i);
                done.push(&cmd, t.max(cmd.submitted));
                self.waiting -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// The drive is free at `t` (or earlier): serve the next command, if any.
    fn serve(&mut self, t: u64, done: &mut Completions) {
        let was_free = self.queue.hdd().free_at();
        let Some(Served { tag, done_ns, completes, acked, .. }) = self.queue.serve_next(t) else { return };
        self.busy_ns += done_ns - t.max(was_free).min(done_ns);
        if completes {
            self.complete(tag, done_ns, done);
        }
        for a in acked {
            self.complete(a, done_ns, done);
        }
        self.free.push(tag as u32);
        self.complete_flushes(done_ns, done);
    }
}

/// A block device on a mechanical disk's timeline, for one run of the engine.
pub struct DiskTimed<'a, D: BlockDevice> {
    /// The block device whose rules (zone write pointers, SMR) decide what is accepted.
    pub dev: &'a mut D,
    /// The disk's queue, write cache and clock, kept across runs.
    pub tl: &'a mut DiskTimeline,
}

impl<'a, D: BlockDevice> DiskTimed<'a, D> {
    /// Pair `dev` with its timeline for one run.
    pub fn new(dev: &'a mut D, tl: &'a mut DiskTimeline) -> Self {
        DiskTimed { dev, tl }
    }
}

impl<D: BlockDevice> TimedDevice for DiskTimed<'_, D> {
    fn counters(&self) -> Option<&wafsim_core::Counters> {
        Some(self.dev.counters())
    }

    fn next_event(&mut self) -> Option<u64> {
        // The head frees when its command ends, then picks among the waiting ones; a plugged
        // zone's write completing lets the zone's next write go to the disk.
        self.tl.next_event()
    }

    fn step(&mut self, t: u64, done: &mut Completions) -> Result<(), DeviceError> {
        self.tl.step(t, done);
        Ok(())
    }

    fn advance(&mut self, _now: u64) {}

    fn submit(&mut self, cmd: Cmd, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
        let c = self.dev.submit(&cmd.io)?;
        let bs = self.tl.config().block_size as u64;
        match cmd.io.op {
            Op::Read | Op::Write | Op::Append => {
                let write = cmd.io.op != Op::Read;
                let hc = HddCmd { lba: self.tl.disk_lba(c.offset), blocks: (cmd.io.len as u64).div_ceil(bs).max(1) as u32, write };
                let seq = self.tl.writes_seen;
                self.tl.writes_seen += write as u64;
                self.tl.waiting += 1;
                match write.then(|| self.tl.plug_of(c.offset)).flatten() {
                    Some(z) if self.tl.plugged[z as usize] => self.tl.held.push_back((z, cmd, hc, seq)),
                    Some(z) => {
                        self.tl.plugged[z as usize] = true;
                        self.tl.dispatch(cmd, hc, seq, Some(z), now, done);
                    }
                    None => self.tl.dispatch(cmd, hc, seq, None, now, done),
                }
            }
            Op::Flush => {
                self.tl.waiting += 1;
                self.tl.flushes.push((cmd, self.tl.writes_seen));
                self.tl.complete_flushes(now, done);
            }
            Op::Zone(_) => done.push(&cmd, now + self.tl.config().command_overhead_ns),
            Op::Trim => done.push(&cmd, now),
        }
        Ok(())
    }

    fn holding(&self) -> usize {
        self.tl.waiting
    }

    fn clock(&self) -> u64 {
        self.tl.now
    }

    fn set_clock(&mut self, t: u64) {
        self.tl.now = t;
    }

    /// When the cached writes would all be on the media if nothing else arrived.
    fn drained_at(&self) -> u64 {
        let mut q = self.tl.queue.clone();
        let mut t = q.hdd().free_at();
        while let Some(s) = q.serve_next(t) {
            t = s.done_ns;
        }
        t
    }
}
