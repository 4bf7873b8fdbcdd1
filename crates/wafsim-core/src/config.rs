//! Numeric device description and the figures derived from it. Parsing of TOML lives in
//! wafsim-experiment; this module only checks consistency and derives the geometry.

use crate::units::Bytes;
use std::fmt;

/// Garbage-collection victim policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcPolicy {
    /// Fewest valid mapping units first (O(1) bucket queue).
    Greedy,
    /// Highest (1-u)*age/(1+u) first (Rosenblum & Ousterhout, LFS); O(units) scan per victim.
    CostBenefit,
    /// Oldest sealed erase unit first (least recently written).
    Fifo,
    /// Sample N sealed units uniformly, take the one with fewest valid units.
    DChoices(u32),
    /// First the data set under the most pressure, then its unit with the fewest valid units:
    /// a data set is what one write frontier chain holds (a reclaim unit handle's or stream's
    /// host units with its own GC units; the GC units several handles share), its pressure the
    /// sealed erase units it holds in the group. O(units) per victim. Without placement there
    /// is one data set and this is greedy.
    BusiestHandle,
}

impl std::str::FromStr for GcPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "greedy" => Ok(GcPolicy::Greedy),
            "cost-benefit" => Ok(GcPolicy::CostBenefit),
            "fifo" => Ok(GcPolicy::Fifo),
            "busiest-handle" => Ok(GcPolicy::BusiestHandle),
            _ => {
                if let Some(n) = s.strip_prefix("d-choices:") {
                    match n.parse::<u32>() {
                        Ok(n) if n >= 1 => Ok(GcPolicy::DChoices(n)),
                        _ => Err(format!("gc_policy {s:?}: d-choices needs a count >= 1, e.g. \"d-choices:4\"")),
                    }
                } else {
                    Err(format!(
                        "gc_policy {s:?}: expected \"greedy\", \"cost-benefit\", \"fifo\", \"d-choices:N\" or \"busiest-handle\""
                    ))
                }
            }
        }
    }
}

impl fmt::Display for GcPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcPolicy::Greedy => write!(f, "greedy"),
            GcPolicy::CostBenefit => write!(f, "cost-benefit"),
            GcPolicy::Fifo => write!(f, "fifo"),
            GcPolicy::DChoices(n) => write!(f, "d-choices:{n}"),
            GcPolicy::BusiestHandle => write!(f, "busiest-handle"),
        }
    }
}

/// Most GC age classes a device may keep ([`DeviceConfig::gc_age_classes`]).
pub const MAX_GC_AGE_CLASSES: u32 = 8;

/// Reclaim unit handle type (NVMe TP4146).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuhType {
    /// GC may mix this handle's data with that of other initially isolated handles.
    InitiallyIsolated,
    /// GC keeps this handle's data in reclaim units of its own.
    PersistentlyIsolated,
}

impl RuhType {
    /// The name experiment files give the type (`device.fdp.ruh_type`); [`str::parse`] reads
    /// it back.
    pub fn name(self) -> &'static str {
        match self {
            RuhType::InitiallyIsolated => "initially-isolated",
            RuhType::PersistentlyIsolated => "persistently-isolated",
        }
    }
}

impl std::str::FromStr for RuhType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "initially-isolated" | "ii" => Ok(RuhType::InitiallyIsolated),
            "persistently-isolated" | "pi" => Ok(RuhType::PersistentlyIsolated),
            _ => Err(format!("ruh_type {s:?}: expected \"initially-isolated\" or \"persistently-isolated\"")),
        }
    }
}

/// How host writes are steered to write frontiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// One shared host frontier for every namespace (the I/O blender) and one GC frontier.
    Conventional,
    /// Legacy streams directive: one host frontier per stream id (0 = no stream), GC shared.
    Streams {
        /// Stream ids 0..streams, one host frontier each; a write without a valid stream id
        /// goes to stream 0.
        streams: u32,
    },
    /// NVMe Flexible Data Placement.
    Fdp {
        /// Reclaim groups the erase units are split into, each with its own frontiers and GC.
        reclaim_groups: u32,
        /// The type of each reclaim unit handle (index = RUH id), the same in every reclaim
        /// group: whether GC may mix the handle's data with other handles'.
        ruh_types: Vec<RuhType>,
    },
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Conventional => write!(f, "conventional"),
            Placement::Streams { streams } => write!(f, "streams ({streams})"),
            Placement::Fdp { reclaim_groups, ruh_types } => {
                let pi = ruh_types.iter().filter(|t| **t == RuhType::PersistentlyIsolated).count();
                write!(f, "fdp ({reclaim_groups} RG x {} RUH", ruh_types.len())?;
                match pi {
                    0 => write!(f, ", initially isolated)"),
                    n if n == ruh_types.len() => write!(f, ", persistently isolated)"),
                    n => write!(f, ", {n} persistently isolated)"),
                }
            }
        }
    }
}

/// One namespace: an LBA space with its own placement handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceConfig {
    /// What reports and exports call the namespace (the experiment's name for it).
    pub name: String,
    /// Capacity in bytes; the device exposes the whole mapping units of it.
    pub size_bytes: u64,
    /// Placement handle i of this namespace refers to RUH `placement_handles[i]`.
    pub placement_handles: Vec<u16>,
}

/// Everything the core needs to build a device, in plain numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceConfig {
    /// Logical capacity in bytes (the sum of namespaces may not exceed it).
    pub logical_bytes: u64,
    /// Raw (physical) capacity in bytes.
    pub physical_bytes: u64,
    /// FTL mapping unit in bytes (power of two).
    pub mapping_unit: u32,
    /// Erase unit (superblock / reclaim unit) in bytes; a multiple of the mapping unit.
    pub erase_unit_bytes: u64,
    /// How GC chooses its victims.
    pub gc_policy: GcPolicy,
    /// GC starts when a reclaim group's free pool drops below this many erase units (>= 2).
    pub gc_free_min: u32,
    /// GC stops when the free pool holds this many erase units again (>= gc_free_min).
    pub gc_free_target: u32,
    /// GC destinations by age, 1..=[`MAX_GC_AGE_CLASSES`]: 1 (the default) puts every GC copy
    /// of a data set in one GC frontier; k > 1 keeps k GC frontiers per data set and sorts copies
    /// by how often GC has moved them since the host wrote them (a copy out of a host unit goes
    /// to class 1, out of class i to class i + 1, the last class keeps its own), so data that
    /// survives GC again and again (cold) stops sharing units with data that survived once.
    /// A data set is every GC destination's scope: the device (conventional, streams), the
    /// initially isolated handles of a reclaim group, or one persistently isolated handle.
    pub gc_age_classes: u32,
    /// FDP: every reclaim unit handle of every reclaim group references a reclaim unit from the
    /// start, as the specification has it, so a handle that is never written still holds an
    /// erase unit out of the spare (experiment files' default). `false`: a handle takes its
    /// first unit when first written. Ignored without FDP.
    pub fdp_idle_handles_hold_units: bool,
    /// How host writes are steered to write frontiers.
    pub placement: Placement,
    /// The namespaces in order: index i is a command's `ns` i (NVMe nsid i + 1).
    pub namespaces: Vec<NamespaceConfig>,
    /// Seed for the device's own randomness (d-choices sampling).
    pub seed: u64,
    /// pSLC write cache (client drives; `None` = every write programs TLC directly). See
    /// `device/pslc.rs`.
    pub slc_cache: Option<SlcCacheConfig>,
}

/// A pSLC write cache: free erase units programmed one bit per cell take host writes at SLC
/// speed and are folded into TLC (multi-bit) erase units later. Sizing and sources:
/// docs/model.md, "pSLC write cache".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlcCacheConfig {
    /// Host data the cache may always hold, bytes (the static part: blocks reserved for SLC).
    pub static_bytes: u64,
    /// Dynamic part: the cache may also hold this fraction of the free logical space (bytes of
    /// the exported capacity that hold no data), 0 = static only.
    pub dynamic: f64,
    /// Bits per cell of the erase units in their native mode: an erase unit in SLC mode holds
    /// 1 / `bits_per_cell` of its native capacity (3 for TLC).
    pub bits_per_cell: u32,
    /// Whether SLC programs count in the media-written figure (and so in the WAF). Folds and
    /// direct TLC writes always count; both figures are in the counters either way.
    pub count_slc_programs: bool,
}

/// Configuration errors; each says which setting and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A setting out of range or inconsistent with another; the message names it.
    #[error("{0}")]
    Invalid(String),
}

fn invalid<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::Invalid(msg.into()))
}

/// Figures derived from a [`DeviceConfig`]. OP is given in both conventions.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    /// FTL mapping unit in bytes, as configured.
    pub mapping_unit: u32,
    /// Mapping units per erase unit (Np).
    pub units_per_eu: u32,
    /// Logical mapping units of the whole device (capacity rounded down to whole units).
    pub logical_units: u64,
    /// Mapping units exported through namespaces (sum of namespace sizes, rounded down per namespace).
    pub namespace_units: u64,
    /// Erase units of the device: the raw capacity's whole erase units, rounded down to a
    /// multiple of the reclaim groups.
    pub erase_units: u32,
    /// Reclaim groups (FDP's setting; 1 for conventional and streams).
    pub reclaim_groups: u32,
    /// Erase units per reclaim group; group r owns the contiguous run from r * eus_per_rg.
    pub eus_per_rg: u32,
    /// Write frontiers kept open at once (host and GC), over all reclaim groups.
    pub open_frontiers: u32,
    /// Erase units held back: the GC free pool minimum of every reclaim group.
    pub reserved_free_eus: u32,
}

impl Geometry {
    /// Physical mapping units (erase units x Np).
    pub fn physical_units(&self) -> u64 {
        self.erase_units as u64 * self.units_per_eu as u64
    }
    /// OP as (physical - logical) / logical, on the device's logical capacity.
    pub fn op_logical(&self) -> f64 {
        (self.physical_units() as f64 - self.logical_units as f64) / self.logical_units as f64
    }
    /// OP as (physical - logical) / physical ("spare factor").
    pub fn op_physical(&self) -> f64 {
        (self.physical_units() as f64 - self.logical_units as f64) / self.physical_units() as f64
    }
    /// Erase units not needed to hold one copy of every exported LBA.
    pub fn spare_eus(&self) -> i64 {
        self.erase_units as i64 - self.namespace_units.div_ceil(self.units_per_eu as u64) as i64
    }
    /// Physical mapping units that can hold data in steady state (T in Desnoyers' notation):
    /// all erase units except the reserved free pool, minus half of every open frontier (a
    /// frontier is on average half written). See docs/model.md, "Which erase units count as spare".
    pub fn effective_physical_units(&self) -> f64 {
        (self.erase_units as f64 - self.reserved_free_eus as f64 - self.open_frontiers as f64 / 2.0)
            * self.units_per_eu as f64
    }
    /// alpha = T / U with T from [`Self::effective_physical_units`] and U = exported units.
    pub fn effective_alpha(&self) -> f64 {
        self.effective_physical_units() / self.namespace_units as f64
    }
    /// Bytes of memory the simulation's maps and per-unit tables need.
    pub fn memory_bytes(&self) -> u64 {
        // L2P: 4 B per exported unit; P2L: 4 B per physical unit; per erase unit about 40 B;
        // greedy bucket heads: 4 B per (group, valid count).
        4 * self.namespace_units
            + 4 * self.physical_units()
            + 40 * self.erase_units as u64
            + 4 * self.reclaim_groups as u64 * (self.units_per_eu as u64 + 1)
    }
}

impl DeviceConfig {
    /// A conventional device of `erase_units` erase units of `units_per_eu` mapping units of
    /// `mapping_unit` bytes, with one namespace of the whole logical capacity, sized so that
    /// OP = (physical - logical) / logical = `op` (logical rounded down to whole mapping units).
    /// The validation cases and benchmarks use it.
    ///
    /// ```
    /// use wafsim_core::{DeviceConfig, GcPolicy};
    /// let cfg = DeviceConfig::single_namespace(4096, 64, 4096, 0.07, GcPolicy::Greedy, 1);
    /// let g = cfg.geometry().unwrap();
    /// assert!((g.op_logical() - 0.07).abs() < 1e-4);
    /// ```
    pub fn single_namespace(erase_units: u32, units_per_eu: u32, mapping_unit: u32, op: f64, gc_policy: GcPolicy, seed: u64) -> DeviceConfig {
        let mu = mapping_unit as u64;
        let physical = erase_units as u64 * units_per_eu as u64 * mu;
        let logical = (erase_units as f64 * units_per_eu as f64 / (1.0 + op)).floor() as u64 * mu;
        DeviceConfig {
            logical_bytes: logical,
            physical_bytes: physical,
            mapping_unit,
            erase_unit_bytes: units_per_eu as u64 * mu,
            gc_policy,
            gc_free_min: 2,
            gc_free_target: 2,
            gc_age_classes: 1,
            fdp_idle_handles_hold_units: false,
            placement: Placement::Conventional,
            namespaces: vec![NamespaceConfig { name: "ns1".into(), size_bytes: logical, placement_handles: vec![0] }],
            seed,
            slc_cache: None,
        }
    }

    /// Check the configuration and derive its geometry.
    pub fn geometry(&self) -> Result<Geometry, ConfigError> {
        let mu = self.mapping_unit;
        if mu == 0 || !mu.is_power_of_two() || mu < 512 {
            return invalid(format!("mapping_unit {mu} B: expected a power of two >= 512 B, e.g. \"4KiB\""));
        }
        if self.erase_unit_bytes == 0 || self.erase_unit_bytes % mu as u64 != 0 {
            return invalid(format!(
                "erase_unit {}: expected a non-zero multiple of the mapping unit ({})",
                Bytes(self.erase_unit_bytes),
                Bytes(mu as u64)
            ));
        }
        let np = self.erase_unit_bytes / mu as u64;
        if np > u32::MAX as u64 / 2 {
            return invalid("erase_unit: too many mapping units per erase unit");
        }
        let np = np as u32;
        if self.logical_bytes == 0 {
            return invalid("capacity: must be > 0");
        }
        // physical == logical is a valid description (a zoned device keeps no spare); whether
        // the FTL can live with it is checked below, where its spare needs are known.
        if self.physical_bytes < self.logical_bytes {
            return invalid(format!(
                "raw capacity {} is below the logical capacity {}: the flash must at least hold every logical byte \
                 (over_provisioning >= 0, raw_capacity >= capacity)",
                Bytes(self.physical_bytes),
                Bytes(self.logical_bytes)
            ));
        }
        let rgs = match &self.placement {
            Placement::Fdp { reclaim_groups, .. } => *reclaim_groups,
            _ => 1,
        };
        if rgs == 0 {
            return invalid("fdp.reclaim_groups: expected >= 1");
        }
        let total_eus = self.physical_bytes / self.erase_unit_bytes;
        let eus_per_rg = total_eus / rgs as u64;
        let erase_units = eus_per_rg * rgs as u64;
        if erase_units * np as u64 >= u32::MAX as u64 {
            return invalid(format!(
                "{} physical mapping units exceed the 32-bit map limit (2^32 - 1); use a larger mapping_unit",
                erase_units * np as u64
            ));
        }
        let logical_units = self.logical_bytes / mu as u64;
        if self.gc_free_min < 2 {
            return invalid("gc_free_min: expected >= 2 erase units (GC needs one for its own frontier)");
        }
        if self.gc_free_target < self.gc_free_min {
            return invalid("gc_free_target: expected >= gc_free_min");
        }
        if self.namespaces.is_empty() {
            return invalid("no namespace: define at least one [[namespace]]");
        }
        let mut ns_units = 0u64;
        for ns in &self.namespaces {
            let u = ns.size_bytes / mu as u64;
            if u == 0 {
                return invalid(format!("namespace {:?}: size {} is below one mapping unit", ns.name, Bytes(ns.size_bytes)));
            }
            ns_units += u;
        }
        if ns_units > logical_units {
            return invalid(format!(
                "namespaces total {} but the device's capacity is {}",
                Bytes(ns_units * mu as u64),
                Bytes(self.logical_bytes)
            ));
        }
        let k = self.gc_age_classes;
        if !(1..=MAX_GC_AGE_CLASSES).contains(&k) {
            return invalid(format!("gc_age_classes {k}: expected 1..={MAX_GC_AGE_CLASSES} (1 = one GC destination per data set)"));
        }
        let open_per_rg = match &self.placement {
            Placement::Conventional => 1 + k,
            Placement::Streams { streams } => {
                if *streams == 0 || *streams > 65535 {
                    return invalid("streams: expected 1..=65535");
                }
                streams + k
            }
            Placement::Fdp { ruh_types, .. } => {
                if ruh_types.is_empty() || ruh_types.len() > 65535 {
                    return invalid("fdp.ruhs: expected 1..=65535 reclaim unit handles");
                }
                let pi = ruh_types.iter().filter(|t| **t == RuhType::PersistentlyIsolated).count() as u32;
                let ii = ruh_types.len() as u32 - pi;
                for ns in &self.namespaces {
                    if ns.placement_handles.is_empty() {
                        return invalid(format!("namespace {:?}: placement_handles must list at least one RUH", ns.name));
                    }
                    for &h in &ns.placement_handles {
                        if h as usize >= ruh_types.len() {
                            return invalid(format!(
                                "namespace {:?}: placement handle refers to RUH {h}, but the device has {} RUHs (0..{})",
                                ns.name,
                                ruh_types.len(),
                                ruh_types.len() - 1
                            ));
                        }
                    }
                }
                ruh_types.len() as u32 + k * (pi + u32::from(ii > 0))
            }
        };
        if let Some(slc) = &self.slc_cache {
            if self.placement != Placement::Conventional {
                return invalid("slc_cache: only conventional placement has a pSLC cache (client drives)");
            }
            if !(2..=4).contains(&slc.bits_per_cell) || np < slc.bits_per_cell {
                return invalid("slc_cache.bits_per_cell: expected 2..=4 (TLC 3), with at least that many mapping units per erase unit");
            }
            if !(0.0..=1.0).contains(&slc.dynamic) {
                return invalid(format!("slc_cache.dynamic {}: expected a fraction of free space in 0..=1", slc.dynamic));
            }
        }
        let geo = Geometry {
            mapping_unit: mu,
            units_per_eu: np,
            logical_units,
            namespace_units: ns_units,
            erase_units: erase_units as u32,
            reclaim_groups: rgs,
            eus_per_rg: eus_per_rg as u32,
            open_frontiers: open_per_rg * rgs,
            reserved_free_eus: self.gc_free_target * rgs,
        };
        // Every reclaim group must hold its share of data plus its open frontiers and free pool,
        // with at least one more unit so GC can make progress. All placements so far are flash
        // FTLs with GC; a zoned (ZNS) placement would skip this check.
        let data_eus = ns_units.div_ceil(np as u64);
        let spare_needed = (open_per_rg as u64 + self.gc_free_target as u64 + 1) * rgs as u64;
        if erase_units < data_eus + spare_needed {
            let spare = erase_units as i64 - data_eus as i64;
            return invalid(if spare <= 0 {
                self.no_spare_message(spare, open_per_rg, rgs)
            } else {
                format!(
                    "not enough spare erase units: {} erase units of {} hold {} units of data, {} open frontiers and a free pool of {} per reclaim group; \
                     need at least {}. Raise over_provisioning or use a smaller erase_unit",
                    erase_units,
                    Bytes(self.erase_unit_bytes),
                    data_eus,
                    open_per_rg * rgs,
                    self.gc_free_target,
                    data_eus + spare_needed
                )
            });
        }
        Ok(geo)
    }
    /// Why an FTL cannot run on a drive whose flash holds nothing beyond the exported data
    /// (`spare` erase units beyond one copy of it, <= 0), and what to write instead.
    fn no_spare_message(&self, spare: i64, open_per_rg: u32, rgs: u32) -> String {
        let needed = (open_per_rg as u64 + self.gc_free_target as u64 + 1) * rgs as u64;
        // A drive sold as "2 TB, no OP" has 2 TiB = 2048 GiB of flash: the difference between
        // the decimal and the binary unit is its spare. Suggest that reading of the figures
        // when the capacity is a whole number of TB or GB.
        let (tb, gb) = (self.logical_bytes / 1_000_000_000_000, self.logical_bytes / 1_000_000_000);
        let example = if tb > 0 && self.logical_bytes.is_multiple_of(1_000_000_000_000) {
            format!("raw_capacity = \"{}GiB\" with capacity = \"{tb}TB\"", tb * 1024)
        } else if gb > 0 && self.logical_bytes.is_multiple_of(1_000_000_000) {
            format!("raw_capacity = \"{gb}GiB\" with capacity = \"{gb}GB\"")
        } else {
            "raw_capacity = \"2048GiB\" with capacity = \"2TB\"".to_string()
        };
        let op = if self.physical_bytes == self.logical_bytes { " (over_provisioning = 0)" } else { "" };
        format!(
            "no spare erase units: physical capacity {} {} logical {}{op}. A flash FTL needs spare erase units for garbage \
             collection: at least (gc_free_target {} + {} open frontier(s) + 1) x {} reclaim group(s) = {}, here {}. \
             Client drives sold as 'zero OP' keep the GB/GiB difference: write {example}; or give over_provisioning > 0",
            Bytes(self.physical_bytes),
            if self.physical_bytes == self.logical_bytes { "equals" } else { "barely exceeds" },
            Bytes(self.logical_bytes),
            self.gc_free_target,
            open_per_rg,
            rgs,
            needed,
            spare.max(0)
        )
    }
}
