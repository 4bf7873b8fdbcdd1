//! File systems: the file layer between file-level workloads ([`wafsim_core::pipeline::files`]) and a
//! block device. Each turns file operations into the block I/O its device sees, on its own
//! (nothing comes back from the device), so a file workload over a file system is an
//! [`IoSource`] ([`FsSource`]) and runs wherever block workloads run, timed or not.
//!
//! - [`conventional::ConvFs`]: update in place, extent allocation, discard on delete or not;
//!   over any device (conventional, streams, FDP).
//! - [`zoned::ZonedFs`]: log-structured copy-on-write over a zoned namespace, a group's files in
//!   the group's zones, host GC.
//! - [`media::MediaClassFs`]: two file systems on two devices as one, files routed by a media
//!   class bit of their group (a store's hot files on staging, the rest on capacity).

pub mod conventional;
pub mod media;
pub mod zoned;

pub use conventional::{ConvFs, ConvFsConfig, FsCounters, FsError};
pub use media::{MediaClassBytes, MediaClassFs};
pub use zoned::{GcVictim, ZonedFs, ZonedFsConfig, ZonedFsCounters};

use std::sync::{Arc, Mutex};
use wafsim_core::Io;
use wafsim_core::pipeline::{Engine, Expand, FileOp, FileSource, IoSource};

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
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// A store between the application and the file system (an LSM tree): bytes it wrote to
    /// files. `file_write_bytes` is then what the application wrote to the store.
    pub store_write_bytes: Option<u64>,
    /// Figures of the store's own (a cache's hit ratios), by name.
    pub metrics: Vec<(String, f64)>,
    /// The store is still filling (a cache whose log has not wrapped yet): a phase looking for
    /// steady state does not judge rounds before it is done.
    pub warming: bool,
}

/// The file system behind an [`FsSource`]: applies file operations, keeps the report.
pub struct FsEngine<F> {
    fs: F,
    report: Arc<Mutex<FsReport>>,
}

impl<F: FileSystem> Engine<FileOp> for FsEngine<F> {
    type Out = Io;
    type Error = FsError;

    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        self.fs.apply(op, out)
    }

    fn publish(&mut self, pending_write_bytes: u64) {
        let (file, dev) = self.fs.write_bytes();
        let mut r = self.report.lock().expect("report lock");
        r.file_write_bytes = file;
        r.dev_write_bytes = dev;
        r.pending_write_bytes = pending_write_bytes;
    }

    /// The workload ended: the per-zone picture, once.
    fn ended(&mut self, _out: &mut Vec<Io>) {
        self.report.lock().expect("report lock").zone_live_bytes = self.fs.zone_live_bytes();
    }

    fn refused(&mut self, what: String, _out: &mut Vec<Io>) {
        self.report.lock().expect("report lock").error = Some(what);
    }
}

/// A file workload through a file system, as block I/O.
pub struct FsSource<S: FileSource + Send, F: FileSystem>(Expand<FileOp, S, FsEngine<F>>);

impl<S: FileSource + Send, F: FileSystem> FsSource<S, F> {
    /// The source and a handle to its report.
    pub fn new(files: S, fs: F) -> (Self, Arc<Mutex<FsReport>>) {
        let report = Arc::new(Mutex::new(FsReport::default()));
        (FsSource(Expand::new(files, FsEngine { fs, report: report.clone() }, 64)), report)
    }
}

impl<S: FileSource + Send, F: FileSystem> IoSource for FsSource<S, F> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        self.0.fill(out, max)
    }
}
