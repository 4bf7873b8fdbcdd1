//! The memtable: the newest version of each key written since the last flush, one slot per
//! key (the store's key index points at the slot), and the bytes written into it, counting
//! every version (RocksDB's skip list keeps each version until the flush; Cassandra's
//! memtable allocator does not reclaim overwritten cells), which is what fills it.

use super::table::Run;

/// Entries written since the last flush.
#[derive(Debug, Clone, Default)]
pub struct Memtable {
    /// (key, stored size with the tombstone flag, sequence number), one slot per key.
    pub(crate) slots: Vec<(u64, u32, u64)>,
    /// Stored bytes written into it (every version).
    pub(crate) bytes: u64,
}

impl Memtable {
    /// Keys held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Nothing written since the last flush.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes written into it since the last flush.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// A new key: its slot.
    #[inline]
    pub(crate) fn push(&mut self, key: u64, size: u32, seq: u64) -> u32 {
        self.slots.push((key, size, seq));
        self.slots.len() as u32 - 1
    }

    /// A newer version of the key in `slot`.
    #[inline]
    pub(crate) fn overwrite(&mut self, slot: u32, size: u32, seq: u64) {
        let s = &mut self.slots[slot as usize];
        s.1 = size;
        s.2 = seq;
    }

    /// The entries sorted by key (the flush), leaving the memtable empty.
    pub(crate) fn drain_sorted(&mut self) -> Run {
        self.slots.sort_unstable_by_key(|s| s.0);
        let mut run = Run::with_capacity(self.slots.len());
        for &(k, s, q) in &self.slots {
            run.push(k, s, q);
        }
        self.slots.clear();
        self.bytes = 0;
        run
    }
}
