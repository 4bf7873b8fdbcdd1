//! `[[phase.files]]`: a synthetic file workload through a file system (wafsim-host's `fs`) on one
//! namespace, as one source of a phase. The file system is made at the start of the phase
//! (mkfs: discard the namespace, or reset every zone) and reports what the application wrote
//! and what it sent down, so results show the file system's own write amplification.

use super::part::{Label, Part, PartTiming, Target};
use crate::schema::{BtrfsDiscardMode, FileDelete, FileSize, FilesSpec, FsKind, FsSpec, Victim, ZonePlacement};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_core::blockdev::ZoneAction;
use wafsim_core::pipeline::{Chain, Script};
use wafsim_core::units::Bytes;
use wafsim_core::{Io, Op, Pid};
use wafsim_host::fs::{BtrfsConfig, BtrfsDiscard, BtrfsFs, BtrfsPlacement, ConvFs, ConvFsConfig, FileSystem, FsSource, GcVictim, ZonedFs, ZonedFsConfig};
use wafsim_workload::files::{DeleteOrder, FileGroup, SyntheticFiles};

/// Default queue depth of a file workload in timed runs.
const DEFAULT_IODEPTH: u32 = 8;

/// The groups of `f`, with sizes in bytes.
fn groups(f: &FilesSpec) -> Result<Vec<FileGroup>> {
    if f.group.is_empty() {
        bail!("needs at least one [[phase.files.group]]");
    }
    let write = f.write_size.get();
    f.group
        .iter()
        .map(|g| {
            let (lo, hi) = match &g.file_size {
                FileSize::One(s) => (s.get(), s.get()),
                FileSize::Range([a, b]) => (a.get(), b.get()),
            };
            let w = match &g.write_size {
                Some(s) => s.get(),
                None => write,
            };
            if w == 0 || w > u32::MAX as u64 / 2 {
                bail!("group {:?}: write_size must be between 1 B and 2 GiB", g.name);
            }
            let order = match g.delete {
                FileDelete::Oldest => DeleteOrder::Oldest,
                FileDelete::Random => DeleteOrder::Random,
            };
            Ok(FileGroup { file_bytes: (lo, hi), live_files: g.live_files, write_bytes: w as u32, weight: g.weight, order, overwrite: g.overwrite })
        })
        .collect()
}

/// Mean write size over the groups, weighted by their shares of the writes.
fn mean_write(groups: &[FileGroup]) -> f64 {
    let w: f64 = groups.iter().map(|g| g.weight).sum();
    groups.iter().map(|g| g.weight * g.write_bytes as f64).sum::<f64>() / w.max(f64::MIN_POSITIVE)
}

/// Which file system to make on a namespace, and its options (`[[phase.files]]`, or a store's
/// in `[[phase.kv]]`).
pub struct FsChoice<'a> {
    /// Conventional, zoned or Btrfs.
    pub filesystem: FsKind,
    /// Its options (the entry's `fs` sub-table).
    pub fs: &'a FsSpec,
    /// The run's scale: a Btrfs-like file system's chunks and clock shrink with it.
    pub scale: f64,
}

impl<'a> FsChoice<'a> {
    fn of_files(f: &'a FilesSpec) -> Self {
        FsChoice { filesystem: f.filesystem, fs: &f.fs, scale: f.scale }
    }

    /// The choice of a store's `[[phase.kv]]` entry, with `filesystem` in place of its own.
    pub fn of_kv(k: &'a crate::schema::KvSpec, filesystem: FsKind) -> Self {
        FsChoice { filesystem, fs: &k.fs, scale: k.scale }
    }

    /// Settings of the other file systems given to this one.
    fn check_btrfs_fields(&self) -> Result<()> {
        let btrfs = self.filesystem == FsKind::Btrfs;
        for (name, set) in [("btrfs_discard", self.fs.btrfs_discard.is_some()), ("zone_placement", self.fs.zone_placement.is_some()), ("bg_reclaim_threshold", self.fs.bg_reclaim_threshold.is_some()), ("fs_write_rate", self.fs.fs_write_rate.is_some())] {
            if set && !btrfs {
                bail!("{name}: a setting of filesystem = \"btrfs\", not of filesystem = \"{}\"", self.filesystem);
            }
        }
        if btrfs && self.fs.discard {
            bail!("discard: filesystem = \"btrfs\" takes btrfs_discard = \"async\" (Linux 6.2+ default), \"sync\" or \"none\" instead");
        }
        Ok(())
    }
}

/// The file system `c` on namespace `ns` (experiment namespace `g`) of `target`, and the I/O
/// that makes it (mkfs: trim the namespace unless `mkfs_trim = false`, or reset every zone).
pub fn make_fs(c: &FsChoice, target: &Target, g: u32, ns: u32, ns_bytes: u64) -> Result<(Box<dyn FileSystem>, Vec<Io>)> {
    let mut mkfs = Vec::new();
    c.check_btrfs_fields()?;
    let fs: Box<dyn FileSystem> = match c.filesystem {
        FsKind::Btrfs => {
            let fs = make_btrfs(c, target, g, ns, ns_bytes)?;
            // mkfs.btrfs trims a conventional device unless -K, and resets every zone of a
            // zoned one.
            if target.zones_of(g).is_some() || crate::schema::mkfs_trims(c.filesystem, c.fs.mkfs_trim) {
                mkfs = fs.mkfs_ios();
            }
            Box::new(fs)
        }
        FsKind::Conventional => {
            // A scaled run shrinks the file system's lengths with the drive (whole blocks, at
            // least one), as Btrfs's chunks:
            // - the allocation chunk: a growing file's unwritten preallocation, which an SSD
            //   never sees written, keeps its share of the namespace (and a chunk its share of
            //   an erase unit);
            // - the spacing of the groups' first goals (1 GiB): a group (a store's journal
            //   directory) starts its allocation cursor at the same share of the namespace as
            //   at full scale, not at 1 GiB modulo a scaled namespace (7.4% of it at 1/2000,
            //   54% at 1/1000, 5.4% at 1/100, against 0.05% of a 2 TB drive). Where the cursors
            //   start decides how much of a never-trimmed namespace they have swept, so mapped
            //   on the drive, when a run is measured.
            let full = ConvFsConfig::new(ns, ns_bytes);
            let block = full.block_bytes as u64;
            let shrink = |b: u64| ((b as f64 * c.scale.min(1.0)) as u64 / block * block).max(block);
            let chunk = shrink(c.fs.chunk.get());
            let spread = match &c.fs.group_spacing {
                // 0: every group starts at the namespace's start.
                Some(g) => match g.get() {
                    0 => 0,
                    g => shrink(g),
                },
                None => shrink(full.group_spread_bytes),
            };
            let fs = ConvFs::new(ConvFsConfig { discard: c.fs.discard, chunk_bytes: chunk, group_spread_bytes: spread, ..full }).map_err(|e| anyhow!("{e}"))?;
            if crate::schema::mkfs_trims(c.filesystem, c.fs.mkfs_trim) {
                // mkfs.ext4, mkfs.xfs and mkfs.btrfs discard the whole device first unless told not to.
                let mut off = 0;
                while off < ns_bytes {
                    let len = (ns_bytes - off).min(1 << 30);
                    mkfs.push(Io { op: Op::Trim, ns, offset: off, len: len as u32, pid: Pid::NONE });
                    off += len;
                }
            }
            Box::new(fs)
        }
        FsKind::Zoned => {
            if c.fs.mkfs_trim == Some(false) {
                bail!("mkfs_trim = false: a zoned file system resets every zone it will write at mkfs (a sequential zone is written from its start), so it cannot keep what a zone held; mkfs_trim is a setting of filesystem = \"conventional\"");
            }
            let Some(z) = target.zones_of(g) else {
                bail!("filesystem = \"zoned\" needs a zoned namespace (device.kind = \"zns\" or \"smr\")");
            };
            let budget = match zone_limit(&z) {
                0 => 16,
                n => n,
            };
            let mut zc = ZonedFsConfig::new(ns, z.zones, z.zone_size, z.zone_capacity, budget);
            zc.first_zone = z.conventional_zones;
            zc.streams = c.fs.streams;
            zc.victim = match c.fs.victim {
                Victim::Greedy => GcVictim::Greedy,
                Victim::CostBenefit => GcVictim::CostBenefit,
            };
            if let Some(low) = c.fs.gc_free_zones {
                zc.gc_low_zones = low;
                zc.gc_high_zones = low + (z.zones / 100).max(2);
            }
            let fs = ZonedFs::new(zc).map_err(|e| anyhow!("{e}"))?;
            for zone in z.conventional_zones..z.zones {
                mkfs.push(Io { op: Op::Zone(ZoneAction::Reset), ns, offset: zone as u64 * z.zone_size, len: 0, pid: Pid::NONE });
            }
            Box::new(fs)
        }
    };
    Ok((fs, mkfs))
}

/// Zones the device lets a file system keep open and active at once: the lower of its open and
/// active limits, 0 when it has neither.
fn zone_limit(z: &wafsim_core::blockdev::ZoneGeometry) -> u32 {
    match (z.max_open, z.max_active) {
        (0, a) | (a, 0) => a,
        (o, a) => o.min(a),
    }
}

/// A Btrfs-like file system on namespace `ns`: zoned mode on a zoned namespace. A scaled run
/// shrinks its conventional chunks (as mkfs sizes them for the full-scale device) and its clock
/// (bytes per second) with the drive, so the file system has as many block groups and commits
/// per byte written as at full scale, and its commits' metadata (`BtrfsConfig::scale`), so as
/// many metadata bytes per file byte.
fn make_btrfs(c: &FsChoice, target: &Target, g: u32, ns: u32, ns_bytes: u64) -> Result<BtrfsFs> {
    let s = c.scale.min(1.0);
    let mut cfg = match target.zones_of(g) {
        Some(z) => {
            if c.fs.mkfs_trim == Some(false) {
                bail!("mkfs_trim = false: mkfs.btrfs resets every zone of a zoned device (it cannot keep what a zone held)");
            }
            if z.conventional_zones > 0 {
                bail!("filesystem = \"btrfs\" on a namespace with {} conventional zones: the model's zoned mode takes sequential zones only", z.conventional_zones);
            }
            let active = zone_limit(&z);
            if active != 0 && active < 8 {
                bail!("filesystem = \"btrfs\": the device allows {active} open or active zones; Linux refuses to mount zoned Btrfs with fewer than 8 (BTRFS_MIN_ACTIVE_ZONES)");
            }
            let mut cfg = BtrfsConfig::zoned(ns, z.zones as u64 * z.zone_size, z.zone_size, z.zone_capacity, active);
            cfg.placement = match c.fs.zone_placement.unwrap_or_default() {
                ZonePlacement::Upstream => BtrfsPlacement::Upstream,
                ZonePlacement::Directory => BtrfsPlacement::PerGroup,
            };
            if let Some(t) = c.fs.bg_reclaim_threshold {
                if !(1..=100).contains(&t) {
                    bail!("bg_reclaim_threshold {t}: expected a percentage from 1 to 100");
                }
                cfg.bg_reclaim_threshold = t;
            }
            if c.fs.btrfs_discard.is_some() {
                bail!("btrfs_discard: zoned Btrfs resets zones instead of discarding (btrfs_check_mountopts_zoned); a setting of a conventional namespace");
            }
            cfg
        }
        None => {
            if c.fs.zone_placement.is_some() || c.fs.bg_reclaim_threshold.is_some() {
                bail!("zone_placement and bg_reclaim_threshold: settings of btrfs on a zoned namespace");
            }
            // Chunk sizes as mkfs picks them for the full-scale device (the metadata chunk is
            // 1 GiB above 50 GiB), then shrunk with the drive.
            let full = BtrfsConfig::conventional(ns, (ns_bytes as f64 / s) as u64);
            let mut cfg = BtrfsConfig::conventional(ns, ns_bytes);
            let mib = 1u64 << 20;
            let shrink = |b: u64| ((b as f64 * s) as u64 / mib * mib).max(mib);
            cfg.data_chunk_bytes = shrink(full.data_chunk_bytes);
            cfg.meta_chunk_bytes = shrink(full.meta_chunk_bytes);
            cfg.discard = match c.fs.btrfs_discard.unwrap_or_default() {
                BtrfsDiscardMode::Async => BtrfsDiscard::Async,
                BtrfsDiscardMode::Sync => BtrfsDiscard::Sync,
                BtrfsDiscardMode::None => BtrfsDiscard::None,
            };
            cfg
        }
    };
    let rate = match &c.fs.fs_write_rate {
        Some(r) => r.bytes_per_s(),
        None => cfg.write_rate as f64,
    };
    cfg.write_rate = ((rate * s) as u64).max(1);
    // Commits hold `s` of a full-scale commit's bytes: their metadata is scaled to match.
    cfg.scale = s;
    BtrfsFs::new(cfg).map_err(|e| anyhow!("{e}"))
}

/// The parts of `[[phase.files]]` entries on `target`.
pub fn file_parts(
    files: &[FilesSpec],
    target: &Target,
    seed: impl Fn(usize, u32) -> u64,
    parts: &mut Vec<Part>,
    mut next_group: impl FnMut() -> u32,
) -> Result<()> {
    for (i, f) in files.iter().enumerate() {
        let ctx = || format!("[[phase.files]] #{} on {}", i + 1, f.namespace);
        let Some((g, ns, ns_bytes)) = target.find(&f.namespace) else { continue };
        // A multiple of what the file system can hold.
        let room = target.room(g, ns_bytes);
        let amount = f.amount.of(room);
        let groups = groups(f).with_context(ctx)?;
        // A file larger than the file system can never complete: it was cut short by the
        // workload's amount without a word, or ran the file system out of space.
        for (spec, g) in f.group.iter().zip(&groups) {
            if g.file_bytes.1 > room {
                bail!(
                    "{}: group {:?}: file_size up to {} is larger than the {} the file system on namespace {:?} can hold (sizes as simulated, after --scale): no such file can complete; give file sizes below that",
                    ctx(),
                    spec.name,
                    Bytes(g.file_bytes.1),
                    Bytes(room),
                    f.namespace
                );
            }
        }
        let mean_write = mean_write(&groups);
        let synthetic = SyntheticFiles::new(groups, amount, seed(i, g)).map_err(|e| anyhow!("{e}")).with_context(ctx)?;
        if f.fs.page_cache.is_some() || f.fs.writeback_expire.is_some() {
            bail!("{}: page_cache and writeback_expire are settings of [[phase.kv]] store = \"wiredtiger\" (a file workload does not sync its files: its writes go down at once)", ctx());
        }
        let (fs, mkfs) = make_fs(&FsChoice::of_files(f), target, g, ns, ns_bytes).with_context(ctx)?;
        // mkfs first; the file system's refusals come out of fill, its counts from figures.
        let source = Chain::new(vec![Box::new(Script::new(mkfs)), Box::new(FsSource::new(synthetic, fs))]);
        let label = Label { name: format!("files{} ({})", i + 1, f.filesystem), namespace: f.namespace.clone() };
        parts.push(Part {
            source: Box::new(source),
            weight: 1,
            label,
            timing: PartTiming { iodepth: f.iodepth.unwrap_or(DEFAULT_IODEPTH).max(1), mean_io_bytes: mean_write, ..Default::default() },
            group: next_group(),
            stage: 0,
            row: Some(f.filesystem.to_string()),
        });
    }
    Ok(())
}
