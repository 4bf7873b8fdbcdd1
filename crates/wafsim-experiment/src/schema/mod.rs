//! The experiment document: the serde types of devices, namespaces, phases and their sources,
//! with accessors that read single fields (sizes, patterns, choices). Turning them into core
//! configurations is the plan's job (`crate::plan`). One file per part of the document: here the
//! choices, the document itself and its history, unknowns, host layer and variants; `device`
//! (`[device]`, `[[namespace]]`), `phase` (`[[phase]]` and its workloads, fio jobs and traces),
//! `files` (`[[phase.files]]` and the file-system sub-table `fs`), `kv` (`[[phase.kv]]` and one
//! sub-table per store), `timing` (`[timing]`), and `moved` (keys that moved into sub-tables).
//!
//! An experiment file is a device, namespaces, workloads and `[[variant]]` overrides:
//!
//! ```toml
//! name = "two tenants"
//! [device]
//! capacity = "8GiB"
//! over_provisioning = 0.07
//! erase_unit = "32MiB"
//! [device.fdp]
//! enabled = false
//! ruhs = 2
//! [[namespace]]
//! name = "a"
//! size = "4GiB"
//! placement_handles = [0]
//! [[namespace]]
//! name = "b"
//! size = "4GiB"
//! placement_handles = [1]
//! [[workload]]
//! namespace = "a"
//! pattern = "sequential"
//! bs = "128KiB"
//! amount = "4x"
//! [[workload]]
//! namespace = "b"
//! pattern = "random"
//! bs = "4KiB"
//! amount = "4x"
//! [[variant]]
//! name = "conventional"
//! [[variant]]
//! name = "fdp"
//! device.fdp.enabled = true
//! ```
//!
//! A variant's keys are deep-merged over the base document (tables merge, anything else
//! replaces), so any setting can differ between variants.

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use wafsim_core::{GcPolicy, RuhType};
use wafsim_workload::synthetic::{Distribution, Pattern};

/// A choice of the experiment file: a closed set of words, each a variant of an enum. Gives the
/// enum, `WORDS`, `word()`, `FromStr` (any other word is refused with the choice's message, in
/// which `{v:?}` is the word given), `Deserialize` from a string (so the file is refused when it
/// is parsed, with the same message) and `Display`/`Serialize` back to the word. A variant may
/// take further spellings after `|`; it is shown by its first.
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident, $error:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal $(| $alias:literal)*, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// The words of the experiment file, one per choice.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// Every choice, in the order of `WORDS`.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The choice's word in the experiment file.
            pub fn word(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s {
                    $( $word $(| $alias)* => Ok($name::$variant), )+
                    v => Err(format!($error, v = v)),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.word())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                $crate::schema::parsed(d)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.word())
            }
        }
    };
}

mod device;
mod files;
mod kv;
pub mod moved;
mod phase;
mod quantity;
mod timing;

pub use files::{FileGroupSpec, FileSize, FilesSpec, FsSpec};
pub use device::*;
pub use phase::*;
pub use timing::*;
pub use quantity::*;
pub use kv::{FlashCacheSpec, HseSpec, KvSpec, LogStructuredSpec, LsmSpec, WiredTigerSpec, WriteControllerSpec};

choice! {
    /// `requests` of `[phase.kv.flash-cache]`: the request generator.
    #[derive(Default)]
    pub enum CacheRequests, "requests {v:?}: expected \"kvcache\" (shaped like the kvcache_202210 traces) or \"flat-kvcache\" (CacheBench's flat_kvcache_reg)" {
        /// Shaped like the kvcache_202210 traces (the default).
        #[default]
        Kvcache = "kvcache",
        /// CacheBench's flat_kvcache_reg sizes, look-aside gets only.
        FlatKvcache = "flat-kvcache",
    }
}

choice! {
    /// `layout`: where the namespaces live.
    #[derive(Default)]
    pub enum Layout, "layout {v:?}: expected \"shared\" or \"dedicated\"" {
        /// All namespaces on the one `[device]` (the default).
        #[default]
        Shared = "shared",
        /// Each namespace on a drive of its own.
        Dedicated = "dedicated",
    }
}

choice! {
    /// `[timing] datapath_arbitration`: how the controller's datapath orders transfers.
    #[derive(Default)]
    pub enum DatapathArbitration, "timing.datapath_arbitration {v:?}: expected \"host-reads-first\" or \"fcfs\"" {
        /// Host reads go ahead of program data and GC transfers (the default).
        #[default]
        HostReadsFirst = "host-reads-first",
        /// First come, first served.
        Fcfs = "fcfs",
    }
}

choice! {
    /// `interleave`: how the untimed model orders the I/Os of a phase's concurrent sources.
    #[derive(Default)]
    pub enum InterleaveKind, "interleave = {v:?}: expected \"round-robin\" or \"random\"" {
        /// Strict weighted turns (the default).
        #[default]
        RoundRobin = "round-robin",
        /// Each I/O's source drawn at random by weight (Poisson arrivals), seeded.
        Random = "random",
    }
}

choice! {
    /// `device.kind`: what kind of drive a `[device]` describes.
    pub enum DriveKind, "device.kind {v:?}: expected \"flash\", \"zns\" or \"smr\"" {
        /// A flash SSD with a device FTL (conventional, streams or FDP).
        Flash = "flash",
        /// A zoned namespace (ZNS) SSD: no device GC.
        Zns = "zns",
        /// A host-managed SMR disk.
        Smr = "smr",
    }
}

choice! {
    /// `host.layer`: the host block layer between the namespace and the drives.
    pub enum HostLayer, "host.layer {v:?}: expected \"dm-zoned\", \"tiering\" or \"none\"" {
        /// Linux dm-zoned over SMR disks, with a cache device or the disks' conventional zones.
        DmZoned = "dm-zoned",
        /// A hot (staging) flash drive in front of the `[device]` (capacity) drive.
        Tiering = "tiering",
        /// No layer: a variant without the experiment's layer.
        None = "none",
    }
}

choice! {
    /// `pattern` of a `[[workload]]`: where its writes go.
    pub enum PatternKind, "pattern {v:?}: expected \"sequential\" or \"random\"" {
        /// Block after block from offset 0, wrapping at the end of the namespace ("seq" too).
        Sequential = "sequential" | "seq",
        /// Blocks drawn by the workload's `distribution` ("rand" too).
        Random = "random" | "rand",
    }
}

choice! {
    /// `filesystem` of `[[phase.files]]` and of an lsm store: the file system made on the
    /// namespace.
    #[derive(Default)]
    pub enum FsKind, "filesystem {v:?}: expected \"conventional\", \"zoned\" or \"btrfs\"" {
        /// Update in place, on any drive (a store's default).
        #[default]
        Conventional = "conventional",
        /// Log-structured with host GC, on a zoned drive.
        Zoned = "zoned",
        /// Btrfs-like copy-on-write (wafsim_host::fs::btrfs): block groups, commits every 30 s,
        /// DUP metadata; zoned mode on a zoned namespace.
        Btrfs = "btrfs",
    }
}

choice! {
    /// `btrfs_discard`: how a Btrfs-like file system discards freed space on a conventional
    /// namespace (its mount option).
    #[derive(Default)]
    pub enum BtrfsDiscardMode, "btrfs_discard {v:?}: expected \"async\" (Linux 6.2+ default), \"sync\" (mount -o discard) or \"none\" (nodiscard; the default before 6.2)" {
        /// `discard=async`, the default from Linux 6.2.
        #[default]
        Async = "async",
        /// `discard=sync` (`-o discard`).
        Sync = "sync",
        /// `nodiscard`, the default before Linux 6.2.
        None = "none",
    }
}

choice! {
    /// `zone_placement`: where a zoned Btrfs-like file system puts file data.
    #[derive(Default)]
    pub enum ZonePlacement, "zone_placement {v:?}: expected \"upstream\" (Linux: files interleave in the open zone) or \"directory\" (the section 5 prototype: each directory its own zones)" {
        /// Upstream Linux: no per-file placement.
        #[default]
        Upstream = "upstream",
        /// Each directory (file group) in zones of its own.
        Directory = "directory",
    }
}

choice! {
    /// `victim`: a zoned file system's GC victim policy.
    #[derive(Default)]
    pub enum Victim, "victim {v:?}: expected \"greedy\" or \"cost-benefit\"" {
        /// Fewest live blocks first (the default).
        #[default]
        Greedy = "greedy",
        /// Best (1-u)*age/(1+u) first (LFS cost-benefit).
        CostBenefit = "cost-benefit",
    }
}

choice! {
    /// `delete` of a `[[phase.files.group]]`: which live file a new one replaces.
    #[derive(Default)]
    pub enum FileDelete, "delete {v:?}: expected \"oldest\" or \"random\"" {
        /// The oldest (first completed) file: files live for a fixed number of successors (the
        /// default).
        #[default]
        Oldest = "oldest",
        /// A uniformly random live file: lifetimes spread out.
        Random = "random",
    }
}

choice! {
    /// `store` of `[[phase.kv]]`: the key-value store on the namespace.
    #[derive(Default)]
    pub enum KvStore, "store {v:?}: expected \"log-structured\", \"lsm\", \"flash-cache\", \"wiredtiger\" or \"hse\"" {
        /// Aerospike-like: write blocks on the raw namespace, defrag below the low-water mark
        /// (the default).
        #[default]
        LogStructured = "log-structured",
        /// An LSM tree on a file system on the namespace.
        Lsm = "lsm",
        /// A CacheLib-like flash cache on the raw namespace.
        FlashCache = "flash-cache",
        /// A WiredTiger-like engine (MongoDB's default) on a file system on the namespace.
        WiredTiger = "wiredtiger",
        /// An HSE 1.x-like engine (MongoDB on HSE) on mpool over the raw namespace, or on a
        /// zoned log-structured file system over a zoned one; a staging namespace optional.
        Hse = "hse",
    }
}

choice! {
    /// `workload` of `[[phase.kv]]`: the request generator driving the store.
    #[derive(Default)]
    pub enum KvWorkload, "workload {v:?}: expected \"ycsb\" or \"tpcc\" (\"cachebench\" with store = \"flash-cache\")" {
        /// A YCSB core workload (the default).
        #[default]
        Ycsb = "ycsb",
        /// A TPC-C-like mix: load, then transactions.
        Tpcc = "tpcc",
        /// CacheBench-like requests (what a flash cache runs whatever the workload).
        Cachebench = "cachebench",
    }
}

choice! {
    /// `phases` of `[[phase.kv]]`: which YCSB phases the client runs.
    #[derive(Default)]
    pub enum KvPhases, "phases {v:?}: expected \"load\", \"run\" or \"load+run\"" {
        /// Insert the records only.
        Load = "load",
        /// Run the operations only (tpcc: skip the initial population).
        Run = "run",
        /// Load, then run (the default).
        #[default]
        LoadAndRun = "load+run",
    }
}

choice! {
    /// `compaction` of an lsm store: the engine's compaction style and defaults.
    #[derive(Default)]
    pub enum Compaction, "compaction {v:?}: expected \"size-tiered\" (Cassandra-like), \"leveled\" or \"universal\" (RocksDB-like)" {
        /// Cassandra-like size-tiered compaction (the default).
        #[default]
        SizeTiered = "size-tiered",
        /// RocksDB-like leveled compaction.
        Leveled = "leveled",
        /// RocksDB's universal compaction (its defaults: size ratio 1, size amplification 200%).
        Universal = "universal",
    }
}

choice! {
    /// `file_groups` of an lsm store: which directory (group) each table file goes in, which
    /// a zone-aware file system places by.
    #[derive(Default)]
    pub enum FileGroups, "file_groups {v:?}: expected \"directory\" (one data directory, as Cassandra and RocksDB keep their tables) or \"job\" (each flush or compaction job's files in a directory of their own)" {
        /// One data directory for every table, the log in another (the real stores; the default).
        #[default]
        Directory = "directory",
        /// A directory per flush or compaction job (files that die together).
        Job = "job",
    }
}

choice! {
    /// `region_eviction` of a flash cache: BlockCache's region eviction.
    #[derive(Default)]
    pub enum RegionOrder, "region_eviction {v:?}: expected \"lru\" or \"fifo\"" {
        /// Least recently used region first (Navy's default).
        #[default]
        Lru = "lru",
        /// Oldest written region first.
        Fifo = "fifo",
    }
}

choice! {
    /// `[history] kind`: what the drive held before the experiment's first phase.
    #[derive(Default)]
    pub enum HistoryKind, "history kind {v:?}: expected \"fresh\", \"sequential\", \"random\" or \"image\"" {
        /// Fresh out of the box: every LBA unmapped (as after a whole-drive trim).
        Fresh = "fresh",
        /// Every LBA of every conventional namespace written once, sequentially (the default).
        #[default]
        Sequential = "sequential",
        /// A sequential fill, then uniform random writes of `bs` for `amount`: an aged drive.
        Random = "random",
        /// The state saved in a drive image (`wafsim run --save-image DIR`).
        Image = "image",
    }
}

/// `[history]`: the drive's state before the first phase, reached without measuring. For a
/// history made of the experiment's own workloads (the same application stack until steady),
/// run them in unmeasured phases, save the drive with `wafsim run --save-image DIR`, and start
/// later experiments from the image.
///
/// ```toml
/// [history]
/// kind = "random"   # fresh, sequential (default), random, image
/// bs = "4KiB"       # random: write size
/// amount = "2x"     # random: multiple of the capacity, or bytes
/// # image = "aged/default.img"   # image: the file, relative to the experiment file
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistorySpec {
    /// What kind of history (default "sequential").
    #[serde(default)]
    pub kind: HistoryKind,
    /// `random`: write size (default "4KiB").
    pub bs: Option<Bytes>,
    /// `random`: how much to write, a multiple of the drive's conventional capacity ("2x",
    /// the default "1x") or bytes.
    pub amount: Option<Amount>,
    /// `image`: the image file, relative to the experiment file. A variant with several drives
    /// reads one file per drive, `NAME.d0.EXT`, `NAME.d1.EXT`, ... (as `--save-image` writes).
    pub image: Option<String>,
}

impl HistorySpec {
    /// The history in words, as results print it.
    pub fn describe(&self) -> String {
        match self.kind {
            HistoryKind::Fresh => "fresh (every LBA unmapped)".into(),
            HistoryKind::Sequential => "sequential fill".into(),
            HistoryKind::Random => format!("sequential fill, then random {} writes of {}", self.bs.as_ref().map_or("4KiB", |b| b.text()), self.amount.as_ref().map_or("1x", |a| a.text())),
            HistoryKind::Image => format!("image {}", self.image.as_deref().unwrap_or("")),
        }
    }
}

/// `[[unknown]]`: a fact the experiment's source does not give (how the drive was prepared, a
/// client rate, a buffer size). The experiment as written is the central value (`central` says
/// what it is and why); each `[[unknown.case]]` overrides keys of every variant (dotted paths
/// into the variant's document, as in sweep points) to another value of a documented range. The
/// spread of the results over the cases is reported beside the central result.
///
/// ```toml
/// [[unknown]]
/// name = "drive preparation"
/// why = "The publication does not say what the drive held before the run."
/// central = "mkfs trims a sequentially filled drive (mkfs.btrfs's default)"
/// [[unknown.case]]
/// label = "aged by random writes, no mkfs trim"
/// set = { "history.kind" = "random", "history.amount" = "1x", "phase.0.kv.0.fs.mkfs_trim" = false }
/// variants = ["ssd-fs-no-discard"]   # default: every variant
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnknownSpec {
    /// What is unknown, in a few words.
    pub name: String,
    /// Why it is unknown and where the range comes from.
    #[serde(default)]
    pub why: String,
    /// What the experiment as written assumes.
    pub central: String,
    /// `[[unknown.case]]`: the other values of the range.
    #[serde(default)]
    pub case: Vec<UnknownCase>,
}

/// `[[unknown.case]]`: one value of an unknown other than the central one.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnknownCase {
    /// What this case assumes.
    pub label: String,
    /// The keys it overrides: dotted paths into each variant's document.
    pub set: toml::Table,
    /// The variants it applies to (default: all); others report the central value only.
    pub variants: Option<Vec<String>>,
}

impl UnknownCase {
    /// Whether the case runs for the variant named `variant`.
    pub fn applies_to(&self, variant: &str) -> bool {
        self.variants.as_ref().is_none_or(|names| names.iter().any(|n| n == variant))
    }
}

/// Whether a file system of `kind` made with `mkfs_trim` trims its whole namespace at mkfs: a
/// conventional one unless told not to (mkfs.ext4/xfs/btrfs's default); a zoned one resets its
/// zones instead.
pub fn mkfs_trims(kind: FsKind, mkfs_trim: Option<bool>) -> bool {
    matches!(kind, FsKind::Conventional | FsKind::Btrfs) && mkfs_trim != Some(false)
}

choice! {
    /// `format` of a `[[phase.trace]]`: the trace file's format.
    pub enum TraceFileFormat, "trace format {v:?}, expected \"iolog\", \"blkparse\" or \"msr\"" {
        /// fio write_iolog v2/v3.
        Iolog = "iolog",
        /// blkparse text output.
        Blkparse = "blkparse",
        /// MSR Cambridge CSV.
        Msr = "msr",
    }
}

choice! {
    /// `offsets` of a `[[phase.trace]]`: what to do with offsets beyond the namespace.
    #[derive(Default)]
    pub enum Offsets, "offsets = {v:?}, expected \"wrap\" or \"error\"" {
        /// Modulo the namespace, aligned to the mapping unit (the default).
        #[default]
        Wrap = "wrap",
        /// Stop the run with an error naming the trace line.
        Error = "error",
    }
}

choice! {
    /// `timing.hdd.scheduling`: the order a disk takes its queued commands in.
    #[derive(Default)]
    pub enum HddScheduling, "timing.hdd.scheduling {v:?}: expected \"sptf\" or \"fifo\"" {
        /// Shortest positioning time first (the default).
        #[default]
        Sptf = "sptf",
        /// Arrival order.
        Fifo = "fifo",
    }
}

/// `[host]`: a host block layer, `layer` beside its sub-table. `layer = "dm-zoned"`: Linux
/// dm-zoned over copies of the experiment's SMR drive (`device.kind = "smr"`), see
/// [`DmZonedSpec`]; `layer = "tiering"`: hot/cold tiering over the experiment's drive (cold) and
/// a hot drive, see [`TieringSpec`]; `"none"`: a variant without the experiment's layer (whose
/// sub-tables it leaves without effect, as its notes say). The experiment's one namespace is the
/// layer's volume (omit its size).
///
/// ```toml
/// [host]
/// layer = "dm-zoned"
/// [host.dm-zoned]
/// disks = 4
/// cache_size = "1TB"
/// ```
///
/// The keys of a sub-table given flat in `[host]` (as before the sub-tables) are still read,
/// with a note naming their place.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// "dm-zoned", "tiering" or "none" (a variant without the experiment's layer).
    pub layer: HostLayer,
    /// `[host.dm-zoned]`.
    #[serde(default, rename = "dm-zoned")]
    pub dm_zoned: DmZonedSpec,
    /// `[host.tiering]`.
    #[serde(default)]
    pub tiering: TieringSpec,
}

/// `[host.dm-zoned]`: Linux dm-zoned over `disks` copies of the experiment's SMR drive, with a
/// regular cache device of `cache_size` in front (multi-device mode; its own FTL is not
/// modelled) or, without one (`cache_size` absent or "none"), the disks' conventional zones as
/// cache (single-device mode).
///
/// ```toml
/// [host.dm-zoned]
/// disks = 4
/// cache_size = "1TB"
/// reserved_zones = 16     # dmzadm --seq (default 16)
/// disk_zones = 1024       # optional: use only each disk's first 1024 zones (see below)
/// ```
///
/// `disk_zones` builds the target over the first zones of each disk only (as if the disks were
/// that small), while a timed run keeps the full disk's mechanics: those zones sit at the outer
/// diameter where dm-zoned allocates first on an empty disk. It keeps a timed run at full zone
/// size affordable (a full 14 TB disk has 52,156 zones).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmZonedSpec {
    /// Number of SMR disks, copies of the experiment's drive (default 1).
    #[serde(default = "one_u32")]
    pub disks: u32,
    /// Size of the regular cache device, e.g. "1TB"; absent or "none": the disks' conventional
    /// zones are the cache (single-device mode).
    pub cache_size: Option<BytesOrNone>,
    /// Sequential zones reserved for reclaim (dmzadm `--seq`, default 16).
    #[serde(default = "sixteen")]
    pub reserved_zones: u32,
    /// Zones of each disk the target uses, from zone 0 (default: all).
    pub disk_zones: Option<u32>,
}

impl Default for DmZonedSpec {
    fn default() -> Self {
        DmZonedSpec { disks: one_u32(), cache_size: None, reserved_zones: sixteen(), disk_zones: None }
    }
}

/// `[host.tiering]`: the hot (staging) drive in front of the experiment's `[device]`, the cold
/// (capacity) drive.
///
/// ```toml
/// [host.tiering]
/// hot = "enterprise-tlc-1.92tb"
/// extent = "1MiB"
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TieringSpec {
    /// The hot drive, a preset name (e.g. "enterprise-tlc-1.92tb").
    pub hot: Option<String>,
    /// Extent size (default 1 MiB).
    pub extent: Option<Bytes>,
}

impl HostLayer {
    /// The keys of this layer's sub-table (`[host.WORD]`; none for "none").
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            HostLayer::DmZoned => moved::struct_keys::<DmZonedSpec>(),
            HostLayer::Tiering => moved::struct_keys::<TieringSpec>(),
            HostLayer::None => &[],
        }
    }
}

fn one_u32() -> u32 {
    1
}

fn sixteen() -> u32 {
    16
}

/// The experiment document after variant merging.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// Experiment name (for reports).
    #[serde(default)]
    pub name: String,
    /// Free text describing the experiment.
    #[serde(default)]
    pub description: String,
    /// Base seed of the run's random streams (default 1); sources and the device derive theirs
    /// from it.
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// Sequentially fill every LBA of every namespace before the first phase (default true);
    /// `false` is `history.kind = "fresh"`. Give this or `[history]`, not both.
    #[serde(default)]
    pub precondition: Option<bool>,
    /// `[history]`: what the drive held before the first phase (see [`HistorySpec`]).
    #[serde(default)]
    pub history: Option<HistorySpec>,
    /// `[[unknown]]`: facts the experiment's source does not give, each with the cases that
    /// bound it (see [`UnknownSpec`]); `wafsim run --spread` and the catalog run them.
    #[serde(default)]
    pub unknown: Vec<UnknownSpec>,
    /// "shared" (all namespaces on one device, default) or "dedicated" (each namespace on its
    /// own device of the namespace's size with the same OP and erase unit).
    #[serde(default)]
    pub layout: Layout,
    /// How the untimed model orders the I/Os of concurrent sources: "round-robin" (strict
    /// weighted turns, the default) or "random" (each I/O's source drawn by weight, seeded:
    /// Poisson arrivals). Timed runs interleave by simulated time instead.
    #[serde(default)]
    pub interleave: InterleaveKind,
    /// `[fio_env]`: `${NAME}` values for every fio job file of the experiment, below a
    /// `[[phase.fio]]` entry's own `env` and above the process environment. A variant or an
    /// unknown's case changes one with a dotted key, e.g. `fio_env.PLI = "0"`.
    #[serde(default)]
    pub fio_env: std::collections::BTreeMap<String, String>,
    /// The scale a run uses when `--scale` is not given (and the catalog's), instead of the
    /// largest power of ten that brings the drive to 10 GB: for an experiment whose answer
    /// depends on what scaling changes (the mapping units per erase unit), e.g.
    /// `default_scale = 1.0`.
    #[serde(default)]
    pub default_scale: Option<f64>,
    /// `[device]`: the drive.
    pub device: DeviceSpec,
    /// `[[namespace]]`: the namespaces (of the one drive, or each on its own with `layout =
    /// "dedicated"`).
    #[serde(default)]
    pub namespace: Vec<NamespaceSpec>,
    /// Workloads of a single measured phase (shorthand for one `[[phase]]`).
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    /// `[[phase]]`: the phases, run one after another.
    #[serde(default)]
    pub phase: Vec<PhaseSpec>,
    /// `[timing]`: the timing model, off unless `enabled`.
    #[serde(default)]
    pub timing: Option<TimingSpec>,
    /// A host block layer between the namespace and the drives (`[host]`).
    pub host: Option<HostSpec>,
    /// Published figures, for docs/experiments.md (free-form; not used by the simulation).
    #[serde(default)]
    pub published: Option<toml::Table>,
    /// Only in the base document: the variants.
    #[serde(default)]
    pub variant: Vec<toml::Table>,
    /// Directory that relative file names (fio job files, traces) are resolved against.
    #[serde(skip)]
    pub base_dir: std::path::PathBuf,
    /// Capacity scale the spec was scaled to (1 = full scale); see `plan/scale.rs`.
    #[serde(skip, default = "one_f64")]
    pub scale: f64,
    /// Name of the variant this document was resolved for.
    #[serde(skip)]
    pub variant_name: String,
    /// Only one variant, namespace and job instance could write each fio `write_iolog` file
    /// (then the file name is used as given).
    #[serde(skip)]
    pub single_writer: bool,
    /// OP of the drive as described, before scaling rounded its capacities (None: not scaled).
    #[serde(skip)]
    pub full_scale_op: Option<f64>,
    /// How much the erase unit actually shrank when scaling (rounding makes it differ from
    /// `scale`); scales the erase time.
    #[serde(skip, default = "one_f64")]
    pub erase_scale: f64,
    /// Settings the variant gives that have no effect on it (a key of another host layer, an
    /// erase unit overriding the geometry's superblock), found when it was resolved, before
    /// scaling; a run reports them with its warnings (see `ExperimentSpec::ignored_settings`).
    #[serde(skip)]
    pub notes: Vec<String>,
}

fn one_f64() -> f64 {
    1.0
}

/// A default quantity of the document, written as the file would write it.
pub(crate) fn default_of<G: Grammar>(text: &str) -> Quantity<G> {
    text.parse().expect("a default the grammar reads")
}

fn default_mapping_unit() -> Bytes {
    default_of("4KiB")
}

fn greedy() -> GcPolicy {
    GcPolicy::Greedy
}

/// A quantity or choice given as text, parsed into its type when the document is read (by its
/// `FromStr`, whose error says what was expected), so a wrong value is refused with the file's
/// line and column, not later where it is used.
pub(crate) fn parsed<'de, D: serde::Deserializer<'de>, T: std::str::FromStr>(d: D) -> std::result::Result<T, D::Error>
where
    T::Err: std::fmt::Display,
{
    String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
}

/// [`parsed`] for an optional key (absent: `#[serde(default)]`'s None).
pub(crate) fn parsed_some<'de, D: serde::Deserializer<'de>, T: std::str::FromStr>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    T::Err: std::fmt::Display,
{
    parsed(d).map(Some)
}

fn default_gc_free_min() -> u32 {
    2
}

fn one() -> u32 {
    1
}

fn one_u64() -> u64 {
    1
}

fn eight() -> u32 {
    8
}

fn yes() -> bool {
    true
}

/// A named variant, fully resolved.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Variant name: the `name` of its `[[variant]]`, or "default" when the experiment has none.
    pub name: String,
    /// The experiment document with the variant's overrides merged in.
    pub spec: ExperimentSpec,
    /// The same document as TOML, before presets are expanded: what the cases of an unknown
    /// override (`load::variant_with`).
    pub doc: toml::Table,
}

/// The value at dotted `path` of `v` (a number indexes an array).
pub fn lookup<'a>(v: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    let mut cur = v;
    for seg in path.split('.') {
        cur = match cur {
            toml::Value::Table(t) => t.get(seg)?,
            toml::Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Deep-merge `over` into `base`: tables merge key by key, other values replace.
pub fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

impl ExperimentSpec {
    /// At most one fio source runs on at most one namespace (see `single_writer`).
    pub(crate) fn single_fio_writer(&self) -> bool {
        let instances: usize = self.phase.iter().flat_map(|p| p.fio.iter()).map(|f| f.namespace_list().len()).sum();
        instances <= 1
    }
}

impl ExperimentSpec {
    /// The interleave of a phase (its own, else the experiment's).
    pub fn interleave_of(&self, p: &PhaseSpec) -> InterleaveKind {
        p.interleave.unwrap_or(self.interleave)
    }
}

impl ExperimentSpec {
    /// The phases to run: the `[[phase]]`s, or one measured phase of the top-level workloads.
    pub fn phases(&self) -> Vec<PhaseSpec> {
        if self.phase.is_empty() {
            vec![PhaseSpec { name: "measure".into(), measure: true, workload: self.workload.clone(), ..PhaseSpec::default() }]
        } else {
            self.phase.clone()
        }
    }
}

impl ExperimentSpec {
    /// An experiment of one drive and one namespace and nothing else, with every other key at
    /// its default (a preset's drive, sized and scaled as the plan needs it).
    pub fn of_drive(device: DeviceSpec, namespace: NamespaceSpec) -> ExperimentSpec {
        ExperimentSpec {
            name: namespace.name.clone(),
            description: String::new(),
            seed: one_u64(),
            precondition: None,
            history: None,
            unknown: Vec::new(),
            layout: Layout::default(),
            interleave: InterleaveKind::default(),
            fio_env: Default::default(),
            default_scale: None,
            device,
            namespace: vec![namespace],
            workload: Vec::new(),
            phase: Vec::new(),
            timing: None,
            host: None,
            published: None,
            variant: Vec::new(),
            base_dir: std::path::PathBuf::new(),
            scale: one_f64(),
            variant_name: "default".into(),
            single_writer: true,
            full_scale_op: None,
            erase_scale: one_f64(),
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word of `T` reads back as itself, and a word outside the set is refused with a
    /// message that quotes it and every word of the set.
    fn words_round_trip<T: std::str::FromStr<Err = String> + std::fmt::Display>(words: &[&str]) {
        for w in words {
            assert_eq!(w.parse::<T>().unwrap().to_string(), *w);
        }
        let e = "bogus".parse::<T>().err().unwrap();
        assert!(e.contains("\"bogus\""), "{e}");
        for w in words {
            assert!(e.contains(&format!("{w:?}")), "{e} does not name {w:?}");
        }
    }

    #[test]
    fn choices_read_and_show_their_words() {
        words_round_trip::<Layout>(Layout::WORDS);
        words_round_trip::<InterleaveKind>(InterleaveKind::WORDS);
        words_round_trip::<DriveKind>(DriveKind::WORDS);
        words_round_trip::<HostLayer>(HostLayer::WORDS);
        words_round_trip::<PatternKind>(PatternKind::WORDS);
        words_round_trip::<FsKind>(FsKind::WORDS);
        words_round_trip::<CacheRequests>(CacheRequests::WORDS);
        words_round_trip::<Victim>(Victim::WORDS);
        words_round_trip::<FileDelete>(FileDelete::WORDS);
        words_round_trip::<KvStore>(KvStore::WORDS);
        words_round_trip::<KvWorkload>(KvWorkload::WORDS);
        words_round_trip::<KvPhases>(KvPhases::WORDS);
        words_round_trip::<Compaction>(Compaction::WORDS);
        words_round_trip::<RegionOrder>(RegionOrder::WORDS);
        words_round_trip::<TraceFileFormat>(TraceFileFormat::WORDS);
        words_round_trip::<Offsets>(Offsets::WORDS);
        words_round_trip::<HddScheduling>(HddScheduling::WORDS);
        assert_eq!("seq".parse::<PatternKind>(), Ok(PatternKind::Sequential));
        assert_eq!("rand".parse::<PatternKind>().unwrap().to_string(), "random");
        assert_eq!(KvPhases::default().word(), "load+run");
    }

    #[test]
    fn a_choice_is_read_from_toml_and_refused_with_its_message() {
        #[derive(Deserialize)]
        struct T {
            store: KvStore,
        }
        assert_eq!(toml::from_str::<T>("store = \"lsm\"").unwrap().store, KvStore::Lsm);
        let e = toml::from_str::<T>("store = \"rocksdb\"").err().unwrap().to_string();
        assert!(e.contains("store \"rocksdb\": expected \"log-structured\", \"lsm\", \"flash-cache\", \"wiredtiger\" or \"hse\""), "{e}");
        assert!(e.contains("line 1"), "{e}");
    }
}
