//! The untimed dm-zoned driver: owns the devices, submits every command the layer emits at
//! once, and runs reclaim synchronously.
//!
//! What the kernel's time-based rules become without time:
//! - **Busy.** Commands arrive back to back, so the target is never idle while a workload runs.
//!   The kernel evaluates the watermark rule whenever a user write allocates a zone (each
//!   allocation calls `dmz_schedule_reclaim`) and every 10 s; the unmapped percentage only drops
//!   at allocations, so checking after every user command sees every crossing. After each
//!   command the driver reclaims zone after zone, round robin over the disk workers, while some
//!   worker's rule says so (`p <= 30`): reclaim keeps up instantly, so the unmapped percentage
//!   settles just above 30 %, as it does in the kernel when reclaim keeps pace.
//! - **No free zone.** A write that needs a zone when none is free stalls (the kernel's writer
//!   sleeps in `dmz_wait_for_free_zones`); the driver reclaims zones until one is free and
//!   resubmits the rest of the write. If no worker can make progress, the write fails with
//!   `DeviceError::NoReclaimableSpace`.
//! - **Idle.** [`DmZonedDevice::idle`] stands for a pause of at least 10 s
//!   (`DMZ_IDLE_PERIOD`): every worker reclaims while it finds a victim (with a cache device, also
//!   the disks' random zones once the cache is empty), then the periodic metadata flush runs.
//!   Simplification: the kernel keeps one access time per worker and refreshes it only for BIOs
//!   whose chunk's data zone is on that worker's device, so with a cache device a disk worker
//!   turns "idle" (reclaims without watermark, throttle 100 %) after 10 s in which the user only
//!   touched chunks held in cache zones, even though the target is busy. Untimed, every worker
//!   is busy while commands run; a timed driver can follow the kernel with
//!   [`DmZoned::chunk_device`] and [`DmZoned::should_reclaim`] per worker.
//! - **Throttle.** kcopyd's duty-cycle throttle (75 % busy, 100 % idle or below 15 %) only
//!   spreads copies over time; untimed it changes nothing and is not applied.
//! - **Periodic flush.** The kernel flushes metadata every 10 s. Untimed, the driver can flush
//!   after every N bytes of user writes ([`DmZonedDevice::set_flush_every_bytes`], a proxy for
//!   10 s at a known write rate). It is off by default: the right N depends on the throughput,
//!   which the untimed model does not know; a flush already follows every reclaimed zone, so in
//!   steady state the periodic flush only coalesces a little more; and its cost is a few 4 KiB
//!   blocks per flush, negligible next to 256 MiB zones. A timed driver calls
//!   [`DmZoned::flush_metadata`] on its own 10 s clock.

use super::config::{ConfigError, DmZonedConfig, BLOCK_SIZE};
use super::reclaim::ReclaimProgress;
use super::{DevId, DevIo, DmZoned, HostError, MapStatus, StallReason};
use crate::view::DeviceView;
use wafsim_core::blockdev::{BlockDevice, Completion, ZoneAction, ZoneTarget};
use wafsim_core::counters::Counters;
use wafsim_core::device::DeviceError;
use wafsim_core::zone::ZoneStatus;
use wafsim_core::{Io, Op};

/// dm-zoned over owned devices, as a block device: the untimed driver of [`DmZoned`].
pub struct DmZonedDevice<C: BlockDevice, Z: BlockDevice> {
    pub(super) layer: DmZoned,
    pub(super) cache: Option<C>,
    pub(super) disks: Vec<Z>,
    buf: Vec<DevIo>,
    log: Option<Vec<DevIo>>,
    flush_every: Option<u64>,
    pub(super) since_flush: u64,
    pub(super) rr: u32,
    /// The counters [`BlockDevice::counters`] reports, current after every command.
    view: DeviceView,
}

impl<C: BlockDevice, Z: BlockDevice> DmZonedDevice<C, Z> {
    /// Format the devices as dmzadm would and start the target: the disks' sequential zones are
    /// reset (`dmzadm --format` does so; format-time metadata writes are not counted).
    pub fn new(cache: Option<C>, mut disks: Vec<Z>, cfg: &DmZonedConfig) -> Result<Self, ConfigError> {
        let layer = DmZoned::from_devices(cache.as_ref(), &disks, cfg)?;
        for (i, d) in disks.iter_mut().enumerate() {
            d.zone_mgmt_target(0, ZoneTarget::All, ZoneAction::Reset)
                .map_err(|error| ConfigError::Format { disk: i, error })?;
        }
        let view = DeviceView::new(BLOCK_SIZE);
        let mut d = DmZonedDevice { layer, cache, disks, buf: Vec::new(), log: None, flush_every: None, since_flush: 0, rr: 0, view };
        d.update_view();
        Ok(d)
    }

    /// Count [`BlockDevice::counters`] in units of `unit` bytes instead of the layer's 4 KiB
    /// blocks, so the layer reports in the unit of whatever it stands in for (an experiment
    /// counts in its disks' block size). Panics if `unit` is 0.
    pub fn with_counting_unit(mut self, unit: u64) -> Self {
        self.view = DeviceView::new(unit);
        self.update_view();
        self
    }

    /// The layer (mapping, statistics, [`DmZoned::locate`]).
    pub fn layer(&self) -> &DmZoned {
        &self.layer
    }

    /// The layer's user-level counters ([`DmZoned::counters`]: 4 KiB blocks, reclaim copies as
    /// GC, no metadata), as opposed to [`BlockDevice::counters`], which counts every byte the
    /// devices took as media.
    pub fn user_counters(&self) -> &Counters {
        self.layer.counters()
    }

    /// The cache device, if any.
    pub fn cache_device(&self) -> Option<&C> {
        self.cache.as_ref()
    }

    /// Disk `i`.
    pub fn disk(&self, i: usize) -> &Z {
        &self.disks[i]
    }

    /// All disks.
    pub fn disks(&self) -> &[Z] {
        &self.disks
    }

    /// Run `f` on the layer and the devices, to drive them from outside (the timed driver).
    /// The counters are brought up to date when `f` returns, so they are current whenever
    /// anyone can read them.
    pub fn with_parts<R>(&mut self, f: impl FnOnce(&mut DmZoned, Option<&mut C>, &mut [Z]) -> R) -> R {
        let r = f(&mut self.layer, self.cache.as_mut(), &mut self.disks);
        self.update_view();
        r
    }

    /// Give back the layer and the devices.
    pub fn into_parts(self) -> (DmZoned, Option<C>, Vec<Z>) {
        (self.layer, self.cache, self.disks)
    }

    /// Record every device command from now on (`true`) or stop and drop the record (`false`).
    pub fn set_io_log(&mut self, on: bool) {
        self.log = on.then(Vec::new);
    }

    /// Take the commands recorded since the last call (empty when logging is off).
    pub fn take_io_log(&mut self) -> Vec<DevIo> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Flush metadata after every `bytes` bytes of user writes (the untimed stand-in for the
    /// 10 s periodic flush); `None` (the default) turns it off.
    pub fn set_flush_every_bytes(&mut self, bytes: Option<u64>) {
        self.flush_every = bytes.filter(|&b| b > 0);
    }

    /// An idle period of at least 10 s: every worker reclaims while it finds something to
    /// reclaim, then the periodic metadata flush runs. Returns the zones reclaimed.
    pub fn idle(&mut self) -> Result<u64, DeviceError> {
        let r = self.idle_period();
        self.update_view();
        r
    }

    fn idle_period(&mut self) -> Result<u64, DeviceError> {
        // Every zone needs at most two rounds (a buffered chunk: merge, then move); the cap
        // only guards against a random-to-random shuffle the kernel would also repeat forever
        // when no sequential zone is free.
        let cap = 2 * self.layer.layout().nr_zones as u64 + 8;
        let n = self.run_reclaim(true, cap, |_| false)?;
        self.layer.flush_metadata(&mut self.buf);
        self.dispatch()?;
        Ok(n)
    }

    /// Restate the layer's counters in the view (after every command, failed ones included:
    /// what was sent before the failure counts).
    pub(super) fn update_view(&mut self) {
        self.view.update(self.layer.counters(), self.layer.device_bytes_written(), 0);
    }

    /// Submit the buffered commands to their devices.
    fn dispatch(&mut self) -> Result<(), DeviceError> {
        for d in self.buf.drain(..) {
            match d.dev {
                DevId::Cache => self.cache.as_mut().expect("cache device").submit(&d.io)?,
                DevId::Disk(i) => self.disks[i as usize].submit(&d.io)?,
            };
            if let Some(log) = self.log.as_mut() {
                log.push(d);
            }
        }
        Ok(())
    }

    /// Run worker `w`'s job to its end (or start and finish one); the final progress, `None`
    /// when the worker has nothing to do.
    fn run_zone(&mut self, w: u32, idle: bool) -> Result<Option<ReclaimProgress>, DeviceError> {
        loop {
            let p = self.layer.reclaim_step_worker(w, idle, &mut self.buf);
            self.dispatch()?;
            match p {
                Some(ReclaimProgress::Copy { .. } | ReclaimProgress::ZeroFill { .. }) => continue,
                other => return Ok(other),
            }
        }
    }

    /// Reclaim whole zones round robin over the workers until `stop` holds, no worker makes
    /// progress, or `cap` zones are done. Returns the zones reclaimed.
    fn run_reclaim(&mut self, idle: bool, cap: u64, stop: impl Fn(&DmZoned) -> bool) -> Result<u64, DeviceError> {
        let n = self.layer.workers();
        let mut done = 0;
        'outer: while done < cap && !stop(&self.layer) {
            for k in 0..n {
                let w = (self.rr + k) % n;
                if let Some(ReclaimProgress::Done { .. }) = self.run_zone(w, idle)? {
                    done += 1;
                    self.rr = (w + 1) % n;
                    continue 'outer;
                }
            }
            break;
        }
        Ok(done)
    }

    /// Busy reclaim after a user command, then the optional periodic flush.
    fn after_command(&mut self, written: u64) -> Result<(), DeviceError> {
        let cap = 4 * self.layer.layout().nr_zones as u64 + 8;
        self.run_reclaim(false, cap, |l| !l.reclaim_needed(false))?;
        if let Some(every) = self.flush_every {
            self.since_flush += written;
            if self.since_flush >= every {
                self.since_flush = 0;
                self.layer.flush_metadata(&mut self.buf);
                self.dispatch()?;
            }
        }
        Ok(())
    }

    /// Resolve a stall and return.
    fn unstall(&mut self, reason: StallReason) -> Result<(), DeviceError> {
        match reason {
            StallReason::NoFreeZone => {
                let cap = 4 * self.layer.layout().nr_zones as u64 + 8;
                self.run_reclaim(false, cap, |l| l.free_user_zones() > 0)?;
                if self.layer.free_user_zones() == 0 {
                    return Err(DeviceError::NoReclaimableSpace { rg: 0 });
                }
            }
            StallReason::ChunkInReclaim { worker } => {
                while self.layer.reclaim_active(worker) {
                    self.layer.reclaim_step_worker(worker, false, &mut self.buf);
                    self.dispatch()?;
                }
            }
        }
        Ok(())
    }

    /// Map one user command through `f`, resolving stalls, then run busy reclaim.
    fn run_user(
        &mut self,
        io: &Io,
        f: fn(&mut DmZoned, &Io, &mut Vec<DevIo>) -> Result<MapStatus, HostError>,
    ) -> Result<(), DeviceError> {
        let mut rest = *io;
        loop {
            let st = f(&mut self.layer, &rest, &mut self.buf).map_err(host_err)?;
            self.dispatch()?;
            match st {
                MapStatus::Done => break,
                MapStatus::Stalled { done_bytes, reason } => {
                    rest.offset += done_bytes;
                    rest.len -= done_bytes as u32;
                    self.unstall(reason)?;
                }
            }
        }
        let written = if io.op == Op::Write { io.len as u64 } else { 0 };
        self.after_command(written)
    }

    /// One user command, without the counters' update.
    fn command(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        match io.op {
            Op::Write => self.run_user(io, DmZoned::map_write)?,
            Op::Read => self.run_user(io, DmZoned::map_read)?,
            Op::Trim => self.run_user(io, DmZoned::map_trim)?,
            Op::Flush => {
                if io.ns != 0 {
                    return Err(DeviceError::NoSuchNamespace(io.ns));
                }
                self.layer.map_flush(&mut self.buf);
                self.dispatch()?;
            }
            Op::Append | Op::Zone(_) => return Err(DeviceError::NotZoned { ns: io.ns }),
        }
        Ok(Completion { offset: io.offset })
    }
}

/// The device error a layer refusal maps to. A misaligned command becomes Invalid Field (the
/// generic NVMe status the zoned devices use for it; the kernel kills the BIO).
pub(crate) fn host_err(e: HostError) -> DeviceError {
    match e {
        HostError::NoSuchNamespace(ns) => DeviceError::NoSuchNamespace(ns),
        HostError::ZeroLength => DeviceError::ZeroLength,
        HostError::Misaligned { offset, .. } => DeviceError::Zone { ns: 0, offset, status: ZoneStatus::InvalidField },
        HostError::OutOfRange { offset, len, size } => DeviceError::OutOfRange { ns: 0, offset, len, size },
    }
}

impl<C: BlockDevice, Z: BlockDevice> BlockDevice for DmZonedDevice<C, Z> {
    /// Read, Write, Trim (discard) and Flush; Zone Append and zone management are refused with
    /// `NotZoned` (dm-zoned exposes a regular device).
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
        4096
    }

    /// The layer as a device: host bytes are the user's, host units those bytes in the
    /// counting unit ([`DmZonedDevice::with_counting_unit`]), GC units every other unit the
    /// devices took (reclaim copies, zero-fill, metadata), so media / host units is the
    /// layer's WAF ([`DmZoned::waf`]) up to rounding; no erases. The user-level counters are
    /// [`DmZonedDevice::user_counters`]; the devices keep their own.
    fn counters(&self) -> &Counters {
        self.view.counters()
    }
}
