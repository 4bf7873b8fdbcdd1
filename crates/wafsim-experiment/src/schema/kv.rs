//! `[[phase.kv]]`: a key-value store on a namespace, driven by a request generator. What every
//! store takes (namespace, requests, amount) sits in the entry; what one store takes sits in the
//! sub-table named as its `store` word (`[phase.kv.lsm]` beside `store = "lsm"`), and the options
//! of the file system under a store in `[phase.kv.fs]` (see [`FsSpec`]). A variant that switches
//! `store` leaves the other stores' sub-tables without effect, which its notes say.

use serde::Deserialize;

use super::moved::struct_keys;
use super::{one_f64, Amount, Bytes, Duration, Rate, Share, yes, CacheRequests, Compaction, FileGroups, FsKind, FsSpec, KvPhases, KvStore, KvWorkload, RegionOrder};
use super::parsed_some;
use wafsim_apps::MclassPolicy;

/// `[[phase.kv]]`: a key-value store on a raw namespace (wafsim-apps), driven by a YCSB core
/// workload (wafsim_workload::ycsb) or a TPC-C-like mix (`workload = "tpcc"`,
/// wafsim_workload::tpcc: `warehouses`, load then transactions). The store is made empty at the
/// start of the phase.
///
/// ```toml
/// [[phase.kv]]
/// namespace = "ns1"
/// store = "log-structured"    # Aerospike-like: write blocks, defrag below the low-water mark
/// ycsb = "a"                  # core workload a..f
/// fill = 0.5                  # records take this share of the namespace (sets recordcount)
/// phases = "load+run"         # "load", "run" or "load+run"
/// amount = "3x"               # stop after the store wrote this much (bytes or a multiple of the namespace)
/// ycsb_properties = { requestdistribution = "uniform" }   # any YCSB property, by its name
/// rate = 50000                # client requests per second (the store's clock)
/// [phase.kv.log-structured]
/// write_block = "128KiB"      # default 1MiB
/// defrag_lwm = 50             # percent (Aerospike defrag-lwm-pct)
/// runtime = "10h"             # or stop after this long (full-scale simulated time)
/// ```
///
/// A CacheLib-like flash cache (wafsim_apps::flashcache) under CacheBench-like requests:
///
/// ```toml
/// [[phase.kv]]
/// namespace = "cache"
/// store = "flash-cache"
/// amount = "3x"               # stop once the cache wrote this much to the device
/// [phase.kv.flash-cache]
/// cache_size = "50%"          # of the namespace; the rest stays unused
/// footprint = 2.0             # key population's objects / cache size
/// region_eviction = "fifo"    # or "lru"
/// ```
///
/// An LSM store (wafsim_apps::lsm) on a file system on the namespace:
///
/// ```toml
/// [[phase.kv]]
/// namespace = "data"
/// store = "lsm"
/// filesystem = "zoned"        # or "conventional" or "btrfs"; its options in [phase.kv.fs]
/// amount = "300GB"            # stop once the store wrote this much to its files
/// [phase.kv.lsm]
/// compaction = "size-tiered"  # Cassandra-like defaults; "leveled": RocksDB-like
/// memtable = "64MiB"          # flush size (default: the engine's)
/// staging_namespace = "fast"  # optional: upper levels and the log on this namespace
/// [phase.kv.fs]
/// victim = "cost-benefit"
/// ```
///
/// Keys of a store's sub-table given flat in the entry (as before the sub-tables) are still read,
/// and the run's notes name their new place.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvSpec {
    /// Name of the namespace the store is on.
    pub namespace: String,
    /// "log-structured" (default, Aerospike-like), "lsm" (an LSM tree on a file system),
    /// "flash-cache" (CacheLib-like), "wiredtiger" (MongoDB's engine on a file system) or "hse"
    /// (HSE's KVDB on mpool media classes).
    #[serde(default)]
    pub store: KvStore,
    /// Client requests per second, e.g. `rate = 50000` (YCSB's target throughput): the clock of
    /// a log-structured store (defrag, partial flushes and stop-writes run in time against it;
    /// stores with rates interleave by time), of WiredTiger (its 60 s checkpoints) and of HSE
    /// (its durability interval). Default 10000 (YCSB's defaults: one client thread, no target,
    /// at a round trip of about 100 us). Not a setting of the stores without a clock.
    pub rate: Option<f64>,
    /// Reads cost device reads (default true).
    #[serde(default = "yes")]
    pub read_ios: bool,
    /// "ycsb" (default) or "tpcc" ("cachebench" for a flash cache, its default).
    #[serde(default)]
    pub workload: KvWorkload,
    /// ycsb: the core workload, a letter a..f (default "a").
    #[serde(default = "default_ycsb")]
    pub ycsb: String,
    /// tpcc: warehouses (default 1).
    pub warehouses: Option<u64>,
    /// Share of the namespace the initial data takes, in (0, 1): sets YCSB's recordcount or the
    /// TPC-C warehouses (not of a flash cache, whose `footprint` sets its population).
    pub fill: Option<f64>,
    /// ycsb: "load", "run" or "load+run" (default); tpcc: "run" skips the initial population.
    #[serde(default)]
    pub phases: KvPhases,
    /// Stop once the store has written this much (bytes, or a multiple of the namespace: "3x"): to
    /// its files for lsm, to the device for the others. Without it the request generator decides
    /// when the phase ends.
    pub amount: Option<Amount>,
    /// ycsb: YCSB properties by name, applied over the core workload (e.g. `requestdistribution`).
    #[serde(default)]
    pub ycsb_properties: toml::Table,
    /// I/Os in flight in timed runs (default 8; flash-cache 1).
    pub iodepth: Option<u32>,
    /// The file system under a store that has one (lsm, wiredtiger): "conventional" (default),
    /// "zoned" or "btrfs"; its options in `[phase.kv.fs]`.
    #[serde(default)]
    pub filesystem: FsKind,
    /// `[phase.kv.fs]`: the options of the store's file system, as `[phase.files.fs]`.
    #[serde(default)]
    pub fs: FsSpec,
    /// `[phase.kv.log-structured]`.
    #[serde(default, rename = "log-structured")]
    pub log_structured: LogStructuredSpec,
    /// `[phase.kv.lsm]`.
    #[serde(default)]
    pub lsm: LsmSpec,
    /// `[phase.kv.flash-cache]`.
    #[serde(default, rename = "flash-cache")]
    pub flash_cache: FlashCacheSpec,
    /// `[phase.kv.wiredtiger]`.
    #[serde(default)]
    pub wiredtiger: WiredTigerSpec,
    /// `[phase.kv.hse]`.
    #[serde(default)]
    pub hse: HseSpec,
    /// The run's scale (set by scaling, not by the file): an LSM store's sizes (memtable,
    /// table and level sizes, log segments) shrink with the drive so the tree keeps its shape.
    #[serde(skip, default = "one_f64")]
    pub scale: f64,
}

impl KvSpec {
    /// The staging namespace of the store, if it has one (lsm and hse take one).
    pub fn staging_namespace(&self) -> Option<&String> {
        match self.store {
            KvStore::Lsm => self.lsm.staging_namespace.as_ref(),
            KvStore::Hse => self.hse.staging_namespace.as_ref(),
            _ => None,
        }
    }
}

fn default_ycsb() -> String {
    "a".into()
}

impl KvStore {
    /// The keys of this store's sub-table (`[phase.kv.WORD]`).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            KvStore::LogStructured => struct_keys::<LogStructuredSpec>(),
            KvStore::Lsm => struct_keys::<LsmSpec>(),
            KvStore::FlashCache => struct_keys::<FlashCacheSpec>(),
            KvStore::WiredTiger => struct_keys::<WiredTigerSpec>(),
            KvStore::Hse => struct_keys::<HseSpec>(),
        }
    }

    /// Whether the store is on a file system the entry chooses (`filesystem`).
    pub fn chooses_file_system(self) -> bool {
        matches!(self, KvStore::Lsm | KvStore::WiredTiger)
    }

    /// Whether the store reads `[phase.kv.fs]`: those on a chosen file system, and HSE, whose
    /// mblocks go through a zoned file system on a zoned namespace.
    pub fn reads_fs(self) -> bool {
        self.chooses_file_system() || self == KvStore::Hse
    }
}

/// `[phase.kv.log-structured]`: an Aerospike-like store (wafsim_apps::lskv), with Aerospike's
/// names for its settings.
///
/// ```toml
/// [phase.kv.log-structured]
/// write_block = "128KiB"      # default 1MiB
/// defrag_lwm = 50             # percent (Aerospike defrag-lwm-pct)
/// trim = false                # trim freed blocks
/// runtime = "10h"             # stop after this long (full-scale simulated time)
/// defrag_sleep = "1000us"     # Aerospike defrag-sleep
/// post_write_queue = 256      # blocks (Aerospike post-write-queue)
/// flush_max_ms = 1000         # partial flush period (Aerospike flush-max-ms)
/// stop_writes_avail_pct = 5   # Aerospike stop-writes thresholds
/// stop_writes_used_pct = 70
/// device_write_bw = "400MB"   # per second: the drive's pace for this store (default: at once)
/// max_write_cache = "64MiB"   # Aerospike max-write-cache (acts with device_write_bw)
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogStructuredSpec {
    /// Write block size (default 1 MiB).
    pub write_block: Option<Bytes>,
    /// Defragment a block once its live data falls below this percent (Aerospike
    /// `defrag-lwm-pct`).
    pub defrag_lwm: Option<u32>,
    /// How long the clients run, in simulated time at full scale, e.g. `runtime = "10h"`; a
    /// scaled run lasts `--scale` times as long, as its namespace is that much smaller, so the
    /// store writes its namespace as many times over. Stores of one phase with the same runtime
    /// stop together.
    pub runtime: Option<Duration>,
    /// Aerospike `defrag-sleep`, the pause after each defragmented block, e.g.
    /// `defrag_sleep = "1000us"` (the default).
    pub defrag_sleep: Option<Duration>,
    /// Aerospike `post-write-queue`, written client blocks kept cached per device (default 256;
    /// a scaled run keeps its share of the namespace).
    pub post_write_queue: Option<u32>,
    /// Aerospike `flush-max-ms`, the partial flush period of a current write block (default
    /// 1000; 0 never).
    pub flush_max_ms: Option<u32>,
    /// Aerospike `stop-writes-avail-pct` (default 5; 0 off).
    pub stop_writes_avail_pct: Option<u32>,
    /// Aerospike `stop-writes-used-pct` (default 70; 0 off).
    pub stop_writes_used_pct: Option<u32>,
    /// Bytes per second at which the drive takes this store's full-block writes, e.g.
    /// `device_write_bw = "400MB"` (per second). With it, Aerospike's device-side throttles act:
    /// client writes fail while more than `max_write_cache` waits for the drive
    /// (`AS_ERR_DEVICE_OVERLOAD`), and defrag waits while 128 blocks more wait. Default: the
    /// drive takes writes at once, as an untimed drive does (the throttles never act). An
    /// assumption, not coupled to the timing model; not scaled (rates are not).
    pub device_write_bw: Option<Bytes>,
    /// Aerospike `max-write-cache`, e.g. `"64MiB"` (the default); acts only with
    /// `device_write_bw`. Not scaled: it is a time buffer at the store's byte rate, which a
    /// scaled run keeps.
    pub max_write_cache: Option<Bytes>,
    /// Trim freed write blocks. Default false, as Aerospike's storage engine never trims what it
    /// frees (a `true` is a what-if).
    #[serde(default)]
    pub trim: bool,
}

/// `[phase.kv.lsm]`: an LSM store (wafsim_apps::lsm) on the file system of `filesystem`.
///
/// ```toml
/// [phase.kv.lsm]
/// compaction = "leveled"      # RocksDB-like, or "universal"; "size-tiered" (default) is Cassandra-like
/// memtable = "64MiB"
/// staging_namespace = "fast"  # upper levels and the log on this namespace (HSE-like media classes)
/// staging_levels = 1
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LsmSpec {
    /// "size-tiered" (default, Cassandra-like), "leveled" or "universal" (RocksDB-like, with
    /// RocksDB 7.8's defaults).
    pub compaction: Option<Compaction>,
    /// Memtable flush size (default: the engine's).
    pub memtable: Option<Bytes>,
    /// A second namespace for the log and the upper levels (a conventional file system).
    pub staging_namespace: Option<String>,
    /// Levels (size-tiered: tiers) on the staging namespace (default 1).
    pub staging_levels: Option<u32>,
    /// The directories of the table files: `"directory"` (default: one, as the real stores) or
    /// `"job"` (one per flush or compaction job).
    pub file_groups: Option<FileGroups>,
    /// db_bench's `waitforcompaction` after the load and at the end (default false): the
    /// store flushes its memtable after the load's last request and runs every compaction due
    /// before the run starts, and at the end runs them all again (without the flush), as two
    /// db_bench runs with waitforcompaction each do; a window from the run starts after the
    /// first wait. Needs a workload that says where its load ends (YCSB); otherwise only the
    /// end waits.
    pub wait_for_compaction: Option<bool>,
    /// RocksDB's write controller with a clock (leveled or universal; default off: background jobs
    /// keep pace with the clients by the byte-credit pace of docs/model.md).
    pub write_controller: Option<WriteControllerSpec>,
}

/// `[phase.kv.lsm.write_controller]`: a clock for a leveled or universal LSM store. Background jobs move
/// at `background_bandwidth` per lane; compactions are picked when a lane frees, from the tree
/// as it is then; client writes go at `client_rate` and are slowed (to `delayed_write_rate`,
/// adapted at each install) or stopped by RocksDB's write-stall triggers. Byte limits scale
/// with the run as the store's other sizes; rates do not (every time then scales with the
/// run alike).
///
/// ```toml
/// [phase.kv.lsm.write_controller]
/// background_bandwidth = "150MB/s"  # a flush or compaction thread on this machine
/// delayed_write_rate = "8MiB/s"     # db_bench's default (RocksDB's: 16MiB/s)
/// # client_rate = "20MB/s"          # default: clients as fast as they can (db_bench fills)
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteControllerSpec {
    /// Read and write bytes per second of one flush or compaction job (required: a property
    /// of the machine RocksDB runs on).
    pub background_bandwidth: Rate,
    /// Client log bytes per second when not slowed (default: as fast as they can).
    pub client_rate: Option<Rate>,
    /// `delayed_write_rate` (default 16MiB/s, RocksDB's; db_bench's is 8MiB/s).
    pub delayed_write_rate: Option<Rate>,
    /// `level0_slowdown_writes_trigger` (default 20).
    pub level0_slowdown_writes_trigger: Option<u32>,
    /// `level0_stop_writes_trigger` (default 36).
    pub level0_stop_writes_trigger: Option<u32>,
    /// `max_write_buffer_number` (default 2).
    pub max_write_buffer_number: Option<u32>,
    /// `soft_pending_compaction_bytes_limit` (default 64GiB, scaled with the run).
    pub soft_pending_compaction_bytes: Option<Bytes>,
    /// `hard_pending_compaction_bytes_limit` (default 256GiB, scaled with the run).
    pub hard_pending_compaction_bytes: Option<Bytes>,
}

/// `[phase.kv.flash-cache]`: a CacheLib-like hybrid cache (wafsim_apps::flashcache) under
/// CacheBench-like requests.
///
/// ```toml
/// [phase.kv.flash-cache]
/// cache_size = "50%"          # of the namespace; the rest stays unused
/// bighash_pct = 4             # small-object engine's share of the cache
/// footprint = 2.0             # key population's objects / cache size
/// zipf = 1.0                  # key popularity
/// region_eviction = "fifo"    # or "lru"
/// dram = "4.5%"               # DRAM cache in front, share of the flash cache or bytes
/// reinsertion_hits = 1        # Navy hits reinsertion threshold (0 = off)
/// admission_retention = 7200  # seconds (RetentionAP; 0 = admit all)
/// requests = "kvcache"        # or "flat-kvcache"; trace = "kv.csv" replays a CacheBench trace
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlashCacheSpec {
    /// Trim evicted regions. Default false, as CacheLib's Navy never trims what it frees (a
    /// `true` is a what-if).
    #[serde(default)]
    pub trim: bool,
    /// The share of the namespace the cache uses ("50%", "0.5" or bytes; default the whole
    /// namespace).
    pub cache_size: Option<Share>,
    /// Percent of the cache for the small-object engine (default 4).
    pub bighash_pct: Option<u32>,
    /// Engines on placement handles 0 and 1 (default: when the drive has FDP on and the
    /// namespace two placement handles).
    pub placement: Option<bool>,
    /// The key population's objects add up to this multiple of the cache (default 2).
    pub footprint: Option<f64>,
    /// Zipf exponent of key popularity (default 1.0; 0 = uniform).
    pub zipf: Option<f64>,
    /// BlockCache's region eviction, "fifo" (default: the published CacheLib FDP setup's) or
    /// "lru" (Navy's own default, a what-if here).
    pub region_eviction: Option<RegionOrder>,
    /// The DRAM cache in front of flash, a share of the flash cache ("4.5%", the default being
    /// the published setup's 43,000 MiB over 952,320 MiB) or bytes ("40GB"); "0" for none (every
    /// set then goes straight to flash). Example: `dram = "2.1%"`.
    pub dram: Option<Share>,
    /// Reinsert an evicted BlockCache item looked up at least this many times since it was
    /// written (CacheBench `navyHitsReinsertionThreshold`; default 1, the published setup's; 0 =
    /// off). Example: `reinsertion_hits = 0`.
    pub reinsertion_hits: Option<u32>,
    /// Admit a DRAM-evicted item to flash only if it was accessed within this many seconds
    /// (CacheBench `nvmAdmissionRetentionTimeThreshold`; default 7200, the published setup's; 0
    /// admits all). Example: `admission_retention = 0`.
    pub admission_retention: Option<u32>,
    /// Full-scale request rate (requests per second of simulated time) that the DRAM LRU's
    /// refresh and the admission threshold are measured against; a scaled run scales it with
    /// the run, so times keep their ratio to the cache's turnover (default 550000, the published
    /// `opRatePerSec`). Example: `ops_per_sec = 100000`.
    pub ops_per_sec: Option<f64>,
    /// The request generator, "kvcache" (default: shaped like the kvcache_202210 traces) or
    /// "flat-kvcache" (CacheBench's flat_kvcache_reg sizes, look-aside gets only). Example:
    /// `requests = "flat-kvcache"`.
    pub requests: Option<CacheRequests>,
    /// Replay this CacheBench kvcache CSV trace (a path relative to the experiment file, as
    /// `[[phase.trace]]` files) instead of generating requests; it ends the phase when it ends.
    /// Example: `trace = "traces/kvcache_traces_1.csv"`.
    pub trace: Option<String>,
    /// A get that misses everywhere inserts the object (CacheBench `enableLookaside`; default
    /// off, CacheBench's, except with `requests = "flat-kvcache"`). Example: `lookaside = true`.
    pub lookaside: Option<bool>,
}

/// `[phase.kv.wiredtiger]`: MongoDB's storage engine (wafsim_apps::wiredtiger) on the file
/// system of `filesystem`.
///
/// ```toml
/// [phase.kv.wiredtiger]
/// wt_cache = "5%"
/// compression = 0.5
/// journal = true
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WiredTigerSpec {
    /// The engine's cache, bytes or a share of the namespace, e.g. `"5%"` (the default: MongoDB
    /// sizes it from the host's RAM, an unknown for a published run; a share keeps its ratio to
    /// the data at every scale).
    pub wt_cache: Option<Share>,
    /// Compressed over raw size of collection pages and journal records (snappy on BSON;
    /// default 0.5, an assumption).
    pub compression: Option<f64>,
    /// The journal on (MongoDB's `storage.journal.enabled`, default true). A standalone server
    /// journals every write; a replica set journals only its oplog.
    pub journal: Option<bool>,
    /// Run as a replica set, with an oplog that every write appends to (default: true for
    /// TPC-C, whose py-tpcc driver uses multi-document transactions, which need a replica set;
    /// false for YCSB, run against a standalone server).
    pub replica_set: Option<bool>,
    /// The oplog's cap, bytes or a share of the namespace, e.g. `"5%"` (default MongoDB's: 5%
    /// of the file system's free space, at least 990 MB and at most 50 GB, both limits scaled
    /// with the run).
    pub oplog_size: Option<Share>,
}

/// `[phase.kv.hse]`: HSE's KVDB (wafsim_apps::hse) on mpool media classes.
///
/// ```toml
/// [phase.kv.hse]
/// staging_namespace = "staging"
/// mclass_policy = "staging_max_capacity"
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HseSpec {
    /// The staging media class's namespace (default: none, capacity only).
    pub staging_namespace: Option<String>,
    /// The media-class policy, "capacity_only" (HSE 1.9's default), "staging_only",
    /// "staging_max_capacity" (Micron's MongoDB media-class configurations) or
    /// "staging_min_capacity".
    #[serde(default, deserialize_with = "parsed_some")]
    pub mclass_policy: Option<MclassPolicy>,
}
