//! Key-value requests: what application request generators (YCSB core workloads, a TPC-C-like
//! mix, CacheBench-like cache requests) produce and what application models (a log-structured
//! KV store, an LSM store, a flash cache) consume. Keys are record numbers (YCSB's key numbers
//! after its own ordering and hashing); sizes are what the client sends, the store decides what
//! it writes.

use super::source::Script;

/// One request of a key-value client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvOp {
    /// Insert a record that does not exist yet, `bytes` of field data.
    Insert {
        /// The record's key.
        key: u64,
        /// Bytes of field data.
        bytes: u32,
    },
    /// Overwrite fields of an existing record: `bytes` of field data sent (one field or all,
    /// as the generator's `writeallfields` says; a store that rewrites whole records writes
    /// the whole record).
    Update {
        /// The record's key.
        key: u64,
        /// Bytes of field data sent.
        bytes: u32,
    },
    /// Read one record.
    Read {
        /// The record's key.
        key: u64,
    },
    /// Read `records` records in key order from `key` on.
    Scan {
        /// The first key.
        key: u64,
        /// Records read.
        records: u32,
    },
    /// Read a record, then update it with `bytes` of field data.
    ReadModifyWrite {
        /// The record's key.
        key: u64,
        /// Bytes of field data the update sends.
        bytes: u32,
    },
    /// Remove a record.
    Delete {
        /// The record's key.
        key: u64,
    },
    /// A look-aside cache lookup: read the object; on a miss the client fetches it from its
    /// backing store and inserts it, `bytes` long (a store that is not a cache treats it as a
    /// read).
    Get {
        /// The object's key.
        key: u64,
        /// The object's size (inserted on a miss).
        bytes: u32,
    },
}

/// In words, for error messages: "insert of key 17 (100 bytes)".
impl std::fmt::Display for KvOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            KvOp::Insert { key, bytes } => write!(f, "insert of key {key} ({bytes} bytes)"),
            KvOp::Update { key, bytes } => write!(f, "update of key {key} ({bytes} bytes)"),
            KvOp::Read { key } => write!(f, "read of key {key}"),
            KvOp::Scan { key, records } => write!(f, "scan of {records} records from key {key}"),
            KvOp::ReadModifyWrite { key, bytes } => write!(f, "read-modify-write of key {key} ({bytes} bytes)"),
            KvOp::Delete { key } => write!(f, "delete of key {key}"),
            KvOp::Get { key, bytes } => write!(f, "get of key {key} ({bytes} bytes on a miss)"),
        }
    }
}

/// A stream of key-value requests, a batch at a time (like [`super::IoSource`] for block I/O).
/// Request generators cannot fail, so `fill` returns a count, not a `Result`.
pub trait KvSource: Send {
    /// Append up to `max` requests to `out`; returns how many (0: exhausted).
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize;
    /// Whether the requests handed out so far are all of the initial population (a YCSB load,
    /// TPC-C's tables): true until the last load request is out and the run begins. A phase
    /// may measure from that moment (`measure_from = "run"`).
    fn loading(&self) -> bool {
        false
    }
    /// Requests of the load not handed out yet, where the source knows (a YCSB load: its
    /// records to insert); None otherwise. A store that pauses between its load and its run
    /// (db_bench's `waitforcompaction` between two db_bench runs) reads it before the first
    /// fill to know which request ends the load.
    fn load_left(&self) -> Option<u64> {
        None
    }
}

impl<T: KvSource + ?Sized> KvSource for Box<T> {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        (**self).fill(out, max)
    }
    fn loading(&self) -> bool {
        (**self).loading()
    }
    fn load_left(&self) -> Option<u64> {
        (**self).load_left()
    }
}

/// A fixed list of requests, in order (tests, hand-made scenarios).
pub type KvScript = Script<KvOp>;

impl KvSource for KvScript {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        self.take(out, max)
    }
}
