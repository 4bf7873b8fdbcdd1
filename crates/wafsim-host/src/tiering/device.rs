//! The untimed tiering driver: owns both devices, submits every command the layer emits at
//! once, and migrates synchronously after each user command while the watermark says so.

use super::{Tier, TierIo, Tiering, TieringConfig, TieringConfigError, TieringError, BLOCK_SIZE};
use crate::view::DeviceView;
use wafsim_core::blockdev::{BlockDevice, Completion, ZoneAction, ZoneMgmtDone, ZoneTarget};
use wafsim_core::counters::Counters;
use wafsim_core::device::DeviceError;
use wafsim_core::{Io, Op};

/// The tiering layer over owned hot and cold devices, as a block device: the untimed driver of
/// [`Tiering`].
pub struct TieringDevice<H: BlockDevice, C: BlockDevice> {
    pub(super) layer: Tiering,
    pub(super) hot: H,
    pub(super) cold: C,
    buf: Vec<TierIo>,
    log: Option<Vec<TierIo>>,
    /// The counters [`BlockDevice::counters`] reports, current after every command.
    view: DeviceView,
}

impl<H: BlockDevice, C: BlockDevice> TieringDevice<H, C> {
    /// The layer over `hot` and `cold`, sized from their namespace 0.
    pub fn new(hot: H, cold: C, cfg: &TieringConfig) -> Result<Self, TieringConfigError> {
        let layer = Tiering::from_devices(&hot, &cold, cfg)?;
        let mut d = TieringDevice {
            layer,
            hot,
            cold,
            buf: Vec::new(),
            log: None,
            view: DeviceView::new(BLOCK_SIZE),
        };
        d.update_view();
        Ok(d)
    }

    /// Count [`BlockDevice::counters`] in units of `unit` bytes instead of the layer's 4 KiB
    /// blocks, so the layer reports in the unit of whatever it stands in for (an experiment
    /// counts in the cold drive's mapping unit). Panics if `unit` is 0.
    pub fn with_counting_unit(mut self, unit: u64) -> Self {
        self.view = DeviceView::new(unit);
        self.update_view();
        self
    }

    /// The layer (map, watermarks, per-tier counters, [`Tiering::locate`]).
    pub fn layer(&self) -> &Tiering {
        &self.layer
    }

    /// The layer's user-level counters ([`Tiering::counters`]), as opposed to
    /// [`BlockDevice::counters`], which counts both devices' media writes as the layer's.
    pub fn user_counters(&self) -> &Counters {
        self.layer.counters()
    }

    /// The hot device.
    pub fn hot(&self) -> &H {
        &self.hot
    }

    /// The cold device.
    pub fn cold(&self) -> &C {
        &self.cold
    }

    /// Give back the layer and the devices.
    pub fn into_parts(self) -> (Tiering, H, C) {
        (self.layer, self.hot, self.cold)
    }

    /// Record every device command from now on (`true`) or stop and drop the record (`false`).
    pub fn set_io_log(&mut self, on: bool) {
        self.log = on.then(Vec::new);
    }

    /// Take the commands recorded since the last call (empty when logging is off).
    pub fn take_io_log(&mut self) -> Vec<TierIo> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Migrate every hot slot to the cold tier. Returns the slots migrated.
    pub fn migrate_all(&mut self) -> Result<u32, DeviceError> {
        let n = self.layer.migrate_all(&mut self.buf);
        let r = self.dispatch();
        self.update_view();
        r.map(|()| n)
    }

    /// Restate the layer's counters in the view (after every command, failed ones included:
    /// what was sent before the failure counts). Media bytes are each device's media units in
    /// its own block size (a flash drive's mapping unit).
    pub(super) fn update_view(&mut self) {
        let (h, c) = (self.hot.counters(), self.cold.counters());
        let media_bytes = h.media_units() * self.hot.block_size() as u64 + c.media_units() * self.cold.block_size() as u64;
        self.view.update(self.layer.counters(), media_bytes, h.erases + c.erases);
    }

    fn dispatch(&mut self) -> Result<(), DeviceError> {
        for t in self.buf.drain(..) {
            match t.tier {
                Tier::Hot => self.hot.submit(&t.io)?,
                Tier::Cold => self.cold.submit(&t.io)?,
            };
            if let Some(log) = self.log.as_mut() {
                log.push(t);
            }
        }
        Ok(())
    }

    fn run_user(
        &mut self,
        io: &Io,
        f: fn(&mut Tiering, &Io, &mut Vec<TierIo>) -> Result<(), TieringError>,
    ) -> Result<(), DeviceError> {
        let r = f(&mut self.layer, io, &mut self.buf);
        // Commands emitted before a refusal (none today: checks come first) still go out.
        self.dispatch()?;
        r.map_err(tier_err)?;
        self.layer.migrate_to_watermark(&mut self.buf);
        self.dispatch()
    }

    /// One user command, without the counters' update.
    fn command(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        match io.op {
            Op::Write => self.run_user(io, Tiering::map_write)?,
            Op::Read => self.run_user(io, Tiering::map_read)?,
            Op::Trim => self.run_user(io, Tiering::map_trim)?,
            Op::Flush => {
                if io.ns != 0 {
                    return Err(DeviceError::NoSuchNamespace(io.ns));
                }
                let f = Io {
                    offset: 0,
                    len: 0,
                    ..*io
                };
                self.hot.submit(&f)?;
                self.cold.submit(&f)?;
            }
            Op::Append | Op::Zone(_) => return Err(DeviceError::NotZoned { ns: io.ns }),
        }
        Ok(Completion { offset: io.offset })
    }
}

/// The device error a layer refusal maps to.
fn tier_err(e: TieringError) -> DeviceError {
    match e {
        TieringError::NoSuchNamespace(ns) => DeviceError::NoSuchNamespace(ns),
        TieringError::ZeroLength => DeviceError::ZeroLength,
        TieringError::Misaligned { offset, .. } => DeviceError::Zone {
            ns: 0,
            offset,
            status: wafsim_core::zone::ZoneStatus::InvalidField,
        },
        TieringError::OutOfRange { offset, len, size } => DeviceError::OutOfRange {
            ns: 0,
            offset,
            len,
            size,
        },
        TieringError::NoSlot => DeviceError::OutOfSpace { rg: 0 },
    }
}

impl<H: BlockDevice, C: BlockDevice> BlockDevice for TieringDevice<H, C> {
    /// Read, Write, Trim and Flush (passed to both devices); Zone Append and zone management are
    /// refused with `NotZoned` (the layer exposes a regular device).
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        let r = self.command(io);
        self.update_view();
        r
    }

    // The counters once per batch: nobody reads them in between.
    fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        let r = ios.iter().try_for_each(|io| self.command(io).map(|_| ()));
        self.update_view();
        r
    }

    fn zone_mgmt_target(&mut self, ns: u32, _: ZoneTarget, _: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        Err(DeviceError::NotZoned { ns })
    }

    fn namespace_count(&self) -> u32 {
        1
    }

    fn namespace_bytes(&self, ns: u32) -> u64 {
        if ns == 0 {
            self.layer.capacity()
        } else {
            0
        }
    }

    fn block_size(&self) -> u32 {
        super::BLOCK_SIZE as u32
    }

    /// The layer as a device: host bytes are the user's, host units those bytes in the
    /// counting unit ([`TieringDevice::with_counting_unit`]), GC units every other unit both
    /// devices programmed (migration, and each drive's own GC), erases both devices' (so the
    /// WAF is application to NAND). The user-level counters are
    /// [`TieringDevice::user_counters`], per-tier traffic [`Tiering::tier_counters`]; the
    /// devices keep their own.
    fn counters(&self) -> &Counters {
        self.view.counters()
    }
}
