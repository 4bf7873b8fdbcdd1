//! File systems: the file layer between file-level workloads ([`wafsim_workload::files`]) and a
//! block device. Each turns file operations into the block I/O its device sees, on its own
//! (nothing comes back from the device), so a file workload over a file system is an
//! [`IoSource`] ([`FsSource`]) and runs wherever block workloads run, timed or not.
//!
//! - [`conventional::ConvFs`]: update in place, extent allocation, discard on delete or not;
//!   over any device (conventional, streams, FDP).
//! - [`zoned::ZonedFs`]: log-structured copy-on-write over a zoned namespace, a group's files in
//!   the group's zones, host GC.

pub mod conventional;
pub mod zoned;

pub use conventional::{ConvFs, ConvFsConfig, FsCounters, FsError};
pub use zoned::{GcVictim, ZonedFs, ZonedFsConfig, ZonedFsCounters};

use std::sync::{Arc, Mutex};
use wafsim_core::Io;
use wafsim_workload::files::{FileOp, FileSource};
use wafsim_workload::IoSource;

/// A file system: file operations in, block I/O out.
pub trait FileSystem: Send {
    /// Apply `op`, appending the block I/O it causes to `out` in order. A refused operation
    /// sends nothing.
    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError>;
    /// Bytes the application wrote, and bytes the file system wrote to its device (data and,
    /// for a log-structured one, GC copies).
    fn write_bytes(&self) -> (u64, u64);
    /// Live file data in each zone of the device, in zone order (a zone-aware file system);
    /// `None` for a file system that does not place by zone.
    fn zone_live_bytes(&self) -> Option<Vec<u64>> {
        None
    }
}

impl FileSystem for ConvFs {
    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        ConvFs::apply(self, op, out)
    }
    fn write_bytes(&self) -> (u64, u64) {
        let c = self.counters();
        (c.file_write_bytes, c.dev_write_bytes)
    }
}

impl FileSystem for ZonedFs {
    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        ZonedFs::apply(self, op, out)
    }
    fn write_bytes(&self) -> (u64, u64) {
        let c = self.counters();
        (c.file_write_bytes, c.dev_write_bytes)
    }
    fn zone_live_bytes(&self) -> Option<Vec<u64>> {
        Some(self.zone_live_bytes())
    }
}

/// What a [`FsSource`] reports after (or during) a run, shared with whoever built it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsReport {
    /// Bytes the application wrote.
    pub file_write_bytes: u64,
    /// Bytes the file system wrote to the device.
    pub dev_write_bytes: u64,
    /// The first refused operation (the source stops there).
    pub error: Option<String>,
    /// When the workload ended: live file data per zone (zone-aware file systems).
    pub zone_live_bytes: Option<Vec<u64>>,
    /// Device writes made but not handed out yet (the rest of an operation): the counts above
    /// run ahead of what the device has seen by this much.
    pub pending_write_bytes: u64,
}

/// A file workload through a file system, as block I/O.
pub struct FsSource<S: FileSource + Send, F: FileSystem> {
    files: S,
    fs: F,
    ops: Vec<FileOp>,
    pos: usize,
    /// Block I/O made but not handed out yet (one file operation can make many).
    pending: Vec<Io>,
    taken: usize,
    /// Write bytes in `pending[taken..]`.
    pending_write_bytes: u64,
    report: Arc<Mutex<FsReport>>,
    failed: bool,
}

/// Bytes of the writes among `ios`.
fn write_bytes(ios: &[Io]) -> u64 {
    ios.iter().filter(|i| i.op == wafsim_core::Op::Write).map(|i| i.len as u64).sum()
}

impl<S: FileSource + Send, F: FileSystem> FsSource<S, F> {
    /// The source and a handle to its report.
    pub fn new(files: S, fs: F) -> (Self, Arc<Mutex<FsReport>>) {
        let report = Arc::new(Mutex::new(FsReport::default()));
        (FsSource { files, fs, ops: Vec::new(), pos: 0, pending: Vec::new(), taken: 0, pending_write_bytes: 0, report: report.clone(), failed: false }, report)
    }

    fn publish(&self) {
        let (file, dev) = self.fs.write_bytes();
        let mut r = self.report.lock().expect("report lock");
        r.file_write_bytes = file;
        r.dev_write_bytes = dev;
        r.pending_write_bytes = self.pending_write_bytes;
    }
}

impl<S: FileSource + Send, F: FileSystem> IoSource for FsSource<S, F> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        let before = out.len();
        while out.len() - before < max {
            if self.taken < self.pending.len() {
                let n = (max - (out.len() - before)).min(self.pending.len() - self.taken);
                out.extend_from_slice(&self.pending[self.taken..self.taken + n]);
                self.pending_write_bytes -= write_bytes(&self.pending[self.taken..self.taken + n]);
                self.taken += n;
                continue;
            }
            self.pending.clear();
            self.taken = 0;
            if self.failed {
                break;
            }
            if self.pos == self.ops.len() {
                self.ops.clear();
                self.pos = 0;
                if self.files.fill(&mut self.ops, 64) == 0 {
                    // The workload ended: the per-zone picture, once.
                    self.report.lock().expect("report lock").zone_live_bytes = self.fs.zone_live_bytes();
                    break;
                }
            }
            let op = self.ops[self.pos];
            self.pos += 1;
            // The operation's I/O goes straight to `out`; what does not fit waits in `pending`
            // (same stream as going through `pending` always, without copying every command).
            let r = self.fs.apply(&op, out);
            if out.len() - before > max {
                self.pending.extend_from_slice(&out[before + max..]);
                self.pending_write_bytes += write_bytes(&out[before + max..]);
                out.truncate(before + max);
            }
            if let Err(e) = r {
                self.report.lock().expect("report lock").error = Some(format!("{op:?}: {e}"));
                self.failed = true;
            }
        }
        self.publish();
        out.len() - before
    }
}
