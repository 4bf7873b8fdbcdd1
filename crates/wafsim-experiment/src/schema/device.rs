//! `[device]` and `[[namespace]]`: the drive and its namespaces.

use super::*;

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
    pub capacity: Option<Bytes>,
    /// (physical - logical) / logical, e.g. 0.07. Give this or `raw_capacity` (or a geometry
    /// with `blocks_per_plane`).
    pub over_provisioning: Option<f64>,
    /// Raw (physical) capacity.
    pub raw_capacity: Option<Bytes>,
    /// FTL mapping unit, default "4KiB".
    #[serde(default = "default_mapping_unit")]
    pub mapping_unit: Bytes,
    /// Erase unit (superblock / reclaim unit) size, e.g. "256MiB"; or derive it from `geometry`.
    pub erase_unit: Option<Bytes>,
    /// `[device.geometry]`: the NAND layout; sets the erase unit (and the raw capacity with
    /// `blocks_per_plane`), and the timing model needs it.
    pub geometry: Option<NandGeometry>,
    /// "greedy" | "cost-benefit" | "fifo" | "d-choices:N" | "busiest-handle"; default "greedy".
    /// Parsed when the file is read (a wrong policy is an error at its line).
    #[serde(default = "greedy", deserialize_with = "parsed")]
    pub gc_policy: GcPolicy,
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
    pub static_size: Bytes,
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
    pub zone_size: Bytes,
    /// Default: the zone size.
    pub zone_capacity: Option<Bytes>,
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
    pub page_size: Bytes,
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
    pub size: Option<Bytes>,
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
