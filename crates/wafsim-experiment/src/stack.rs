//! The devices of a variant and how the experiment's namespaces map onto them: one shared
//! drive, or one drive per namespace (dedicated layout). I/O addressed to the experiment's
//! namespaces is routed to the right drive, so every layout is driven by the same loop and
//! dedicated drives see their I/O in the same interleaved order as a shared drive would.

use crate::sources::Target;
use anyhow::{anyhow, Result};
use wafsim_core::{Counters, Device, DeviceConfig, DeviceError, Io};

/// The drives of one variant.
pub struct Stack {
    pub devices: Vec<Device>,
    /// The experiment's device config (all namespaces, as on a shared drive).
    pub cfg: DeviceConfig,
    /// Per experiment namespace: (drive, namespace index on that drive).
    route: Vec<(u32, u32)>,
    scratch: Vec<Vec<Io>>,
}

impl Stack {
    /// One drive per config; `cfg` is the experiment's config. With one drive the namespaces
    /// keep their indices; with several, drive i holds namespace i alone.
    pub fn new(cfg: DeviceConfig, drives: Vec<DeviceConfig>) -> Result<Stack> {
        let shared = drives.len() == 1;
        assert!(shared || drives.len() == cfg.namespaces.len(), "dedicated layout: one drive per namespace");
        let devices = drives.into_iter().map(|c| Device::new(c).map_err(|e| anyhow!("{e}"))).collect::<Result<Vec<_>>>()?;
        let route = (0..cfg.namespaces.len() as u32).map(|i| if shared { (0, i) } else { (i, 0) }).collect();
        let scratch = devices.iter().map(|_| Vec::new()).collect();
        Ok(Stack { devices, cfg, route, scratch })
    }

    /// Submit I/Os addressed to the experiment's namespaces.
    pub fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        if self.devices.len() == 1 {
            return self.devices[0].submit_batch(ios);
        }
        for b in &mut self.scratch {
            b.clear();
        }
        for io in ios {
            let (d, ns) = self.route[io.ns as usize];
            self.scratch[d as usize].push(Io { ns, ..*io });
        }
        for (dev, b) in self.devices.iter_mut().zip(&self.scratch) {
            if !b.is_empty() {
                dev.submit_batch(b)?;
            }
        }
        Ok(())
    }

    /// All namespaces, addressed as the experiment numbers them.
    pub fn target(&self) -> Target<'_> {
        Target {
            cfg: &self.cfg,
            ns_bytes: self.route.iter().map(|&(d, ns)| self.devices[d as usize].namespace_bytes(ns)).collect(),
            io_ns: (0..self.route.len() as u32).map(Some).collect(),
        }
    }

    /// The namespaces of drive `d` alone, addressed as that drive numbers them (timed runs
    /// drive each drive on its own timeline).
    pub fn device_target(&self, d: usize) -> Target<'_> {
        Target {
            cfg: &self.cfg,
            ns_bytes: self.route.iter().map(|&(dd, ns)| self.devices[dd as usize].namespace_bytes(ns)).collect(),
            io_ns: self.route.iter().map(|&(dd, ns)| (dd as usize == d).then_some(ns)).collect(),
        }
    }

    /// Logical bytes over all drives.
    pub fn logical_bytes(&self) -> u64 {
        self.devices.iter().map(|d| d.config().logical_bytes).sum()
    }
}

/// Counters without the per-namespace and per-frontier lists (for summing across drives).
pub fn strip(c: &Counters) -> Counters {
    let mut t = c.clone();
    t.namespaces.clear();
    t.frontiers.clear();
    t
}
