//! A regular device's timing without a model of its media: a fixed latency per command plus
//! transfer at a rated bandwidth, commands served in arrival order. It times the cache device in
//! front of SMR disks under dm-zoned (an NVMe SSD or NVDIMM), where what matters is how fast it
//! takes user writes and gives reclaim its data, not what its own FTL does.
//!
//! Model: a command occupies its direction's transfer pipe for `len / rate` after the pipe is
//! free, then completes `latency_ns` later (the latency does not occupy the pipe, as queued
//! commands overlap their fixed costs on a real device). Reads and writes have separate pipes
//! (`shared = false`: a full-duplex device whose rated read and write bandwidths can be drawn at
//! once) or one pipe (`shared = true`: the two rates share one device's time). A flush completes
//! when every write before it has completed; a trim completes at once. Which of the two pipe
//! rules a real device follows is not published for the devices modelled here; experiments
//! say which they use (docs/model.md, "Cache device").

use crate::timed::{Cmd, Completions, TimedDevice};
use wafsim_core::{BlockDevice, DeviceError, Op};

/// Rates and latency of a plain device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlainTiming {
    /// Sustained write bandwidth, bytes/s.
    pub write_bytes_per_sec: f64,
    /// Sustained read bandwidth, bytes/s.
    pub read_bytes_per_sec: f64,
    /// Fixed time of every read or write on top of its transfer, ns.
    pub latency_ns: u64,
    /// Reads and writes share one pipe.
    pub shared: bool,
}

impl PlainTiming {
    /// Check the rates (finite, positive).
    pub fn check(&self) -> Result<(), &'static str> {
        let ok = |r: f64| r.is_finite() && r > 0.0;
        if !ok(self.write_bytes_per_sec) || !ok(self.read_bytes_per_sec) {
            return Err("a plain device needs positive, finite read and write rates");
        }
        Ok(())
    }
}

/// The device's clock and pipes; lives across runs.
#[derive(Debug, Clone)]
pub struct PlainTimeline {
    /// The device's rates and latency.
    pub cfg: PlainTiming,
    /// When each pipe is free: [write, read] (both the same entry when shared).
    free_at: [u64; 2],
    /// Completion time of the latest write taken (a flush waits for it).
    last_write_done: u64,
    /// Transfer time booked so far, ns (both pipes).
    pub busy_ns: u64,
    /// Where the next run starts.
    pub now: u64,
}

impl PlainTimeline {
    /// An idle device at time 0; fails if the rates are not positive and finite.
    pub fn new(cfg: PlainTiming) -> Result<PlainTimeline, &'static str> {
        cfg.check()?;
        Ok(PlainTimeline { cfg, free_at: [0; 2], last_write_done: 0, busy_ns: 0, now: 0 })
    }

    /// Book a transfer of `len` bytes at `now`; returns its completion time.
    fn book(&mut self, write: bool, len: u32, now: u64) -> u64 {
        let pipe = if write || self.cfg.shared { 0 } else { 1 };
        let rate = if write { self.cfg.write_bytes_per_sec } else { self.cfg.read_bytes_per_sec };
        let xfer = (len as f64 * 1e9 / rate).ceil() as u64;
        let start = self.free_at[pipe].max(now);
        self.free_at[pipe] = start + xfer;
        self.busy_ns += xfer;
        let done = start + xfer + self.cfg.latency_ns;
        if write {
            self.last_write_done = self.last_write_done.max(done);
        }
        done
    }
}

/// A block device on a plain timeline, for one run of the engine (or under a host layer).
pub struct PlainTimed<'a, D: BlockDevice> {
    /// The block device that takes the commands.
    pub dev: &'a mut D,
    /// Its pipes and clock, kept across runs.
    pub tl: &'a mut PlainTimeline,
}

impl<'a, D: BlockDevice> PlainTimed<'a, D> {
    /// Pair `dev` with its timeline for one run.
    pub fn new(dev: &'a mut D, tl: &'a mut PlainTimeline) -> Self {
        PlainTimed { dev, tl }
    }
}

impl<D: BlockDevice> TimedDevice for PlainTimed<'_, D> {
    fn counters(&self) -> Option<&wafsim_core::Counters> {
        Some(self.dev.counters())
    }

    fn submit(&mut self, cmd: Cmd, now: u64, done: &mut Completions) -> Result<(), DeviceError> {
        self.dev.submit(&cmd.io)?;
        let t = match cmd.io.op {
            Op::Write | Op::Append => self.tl.book(true, cmd.io.len, now),
            Op::Read => self.tl.book(false, cmd.io.len, now),
            Op::Flush => self.tl.last_write_done.max(now),
            Op::Trim | Op::Zone(_) => now,
        };
        done.push(&cmd, t);
        Ok(())
    }

    fn holding(&self) -> usize {
        0
    }

    fn clock(&self) -> u64 {
        self.tl.now
    }

    fn set_clock(&mut self, t: u64) {
        self.tl.now = t;
    }

    fn drained_at(&self) -> u64 {
        self.tl.last_write_done.max(self.tl.now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::plain::PlainDevice;
    use wafsim_core::{Io, Pid};

    fn cmd(op: Op, offset: u64, len: u32, at: u64) -> Cmd {
        Cmd { job: 0, queue: 0, submitted: at, io: Io { op, ns: 0, offset, len, pid: Pid::NONE } }
    }

    fn timing(shared: bool) -> PlainTiming {
        // 1 GB/s: one byte per ns, so transfer times are the lengths.
        PlainTiming { write_bytes_per_sec: 1e9, read_bytes_per_sec: 2e9, latency_ns: 10_000, shared }
    }

    #[test]
    fn commands_queue_on_their_pipe_and_add_the_latency() {
        let mut dev = PlainDevice::new(1 << 30, 4096).unwrap();
        let mut tl = PlainTimeline::new(timing(false)).unwrap();
        let mut list = Vec::new();
        let mut m = PlainTimed::new(&mut dev, &mut tl);
        let mut done = Completions::list(&mut list);
        m.submit(cmd(Op::Write, 0, 1 << 20, 0), 0, &mut done).unwrap();
        m.submit(cmd(Op::Write, 1 << 20, 1 << 20, 0), 0, &mut done).unwrap();
        m.submit(cmd(Op::Read, 0, 1 << 20, 0), 0, &mut done).unwrap();
        m.submit(cmd(Op::Flush, 0, 0, 100), 100, &mut done).unwrap();
        let t: Vec<u64> = list.iter().map(|x| x.1).collect();
        // Two writes back to back (1 MiB = 1,048,576 ns each), the read on its own pipe at
        // 2 GB/s, the flush after the second write.
        assert_eq!(t, vec![1_048_576 + 10_000, 2 * 1_048_576 + 10_000, 524_288 + 10_000, 2 * 1_048_576 + 10_000]);
        assert_eq!(dev.counters().host_write_bytes, 2 << 20);
    }

    #[test]
    fn a_shared_pipe_serves_reads_after_writes() {
        let mut dev = PlainDevice::new(1 << 30, 4096).unwrap();
        let mut tl = PlainTimeline::new(timing(true)).unwrap();
        let mut list = Vec::new();
        let mut m = PlainTimed::new(&mut dev, &mut tl);
        let mut done = Completions::list(&mut list);
        m.submit(cmd(Op::Write, 0, 1 << 20, 0), 0, &mut done).unwrap();
        m.submit(cmd(Op::Read, 0, 1 << 20, 0), 0, &mut done).unwrap();
        assert_eq!(list[1].1, 1_048_576 + 524_288 + 10_000);
        assert_eq!(tl.busy_ns, 1_048_576 + 524_288);
    }

    #[test]
    fn bad_rates_are_refused() {
        let mut t = timing(false);
        t.read_bytes_per_sec = 0.0;
        assert!(PlainTimeline::new(t).is_err());
        t.read_bytes_per_sec = f64::NAN;
        assert!(PlainTimeline::new(t).is_err());
    }
}
