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

pub mod btrfs;
pub mod conventional;
pub mod media;
pub mod mpool;
pub mod page_cache;
pub mod zoned;

pub use btrfs::{BtrfsConfig, BtrfsCounters, BtrfsFs, BtrfsZones, Discard as BtrfsDiscard, Placement as BtrfsPlacement};
pub use conventional::{ConvFs, ConvFsConfig, FsCounters, FsError};
pub use media::{MediaClassBytes, MediaClassFs};
pub use mpool::{MpoolConfig, MpoolCounters, MpoolFs};
pub use page_cache::{PageCache, PageCacheCounters};
pub use zoned::{GcVictim, ZonedFs, ZonedFsConfig, ZonedFsCounters};

use wafsim_core::Io;
use wafsim_core::pipeline::{Engine, Expand, FileOp, FileSource, IoSource, LayerFigures, SourceError};

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
    /// The space the file system holds on each of its devices (one, or two for media classes),
    /// from counters: cheap enough to ask after every batch.
    fn space(&self) -> Vec<Space>;
}

/// Space a file system holds on one device: what a database's size on the drive is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// The media class ("staging" or "capacity") under a [`MediaClassFs`]; "" for a file system
    /// on one device.
    pub class: &'static str,
    /// Bytes held: allocated extents (conventional, preallocation included), live file data
    /// (zone-aware), allocated objects (mpool), used bytes of block groups (Btrfs-like).
    pub used_bytes: u64,
    /// The file system's device bytes.
    pub size_bytes: u64,
}

impl Space {
    /// `used` of `size` bytes on a file system on one device.
    pub fn one(used_bytes: u64, size_bytes: u64) -> Vec<Space> {
        vec![Space { class: "", used_bytes, size_bytes }]
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
    fn space(&self) -> Vec<Space> {
        let size = self.config().device_bytes;
        Space::one(size - self.free_bytes(), size)
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
    fn space(&self) -> Vec<Space> {
        let c = self.config();
        Space::one(self.live_bytes(), c.zones as u64 * c.zone_capacity)
    }
}

/// The file system behind an [`FsSource`]: applies file operations.
pub struct FsEngine<F> {
    fs: F,
}

impl<F: FileSystem> Engine<FileOp> for FsEngine<F> {
    type Out = Io;
    type Error = FsError;

    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        self.fs.apply(op, out)
    }

    fn is_no_space(e: &FsError) -> bool {
        matches!(e, FsError::NoSpace { .. })
    }
}

/// A file workload through a file system, as block I/O. Its figures are the file system's
/// (application bytes over device bytes; live data per zone once the workload has ended),
/// under those of a store that writes the files (see [`LayerFigures::under`]).
pub struct FsSource<S: FileSource + Send, F: FileSystem>(Expand<FileOp, S, FsEngine<F>>);

impl<S: FileSource + Send, F: FileSystem> FsSource<S, F> {
    /// File operations from `files` through `fs`.
    pub fn new(files: S, fs: F) -> Self {
        FsSource(Expand::new(files, FsEngine { fs }, 64))
    }

    /// The file system (for inspection).
    pub fn file_system(&self) -> &F {
        &self.0.engine().fs
    }

    /// Where the file operations come from (a store, for its own report).
    pub fn files(&self) -> &S {
        self.0.source()
    }
}

impl<S: FileSource + Send, F: FileSystem> IoSource for FsSource<S, F> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        self.0.fill(out, max)
    }

    fn figures(&self) -> Option<LayerFigures> {
        let fs = self.file_system();
        let (file, dev) = fs.write_bytes();
        // The per-zone picture is the end's: a phase stopped early (steady state) has none.
        let zone_live_bytes = if self.0.has_ended() { fs.zone_live_bytes() } else { None };
        let metrics = space_metrics(&fs.space());
        let own = LayerFigures { app_write_bytes: file, dev_write_bytes: dev, pending_write_bytes: self.0.pending_write_bytes(), zone_live_bytes, metrics, ..LayerFigures::default() };
        Some(match self.files().figures() {
            Some(above) => own.under(above),
            None => own,
        })
    }
}

/// The report's figures of `space`: each device's share held, and the bytes.
fn space_metrics(space: &[Space]) -> Vec<(String, f64)> {
    let mut m = Vec::new();
    for s in space {
        let class = if s.class.is_empty() { String::new() } else { format!("{} ", s.class) };
        m.push((format!("{class}space held, GiB"), s.used_bytes as f64 / (1u64 << 30) as f64));
        m.push((format!("{class}space held, share of its namespace"), s.used_bytes as f64 / s.size_bytes.max(1) as f64));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// File operations from a list.
    struct Ops(std::vec::IntoIter<FileOp>);

    impl FileSource for Ops {
        fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
            let before = out.len();
            out.extend(self.0.by_ref().take(max));
            Ok(out.len() - before)
        }
    }

    /// A file system out of space ends its source with a no-space error (a phase may stop
    /// there), any other refusal with a plain one.
    #[test]
    fn a_full_file_system_says_it_is_full() {
        let fs = || ConvFs::new(ConvFsConfig { chunk_bytes: 4096, ..ConvFsConfig::new(0, 1 << 20) }).unwrap();
        let writes = (0..300).map(|k| FileOp::Write { file: 1, offset: k * 4096, len: 4096 });
        let ops: Vec<FileOp> = std::iter::once(FileOp::Create { file: 1, group: 0 }).chain(writes).collect();
        let drain = |mut src: FsSource<Ops, ConvFs>| {
            let mut out = Vec::new();
            loop {
                match src.fill(&mut out, 64) {
                    Ok(0) => return None,
                    Ok(_) => {}
                    Err(e) => return Some(e),
                }
            }
        };
        let e = drain(FsSource::new(Ops(ops.into_iter()), fs())).expect("1 MiB holds 256 blocks, not 300");
        assert!(e.is_no_space(), "{e}");
        let bad = vec![FileOp::Write { file: 9, offset: 0, len: 4096 }];
        let e = drain(FsSource::new(Ops(bad.into_iter()), fs())).expect("file 9 was never created");
        assert!(!e.is_no_space(), "{e}");
    }
}
