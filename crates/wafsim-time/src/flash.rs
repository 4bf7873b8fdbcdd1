//! The flash drive's timing model: host link, write buffer and the NAND media (media.rs)
//! behind an FTL that logs its NAND work. Writes complete once buffered; a write that does not
//! fit waits, in submission-queue order, until host programs free buffer space; reads complete
//! once the data has crossed the die, the channel and the host link.

use crate::config::TimingConfig;
use crate::media::{Busy, Media};
use crate::timed::{Cmd, Completions, TimedDevice};
use std::collections::VecDeque;
use wafsim_core::device::MediaOp;
use wafsim_core::{DeviceError, Io, MediaDevice, Op};

/// Fixed completion time of a trim (a command without data transfer or NAND work).
pub(crate) const TRIM_NS: u64 = 1_000;

/// Device-side state that lives across phases: media, host link, write buffer, clock.
pub struct Timeline {
    /// The drive's timing parameters.
    pub cfg: TimingConfig,
    /// The NAND dies and channels.
    pub media: Media,
    link_in_free: u64,
    link_out_free: u64,
    link_ns_per_byte: f64,
    /// When the write-command processor is next free.
    cmd_free: u64,
    /// Bytes in the write buffer: written by the host, not yet programmed.
    buffered: u64,
    /// Model time (ns) where the next run starts.
    pub now: u64,
    ops: Vec<MediaOp>,
    /// Mapping units per page type (a program unit holds its pages LSB first, each page on every
    /// plane: `units_per_program / bits_per_cell` units per page type).
    units_per_page_type: u32,
    /// Commands the drive has not taken yet (empty between runs).
    waiting: Waiting,
    /// Latest host event or buffer release that let waiting writes in (a forced admission
    /// happens then).
    last_t: u64,
}

impl Timeline {
    /// Start the clock at 0 and turn on the device's media log.
    pub fn new<D: MediaDevice>(cfg: TimingConfig, dev: &mut D) -> Timeline {
        dev.set_die_groups(cfg.reclaim_groups);
        dev.enable_media_log(cfg.units_per_program(), cfg.units_per_page(), cfg.dies_per_rg());
        Timeline {
            media: Media::new(&cfg),
            link_in_free: 0,
            cmd_free: 0,
            link_out_free: 0,
            link_ns_per_byte: 1e9 / cfg.host_link_bytes_per_sec,
            buffered: 0,
            now: 0,
            ops: Vec::new(),
            units_per_page_type: (cfg.units_per_program() / cfg.nand.bits_per_cell.max(1)).max(1),
            waiting: Waiting::default(),
            last_t: 0,
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
                MediaOp::ProgramSlc { die } => self.media.queue_host_program_slc(at, die),
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
        let mut start = now;
        if self.cfg.write_command_ns > 0 {
            start = now.max(self.cmd_free) + self.cfg.write_command_ns;
            self.cmd_free = start;
        }
        let start = start.max(self.link_in_free);
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
            Op::Zone(action) => {
                let done = dev.zone_mgmt(io.ns, io.offset, action)?;
                self.charge_media(dev, now);
                if action == wafsim_core::blockdev::ZoneAction::Reset && (self.cfg.zone_reset_ns > 0 || self.cfg.zone_reset_ns_per_byte > 0.0) {
                    // The data dropped, at full scale (a scaled zone holds erase_scale of it).
                    let bytes = done.bytes as f64 / self.cfg.erase_scale;
                    return Ok(now + self.cfg.zone_reset_ns + (bytes * self.cfg.zone_reset_ns_per_byte).round() as u64);
                }
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
#[derive(Default)]
struct Waiting {
    q: VecDeque<Cmd>,
    /// Writes waiting per submission queue.
    writes: Vec<u32>,
}

impl Waiting {
    /// Whether commands of `queue` must wait (a write of that queue waits).
    fn blocks(&self, queue: u32) -> bool {
        self.writes.get(queue as usize).is_some_and(|&w| w > 0)
    }
    fn push(&mut self, cmd: Cmd) {
        if is_write(cmd.io.op) {
            let q = cmd.queue as usize;
            if q >= self.writes.len() {
                self.writes.resize(q + 1, 0);
            }
            self.writes[q] += 1;
        }
        self.q.push_back(cmd);
    }
    fn pop(&mut self) -> Option<Cmd> {
        let c = self.q.pop_front()?;
        if is_write(c.io.op) {
            self.writes[c.queue as usize] -= 1;
        }
        Some(c)
    }
}

/// A flash device on its timeline, for one run of the engine.
pub struct FlashTimed<'a, D: MediaDevice> {
    /// The flash device (FTL) whose NAND work the media log reports.
    pub dev: &'a mut D,
    /// Its media, host link, write buffer and clock, kept across runs.
    pub tl: &'a mut Timeline,
}

impl<'a, D: MediaDevice> FlashTimed<'a, D> {
    /// Pair `dev` with its timeline for one run.
    pub fn new(dev: &'a mut D, tl: &'a mut Timeline) -> Self {
        tl.last_t = tl.now;
        FlashTimed { dev, tl }
    }

    /// Hand waiting commands to the drive at `t`, in order: writes while they fit in the
    /// buffer (the first one regardless when `force`), and the commands queued behind them.
    fn drain_waiting(&mut self, done: &mut Completions, t: u64, mut force: bool) -> Result<(), DeviceError> {
        while let Some(&cmd) = self.tl.waiting.q.front() {
            if is_write(cmd.io.op) {
                if !force && !self.tl.fits(&cmd.io) {
                    break;
                }
                force = false;
            }
            self.tl.waiting.pop();
            let at = if is_write(cmd.io.op) { self.tl.admit_write(self.dev, &cmd.io, t)? } else { self.tl.issue(self.dev, &cmd.io, t)? };
            done.push(&cmd, at);
        }
        Ok(())
    }
}

impl<D: MediaDevice> TimedDevice for FlashTimed<'_, D> {
    fn counters(&self) -> Option<&wafsim_core::Counters> {
        Some(self.dev.counters())
    }

    #[inline]
    fn next_event(&mut self) -> Option<u64> {
        self.tl.media.next_event()
    }

    fn step(&mut self, t: u64, done: &mut Completions) -> Result<(), DeviceError> {
        self.tl.media.advance(t);
        self.tl.media.step();
        // A finished host program frees buffer space and admits waiting writes, in order.
        if self.tl.release() && !self.tl.waiting.q.is_empty() {
            self.tl.last_t = self.tl.last_t.max(t);
            self.drain_waiting(done, t, false)?;
        }
        Ok(())
    }

    #[inline]
    fn advance(&mut self, now: u64) {
        self.tl.last_t = self.tl.last_t.max(now);
        self.tl.media.advance(now);
    }

    fn submit(&mut self, cmd: Cmd, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
        if is_write(cmd.io.op) {
            if self.tl.waiting.q.is_empty() && self.tl.fits(&cmd.io) {
                let at = self.tl.admit_write(self.dev, &cmd.io, now)?;
                done.push(&cmd, at);
            } else {
                self.tl.waiting.push(cmd);
            }
        } else if self.tl.waiting.blocks(cmd.queue) {
            self.tl.waiting.push(cmd);
        } else {
            let at = self.tl.issue(self.dev, &cmd.io, now)?;
            done.push(&cmd, at);
        }
        Ok(())
    }

    /// Nothing queued can free buffer space (the buffer holds only partly filled program
    /// units): take the front waiting write now rather than let it wait for other jobs.
    fn unstick(&mut self, done: &mut Completions) -> Result<bool, DeviceError> {
        if self.tl.waiting.q.is_empty() || self.tl.media.host_programs_pending() != 0 {
            return Ok(false);
        }
        let t = self.tl.last_t;
        self.drain_waiting(done, t, true)?;
        Ok(true)
    }

    #[inline]
    fn holding(&self) -> usize {
        self.tl.waiting.q.len()
    }

    /// Idle host (nothing in flight, next arrival far enough away): background GC.
    fn idle(&mut self, now: u64, next: u64) -> Result<(), DeviceError> {
        // pSLC cache: fold one SLC erase unit per idle gap once the previous fold (or GC) work
        // is done (folding is cheaper than GC and restores the cache for the next burst).
        if self.dev.slc_fold_pending()
            && self.tl.waiting.q.is_empty()
            && next > now + crate::config::IDLE_NS
            && self.tl.media.gc_idle()
            && self.dev.background_fold(1)? > 0
        {
            self.tl.charge_media(self.dev, now);
            return Ok(());
        }
        if self.tl.cfg.background_gc_free > 0
            && self.tl.waiting.q.is_empty()
            && next > now + crate::config::IDLE_NS
            && self.dev.background_gc(self.tl.cfg.background_gc_free, 1)? > 0
        {
            self.tl.charge_media(self.dev, now);
        }
        Ok(())
    }

    #[inline]
    fn prefetch(&mut self, io: &Io) {
        self.dev.prefetch_io(io);
    }

    fn clock(&self) -> u64 {
        self.tl.now
    }

    fn set_clock(&mut self, t: u64) {
        self.tl.now = t;
    }

    fn busy(&self) -> Busy {
        self.tl.media.busy
    }

    fn drained_at(&self) -> u64 {
        self.tl.media.drained_at()
    }
}
