//! The seam between the job engine and a device's timing model. The engine (engine.rs) runs
//! fio-like jobs and hands every command to a [`TimedDevice`]; the model decides when each
//! command completes, now or later, and reports it through [`Completions`]. A flash drive
//! (flash.rs: dies, channels, write buffer) and a mechanical disk (disk.rs: seek, rotation,
//! write cache) are models; a host layer over several devices can be one too, completing a
//! command when the commands it sent down have completed.

use crate::media::Busy;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use wafsim_core::{Counters, DeviceError, Io, Op};

/// A command on its way through a model: the I/O and who issued it when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cmd {
    /// Index of the issuing job.
    pub job: u32,
    /// Submission queue (dense index over the run's jobs; jobs that share a queue share it).
    pub queue: u32,
    /// Host time at which the job issued it.
    pub submitted: u64,
    /// The command itself.
    pub io: Io,
}

/// What the engine records about a completed command (the statistics it belongs to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    Write,
    Read,
    /// Commands without data: trim, flush, zone open/close.
    Other,
    ZoneReset,
    ZoneFinish,
}

impl Class {
    fn of(op: Op) -> Class {
        match op {
            Op::Write | Op::Append => Class::Write,
            Op::Read => Class::Read,
            Op::Zone(wafsim_core::blockdev::ZoneAction::Reset) => Class::ZoneReset,
            Op::Zone(wafsim_core::blockdev::ZoneAction::Finish) => Class::ZoneFinish,
            Op::Trim | Op::Flush | Op::Zone(_) => Class::Other,
        }
    }
}

/// A host-side event: a completion, or a job waking up (rate limit or stage start).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Event {
    pub time: u64,
    pub job: u32,
    /// 0 = completion, 1 = wake-up.
    pub kind: u8,
    pub submitted: u64,
    pub class: Class,
    pub len: u32,
}

/// Where a model reports completion times (which may lie in the future): the engine's event
/// queue, or a list a host-layer model reads back (a host layer's model submits its commands to
/// the models of the devices below with its own [`Cmd`]s and collects their completions).
pub struct Completions<'a> {
    sink: Sink<'a>,
}

enum Sink<'a> {
    Engine(&'a mut BinaryHeap<Reverse<Event>>),
    List(&'a mut Vec<(Cmd, u64)>),
}

impl<'a> Completions<'a> {
    pub(crate) fn engine(heap: &'a mut BinaryHeap<Reverse<Event>>) -> Self {
        Completions { sink: Sink::Engine(heap) }
    }

    /// Completions appended to `list` as (command, completion time).
    pub fn list(list: &'a mut Vec<(Cmd, u64)>) -> Self {
        Completions { sink: Sink::List(list) }
    }

    /// `cmd` completes at `done` (no earlier than the current time).
    #[inline]
    pub fn push(&mut self, cmd: &Cmd, done: u64) {
        debug_assert!(done >= cmd.submitted, "a command completes after it was issued");
        match &mut self.sink {
            Sink::Engine(heap) => heap.push(Reverse(Event { time: done, job: cmd.job, kind: 0, submitted: cmd.submitted, class: Class::of(cmd.io.op), len: cmd.io.len })),
            Sink::List(list) => list.push((*cmd, done)),
        }
    }
}

/// A device (or stack of devices) with a clock. The engine calls it in time order: internal
/// events at or before the next host event first ([`TimedDevice::next_event`],
/// [`TimedDevice::step`]), then the host event ([`TimedDevice::advance`], then any
/// [`TimedDevice::submit`] it causes). Errors are the device's refusals (a zone rule, an
/// offset out of range) and end the run.
pub trait TimedDevice {
    /// Time of the next internal event (a die finishing an operation, the head becoming free).
    /// A model that says every completion time at submission has none (the default).
    fn next_event(&mut self) -> Option<u64> {
        None
    }
    /// Run the internal event at `t`, the time [`TimedDevice::next_event`] returned.
    fn step(&mut self, _t: u64, _done: &mut Completions) -> Result<(), DeviceError> {
        Ok(())
    }
    /// The host clock reaches `now` (a host event is handled at `now`).
    fn advance(&mut self, _now: u64) {}
    /// Take `cmd` at `now`; report its completion now or from a later step.
    fn submit(&mut self, cmd: Cmd, now: u64, done: &mut Completions) -> Result<(), DeviceError>;
    /// The device's counters now, for snapshots along a run ([`crate::EngineOptions::snapshots`]);
    /// None for a model that cannot say (the default).
    fn counters(&self) -> Option<&Counters> {
        None
    }
    /// No internal event is due before the next host event and the host waits for this model:
    /// make whatever progress a stalled model can (e.g. take a write into a buffer that holds
    /// only partly filled program units). Returns whether anything happened.
    fn unstick(&mut self, _done: &mut Completions) -> Result<bool, DeviceError> {
        Ok(false)
    }
    /// Commands taken but not yet given a completion time.
    fn holding(&self) -> usize;
    /// Nothing is in flight from `now` until the next host event at `next` (idle-time work).
    fn idle(&mut self, _now: u64, _next: u64) -> Result<(), DeviceError> {
        Ok(())
    }
    /// A hint: `io` will be submitted soon (warm caches).
    fn prefetch(&mut self, _io: &Io) {}
    /// The model's clock: where the next run starts.
    fn clock(&self) -> u64;
    /// Set the model's clock to `t` (the engine does at the end of a run).
    fn set_clock(&mut self, t: u64);
    /// NAND die-busy time by cause so far (zero for a model without dies).
    fn busy(&self) -> Busy {
        Busy::default()
    }
    /// When work accepted so far (buffered programs, GC, cached writes) is on the media.
    fn drained_at(&self) -> u64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::Pid;

    #[test]
    fn a_list_sink_collects_what_a_model_reports() {
        let cmd = Cmd { job: 3, queue: 0, submitted: 10, io: Io { op: Op::Read, ns: 0, offset: 4096, len: 4096, pid: Pid::NONE } };
        let mut list = Vec::new();
        let mut done = Completions::list(&mut list);
        done.push(&cmd, 25);
        assert_eq!(list, vec![(cmd, 25)]);
        let mut heap = BinaryHeap::new();
        Completions::engine(&mut heap).push(&cmd, 25);
        let Reverse(e) = heap.pop().unwrap();
        assert_eq!((e.time, e.job, e.kind, e.submitted, e.class, e.len), (25, 3, 0, 10, Class::Read, 4096));
    }
}
