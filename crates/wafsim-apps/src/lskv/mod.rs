//! A log-structured key-value store on a raw namespace, modelled on Aerospike's SSD storage
//! engine (`storage-engine device`, aerospike-server 7.0, the last release where
//! `write-block-size` is configurable), with the store's own clock: clients send requests at a
//! rate, and defrag, partial flushes and stop-writes run in time as Aerospike's threads do.
//!
//! Sources (aerospike-server tag 7.0.0.9, commit 596711ad; `as/src/storage/drv_ssd.c` unless
//! named; the storage code is the same in every 7.0.x):
//! - Layout: an 8 MiB device header (`DRV_HEADER_SIZE`, drv_common.h), then write blocks of
//!   `write-block-size` (default 1 MiB, powers of two); block ids below `8 MiB / wbs` are the
//!   header (`as_storage_init_ssd`, `first_wblock_id`). Every data write is one whole block at
//!   its aligned offset (`ssd_flush_swb`).
//! - Records: a flat record plus a 4-byte end mark rounded up to 16 bytes (`RBLOCK_SIZE`, flat.h).
//! - Allocation (`swb_get`): the free queue (a FIFO `cf_queue`) first, then never-written
//!   ("pristine") blocks in ascending order (`pop_pristine_wblock_id`); a client buffer may not
//!   take one of the last 8 free blocks (`DRV_DEFRAG_RESERVE`): the write fails with
//!   `AS_ERR_OUT_OF_SPACE` at once. Defrag may take them.
//! - Freeing (`ssd_block_free`, `swb_dereference_and_release`): a used block whose live bytes
//!   reach 0 goes to the free queue; one that falls below `defrag-lwm-pct` (default 50) of a
//!   block joins the FIFO defrag queue; a queued block that empties stays queued until defrag
//!   pops it (and skips its read). A block still being filled or in the post-write queue is
//!   decided when it leaves them.
//! - `post-write-queue` (default 256 blocks per device): master client blocks stay cached after
//!   their write; they are neither freed nor queued until they leave the queue (`ssd_post_write`).
//! - `WRITE_IN_PLACE` (`ssd_buffer_bins`): an update of a record whose old copy is in the
//!   current buffer, not yet flushed, with the same rounded size, overwrites it there.
//! - Defrag (`run_defrag`, `ssd_defrag_wblock`, `defrag_move_record`): one thread per device
//!   pops one block (blocking on an empty queue), reads the whole block if it holds live data,
//!   moves each live record into the defrag buffer (`defrag_swb`, separate from the clients'),
//!   then sleeps `defrag-sleep` (default 1000 us). A block vacated by defrag returns to the free
//!   queue only once every defrag buffer that received its records has been written
//!   (`n_vac_dests`, `ssd_release_vacated_wblock`).
//! - Partial flushes (`run_ssd_maintenance`, `ssd_flush_current_swb`, `ssd_flush_defrag_swb`):
//!   every `flush-max-ms` (default 1000) a current client buffer that has unwritten records and
//!   from which no full block was written since the last check is written whole, in place; it
//!   stays current and is written again when full. The defrag buffer likewise every 3 s
//!   (`DEFRAG_FLUSH_MAX_US`, hard-coded), when it holds records of vacated blocks; that write
//!   releases them.
//! - Stop-writes (`as/src/base/nsup.c` `eval_stop_writes`, every 10 s; `write.c`): client writes
//!   are refused (`AS_ERR_OUT_OF_SPACE`) while available space (free and pristine blocks over the
//!   device size, floor percent) is below `stop-writes-avail-pct` (5) or live record bytes over
//!   the device size (floor percent) are at least `stop-writes-used-pct` (70). Reads go on, and so
//!   does defrag. There is no forced defrag anywhere on the client path.
//! - No trim: nothing in the storage code discards (trimming freed blocks is a what-if option).
//! - Reads read the record's range rounded out to the device's minimum I/O size (512 or 4096).
//!
//! Modelling choices: requests arrive at a fixed rate (open loop, like YCSB's target throughput;
//! request k at k / rate). Device commands take no time, so the write queue never backs up: the
//! `max-write-cache` throttle (`AS_ERR_DEVICE_OVERLOAD`) and defrag's stall behind a long write
//! queue never engage. A defrag step costs `defrag-sleep` plus a read of the block (an assumed
//! latency and bandwidth); the header's own small writes (partition versions, shutdown) are not
//! modelled.

mod source;

pub use source::{LsKvReport, LsKvSource};

use std::collections::VecDeque;

use wafsim_core::{Io, Op, Pid};
use wafsim_core::pipeline::KvOp;

/// Aerospike's device header (`DRV_HEADER_SIZE`): data blocks start after it.
pub const HEADER_BYTES: u64 = 8 << 20;

/// Configuration of a [`LsKv`]. [`LsKvConfig::default`] gives Aerospike 7.0's defaults on a
/// 1 GiB namespace 0, with clients at 10,000 requests per second.
#[derive(Debug, Clone, PartialEq)]
pub struct LsKvConfig {
    /// Namespace the store's I/O is addressed to.
    pub ns: u32,
    /// Write block size (Aerospike `write-block-size`, default 1 MiB; power of two).
    pub write_block_bytes: u32,
    /// Bytes of the namespace the store uses (Aerospike `device` size), header included; the
    /// store uses whole write blocks of it.
    pub device_bytes: u64,
    /// Bytes at the start kept for the device header (Aerospike: 8 MiB; 0 in hand-computed
    /// tests). Rounded up to whole blocks.
    pub header_bytes: u64,
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
    /// Client requests per second (the store's clock: request k arrives at k / rate).
    pub client_ops_per_sec: f64,
    /// Defrag's sleep after each block (Aerospike `defrag-sleep`, default 1000 us).
    pub defrag_sleep_us: u32,
    /// Time defrag takes to read a block, besides its transfer: an assumption (default 100 us,
    /// a queue-depth-1 flash read).
    pub defrag_read_latency_us: u32,
    /// Bytes per second of defrag's block read: an assumption (default 2 GB/s).
    pub defrag_read_bytes_per_sec: f64,
    /// Partial flush period of the client buffer (Aerospike `flush-max-ms`, default 1000;
    /// 0 never).
    pub flush_max_ms: u32,
    /// Partial flush period of the defrag buffer (Aerospike's hard-coded 3000 ms; 0 never).
    pub defrag_flush_ms: u32,
    /// Refuse client writes below this percent of available space (Aerospike
    /// `stop-writes-avail-pct`, default 5; 0 off).
    pub stop_writes_avail_pct: u32,
    /// Refuse client writes at or above this percent of live bytes (Aerospike
    /// `stop-writes-used-pct`, default 70; 0 off).
    pub stop_writes_used_pct: u32,
    /// How often stop-writes is evaluated (Aerospike: every 10 s).
    pub stop_writes_period_ms: u32,
    /// Bytes per second at which the device takes this store's queued full-block writes (one
    /// writer thread per device, one block at a time); 0: at once (the untimed drive's view).
    /// An assumption: the store's clock is not coupled to the timing model's completions.
    pub device_write_bytes_per_sec: f64,
    /// Aerospike `max-write-cache` (default 64 MiB): with more than this many bytes of full
    /// blocks queued and not yet written, client writes fail (`AS_ERR_DEVICE_OVERLOAD`), and
    /// with more than 128 blocks beyond it defrag waits (1 ms polls).
    pub max_write_cache_bytes: u64,
}

impl Default for LsKvConfig {
    fn default() -> Self {
        LsKvConfig {
            ns: 0,
            write_block_bytes: 1 << 20,
            device_bytes: 1 << 30,
            header_bytes: HEADER_BYTES,
            defrag_lwm_pct: 50,
            record_header_bytes: 47,
            record_align: 16,
            post_write_queue_blocks: 256,
            defrag_reserve_blocks: 8,
            trim_freed_blocks: false,
            read_ios: true,
            read_align: 4096,
            client_ops_per_sec: 10_000.0,
            defrag_sleep_us: 1000,
            defrag_read_latency_us: 100,
            defrag_read_bytes_per_sec: 2e9,
            flush_max_ms: 1000,
            defrag_flush_ms: 3000,
            stop_writes_avail_pct: 5,
            stop_writes_used_pct: 70,
            stop_writes_period_ms: 10_000,
            device_write_bytes_per_sec: 0.0,
            max_write_cache_bytes: 64 << 20,
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
    /// Defrag needs a block for its buffer and not even the reserve has one (Aerospike waits
    /// here for vacated blocks; in this model nothing else would free one).
    #[error("store full: defrag has no free write block for the records it moves")]
    Full,
}

/// What a [`LsKv`] has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LsKvCounters {
    /// Requests applied.
    pub ops: u64,
    /// Client writes accepted (inserts, updates, the write of read-modify-writes).
    pub writes: u64,
    /// Client writes refused by stop-writes (`AS_ERR_OUT_OF_SPACE`, evaluated every 10 s).
    pub refused_stop_writes: u64,
    /// Client writes refused because a new buffer would take one of the defrag reserve's
    /// blocks (`AS_ERR_OUT_OF_SPACE` from `swb_get`).
    pub refused_no_block: u64,
    /// Client writes refused because more than `max-write-cache` of full blocks waited for the
    /// device (`AS_ERR_DEVICE_OVERLOAD`).
    pub refused_overload: u64,
    /// Nanoseconds defrag waited for the write queue to drain (`max-write-cache` + 128 blocks).
    pub defrag_stall_ns: u64,
    /// Most full blocks waiting for the device at once.
    pub write_queue_peak: u64,
    /// Client reads of records (a scan counts each record).
    pub reads: u64,
    /// Reads of keys that do not exist (answered from the index, no I/O).
    pub missing_reads: u64,
    /// Reads served from a write buffer or the post-write queue (no I/O).
    pub cached_reads: u64,
    /// Deletes of existing records.
    pub deletes: u64,
    /// Field bytes the client sent in accepted writes.
    pub client_sent_bytes: u64,
    /// Field bytes of the records written for clients (an update rewrites the whole record).
    pub record_write_bytes: u64,
    /// Device bytes of those records (header and alignment included).
    pub client_stored_bytes: u64,
    /// Updates written over their old copy in the current buffer (`WRITE_IN_PLACE`).
    pub writes_in_place: u64,
    /// Device bytes of records re-appended by defrag.
    pub defrag_write_bytes: u64,
    /// Records re-appended by defrag.
    pub defrag_records: u64,
    /// Bytes written to the device (whole blocks, partial flushes included).
    pub device_write_bytes: u64,
    /// Full client write blocks written.
    pub client_blocks_written: u64,
    /// Full defrag write blocks written.
    pub defrag_blocks_written: u64,
    /// Partial writes of the current client buffer (`flush-max-ms`).
    pub client_partial_flushes: u64,
    /// Partial writes of the defrag buffer (every 3 s).
    pub defrag_partial_flushes: u64,
    /// Bytes read from the device (client reads and defrag reads).
    pub device_read_bytes: u64,
    /// Of which defrag reads.
    pub defrag_read_bytes: u64,
    /// Bytes trimmed.
    pub trim_bytes: u64,
    /// Blocks taken off the defrag queue (including skips).
    pub blocks_defragged: u64,
    /// Queued blocks that were empty when defrag reached them (no read).
    pub defrag_skips: u64,
    /// Blocks freed because their last record died outside the defrag queue.
    pub direct_frees: u64,
    /// Nanoseconds defrag spent on blocks (reads, moves and sleeps): over the elapsed time, how
    /// busy the defrag thread was.
    pub defrag_busy_ns: u64,
    /// Most blocks waiting in the defrag queue at once.
    pub defrag_queue_peak: u64,
    /// Stop-writes evaluations that found the store over a threshold.
    pub stop_writes_checks: u64,
    /// Of the evaluations, how many there were.
    pub stop_writes_evaluations: u64,
    /// The store's clock: nanoseconds from the first request to the last.
    pub elapsed_ns: u64,
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

    /// Client writes refused, every way.
    pub fn refused_writes(&self) -> u64 {
        self.refused_stop_writes + self.refused_no_block + self.refused_overload
    }

    /// Share of the elapsed time defrag was busy (1.0: it never caught up).
    pub fn defrag_utilisation(&self) -> f64 {
        self.defrag_busy_ns as f64 / self.elapsed_ns.max(1) as f64
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
    /// Free or pristine (or the header).
    Free,
    /// A current write buffer (client or defrag).
    Open,
    /// Written, in the post-write queue.
    PostWrite,
    Used,
    /// In the defrag queue.
    Queued,
    /// Defragged: waiting until the defrag buffers holding its records are written.
    Vacating,
}

type Index = crate::keymap::KeyMap<RecordLoc>;

/// A current write buffer: its block, fill position and how far it has been written.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    block: u32,
    pos: u32,
    flushed: u32,
}

/// The store: pure logic, requests in, block I/O out, each at a time on the store's clock.
pub struct LsKv {
    cfg: LsKvConfig,
    n_blocks: u32,
    first_block: u32,
    lwm_bytes: u32,
    index: Index,
    live: Vec<u32>,
    state: Vec<State>,
    /// Records appended to each block since it was last freed: (key, offset).
    records: Vec<Vec<(u64, u32)>>,
    /// Per block being vacated: the defrag buffers still to be written that hold its records,
    /// plus one while its scan runs.
    vac_dests: Vec<u16>,
    free_q: VecDeque<u32>,
    /// Blocks `pristine..n_blocks` were never written.
    pristine: u32,
    defrag_q: VecDeque<u32>,
    post_write_q: VecDeque<u32>,
    client: Option<Cursor>,
    defrag: Option<Cursor>,
    /// Blocks with records in the current defrag buffer, to release when it is written.
    vacated: Vec<u32>,
    live_bytes: u64,
    counters: LsKvCounters,
    /// The clock (ns) and the times of the background work.
    now: u64,
    defrag_ready: u64,
    next_flush: u64,
    next_defrag_flush: u64,
    next_stop_eval: u64,
    /// A full client (defrag) block was written since the last partial-flush check.
    client_full_since: bool,
    defrag_full_since: bool,
    stop_writes: bool,
    /// Evaluations in a row that found the store refusing writes with nothing that could
    /// change it (no write accepted, no delete, defrag idle), and the counts at the last one.
    stuck_evals: u32,
    last_eval: (u64, u64, u64),
    /// Per I/O emitted by the last call, its time (see [`LsKv::take_times`]).
    times: Vec<u64>,
    ns_per_op: f64,
    defrag_block_ns: u64,
    /// The write queue (Aerospike `n_wblocks_to_flush`): when each queued full block's write
    /// ends, in queue order; the writer is busy until `writer_free`. Empty when the device
    /// takes writes at once.
    write_q: VecDeque<u64>,
    writer_free: u64,
    /// Device time of one block write (0: at once), and the queue depth that refuses writes.
    block_write_ns: u64,
    max_write_q: u64,
}

const NEVER: u64 = u64::MAX;
/// Blocks beyond `max-write-cache` at which defrag waits (Aerospike `run_defrag`).
const WRITE_Q_DEFRAG_MARGIN: u64 = 128;
/// Defrag's poll while it waits for the write queue (Aerospike: `usleep(1000)`).
const DEFRAG_POLL_NS: u64 = 1_000_000;

fn period_ns(ms: u32) -> u64 {
    if ms == 0 {
        NEVER
    } else {
        ms as u64 * 1_000_000
    }
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
        if !(cfg.client_ops_per_sec > 0.0 && cfg.client_ops_per_sec.is_finite()) {
            return bad("client_ops_per_sec must be a positive number");
        }
        if !(cfg.defrag_read_bytes_per_sec > 0.0 && cfg.defrag_read_bytes_per_sec.is_finite()) {
            return bad("defrag_read_bytes_per_sec must be a positive number");
        }
        if cfg.stop_writes_period_ms == 0 {
            return bad("stop_writes_period_ms must be positive");
        }
        if !(cfg.device_write_bytes_per_sec >= 0.0 && cfg.device_write_bytes_per_sec.is_finite()) {
            return bad("device_write_bytes_per_sec must be 0 (at once) or a positive number");
        }
        let wbs = cfg.write_block_bytes as u64;
        let n = cfg.device_bytes / wbs;
        if n > u32::MAX as u64 {
            return bad("too many write blocks");
        }
        let n_blocks = n as u32;
        let first_block = cfg.header_bytes.div_ceil(wbs).min(n) as u32;
        // Room for the queue, the reserve, the two current blocks and something to defrag.
        let need = cfg.post_write_queue_blocks as u64 + cfg.defrag_reserve_blocks as u64 + 4;
        if ((n_blocks - first_block) as u64) < need {
            return Err(LsKvError::Config(format!(
                "{} write blocks after the header; at least post_write_queue_blocks + defrag_reserve_blocks + 4 = {need} needed",
                n_blocks - first_block
            )));
        }
        let lwm_bytes = ((wbs * cfg.defrag_lwm_pct as u64) / 100) as u32;
        let read_ns = cfg.defrag_read_latency_us as u64 * 1000 + (wbs as f64 / cfg.defrag_read_bytes_per_sec * 1e9) as u64;
        Ok(LsKv {
            n_blocks,
            first_block,
            lwm_bytes,
            index: Index::default(),
            live: vec![0; n_blocks as usize],
            state: vec![State::Free; n_blocks as usize],
            records: vec![Vec::new(); n_blocks as usize],
            vac_dests: vec![0; n_blocks as usize],
            free_q: VecDeque::new(),
            pristine: first_block,
            defrag_q: VecDeque::new(),
            post_write_q: VecDeque::new(),
            client: None,
            defrag: None,
            vacated: Vec::new(),
            live_bytes: 0,
            counters: LsKvCounters::default(),
            now: 0,
            defrag_ready: 0,
            next_flush: period_ns(cfg.flush_max_ms),
            next_defrag_flush: period_ns(cfg.defrag_flush_ms),
            next_stop_eval: period_ns(cfg.stop_writes_period_ms),
            client_full_since: false,
            defrag_full_since: false,
            stop_writes: false,
            stuck_evals: 0,
            last_eval: (0, 0, 0),
            times: Vec::new(),
            ns_per_op: 1e9 / cfg.client_ops_per_sec,
            defrag_block_ns: read_ns,
            write_q: VecDeque::new(),
            writer_free: 0,
            block_write_ns: if cfg.device_write_bytes_per_sec > 0.0 { ((wbs as f64 / cfg.device_write_bytes_per_sec * 1e9).round() as u64).max(1) } else { 0 },
            max_write_q: cfg.max_write_cache_bytes / wbs,
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LsKvConfig {
        &self.cfg
    }

    /// Number of write blocks, the header's included.
    pub fn blocks(&self) -> u32 {
        self.n_blocks
    }

    /// The first data block (the ones before it are the header).
    pub fn first_block(&self) -> u32 {
        self.first_block
    }

    /// Data blocks (after the header).
    pub fn data_blocks(&self) -> u32 {
        self.n_blocks - self.first_block
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

    /// One past the highest block ever taken: the store has written only blocks below it
    /// (pristine blocks are taken in ascending order, after the free queue runs dry).
    pub fn used_blocks_end(&self) -> u32 {
        self.pristine
    }

    /// Blocks waiting in the defrag queue.
    pub fn defrag_queue_len(&self) -> usize {
        self.defrag_q.len()
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

    /// Whether client writes are being refused (stop-writes, as last evaluated).
    pub fn stopped(&self) -> bool {
        self.stop_writes
    }

    /// The store's clock now (ns since its first request).
    pub fn now_ns(&self) -> u64 {
        self.now
    }

    /// When request number `k` (from 0) arrives.
    pub fn request_time(&self, k: u64) -> u64 {
        (k as f64 * self.ns_per_op) as u64
    }

    /// The times of the I/Os the calls since the last `take_times` appended, in order.
    pub fn take_times(&mut self, into: &mut Vec<u64>) {
        into.append(&mut self.times);
    }

    #[inline]
    fn emit(&mut self, io: Io, out: &mut Vec<Io>) {
        out.push(io);
        self.times.push(self.now);
    }

    /// Apply the next request at its arrival time (after the background work due before it),
    /// appending the block I/O it causes to `out` in order. A refused write is counted, not an
    /// error (the client gets `AS_ERR_OUT_OF_SPACE`).
    pub fn apply(&mut self, op: &KvOp, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        let t = self.request_time(self.counters.ops);
        self.advance_to(t, out)?;
        self.counters.ops += 1;
        match *op {
            KvOp::Insert { key, bytes } => {
                let old = self.index.get(&key).copied();
                self.client_write(key, bytes, bytes, old, out)
            }
            KvOp::Update { key, bytes } => {
                let old = self.index.get(&key).copied();
                let data = old.map_or(bytes, |l| l.data.max(bytes));
                self.client_write(key, bytes, data, old, out)
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
                let old = self.index.get(&key).copied();
                let data = old.map_or(bytes, |l| l.data.max(bytes));
                self.client_write(key, bytes, data, old, out)
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

    /// Run the background work (defrag, partial flushes, stop-writes) due up to time `t`, and
    /// set the clock to `t`.
    pub fn advance_to(&mut self, t: u64, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        loop {
            let d = if self.defrag_q.is_empty() { NEVER } else { self.defrag_ready };
            let next = d.min(self.next_flush).min(self.next_defrag_flush).min(self.next_stop_eval);
            if next > t {
                break;
            }
            self.now = self.now.max(next);
            if next == self.next_stop_eval {
                self.eval_stop_writes();
            } else if next == self.next_flush {
                self.flush_tick(out);
            } else if next == self.next_defrag_flush {
                self.defrag_flush_tick(out);
            } else {
                self.defrag_step(out)?;
            }
        }
        self.now = self.now.max(t);
        self.counters.elapsed_ns = self.now;
        Ok(())
    }

    /// Write the current client and defrag buffers now, partly filled (shutdown). They are
    /// released like full ones.
    pub fn flush(&mut self, out: &mut Vec<Io>) {
        if let Some(c) = self.client.take() {
            self.write_block(c.block, out);
        }
        if let Some(c) = self.defrag.take() {
            self.write_defrag_block(c.block, out);
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
        self.emit(Io { op: Op::Read, ns: self.cfg.ns, offset: lo, len: (hi - lo) as u32, pid: Pid::NONE }, out);
    }

    /// A client write of `key` whose newest copy is `old`.
    fn client_write(&mut self, key: u64, sent: u32, data: u32, old: Option<RecordLoc>, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        let stored = self.stored_size(data);
        if stored > self.cfg.write_block_bytes || data as u64 + self.cfg.record_header_bytes as u64 > u32::MAX as u64 {
            return Err(LsKvError::RecordTooLarge { key, bytes: data });
        }
        if self.stop_writes {
            self.counters.refused_stop_writes += 1;
            return Ok(());
        }
        // Aerospike checks the write queue before every write (`as_storage_overloaded`).
        if self.block_write_ns > 0 && self.queued_writes() > self.max_write_q {
            self.counters.refused_overload += 1;
            return Ok(());
        }
        // WRITE_IN_PLACE: the old copy is in the current buffer, past what was flushed, and
        // the same size.
        if let (Some(c), Some(old)) = (self.client, old) {
            if old.block == c.block && old.offset >= c.flushed && old.stored == stored {
                self.index.insert(key, RecordLoc { data, ..old });
                self.count_client_write(sent, data, stored);
                self.counters.writes_in_place += 1;
                return Ok(());
            }
        }
        let cur = match self.client {
            Some(c) if c.pos + stored <= self.cfg.write_block_bytes => c,
            other => {
                if let Some(c) = other {
                    self.client = None;
                    self.client_full_since = true;
                    self.write_block(c.block, out);
                }
                if self.free_blocks() <= self.cfg.defrag_reserve_blocks {
                    self.counters.refused_no_block += 1;
                    return Ok(());
                }
                let b = self.pop_free().expect("a free block outside the reserve");
                Cursor { block: b, pos: 0, flushed: 0 }
            }
        };
        self.count_client_write(sent, data, stored);
        self.client = Some(Cursor { pos: cur.pos + stored, ..cur });
        self.place(key, cur.block, cur.pos, stored, data, out);
        Ok(())
    }

    fn count_client_write(&mut self, sent: u32, data: u32, stored: u32) {
        self.counters.writes += 1;
        self.counters.client_sent_bytes += sent as u64;
        self.counters.record_write_bytes += data as u64;
        self.counters.client_stored_bytes += stored as u64;
    }

    /// Append a record at `pos` of `block` and point the index at it; the old copy dies.
    #[inline]
    fn place(&mut self, key: u64, block: u32, pos: u32, stored: u32, data: u32, out: &mut Vec<Io>) {
        let b = block as usize;
        self.live[b] += stored;
        self.live_bytes += stored as u64;
        self.records[b].push((key, pos));
        let loc = RecordLoc { block, offset: pos, stored, data };
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
                self.queue_defrag(loc.block);
            }
        }
    }

    fn queue_defrag(&mut self, b: u32) {
        self.state[b as usize] = State::Queued;
        if self.defrag_q.is_empty() && self.defrag_ready < self.now {
            // The thread was waiting on the empty queue: it wakes now.
            self.defrag_ready = self.now;
        }
        self.defrag_q.push_back(b);
        self.counters.defrag_queue_peak = self.counters.defrag_queue_peak.max(self.defrag_q.len() as u64);
    }

    /// A written block leaves the write path (Aerospike `swb_dereference_and_release`).
    fn release(&mut self, b: u32, out: &mut Vec<Io>) {
        let live = self.live[b as usize];
        if live == 0 {
            self.counters.direct_frees += 1;
            self.free_block(b, out);
        } else if live < self.lwm_bytes {
            self.queue_defrag(b);
        } else {
            self.state[b as usize] = State::Used;
        }
    }

    /// Write block `b` whole at its offset (every data write Aerospike makes, full or partial).
    fn write_whole(&mut self, b: u32, out: &mut Vec<Io>) {
        let wbs = self.cfg.write_block_bytes;
        self.emit(Io { op: Op::Write, ns: self.cfg.ns, offset: b as u64 * wbs as u64, len: wbs, pid: Pid::NONE }, out);
        self.counters.device_write_bytes += wbs as u64;
    }

    /// Write a full client block; it enters the post-write queue (or is released).
    fn write_block(&mut self, b: u32, out: &mut Vec<Io>) {
        self.write_whole(b, out);
        self.enqueue_write();
        self.counters.client_blocks_written += 1;
        if self.cfg.post_write_queue_blocks > 0 {
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

    /// Write the defrag buffer `b` (full, or at shutdown): it is released, and so are the
    /// blocks it vacated.
    fn write_defrag_block(&mut self, b: u32, out: &mut Vec<Io>) {
        self.write_whole(b, out);
        self.enqueue_write();
        self.counters.defrag_blocks_written += 1;
        self.release(b, out);
        self.release_vacated(out);
    }

    /// A full block joins the write queue (Aerospike `swb_write_q`, drained by one writer
    /// thread per device): it is written after the ones before it, in `block_write_ns`.
    fn enqueue_write(&mut self) {
        if self.block_write_ns == 0 {
            return;
        }
        let done = self.writer_free.max(self.now) + self.block_write_ns;
        self.writer_free = done;
        self.write_q.push_back(done);
        self.counters.write_queue_peak = self.counters.write_queue_peak.max(self.queued_writes());
    }

    /// Full blocks queued and not yet written now.
    fn queued_writes(&mut self) -> u64 {
        while self.write_q.front().is_some_and(|&d| d <= self.now) {
            self.write_q.pop_front();
        }
        self.write_q.len() as u64
    }

    /// The current defrag buffer was written: the blocks whose records it holds lose one
    /// destination (Aerospike `swb_release_all_vacated_wblocks`).
    fn release_vacated(&mut self, out: &mut Vec<Io>) {
        let vacated = std::mem::take(&mut self.vacated);
        for &v in &vacated {
            self.vac_done(v, out);
        }
        self.vacated = vacated;
        self.vacated.clear();
    }

    fn vac_done(&mut self, v: u32, out: &mut Vec<Io>) {
        let n = &mut self.vac_dests[v as usize];
        debug_assert!(*n > 0);
        *n -= 1;
        if *n == 0 {
            debug_assert_eq!(self.live[v as usize], 0);
            self.free_block(v, out);
        }
    }

    fn free_block(&mut self, b: u32, out: &mut Vec<Io>) {
        debug_assert_eq!(self.live[b as usize], 0);
        self.state[b as usize] = State::Free;
        self.records[b as usize].clear();
        self.free_q.push_back(b);
        if self.cfg.trim_freed_blocks {
            let wbs = self.cfg.write_block_bytes;
            let io = Io { op: Op::Trim, ns: self.cfg.ns, offset: b as u64 * wbs as u64, len: wbs, pid: Pid::NONE };
            self.emit(io, out);
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

    /// Aerospike's nsup check: available space (floor percent of the device) below the mark, or
    /// live bytes at or above theirs. Runs even with both marks off (0), to find a store that is
    /// stuck ([`LsKv::is_stuck`]).
    fn eval_stop_writes(&mut self) {
        let size = self.cfg.device_bytes.max(1) as u128;
        let avail_pct = (self.free_blocks() as u128 * self.cfg.write_block_bytes as u128 * 100 / size) as u32;
        let used_pct = (self.live_bytes as u128 * 100 / size) as u32;
        let stop = (self.cfg.stop_writes_avail_pct > 0 && avail_pct < self.cfg.stop_writes_avail_pct)
            || (self.cfg.stop_writes_used_pct > 0 && used_pct >= self.cfg.stop_writes_used_pct);
        self.stop_writes = stop;
        self.counters.stop_writes_evaluations += 1;
        self.counters.stop_writes_checks += stop as u64;
        self.next_stop_eval += period_ns(self.cfg.stop_writes_period_ms);
        // Stuck: writes were refused since the last evaluation and none accepted, no record was
        // deleted, and defrag has nothing queued or pending: nothing can free space any more.
        let c = &self.counters;
        let now = (c.writes, c.refused_writes(), c.deletes);
        let idle = self.defrag_q.is_empty() && self.vacated.is_empty();
        let stuck = now.0 == self.last_eval.0 && now.1 > self.last_eval.1 && now.2 == self.last_eval.2 && idle;
        self.stuck_evals = if stuck { self.stuck_evals + 1 } else { 0 };
        self.last_eval = now;
    }

    /// The store refuses every client write and nothing in it can change that (two stop-writes
    /// evaluations in a row found no write accepted, no delete and defrag idle): a run that waits
    /// for it to write more would wait for ever.
    pub fn is_stuck(&self) -> bool {
        self.stuck_evals >= 2
    }

    /// `flush-max-ms`: a current client buffer with unwritten records, from which no full
    /// block was written since the last check, is written whole in place.
    fn flush_tick(&mut self, out: &mut Vec<Io>) {
        if let Some(c) = self.client {
            if !self.client_full_since && c.pos > c.flushed {
                self.write_whole(c.block, out);
                self.counters.client_partial_flushes += 1;
                self.client = Some(Cursor { flushed: c.pos, ..c });
            }
        }
        self.client_full_since = false;
        self.next_flush += period_ns(self.cfg.flush_max_ms);
    }

    /// Every 3 s: the defrag buffer, if it holds records of vacated blocks and no full defrag
    /// block was written since the last check, is written whole in place; that releases them.
    fn defrag_flush_tick(&mut self, out: &mut Vec<Io>) {
        if let Some(c) = self.defrag {
            if !self.defrag_full_since && !self.vacated.is_empty() {
                self.write_whole(c.block, out);
                self.counters.defrag_partial_flushes += 1;
                self.defrag = Some(Cursor { flushed: c.pos, ..c });
                self.release_vacated(out);
            }
        }
        self.defrag_full_since = false;
        self.next_defrag_flush += period_ns(self.cfg.defrag_flush_ms);
    }

    /// Defrag pops one block at `now`: reads it if it holds live records, moves them into the
    /// defrag buffer, and is ready for the next block after the read and its sleep.
    fn defrag_step(&mut self, out: &mut Vec<Io>) -> Result<(), LsKvError> {
        // Aerospike's defrag thread polls every 1 ms while more than max-write-cache + 128
        // blocks wait for the device: it goes on at the first poll after the queue drained.
        let limit = self.max_write_q + WRITE_Q_DEFRAG_MARGIN;
        let queued = if self.block_write_ns > 0 { self.queued_writes() } else { 0 };
        if queued > limit {
            let drained = self.write_q[(queued - limit - 1) as usize];
            let wait = (drained - self.now).div_ceil(DEFRAG_POLL_NS) * DEFRAG_POLL_NS;
            self.counters.defrag_stall_ns += wait;
            self.defrag_ready = self.now + wait;
            return Ok(());
        }
        let b = self.defrag_q.pop_front().expect("defrag runs on a non-empty queue");
        self.counters.blocks_defragged += 1;
        let mut cost = self.cfg.defrag_sleep_us as u64 * 1000;
        self.state[b as usize] = State::Vacating;
        self.vac_dests[b as usize] = 1;
        if self.live[b as usize] == 0 {
            self.counters.defrag_skips += 1;
        } else {
            cost += self.defrag_block_ns;
            let wbs = self.cfg.write_block_bytes;
            self.emit(Io { op: Op::Read, ns: self.cfg.ns, offset: b as u64 * wbs as u64, len: wbs, pid: Pid::NONE }, out);
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
                            self.defrag_full_since = true;
                            self.write_defrag_block(c.block, out);
                        }
                        let nb = self.pop_free().ok_or(LsKvError::Full)?;
                        Cursor { block: nb, pos: 0, flushed: 0 }
                    }
                };
                if self.vacated.last() != Some(&b) {
                    self.vacated.push(b);
                    self.vac_dests[b as usize] += 1;
                }
                self.defrag = Some(Cursor { pos: cur.pos + loc.stored, ..cur });
                self.counters.defrag_records += 1;
                self.counters.defrag_write_bytes += loc.stored as u64;
                self.place(key, cur.block, cur.pos, loc.stored, loc.data, out);
            }
            let mut recs = recs;
            recs.clear();
            self.records[b as usize] = recs;
        }
        debug_assert_eq!(self.live[b as usize], 0, "defrag left live bytes in block {b}");
        self.vac_done(b, out);
        self.counters.defrag_busy_ns += cost;
        self.defrag_ready = self.now + cost;
        Ok(())
    }

    /// Check the bookkeeping (tests): live bytes per block equal the index's records there,
    /// states and queues agree.
    pub fn check_invariants(&self) {
        let mut live = vec![0u64; self.n_blocks as usize];
        for (&k, loc) in &self.index {
            live[loc.block as usize] += loc.stored as u64;
            assert!(loc.block >= self.first_block, "key {k} in the header");
            assert_ne!(self.state[loc.block as usize], State::Free, "key {k} in free block {}", loc.block);
            assert!(self.records[loc.block as usize].contains(&(k, loc.offset)), "key {k} not listed in its block");
        }
        for (b, &lv) in live.iter().enumerate() {
            assert_eq!(lv, self.live[b] as u64, "live bytes of block {b}");
            match self.state[b] {
                State::Used => assert!(self.live[b] >= self.lwm_bytes && self.live[b] > 0, "used block {b} below the mark"),
                State::Queued => assert!(self.defrag_q.contains(&(b as u32))),
                State::Free => assert!(self.free_q.contains(&(b as u32)) || b as u32 >= self.pristine || (b as u32) < self.first_block),
                State::Vacating => assert!(self.vac_dests[b] > 0, "vacating block {b} with no destination left"),
                _ => {}
            }
        }
        assert_eq!(live.iter().sum::<u64>(), self.live_bytes);
    }
}

