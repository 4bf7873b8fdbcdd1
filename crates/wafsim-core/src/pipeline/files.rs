//! File operations: what a file layer (a conventional or a zone-aware file system) receives
//! from an application. A file is created in a group (a directory; files of one group share a
//! lifetime, the hint a zone-aware file system places by), written (appended, or rewritten in
//! place) and deleted. Application models and file workload generators produce [`FileOp`]s
//! through a [`FileSource`].

/// A file's identity, unique over a run.
pub type FileId = u64;

/// One file operation. Offsets and lengths are bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// Create an empty file in `group`.
    Create {
        /// The new file.
        file: FileId,
        /// Its group (a directory; a file system may place by it).
        group: u32,
    },
    /// Write `len` bytes at `offset`: an append when `offset` is the file's size, an in-place
    /// update below it.
    Write {
        /// The file written.
        file: FileId,
        /// Byte offset in the file.
        offset: u64,
        /// Bytes written.
        len: u32,
    },
    /// Read `len` bytes at `offset`.
    Read {
        /// The file read.
        file: FileId,
        /// Byte offset in the file.
        offset: u64,
        /// Bytes read.
        len: u32,
    },
    /// The application is done writing the file for now (a file system drops space it had
    /// reserved for the file to grow).
    Close {
        /// The file closed.
        file: FileId,
    },
    /// Delete the file (a file system may discard its blocks).
    Delete {
        /// The file deleted.
        file: FileId,
    },
    /// Cut the file to `size` bytes (at most its size; `ftruncate`): the blocks past it are
    /// freed (and discarded where the file system discards on delete).
    Truncate {
        /// The file cut.
        file: FileId,
        /// Its new size in bytes.
        size: u64,
    },
    /// Make what was written to the file durable (`fsync`/`fdatasync`): a page cache above the
    /// file system writes the file's dirty pages back now. A file system itself has nothing
    /// to do (its model writes at once).
    Sync {
        /// The file synced.
        file: FileId,
    },
    /// The application's clock reached `ns` nanoseconds (an engine with a clock says so at
    /// least once a second of it): a page cache writes back the files dirty for longer than
    /// its expiry. Nothing else uses it.
    Clock {
        /// Nanoseconds on the application's clock.
        ns: u64,
    },
}

/// In words, for error messages: "write of 1048576 bytes at offset 67108864 of file 3".
impl std::fmt::Display for FileOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            FileOp::Create { file, group } => write!(f, "create of file {file} in group {group}"),
            FileOp::Write { file, offset, len } => write!(f, "write of {len} bytes at offset {offset} of file {file}"),
            FileOp::Read { file, offset, len } => write!(f, "read of {len} bytes at offset {offset} of file {file}"),
            FileOp::Close { file } => write!(f, "close of file {file}"),
            FileOp::Delete { file } => write!(f, "delete of file {file}"),
            FileOp::Truncate { file, size } => write!(f, "truncate of file {file} to {size} bytes"),
            FileOp::Sync { file } => write!(f, "sync of file {file}"),
            FileOp::Clock { ns } => write!(f, "clock at {ns} ns"),
        }
    }
}

/// A stream of file operations, a batch at a time (as [`super::IoSource`] for block I/O).
pub trait FileSource {
    /// Append up to `max` operations to `out`; returns how many (`Ok(0)`: exhausted). An error
    /// ends the source as for [`super::IoSource::fill`].
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, super::SourceError>;

    /// What the source's layers have counted so far (a store's), for the results' rows.
    fn figures(&self) -> Option<super::LayerFigures> {
        None
    }
}
