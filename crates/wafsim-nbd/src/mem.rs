//! [`MemExport`]: a sparse in-memory block device.
//!
//! Storage is allocated in 4 KiB pages on first write, so a 1 GiB export costs nothing until it
//! is written. Never-written bytes read as zeroes; trim and write-zeroes free whole pages and zero
//! the partial ones at the edges, so both leave the range reading as zeroes.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::export::{Export, ExportError};
use crate::proto::BlockSizes;

/// Allocation unit; matches the preferred block size so aligned writes touch whole pages.
pub const PAGE_SIZE: usize = 4096;

/// Pages are spread over this many independently locked maps so connections writing different
/// places rarely wait for each other. A power of two keeps the shard choice a mask.
const SHARDS: usize = 64;

/// Above this many pages, range-freeing scans the allocated pages instead of probing each page
/// of the range, so a trim of a whole huge export costs what is allocated, not its size.
const PROBE_LIMIT: u64 = 4096;

type Page = Box<[u8; PAGE_SIZE]>;

/// A sparse, thread-safe, in-memory export.
pub struct MemExport {
    size: u64,
    sizes: BlockSizes,
    read_only: bool,
    shards: Box<[Mutex<HashMap<u64, Page>>]>,
}

impl MemExport {
    /// An export of `size` bytes, all zero, with [`BlockSizes::DEFAULT`] constraints.
    pub fn new(size: u64) -> Self {
        MemExport {
            size,
            sizes: BlockSizes::DEFAULT,
            read_only: false,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// Replaces the advertised size constraints (e.g. a 4096-byte minimum to mimic 4Kn drives).
    pub fn with_block_sizes(mut self, sizes: BlockSizes) -> Self {
        self.sizes = sizes;
        self
    }

    /// Marks the export read-only.
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Bytes currently backed by allocated pages (a multiple of [`PAGE_SIZE`]).
    pub fn allocated_bytes(&self) -> u64 {
        self.shards.iter().map(|s| lock(s).len() as u64).sum::<u64>() * PAGE_SIZE as u64
    }

    fn shard(&self, page: u64) -> MutexGuard<'_, HashMap<u64, Page>> {
        lock(&self.shards[(page as usize) & (SHARDS - 1)])
    }

    /// Calls `f(page index, offset within page, bytes)` for each page-sized piece of a range.
    fn pieces(offset: u64, len: u64, mut f: impl FnMut(u64, usize, usize)) {
        let mut pos = offset;
        let end = offset + len;
        while pos < end {
            let page = pos / PAGE_SIZE as u64;
            let in_page = (pos % PAGE_SIZE as u64) as usize;
            let n = (PAGE_SIZE - in_page).min((end - pos) as usize);
            f(page, in_page, n);
            pos += n as u64;
        }
    }

    /// Frees whole pages in the range and zeroes the partial pages at its edges.
    fn zero_range(&self, offset: u64, len: u64) {
        let p = PAGE_SIZE as u64;
        let end = offset + len;
        let first_full = offset.div_ceil(p);
        let end_full = end / p;
        if first_full >= end_full {
            Self::pieces(offset, len, |page, at, n| self.zero_in_page(page, at, n));
            return;
        }
        if offset < first_full * p {
            Self::pieces(offset, first_full * p - offset, |page, at, n| self.zero_in_page(page, at, n));
        }
        if end > end_full * p {
            Self::pieces(end_full * p, end - end_full * p, |page, at, n| self.zero_in_page(page, at, n));
        }
        if end_full - first_full <= PROBE_LIMIT {
            for page in first_full..end_full {
                self.shard(page).remove(&page);
            }
        } else {
            for s in self.shards.iter() {
                lock(s).retain(|&page, _| !(first_full..end_full).contains(&page));
            }
        }
    }

    fn zero_in_page(&self, page: u64, at: usize, n: usize) {
        if let Some(buf) = self.shard(page).get_mut(&page) {
            buf[at..at + n].fill(0);
        }
    }
}

/// A panic in another connection's thread must not take this export down with it: page data is
/// plain bytes that stay consistent whatever the panicking thread was doing, so ignore poisoning.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl std::fmt::Debug for MemExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemExport")
            .field("size", &self.size)
            .field("sizes", &self.sizes)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Export for MemExport {
    fn size(&self) -> u64 {
        self.size
    }

    fn block_sizes(&self) -> BlockSizes {
        self.sizes
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    /// No cache sits between connections and the pages, so flush is a no-op for everyone.
    fn multi_conn(&self) -> bool {
        true
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), ExportError> {
        check_range(self.size, offset, buf.len() as u64)?;
        let mut done = 0;
        Self::pieces(offset, buf.len() as u64, |page, at, n| {
            let dst = &mut buf[done..done + n];
            match self.shard(page).get(&page) {
                Some(p) => dst.copy_from_slice(&p[at..at + n]),
                None => dst.fill(0),
            }
            done += n;
        });
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8], _fua: bool) -> Result<(), ExportError> {
        check_range(self.size, offset, data.len() as u64)?;
        let mut done = 0;
        Self::pieces(offset, data.len() as u64, |page, at, n| {
            let mut shard = self.shard(page);
            let p = shard.entry(page).or_insert_with(|| Box::new([0u8; PAGE_SIZE]));
            p[at..at + n].copy_from_slice(&data[done..done + n]);
            done += n;
        });
        Ok(())
    }

    fn trim(&self, offset: u64, len: u64) -> Result<(), ExportError> {
        check_range(self.size, offset, len)?;
        self.zero_range(offset, len);
        Ok(())
    }

    /// Memory has no provisioning to preserve, so `no_hole` changes nothing: the range is freed
    /// either way and reads back as zeroes.
    fn write_zeroes(&self, offset: u64, len: u64, _no_hole: bool) -> Result<(), ExportError> {
        check_range(self.size, offset, len)?;
        self.zero_range(offset, len);
        Ok(())
    }
}

/// The server already checks ranges; this keeps direct callers (the simulator, tests) from
/// indexing past the end.
fn check_range(size: u64, offset: u64, len: u64) -> Result<(), ExportError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(ExportError::Invalid(format!("range {offset}+{len} beyond export size {size}"))),
    }
}
