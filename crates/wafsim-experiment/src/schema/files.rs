//! `[[phase.files]]` and the file-system sub-table `fs` that file workloads and the stores on a
//! file system (`[[phase.kv]]` with `store = "lsm"` or `"wiredtiger"`) share.

use serde::Deserialize;

use super::{default_of, one_f64, Amount, Bytes, DurationOrNone, Rate, BtrfsDiscardMode, FileDelete, FsKind, Victim, ZonePlacement};

/// `[[phase.files]]`: a synthetic file workload through a file system made on a namespace at
/// the start of the phase (mkfs: a conventional file system discards the namespace when it
/// discards; a zoned one resets every zone). Groups write files concurrently (directories:
/// the zoned file system gives each its own zones).
///
/// ```toml
/// [[phase.files]]
/// namespace = "z"
/// filesystem = "zoned"        # or "conventional" or "btrfs"
/// amount = "3x"               # bytes or a multiple of the namespace
/// fs = { victim = "cost-benefit" }   # the file system's options, see FsSpec
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
    /// "conventional" (update in place; any drive), "zoned" (log-structured with host GC; a
    /// zoned drive) or "btrfs" (Btrfs-like copy-on-write; either).
    pub filesystem: FsKind,
    /// The file system's options (`[phase.files.fs]`).
    #[serde(default)]
    pub fs: FsSpec,
    /// Application bytes to write: bytes or a multiple of the namespace ("3x").
    pub amount: Amount,
    /// Bytes per write unless a group says otherwise (default 1 MiB).
    #[serde(default = "default_file_write")]
    pub write_size: Bytes,
    /// I/Os in flight (timed runs; default 8).
    pub iodepth: Option<u32>,
    /// `[[phase.files.group]]`: the groups (directories) writing files.
    pub group: Vec<FileGroupSpec>,
    /// The run's scale (set by scaling, not by the file): a Btrfs-like file system's chunks
    /// and clock shrink with the drive.
    #[serde(skip, default = "one_f64")]
    pub scale: f64,
}

/// `fs`: the options of the file system a `[[phase.files]]` workload or a store is on, the
/// sub-table beside its `filesystem` choice (`[phase.files.fs]`, `[phase.kv.fs]`). Which of them
/// a kind of file system reads is said per key; one set on a kind that does not read it is
/// refused when the file system is made.
///
/// ```toml
/// [[phase.kv]]
/// namespace = "data"
/// store = "lsm"
/// filesystem = "btrfs"
/// [phase.kv.fs]
/// zone_placement = "directory"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsSpec {
    /// Conventional and Btrfs: mkfs discards (trims) the whole namespace before the file system
    /// is made (default true, as mkfs.ext4, mkfs.xfs and mkfs.btrfs do; false is
    /// `mkfs.ext4 -E nodiscard`, `mkfs.xfs -K`, `mkfs.btrfs -K`). A drive history's fill or aging
    /// is erased by it, and the run's drive-history line says so. A zoned file system resets its
    /// zones whatever this says.
    pub mkfs_trim: Option<bool>,
    /// Conventional: online discard, a deleted file's blocks are trimmed as it is deleted
    /// (default false: ext4, XFS and Btrfs before Linux 6.2 mount without `discard`).
    #[serde(default)]
    pub discard: bool,
    /// Conventional: allocation chunk (default 8 MiB) at full scale; a scaled run scales it.
    #[serde(default = "default_chunk")]
    pub chunk: Bytes,
    /// Conventional: how far apart the directories' (groups') allocation goals start, at full
    /// scale (default "1GiB", ext4's Orlov spreading; e.g. "500GB" for XFS placing a new
    /// directory in the next of 4 allocation groups of a 2 TB device, or where WiredTiger's
    /// journal directory starts to allocate); a scaled run scales it.
    pub group_spacing: Option<Bytes>,
    /// Zoned: GC victim policy, "greedy" (default) or "cost-benefit".
    #[serde(default)]
    pub victim: Victim,
    /// Zoned: data streams, each writing its own zones (0 = as many as the open-zone limit
    /// allows).
    #[serde(default)]
    pub streams: u32,
    /// Zoned: GC starts below this many free zones (default 2% of the zones, at least 4).
    pub gc_free_zones: Option<u32>,
    /// Btrfs, conventional namespace: the discard mount option, "async" (default), "sync" or
    /// "none".
    pub btrfs_discard: Option<BtrfsDiscardMode>,
    /// Btrfs, zoned namespace: "upstream" (default) or "directory".
    pub zone_placement: Option<ZonePlacement>,
    /// Btrfs, zoned namespace: reclaim a block group once this percentage of its capacity is
    /// freed (`bg_reclaim_threshold`, default 75).
    pub bg_reclaim_threshold: Option<u32>,
    /// Btrfs: file bytes per second reaching the file system at full scale, its clock for the
    /// 30 s commits and the discard delays (default 100 MiB/s; an assumption where the
    /// workload's rate is not published).
    pub fs_write_rate: Option<Rate>,
    /// A store whose engine syncs its files (`store = "wiredtiger"`): the kernel's page cache
    /// between the engine and the file system (default true: MongoDB writes through it). A
    /// page written again before it is written back goes down once; a deleted file's dirty
    /// pages never do.
    pub page_cache: Option<bool>,
    /// The page cache's writeback expiry, `vm.dirty_expire_centisecs` on the engine's clock
    /// (default "30s", Linux's): a file dirty for longer is written back by the flusher (every
    /// 5 s). "none": pages wait for a sync or the end.
    pub writeback_expire: Option<DurationOrNone>,
}

impl Default for FsSpec {
    fn default() -> Self {
        FsSpec {
            mkfs_trim: None,
            discard: false,
            chunk: default_chunk(),
            group_spacing: None,
            victim: Victim::default(),
            streams: 0,
            gc_free_zones: None,
            btrfs_discard: None,
            zone_placement: None,
            bg_reclaim_threshold: None,
            fs_write_rate: None,
            page_cache: None,
            writeback_expire: None,
        }
    }
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
    pub write_size: Option<Bytes>,
}

/// A file size or a range of sizes.
#[derive(Debug, Clone)]
pub enum FileSize {
    /// A fixed size, e.g. "64MiB".
    One(Bytes),
    /// Sizes uniform between the two, e.g. ["16MiB", "64MiB"].
    Range([Bytes; 2]),
}

impl<'de> Deserialize<'de> for FileSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "a size (\"64MiB\") or a range of two ([\"16MiB\", \"64MiB\"])")]
        enum Written {
            One(String),
            Range([String; 2]),
        }
        let size = |t: &str| t.parse::<Bytes>().map_err(serde::de::Error::custom);
        Ok(match Written::deserialize(d)? {
            Written::One(t) => FileSize::One(size(&t)?),
            Written::Range([a, b]) => FileSize::Range([size(&a)?, size(&b)?]),
        })
    }
}

fn default_file_write() -> Bytes {
    default_of("1MiB")
}

fn default_chunk() -> Bytes {
    default_of("8MiB")
}
