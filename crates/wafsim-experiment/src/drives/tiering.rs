//! Hot/cold tiering over two flash drives (wafsim-host's model), as one drive: a staging drive
//! in front of a capacity drive. Untimed only.

use super::model::{ClockFigures, DriveDevice, DriveModel, LayerRows, TimedPhase};
use crate::results::{HostDeviceRow, TierTraffic};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, bail, Result};
use wafsim_core::{BlockDevice, Device, DeviceConfig};
use wafsim_host::{Tier, TieringConfig, TieringDevice};

type Layer = TieringDevice<Device, Device>;

/// Tiering as one drive. The layer counts as the drive: both drives' NAND programs are the
/// media writes (application to NAND), in the cold drive's mapping unit.
pub struct TieringDrive {
    dev: Layer,
}

impl TieringDrive {
    /// Tiering over a hot and a cold flash drive; the experiment counts in the cold drive's
    /// unit.
    pub fn new(hot: DeviceConfig, cold: DeviceConfig, extent_bytes: u64) -> Result<TieringDrive> {
        let unit = cold.mapping_unit as u64;
        let hot = Device::new(hot).map_err(|e| anyhow!("host.tiering.hot: {e}"))?;
        let cold = Device::new(cold).map_err(|e| anyhow!("{e}"))?;
        let cfg = TieringConfig { extent_bytes, ..TieringConfig::default() };
        let dev = TieringDevice::new(hot, cold, &cfg).map_err(|e| anyhow!("[host] tiering: {e}"))?;
        Ok(TieringDrive { dev: dev.with_counting_unit(unit) })
    }

    fn tier(&self, t: Tier) -> TierTraffic {
        let c = self.dev.layer().tier_counters(t);
        TierTraffic { user_write_bytes: c.user_write_bytes, migration_write_bytes: c.migration_write_bytes, user_read_bytes: c.user_read_bytes, migration_read_bytes: c.migration_read_bytes }
    }
}

impl DriveModel for TieringDrive {
    fn device(&self) -> &dyn DriveDevice {
        &self.dev
    }
    fn device_mut(&mut self) -> &mut dyn DriveDevice {
        &mut self.dev
    }
    fn what(&self) -> &'static str {
        "hot/cold tiering over two flash drives"
    }
    fn describe(&self, spec: &ExperimentSpec, cfg: &DeviceConfig) -> Option<(String, String)> {
        let hot = spec.host.as_ref().and_then(|h| h.tiering.hot.as_deref()).unwrap_or("?");
        Some((format!("tiering (hot {hot})"), format!("{} (both drives) + migration (host)", cfg.gc_policy)))
    }
    fn logical_bytes(&self) -> u64 {
        self.dev.namespace_bytes(0)
    }
    fn physical_bytes(&self) -> u64 {
        let d = &self.dev;
        [d.hot(), d.cold()].iter().map(|x| x.geometry().physical_units() * x.config().mapping_unit as u64).sum()
    }
    // Two drives: their erase counts are reported separately (not yet).
    fn layer(&self) -> Option<LayerRows> {
        let media = |d: &Device| d.counters().media_units() * d.config().mapping_unit as u64;
        let devices = [("hot", Tier::Hot, media(self.dev.hot())), ("cold", Tier::Cold, media(self.dev.cold()))]
            .into_iter()
            .map(|(name, t, media_write_bytes)| {
                let t = self.tier(t);
                HostDeviceRow {
                    media_write_bytes,
                    device: name.into(),
                    user_write_bytes: t.user_write_bytes,
                    user_read_bytes: t.user_read_bytes,
                    reclaim_read_bytes: t.migration_read_bytes,
                    reclaim_write_bytes: t.migration_write_bytes,
                    metadata_write_bytes: 0,
                }
            })
            .collect();
        Some(LayerRows { devices, tiers: Some((self.tier(Tier::Hot), self.tier(Tier::Cold))) })
    }
    fn configure_timing(&mut self, spec: &ExperimentSpec) -> Result<bool> {
        if spec.timing.as_ref().is_some_and(|t| t.enabled) {
            bail!("[timing]: the timing model does not cover tiering yet; run with timing off (WAF, per-device traffic)");
        }
        Ok(false)
    }
    fn start_clock(&mut self, _: Option<u64>) -> Result<()> {
        Ok(())
    }
    fn run_timed(&mut self, _: Vec<wafsim_time::JobSpec>, _: &wafsim_time::EngineOptions, _: Option<&mut dyn wafsim_time::Watch>, _: &PhaseSpec) -> Result<TimedPhase> {
        bail!("tiering runs untimed")
    }
    fn clock(&self) -> ClockFigures {
        ClockFigures::default()
    }
}
