//! The commit log (Cassandra) or write-ahead log (RocksDB): every write's log record is added
//! to a buffer; whole chunks of the buffer are appended to the current segment file; at a
//! memtable flush the buffer's rest is padded to a whole file-system block and appended (the
//! sync that makes the flushed memtable's log complete). A segment is closed when it reaches
//! its size (Cassandra) or at every flush (RocksDB switches to a new WAL file with each new
//! memtable), and deleted once every memtable with records in it has been flushed.

use std::collections::VecDeque;

use wafsim_core::pipeline::{FileId, FileOp};

/// What the log counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogCounters {
    /// Bytes of log records written by clients.
    pub record_bytes: u64,
    /// Bytes appended to log files (records and padding).
    pub write_bytes: u64,
    /// Of which padding to whole blocks at flushes.
    pub pad_bytes: u64,
    /// Segments created.
    pub segments_created: u64,
    /// Segments deleted.
    pub segments_deleted: u64,
}

/// The log's state.
#[derive(Debug, Clone)]
pub(crate) struct Log {
    /// Bytes per append.
    chunk: u64,
    /// Segment size limit (0: none).
    segment_bytes: u64,
    /// Close the segment at every flush.
    switch_on_flush: bool,
    block: u64,
    group: u32,
    /// The open segment and its size.
    open: Option<(FileId, u64)>,
    /// Bytes not appended yet.
    buffered: u64,
    /// Closed segments, oldest first, with the last memtable that has records in them.
    closed: VecDeque<(FileId, u64, u64)>,
    pub(crate) counters: LogCounters,
}

impl Log {
    pub(crate) fn new(chunk: u64, segment_bytes: u64, switch_on_flush: bool, block: u64, group: u32) -> Log {
        Log { chunk, segment_bytes, switch_on_flush, block, group, open: None, buffered: 0, closed: VecDeque::new(), counters: LogCounters::default() }
    }

    /// Bytes of the live segments.
    pub(crate) fn live_bytes(&self) -> u64 {
        self.open.map_or(0, |o| o.1) + self.closed.iter().map(|c| c.1).sum::<u64>()
    }

    /// Live segments.
    pub(crate) fn segments(&self) -> usize {
        self.open.is_some() as usize + self.closed.len()
    }

    /// Bytes the next append (of up to `len` bytes) may take, for the space check.
    pub(crate) fn pending_append(&self, add: u64) -> u64 {
        (self.buffered + add) / self.chunk * self.chunk
    }

    /// Add a record of `bytes` written into memtable `mem`; append whole chunks.
    pub(crate) fn add(&mut self, bytes: u64, mem: u64, next_file: &mut FileId, out: &mut Vec<FileOp>) {
        self.counters.record_bytes += bytes;
        self.buffered += bytes;
        while self.buffered >= self.chunk {
            self.buffered -= self.chunk;
            self.append(self.chunk, mem, next_file, out);
        }
    }

    /// Append `len` bytes (whole blocks) to the open segment, opening and closing segments.
    fn append(&mut self, mut len: u64, mem: u64, next_file: &mut FileId, out: &mut Vec<FileOp>) {
        while len > 0 {
            let (file, size) = match self.open {
                Some(o) => o,
                None => {
                    let f = *next_file;
                    *next_file += 1;
                    out.push(FileOp::Create { file: f, group: self.group });
                    self.counters.segments_created += 1;
                    self.open = Some((f, 0));
                    (f, 0)
                }
            };
            let room = if self.segment_bytes == 0 { len } else { (self.segment_bytes - size).min(len) };
            // Writes are u32 lengths: split long ones.
            let w = room.min(1 << 30);
            out.push(FileOp::Write { file, offset: size, len: w as u32 });
            self.counters.write_bytes += w;
            len -= w;
            let size = size + w;
            self.open = Some((file, size));
            if self.segment_bytes != 0 && size == self.segment_bytes {
                out.push(FileOp::Close { file });
                self.closed.push_back((file, size, mem));
                self.open = None;
            }
        }
    }

    /// Memtable `mem` is being flushed: append the buffered rest padded to a whole block, and
    /// close the segment if the log switches at flushes.
    pub(crate) fn sync_for_flush(&mut self, mem: u64, next_file: &mut FileId, out: &mut Vec<FileOp>) {
        if self.buffered > 0 {
            let padded = self.buffered.div_ceil(self.block) * self.block;
            self.counters.pad_bytes += padded - self.buffered;
            self.buffered = 0;
            self.append(padded, mem, next_file, out);
        }
        if self.switch_on_flush {
            if let Some((file, size)) = self.open.take() {
                out.push(FileOp::Close { file });
                self.closed.push_back((file, size, mem));
            }
        }
    }

    /// Memtables up to `mem` are flushed: the closed segments they alone fill are no longer
    /// needed; they are returned (file, bytes) for the caller to delete once the flushes are
    /// complete.
    pub(crate) fn release(&mut self, mem: u64) -> Vec<(FileId, u64)> {
        let mut freed = Vec::new();
        while let Some(&(file, size, last)) = self.closed.front() {
            if last > mem {
                break;
            }
            self.closed.pop_front();
            freed.push((file, size));
            self.counters.segments_deleted += 1;
        }
        freed
    }
}
