//! The kernel's page cache between an application writing files with buffered I/O and the file
//! system: a write dirties the file's pages in memory and reaches the file system later, when
//! the file is synced, when it has been dirty longer than the writeback expiry, or at the end
//! (unmount). A page written again while still dirty goes down once; the dirty pages of a file
//! deleted (or cut) before writeback never go down.
//!
//! Sources (Linux 6.x):
//! - `fsync`/`fdatasync` write the file's dirty pages back (`file_write_and_wait_range`);
//! - the flusher wakes every `dirty_writeback_centisecs` (5 s) and writes back every inode that
//!   became dirty more than `dirty_expire_centisecs` (30 s) ago, all its dirty pages
//!   (`fs/fs-writeback.c` `wb_writeback` with `for_kupdate`, `move_expired_inodes` on
//!   `inode->dirtied_when`, which a page dirtied again does not move);
//! - deleting or truncating a file drops its dirty pages past the cut
//!   (`truncate_inode_pages_range`; `/proc/PID/io` counts them as cancelled_write_bytes).
//!
//! The end of a store's load writes every dirty page back (as `sync` between a load and a
//! measured run does), so a run measured from there starts on a clean cache.
//!
//! Not modelled: background writeback once dirty pages pass `dirty_background_ratio` (10% of
//! the host's memory, unknown for a published run) and the throttling of writers past
//! `dirty_ratio`; pages written back while being dirtied again (each writeback here takes no
//! time). A truncate writes back the file's dirty pages below the cut first, so the file system
//! model never cuts a file it has not seen written (Linux need not; the engines here truncate
//! just before they sync).

use std::collections::{BTreeMap, BTreeSet};

use wafsim_core::pipeline::{FileId, FileOp, FileSource, LayerFigures, SourceError};

/// A page (the unit the cache tracks dirty): 4 KiB.
pub const PAGE: u64 = 4096;
/// How often the flusher looks for expired inodes (`dirty_writeback_centisecs`, 5 s).
pub const WRITEBACK_PERIOD_NS: u64 = 5_000_000_000;
/// Linux's default writeback expiry (`dirty_expire_centisecs`, 30 s).
pub const DEFAULT_EXPIRE_NS: u64 = 30_000_000_000;

/// Counts of a [`PageCache`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageCacheCounters {
    /// Bytes the application wrote (what reached the cache).
    pub written_bytes: u64,
    /// Bytes of writes that fell on pages still dirty (merged with an earlier write).
    pub merged_bytes: u64,
    /// Bytes written back to the file system.
    pub written_back_bytes: u64,
    /// Bytes of dirty pages dropped unwritten (files deleted or cut).
    pub dropped_bytes: u64,
    /// Syncs taken (each writes its file's dirty pages back).
    pub syncs: u64,
    /// Files written back by the flusher (expired).
    pub expired: u64,
}

/// A file as the cache sees it.
#[derive(Debug, Clone, Default)]
struct CachedFile {
    /// Bytes the application has written up to (its size).
    size: u64,
    /// Dirty pages by index.
    dirty: BTreeSet<u64>,
    /// When it went from clean to dirty (ns on the application's clock).
    dirtied_ns: u64,
}

/// File operations from `S` through a page cache: writes held until written back, syncs
/// consumed, the rest passed on.
pub struct PageCache<S: FileSource> {
    inner: S,
    /// Writeback expiry (`None`: pages wait for a sync or the end).
    expire_ns: Option<u64>,
    files: BTreeMap<FileId, CachedFile>,
    now_ns: u64,
    next_flusher_ns: u64,
    batch: Vec<FileOp>,
    /// Operations made but not handed out yet (`pending[taken..]`).
    pending: Vec<FileOp>,
    taken: usize,
    /// The source above has been seen loading its initial records; it is done (or never did).
    seen_loading: bool,
    loaded: bool,
    ended: bool,
    counters: PageCacheCounters,
}

impl<S: FileSource> PageCache<S> {
    /// `inner`'s operations through a cache whose dirty files expire after `expire_ns`.
    pub fn new(inner: S, expire_ns: Option<u64>) -> Self {
        PageCache { inner, expire_ns, files: BTreeMap::new(), now_ns: 0, next_flusher_ns: WRITEBACK_PERIOD_NS, batch: Vec::new(), pending: Vec::new(), taken: 0, seen_loading: false, loaded: false, ended: false, counters: PageCacheCounters::default() }
    }

    /// Its counts so far.
    pub fn counters(&self) -> &PageCacheCounters {
        &self.counters
    }

    /// Take one operation from above; what goes down is appended to `out`.
    fn apply(&mut self, op: FileOp, out: &mut Vec<FileOp>) {
        match op {
            FileOp::Create { file, .. } => {
                self.files.insert(file, CachedFile::default());
                out.push(op);
            }
            FileOp::Write { file, offset, len } => {
                let now = self.now_ns;
                let f = self.files.entry(file).or_default();
                let end = offset + len as u64;
                f.size = f.size.max(end);
                if f.dirty.is_empty() {
                    f.dirtied_ns = now;
                }
                for page in offset / PAGE..end.div_ceil(PAGE) {
                    let (lo, hi) = (offset.max(page * PAGE), end.min((page + 1) * PAGE));
                    if !f.dirty.insert(page) {
                        self.counters.merged_bytes += hi - lo;
                    }
                }
                self.counters.written_bytes += len as u64;
            }
            FileOp::Sync { file } => {
                self.counters.syncs += 1;
                self.write_back(file, out);
            }
            FileOp::Clock { ns } => {
                self.now_ns = self.now_ns.max(ns);
                self.flusher(out);
                // Passed on (a file system ignores it) so that a fill returns at least once a
                // second of the clock: the layers above see their windows start on time.
                out.push(op);
            }
            FileOp::Delete { file } => {
                if let Some(f) = self.files.remove(&file) {
                    self.counters.dropped_bytes += dirty_bytes_below(&f, f.size);
                }
                out.push(op);
            }
            FileOp::Truncate { file, size } => {
                if let Some(f) = self.files.get_mut(&file) {
                    let cut: Vec<u64> = f.dirty.range(size.div_ceil(PAGE)..).copied().collect();
                    let before = dirty_bytes_below(f, f.size);
                    for p in cut {
                        f.dirty.remove(&p);
                    }
                    f.size = f.size.min(size);
                    self.counters.dropped_bytes += before - dirty_bytes_below(f, f.size);
                }
                self.write_back(file, out);
                out.push(op);
            }
            FileOp::Read { .. } | FileOp::Close { .. } => out.push(op),
        }
    }

    /// The flusher's wake-ups up to now: files dirty since before the expiry, oldest first.
    fn flusher(&mut self, out: &mut Vec<FileOp>) {
        let Some(expire) = self.expire_ns else { return };
        while self.next_flusher_ns <= self.now_ns {
            let at = self.next_flusher_ns;
            let mut due: Vec<(u64, FileId)> = self.files.iter().filter(|(_, f)| !f.dirty.is_empty() && f.dirtied_ns + expire <= at).map(|(&id, f)| (f.dirtied_ns, id)).collect();
            due.sort_unstable();
            for (_, file) in due {
                self.counters.expired += 1;
                self.write_back(file, out);
            }
            self.next_flusher_ns += WRITEBACK_PERIOD_NS;
        }
    }

    /// Write `file`'s dirty pages back: one write per run of adjacent pages, in offset order,
    /// the last cut at the file's size.
    fn write_back(&mut self, file: FileId, out: &mut Vec<FileOp>) {
        let Some(f) = self.files.get_mut(&file) else { return };
        let pages = std::mem::take(&mut f.dirty);
        let mut run: Option<(u64, u64)> = None;
        let emit = |(first, last): (u64, u64), out: &mut Vec<FileOp>, counters: &mut PageCacheCounters| {
            let (lo, hi) = (first * PAGE, ((last + 1) * PAGE).min(f.size));
            if hi > lo {
                out.push(FileOp::Write { file, offset: lo, len: (hi - lo) as u32 });
                counters.written_back_bytes += hi - lo;
            }
        };
        for p in pages {
            run = match run {
                Some((first, last)) if p == last + 1 && (p - first + 1) * PAGE <= u32::MAX as u64 / 2 => Some((first, p)),
                Some(r) => {
                    emit(r, out, &mut self.counters);
                    Some((p, p))
                }
                None => Some((p, p)),
            };
        }
        if let Some(r) = run {
            emit(r, out, &mut self.counters);
        }
    }

    /// Every dirty file written back (the end of the run: unmount syncs the file system).
    fn write_back_all(&mut self, out: &mut Vec<FileOp>) {
        let files: Vec<FileId> = self.files.iter().filter(|(_, f)| !f.dirty.is_empty()).map(|(&id, _)| id).collect();
        for file in files {
            self.write_back(file, out);
        }
    }
}

/// Bytes of `f`'s dirty pages below `size`.
fn dirty_bytes_below(f: &CachedFile, size: u64) -> u64 {
    f.dirty.iter().map(|&p| (size.min((p + 1) * PAGE)).saturating_sub(p * PAGE)).sum()
}

impl<S: FileSource> FileSource for PageCache<S> {
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
        // One batch from above at a time, until something goes down: a layer above that looks
        // at its figures between fills (a window starting at the end of a load) sees them
        // close to where they are, not a checkpoint interval later.
        while self.pending.is_empty() && !self.ended {
            self.batch.clear();
            let n = self.inner.fill(&mut self.batch, max)?;
            let mut down = std::mem::take(&mut self.pending);
            if n == 0 {
                self.ended = true;
                self.write_back_all(&mut down);
            }
            let batch = std::mem::take(&mut self.batch);
            for &op in &batch {
                self.apply(op, &mut down);
            }
            self.batch = batch;
            if !self.loaded {
                if self.inner.figures().is_some_and(|f| f.loading) {
                    self.seen_loading = true;
                } else {
                    // The clients' load is over (or there was none): written back here, so
                    // that a run measured from the end of the load starts there and not at the
                    // next sync (as `sync` between the two does on a real machine).
                    if self.seen_loading {
                        self.write_back_all(&mut down);
                    }
                    self.loaded = true;
                }
            }
            self.pending = down;
            self.taken = 0;
        }
        let n = max.min(self.pending.len() - self.taken);
        out.extend_from_slice(&self.pending[self.taken..self.taken + n]);
        self.taken += n;
        if self.taken == self.pending.len() {
            self.pending.clear();
            self.taken = 0;
        }
        Ok(n)
    }

    /// The figures of the store above, with what it wrote (before the cache) as the store's
    /// bytes: the file system below counts what the cache wrote back.
    fn figures(&self) -> Option<LayerFigures> {
        let c = &self.counters;
        let mut f = self.inner.figures().unwrap_or_default();
        f.store_write_bytes = Some(c.written_bytes);
        let written = c.written_bytes.max(1) as f64;
        f.metrics.push(("page cache: share of writes merged".into(), c.merged_bytes as f64 / written));
        f.metrics.push(("page cache: share of writes dropped unwritten".into(), c.dropped_bytes as f64 / written));
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operations handed out in batches, then none.
    struct Ops(Vec<FileOp>);

    impl FileSource for Ops {
        fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
            let n = self.0.len().min(max);
            out.extend(self.0.drain(..n));
            Ok(n)
        }
    }

    fn through(ops: Vec<FileOp>, expire: Option<u64>) -> (Vec<FileOp>, PageCacheCounters) {
        let mut c = PageCache::new(Ops(ops), expire);
        let mut out = Vec::new();
        while c.fill(&mut out, 3).unwrap() > 0 {}
        (out, c.counters().clone())
    }

    fn w(file: FileId, offset: u64, len: u32) -> FileOp {
        FileOp::Write { file, offset, len }
    }

    /// Three writes to one file, the third on the first's pages, then a sync: the pages go down
    /// once, as two runs; 8 KiB of the 24 KiB written merged.
    #[test]
    fn a_page_written_twice_before_a_sync_goes_down_once() {
        let ops = vec![FileOp::Create { file: 1, group: 0 }, w(1, 0, 8192), w(1, 16384, 4096), w(1, 0, 8192), FileOp::Sync { file: 1 }, w(1, 0, 4096), FileOp::Sync { file: 1 }];
        let (out, c) = through(ops, None);
        assert_eq!(out, vec![FileOp::Create { file: 1, group: 0 }, w(1, 0, 8192), w(1, 16384, 4096), w(1, 0, 4096)]);
        assert_eq!((c.written_bytes, c.merged_bytes, c.written_back_bytes), (24576, 8192, 16384));
    }

    /// A file's tail page written in pieces goes down cut at the file's size, and everything
    /// still dirty goes down at the end.
    #[test]
    fn the_last_page_is_cut_at_the_size_and_the_end_writes_everything() {
        let ops = vec![FileOp::Create { file: 2, group: 0 }, w(2, 0, 1000), w(2, 1000, 5000), FileOp::Create { file: 3, group: 0 }, w(3, 0, 4096)];
        let (out, c) = through(ops, None);
        assert_eq!(&out[2..], &[w(2, 0, 6000), w(3, 0, 4096)]);
        assert_eq!(c.merged_bytes, 3096, "5,000 B from 1,000: 3,096 B of them on the dirty first page");
    }

    /// With a 30 s expiry: a file dirtied at 1 s is written back by the flusher's wake-up at
    /// 35 s (the first after 31 s), one dirtied at 20 s stays until the one at 50 s; a write at
    /// 40 s to the first file dirties it anew from 40 s.
    #[test]
    fn the_flusher_writes_back_files_dirty_longer_than_the_expiry() {
        let s = 1_000_000_000;
        let ops = vec![
            FileOp::Clock { ns: s },
            w(1, 0, 4096),
            FileOp::Clock { ns: 20 * s },
            w(2, 0, 4096),
            FileOp::Clock { ns: 34 * s },
            FileOp::Clock { ns: 35 * s },
            FileOp::Clock { ns: 40 * s },
            w(1, 4096, 4096),
            FileOp::Clock { ns: 49 * s },
            FileOp::Clock { ns: 50 * s },
        ];
        let mut c = PageCache::new(Ops(ops), Some(DEFAULT_EXPIRE_NS));
        let mut out = Vec::new();
        let mut seen = Vec::new();
        while c.fill(&mut out, 1).unwrap() > 0 || !c.ended {
            seen.push((c.now_ns / s, out.len()));
        }
        let writes: Vec<FileOp> = out.iter().copied().filter(|o| matches!(o, FileOp::Write { .. })).collect();
        assert_eq!(writes, vec![w(1, 0, 4096), w(2, 0, 4096), w(1, 4096, 4096)]);
        assert_eq!(c.counters().expired, 2);
        // File 1 went down at 35 s and file 2 at 50 s; file 1's second write waited for the end.
        let nth_write = |n: usize| out.iter().enumerate().filter(|(_, o)| matches!(o, FileOp::Write { .. })).nth(n).map(|(i, _)| i + 1);
        let at = |n: usize| nth_write(n).and_then(|len| seen.iter().find(|&&(_, l)| l >= len).map(|&(t, _)| t));
        assert_eq!((at(0), at(1)), (Some(35), Some(50)));
    }

    /// Deleting a file drops its dirty pages; cutting one drops those past the cut and writes
    /// the rest back before the cut goes down.
    #[test]
    fn deleted_and_cut_files_drop_their_dirty_pages() {
        let ops = vec![w(1, 0, 8192), FileOp::Delete { file: 1 }, w(2, 0, 12288), FileOp::Truncate { file: 2, size: 6000 }];
        let (out, c) = through(ops, None);
        assert_eq!(out, vec![FileOp::Delete { file: 1 }, w(2, 0, 6000), FileOp::Truncate { file: 2, size: 6000 }]);
        assert_eq!(c.dropped_bytes, 8192 + 12288 - 6000);
    }
}
