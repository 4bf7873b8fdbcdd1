//! An LSM-tree key-value store that turns key-value requests into file operations: a commit
//! log (write-ahead log), a memtable flushed into immutable SSTable files, and compaction,
//! size-tiered in the manner of Apache Cassandra (`SizeTieredCompactionStrategy`), leveled in
//! the manner of RocksDB, or RocksDB's universal compaction ([`UniversalConfig`],
//! [`compaction::universal_pick`]). The store emits [`FileOp`]s for a file system below it
//! (conventional or zone-aware); it never sees blocks.
//!
//! Modules: [`table`] (SSTables as sorted key arrays, the linear k-way merge), [`memtable`],
//! [`log`] (commit log segments), [`compaction`] (which compaction runs next), [`store`] (the
//! store: index, flushes, compactions, reads), [`source`] (the [`FileSource`] adapter and its
//! shared report).
//!
//! # Model and its sources
//!
//! Records. A record on disk is key + value + `record_overhead_bytes`; a delete writes a
//! tombstone (key + overhead). Without `partial_updates` (RocksDB) an update writes a whole
//! new version of the record (value = the larger of the old record's value and the bytes
//! sent), as RocksDB's YCSB binding does (`RocksDBClient.update` reads the record, merges the
//! fields and puts the whole record). With it (Cassandra) an update writes only the bytes
//! sent, as a partial row that merges reconcile with older versions (see "Partial updates"
//! below). Merges keep the newest version of each key (by
//! sequence number, as Cassandra's cell timestamps and RocksDB's sequence numbers decide);
//! a tombstone is dropped when the merge holds the oldest data of its key range: size-tiered
//! when every live table is an input, leveled when no level below the output level holds a
//! file overlapping the job's key range (RocksDB's bottommost-level rule). Cassandra also
//! waits `gc_grace_seconds` (10 days) before dropping tombstones; time is not modelled, so
//! that grace is taken as passed. Compression (Cassandra LZ4, RocksDB Snappy by default) is
//! not modelled: YCSB's random values barely compress.
//!
//! Defaults for YCSB-shaped records (`key_bytes` 23: YCSB's key is "user" followed by the
//! decimal fnvhash64 of the record number, up to 19 digits, `CoreWorkload.buildKeyName`):
//! - RocksDB (`LsmConfig::rocksdb`): record overhead 12 bytes = the internal key's 8-byte
//!   sequence-and-type trailer plus the block entry's three varint lengths (shared key,
//!   unshared key, value: 1 + 1 + 2 bytes for a 1000-byte value) (`table/block_based/
//!   block_builder.cc`, `db/dbformat.h`); prefix compression of keys, restart points, index
//!   and filter blocks are not modelled (about 1 byte per record together). WAL record
//!   overhead 23 bytes: the 7-byte log record header (checksum 4, length 2, type 1,
//!   `db/log_format.h`), the 12-byte WriteBatch header (sequence 8, count 4) and the put's
//!   type byte and two varint lengths (`db/write_batch.cc`), one put per batch.
//! - Cassandra (`LsmConfig::cassandra`): record overhead 43 bytes, an estimate of the 3.0+
//!   SSTable format for a YCSB row of 10 text cells: partition key length 2, deletion time 12,
//!   row flags 1, row size and previous-row size varints 2 + 2, timestamp delta 3, per cell a
//!   flag byte and a value-length varint (2 x 10), end-of-partition marker 1. Commit log
//!   overhead 40 bytes: entry size and two CRCs (12), table id (16) and the mutation's
//!   partition header (12). Both are estimates from the format descriptions, not
//!   measurements. A partial row (one updated cell, see below) 26 bytes: partition key
//!   length 2, deletion time 12, row flags 1, row size and previous-row size varints 1 + 1,
//!   the bitmap of the columns it lacks 2 (a varint, `Columns.serializeSubset`), the cell's
//!   flag byte 1, its own timestamp 4 (an UPDATE sets no row timestamp, so the cell carries
//!   its delta from the table's smallest timestamp, a varint: `Cell.Serializer`), its value
//!   length 1, end-of-partition marker 1. Its commit log record takes the same 40 bytes of
//!   overhead as any mutation's.
//!
//! # Partial updates
//!
//! Cassandra writes what a statement sets: YCSB's binding turns an update into `UPDATE
//! usertable SET field = ? WHERE y_id = ?` of the fields given (`CassandraCQLClient.update`),
//! one 100-byte field of ten in workload A (`writeallfields` false), and the commit log and
//! memtable get that one cell. Rows are reconciled cell by cell wherever versions meet:
//! `Rows.merge` / `BTreeRow.merge` keep each column's newest cell and the union of the
//! columns, in the memtable (`AtomicBTreePartition` merging an update into the row there), in
//! compactions and in reads. With `partial_updates` an update (and the write of a
//! read-modify-write) stores a partial row of `bytes` value bytes (+
//! `partial_record_overhead_bytes`; log record key + bytes + `log_record_overhead_bytes`);
//! an insert stores a full row; a delete a tombstone. Client bytes are what clients sent, as
//! before, so the application WAF falls: YCSB A on the Cassandra preset (1 M records, 4 M
//! requests) from 4.00 to 1.66.
//!
//! The rule (`table::Cells`): versions of a key are walked newest first; a full row or a
//! tombstone stands alone; a partial row is combined with the older versions down to the
//! first full row or tombstone (anything older is shadowed: an insert rewrites every column,
//! a delete removes them). Partial over full = a full row, over partial = a partial row,
//! over a tombstone = the partial row alone, which is then complete (after a delete an
//! update makes a row of just those cells; nothing older matters), so it is marked full. The
//! size of a combination is the largest value: YCSB's fields are equal-sized and an update
//! rewrites whole fields, so a full row with any of its cells is the full row; the union of
//! partial rows is taken as the largest of them (exact for repeated updates of the same
//! field, low for distinct fields; a sum capped at the full size would need the row's full
//! size, which partial rows alone do not know). The combined row takes the newest version's
//! sequence number. Where it applies:
//! - memtable: a partial row onto the memtable's version of its key is combined at once (the
//!   memtable still counts every write's bytes towards its flush size);
//! - merges (compactions): a partial result with no full row or tombstone in the merge stays
//!   partial (older versions live in tables outside it); when the merge holds the oldest data
//!   of the key (the rule that drops tombstones) it is complete and marked full;
//! - point reads: a partial newest version reads one block of each older table holding the
//!   key too, newest first by sequence number, down to the first full row or tombstone
//!   (`partial_reads`, `older_table_reads`); every table is probed (as if bloom filters were
//!   perfect). Cassandra's single-row read (`SinglePartitionReadCommand`,
//!   `queryMemtableAndSSTablesInTimestampOrder`, used for YCSB's whole-row reads of a table
//!   without clustering columns) reads SSTables newest first by their largest timestamp and
//!   stops once the row it holds is complete and newer than the next SSTable's largest
//!   timestamp (`reduceFilter`, `canRemoveRow`: the row's primary-key timestamp, which only an
//!   INSERT sets, and every requested cell). It reads at least the tables the model reads,
//!   and more when tables overlap in time (a size-tiered table holding the insert and later
//!   updates has a large largest timestamp): the model's count is a lower bound. Not
//!   modelled: that read path's "defragmentation" (a row read from more than
//!   `min_threshold` SSTables is written again into the memtable under size-tiered
//!   compaction), row caches, and the key cache;
//! - `value_of` and the key index: the index points at the newest version; `value_of`
//!   combines it with the older ones.
//!
//! Scans read every table holding keys in the range anyway, so partial rows change nothing
//! there.
//!
//! Commit log / WAL (group `log_group`, default 0). Every write's log record is buffered and
//! appended in chunks of `log_chunk_bytes` (default 64 KiB), so every append is whole 4 KiB
//! file-system blocks at the file's end. The real systems append each record to a buffer
//! that is written when a sync comes due (Cassandra `commitlog_sync: periodic`, every 10 s;
//! RocksDB without `sync` leaves it to the page cache, which writes back whole pages); time
//! is not modelled, so the log is appended in fixed chunks; the bytes counted do not depend
//! on the chunk, only how finely log and table writes interleave. At each memtable flush the
//! buffered rest is padded to a whole block and appended (the padding is counted). Segments:
//! Cassandra `commitlog_segment_size` 32 MiB, a segment deleted once every memtable with
//! records in it has been flushed (`log_segment_bytes` 32 MiB, `log_switch_on_flush` false);
//! RocksDB writes one WAL file per memtable (a new file at every memtable switch, the old one
//! deleted after the flush, `recycle_log_file_num` 0: `log_segment_bytes` 0 = unbounded,
//! `log_switch_on_flush` true). The log is always on staging (its group never carries the
//! capacity bit).
//!
//! Memtable. Flushed when the bytes written into it since the last flush (every version, as
//! both systems account memory) reach `memtable_bytes`. RocksDB `write_buffer_size` 64 MiB
//! (`include/rocksdb/options.h`). Cassandra flushes the largest memtable when the memtables'
//! occupancy reaches `memtable_cleanup_threshold` x the memtable space; the space
//! (`memtable_heap_space`) defaults to 1/4 of the heap, the threshold to
//! 1 / (`memtable_flush_writers` + 1) with 2 flush writers for one data directory
//! (`conf/cassandra.yaml`). With an 8 GiB heap (the largest `cassandra-env.sh` picks on its
//! own) and one table taking all writes, the flush size is 2048 MiB / 3 = 682.7 MiB; the
//! model counts record bytes, not Java heap bytes (the heap cost of a row is larger, so real
//! flushes are smaller). The flush and the compactions it makes due are decided at once, in
//! the request that fills the memtable; their file operations run as background jobs (see
//! "Background jobs" below) or, with `background` false, at once, to completion.
//!
//! SSTable files. A flush or compaction output is written as one file: Create, appends of
//! `write_bytes` (default 1 MiB) up to the size rounded up to 4 KiB, Close. A compaction reads
//! its inputs whole in `read_chunk_bytes` (default 1 MiB) reads, then writes its outputs, and
//! deletes its inputs only after the outputs are complete. (The chunk sizes have no system
//! default to follow; byte counts do not depend on them.) Every flush or compaction job puts
//! its output files into one new group (directory): ids count up from 1, are never reused
//! for a live table's group, and leave [`CAPACITY_GROUP_BIT`] free (with `table_group` set,
//! every table goes into that one group instead, as Cassandra's one data directory per
//! table); the bit is set on the
//! groups of tables at or past `staging_levels` (leveled: the output level; size-tiered: the
//! output tier, the number of compactions its oldest data went through, 0 for a flush) so a
//! router can put upper levels on a small staging device and the rest on a capacity device
//! (HSE's media classes).
//!
//! Size-tiered (Cassandra `SizeTieredCompactionStrategyOptions`, `CompactionParams`):
//! `min_threshold` 4, `max_threshold` 32, `bucket_low` 0.5, `bucket_high` 1.5,
//! `min_sstable_size` 50 MiB; bucketing and the choice of bucket in [`compaction`]. One output
//! table per compaction (Cassandra's STCS does not split its output).
//!
//! Leveled (RocksDB `include/rocksdb/advanced_options.h`, wiki "Leveled Compaction"):
//! `level0_file_num_compaction_trigger` 4, `max_bytes_for_level_base` 256 MiB,
//! `max_bytes_for_level_multiplier` 10, `target_file_size_base` 64 MiB (multiplier 1: every
//! level's files 64 MiB), `num_levels` 7, `level_compaction_dynamic_level_bytes` true (the
//! default since RocksDB 8.4; modelled, with static targets as an option, because it decides
//! which levels exist: on a fresh store L0 compacts straight into the last level). L0
//! compacts all its files with the overlapping files of the base level; Ln (n >= 1) one file
//! chosen by `compaction_pri` kMinOverlappingRatio (RocksDB's default: least overlapping
//! bytes in the next level per byte of the file) or round-robin by key (kRoundRobin), merged
//! with the overlapping files of the next level; outputs split at the target file size. A
//! job whose upper files overlap neither each other nor the next level moves them without a
//! rewrite (RocksDB's trivial move), unless the move would cross the staging boundary. Not
//! modelled: intra-L0 compactions, expanding the upper inputs, subcompactions, write stalls,
//! the periodic and TTL compactions.
//!
//! Reads (`read_ios`, default on). A key whose newest version is in the memtable (or in a
//! table a background job is still writing) costs nothing (unless that version is a partial
//! row: then older tables are read too, see "Partial updates"); otherwise one 4 KiB block of the table holding the newest version is read (the
//! block holding the record's first byte), as if bloom filters were perfect (no reads of
//! tables without the key; RocksDB and Cassandra default to about 1% false positives). A
//! key never written (or whose tombstone is gone) costs nothing. The store keeps a key index
//! (key -> newest version) to find that table at once; it stands for the bloom filters and
//! the per-level search. A scan reads, from every table holding keys in the scanned range,
//! the range's bytes rounded out to blocks; the range ends at the `records`-th distinct key
//! of the tables (memtable keys are not counted).
//!
//! Capacity. `capacity_bytes` is the file system's size; a flush, compaction or log append
//! that would take the live files past it is refused with [`LsmError::Full`] (a compaction
//! needs room for its inputs' size again until it deletes them). The check is the same with
//! background jobs: input files that running or queued jobs have yet to delete
//! ([`JobsState::held_bytes`]) come on top of it, and the file system below refuses what
//! does not fit.
//!
//! # Background jobs
//!
//! Real stores flush and compact in background threads, concurrently with client writes and
//! with each other: Cassandra runs `memtable_flush_writers` flushes (2 for one data
//! directory: `DatabaseDescriptor`, `conf/cassandra.yaml`) and `concurrent_compactors`
//! compactions (min(8, max(2, min(disks, cores))): 2 on a one-SSD node), throttled together
//! to `compaction_throughput` (64 MiB/s in 4.1); RocksDB splits `max_background_jobs` (default
//! 2) into max(1, jobs / 4) = 1 flush and max(1, jobs - flushes) = 1 compaction
//! (`DBImpl::GetBGJobLimits`, `db/db_impl/db_impl_compaction_flush.cc`). So
//! `LsmConfig::cassandra()` has 2 flush and 2 compaction lanes, `LsmConfig::rocksdb()` 1 and 1
//! (subcompactions, `max_subcompactions` 1 by default, are not modelled).
//!
//! A flush or a compaction is a job: its ordered file operations (a compaction: input reads,
//! output Create / appends / Close, deletes of its inputs; a flush: the table's Create /
//! appends / Close) are made when the job is decided (the store's index, tables and counters
//! change then, exactly as at once) and released later ([`jobs`]):
//! - lanes: at most `flush_lanes` flush jobs and `compaction_lanes` compaction jobs in
//!   progress, the rest in two FIFO queues;
//! - dependencies: a compaction in a lane releases nothing until all its input files are
//!   complete (their job released the Close); a job's inputs are taken out of the tree when
//!   it is decided, so no other job picks them; an output of an unfinished job may be picked
//!   as an input, and the job picking it waits. Two flushes may run at once (separate
//!   files). A log segment freed by a flush is deleted once that flush and every earlier one
//!   are complete;
//! - pacing (a modelling choice: time is not modelled): a client write's log bytes go out at
//!   once; after it, the jobs in progress may release `pace x` its log record bytes of reads
//!   and writes, `pace = pace_base + backlog / (pace_window_memtables x memtable_bytes)`, the
//!   backlog being the read and write bytes of every job not yet released; the credit goes
//!   round-robin over the jobs in lanes one operation (at most `write_bytes` or
//!   `read_chunk_bytes`) at a time, so a job's appends interleave with the other jobs'
//!   appends and with the log's chunks. With `pace_base` 1 a lone flush finishes within about
//!   one memtable of client writes; the backlog term works any backlog off with a time
//!   constant of one window, so the backlog stays below about J + A x window (J the largest
//!   lump of job bytes one request makes, A the job bytes per log byte) however long the run,
//!   which stands for the write stalls (RocksDB `level0_slowdown_writes_trigger` 20,
//!   `level0_stop_writes_trigger` 36) that keep the real stores from falling behind without
//!   bound. Reads (client reads and scans) make no credit. `pace_base` infinite releases each
//!   job within the request that made it (lanes in order, jobs waiting for their inputs):
//!   size-tiered, and leveled with one lane each, then give exactly the at-once stream.
//! - when the requests end ([`LsmFiles`]), or at [`Lsm::flush`], every job is released.
//!
//! The interleaving changes the order of the file operations, not the files: every file gets
//! the same writes and the same fate as at once, and the write counters are equal. Reads
//! differ: a point read of a key whose newest version is in a table a job is still writing,
//! and a scan's part in such a table, cost no I/O (counted in `in_flight_reads`), as if from
//! memory: right for a flush (its memtable is still in memory), an underestimate for a
//! compaction (the real store reads the job's inputs, still on disk). In the size-tiered YCSB A
//! end-to-end test (tests/lsm.rs) this is a third of the point reads.

pub mod compaction;
pub mod jobs;
pub mod log;
pub mod memtable;
pub mod source;
pub mod stall;
pub mod store;
pub mod table;

pub use jobs::JobsState;
pub use log::LogCounters;
pub use source::{LsmFiles, LsmReport};
pub use store::{Lsm, LsmCounters, TableInfo};
pub use stall::WriteControllerConfig;
pub use compaction::{universal_pick, SortedRun, UniversalPick};

#[allow(unused_imports)]
use wafsim_core::pipeline::{FileOp, FileSource};

/// Group bit a router reads: files of a group with this bit belong on the capacity tier.
pub const CAPACITY_GROUP_BIT: u32 = 1 << 31;

const MIB: u64 = 1 << 20;

/// Size-tiered compaction settings (Cassandra's option names and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeTieredConfig {
    /// Tables a bucket needs before it is compacted (`min_threshold`, default 4).
    pub min_threshold: u32,
    /// Most tables compacted at once (`max_threshold`, default 32).
    pub max_threshold: u32,
    /// A table joins a bucket when its size is above `bucket_low` x the bucket's average
    /// (default 0.5) ...
    pub bucket_low: f64,
    /// ... and below `bucket_high` x the average (default 1.5).
    pub bucket_high: f64,
    /// Tables below this size all share one bucket (`min_sstable_size`, default 50 MiB).
    pub min_sstable_bytes: u64,
}

impl Default for SizeTieredConfig {
    fn default() -> Self {
        SizeTieredConfig { min_threshold: 4, max_threshold: 32, bucket_low: 0.5, bucket_high: 1.5, min_sstable_bytes: 50 * MIB }
    }
}

/// Which file of a level a leveled compaction takes (RocksDB `compaction_pri`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePick {
    /// The file with the fewest overlapping bytes in the next level per byte of its own
    /// (kMinOverlappingRatio, RocksDB's default).
    MinOverlappingRatio,
    /// The next file by key after the last one compacted, wrapping around (kRoundRobin).
    RoundRobin,
}

/// Leveled compaction settings (RocksDB's option names and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct LeveledConfig {
    /// L0 files that start an L0 compaction (default 4).
    pub level0_file_num_compaction_trigger: u32,
    /// Target size of L1, or of the base level (default 256 MiB).
    pub max_bytes_for_level_base: u64,
    /// Size ratio of adjacent levels (default 10).
    pub max_bytes_for_level_multiplier: u32,
    /// Output files are cut at this size (`target_file_size_base`, default 64 MiB).
    pub target_file_bytes: u64,
    /// Levels, L0 included (default 7).
    pub num_levels: u32,
    /// Level targets from the last level up (default true, RocksDB 8.4 and later).
    pub dynamic_level_bytes: bool,
    /// File choice within a level (default [`FilePick::MinOverlappingRatio`]).
    pub pick: FilePick,
    /// Output files cut at the boundaries of the files two levels down
    /// (`level_compaction_dynamic_file_size`, default true since RocksDB 7.8; false: at the
    /// target size). See [`compaction::OutputCutter`].
    pub dynamic_file_size: bool,
    /// A compaction out of L1 or below takes the neighbours of its file that come without
    /// more files of the next level (RocksDB's `SetupOtherInputs`, always on; default true).
    pub expand_inputs: bool,
}

impl Default for LeveledConfig {
    fn default() -> Self {
        LeveledConfig {
            level0_file_num_compaction_trigger: 4,
            max_bytes_for_level_base: 256 * MIB,
            max_bytes_for_level_multiplier: 10,
            target_file_bytes: 64 * MIB,
            num_levels: 7,
            dynamic_level_bytes: true,
            pick: FilePick::MinOverlappingRatio,
            dynamic_file_size: true,
            expand_inputs: true,
        }
    }
}

/// Universal compaction settings (RocksDB's `CompactionOptionsUniversal` names and defaults,
/// `include/rocksdb/universal_compaction.h`; the picker in [`compaction::universal_pick`]).
#[derive(Debug, Clone, PartialEq)]
pub struct UniversalConfig {
    /// Sorted runs that start a compaction, and the most that may stand without one
    /// (`level0_file_num_compaction_trigger`, default 4).
    pub level0_file_num_compaction_trigger: u32,
    /// Percent by which a run may be larger than the runs before it and still join them
    /// (`size_ratio`, default 1).
    pub size_ratio: u32,
    /// Fewest runs merged for the size ratio (`min_merge_width`, default 2).
    pub min_merge_width: u32,
    /// Most runs merged for the size ratio (`max_merge_width`, default unbounded).
    pub max_merge_width: u32,
    /// All runs are merged into the oldest when the others add up to more than this percent
    /// of it (`max_size_amplification_percent`, default 200).
    pub max_size_amplification_percent: u32,
    /// Levels, L0 included: each of L1.. holds at most one sorted run (`num_levels`, default 7).
    pub num_levels: u32,
    /// Outputs into L1 and below are cut at this size (`target_file_size_base`, 64 MiB);
    /// outputs into L0 are one file.
    pub target_file_bytes: u64,
}

impl Default for UniversalConfig {
    fn default() -> Self {
        UniversalConfig { level0_file_num_compaction_trigger: 4, size_ratio: 1, min_merge_width: 2, max_merge_width: u32::MAX, max_size_amplification_percent: 200, num_levels: 7, target_file_bytes: 64 * MIB }
    }
}

/// The compaction strategy.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactionConfig {
    /// Cassandra-like size-tiered compaction.
    SizeTiered(SizeTieredConfig),
    /// RocksDB-like leveled compaction.
    Leveled(LeveledConfig),
    /// RocksDB's universal compaction.
    Universal(UniversalConfig),
}

/// Configuration of an [`Lsm`]. [`LsmConfig::rocksdb`] (also the `Default`) and
/// [`LsmConfig::cassandra`] give each system's defaults on a 64 GiB file system.
#[derive(Debug, Clone, PartialEq)]
pub struct LsmConfig {
    /// Compaction strategy and its settings.
    pub compaction: CompactionConfig,
    /// Memtable flush size in bytes written into it (RocksDB 64 MiB; Cassandra 682.7 MiB,
    /// see the module documentation).
    pub memtable_bytes: u64,
    /// Bytes of a key (default 23, a YCSB key).
    pub key_bytes: u32,
    /// Bytes a record takes in an SSTable besides key and value (RocksDB 12, Cassandra 43).
    pub record_overhead_bytes: u32,
    /// Bytes a log record takes besides key and value (RocksDB 23, Cassandra 40); the same
    /// for a partial update's record.
    pub log_record_overhead_bytes: u32,
    /// Updates write only the bytes sent, as a partial row that merges reconcile with older
    /// versions (Cassandra's cells: true), instead of a whole new record (RocksDB's YCSB
    /// binding: false). See "Partial updates" in the module documentation.
    pub partial_updates: bool,
    /// Bytes a partial row takes in an SSTable besides key and value (Cassandra 26; RocksDB
    /// 12, unused).
    pub partial_record_overhead_bytes: u32,
    /// Log bytes appended at a time (default 64 KiB; a multiple of the block).
    pub log_chunk_bytes: u32,
    /// Log segment size (Cassandra 32 MiB; 0 = unbounded, RocksDB).
    pub log_segment_bytes: u64,
    /// A new log file at every memtable flush (RocksDB true, Cassandra false).
    pub log_switch_on_flush: bool,
    /// The log's group (default 0).
    pub log_group: u32,
    /// Every table file in this one group (a data directory: Cassandra keeps all SSTables of a
    /// table in `data/<keyspace>/<table>-<id>/`, its commit log in `commitlog/`); `None`
    /// (default): each flush or compaction job's files in a group of their own.
    pub table_group: Option<u32>,
    /// SSTable append size (default 1 MiB; a multiple of the block).
    pub write_bytes: u32,
    /// Compaction read size (default 1 MiB; a multiple of the block).
    pub read_chunk_bytes: u32,
    /// File-system block: every write and read is whole blocks (default 4096).
    pub block_bytes: u32,
    /// Emit reads for client reads and scans (default true).
    pub read_ios: bool,
    /// Size of the file system the store lives on (default 64 GiB).
    pub capacity_bytes: u64,
    /// Levels (leveled) or tiers (size-tiered) below this number stay on the staging tier;
    /// the groups of the others get [`CAPACITY_GROUP_BIT`]. None (default): no bit.
    pub staging_levels: Option<u32>,
    /// Flushes and compactions run as background jobs whose file operations are released
    /// gradually, interleaved with each other and with the log (default true); false: each
    /// runs at once, to completion, inside the request that caused it.
    pub background: bool,
    /// Flush jobs in progress at once (Cassandra `memtable_flush_writers` 2 for one data
    /// directory; RocksDB 1, from `max_background_jobs` 2).
    pub flush_lanes: u32,
    /// Compaction jobs in progress at once (Cassandra `concurrent_compactors` 2 on one disk;
    /// RocksDB 1, from `max_background_jobs` 2).
    pub compaction_lanes: u32,
    /// Background bytes (reads and writes) released per client log byte with no backlog
    /// (default 1; f64::INFINITY releases every job at once, in lane order).
    pub pace_base: f64,
    /// Window, in memtables of client bytes, over which the backlog is worked off: the pace
    /// adds backlog / (this x memtable_bytes) (default 1).
    pub pace_window_memtables: f64,
    /// RocksDB's write controller with a clock (leveled or universal; default None: the pace above).
    /// Jobs move at a bandwidth in time, compactions are picked when a lane frees, and client
    /// writes are slowed or stopped by L0 and memtable triggers (see [`stall`]).
    pub write_controller: Option<WriteControllerConfig>,
}

impl LsmConfig {
    /// RocksDB's defaults with universal compaction (`compaction_style = kCompactionStyleUniversal`).
    pub fn rocksdb_universal() -> LsmConfig {
        LsmConfig { compaction: CompactionConfig::Universal(UniversalConfig::default()), ..LsmConfig::rocksdb() }
    }

    /// RocksDB's defaults (leveled compaction).
    pub fn rocksdb() -> LsmConfig {
        LsmConfig {
            compaction: CompactionConfig::Leveled(LeveledConfig::default()),
            memtable_bytes: 64 * MIB,
            key_bytes: 23,
            record_overhead_bytes: 12,
            log_record_overhead_bytes: 23,
            partial_updates: false,
            partial_record_overhead_bytes: 12,
            log_chunk_bytes: 64 << 10,
            log_segment_bytes: 0,
            log_switch_on_flush: true,
            log_group: 0,
            table_group: None,
            write_bytes: 1 << 20,
            read_chunk_bytes: 1 << 20,
            block_bytes: 4096,
            read_ios: true,
            capacity_bytes: 64 << 30,
            staging_levels: None,
            background: true,
            flush_lanes: 1,
            compaction_lanes: 1,
            pace_base: 1.0,
            pace_window_memtables: 1.0,
            write_controller: None,
        }
    }

    /// Cassandra's defaults (size-tiered compaction).
    pub fn cassandra() -> LsmConfig {
        LsmConfig {
            compaction: CompactionConfig::SizeTiered(SizeTieredConfig::default()),
            memtable_bytes: (2048 * MIB) / 3,
            record_overhead_bytes: 43,
            log_record_overhead_bytes: 40,
            partial_updates: true,
            partial_record_overhead_bytes: 26,
            log_segment_bytes: 32 * MIB,
            log_switch_on_flush: false,
            flush_lanes: 2,
            compaction_lanes: 2,
            ..LsmConfig::rocksdb()
        }
    }

    /// Check the figures.
    pub fn validate(&self) -> Result<(), LsmError> {
        let bad = |s: &str| Err(LsmError::Config(s.to_string()));
        let b = self.block_bytes as u64;
        if b == 0 || !b.is_power_of_two() {
            return bad("block_bytes must be a power of two");
        }
        for (name, v) in [("log_chunk_bytes", self.log_chunk_bytes), ("write_bytes", self.write_bytes), ("read_chunk_bytes", self.read_chunk_bytes)] {
            if v == 0 || !(v as u64).is_multiple_of(b) {
                return Err(LsmError::Config(format!("{name} ({v}) must be a positive multiple of block_bytes ({b})")));
            }
        }
        if !self.log_segment_bytes.is_multiple_of(b) {
            return bad("log_segment_bytes must be a multiple of block_bytes (0 = unbounded)");
        }
        if self.memtable_bytes == 0 {
            return bad("memtable_bytes must be positive");
        }
        if self.flush_lanes == 0 || self.compaction_lanes == 0 {
            return bad("flush_lanes and compaction_lanes must be at least 1");
        }
        if self.pace_base.is_nan() || self.pace_base < 0.0 || self.pace_window_memtables.is_nan() || self.pace_window_memtables <= 0.0 {
            return bad("need pace_base >= 0 and pace_window_memtables > 0");
        }
        if self.pace_base == 0.0 && self.pace_window_memtables.is_infinite() {
            return bad("pace_base 0 with an infinite pace window never runs a background job");
        }
        if let Some(wc) = &self.write_controller {
            wc.validate().map_err(LsmError::Config)?;
            if !self.background || matches!(self.compaction, CompactionConfig::SizeTiered(_)) {
                return bad("the write controller needs background jobs and leveled or universal compaction");
            }
            if matches!(self.compaction, CompactionConfig::Universal(_)) && self.compaction_lanes != 1 {
                // RocksDB's picker skips runs being compacted; the model takes a job's inputs
                // out of the tree, which with two lanes would join runs that are not adjacent.
                return bad("universal compaction with the write controller runs one compaction lane");
            }
        }
        if self.table_group.is_some_and(|g| g & CAPACITY_GROUP_BIT != 0 || g == self.log_group) {
            return bad("table_group must differ from log_group and leave CAPACITY_GROUP_BIT clear");
        }
        if self.log_group & CAPACITY_GROUP_BIT != 0 {
            return bad("log_group must leave CAPACITY_GROUP_BIT clear (the log is on staging)");
        }
        match &self.compaction {
            CompactionConfig::SizeTiered(s) => {
                if s.min_threshold < 2 || s.max_threshold < s.min_threshold {
                    return bad("size-tiered: need 2 <= min_threshold <= max_threshold");
                }
                if !(s.bucket_low > 0.0 && s.bucket_low < 1.0 && s.bucket_high > 1.0 && s.bucket_high.is_finite()) {
                    return bad("size-tiered: need 0 < bucket_low < 1 < bucket_high");
                }
            }
            CompactionConfig::Leveled(l) => {
                if l.num_levels < 2 || l.num_levels > 64 {
                    return bad("leveled: num_levels must be 2..=64");
                }
                if l.level0_file_num_compaction_trigger == 0 || l.max_bytes_for_level_base == 0 || l.target_file_bytes == 0 {
                    return bad("leveled: trigger, level base and target file size must be positive");
                }
                if l.max_bytes_for_level_multiplier < 2 {
                    return bad("leveled: max_bytes_for_level_multiplier must be at least 2");
                }
            }
            CompactionConfig::Universal(u) => {
                if u.num_levels < 1 || u.num_levels > 64 {
                    return bad("universal: num_levels must be 1..=64");
                }
                if u.level0_file_num_compaction_trigger == 0 || u.target_file_bytes == 0 {
                    return bad("universal: trigger and target file size must be positive");
                }
                if u.max_merge_width < 2 || u.min_merge_width > u.max_merge_width {
                    return bad("universal: need min_merge_width <= max_merge_width and max_merge_width >= 2");
                }
            }
        }
        Ok(())
    }
}

impl Default for LsmConfig {
    fn default() -> Self {
        LsmConfig::rocksdb()
    }
}

/// Why a configuration or a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LsmError {
    /// The configuration is unusable.
    #[error("bad configuration: {0}")]
    Config(String),
    /// A record too large for the model (1 GiB or more with key and overhead).
    #[error("record {key} of {bytes} value bytes is too large")]
    RecordTooLarge {
        /// The key.
        key: u64,
        /// Its value bytes.
        bytes: u32,
    },
    /// The files would outgrow the file system.
    #[error("store full: {need} more bytes wanted with {live} bytes of live files on a {capacity}-byte file system (raise capacity_bytes or write less)")]
    Full {
        /// Bytes the refused step needed.
        need: u64,
        /// Bytes of the live files then.
        live: u64,
        /// The file system's size.
        capacity: u64,
    },
    /// Compaction did not settle.
    #[error("compaction makes no progress: {0}")]
    NoProgress(String),
}
