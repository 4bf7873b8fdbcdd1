//! The experiment document: the serde types of devices, namespaces, phases and their sources,
//! with accessors that read single fields (sizes, patterns, choices). Turning them into core
//! configurations is the plan's job (`crate::plan`).
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
use wafsim_core::units::parse_bytes;
use wafsim_core::RuhType;
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
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.word())
            }
        }
    };
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
    pub enum Compaction, "compaction {v:?}: expected \"size-tiered\" (Cassandra-like) or \"leveled\" (RocksDB-like)" {
        /// Cassandra-like size-tiered compaction (the default).
        #[default]
        SizeTiered = "size-tiered",
        /// RocksDB-like leveled compaction.
        Leveled = "leveled",
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
    pub bs: Option<String>,
    /// `random`: how much to write, a multiple of the drive's conventional capacity ("2x",
    /// the default "1x") or bytes.
    pub amount: Option<String>,
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
            HistoryKind::Random => format!("sequential fill, then random {} writes of {}", self.bs.as_deref().unwrap_or("4KiB"), self.amount.as_deref().unwrap_or("1x")),
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
/// set = { "history.kind" = "random", "history.amount" = "1x", "phase.0.kv.0.mkfs_trim" = false }
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

/// `[device]`: the drive.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// Name of a built-in device preset whose keys this table extends and overrides (see
    /// `wafsim device presets`); resolved while loading, so it is always None afterwards.
    pub preset: Option<String>,
    /// "flash" (default: an SSD with a device FTL: conventional, streams or FDP), "zns" (a
    /// zoned namespace SSD: give `[device.zones]`; no device GC) or "smr" (a host-managed SMR
    /// disk: `[device.zones]` with zones, zone_size, conventional_zones, max_open).
    pub kind: Option<DriveKind>,
    /// Logical capacity, e.g. "7.68TB" (SI) or "256GiB" (binary). A ZNS drive's capacity is
    /// its zones (zones x zone_size), so it is not given.
    #[serde(default)]
    pub capacity: String,
    /// (physical - logical) / logical, e.g. 0.07. Give this or `raw_capacity` (or a geometry
    /// with `blocks_per_plane`).
    pub over_provisioning: Option<f64>,
    /// Raw (physical) capacity.
    pub raw_capacity: Option<String>,
    /// FTL mapping unit, default "4KiB".
    #[serde(default = "default_mapping_unit")]
    pub mapping_unit: String,
    /// Erase unit (superblock / reclaim unit) size, e.g. "256MiB"; or derive it from `geometry`.
    pub erase_unit: Option<String>,
    /// `[device.geometry]`: the NAND layout; sets the erase unit (and the raw capacity with
    /// `blocks_per_plane`), and the timing model needs it.
    pub geometry: Option<NandGeometry>,
    /// "greedy" | "cost-benefit" | "fifo" | "d-choices:N" | "busiest-handle"; default "greedy".
    #[serde(default = "default_gc_policy")]
    pub gc_policy: String,
    /// GC starts when a reclaim group has fewer free erase units than this (default 2).
    #[serde(default = "default_gc_free_min")]
    pub gc_free_min: u32,
    /// GC stops once this many erase units are free (default: gc_free_min).
    pub gc_free_target: Option<u32>,
    /// GC destinations by age (default 1): with k > 1, every GC destination (the device's,
    /// the initially isolated handles' shared one, each persistently isolated handle's) becomes
    /// k, and a copy goes to class min(times GC moved it, k), so data that survives GC often
    /// stops sharing units with data that survived once. E.g. `gc_age_classes = 3`.
    #[serde(default = "one")]
    pub gc_age_classes: u32,
    /// `[device.fdp]`: Flexible Data Placement (reclaim groups and reclaim unit handles).
    pub fdp: Option<FdpSpec>,
    /// Legacy streams directive: number of streams (host frontiers); absent or 0 = off.
    pub streams: Option<u32>,
    /// Seed of the device's own randomness (d-choices), default the experiment seed.
    pub seed: Option<u64>,
    /// `[device.zones]`: the zones of a ZNS drive (`kind = "zns"`).
    pub zones: Option<ZonesSpec>,
    /// `[device.slc_cache]`: a pSLC write cache (client drives; conventional placement).
    pub slc_cache: Option<SlcCacheSpec>,
}

/// `[device.slc_cache]`: a pSLC write cache. Sizing and sources: docs/model.md, "pSLC write
/// cache".
///
/// ```toml
/// [device.slc_cache]
/// static = "6GiB"              # host data the cache always takes (reserved SLC blocks)
/// dynamic = 0.1                # plus this fraction of the free logical space
/// count_slc_programs = true    # SLC programs count in media bytes written (and the WAF)
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlcCacheSpec {
    /// false turns a preset's cache off (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Static part: host data the cache always takes, e.g. "6GiB" (scales with the capacity).
    #[serde(rename = "static")]
    pub static_size: String,
    /// Dynamic part: the fraction of the free logical space the cache may also hold (0..=1).
    #[serde(default)]
    pub dynamic: f64,
    /// Bits per cell of the NAND in its native mode (3 = TLC, the default).
    #[serde(default = "three")]
    pub bits_per_cell: u32,
    /// Whether SLC programs count in the media bytes written (default true; folds always do).
    #[serde(default = "yes")]
    pub count_slc_programs: bool,
}

fn three() -> u32 {
    3
}

/// `[device.zones]`: a ZNS drive's zoned namespace.
///
/// ```toml
/// [device]
/// kind = "zns"
/// [device.zones]
/// zones = 904
/// zone_size = "2GiB"          # LBA stride between zone starts
/// zone_capacity = "1077MiB"   # writable part of each zone
/// max_open = 14
/// max_active = 14
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZonesSpec {
    /// Number of zones.
    pub zones: u32,
    /// Zone size: the LBA stride between zone starts, e.g. "2GiB".
    pub zone_size: String,
    /// Default: the zone size.
    pub zone_capacity: Option<String>,
    /// Erase units (superblocks) backing one zone's capacity; default 1.
    #[serde(default = "one")]
    pub erase_units_per_zone: u32,
    /// Most zones open at once; 0 (default) = no limit.
    #[serde(default)]
    pub max_open: u32,
    /// Most zones open or closed at once; 0 (default) = no limit.
    #[serde(default)]
    pub max_active: u32,
    /// Leading conventional zones (written in place; default 0).
    #[serde(default)]
    pub conventional_zones: u32,
    /// Finish of a partly written zone programs dummy data up to the capacity, counted as media
    /// writes (default true; docs/model.md "ZNS").
    #[serde(default = "yes")]
    pub finish_pads: bool,
    /// Timing (ZNS): dies a zone's erase units span (the zone width), default every die of
    /// `[device.geometry]`; zone z uses die group z mod (dies / dies_per_zone).
    pub dies_per_zone: Option<u32>,
}

/// `[device.geometry]`: NAND geometry. A superblock (erase unit) is one block per plane on every
/// die of a reclaim group.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandGeometry {
    /// NAND page size, e.g. "16KiB".
    pub page_size: String,
    /// Pages per NAND block.
    pub pages_per_block: u64,
    /// Planes per die.
    pub planes_per_die: u64,
    /// Dies per channel.
    pub dies_per_channel: u64,
    /// Channels.
    pub channels: u64,
    /// If given, raw capacity = page x pages/block x blocks/plane x planes x dies.
    pub blocks_per_plane: Option<u64>,
}

/// `[device.fdp]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FdpSpec {
    /// FDP on (default false): writes may carry placement handles.
    #[serde(default)]
    pub enabled: bool,
    /// Reclaim groups (default 1), each with its own erase units and free pool.
    #[serde(default = "one")]
    pub reclaim_groups: u32,
    /// Number of reclaim unit handles.
    #[serde(default = "eight")]
    pub ruhs: u32,
    /// "initially-isolated" | "persistently-isolated", or a list with one type per RUH.
    #[serde(default)]
    pub ruh_type: Option<RuhTypeSpec>,
    /// Every handle references a reclaim unit from the start, as the NVMe specification has
    /// it (and FEMU's FDP model), so an idle handle still holds an erase unit of the spare
    /// (default true; false: a handle takes its first unit when first written, wafsim's
    /// behaviour before this became the default).
    #[serde(default = "yes")]
    pub idle_handles_hold_units: bool,
}

impl FdpSpec {
    /// The type of every RUH: `ruh_type` expanded to one per handle (initially isolated when
    /// not given), each name checked.
    pub fn ruh_types(&self) -> Result<Vec<RuhType>> {
        let parse = |t: &String| t.parse::<RuhType>().map_err(|e| anyhow!("device.fdp.{e}"));
        Ok(match &self.ruh_type {
            None => vec![RuhType::InitiallyIsolated; self.ruhs as usize],
            Some(RuhTypeSpec::One(t)) => vec![parse(t)?; self.ruhs as usize],
            Some(RuhTypeSpec::PerRuh(list)) => {
                if list.len() != self.ruhs as usize {
                    bail!("device.fdp.ruh_type lists {} types but ruhs = {}", list.len(), self.ruhs);
                }
                list.iter().map(parse).collect::<Result<_>>()?
            }
        })
    }
}

/// `ruh_type` of `[device.fdp]`: one type for every reclaim unit handle, or a list with one per
/// handle.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RuhTypeSpec {
    /// One type for every handle, e.g. "persistently-isolated".
    One(String),
    /// One type per handle, in handle order.
    PerRuh(Vec<String>),
}

/// `[[namespace]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceSpec {
    /// Namespace name, by which sources name the namespace they use.
    pub name: String,
    /// Size, e.g. "940GB"; on a ZNS drive omit it (the namespace is the drive's zones).
    #[serde(default)]
    pub size: String,
    /// RUH ids; placement handle i of the namespace refers to `placement_handles[i]`.
    #[serde(default)]
    pub placement_handles: Vec<u16>,
    /// A drive preset: the namespace lives alone on its own drive of this kind, not on
    /// `[device]` (layout = "dedicated" only; e.g. a small staging SSD beside a ZNS capacity
    /// drive). Without `size` it takes the whole drive.
    ///
    /// ```toml
    /// [[namespace]]
    /// name = "staging"
    /// device = "enterprise-tlc-1.92tb"
    /// ```
    #[serde(default)]
    pub device: Option<String>,
}

/// `[[workload]]`: a synthetic workload on one namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Name of the namespace the workload writes.
    pub namespace: String,
    /// "sequential" or "random".
    pub pattern: PatternKind,
    /// For random: "uniform" (default), "zipf:THETA", "hotcold:R/F".
    #[serde(default)]
    pub distribution: Option<String>,
    /// Block size, e.g. "4KiB".
    pub bs: String,
    /// Bytes to write ("100GiB") or multiples of the namespace size ("3x").
    pub amount: String,
    /// Fraction of I/Os that are trims, default 0.
    #[serde(default)]
    pub trim: f64,
    /// Relative I/O rate; equal weights mean equal IOPS (default 1).
    #[serde(default = "one")]
    pub weight: u32,
    /// Placement handle index (into the namespace's list) carried by writes; none by default.
    pub placement_handle: Option<u16>,
    /// Reclaim group carried with `placement_handle` (default 0).
    #[serde(default)]
    pub reclaim_group: u16,
    /// Stream id (streams directive) carried by writes.
    pub stream: Option<u16>,
    /// Timed mode: I/Os in flight (default 32).
    pub iodepth: Option<u32>,
    /// Timed mode: cap on I/Os per second.
    pub rate_iops: Option<f64>,
}

/// `[[phase]]`: sources that run concurrently; phases run one after another.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// Phase name, as reported in the results.
    pub name: String,
    /// Whether this phase's counters make the reported results (default true); a
    /// preconditioning phase sets false.
    #[serde(default = "yes")]
    pub measure: bool,
    /// `[[phase.workload]]`: synthetic workloads.
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    /// `[[phase.fio]]`: fio job files or command lines.
    #[serde(default)]
    pub fio: Vec<FioSpec>,
    /// `[[phase.trace]]`: block traces to replay.
    #[serde(default)]
    pub trace: Vec<TraceSpec>,
    /// File workloads through a file system on a namespace.
    #[serde(default)]
    pub files: Vec<FilesSpec>,
    /// Key-value applications on a namespace, driven by a request generator.
    #[serde(default)]
    pub kv: Vec<KvSpec>,
    /// Overrides the experiment's `interleave` for this phase.
    pub interleave: Option<InterleaveKind>,
    /// Run until WAF is steady (see [`SteadyStateSpec`]).
    pub steady_state: Option<SteadyStateSpec>,
    /// Measure only the last this many host bytes written of the phase: bytes ("300GB") or a
    /// multiple of the drives' logical capacity ("0.15x"). The phase runs whole; its counters
    /// and rows are the window's (to 1/32 of it), and the whole phase's WAF is reported
    /// beside. Not with `steady_state`. Bytes scale with the run as amounts do; a duration
    /// ("5h") needs `write_rate` in an untimed phase and is model time in a timed one (one
    /// drive; the window's start falls on the run's counter snapshots, up to 4,096 of them).
    pub measure_last: Option<String>,
    /// Points of the phase to report WAF at, in host bytes written since the phase started:
    /// bytes ("300GB", scaled with the run), multiples of the drives' logical capacity ("0.5x"),
    /// or durations ("5h", "90min", "30s") at `write_rate`. Each checkpoint reports the WAF from
    /// the phase start and since the previous checkpoint (and media per application byte where
    /// the phase has file systems or stores). In a timed phase (one drive) durations are model
    /// time, and each checkpoint is taken at the first counter snapshot at or past it.
    #[serde(default)]
    pub checkpoints: Vec<String>,
    /// Host write rate that turns durations of `checkpoints` and `measure_last` into bytes
    /// ("275MB/s"): a stated rate (e.g. a publication's), not a simulated one. Untimed phases
    /// (a timed phase has model time).
    pub write_rate: Option<String>,
    /// Where the measured window and the checkpoints start: `"start"` (the default: the phase
    /// start) or `"run"` (the moment the last `[[phase.kv]]` store's clients have loaded its
    /// initial records: a publication that measures a database's run, not its load). The
    /// whole phase's WAF is reported beside. Untimed phases with key-value stores.
    #[serde(default)]
    pub measure_from: MeasureFrom,
    /// End the phase, and report where, when a file system or store runs out of space (the
    /// database outgrew its drive) instead of failing the run: the result says when it filled
    /// ("stopped"), the checkpoints after it read "not reached". Untimed phases. Default false.
    ///
    /// ```toml
    /// stop_when_full = true     # TPC-C's tables grow: how long until the drive is full?
    /// ```
    #[serde(default)]
    pub stop_when_full: bool,
}

choice! {
    /// `measure_from` of a `[[phase]]`: where its measured window starts.
    #[derive(Default)]
    pub enum MeasureFrom, "measure_from {v:?}: expected \"start\" (the phase start) or \"run\" (after the key-value stores' load)" {
        /// The phase start (the default).
        #[default]
        Start = "start",
        /// After every key-value store's clients have loaded its initial records.
        Run = "run",
    }
}

/// `[[phase.fio]]`: a fio job file, or a fio command line, run once per listed namespace (as
/// when every tenant runs the same job on its own disk).
///
/// ```toml
/// [[phase.fio]]
/// file = "measure.fio"
/// namespaces = ["vm1", "vm2"]
/// [[phase.fio]]
/// args = "--name=test --filename=/dev/vdb --rw=randrw --rwmixread=70 --bs=4k --iodepth=256"
/// namespace = "vm3"          # --filename is the namespace
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FioSpec {
    /// Job file, relative to the experiment file.
    pub file: Option<String>,
    /// fio's command-line form instead of a job file: `--name=` starts a job, options before
    /// the first `--name` are global.
    pub args: Option<String>,
    /// Namespaces to run the job file on (each gets its own instance).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Single-namespace shorthand.
    pub namespace: Option<String>,
    /// `${NAME}` values for the job file (checked before the process environment).
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Relative I/O rate of each job against other sources (default 1 = equal IOPS per job).
    #[serde(default = "one")]
    pub weight: u32,
}

/// `[host]`: a host block layer. `layer = "dm-zoned"`: Linux dm-zoned over `disks` copies of
/// the experiment's SMR drive (`device.kind = "smr"`), with a regular cache device of
/// `cache_size` in front (multi-device mode; its own FTL is not modelled) or, without one
/// (`cache_size` absent or "none"), the disks' conventional zones as cache (single-device mode). The experiment's one namespace is
/// the dm-zoned target (omit its size).
///
/// ```toml
/// [host]
/// layer = "dm-zoned"
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
pub struct HostSpec {
    /// "dm-zoned", "tiering" or "none" (a variant without the experiment's layer).
    pub layer: HostLayer,
    /// tiering: the hot (staging) drive, a preset name (e.g. "enterprise-tlc-1.92tb"); the
    /// experiment's `[device]` is the cold (capacity) drive.
    pub hot: Option<String>,
    /// tiering: extent size (default 1 MiB).
    pub extent: Option<String>,
    /// dm-zoned: number of SMR disks, copies of the experiment's drive (default 1).
    #[serde(default = "one_u32")]
    pub disks: u32,
    /// dm-zoned: size of the regular cache device, e.g. "1TB"; absent or "none": the disks'
    /// conventional zones are the cache (single-device mode).
    pub cache_size: Option<String>,
    /// dm-zoned: sequential zones reserved for reclaim (dmzadm `--seq`, default 16).
    #[serde(default = "sixteen")]
    pub reserved_zones: u32,
    /// dm-zoned: zones of each disk the target uses, from zone 0 (default: all).
    pub disk_zones: Option<u32>,
}

fn one_u32() -> u32 {
    1
}

fn sixteen() -> u32 {
    16
}

/// `[[phase.files]]`: a synthetic file workload through a file system made on a namespace at
/// the start of the phase (mkfs: a conventional file system discards the namespace when it
/// discards; a zoned one resets every zone). Groups write files concurrently (directories:
/// the zoned file system gives each its own zones).
///
/// ```toml
/// [[phase.files]]
/// namespace = "z"
/// filesystem = "zoned"        # or "conventional"
/// amount = "3x"               # bytes or a multiple of the namespace
/// [[phase.files.group]]
/// name = "commitlog"
/// file_size = "32MiB"         # or ["16MiB", "64MiB"], uniform
/// live_files = 2
/// weight = 4                  # share of the writes
/// [[phase.files.group]]
/// name = "sstables"
/// file_size = ["64MiB", "256MiB"]
/// live_files = 24
/// delete = "random"           # or "oldest"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesSpec {
    /// Name of the namespace the file system is made on.
    pub namespace: String,
    /// "conventional" (update in place; any drive) or "zoned" (log-structured with host GC;
    /// a zoned drive).
    pub filesystem: FsKind,
    /// Application bytes to write: bytes or a multiple of the namespace ("3x").
    pub amount: String,
    /// Bytes per write unless a group says otherwise (default 1 MiB).
    #[serde(default = "default_file_write")]
    pub write_size: String,
    /// Conventional: mkfs discards (trims) the whole namespace before the file system is made
    /// (default true, as mkfs.ext4, mkfs.xfs and mkfs.btrfs do; false is `mkfs.ext4 -E nodiscard`,
    /// `mkfs.xfs -K`, `mkfs.btrfs -K`). A drive history's fill or aging is erased by it, and the
    /// run's drive-history line says so. A zoned file system resets its zones whatever this says.
    pub mkfs_trim: Option<bool>,
    /// Conventional: online discard, a deleted file's blocks are trimmed as it is deleted
    /// (default false: ext4, XFS and Btrfs before Linux 6.2 mount without `discard`).
    #[serde(default)]
    pub discard: bool,
    /// Conventional: allocation chunk (default 8 MiB) at full scale; a scaled run scales it.
    #[serde(default = "default_chunk")]
    pub chunk: String,
    /// Conventional: how far apart the directories' (groups') allocation goals start, at full
    /// scale (default "1GiB", ext4's Orlov spreading; e.g. "500GB" for XFS placing a new
    /// directory in the next of 4 allocation groups of a 2 TB device); a scaled run scales it.
    pub group_spacing: Option<String>,
    /// Zoned: GC victim policy, "greedy" (default) or "cost-benefit".
    #[serde(default)]
    pub victim: Victim,
    /// Zoned: data streams, each writing its own zones (0 = as many as the open-zone limit
    /// allows).
    #[serde(default)]
    pub streams: u32,
    /// Zoned: GC starts below this many free zones (default 2% of the zones, at least 4).
    pub gc_free_zones: Option<u32>,
    /// btrfs, conventional namespace: the discard mount option, "async" (default), "sync" or
    /// "none".
    pub btrfs_discard: Option<BtrfsDiscardMode>,
    /// btrfs, zoned namespace: "upstream" (default) or "directory".
    pub zone_placement: Option<ZonePlacement>,
    /// btrfs, zoned namespace: reclaim a block group once this percentage of its capacity is
    /// freed (`bg_reclaim_threshold`, default 75).
    pub bg_reclaim_threshold: Option<u32>,
    /// btrfs: file bytes per second reaching the file system at full scale, its clock for the
    /// 30 s commits and the discard delays (default 100 MiB/s; an assumption where the
    /// workload's rate is not published).
    pub fs_write_rate: Option<String>,
    /// I/Os in flight (timed runs; default 8).
    pub iodepth: Option<u32>,
    /// `[[phase.files.group]]`: the groups (directories) writing files.
    pub group: Vec<FileGroupSpec>,
    /// The run's scale (set by scaling, not by the file): a Btrfs-like file system's chunks
    /// and clock shrink with the drive.
    #[serde(skip, default = "one_f64")]
    pub scale: f64,
}

/// `[[phase.kv]]`: a key-value store on a raw namespace (wafsim-apps), driven by a YCSB core
/// workload (wafsim_workload::ycsb) or a TPC-C-like mix (`workload = "tpcc"`,
/// wafsim_workload::tpcc: `warehouses`, load then transactions). The store is made empty at the
/// start of the phase.
///
/// ```toml
/// [[phase.kv]]
/// namespace = "ns1"
/// store = "log-structured"    # Aerospike-like: write blocks, defrag below the low-water mark
/// write_block = "128KiB"      # default 1MiB
/// defrag_lwm = 50             # percent (Aerospike defrag-lwm-pct)
/// trim = false                # trim freed blocks
/// ycsb = "a"                  # core workload a..f
/// fill = 0.5                  # records take this share of the namespace (sets recordcount)
/// phases = "load+run"         # "load", "run" or "load+run"
/// amount = "3x"               # stop after the store wrote this much (bytes or a multiple of the namespace)
/// ycsb_properties = { requestdistribution = "uniform" }   # any YCSB property, by its name
/// rate = 50000                # client requests per second (the store's clock)
/// runtime = "10h"             # or stop after this long (full-scale simulated time)
/// defrag_sleep = "1000us"     # Aerospike defrag-sleep
/// post_write_queue = 256      # blocks (Aerospike post-write-queue)
/// flush_max_ms = 1000         # partial flush period (Aerospike flush-max-ms)
/// stop_writes_avail_pct = 5   # Aerospike stop-writes thresholds
/// stop_writes_used_pct = 70
/// device_write_bw = "400MB"   # per second: the drive's pace for this store (default: at once)
/// max_write_cache = "64MiB"   # Aerospike max-write-cache (acts with device_write_bw)
/// ```
///
/// A CacheLib-like flash cache (wafsim_apps::flashcache) under CacheBench-like requests:
///
/// ```toml
/// [[phase.kv]]
/// namespace = "cache"
/// store = "flash-cache"
/// cache_size = "50%"          # of the namespace; the rest stays unused
/// bighash_pct = 4             # small-object engine's share of the cache
/// footprint = 2.0             # key population's objects / cache size
/// zipf = 1.0                  # key popularity
/// region_eviction = "fifo"    # or "lru"
/// dram = "4.5%"               # DRAM cache in front, share of the flash cache or bytes
/// reinsertion_hits = 1        # Navy hits reinsertion threshold (0 = off)
/// admission_retention = 7200  # seconds (RetentionAP; 0 = admit all)
/// requests = "kvcache"        # or "flat-kvcache"; trace = "kv.csv" replays a CacheBench trace
/// amount = "3x"               # stop once the cache wrote this much to the device
/// ```
///
/// An LSM store (wafsim_apps::lsm) on a file system on the namespace:
///
/// ```toml
/// [[phase.kv]]
/// namespace = "data"
/// store = "lsm"
/// compaction = "size-tiered"  # Cassandra-like defaults; "leveled": RocksDB-like
/// memtable = "64MiB"          # flush size (default: the engine's)
/// filesystem = "zoned"        # or "conventional" (discard, chunk); zoned: victim, streams, gc_free_zones
/// staging_namespace = "fast"  # optional: upper levels and the log on this namespace (HSE-like media classes)
/// staging_levels = 1          # levels (tiers) kept on staging (default 1)
/// amount = "300GB"            # stop once the store wrote this much to its files
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvSpec {
    /// Name of the namespace the store is on.
    pub namespace: String,
    /// "log-structured" (default, Aerospike-like), "lsm" (an LSM tree on a file system) or
    /// "flash-cache" (CacheLib-like).
    #[serde(default)]
    pub store: KvStore,
    /// log-structured: write block size (default 1 MiB).
    pub write_block: Option<String>,
    /// log-structured: defragment a block once its live data falls below this percent (Aerospike
    /// `defrag-lwm-pct`).
    pub defrag_lwm: Option<u32>,
    /// log-structured: client requests per second, e.g. `rate = 50000` (YCSB's target
    /// throughput). The store's clock: defrag, partial flushes and stop-writes run in time
    /// against it, and stores with rates interleave by time. Default 10000 (YCSB's defaults: one
    /// client thread, no target, at a round trip of about 100 us).
    pub rate: Option<f64>,
    /// log-structured: how long the clients run, in simulated time at full scale, e.g.
    /// `runtime = "10h"`; a scaled run lasts `--scale` times as long, as its namespace is that
    /// much smaller, so the store writes its namespace as many times over. Stores of one phase
    /// with the same runtime stop together.
    pub runtime: Option<String>,
    /// log-structured: Aerospike `defrag-sleep`, the pause after each defragmented block,
    /// e.g. `defrag_sleep = "1000us"` (the default).
    pub defrag_sleep: Option<String>,
    /// log-structured: Aerospike `post-write-queue`, written client blocks kept cached per
    /// device (default 256; a scaled run keeps its share of the namespace).
    pub post_write_queue: Option<u32>,
    /// log-structured: Aerospike `flush-max-ms`, the partial flush period of a current write
    /// block (default 1000; 0 never).
    pub flush_max_ms: Option<u32>,
    /// log-structured: Aerospike `stop-writes-avail-pct` (default 5; 0 off).
    pub stop_writes_avail_pct: Option<u32>,
    /// log-structured: Aerospike `stop-writes-used-pct` (default 70; 0 off).
    pub stop_writes_used_pct: Option<u32>,
    /// log-structured: bytes per second at which the drive takes this store's full-block
    /// writes, e.g. `device_write_bw = "400MB"` (per second). With it, Aerospike's device-side
    /// throttles act: client writes fail while more than `max_write_cache` waits for the drive
    /// (`AS_ERR_DEVICE_OVERLOAD`), and defrag waits while 128 blocks more wait. Default: the
    /// drive takes writes at once, as an untimed drive does (the throttles never act). An
    /// assumption, not coupled to the timing model; not scaled (rates are not).
    pub device_write_bw: Option<String>,
    /// log-structured: Aerospike `max-write-cache`, e.g. `"64MiB"` (the default); acts only with
    /// `device_write_bw`. Not scaled: it is a time buffer at the store's byte rate, which a
    /// scaled run keeps.
    pub max_write_cache: Option<String>,
    /// log-structured: trim freed write blocks; flash-cache: trim evicted regions. Default false,
    /// as the real engines do: Aerospike's storage engine and CacheLib's Navy never trim what they
    /// free (a `true` is a what-if, not either engine).
    #[serde(default)]
    pub trim: bool,
    /// Reads cost device reads (default true).
    #[serde(default = "yes")]
    pub read_ios: bool,
    /// "ycsb" (default) or "tpcc".
    #[serde(default)]
    pub workload: KvWorkload,
    /// ycsb: the core workload, a letter a..f (default "a").
    #[serde(default = "default_ycsb")]
    pub ycsb: String,
    /// tpcc: warehouses (default 1).
    pub warehouses: Option<u64>,
    /// Share of the namespace the initial data takes, in (0, 1): sets YCSB's recordcount or the
    /// TPC-C warehouses (log-structured and lsm).
    pub fill: Option<f64>,
    /// ycsb: "load", "run" or "load+run" (default); tpcc: "run" skips the initial population.
    #[serde(default)]
    pub phases: KvPhases,
    /// Stop once the store has written this much (bytes, or a multiple of the namespace: "3x"): to
    /// its files for lsm, to the device for the others. Without it the request generator decides
    /// when the phase ends.
    pub amount: Option<String>,
    /// ycsb: YCSB properties by name, applied over the core workload (e.g. `requestdistribution`).
    #[serde(default)]
    pub ycsb_properties: toml::Table,
    /// I/Os in flight in timed runs (default 8; flash-cache 1).
    pub iodepth: Option<u32>,
    /// lsm: "size-tiered" (default, Cassandra-like) or "leveled" (RocksDB-like).
    pub compaction: Option<Compaction>,
    /// lsm: memtable flush size.
    pub memtable: Option<String>,
    /// lsm: the file system under the store, "conventional" (default) or "zoned", and its
    /// options as in `[[phase.files]]`.
    #[serde(default)]
    pub filesystem: FsKind,
    /// lsm, conventional file system: mkfs trims the whole namespace first (default true), as in
    /// `[[phase.files]]`.
    pub mkfs_trim: Option<bool>,
    /// lsm, conventional file system: online discard of a deleted file's blocks (default false),
    /// as in `[[phase.files]]`.
    #[serde(default)]
    pub discard: bool,
    /// lsm, conventional file system: allocation chunk (default 8 MiB) at full scale; a scaled
    /// run scales it.
    #[serde(default = "default_chunk")]
    pub chunk: String,
    /// Conventional file system: how far apart its directories' allocation goals start at full
    /// scale (default "1GiB"), as in `[[phase.files]]`: e.g. where WiredTiger's journal
    /// directory starts to allocate.
    pub group_spacing: Option<String>,
    /// lsm, zoned file system: GC victim policy, "greedy" (default) or "cost-benefit".
    #[serde(default)]
    pub victim: Victim,
    /// lsm, zoned file system: data streams (0 = as many as the open-zone limit allows).
    #[serde(default)]
    pub streams: u32,
    /// lsm, zoned file system: GC starts below this many free zones (default 2% of the zones, at
    /// least 4).
    pub gc_free_zones: Option<u32>,
    /// btrfs, conventional namespace: the discard mount option, "async" (default), "sync" or
    /// "none".
    pub btrfs_discard: Option<BtrfsDiscardMode>,
    /// btrfs, zoned namespace: "upstream" (default) or "directory".
    pub zone_placement: Option<ZonePlacement>,
    /// btrfs, zoned namespace: reclaim a block group once this percentage of its capacity is
    /// freed (`bg_reclaim_threshold`, default 75).
    pub bg_reclaim_threshold: Option<u32>,
    /// btrfs: file bytes per second reaching the file system at full scale, its clock for the
    /// 30 s commits and the discard delays (default 100 MiB/s; an assumption where the
    /// workload's rate is not published).
    pub fs_write_rate: Option<String>,
    /// lsm: a second namespace for the log and the upper levels (a conventional file system).
    pub staging_namespace: Option<String>,
    /// hse: the media-class policy, "capacity_only" (HSE 1.9's default), "staging_only",
    /// "staging_max_capacity" (Micron's MongoDB media-class configurations) or
    /// "staging_min_capacity".
    pub mclass_policy: Option<String>,
    /// lsm: levels (size-tiered: tiers) on the staging namespace (default 1).
    pub staging_levels: Option<u32>,
    /// lsm: the directories of the table files: `"directory"` (default: one, as the real
    /// stores) or `"job"` (one per flush or compaction job).
    pub file_groups: Option<FileGroups>,
    /// flash-cache: the share of the namespace the cache uses ("50%", "0.5" or bytes;
    /// default the whole namespace).
    pub cache_size: Option<String>,
    /// flash-cache: percent of the cache for the small-object engine (default 4).
    pub bighash_pct: Option<u32>,
    /// flash-cache: engines on placement handles 0 and 1 (default: when the drive has FDP on
    /// and the namespace two placement handles).
    pub placement: Option<bool>,
    /// flash-cache: the key population's objects add up to this multiple of the cache
    /// (default 2).
    pub footprint: Option<f64>,
    /// flash-cache: zipf exponent of key popularity (default 1.0; 0 = uniform).
    pub zipf: Option<f64>,
    /// flash-cache: BlockCache's region eviction, "fifo" (default: the published CacheLib FDP
    /// setup's) or "lru" (Navy's own default, a what-if here).
    pub region_eviction: Option<RegionOrder>,
    /// flash-cache: the DRAM cache in front of flash, a share of the flash cache ("4.5%", the
    /// default being the published setup's 43,000 MiB over 952,320 MiB) or bytes ("40GB"); "0"
    /// for none (every set then goes straight to flash). Example: `dram = "2.1%"`.
    pub dram: Option<String>,
    /// flash-cache: reinsert an evicted BlockCache item looked up at least this many times
    /// since it was written (CacheBench `navyHitsReinsertionThreshold`; default 1, the published
    /// setup's; 0 = off). Example: `reinsertion_hits = 0`.
    pub reinsertion_hits: Option<u32>,
    /// flash-cache: admit a DRAM-evicted item to flash only if it was accessed within this many
    /// seconds (CacheBench `nvmAdmissionRetentionTimeThreshold`; default 7200, the published
    /// setup's; 0 admits all). Example: `admission_retention = 0`.
    pub admission_retention: Option<u32>,
    /// flash-cache: full-scale request rate (requests per second of simulated time) that the
    /// DRAM LRU's refresh and the admission threshold are measured against; a scaled run scales
    /// it with the run, so times keep their ratio to the cache's turnover (default 550000, the
    /// published `opRatePerSec`). Example: `ops_per_sec = 100000`.
    pub ops_per_sec: Option<f64>,
    /// flash-cache: the request generator, "kvcache" (default: shaped like the kvcache_202210
    /// traces) or "flat-kvcache" (CacheBench's flat_kvcache_reg sizes, look-aside gets only).
    /// Example: `requests = "flat-kvcache"`.
    pub requests: Option<String>,
    /// flash-cache: replay this CacheBench kvcache CSV trace (a path relative to the experiment
    /// file, as `[[phase.trace]]` files) instead of generating requests; it ends the phase when it
    /// ends. Example:
    /// `trace = "traces/kvcache_traces_1.csv"`.
    pub trace: Option<String>,
    /// flash-cache: a get that misses everywhere inserts the object (CacheBench
    /// `enableLookaside`; default off, CacheBench's, except with `requests = "flat-kvcache"`).
    /// Example: `lookaside = true`.
    pub lookaside: Option<bool>,
    /// wiredtiger: the engine's cache, bytes or a share of the namespace, e.g. `"5%"` (the
    /// default: MongoDB sizes it from the host's RAM, an unknown for a published run; a share
    /// keeps its ratio to the data at every scale).
    pub wt_cache: Option<String>,
    /// wiredtiger: compressed over raw size of collection pages and journal records (snappy
    /// on BSON; default 0.5, an assumption).
    pub compression: Option<f64>,
    /// wiredtiger: the journal on (MongoDB's `storage.journal.enabled`, default true). A
    /// standalone server journals every write; a replica set journals only its oplog.
    pub journal: Option<bool>,
    /// wiredtiger: run as a replica set, with an oplog that every write appends to (default:
    /// true for TPC-C, whose py-tpcc driver uses multi-document transactions, which need a
    /// replica set; false for YCSB, run against a standalone server).
    pub replica_set: Option<bool>,
    /// wiredtiger: the oplog's cap, bytes or a share of the namespace, e.g. `"5%"` (default
    /// MongoDB's: 5% of the file system's free space, at least 990 MB and at most 50 GB, both
    /// limits scaled with the run).
    pub oplog_size: Option<String>,
    /// The run's scale (set by scaling, not by the file): an LSM store's sizes (memtable,
    /// table and level sizes, log segments) shrink with the drive so the tree keeps its shape.
    #[serde(skip, default = "one_f64")]
    pub scale: f64,
}

fn default_ycsb() -> String {
    "a".into()
}

/// `[[phase.files.group]]`: one group (directory) of a file workload.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileGroupSpec {
    /// Group name (a directory of the file system).
    pub name: String,
    /// A size ("64MiB") or a range (["16MiB", "64MiB"]).
    pub file_size: FileSize,
    /// Completed files kept; one more deletes one.
    pub live_files: u32,
    /// Share of the workload's writes that go to this group (relative to the other groups; default
    /// 1).
    #[serde(default = "one_f64")]
    pub weight: f64,
    /// "oldest" (default) or "random".
    #[serde(default)]
    pub delete: FileDelete,
    /// Fraction of the group's writes that update a live file in place.
    #[serde(default)]
    pub overwrite: f64,
    /// Bytes per write (default the workload's `write_size`).
    pub write_size: Option<String>,
}

/// A file size or a range of sizes.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum FileSize {
    /// A fixed size, e.g. "64MiB".
    One(String),
    /// Sizes uniform between the two, e.g. ["16MiB", "64MiB"].
    Range([String; 2]),
}

fn default_file_write() -> String {
    "1MiB".into()
}

fn default_chunk() -> String {
    "8MiB".into()
}


/// `steady_state` of a `[[phase]]`: SNIA PTS-style steady-state detection on WAF. The phase
/// runs in rounds of `round` host bytes written; it is steady when, over the last `window`
/// rounds, the per-round WAF stays within `excursion` x its mean (max - min) and the
/// least-squares line through it moves by at most `slope` x the mean across the window. A
/// phase with `steady_state` ends as soon as it is steady (or when its sources run out, or
/// after `max_rounds`) and reports the counters of its last `window` rounds.
///
/// ```toml
/// [[phase]]
/// name = "measure"
/// steady_state = { round = "0.25x", window = 5, excursion = 0.2, slope = 0.1 }
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteadyStateSpec {
    /// Host bytes per round: bytes ("8GiB") or a multiple of the drive's logical capacity
    /// ("0.25x"; default "0.1x").
    #[serde(default = "default_round")]
    pub round: String,
    /// Rounds in the measurement window (default 5, as SNIA PTS).
    #[serde(default = "five")]
    pub window: u32,
    /// Largest (max - min) / mean of the window's per-round WAF (default 0.2, as SNIA PTS).
    #[serde(default = "default_excursion")]
    pub excursion: f64,
    /// Largest change of the fitted line across the window, / mean (default 0.1, as SNIA PTS).
    #[serde(default = "default_slope")]
    pub slope: f64,
    /// Stop after this many rounds even if not steady (default: no limit but the sources').
    pub max_rounds: Option<u32>,
}

impl Default for SteadyStateSpec {
    fn default() -> Self {
        SteadyStateSpec { round: default_round(), window: 5, excursion: default_excursion(), slope: default_slope(), max_rounds: None }
    }
}

fn default_round() -> String {
    "0.1x".into()
}

fn five() -> u32 {
    5
}

fn default_excursion() -> f64 {
    0.2
}

fn default_slope() -> f64 {
    0.1
}

/// `[[phase.trace]]`: a block trace replayed on one namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Trace file, relative to the experiment file.
    pub file: String,
    /// "iolog" (fio write_iolog v2/v3), "blkparse", "msr"; detected from the first line if absent.
    pub format: Option<TraceFileFormat>,
    /// Name of the namespace the trace is replayed on.
    pub namespace: String,
    /// Keep only records of this file / device (`major,minor`) / MSR `host_disk`.
    pub filter: Option<String>,
    /// What to do with offsets beyond the namespace: "wrap" (modulo, aligned to the mapping unit;
    /// the default) or "error".
    #[serde(default)]
    pub offsets: Offsets,
    /// Placement handle carried by the trace's writes.
    pub placement_handle: Option<u16>,
    /// Split the trace's writes by LBA range onto placement handles: fractions of the namespace
    /// (ascending, in (0, 1)) where the next handle starts. `[0.25, 0.5]`: writes starting in
    /// the first quarter carry placement handle 0, in the second quarter handle 1, in the upper
    /// half handle 2 (the namespace lists that many `placement_handles`). Fractions, so the
    /// ranges scale with the namespace; offsets beyond a scaled namespace wrap first.
    pub placement_split: Option<Vec<f64>>,
}

/// `[timing]`: the timing model (off by default). Needs `[device.geometry]` for page size,
/// planes, dies and channels.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingSpec {
    /// Run the timing model (default false).
    #[serde(default)]
    pub enabled: bool,
    /// "slc" | "tlc" | "qlc": default tR, tPROG, tBERS and P/E cycles (docs/model.md).
    #[serde(default = "default_nand")]
    pub nand: String,
    /// Overrides, e.g. "50us", "937.5us", "5ms".
    pub t_read: Option<String>,
    /// Override of the NAND program time (tPROG), e.g. "937.5us".
    pub t_prog: Option<String>,
    /// Program time of an SLC-mode program (pSLC write cache), e.g. "320us".
    pub t_prog_slc: Option<String>,
    /// Override of the block erase time (tBERS), e.g. "5ms".
    pub t_erase: Option<String>,
    /// Override of the rated program/erase cycles.
    pub pe_cycles: Option<u32>,
    /// NAND bus rate per channel, e.g. "1600MT/s" (8-bit bus: 1 byte per transfer).
    #[serde(default = "default_channel_rate")]
    pub channel_rate: String,
    /// Host interface: "pcie3x4", "pcie4x4", "pcie5x4", ... or a rate like "7GB/s".
    #[serde(default = "default_host_link")]
    pub host_link: String,
    /// The controller's datapath (DRAM buffer and ECC engines) as a shared rate, e.g.
    /// "6.8GB/s": every byte crossing the NAND interface crosses it once (host programs and
    /// reads once, GC copies twice). Default (or "none"): not modelled (no limit).
    pub datapath: Option<String>,
    /// How the datapath orders transfers: "host-reads-first" (default: a host read waits only
    /// for other host reads, as controllers put host reads ahead of background work) or "fcfs"
    /// (first come, first served: a read waits behind GC's copies booked before it).
    #[serde(default)]
    pub datapath_arbitration: DatapathArbitration,
    /// Write buffer size (writes complete once buffered).
    #[serde(default = "default_write_buffer")]
    pub write_buffer: String,
    /// Per page type array read times (LSB first), e.g. ["45us", "60us", "75us"] for TLC;
    /// overrides t_read for host reads (GC reads use t_read).
    pub t_read_pages: Option<Vec<String>>,
    /// Host reads suspend programs and erases on their die.
    #[serde(default)]
    pub program_suspend: bool,
    /// Time from suspend to the read starting (tSUS).
    #[serde(default = "twenty_us", alias = "suspend_overhead")]
    pub suspend_latency: String,
    /// Time from suspending an erase to the read starting.
    #[serde(default = "twenty_us")]
    pub erase_suspend_latency: String,
    /// Time a resume adds to the suspended program or erase.
    #[serde(default = "twenty_us")]
    pub resume_overhead: String,
    /// Suspends one program or erase accepts before reads wait for it.
    #[serde(default = "default_max_suspends")]
    pub max_suspends: u32,
    /// Submission queues: "per-job" (default; every job has its own) or "per-namespace" (the
    /// jobs of one namespace share a queue that the drive takes in order, as the jobs of one
    /// VM share its virtual disk: a command behind a write waiting for buffer space waits).
    #[serde(default)]
    pub queues: Queues,
    /// Most dies programming at once (power budget; 0 = no limit).
    #[serde(default)]
    pub max_active_programs: u32,
    /// Controller time per read command (added to every read's latency).
    #[serde(default = "zero_us")]
    pub read_overhead: String,
    /// Controller time per write command (added to every write's latency).
    #[serde(default = "zero_us")]
    pub write_overhead: String,
    /// Time each write command holds the controller's one command processor (caps small-write
    /// IOPS at its inverse), e.g. "5.4us"; default none.
    #[serde(default = "zero_us")]
    pub write_command_time: String,
    /// Zone Reset latency (ZNS): fixed part, e.g. "1.58ms", and part per GiB the zone held,
    /// e.g. "13.1ms"; default the plain command time.
    #[serde(default = "zero_us")]
    pub zone_reset_time: String,
    /// Zone Reset latency (ZNS): part per GiB the zone held, e.g. "13.1ms" (see `zone_reset_time`).
    #[serde(default = "zero_us")]
    pub zone_reset_time_per_gib: String,
    /// Background GC when the host is idle: keep at least this many free erase units per
    /// reclaim group (default gc_free_target + 2; 0 = off).
    pub background_gc_free: Option<u32>,
    /// Mechanics of a hard disk (`device.kind = "smr"`): the `smr-hm-14tb` preset gives them.
    /// The NAND keys above do not apply to a disk.
    pub hdd: Option<HddSpec>,
    /// The regular cache device in front of the disks of `[host] layer = "dm-zoned"` (a
    /// device without a media model: rate and latency). Required when the layer has one.
    pub cache: Option<CacheTimingSpec>,
    /// Log bandwidth over time in intervals of this length (fio's `log_avg_msec`), e.g. "1s";
    /// with dm-zoned also the free cache zones and each disk's reclaim writes. Default: no log.
    pub log_interval: Option<String>,
}

/// `[timing.cache]`: the cache device of dm-zoned (wafsim_time::plain; docs/model.md, "Cache
/// device"). Rates are sustained transfer rates; `latency` is added to every read and write.
///
/// ```toml
/// [timing.cache]
/// write = "2.5GB/s"
/// read = "3.2GB/s"
/// latency = "20us"
/// shared = false      # reads and writes use separate pipes (true: one pipe for both)
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheTimingSpec {
    /// Sustained write rate, e.g. "2.5GB/s".
    pub write: String,
    /// Sustained read rate, e.g. "3.2GB/s".
    pub read: String,
    /// Added to every read and write, e.g. "20us" (default 0).
    #[serde(default = "zero_us")]
    pub latency: String,
    /// Reads and writes share one transfer pipe (default false: separate pipes).
    #[serde(default)]
    pub shared: bool,
}

/// `[timing.hdd]`: a mechanical disk (wafsim_time::hdd::HddConfig; docs/model.md,
/// "Host-managed SMR disks"). Capacity and block size come from the device.
///
/// ```toml
/// [timing.hdd]
/// rpm = 7200
/// heads = 16
/// od_rate = "235.7MiB/s"
/// id_od_ratio = 0.5
/// command_overhead = "0.5ms"
/// scheduling = "sptf"
/// write_cache_cmds = 24
/// seek_read = { track_to_track = "0.23ms", average = "7.4ms", full_stroke = "15ms" }
/// seek_write = { track_to_track = "0.32ms", average = "8.2ms", full_stroke = "15.8ms" }
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddSpec {
    /// Spindle speed, revolutions per minute.
    pub rpm: u32,
    /// Recording surfaces (one head each).
    pub heads: u32,
    /// Sustained media rate at the outer diameter, e.g. "235.7MiB/s".
    pub od_rate: String,
    /// Media rate at the inner diameter / at the outer diameter, in (0, 1].
    pub id_od_ratio: f64,
    /// Controller time per command (not paid by a command that streams on from the last one).
    pub command_overhead: String,
    /// "sptf" (shortest positioning time first, the default) or "fifo".
    #[serde(default)]
    pub scheduling: HddScheduling,
    /// Writes the drive acknowledges before they reach the media (0 = write-through).
    #[serde(default)]
    pub write_cache_cmds: u32,
    /// Seek figures of reads.
    pub seek_read: SeekSpec,
    /// Seek figures of writes (writes settle longer).
    pub seek_write: SeekSpec,
}

/// Datasheet seek figures (settling included, command overhead not).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeekSpec {
    /// Single-track seek, e.g. "0.23ms".
    pub track_to_track: String,
    /// Weighted average over all seek lengths.
    pub average: String,
    /// Full-stroke seek (outer to inner diameter), e.g. "15ms".
    pub full_stroke: String,
}

/// How jobs map onto submission queues in timed runs (see [`TimingSpec::queues`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Queues {
    /// Every job has its own queue (the default).
    #[default]
    PerJob,
    /// The jobs of one namespace share one queue, taken in order.
    PerNamespace,
}

fn default_nand() -> String {
    "tlc".into()
}

fn default_channel_rate() -> String {
    "1600MT/s".into()
}

fn default_host_link() -> String {
    "pcie4x4".into()
}

fn default_write_buffer() -> String {
    "64MiB".into()
}

/// Default suspend latencies and resume overhead.
fn twenty_us() -> String {
    "20us".into()
}

fn default_max_suspends() -> u32 {
    5
}

/// Default controller overheads (none unless a preset or the experiment sets them).
fn zero_us() -> String {
    "0us".into()
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

fn default_mapping_unit() -> String {
    "4KiB".into()
}

fn default_gc_policy() -> String {
    "greedy".into()
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

/// A size in bytes ("256MiB"); errors name `field`.
pub(crate) fn size(field: &str, s: &str) -> Result<u64> {
    parse_bytes(s).map_err(|e| anyhow!("{field}: {e}"))
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

impl SteadyStateSpec {
    pub(crate) fn check(&self) -> Result<()> {
        if self.window < 2 {
            bail!("window = {}: needs at least 2 rounds", self.window);
        }
        if !(self.excursion > 0.0) || !(self.slope > 0.0) {
            bail!("excursion and slope must be > 0 (fractions of the window's mean WAF, e.g. 0.1 and 0.05)");
        }
        if let Some(m) = self.round.trim().strip_suffix('x') {
            let v: f64 = m.trim().parse().map_err(|_| anyhow!("round {:?}: expected bytes (\"8GiB\") or a multiple of the drive capacity (\"0.1x\")", self.round))?;
            if !(v > 0.0) || !v.is_finite() {
                bail!("round {:?}: the multiple must be > 0", self.round);
            }
        } else if size("round", &self.round)? == 0 {
            bail!("round {:?}: must be > 0 bytes", self.round);
        }
        Ok(())
    }

    /// Host bytes per round on a target of `logical` bytes.
    pub fn round_bytes(&self, logical: u64) -> Result<u64> {
        Ok(match self.round.trim().strip_suffix('x') {
            Some(m) => (m.trim().parse::<f64>()? * logical as f64) as u64,
            None => size("round", &self.round)?,
        }
        .max(1))
    }
}

impl ExperimentSpec {
    /// The interleave of a phase (its own, else the experiment's).
    pub fn interleave_of(&self, p: &PhaseSpec) -> InterleaveKind {
        p.interleave.unwrap_or(self.interleave)
    }
}

impl FioSpec {
    /// The job file, or "args" for the command-line form (for messages).
    pub fn origin(&self) -> String {
        match (&self.file, &self.args) {
            (Some(f), _) => f.clone(),
            _ => "args".into(),
        }
    }

    /// `namespaces` plus `namespace`.
    pub fn namespace_list(&self) -> Vec<String> {
        let mut v = self.namespaces.clone();
        if let Some(n) = &self.namespace {
            v.push(n.clone());
        }
        v
    }
}

impl TraceSpec {
    /// The trace's format, `None` to detect it from the file.
    pub fn trace_format(&self) -> Option<wafsim_workload::trace::TraceFormat> {
        use wafsim_workload::trace::TraceFormat;
        self.format.map(|f| match f {
            TraceFileFormat::Iolog => TraceFormat::FioIolog,
            TraceFileFormat::Blkparse => TraceFormat::Blkparse,
            TraceFileFormat::Msr => TraceFormat::MsrCsv,
        })
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

impl WorkloadSpec {
    /// The access pattern and, for a random one, its distribution; errors on a distribution
    /// given with a sequential one.
    pub fn pattern(&self) -> Result<Pattern> {
        match self.pattern {
            PatternKind::Sequential => {
                if self.distribution.is_some() {
                    bail!("distribution applies to pattern = \"random\" only");
                }
                Ok(Pattern::Sequential)
            }
            PatternKind::Random => {
                let d: Distribution = match &self.distribution {
                    None => Distribution::Uniform,
                    Some(s) => s.parse().map_err(|e: String| anyhow!(e))?,
                };
                Ok(Pattern::Random(d))
            }
        }
    }
    /// The block size, bytes; errors unless it is 1 B to 4 GiB.
    pub fn block_size(&self) -> Result<u32> {
        let b = size("bs", &self.bs)?;
        if b == 0 || b > u32::MAX as u64 {
            bail!("bs {}: expected 1 B .. 4 GiB", self.bs);
        }
        Ok(b as u32)
    }
    /// Bytes to issue: "3x" means three times the namespace size.
    pub fn amount_bytes(&self, ns_bytes: u64) -> Result<u64> {
        amount_bytes(&self.amount, ns_bytes)
    }
}

/// An amount of bytes: bytes ("100GiB") or a multiple of `base` ("3x").
pub fn amount_bytes(amount: &str, base: u64) -> Result<u64> {
    if let Some(m) = amount.trim().strip_suffix('x') {
        let m: f64 = m.trim().parse().map_err(|_| anyhow!("amount {amount:?}: expected bytes (\"100GiB\") or a multiple of the namespace (\"3x\")"))?;
        if !(m > 0.0) || !m.is_finite() {
            bail!("amount {amount:?}: multiple must be > 0");
        }
        return Ok((m * base as f64) as u64);
    }
    size("amount", amount)
}

impl DeviceSpec {
    /// The drive's kind (flash unless `kind` says otherwise).
    pub fn drive_kind(&self) -> DriveKind {
        self.kind.unwrap_or(DriveKind::Flash)
    }

    /// Whether the drive is zoned (ZNS or SMR): its capacity comes from `[device.zones]`.
    pub fn is_zoned(&self) -> bool {
        self.drive_kind() != DriveKind::Flash
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
