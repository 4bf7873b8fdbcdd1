//! Key-value requests: what application request generators (YCSB core workloads, a TPC-C-like
//! mix) produce and what application models (a log-structured KV store, an LSM store, a flash
//! cache) consume. Keys are record numbers (YCSB's key numbers after its own ordering and
//! hashing); sizes are what the client sends, the store decides what it writes.

/// One request of a key-value client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvOp {
    /// Insert a record that does not exist yet, `bytes` of field data.
    Insert { key: u64, bytes: u32 },
    /// Overwrite fields of an existing record: `bytes` of field data sent (one field or all,
    /// as the generator's `writeallfields` says; a store that rewrites whole records writes
    /// the whole record).
    Update { key: u64, bytes: u32 },
    /// Read one record.
    Read { key: u64 },
    /// Read `records` records in key order from `key` on.
    Scan { key: u64, records: u32 },
    /// Read a record, then update it with `bytes` of field data.
    ReadModifyWrite { key: u64, bytes: u32 },
    /// Remove a record.
    Delete { key: u64 },
    /// A look-aside cache lookup: read the object; on a miss the client fetches it from its
    /// backing store and inserts it, `bytes` long (a store that is not a cache treats it as a
    /// read).
    Get { key: u64, bytes: u32 },
}

/// A stream of key-value requests, a batch at a time (like [`crate::IoSource`] for block I/O).
pub trait KvSource: Send {
    /// Append up to `max` requests to `out`; returns how many (0: exhausted).
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize;
}

impl<T: KvSource + ?Sized> KvSource for Box<T> {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        (**self).fill(out, max)
    }
}

/// A fixed list of requests, in order (tests, hand-made scenarios).
pub type KvScript = crate::source::Script<KvOp>;

impl KvSource for KvScript {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        self.take(out, max)
    }
}
