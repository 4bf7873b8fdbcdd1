//! Linux dm-zoned over N host-managed SMR disks with an optional regular cache device
//! (wafsim-host's model), as one drive; timed by the disk model per disk, a rate model for the
//! cache device, and the layer's own clock (reclaim workers, throttle).

use super::model::{Clock, ClockFigures, DriveDevice, DriveModel, LayerRows, TimedPhase};
use crate::results::{HostDeviceRow, HostPoint};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, Result};
use wafsim_core::plain::PlainDevice;
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::{BlockDevice, DeviceConfig, DeviceError};
use wafsim_host::{DevId, DmZonedClock, DmZonedConfig, DmZonedDevice, DmZonedTimed};
use wafsim_time::hdd::HddConfig;
use wafsim_time::{DiskTimeline, DiskTimed, PlainTimed, PlainTimeline, PlainTiming};

type Layer = DmZonedDevice<PlainDevice, SmrDevice>;

/// The timing configuration: the cache device's rates (if it has one) and every disk's
/// mechanics, with the zone size on the device and on the full-size disk.
pub struct DmZonedTiming {
    cache: Option<PlainTiming>,
    hdd: HddConfig,
    zone: u64,
    disk_zone: u64,
    conventional: u32,
}

/// The layer's clock and its devices' timelines.
pub struct DmZonedTimelines {
    layer: DmZonedClock,
    cache: Option<PlainTimeline>,
    disks: Vec<DiskTimeline>,
}

/// dm-zoned as one drive, and its clocks. The layer counts as the drive: user data, reclaim
/// copies, zero-fill and metadata sent to its devices are the media writes, in the disks'
/// block size.
pub struct DmZonedDrive {
    dev: Layer,
    clock: Clock<DmZonedTiming, DmZonedTimelines>,
}

impl DmZonedDrive {
    /// dm-zoned over `disks` copies of the SMR disk `disk`, with a plain cache device of
    /// `cache_bytes` or none.
    pub fn new(disk: SmrConfig, disks: u32, cache_bytes: Option<u64>, reserved_zones: u32) -> Result<DmZonedDrive> {
        let cache = cache_bytes.map(|b| PlainDevice::new(b, disk.block_size).map_err(|e| anyhow!("host.dm-zoned.cache_size: {e}"))).transpose()?;
        let disks = (0..disks).map(|_| SmrDevice::new(disk.clone()).map_err(|e| anyhow!("{e}"))).collect::<Result<Vec<_>>>()?;
        let dev = DmZonedDevice::new(cache, disks, &DmZonedConfig::with_reserved(reserved_zones)).map_err(|e| anyhow!("[host] dm-zoned: {e} (a scaled run shrinks the zones, not dm-zoned's metadata per zone: a larger --scale may help)"))?;
        Ok(DmZonedDrive { dev: dev.with_counting_unit(disk.block_size as u64), clock: Clock::Off })
    }
}

/// A timed dm-zoned run that cannot free a zone for waiting writes, explained.
fn dmz_error(e: wafsim_time::RunError, p: &PhaseSpec) -> anyhow::Error {
    match e {
        wafsim_time::RunError::Device(DeviceError::NoReclaimableSpace { .. }) => anyhow!(
            "phase {:?}: dm-zoned: user writes waited more than 600 s (simulated) for a free zone that reclaim could not make; the target is too full for this workload (write less of it, or give it more reserved zones)",
            p.name
        ),
        e => anyhow!(e),
    }
}

impl DriveModel for DmZonedDrive {
    fn device(&self) -> &dyn DriveDevice {
        &self.dev
    }
    fn device_mut(&mut self) -> &mut dyn DriveDevice {
        &mut self.dev
    }
    fn what(&self) -> &'static str {
        "dm-zoned over SMR disks"
    }
    fn describe(&self, _: &ExperimentSpec, _: &DeviceConfig) -> Option<(String, String)> {
        let d = &self.dev;
        let cache = if d.cache_device().is_some() { " and a cache device" } else { "" };
        Some((format!("dm-zoned over {} SMR disk(s){cache}", d.disks().len()), "dm-zoned reclaim (host)".into()))
    }
    fn logical_bytes(&self) -> u64 {
        self.dev.namespace_bytes(0)
    }
    fn physical_bytes(&self) -> u64 {
        let d = &self.dev;
        d.disks().iter().map(|z| z.namespace_bytes(0)).sum::<u64>() + d.cache_device().map_or(0, |c| c.namespace_bytes(0))
    }
    fn layer(&self) -> Option<LayerRows> {
        let d = &self.dev;
        let layer = d.layer();
        let ids = d.cache_device().map(|_| DevId::Cache).into_iter().chain((0..d.disks().len() as u32).map(DevId::Disk));
        let devices = ids.map(|id| {
            let t = layer.traffic(id);
            HostDeviceRow {
                device: match id {
                    DevId::Cache => "cache".into(),
                    DevId::Disk(i) => format!("disk {}", i + 1),
                },
                user_write_bytes: t.user_write_bytes,
                user_read_bytes: t.user_read_bytes,
                reclaim_read_bytes: t.reclaim_read_bytes,
                reclaim_write_bytes: t.reclaim_write_bytes + t.zero_fill_bytes,
                metadata_write_bytes: t.metadata_write_bytes,
                // Neither a disk nor the plain cache device writes more than it is sent.
                media_write_bytes: match id {
                    DevId::Cache => d.cache_device().map_or(0, |c| c.counters().host_write_bytes),
                    DevId::Disk(i) => d.disks()[i as usize].counters().host_write_bytes,
                },
            }
        });
        Some(LayerRows { devices: devices.collect(), tiers: None })
    }
    fn configure_timing(&mut self, spec: &ExperimentSpec) -> Result<bool> {
        let disk = self.dev.disk(0).config();
        // The mechanics of the whole disk, also when the target uses its first zones only.
        let mut whole = disk.clone();
        if let Some(crate::plan::DriveConfig::Smr(z)) = spec.device.zoned_config(&spec.main_namespaces())? {
            whole.zones = z.zones;
        }
        let Some((hdd, disk_zone)) = crate::plan::timing::disk_config(spec, &whole)? else { return Ok(self.clock.configure(None)) };
        let cache = if self.dev.cache_device().is_some() { crate::plan::timing::cache_config(spec)? } else { None };
        Ok(self.clock.configure(Some(DmZonedTiming { cache, hdd, zone: disk.zone_size, disk_zone, conventional: disk.conventional_zones })))
    }
    fn start_clock(&mut self, log_ns: Option<u64>) -> Result<()> {
        let dev = &self.dev;
        self.clock.start(|t| {
            let disks = (0..dev.disks().len())
                .map(|_| DiskTimeline::new(t.hdd.clone(), t.zone, t.disk_zone).map(|tl| tl.with_zone_write_plugging(t.conventional)).map_err(|e| anyhow!("timing.hdd: {e}")))
                .collect::<Result<Vec<_>>>()?;
            let cache = t.cache.map(|c| PlainTimeline::new(c).map_err(|e| anyhow!("timing.cache: {e}"))).transpose()?;
            Ok(DmZonedTimelines { layer: DmZonedClock::new(dev.layer(), log_ns), cache, disks })
        })
    }
    fn run_timed(&mut self, jobs: Vec<wafsim_time::JobSpec>, opts: &wafsim_time::EngineOptions, watch: Option<&mut dyn wafsim_time::Watch>, p: &PhaseSpec) -> Result<TimedPhase> {
        let DmZonedTimelines { layer, cache, disks } = self.clock.running();
        let r = self.dev.with_parts(|dmz, cache_dev, disk_devs| {
            let cache_m = cache_dev.zip(cache.as_mut()).map(|(dev, tl)| PlainTimed::new(dev, tl));
            let disk_ms = disk_devs.iter_mut().zip(disks.iter_mut()).map(|(dev, tl)| DiskTimed::new(dev, tl)).collect();
            wafsim_time::run_on_watched_if(&mut DmZonedTimed::new(dmz, cache_m, disk_ms, layer), jobs, opts, watch)
        });
        let r = r.map_err(|e| dmz_error(e, p));
        let host_points = layer
            .take_samples()
            .into_iter()
            .map(|s| HostPoint {
                t_s: s.t_ns as f64 * 1e-9,
                cache_free: s.cache_free,
                cache_total: s.cache_total,
                user_write_bytes: s.user_write_bytes,
                reclaim_write_bytes: s.reclaim_write_bytes,
            })
            .collect();
        Ok(TimedPhase { run: r?, host_points })
    }
    fn clock(&self) -> ClockFigures {
        self.clock.get().map_or_else(ClockFigures::default, |c| ClockFigures { head_busy_ns: c.disks.iter().map(|d| d.busy_ns).sum(), disks: c.disks.len() as u32, ..Default::default() })
    }
}
