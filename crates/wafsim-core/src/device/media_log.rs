//! The NAND operations the FTL causes (programs, GC page reads, erases; [`MediaOp`]), logged for
//! the timing model only when it asks (`enable_media_log`), and where a physical unit lies on the
//! dies.

use super::{Device, FrontierKind};
use crate::error::DeviceError;
use crate::io::Io;
use crate::media_op::MediaOp;

/// How physical mapping units lie on dies (timed mode): program units are striped over the dies
/// of a reclaim group in order.
#[derive(Debug, Clone, Copy)]
pub(super) struct MediaLayout {
    pub(super) units_per_program: u32,
    pub(super) units_per_page: u32,
    pub(super) dies_per_rg: u32,
}

impl Device {
    /// Log a program for every program unit of erase unit `u` completed when its write pointer
    /// moved from `from` to `to`.
    #[cold]
    pub(super) fn log_programs(&mut self, f: u32, u: u32, from: u32, to: u32) {
        let Some(m) = self.media else { return };
        let host = self.frontiers[f as usize].kind == FrontierKind::Host;
        let rg = self.unit_rg[u as usize];
        // Program unit k is complete when the write pointer passes (k + 1) x units_per_program.
        for pu_end in (from / m.units_per_program + 1)..=(to / m.units_per_program) {
            let pu = pu_end - 1;
            let die = rg * m.dies_per_rg + pu % m.dies_per_rg;
            self.media_ops.push(if host { MediaOp::ProgramHost { die } } else { MediaOp::ProgramGc { die } });
        }
    }

    /// Log media operations from now on (timed mode). `units_per_program`: mapping units per
    /// program unit of one die; `units_per_page`: mapping units per page (the read unit);
    /// `dies_per_rg`: dies each superblock spans.
    pub fn enable_media_log(&mut self, units_per_program: u32, units_per_page: u32, dies_per_rg: u32) {
        assert!(units_per_program > 0 && units_per_page > 0 && dies_per_rg > 0);
        self.media = Some(MediaLayout { units_per_program, units_per_page, dies_per_rg });
    }

    /// Take the media operations logged since the last call.
    pub fn drain_media_ops(&mut self, out: &mut Vec<MediaOp>) {
        out.append(&mut self.media_ops);
    }

    /// Die holding physical mapping unit `ppa` (timed mode; 0 if the media log is off).
    pub fn die_of(&self, ppa: u32) -> u32 {
        let Some(m) = self.media else { return 0 };
        let u = self.div.div(ppa);
        let off = ppa - u * self.np;
        if self.is_slc(u) {
            return self.unit_rg[u as usize] * m.dies_per_rg + (off / self.slc_units_per_program()) % m.dies_per_rg;
        }
        self.unit_rg[u as usize] * m.dies_per_rg + (off / m.units_per_program) % m.dies_per_rg
    }

    /// Die holding physical mapping unit `ppa` and its position (mapping units) inside its
    /// program unit (timed mode; (0, 0) if the media log is off).
    pub fn media_pos(&self, ppa: u32) -> (u32, u32) {
        let Some(m) = self.media else { return (0, 0) };
        let u = self.div.div(ppa);
        let off = ppa - u * self.np;
        if self.is_slc(u) {
            // One page type in SLC mode: position 0 (the fastest read).
            return (self.unit_rg[u as usize] * m.dies_per_rg + (off / self.slc_units_per_program()) % m.dies_per_rg, 0);
        }
        (self.unit_rg[u as usize] * m.dies_per_rg + (off / m.units_per_program) % m.dies_per_rg, off % m.units_per_program)
    }
}

impl crate::blockdev::MediaDevice for Device {
    #[inline]
    fn enable_media_log(&mut self, units_per_program: u32, units_per_page: u32, dies_per_rg: u32) {
        Device::enable_media_log(self, units_per_program, units_per_page, dies_per_rg)
    }
    #[inline]
    fn drain_media_ops(&mut self, out: &mut Vec<MediaOp>) {
        Device::drain_media_ops(self, out)
    }
    #[inline]
    fn lookup(&self, ns: u32, offset: u64) -> Option<u32> {
        Device::lookup(self, ns, offset)
    }
    #[inline]
    fn media_pos(&self, ppa: u32) -> (u32, u32) {
        Device::media_pos(self, ppa)
    }
    #[inline]
    fn background_gc(&mut self, target_free: u32, max_victims: u32) -> Result<u32, DeviceError> {
        Device::background_gc(self, target_free, max_victims)
    }
    #[inline]
    fn slc_fold_pending(&self) -> bool {
        self.slc.as_deref().is_some_and(|s| !s.full.is_empty())
    }
    #[inline]
    fn background_fold(&mut self, max_units: u32) -> Result<u32, DeviceError> {
        Device::background_fold(self, max_units)
    }
    #[inline]
    fn prefetch_io(&self, io: &Io) {
        Device::prefetch_io(self, io)
    }
}
