//! Block I/O sources: the [`IoSource`] trait every block workload implements, what a source has
//! emitted ([`SourceStats`]), a fixed list of I/Os ([`Script`]) and sources run one after
//! another ([`Chain`]).

use super::{LayerFigures, SourceError};
use crate::io::{Io, Op, ZoneAction};

/// A stream of host I/Os.
pub trait IoSource: Send {
    /// Append up to `max` I/Os to `out` and return how many were appended; `Ok(0)` means the
    /// source is exhausted (and stays so). An error ends the source: nothing is appended in
    /// the call that returns it, what earlier calls appended stands, and later calls return
    /// `Ok(0)`.
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError>;

    /// What the source's layers have counted so far (a store's, a file system's), for the
    /// results' rows; `None` for a source without layers (a generator, a trace).
    fn figures(&self) -> Option<LayerFigures> {
        None
    }

    /// The run stopped taking I/O from this source (it ran dry, or a time limit or steady
    /// state ended the phase first): finish what it writes on the side (an iolog's last lines)
    /// and return what failed there. Called once per run by whoever drives the source.
    fn finish(&mut self) -> Result<(), SourceError> {
        Ok(())
    }

    /// Whether the source keeps a clock of its own (a store whose clients send requests at a
    /// rate, with background work paced in time): then [`IoSource::fill_timed`] gives each
    /// I/O's time, and sources with clocks are interleaved by time, not by weight.
    fn clocked(&self) -> bool {
        false
    }

    /// Like [`IoSource::fill`], and for each I/O appended to `out` its time (nanoseconds since
    /// the source began) appended to `times`, in non-decreasing order. `None` from a source
    /// without a clock (the default; nothing is appended).
    fn fill_timed(&mut self, out: &mut Vec<Io>, times: &mut Vec<u64>, max: usize) -> Option<Result<usize, SourceError>> {
        let _ = (out, times, max);
        None
    }
}

/// What one source has emitted (a combinator of several sources, such as wafsim-workload's
/// `Interleave`, keeps one per source).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SourceStats {
    /// I/Os that move data or flush (every I/O but zone management).
    pub ios: u64,
    /// Writes and zone appends.
    pub write_ios: u64,
    /// Reads.
    pub read_ios: u64,
    /// Trims.
    pub trim_ios: u64,
    /// Bytes of the writes and zone appends.
    pub write_bytes: u64,
    /// Bytes of the reads.
    pub read_bytes: u64,
    /// Bytes of the trims.
    pub trim_bytes: u64,
    /// Zone resets (`Op::Zone(ZoneAction::Reset)`) the source issued, e.g. fio `zonemode=zbd`
    /// resetting full zones ("N zone resets" in fio's output). Not counted in `ios`.
    pub zone_resets: u64,
    /// Zone finishes (`Op::Zone(ZoneAction::Finish)`) the source issued. Not counted in `ios`.
    pub zone_finishes: u64,
}

impl SourceStats {
    /// Count one emitted I/O.
    #[inline]
    pub fn count(&mut self, io: &Io) {
        if let Op::Zone(action) = io.op {
            match action {
                ZoneAction::Reset => self.zone_resets += 1,
                ZoneAction::Finish => self.zone_finishes += 1,
                _ => {}
            }
            return;
        }
        self.ios += 1;
        match io.op {
            // A zone append writes like a write; a flush moves no data.
            Op::Write | Op::Append => {
                self.write_ios += 1;
                self.write_bytes += io.len as u64;
            }
            Op::Read => {
                self.read_ios += 1;
                self.read_bytes += io.len as u64;
            }
            Op::Trim => {
                self.trim_ios += 1;
                self.trim_bytes += io.len as u64;
            }
            Op::Flush | Op::Zone(_) => {}
        }
    }
}

/// A fixed list of I/Os (or of other requests, e.g. key-value ones), in order (a file system's
/// mkfs commands, a test's script).
pub struct Script<T = Io> {
    ios: Vec<T>,
    next: usize,
}

impl<T: Copy> Script<T> {
    /// The items of `ios`, handed out in order.
    pub fn new(ios: Vec<T>) -> Script<T> {
        Script { ios, next: 0 }
    }

    /// Append up to `max` items to `out`; how many.
    pub(super) fn take(&mut self, out: &mut Vec<T>, max: usize) -> usize {
        let n = max.min(self.ios.len() - self.next);
        out.extend_from_slice(&self.ios[self.next..self.next + n]);
        self.next += n;
        n
    }
}

impl IoSource for Script<Io> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        Ok(self.take(out, max))
    }
}

/// Runs sources one after another (fio `stonewall` phases inside one job file, a file
/// system's mkfs commands before its workload). Its figures are those of the last part that
/// has any (the layered part after a mkfs script).
pub struct Chain {
    parts: Vec<Box<dyn IoSource>>,
    current: usize,
}

impl Chain {
    /// `parts` in order: each runs until it is exhausted, then the next starts.
    pub fn new(parts: Vec<Box<dyn IoSource>>) -> Self {
        Chain { parts, current: 0 }
    }
}

impl IoSource for Chain {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        while self.current < self.parts.len() {
            match self.parts[self.current].fill(out, max) {
                Ok(0) => self.current += 1,
                Ok(n) => return Ok(n),
                Err(e) => {
                    self.current = self.parts.len();
                    return Err(e);
                }
            }
        }
        Ok(0)
    }

    fn figures(&self) -> Option<LayerFigures> {
        self.parts.iter().rev().find_map(|p| p.figures())
    }

    fn finish(&mut self) -> Result<(), SourceError> {
        self.parts.iter_mut().try_for_each(|p| p.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Pid;

    fn ios(ns: u32, n: usize, len: u32) -> Box<dyn IoSource> {
        Box::new(Script::new((0..n).map(|i| Io { op: Op::Write, ns, offset: i as u64 * len as u64, len, pid: Pid::NONE }).collect()))
    }

    #[test]
    fn chain_runs_in_order() {
        let mut c = Chain::new(vec![ios(0, 3, 512), ios(1, 2, 512)]);
        let mut out = Vec::new();
        while c.fill(&mut out, 2).unwrap() > 0 {}
        let order: Vec<u32> = out.iter().map(|io| io.ns).collect();
        assert_eq!(order, vec![0, 0, 0, 1, 1]);
    }
}
