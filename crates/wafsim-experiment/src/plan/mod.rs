//! The plan of a variant: which drives it has and how they are built (sizes, scaling, timing
//! configurations), and the check that a resolved variant can run. Nothing here runs I/O.

use crate::schema::{ExperimentSpec, HostLayer, Layout, Variant};
use std::path::Path;
use anyhow::{anyhow, bail, Result};
use wafsim_core::smr::SmrConfig;
use wafsim_core::zns::ZnsConfig;
use wafsim_core::DeviceConfig;

pub mod device;
pub mod scale;
pub mod timing;
mod validate;
pub mod window;

/// Parse an experiment file and resolve its variants (one variant named "default" if none),
/// each checked as `wafsim run` checks it.
pub fn load_experiment(path: &Path) -> Result<Vec<Variant>> {
    crate::load::load_variants(path, &ExperimentSpec::validate)
}

/// Like [`load_experiment`] from a string; `origin` names the source in error messages.
pub fn parse_experiment(text: &str, origin: &str) -> Result<Vec<Variant>> {
    crate::load::parse_variants(text, origin, &ExperimentSpec::validate)
}

/// Variant `v` with the keys of `set` overridden (dotted paths into its document), checked as
/// `wafsim run` checks it; unscaled.
pub fn variant_with(v: &Variant, set: &toml::Table) -> Result<Variant> {
    crate::load::variant_with(v, set, &ExperimentSpec::validate)
}

/// What to build for one drive.
#[derive(Debug, Clone)]
pub enum DriveConfig {
    /// A flash SSD with a device FTL.
    Flash(DeviceConfig),
    /// A ZNS SSD.
    Zns(ZnsConfig),
    /// A host-managed SMR disk.
    Smr(SmrConfig),
    /// Linux dm-zoned over `disks` SMR disks, with a regular cache device of `cache_bytes`.
    DmZoned {
        /// The SMR disk each of the `disks` is a copy of.
        disk: SmrConfig,
        /// Number of disks.
        disks: u32,
        /// Size of the regular cache device, bytes; `None`: the disks' conventional zones are
        /// the cache (single-device mode).
        cache_bytes: Option<u64>,
        /// Sequential zones reserved for reclaim (dmzadm `--seq`).
        reserved_zones: u32,
    },
    /// Hot/cold tiering over two flash drives.
    Tiering {
        /// The hot (staging) drive.
        hot: DeviceConfig,
        /// The cold (capacity) drive; the exposed namespace is its namespace 0, rounded down to
        /// whole extents.
        cold: DeviceConfig,
        /// Size of the extents data moves between the tiers in, bytes.
        extent_bytes: u64,
    },
}

impl DriveConfig {
    /// The device config a drive's workloads are sized against: a flash drive's own, the
    /// capacity drive's under tiering, the experiment's for zoned drives and dm-zoned.
    pub fn sizing<'a>(&'a self, experiment: &'a DeviceConfig) -> &'a DeviceConfig {
        match self {
            DriveConfig::Flash(c) => c,
            DriveConfig::Tiering { cold, .. } => cold,
            DriveConfig::Zns(_) | DriveConfig::Smr(_) | DriveConfig::DmZoned { .. } => experiment,
        }
    }

    /// The flash FTLs the drive holds (their mapping tables are most of a run's memory).
    pub fn ftls(&self) -> Vec<&DeviceConfig> {
        match self {
            DriveConfig::Flash(c) => vec![c],
            DriveConfig::Tiering { hot, cold, .. } => vec![hot, cold],
            DriveConfig::Zns(_) | DriveConfig::Smr(_) | DriveConfig::DmZoned { .. } => Vec::new(),
        }
    }
}

/// The drive configs of a variant: the experiment's drive, or one drive per namespace of the
/// namespace's size with the same OP and erase unit (dedicated layout). A ZNS drive has one
/// namespace, so both layouts are the drive itself.
pub fn drive_configs(spec: &ExperimentSpec, cfg: &DeviceConfig) -> Result<Vec<DriveConfig>> {
    // The host layer's spec is checked when the experiment is parsed (`ExperimentSpec::validate`).
    match spec.host.as_ref().map(|h| (h, h.layer)) {
        Some((h, HostLayer::Tiering)) => {
            let hot = crate::plan::device::hot_device(spec, h.tiering.hot.as_deref().expect("validated: tiering names its hot drive"))?;
            let extent_bytes = h.tiering.extent.as_ref().map_or(1 << 20, crate::schema::Bytes::get);
            return Ok(vec![DriveConfig::Tiering { hot, cold: cfg.clone(), extent_bytes }]);
        }
        Some((h, HostLayer::DmZoned)) => {
            let Some(DriveConfig::Smr(mut disk)) = spec.device.zoned_config(&spec.main_namespaces())? else {
                unreachable!("validated: dm-zoned runs over an SMR drive")
            };
            if let Some(n) = h.dm_zoned.disk_zones {
                if n > disk.zones || n <= disk.conventional_zones {
                    bail!("host.dm-zoned.disk_zones = {n}: expected more than the disk's {} conventional zones and at most its {} zones", disk.conventional_zones, disk.zones);
                }
                disk.zones = n;
            }
            // "none" (or no key): single-device mode, the disks' conventional zones are the cache.
            let cache_bytes = h.dm_zoned.cache_size.as_ref().and_then(|c| c.given()).map(crate::schema::Bytes::get);
            return Ok(vec![DriveConfig::DmZoned { disk, disks: h.dm_zoned.disks, cache_bytes, reserved_zones: h.dm_zoned.reserved_zones }]);
        }
        _ => {}
    }
    let main_zoned = spec.device.zoned_config(&spec.main_namespaces())?;
    let own_drives = spec.namespace.iter().any(|n| n.device.is_some());
    if let Some(z) = main_zoned.as_ref().filter(|_| !own_drives) {
        return Ok(vec![z.clone()]);
    }
    if spec.layout != Layout::Dedicated {
        return Ok(vec![DriveConfig::Flash(cfg.clone())]);
    }
    let ratio = cfg.physical_bytes as f64 / cfg.logical_bytes as f64;
    cfg.namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            if let Some(n) = spec.namespace.get(i).filter(|n| n.device.is_some()) {
                return Ok(crate::plan::device::own_drive(spec, n)?.0);
            }
            if let Some(z) = &main_zoned {
                return Ok(z.clone());
            }
            let mut c = cfg.clone();
            c.logical_bytes = ns.size_bytes;
            c.physical_bytes = (ns.size_bytes as f64 * ratio).round() as u64;
            c.namespaces = vec![ns.clone()];
            c.seed = cfg.seed.wrapping_add(i as u64);
            c.geometry().map_err(|e| anyhow!("dedicated drive for namespace {:?}: {e}", ns.name))?;
            Ok(DriveConfig::Flash(c))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::NandGeometry;
    use wafsim_core::Placement;

    const DOC: &str = r#"
name = "t"
[device]
capacity = "1GiB"
over_provisioning = 0.25
erase_unit = "4MiB"
[device.fdp]
ruhs = 2
[[namespace]]
name = "a"
size = "512MiB"
placement_handles = [0]
[[namespace]]
name = "b"
size = "512MiB"
placement_handles = [1]
[[workload]]
namespace = "a"
pattern = "sequential"
bs = "128KiB"
amount = "2x"
[[variant]]
name = "off"
[[variant]]
name = "on"
device.fdp.enabled = true
"#;

    #[test]
    fn variants_merge() {
        let v = parse_experiment(DOC, "t.toml").unwrap();
        assert_eq!(v.len(), 2);
        let off = v[0].spec.device.to_config(&v[0].spec.namespace, 1).unwrap();
        let on = v[1].spec.device.to_config(&v[1].spec.namespace, 1).unwrap();
        assert_eq!(off.placement, Placement::Conventional);
        assert!(matches!(on.placement, Placement::Fdp { ref ruh_types, .. } if ruh_types.len() == 2));
        assert_eq!(v[0].spec.workload[0].amount_bytes(512 << 20), 1 << 30);
    }

    #[test]
    fn errors_name_the_place() {
        let e = parse_experiment(&DOC.replace("bs = \"128KiB\"", "bs = \"12QB\""), "t.toml").unwrap_err();
        let msg = format!("{e:#}");
        // Refused as the file is read, at the value's line and column, with the key.
        assert!(msg.starts_with("t.toml:20:6: workload.bs = \"12QB\": unknown unit suffix"), "{msg}");
        let e = parse_experiment(&DOC.replace("erase_unit", "erase_uint"), "t.toml").unwrap_err();
        let msg = format!("{e:#}");
        let line = msg.split(':').nth(1).and_then(|l| l.parse::<usize>().ok());
        assert!(msg.starts_with("t.toml:") && line.is_some() && msg.contains("unknown field `erase_uint`"), "{msg}");
        let e = parse_experiment(&DOC.replace("namespace = \"a\"", "namespace = \"zz\""), "t.toml").unwrap_err();
        assert!(format!("{e:#}").contains("no namespace named \"zz\""));
    }

    #[test]
    fn geometry_derives_erase_unit_and_raw_capacity() {
        let g = NandGeometry {
            page_size: "16KiB".parse().unwrap(),
            pages_per_block: 1536,
            planes_per_die: 4,
            dies_per_channel: 4,
            channels: 8,
            blocks_per_plane: Some(100),
        };
        assert_eq!(g.superblock_bytes().unwrap(), 16384 * 1536 * 4 * 32);
        assert_eq!(g.raw_bytes().unwrap(), Some(16384 * 1536 * 4 * 32 * 100));
    }
}
