//! From `[device]` and `[[namespace]]` to the core's device configs: flash geometry, zoned
//! drives, and namespaces on drives of their own (presets at the experiment's scale).

use super::DriveConfig;
use crate::schema::{DeviceSpec, DriveKind, ExperimentSpec, NamespaceSpec, NandGeometry, ZonesSpec};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_core::smr::SmrConfig;
use wafsim_core::units::Bytes;
use wafsim_core::zns::ZnsConfig;
use wafsim_core::zone::ZoneConfig;
use wafsim_core::{DeviceConfig, GcPolicy, NamespaceConfig, Placement};

impl DeviceSpec {
    /// `[device.slc_cache]` in the core's numbers (None when absent or disabled).
    fn slc_cache_config(&self) -> Result<Option<wafsim_core::SlcCacheConfig>> {
        let Some(c) = self.slc_cache.as_ref().filter(|c| c.enabled) else { return Ok(None) };
        Ok(Some(wafsim_core::SlcCacheConfig {
            static_bytes: c.static_size.get(),
            dynamic: c.dynamic,
            bits_per_cell: c.bits_per_cell,
            count_slc_programs: c.count_slc_programs,
        }))
    }

    /// Translate to the core's numeric config for the given namespaces.
    pub fn to_config(&self, namespaces: &[NamespaceSpec], seed: u64) -> Result<DeviceConfig> {
        match self.zoned_config(namespaces)? {
            Some(crate::plan::DriveConfig::Zns(z)) => return Ok(zns_namespaces(&z, namespaces)),
            Some(crate::plan::DriveConfig::Smr(z)) => {
                let zc = z.zone_config().map_err(|e| anyhow!("device.zones: {e}"))?;
                let zns = ZnsConfig { block_size: z.block_size, zones: zc, erase_units_per_zone: 1, finish_pads: false };
                return Ok(zns_namespaces(&zns, namespaces));
            }
            _ => {}
        }
        let Some(capacity) = &self.capacity else {
            bail!("device.capacity missing (e.g. capacity = \"7.68TB\")");
        };
        let logical = capacity.get();
        let mapping_unit = self.mapping_unit.get();
        if mapping_unit > u32::MAX as u64 {
            bail!("device.mapping_unit: {} is too large", Bytes(mapping_unit));
        }
        let erase_unit = match (&self.erase_unit, &self.geometry) {
            (Some(e), None) => e.get(),
            (None, Some(g)) => g.superblock_bytes()?,
            // An explicit erase unit overrides the superblock the geometry implies (scaled runs
            // keep the geometry for the timing model and shrink the erase unit).
            (Some(e), Some(_)) => e.get(),
            (None, None) => bail!("device: erase_unit missing (e.g. erase_unit = \"256MiB\") and no [device.geometry] to derive it from"),
        };
        let geo_raw = self.geometry.as_ref().and_then(|g| g.raw_bytes().transpose()).transpose()?;
        let physical = match (self.over_provisioning, &self.raw_capacity, geo_raw) {
            (Some(op), None, None) => {
                if !(op >= 0.0) || !op.is_finite() {
                    bail!("device.over_provisioning: {op} must be >= 0 ((physical - logical) / logical, e.g. 0.07)");
                }
                let physical = (logical as f64 * (1.0 + op)).round();
                if physical >= u64::MAX as f64 {
                    bail!("device.capacity {} with over_provisioning {op}: the physical capacity does not fit in 2^64 bytes", capacity);
                }
                physical as u64
            }
            (None, Some(raw), None) => raw.get(),
            (None, None, Some(raw)) => raw,
            (None, None, None) => bail!("device: give over_provisioning (e.g. 0.07) or raw_capacity"),
            _ => bail!("device: give only one of over_provisioning, raw_capacity, geometry.blocks_per_plane"),
        };
        let gc_policy = self.gc_policy;
        let fdp_on = self.fdp.as_ref().is_some_and(|f| f.enabled);
        let streams = self.streams.unwrap_or(0);
        if fdp_on && streams > 0 {
            bail!("device: FDP and streams cannot both be enabled");
        }
        let placement = if fdp_on {
            let f = self.fdp.as_ref().expect("checked");
            let types = f.ruh_types()?;
            Placement::Fdp { reclaim_groups: f.reclaim_groups, ruh_types: types }
        } else if streams > 0 {
            Placement::Streams { streams }
        } else {
            Placement::Conventional
        };
        let namespaces = if namespaces.is_empty() {
            vec![NamespaceConfig { name: "ns1".into(), size_bytes: logical, placement_handles: vec![0] }]
        } else {
            namespaces
                .iter()
                .map(|n| {
                    // A sole namespace without a size is the whole drive (as a zoned one is).
                    let size_bytes = match (&n.size, namespaces.len()) {
                        (None, 1) => logical,
                        (None, _) => bail!("namespace {:?}: size missing: with several namespaces each needs size = \"...\" (the drive holds {logical} B)", n.name),
                        (Some(s), _) => s.get(),
                    };
                    Ok(NamespaceConfig {
                        name: n.name.clone(),
                        size_bytes,
                        placement_handles: if n.placement_handles.is_empty() { vec![0] } else { n.placement_handles.clone() },
                    })
                })
                .collect::<Result<_>>()?
        };
        let cfg = DeviceConfig {
            logical_bytes: logical,
            physical_bytes: physical,
            mapping_unit: mapping_unit as u32,
            erase_unit_bytes: erase_unit,
            gc_policy,
            gc_free_min: self.gc_free_min,
            gc_free_target: self.gc_free_target.unwrap_or(self.gc_free_min),
            gc_age_classes: self.gc_age_classes,
            // Only an FDP drive has handles (a conventional one keeps the field false, as its images do).
            fdp_idle_handles_hold_units: self.fdp.as_ref().is_some_and(|f| f.enabled && f.idle_handles_hold_units),
            placement,
            namespaces,
            seed: self.seed.unwrap_or(seed),
            slc_cache: self.slc_cache_config()?,
        };
        cfg.geometry().map_err(|e| anyhow!("device: {e}"))?;
        Ok(cfg)
    }
}

/// Most zones of a zoned drive.
pub const MAX_ZONES: u32 = 1 << 20;

impl DeviceSpec {
    /// The zoned drive to build (None for flash), checked. A zoned drive has one namespace: at
    /// most one `[[namespace]]`, without a size (or with the zones' size).
    pub fn zoned_config(&self, namespaces: &[NamespaceSpec]) -> Result<Option<crate::plan::DriveConfig>> {
        Ok(match self.drive_kind() {
            DriveKind::Flash => {
                if self.zones.is_some() {
                    bail!("[device.zones] needs device.kind = \"zns\" or \"smr\"");
                }
                None
            }
            DriveKind::Zns => self.zns_config(namespaces)?.map(crate::plan::DriveConfig::Zns),
            DriveKind::Smr => Some(crate::plan::DriveConfig::Smr(self.smr_config(namespaces)?)),
        })
    }

    /// The host-managed SMR disk of a `kind = "smr"` drive.
    pub fn smr_config(&self, namespaces: &[NamespaceSpec]) -> Result<SmrConfig> {
        let z = self.zoned_common("smr", namespaces)?;
        let bs = self.mapping_unit.get();
        let zone_size = z.zone_size.get();
        if z.zone_capacity.as_ref().is_some_and(|c| c.get() != zone_size) {
            bail!("device.zones.zone_capacity: an SMR disk's zones are writable to their end (capacity = zone size); remove it");
        }
        if z.max_active != 0 {
            bail!("device.zones.max_active: ZBC disks have no active-zone limit; remove it");
        }
        let cfg = SmrConfig { block_size: bs as u32, zone_size, zones: z.zones, conventional_zones: z.conventional_zones, max_open: z.max_open };
        cfg.validate().map_err(|e| anyhow!("device.zones: {e}"))?;
        self.check_namespace_size(namespaces, zone_size * z.zones as u64, z.zones, zone_size)?;
        Ok(cfg)
    }

    /// Checks every zoned kind shares; the `[device.zones]` table.
    fn zoned_common(&self, kind: &str, namespaces: &[NamespaceSpec]) -> Result<&ZonesSpec> {
        let Some(z) = &self.zones else {
            bail!("device.kind = \"{kind}\" needs [device.zones] (zones, zone_size, ...)");
        };
        for (key, set) in [
            ("capacity", self.capacity.is_some()),
            ("over_provisioning", self.over_provisioning.is_some()),
            ("raw_capacity", self.raw_capacity.is_some()),
            ("erase_unit", self.erase_unit.is_some()),
            ("fdp", self.fdp.as_ref().is_some_and(|f| f.enabled)),
            ("streams", self.streams.is_some_and(|s| s > 0)),
        ] {
            if set {
                bail!("device.{key}: a zoned drive's capacity and layout come from [device.zones]; remove device.{key}");
            }
        }
        if namespaces.len() > 1 {
            bail!("a zoned drive has one zoned namespace; {} [[namespace]] tables given", namespaces.len());
        }
        if z.zones > MAX_ZONES {
            bail!("device.zones.zones = {}: expected at most {MAX_ZONES} (the largest zoned drives have about 100,000 zones; each is state in memory)", z.zones);
        }
        Ok(z)
    }

    fn check_namespace_size(&self, namespaces: &[NamespaceSpec], total: u64, zones: u32, zone_size: u64) -> Result<()> {
        if let Some((n, size)) = namespaces.first().and_then(|n| Some((n, n.size.as_ref()?))) {
            if size.get() != total {
                bail!("namespace {:?}: size {:?}, but the zoned drive's namespace is its zones ({} x {} = {}): omit size", n.name, size.text(), zones, Bytes(zone_size), Bytes(total));
            }
        }
        Ok(())
    }

    /// The ZNS device of a `kind = "zns"` drive (None for other kinds).
    pub fn zns_config(&self, namespaces: &[NamespaceSpec]) -> Result<Option<ZnsConfig>> {
        if self.drive_kind() != DriveKind::Zns {
            return Ok(None);
        }
        let z = self.zoned_common("zns", namespaces)?;
        let bs = self.mapping_unit.get();
        if bs > u32::MAX as u64 || !bs.is_power_of_two() {
            bail!("device.mapping_unit {}: the logical block size of a ZNS drive must be a power of two", Bytes(bs));
        }
        let zone_size = z.zone_size.get();
        let zone_capacity = match &z.zone_capacity {
            Some(c) => c.get(),
            None => zone_size,
        };
        for (key, v) in [("zone_size", zone_size), ("zone_capacity", zone_capacity)] {
            if v % bs != 0 {
                bail!("device.zones.{key} {} is not a whole number of {} blocks", Bytes(v), Bytes(bs));
            }
        }
        let mut zc = ZoneConfig::new(zone_size / bs, zone_capacity / bs, z.zones);
        zc.max_open = z.max_open;
        zc.max_active = z.max_active;
        zc.conventional_zones = z.conventional_zones;
        let cfg = ZnsConfig { block_size: bs as u32, zones: zc, erase_units_per_zone: z.erase_units_per_zone, finish_pads: z.finish_pads };
        cfg.validate().map_err(|e| anyhow!("device.zones: {e}"))?;
        self.check_namespace_size(namespaces, zone_size * z.zones as u64, z.zones, zone_size)?;
        Ok(Some(cfg))
    }
}

/// The namespace list of a ZNS drive, in the flash config's shape the runner reads names, block
/// size and capacity from (no FTL is built from it).
fn zns_namespaces(z: &ZnsConfig, namespaces: &[NamespaceSpec]) -> DeviceConfig {
    let bs = z.block_size as u64;
    let logical = z.zones.zone_size * z.zones.zones as u64 * bs;
    DeviceConfig {
        logical_bytes: logical,
        physical_bytes: z.zones.zone_capacity * z.zones.zones as u64 * bs,
        mapping_unit: z.block_size,
        erase_unit_bytes: z.blocks_per_erase_unit() * bs,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 0,
        gc_free_target: 0,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig {
            name: namespaces.first().map_or("ns1".into(), |n| n.name.clone()),
            size_bytes: logical,
            placement_handles: vec![0],
        }],
        seed: 0,
        slc_cache: None,
    }
}

impl NandGeometry {
    fn dies(&self) -> u64 {
        self.dies_per_channel * self.channels
    }
    /// One block per plane on every die.
    pub fn superblock_bytes(&self) -> Result<u64> {
        let page = self.page_size.get();
        let b = page
            .checked_mul(self.pages_per_block)
            .and_then(|x| x.checked_mul(self.planes_per_die))
            .and_then(|x| x.checked_mul(self.dies()))
            .ok_or_else(|| anyhow!("device.geometry: superblock size overflows"))?;
        if b == 0 {
            bail!("device.geometry: every count must be > 0");
        }
        Ok(b)
    }
    /// Raw capacity from `blocks_per_plane` (superblock bytes x blocks per plane); `None` when it
    /// is not given.
    pub fn raw_bytes(&self) -> Result<Option<u64>> {
        match self.blocks_per_plane {
            None => Ok(None),
            Some(n) => Ok(Some(self.superblock_bytes()? * n)),
        }
    }
}

impl ExperimentSpec {
    /// The namespaces on `[device]` (not on a drive of their own).
    pub fn main_namespaces(&self) -> Vec<NamespaceSpec> {
        self.namespace.iter().filter(|n| n.device.is_none()).cloned().collect()
    }

    /// The experiment's device config: `[device]`'s, with every namespace in the experiment's
    /// order (those on drives of their own as their drives have them).
    pub fn device_config(&self) -> Result<DeviceConfig> {
        let mut cfg = self.device.to_config(&self.main_namespaces(), self.seed)?;
        if self.namespace.iter().any(|n| n.device.is_some()) {
            let main = std::mem::take(&mut cfg.namespaces);
            for n in &self.namespace {
                cfg.namespaces.push(match &n.device {
                    None => main.iter().find(|m| m.name == n.name).cloned().ok_or_else(|| anyhow!("namespace {:?}: not on [device]", n.name))?,
                    Some(_) => own_drive(self, n)?.1,
                });
            }
        }
        Ok(cfg)
    }
}

/// Preset `name` as an experiment of its own with one namespace `ns` of the whole drive (no
/// size: a zoned drive's zones, a flash drive's capacity), at the experiment's scale.
fn preset_spec(spec: &ExperimentSpec, name: &str, ns: &str, what: &str) -> Result<ExperimentSpec> {
    let table = crate::load::presets::device_table(name).with_context(|| what.to_string())?;
    let device: DeviceSpec = toml::Value::Table(table).try_into().map_err(|e| anyhow!("{what}: preset {name:?}: {e}"))?;
    let size = device.capacity.clone();
    let namespace = NamespaceSpec { name: ns.to_string(), size, placement_handles: Vec::new(), device: None };
    let mut s = ExperimentSpec::of_drive(device, namespace);
    super::scale::scale_spec(&mut s, spec.scale)?;
    Ok(s)
}

/// The hot drive of a tiering layer: preset `name` as one namespace of its whole capacity, at
/// the experiment's scale.
pub fn hot_device(spec: &crate::schema::ExperimentSpec, name: &str) -> Result<wafsim_core::DeviceConfig> {
    let s = preset_spec(spec, name, "hot", "host.tiering.hot")?;
    if s.device.is_zoned() {
        bail!("host.tiering.hot: preset {name:?} is a zoned drive (a tiering drive must be a flash drive)");
    }
    s.device.to_config(&s.namespace, spec.seed).with_context(|| format!("host.tiering.hot {name:?}"))
}

/// The drive of a namespace that names its own (`[[namespace]] device = PRESET`), and the
/// namespace as that drive has it (its `size`, already at the experiment's scale, if given;
/// else the whole drive).
pub fn own_drive(spec: &crate::schema::ExperimentSpec, ns: &crate::schema::NamespaceSpec) -> Result<(DriveConfig, wafsim_core::NamespaceConfig)> {
    let name = ns.device.as_deref().expect("a namespace with its own drive");
    let what = format!("namespace {:?}: device", ns.name);
    let mut s = preset_spec(spec, name, &ns.name, &what)?;
    let zoned = s.device.is_zoned();
    if !zoned && ns.size.is_some() {
        s.namespace[0].size = ns.size.clone();
    }
    if zoned && ns.size.is_some() {
        bail!("{what} {name:?} is a zoned drive: its namespace is its zones; remove namespace.size");
    }
    s.namespace[0].placement_handles = ns.placement_handles.clone();
    let mut cfg = s.device.to_config(&s.namespace, spec.seed).with_context(|| format!("{what} {name:?}"))?;
    let drive = match s.device.zoned_config(&s.namespace)? {
        Some(z) => z,
        None => {
            cfg.geometry().map_err(|e| anyhow!("{what} {name:?}: {e}"))?;
            DriveConfig::Flash(cfg.clone())
        }
    };
    Ok((drive, cfg.namespaces.remove(0)))
}
