//! A log-structured key-value store on a raw namespace, modelled on Aerospike's SSD storage
//! engine (`storage-engine device`, Aerospike Database 7.0 and earlier, where
//! `write-block-size` is configurable).
//!
//! Records are appended to the current write block (Aerospike's streaming write buffer); a
//! full block is written to the device as one write of the whole block; an in-memory index
//! maps each key to its newest copy; an update or delete leaves the old copy dead in its
//! block; a block whose live bytes fall below the low-water mark (`defrag-lwm-pct`, default
//! 50%) joins a FIFO defrag queue; defrag reads the block, re-appends its live records to a
//! separate defrag write block and frees the block for reuse.
//!
//! Sources (Aerospike documentation, "Defragmentation" and "Resilience" pages, and the
//! server source `as/src/storage/drv_ssd.c`, `flat.h`, `drv_common.h`, `base/namespace.c` of
//! aerospike-server before commit ed55d44b, which removed `write-block-size` in 7.1):
//! - `defrag-lwm-pct` default 50; a block is eligible when `inuse_sz < write_block_size *
//!   lwm_pct / 100` (strictly below; `ns->defrag_lwm_size`, `ssd_block_free`).
//! - `write-block-size` default 1 MiB (powers of two, 128 KiB .. 8 MiB); a full block is
//!   written with one `pwrite` of the whole block (`ssd_flush_swb`); a record that does not
//!   fit in the rest of the block goes to a new block, the rest stays unused.
//! - Device records: a 35-byte `as_flat_record` header, a 4-byte end mark, per-bin overhead,
//!   the whole rounded up to 16 bytes (`RBLOCK_SIZE`). (The "64 bytes per record" of the
//!   documentation is the primary-index entry, kept in memory, not on the device.)
//! - Defrag moves live records into its own write buffer (`defrag_swb`), not the client's;
//!   defrag reads the whole block with one `pread`; a block whose last record dies while it
//!   is in use is freed at once without defrag (`n_wblock_direct_frees`).
//! - Client writes may not take one of the last 8 free blocks (`DRV_DEFRAG_RESERVE`); defrag
//!   may.
//! - Freed blocks go to a FIFO free queue, used before never-written ("pristine") blocks.
//! - `post-write-queue` default 256 blocks (per device): client blocks stay cached after
//!   their write and are neither defragged nor freed until they leave the queue; reads of
//!   records in a cached or unwritten block are served from memory.
//! - Reads read the record's range rounded out to the device's minimum I/O size
//!   (`BYTES_DOWN_TO_IO_MIN`, 512 or 4096 bytes).
//! - Aerospike does not trim freed blocks; trimming here is an option (default off).
//!
//! Modelling choices (untimed): Aerospike's defrag thread pops one block per `defrag-sleep`
//! (default 1000 us); here the whole defrag queue is drained each time a client write block
//! needs a new free block, before it takes one. `flush-max-ms` (default 1000: partial flushes
//! of an idle buffer) has no meaning untimed: blocks are written when full, or by
//! [`LsKv::flush`]. A block vacated by defrag is freed at once (Aerospike waits until the
//! defrag buffers holding its records are written). When no free block is left for a client
//! block after draining the queue, Aerospike stops writes (`stop-writes-avail-pct`); this
//! model instead defrags the used block with the fewest live bytes (greedy, counted as
//! `forced_defrags`) and refuses the write only when no block has dead space.

use std::collections::VecDeque;

use wafsim_core::{Io, Op, Pid};
use wafsim_core::pipeline::{Engine, Expand, IoSource, KvOp, KvSource, LayerFigures, SourceError};

/// Configuration of a [`LsKv`]. [`LsKvConfig::default`] gives Aerospike's documented
/// defaults on a 1 GiB namespace 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsKvConfig {
    /// Namespace the store's I/O is addressed to.
    pub ns: u32,
    /// Write block size (Aerospike `write-block-size`, default 1 MiB; power of two).
    pub write_block_bytes: u32,
    /// Bytes of the namespace the store uses (Aerospike `device` size or `filesize`); whole
    /// write blocks from offset 0 (Aerospike's 8 MiB device header is not modelled).
    pub device_bytes: u64,
    /// Defrag low-water mark in percent of a block (Aerospike `defrag-lwm-pct`, default 50).
    pub defrag_lwm_pct: u32,
    /// Fixed bytes of a record on the device besides the client's field data. Default 47:
    /// `as_flat_record` (35) + end mark (4) + bin count (1) + one blob bin with a
    /// one-character name (name 2, blob type and size 5); no set name, stored key or TTL.
    pub record_header_bytes: u32,
    /// Records are rounded up to this many bytes (Aerospike `RBLOCK_SIZE`, 16).
    pub record_align: u32,
    /// Client blocks kept after their write before they may be freed or defragged
    /// (Aerospike `post-write-queue`, default 256 blocks per device; 0 disables).
    pub post_write_queue_blocks: u32,
    /// Free blocks only defrag may take (Aerospike `DRV_DEFRAG_RESERVE`, 8).
    pub defrag_reserve_blocks: u32,
    /// Trim a block when it is freed (Aerospike does not; default off).
    pub trim_freed_blocks: bool,
    /// Emit Read I/O for client reads of records on the device (default on).
    pub read_ios: bool,
    /// Client reads are rounded out to this many bytes (the device's minimum I/O size
    /// Aerospike finds, 512 or 4096; default 4096).
    pub read_align: u32,
}

impl Default for LsKvConfig {
    fn default() -> Self {
        LsKvConfig {
            ns: 0,
            write_block_bytes: 1 << 20,
            device_bytes: 1 << 30,
            defrag_lwm_pct: 50,
            record_header_bytes: 47,
            record_align: 16,
            post_write_queue_blocks: 256,
            defrag_reserve_blocks: 8,
            trim_freed_blocks: false,
            read_ios: true,
            read_align: 4096,
        }
    }
}

/// Why a configuration or an operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LsKvError {
    /// The configuration is unusable.
    #[error("bad configuration: {0}")]
    Config(String),
    /// The record (header and alignment included) is larger than a write block.
    #[error("record {key} of {bytes} bytes does not fit in a write block")]
    RecordTooLarge {
        /// The record's key.
        key: u64,
        /// Its field bytes.
        bytes: u32,
    },
    /// No free block and no block with dead space: the store is full.
    #[error("store full: no free write block and nothing to defragment")]
    Full,
    /// Live data fill the store so far that a new write block costs more than
    /// [`MAX_FORCED_DEFRAGS`] forced defragmentations of almost-full blocks: a real store stops
    /// writes here (Aerospike's stop-writes), and going on would only move the same records
    /// again and again.
    #[error(
        "store full (stop-writes): {} of live records in {} of write blocks; a new write block needed more than {MAX_FORCED_DEFRAGS} forced defragmentations of almost-full blocks (a real store stops accepting writes here): write less, or give the store a larger namespace",
        wafsim_core::units::human(*live_bytes),
        wafsim_core::units::human(*capacity_bytes)
    )]
    StopWrites {
        /// Bytes of live records (headers and alignment included).
        live_bytes: u64,
        /// Bytes of all write blocks.
        capacity_bytes: u64,
    },
}

/// Most forced defragmentations one new client write block may take before the store counts
/// as full ([`LsKvError::StopWrites`]).
pub const MAX_FORCED_DEFRAGS: u32 = 64;

/// What a [`LsKv`] has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LsKvCounters {
    /// Requests applied.
    pub ops: u64,
    /// Client writes (inserts, updates, the write of read-modify-writes).
    pub writes: u64,
    /// Client reads of records (a scan counts each record).
    pub reads: u64,
    /// Reads of keys that do not exist (answered from the index, no I/O).
    pub missing_reads: u64,
    /// Reads served from a write buffer or the post-write queue (no I/O).
    pub cached_reads: u64,
    /// Deletes of existing records.
    pub deletes: u64,
    /// Field bytes the client sent in writes.
    pub client_sent_bytes: u64,
    /// Field bytes of the records written for clients (an update rewrites the whole record).
    pub record_write_bytes: u64,
    /// Device bytes of those records (header and alignment included).
    pub client_stored_bytes: u64,
    /// Device bytes of records re-appended by defrag.
    pub defrag_write_bytes: u64,
    /// Records re-appended by defrag.
    pub defrag_records: u64,
    /// Bytes written to the device (whole blocks).
    pub device_write_bytes: u64,
    /// Client write blocks written.
    pub client_blocks_written: u64,
    /// Defrag write blocks written.
    pub defrag_blocks_written: u64,
    /// Bytes read from the device (client reads and defrag reads).
    pub device_read_bytes: u64,
    /// Of which defrag reads.
    pub defrag_read_bytes: u64,
    /// Bytes trimmed.
    pub trim_bytes: u64,
    /// Blocks taken off the defrag queue and emptied (including skips).
    pub blocks_defragged: u64,
    /// Queued blocks that were empty when defrag reached them (no read).
    pub defrag_skips: u64,
    /// Blocks freed because their last record died while in use.
    pub direct_frees: u64,
    /// Blocks defragged outside the queue because no free block was left (greedy fallback).
    pub forced_defrags: u64,
}

impl LsKvCounters {
    /// Application WAF: device bytes written per field byte of records written by clients.
    pub fn app_waf(&self) -> f64 {
        self.device_write_bytes as f64 / self.record_write_bytes.max(1) as f64
    }

    /// Defrag amplification: (client + defrag stored bytes) / client stored bytes.
    pub fn defrag_amplification(&self) -> f64 {
        (self.client_stored_bytes + self.defrag_write_bytes) as f64 / self.client_stored_bytes.max(1) as f64
    }
}

/// Where the newest copy of a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLoc {
    /// Write block.
    pub block: u32,
    /// Byte offset in the block.
    pub offset: u32,
    /// Device bytes (header and alignment included).
    pub stored: u32,
    /// Field bytes.
    pub data: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    /// A current write block (client or defrag), not written yet.
    Open,
    /// Written, in the post-write queue.
    PostWrite,
    Used,
    /// In the defrag queue (or being defragged).
    Queued,
}


type Index = crate::keymap::KeyMap<RecordLoc>;

#[derive(Debug, Clone, Copy)]
struct Cursor {
    block: u32,
    pos: u32,
}

/// The store: pure logic, requests in, block I/O out.
pub struct LsKv {
    cfg: LsKvConfig,
    n_blocks: u32,
    lwm_bytes: u32,
    index: Index,
    live: Vec<u32>,
    state: Vec<State>,
    /// Records appended to each block since it was last freed: (key, offset).
    records: Vec<Vec<(u64, u32)>>,
    free_q: VecDeque<u32>,
    /// Blocks `pristine..n_blocks` were never written.
    pristine: u32,
    defrag_q: VecDeque<u32>,
    post_write_q: VecDeque<u32>,
    client: Option<Cursor>,
    defrag: Option<Cursor>,
    live_bytes: u64,
    counters: LsKvCounters,
}

impl LsKv {
    /// An empty store (every block pristine).
    pub fn new(cfg: LsKvConfig) -> Result<LsKv, LsKvError> {
        let bad = |s: &str| Err(LsKvError::Config(s.to_string()));
        if cfg.write_block_bytes == 0 || !cfg.write_block_bytes.is_power_of_two() {
            return bad("write_block_bytes must be a power of two");
        }
        if cfg.record_align == 0 || !cfg.record_align.is_power_of_two() || cfg.record_align > cfg.write_block_bytes {
            return bad("record_align must be a power of two no larger than a write block");
        }
        if cfg.read_align == 0 || !cfg.read_align.is_power_of_two() {
            return bad("read_align must be a power of two");
        }
        if cfg.defrag_lwm_pct > 100 {
            return bad("defrag_lwm_pct must be at most 100");
        }
        let n = cfg.device_bytes / cfg.write_block_bytes as u64;
        if n > u32::MAX as u64 {
            return bad("too many write blocks");
        }
        let n_blocks = n as u32;
        // Room for the queue, the reserve, the two current blocks and something to defrag.
        let need = cfg.post_write_queue_blocks as u64 + cfg.defrag_reserve_blocks as u64 + 4;
        if (n_blocks as u64) < need {
            return Err(LsKvError::Config(format!(
                "{n_blocks} write blocks; at least post_write_queue_blocks + defrag_reserve_blocks + 4 = {need} needed"
            )));
        }
        let lwm_bytes = ((cfg.write_block_bytes as u64 * cfg.defrag_lwm_pct as u64) / 100) as u32;
        Ok(LsKv {
            n_blocks,
            lwm_bytes,
            index: Index::default(),
            live: vec![0; n_blocks as usize],
            state: vec![State::Free; n_blocks as usize],
            records: vec![Vec::new(); n_blocks as usize],
            free_q: VecDeque::new(),
            pristine: 0,
            defrag_q: VecDeque::new(),
            post_write_q: VecDeque::new(),
            client: None,
            defrag: None,
            live_bytes: 0,
            counters: LsKvCounters::default(),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LsKvConfig {
        &self.cfg
    }

    /// Number of write blocks.
    pub fn blocks(&self) -> u32 {
        self.n_blocks
    }

    /// Live-byte threshold: a block with fewer live bytes is defragged.
    pub fn lwm_bytes(&self) -> u32 {
        self.lwm_bytes
    }

    /// Device bytes of a record with `data` field bytes (header, then rounded up).
    pub fn stored_size(&self, data: u32) -> u32 {
        let a = self.cfg.record_align as u64;
        ((data as u64 + self.cfg.record_header_bytes as u64).div_ceil(a) * a).min(u32::MAX as u64) as u32
    }

    /// Records of `data` field bytes that fit in one write block.
    pub fn records_per_block(&self, data: u32) -> u32 {
        self.cfg.write_block_bytes / self.stored_size(data)
    }

    /// Counters so far.
    pub fn counters(&self) -> &LsKvCounters {
        &self.counters
    }

    /// The newest copy of `key`, if it exists.
    pub fn lookup(&self, key: u64) -> Option<RecordLoc> {
        self.index.get(&key).copied()
    }

    /// Records in the store.
    pub fn live_records(&self) -> u64 {
        self.index.len() as u64
    }

    /// Device bytes of the records in the store.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Live bytes of block `b`.
    pub fn block_live_bytes(&self, b: u32) -> u32 {
        self.live[b as usize]
    }

    /// Blocks waiting in the defrag queue, in queue order.
    pub fn defrag_queue(&self) -> Vec<u32> {
        self.defrag_q.iter().copied().collect()
    }

    /// Free blocks (freed and pristine).
    pub fn free_blocks(&self) -> u32 {
        self.free_q.len() as u32 + (self.n_blocks - self.pristine)
    }

    /// Whether block `b` is free.
    pub fn is_free(&self, b: u32) -> bool {
        self.state[b as usize] == State::Free
    }

    /// The current client write block and its fill position, if any.
    pub fn client_block(&self) -> Option<(u32, u32)> {
        self.client.map(|c| (c.block, c.pos))
    }

    /// The current defrag write block and its fill position, if any.
    pub fn defrag_block(&self) -> Option<(u32, u32)> {
        self.defrag.map(|c| (c.block, c.pos))
    }

    /// Apply one request, appending the block I/O it causes to `out` in order. A refused
    /// request may have sent part of its I/O (e.g. defrag before the refusal).
    pub fn apply(&mut self, op: &KvOp, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        self.counters.ops += 1;
        match *op {
            KvOp::Insert { key, bytes } => self.client_write(key, bytes, bytes, out),
            KvOp::Update { key, bytes } => {
                let data = self.index.get(&key).map_or(bytes, |l| l.data.max(bytes));
                self.client_write(key, bytes, data, out)
            }
            KvOp::Read { key } | KvOp::Get { key, .. } => {
                self.read(key, out);
                Ok(())
            }
            KvOp::Scan { key, records } => {
                for k in key..key.saturating_add(records as u64) {
                    self.read(k, out);
                }
                Ok(())
            }
            KvOp::ReadModifyWrite { key, bytes } => {
                self.read(key, out);
                let data = self.index.get(&key).map_or(bytes, |l| l.data.max(bytes));
                self.client_write(key, bytes, data, out)
            }
            KvOp::Delete { key } => {
                if let Some(loc) = self.index.remove(&key) {
                    self.counters.deletes += 1;
                    self.kill(loc, out);
                }
                Ok(())
            }
        }
    }

    /// Write the current client and defrag blocks now, partly filled (an explicit flush,
    /// like `flush-max-ms` on an idle buffer or shutdown). They are released like full ones.
    pub fn flush(&mut self, out: &mut Vec<Io>) {
        if let Some(c) = self.client.take() {
            self.write_block(c.block, true, out);
        }
        if let Some(c) = self.defrag.take() {
            self.write_block(c.block, false, out);
        }
    }

    fn read(&mut self, key: u64, out: &mut Vec<Io>) {
        let Some(loc) = self.index.get(&key).copied() else {
            self.counters.missing_reads += 1;
            return;
        };
        self.counters.reads += 1;
        if matches!(self.state[loc.block as usize], State::Open | State::PostWrite) {
            self.counters.cached_reads += 1;
            return;
        }
        if !self.cfg.read_ios {
            return;
        }
        let a = self.cfg.read_align as u64;
        let start = loc.block as u64 * self.cfg.write_block_bytes as u64 + loc.offset as u64;
        let lo = start / a * a;
        let hi = (start + loc.stored as u64).div_ceil(a) * a;
        self.counters.device_read_bytes += hi - lo;
        out.push(Io { op: Op::Read, ns: self.cfg.ns, offset: lo, len: (hi - lo) as u32, pid: Pid::NONE });
    }

    fn client_write(&mut self, key: u64, sent: u32, data: u32, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        let stored = self.stored_size(data);
        if stored > self.cfg.write_block_bytes || data as u64 + self.cfg.record_header_bytes as u64 > u32::MAX as u64 {
            return Err(LsKvError::RecordTooLarge { key, bytes: data });
        }
        let cur = match self.client {
            Some(c) if c.pos + stored <= self.cfg.write_block_bytes => c,
            other => {
                if let Some(c) = other {
                    self.client = None;
                    self.write_block(c.block, true, out);
                }
                let b = self.take_client_block(out)?;
                Cursor { block: b, pos: 0 }
            }
        };
        self.counters.writes += 1;
        self.counters.client_sent_bytes += sent as u64;
        self.counters.record_write_bytes += data as u64;
        self.counters.client_stored_bytes += stored as u64;
        self.client = Some(Cursor { block: cur.block, pos: cur.pos + stored });
        self.place(key, cur, stored, data, out);
        Ok(())
    }

    /// Append a record at `cur` and point the index at it; the old copy dies.
    #[inline]
    fn place(&mut self, key: u64, cur: Cursor, stored: u32, data: u32, out: &mut Vec<Io>) {
        let b = cur.block as usize;
        self.live[b] += stored;
        self.live_bytes += stored as u64;
        self.records[b].push((key, cur.pos));
        let loc = RecordLoc { block: cur.block, offset: cur.pos, stored, data };
        if let Some(old) = self.index.insert(key, loc) {
            self.kill(old, out);
        }
    }

    /// A copy died: its block loses its bytes (Aerospike `ssd_block_free`).
    #[inline]
    fn kill(&mut self, loc: RecordLoc, out: &mut Vec<Io>) {
        let b = loc.block as usize;
        self.live[b] -= loc.stored;
        self.live_bytes -= loc.stored as u64;
        if self.state[b] == State::Used {
            if self.live[b] == 0 {
                self.counters.direct_frees += 1;
                self.free_block(loc.block, out);
            } else if self.live[b] < self.lwm_bytes {
                self.state[b] = State::Queued;
                self.defrag_q.push_back(loc.block);
            }
        }
    }

    /// A written block leaves the write path (Aerospike `swb_dereference_and_release`).
    fn release(&mut self, b: u32, out: &mut Vec<Io>) {
        let live = self.live[b as usize];
        if live == 0 {
            self.counters.direct_frees += 1;
            self.free_block(b, out);
        } else if live < self.lwm_bytes {
            self.state[b as usize] = State::Queued;
            self.defrag_q.push_back(b);
        } else {
            self.state[b as usize] = State::Used;
        }
    }

    fn write_block(&mut self, b: u32, client: bool, out: &mut Vec<Io>) {
        let wbs = self.cfg.write_block_bytes;
        out.push(Io { op: Op::Write, ns: self.cfg.ns, offset: b as u64 * wbs as u64, len: wbs, pid: Pid::NONE });
        self.counters.device_write_bytes += wbs as u64;
        if client {
            self.counters.client_blocks_written += 1;
        } else {
            self.counters.defrag_blocks_written += 1;
        }
        if client && self.cfg.post_write_queue_blocks > 0 {
            self.state[b as usize] = State::PostWrite;
            self.post_write_q.push_back(b);
            while self.post_write_q.len() > self.cfg.post_write_queue_blocks as usize {
                let old = self.post_write_q.pop_front().expect("non-empty");
                self.release(old, out);
            }
        } else {
            self.release(b, out);
        }
    }

    fn free_block(&mut self, b: u32, out: &mut Vec<Io>) {
        debug_assert_eq!(self.live[b as usize], 0);
        self.state[b as usize] = State::Free;
        self.records[b as usize].clear();
        self.free_q.push_back(b);
        if self.cfg.trim_freed_blocks {
            let wbs = self.cfg.write_block_bytes;
            out.push(Io { op: Op::Trim, ns: self.cfg.ns, offset: b as u64 * wbs as u64, len: wbs, pid: Pid::NONE });
            self.counters.trim_bytes += wbs as u64;
        }
    }

    fn pop_free(&mut self) -> Option<u32> {
        let b = match self.free_q.pop_front() {
            Some(b) => b,
            None if self.pristine < self.n_blocks => {
                self.pristine += 1;
                self.pristine - 1
            }
            None => return None,
        };
        self.state[b as usize] = State::Open;
        Some(b)
    }

    /// A new client block: drain the defrag queue, then take a free block outside the
    /// reserve; with none, defrag the least-live used block and retry.
    fn take_client_block(&mut self, out: &mut Vec<Io>) -> Result<u32, LsKvError> {
        let mut forced = 0;
        loop {
            while let Some(b) = self.defrag_q.pop_front() {
                self.defrag_block_now(b, out)?;
            }
            if self.free_blocks() > self.cfg.defrag_reserve_blocks {
                return Ok(self.pop_free().expect("free block"));
            }
            // Greedy fallback (Aerospike would stop writes here).
            let victim = (0..self.n_blocks)
                .filter(|&b| self.state[b as usize] == State::Used && self.live[b as usize] < self.cfg.write_block_bytes)
                .min_by_key(|&b| self.live[b as usize]);
            let Some(v) = victim else {
                return Err(LsKvError::Full);
            };
            let wbs = self.cfg.write_block_bytes as u64;
            // Only worth it if the defrag block can take the live data without a new block
            // the move would not pay back; otherwise the store is full.
            let room = self.defrag.map_or(0, |c| wbs - c.pos as u64) + self.free_blocks() as u64 * wbs;
            if (self.live[v as usize] as u64) >= room {
                return Err(LsKvError::Full);
            }
            forced += 1;
            if forced > MAX_FORCED_DEFRAGS {
                return Err(LsKvError::StopWrites { live_bytes: self.live_bytes, capacity_bytes: self.n_blocks as u64 * wbs });
            }
            self.counters.forced_defrags += 1;
            self.state[v as usize] = State::Queued;
            self.defrag_block_now(v, out)?;
        }
    }

    /// Defrag block `b`: read it, re-append its live records to the defrag block, free it.
    fn defrag_block_now(&mut self, b: u32, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        self.counters.blocks_defragged += 1;
        if self.live[b as usize] == 0 {
            self.counters.defrag_skips += 1;
        } else {
            let wbs = self.cfg.write_block_bytes;
            out.push(Io { op: Op::Read, ns: self.cfg.ns, offset: b as u64 * wbs as u64, len: wbs, pid: Pid::NONE });
            self.counters.device_read_bytes += wbs as u64;
            self.counters.defrag_read_bytes += wbs as u64;
            let recs = std::mem::take(&mut self.records[b as usize]);
            for &(key, off) in &recs {
                let Some(loc) = self.index.get(&key).copied() else { continue };
                if loc.block != b || loc.offset != off {
                    continue;
                }
                let cur = match self.defrag {
                    Some(c) if c.pos + loc.stored <= wbs => c,
                    other => {
                        if let Some(c) = other {
                            self.defrag = None;
                            self.write_block(c.block, false, out);
                        }
                        let nb = self.pop_free().ok_or(LsKvError::Full)?;
                        Cursor { block: nb, pos: 0 }
                    }
                };
                self.defrag = Some(Cursor { block: cur.block, pos: cur.pos + loc.stored });
                self.counters.defrag_records += 1;
                self.counters.defrag_write_bytes += loc.stored as u64;
                self.place(key, cur, loc.stored, loc.data, out);
            }
            let mut recs = recs;
            recs.clear();
            self.records[b as usize] = recs;
        }
        debug_assert_eq!(self.live[b as usize], 0, "defrag left live bytes in block {b}");
        self.free_block(b, out);
        Ok(())
    }

    /// Check the bookkeeping (tests): live bytes per block equal the index's records there,
    /// states and queues agree.
    pub fn check_invariants(&self) {
        let mut live = vec![0u64; self.n_blocks as usize];
        for (&k, loc) in &self.index {
            live[loc.block as usize] += loc.stored as u64;
            assert_ne!(self.state[loc.block as usize], State::Free, "key {k} in free block {}", loc.block);
            assert!(self.records[loc.block as usize].contains(&(k, loc.offset)), "key {k} not listed in its block");
        }
        for (b, &lv) in live.iter().enumerate() {
            assert_eq!(lv, self.live[b] as u64, "live bytes of block {b}");
            match self.state[b] {
                State::Used => assert!(self.live[b] >= self.lwm_bytes && self.live[b] > 0, "used block {b} below the mark"),
                State::Queued => assert!(self.defrag_q.contains(&(b as u32))),
                State::Free => assert!(self.free_q.contains(&(b as u32)) || b as u32 >= self.pristine),
                _ => {}
            }
        }
        assert_eq!(live.iter().sum::<u64>(), self.live_bytes);
    }
}

/// What a [`LsKvSource`] reports when asked ([`LsKvSource::report`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LsKvReport {
    /// The store's counters.
    pub counters: LsKvCounters,
    /// Records in the store.
    pub live_records: u64,
    /// Device bytes of those records.
    pub live_bytes: u64,
    /// Free write blocks.
    pub free_blocks: u32,
    /// Blocks in the defrag queue.
    pub defrag_queue: u32,
    /// Device writes made but not handed out yet: the counters run ahead of what the device
    /// has seen by this much.
    pub pending_write_bytes: u64,
}

impl LsKvReport {
    /// Application WAF so far (see [`LsKvCounters::app_waf`]).
    pub fn app_waf(&self) -> f64 {
        self.counters.app_waf()
    }
}

/// The store behind a [`LsKvSource`]: applies requests.
pub struct LsKvEngine {
    store: LsKv,
}

impl Engine<KvOp> for LsKvEngine {
    type Out = Io;
    type Error = LsKvError;

    fn apply(&mut self, op: &KvOp, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        self.store.apply(op, out)
    }
}

/// Key-value requests through a [`LsKv`], as block I/O (like `FsSource` for files).
pub struct LsKvSource<K: KvSource>(Expand<KvOp, K, LsKvEngine>);

impl<K: KvSource> LsKvSource<K> {
    /// Requests from `kv` through `store`.
    pub fn new(kv: K, store: LsKv) -> Self {
        LsKvSource(Expand::new(kv, LsKvEngine { store }, 256))
    }

    /// The store (for inspection).
    pub fn store(&self) -> &LsKv {
        &self.0.engine().store
    }

    /// The store's counts now.
    pub fn report(&self) -> LsKvReport {
        let s = self.store();
        LsKvReport {
            counters: s.counters.clone(),
            live_records: s.live_records(),
            live_bytes: s.live_bytes(),
            free_blocks: s.free_blocks(),
            defrag_queue: s.defrag_q.len() as u32,
            pending_write_bytes: self.0.pending_write_bytes(),
        }
    }
}

impl<K: KvSource> IoSource for LsKvSource<K> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        self.0.fill(out, max)
    }

    /// The clients' record bytes over what the store wrote to its namespace.
    fn figures(&self) -> Option<LayerFigures> {
        let c = &self.store().counters;
        Some(LayerFigures { app_write_bytes: c.record_write_bytes, dev_write_bytes: c.device_write_bytes, pending_write_bytes: self.0.pending_write_bytes(), ..LayerFigures::default() })
    }
}
