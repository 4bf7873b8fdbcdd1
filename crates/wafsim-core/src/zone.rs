//! NVMe Zoned Namespace (ZNS) zone state machine: zone states, write pointers, open and active
//! resource limits, Zone Append, Zone Management Send/Receive and the Zone Random Write Area.
//! Pure logic: no I/O, no data, no timing. A device model calls it once per command and charges
//! media work from the results (blocks committed, blocks a Finish pads, blocks a Reset drops).
//!
//! Unit: one *block* is one logical block (LBA) of the zoned namespace. Zone `i` covers blocks
//! `[i * zone_size, (i + 1) * zone_size)`; only the first `zone_capacity` of them are writable.
//!
//! Sources (read to learn the rules; the code is our own):
//! - NVM Express Zoned Namespace Command Set Specification revision 1.1 (2021): 2.1.1.2.1 (write
//!   pointer, Figure 4 zone characteristics), 2.1.1.3 (state machine, Figure 7), 2.1.1.4 (zone
//!   resources, "Managing resources"), 3.4.1 (Zone Append), 3.4.2 (Report Zones filters, Figure 37
//!   zone descriptor), 3.4.3 (Zone Send Actions incl. Select All), Figure 11 (status values), Annex
//!   A.3 (open zone considerations). Cited as "ZNS 1.1 x.y.z" (section number) below.
//! - QEMU `hw/nvme/ctrl.c`: `nvme_zrm_open_flags`, `nvme_zrm_auto_transition_zone`,
//!   `nvme_zrm_close/finish/reset`, `nvme_check_zone_write`, `nvme_do_write`, `nvme_zone_mgmt_send`,
//!   `nvme_zone_mgmt_send_zrwa_flush`, `nvme_finalize_zoned_write`, `nvme_zns_check_resources`.
//! - NVMeVirt `zns_mgmt_send.c` / `zns_read_write.c` (ZRWA window and explicit flush bounds) and a
//!   FEMU ZNS design note (ZRWA allocation only on an Empty zone, conventional zones, open-all).
//! - Linux `include/linux/nvme.h` (status code values, `NVME_SC_ZONE_*`).

use std::fmt;

/// Zone state as reported in the Zone Descriptor (ZNS 1.1 Figure 37, ZS field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[repr(u8)]
pub enum ZoneState {
    /// ZSE: no data, write pointer at the zone start, holds no resources.
    Empty,
    /// ZSIO: opened by a write; holds an open and an active resource.
    ImplicitlyOpened,
    /// ZSEO: opened by Zone Management Send Open; holds an open and an active resource.
    ExplicitlyOpened,
    /// ZSC: partly written (or opened and closed); holds an active resource only.
    Closed,
    /// ZSF: no more writes until Reset; holds no resources.
    Full,
    /// ZSRO: media failure, data still readable; only the Offline action leaves it.
    ReadOnly,
    /// ZSO: unusable; final.
    Offline,
    /// Conventional zones have no state machine (ZBC zone condition NOT WRITE POINTER). Not a ZNS
    /// state: ZNS 1.1 defines Sequential Write Required zones only.
    NotWritePointer,
}

impl ZoneState {
    /// The 4-bit Zone State value of Report Zones (ZNS 1.1 Figure 37, bits 7:4 of byte 1, not
    /// shifted here): 1h Empty, 2h Implicitly Opened, 3h Explicitly Opened, 4h Closed, Dh Read
    /// Only, Eh Full, Fh Offline. `NotWritePointer` is 0h, the ZBC NOT WRITE POINTER condition
    /// (reserved in ZNS).
    pub const fn code(self) -> u8 {
        match self {
            ZoneState::Empty => 0x1,
            ZoneState::ImplicitlyOpened => 0x2,
            ZoneState::ExplicitlyOpened => 0x3,
            ZoneState::Closed => 0x4,
            ZoneState::ReadOnly => 0xD,
            ZoneState::Full => 0xE,
            ZoneState::Offline => 0xF,
            ZoneState::NotWritePointer => 0x0,
        }
    }

    /// Inverse of [`ZoneState::code`]; `None` for reserved values.
    pub const fn from_code(code: u8) -> Option<ZoneState> {
        Some(match code {
            0x0 => ZoneState::NotWritePointer,
            0x1 => ZoneState::Empty,
            0x2 => ZoneState::ImplicitlyOpened,
            0x3 => ZoneState::ExplicitlyOpened,
            0x4 => ZoneState::Closed,
            0xD => ZoneState::ReadOnly,
            0xE => ZoneState::Full,
            0xF => ZoneState::Offline,
            _ => return None,
        })
    }

    /// Holds an Open Resource (ZNS 1.1 Figure 8): ZSIO or ZSEO.
    pub const fn is_open(self) -> bool {
        matches!(self, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened)
    }

    /// Holds an Active Resource (ZNS 1.1 Figure 8): ZSIO, ZSEO or ZSC.
    pub const fn is_active(self) -> bool {
        matches!(self, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed)
    }

    /// Write pointer valid per ZNS 1.1 Figure 4 (Empty, opened, Closed).
    pub const fn has_valid_write_pointer(self) -> bool {
        matches!(self, ZoneState::Empty | ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed)
    }
}

/// Zone type (ZNS 1.1 Figure 37, ZT field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ZoneType {
    /// ZBC zone type 1h: writable anywhere, no write pointer. Outside ZNS (Linux rejects a ZNS
    /// namespace that reports one); offered for SMR-like layouts with a conventional head.
    Conventional,
    /// Type 2h, the only ZNS zone type: writes must start at the write pointer.
    SequentialWriteRequired,
}

impl ZoneType {
    /// The Zone Type value of the Zone Descriptor: 1h conventional (ZBC), 2h sequential write
    /// required.
    pub const fn code(self) -> u8 {
        match self {
            ZoneType::Conventional => 0x1,
            ZoneType::SequentialWriteRequired => 0x2,
        }
    }
}

/// Why a command was aborted. [`ZoneStatus::code`] gives the NVMe status in the Linux
/// `include/linux/nvme.h` convention `(SCT << 8) | SC` (e.g. Zone Is Full = 0x1B9), without the
/// DNR bit (0x4000) and without the completion-entry phase-bit shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ZoneStatus {
    /// Generic 02h: bad parameter (zero-length command, SLBA not a zone start for a zone action
    /// or Zone Append, zone action on a conventional zone, misaligned ZRWA flush, ...).
    #[error("Invalid Field in Command (002h)")]
    InvalidField,
    /// Generic 80h: the LBA range goes past the end of the namespace.
    #[error("LBA Out of Range (080h)")]
    LbaOutOfRange,
    /// Command specific B6h: the zone operation is not allowed (ZRWA not supported, ZRWA allocation
    /// on a non-Empty zone, Zone Append to a zone with a ZRWA). Later ZNS revisions; codes as in
    /// QEMU `NVME_INVALID_ZONE_OP` and NVMeVirt.
    #[error("Invalid Zone Operation Request (1B6h)")]
    InvalidZoneOperation,
    /// Command specific B7h: no ZRWA resource left for an Open with ZRWA allocation.
    #[error("ZRWA Resources Unavailable (1B7h)")]
    ZrwaResourcesUnavailable,
    /// B8h: the command crosses the writable end of its zone (or a zone boundary, for reads).
    #[error("Zone Boundary Error (1B8h)")]
    ZoneBoundaryError,
    /// B9h: write to a Full zone.
    #[error("Zone Is Full (1B9h)")]
    ZoneIsFull,
    /// BAh: write to a Read Only zone.
    #[error("Zone Is Read Only (1BAh)")]
    ZoneIsReadOnly,
    /// BBh: any access to an Offline zone.
    #[error("Zone Is Offline (1BBh)")]
    ZoneIsOffline,
    /// BCh: write not at the write pointer (or outside the ZRWA window).
    #[error("Zone Invalid Write (1BCh)")]
    ZoneInvalidWrite,
    /// BDh: the transition needs an Active Resource and none is left.
    #[error("Too Many Active Zones (1BDh)")]
    TooManyActiveZones,
    /// BEh: the transition needs an Open Resource and none can be freed.
    #[error("Too Many Open Zones (1BEh)")]
    TooManyOpenZones,
    /// BFh: the zone action is not valid in the zone's state.
    #[error("Invalid Zone State Transition (1BFh)")]
    InvalidZoneStateTransition,
}

impl ZoneStatus {
    /// `(SCT << 8) | SC` as Linux `NVME_SC_*` spells it (`NVME_SC_ZONE_FULL` = 0x1b9).
    pub const fn code(self) -> u16 {
        match self {
            ZoneStatus::InvalidField => 0x002,
            ZoneStatus::LbaOutOfRange => 0x080,
            ZoneStatus::InvalidZoneOperation => 0x1b6,
            ZoneStatus::ZrwaResourcesUnavailable => 0x1b7,
            ZoneStatus::ZoneBoundaryError => 0x1b8,
            ZoneStatus::ZoneIsFull => 0x1b9,
            ZoneStatus::ZoneIsReadOnly => 0x1ba,
            ZoneStatus::ZoneIsOffline => 0x1bb,
            ZoneStatus::ZoneInvalidWrite => 0x1bc,
            ZoneStatus::TooManyActiveZones => 0x1bd,
            ZoneStatus::TooManyOpenZones => 0x1be,
            ZoneStatus::InvalidZoneStateTransition => 0x1bf,
        }
    }

    /// Status Code Type: 0 generic, 1 command specific.
    pub const fn sct(self) -> u8 {
        (self.code() >> 8) as u8
    }

    /// Status Code within its type (e.g. B9h for Zone Is Full).
    pub const fn sc(self) -> u8 {
        (self.code() & 0xff) as u8
    }
}

/// Zone Random Write Area parameters (the Identify Namespace ZRWAS, ZRWAFG and NUMZRWA fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZrwaConfig {
    /// ZRWAS: window size in blocks. Writes may land anywhere in `[wp, wp + 2 * size)`.
    pub size: u64,
    /// ZRWAFG: the write pointer moves in multiples of this many blocks.
    pub flush_granularity: u64,
    /// NUMZRWA: how many zones may hold a ZRWA at once.
    pub resources: u32,
}

/// Geometry and limits of a zoned namespace. Sizes in blocks (logical blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneConfig {
    /// ZSZE: blocks per zone (the LBA stride between zone starts).
    pub zone_size: u64,
    /// ZCAP: writable blocks per zone, `1..=zone_size`; a zone is Full when its write pointer
    /// reaches `start + zone_capacity`.
    pub zone_capacity: u64,
    /// Number of zones.
    pub zones: u32,
    /// How many leading zones are conventional (0 for a pure ZNS namespace).
    pub conventional_zones: u32,
    /// MOR as a count: most zones open at once; 0 = no limit.
    pub max_open: u32,
    /// MAR as a count: most zones active (open or closed) at once; 0 = no limit.
    pub max_active: u32,
    /// When a zone must open and the open limit is reached, close the implicitly opened zone that
    /// has been open longest (ZNS 1.1 2.1.1.4.1 and A.3.2 allow it; QEMU `auto_transition_zones`,
    /// on by default, does it for writes and for Open). Off: such commands fail with Too Many
    /// Open Zones.
    pub auto_close: bool,
    /// Read Across Zone Boundaries (OZCS bit 0): reads may span zones.
    pub read_across_zones: bool,
    /// Zone Random Write Area support; `None` = not supported.
    pub zrwa: Option<ZrwaConfig>,
    /// SCSI ZBC / ATA ZAC rules (host-managed SMR disks) where they differ from ZNS; off
    /// (ZNS) by default. On: CLOSE ZONE of an open zone whose write pointer is at the zone start
    /// makes it Empty, not Closed (also for Close with Select All and for the implicit close
    /// that frees an open resource); CLOSE ZONE of an Empty or Full zone and OPEN ZONE of a Full
    /// zone succeed without a change instead of failing with Invalid Zone State Transition
    /// (libzbc test suite `02_state_machine_check` cases 002, 021, 022; its former emulation
    /// `lib/zbc_fake.c`, `zbc_zone_do_close`); the zone capacity must equal the zone size (ZBC
    /// has no zone capacity) and there is no ZRWA. The limits are set as usual: an SMR disk
    /// reports a maximum of open sequential-write-required zones and no active limit
    /// (`max_active` 0; Linux sysfs `max_active_zones` is always 0 for SMR disks). Every other
    /// rule (write pointer, Finish of an Empty zone -> Full, Reset, Select All, implicit close at
    /// the open limit, Insufficient Zone Resources when only explicitly opened zones hold the
    /// open resources) is the same in both.
    pub zbc: bool,
}

impl ZoneConfig {
    /// `zones` sequential zones of `zone_size` blocks with `zone_capacity` writable, no limits,
    /// auto-close on, no conventional zones, no ZRWA.
    pub fn new(zone_size: u64, zone_capacity: u64, zones: u32) -> Self {
        ZoneConfig {
            zone_size,
            zone_capacity,
            zones,
            conventional_zones: 0,
            max_open: 0,
            max_active: 0,
            auto_close: true,
            read_across_zones: false,
            zrwa: None,
            zbc: false,
        }
    }

    /// Check the configuration; [`Zones::new`] calls it.
    pub fn validate(&self) -> Result<(), ZoneConfigError> {
        let err = |m: &'static str| Err(ZoneConfigError(m));
        if self.zone_size == 0 || self.zones == 0 {
            return err("zone_size and zones must be positive");
        }
        if self.zone_capacity == 0 || self.zone_capacity > self.zone_size {
            return err("zone_capacity must be in 1..=zone_size (ZNS 1.1 Figure 37: ZCAP <= zone size)");
        }
        if self.zone_size.checked_mul(self.zones as u64).is_none() {
            return err("zone_size * zones overflows u64");
        }
        if self.conventional_zones > self.zones {
            return err("conventional_zones exceeds zones");
        }
        if self.max_open != 0 && self.max_active != 0 && self.max_open > self.max_active {
            return err("max_open must not exceed max_active (ZNS 1.1 2.1.1.4: MOR <= MAR)");
        }
        if let Some(z) = &self.zrwa {
            if z.size == 0 || z.flush_granularity == 0 || z.resources == 0 {
                return err("ZRWA size, flush granularity and resources must be positive");
            }
            if !z.size.is_multiple_of(z.flush_granularity) || !self.zone_capacity.is_multiple_of(z.flush_granularity) {
                return err("ZRWA size and zone_capacity must be multiples of the flush granularity");
            }
            if z.size > self.zone_capacity {
                return err("ZRWA size must not exceed zone_capacity");
            }
        }
        if self.zbc && (self.zone_capacity != self.zone_size || self.zrwa.is_some()) {
            return err("zbc: zone_capacity must equal zone_size and there is no ZRWA (ZBC has neither)");
        }
        Ok(())
    }
}

/// A [`ZoneConfig`] that [`ZoneConfig::validate`] rejected; the message says which rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid zone configuration: {0}")]
pub struct ZoneConfigError(pub &'static str);

/// One zone as Report Zones describes it (ZNS 1.1 Figure 37), plus its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ZoneDescriptor {
    /// Zone index (0-based).
    pub zone: u32,
    /// ZT.
    pub zone_type: ZoneType,
    /// ZS.
    pub state: ZoneState,
    /// ZSLBA.
    pub start: u64,
    /// ZCAP (for a conventional zone: the zone size).
    pub capacity: u64,
    /// WP; `None` where the spec says it is invalid (Full, Read Only, Offline; Figure 4) and for
    /// conventional zones (QEMU and FEMU report all ones there).
    pub write_pointer: Option<u64>,
    /// ZRWA allocated (the ZRWAV attribute).
    pub zrwa: bool,
}

/// Zone Receive Action Specific field of Report Zones (ZNS 1.1 Figure 34) plus ZBC's "not write
/// pointer" option for conventional zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportFilter {
    /// 0h: every zone.
    All,
    /// 1h.
    Empty,
    /// 2h.
    ImplicitlyOpened,
    /// 3h.
    ExplicitlyOpened,
    /// 4h.
    Closed,
    /// 5h.
    Full,
    /// 6h.
    ReadOnly,
    /// 7h.
    Offline,
    /// ZBC REPORT ZONES option 3Fh: conventional zones. Not a ZNS value.
    NotWritePointer,
}

impl ReportFilter {
    /// The reporting option value (0h..7h ZNS, 3Fh ZBC).
    pub const fn code(self) -> u8 {
        match self {
            ReportFilter::All => 0x0,
            ReportFilter::Empty => 0x1,
            ReportFilter::ImplicitlyOpened => 0x2,
            ReportFilter::ExplicitlyOpened => 0x3,
            ReportFilter::Closed => 0x4,
            ReportFilter::Full => 0x5,
            ReportFilter::ReadOnly => 0x6,
            ReportFilter::Offline => 0x7,
            ReportFilter::NotWritePointer => 0x3F,
        }
    }

    /// Does a zone in `state` match?
    pub const fn matches(self, state: ZoneState) -> bool {
        match self {
            ReportFilter::All => true,
            ReportFilter::Empty => matches!(state, ZoneState::Empty),
            ReportFilter::ImplicitlyOpened => matches!(state, ZoneState::ImplicitlyOpened),
            ReportFilter::ExplicitlyOpened => matches!(state, ZoneState::ExplicitlyOpened),
            ReportFilter::Closed => matches!(state, ZoneState::Closed),
            ReportFilter::Full => matches!(state, ZoneState::Full),
            ReportFilter::ReadOnly => matches!(state, ZoneState::ReadOnly),
            ReportFilter::Offline => matches!(state, ZoneState::Offline),
            ReportFilter::NotWritePointer => matches!(state, ZoneState::NotWritePointer),
        }
    }
}

/// Outcome of a Write or Zone Append that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteResult {
    /// First LBA written: the command's SLBA for a Write, the assigned LBA (ALBA) for an Append.
    pub lba: u64,
    /// Blocks written.
    pub blocks: u64,
    /// Zone index.
    pub zone: u32,
    /// Blocks that became committed (readable as written, write pointer moved over them): all of
    /// them without a ZRWA and in conventional zones; with a ZRWA only the implicit flush, in
    /// whole flush-granularity units, possibly 0.
    pub committed: u64,
    /// The zone went Empty/Closed -> Implicitly Opened.
    pub opened: bool,
    /// The zone the controller closed (ZSIO -> ZSC) to free an open resource for this one.
    pub closed_zone: Option<u32>,
    /// The write pointer reached the zone capacity: the zone is now Full.
    pub full: bool,
}

/// Outcome of an Open Zone action that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenResult {
    /// The implicitly opened zone the controller closed to make room, if any.
    pub closed_zone: Option<u32>,
}

/// Outcome of a Finish Zone action on one zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FinishResult {
    /// Blocks between the end of the host data and the zone capacity that the zone skipped: a
    /// device may charge them as padding (dummy) writes. 0 if the zone was already Full.
    pub filled: u64,
}

/// Outcome of a Reset Zone action on one zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResetResult {
    /// Blocks the host may have written (up to the highest LBA written, ZRWA included), now
    /// deallocated: what the device model must trim/erase.
    pub written: u64,
    /// Blocks an earlier Finish padded (0 unless the zone was Full short of its capacity).
    pub filled: u64,
}

/// Outcome of an explicit ZRWA flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushResult {
    /// Blocks the write pointer moved.
    pub committed: u64,
    /// The zone went Closed -> Implicitly Opened (the flush counts as a write, as in QEMU).
    pub opened: bool,
    /// The zone the controller closed to make room, if any.
    pub closed_zone: Option<u32>,
    /// The zone reached its capacity and is now Full.
    pub full: bool,
}

/// Totals of a Select All action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BulkResult {
    /// Zones that changed state.
    pub zones: u32,
    /// Finish: blocks padded; Reset: blocks written; otherwise 0.
    pub blocks: u64,
}

const NIL: u32 = u32::MAX;

/// Per-zone state, 32 bytes. The implicitly-opened zones form an intrusive FIFO through
/// `prev`/`next` so choosing and unlinking the zone to auto-close is O(1) and allocation-free.
#[derive(Debug, Clone, Copy)]
struct Zone {
    /// Write pointer (absolute LBA). In Full/ReadOnly/Offline zones: where host data ends.
    wp: u64,
    /// One past the highest LBA written. Equals `wp` except in a ZRWA zone, where writes may sit
    /// in the window above the write pointer.
    hwm: u64,
    prev: u32,
    next: u32,
    state: ZoneState,
    zrwa: bool,
}

/// The zones of one zoned namespace. Every method is one command, processed to completion before
/// the next (commands are serialized, as a controller's per-namespace zone lock does), so
/// concurrent Zone Appends each get distinct, contiguous LBAs.
#[derive(Debug, Clone)]
pub struct Zones {
    cfg: ZoneConfig,
    zones: Vec<Zone>,
    /// log2(zone_size) when it is a power of two, else `None` (divide).
    zone_shift: Option<u32>,
    total_blocks: u64,
    n_open: u32,
    n_active: u32,
    n_implicit: u32,
    zrwa_in_use: u32,
    /// Oldest implicitly opened zone (the one auto-close picks), NIL if none.
    imp_head: u32,
    imp_tail: u32,
}

impl Zones {
    /// Words per zone in a drive image's `ZONE` section.
    const IMAGE_WORDS: usize = 6;

    /// Words of the `ZONE` section for this configuration.
    fn image_len(&self) -> usize {
        self.zones.len() * Self::IMAGE_WORDS + 6
    }

    /// The zones' state as a drive image's `ZONE` section: per zone write pointer, high-water
    /// mark, implicit-open list links, condition and ZRWA flag, then the resource counts.
    pub(crate) fn save_image<W: std::io::Write>(&self, w: &mut crate::image::ImageWriter<W>) -> std::io::Result<()> {
        let mut v = Vec::with_capacity(self.image_len());
        for z in &self.zones {
            v.extend([z.wp, z.hwm, z.prev as u64, z.next as u64, z.state.code() as u64, z.zrwa as u64]);
        }
        v.extend([self.n_open, self.n_active, self.n_implicit, self.zrwa_in_use, self.imp_head, self.imp_tail].map(u64::from));
        w.section(b"ZONE", 8 * v.len() as u64)?;
        w.u64s(&v)
    }

    /// Continue from the `ZONE` section saved from zones of the same configuration.
    pub(crate) fn load_image<R: std::io::Read>(&mut self, r: &mut crate::image::ImageReader<R>) -> Result<(), crate::image::ImageError> {
        let bad = |what: &str| crate::image::ImageError::Damaged(format!("zones: {what}"));
        let mut w = vec![0u64; self.image_len()];
        r.section(b"ZONE", 8 * w.len() as u64)?;
        r.u64s(&mut w)?;
        for (z, v) in self.zones.iter_mut().zip(w.chunks_exact(Self::IMAGE_WORDS)) {
            let state = u8::try_from(v[4]).ok().and_then(ZoneState::from_code).ok_or_else(|| bad("a zone condition"))?;
            *z = Zone { wp: v[0], hwm: v[1], prev: v[2] as u32, next: v[3] as u32, state, zrwa: v[5] != 0 };
        }
        let t = &w[self.zones.len() * Self::IMAGE_WORDS..];
        [self.n_open, self.n_active, self.n_implicit, self.zrwa_in_use, self.imp_head, self.imp_tail] = [t[0], t[1], t[2], t[3], t[4], t[5]].map(|x| x as u32);
        Ok(())
    }

    /// All zones Empty (conventional ones not-write-pointer).
    pub fn new(cfg: ZoneConfig) -> Result<Self, ZoneConfigError> {
        cfg.validate()?;
        let zones = (0..cfg.zones)
            .map(|i| {
                let start = i as u64 * cfg.zone_size;
                let state = if i < cfg.conventional_zones { ZoneState::NotWritePointer } else { ZoneState::Empty };
                Zone { wp: start, hwm: start, prev: NIL, next: NIL, state, zrwa: false }
            })
            .collect();
        let zone_shift = cfg.zone_size.is_power_of_two().then(|| cfg.zone_size.trailing_zeros());
        let total_blocks = cfg.zone_size * cfg.zones as u64;
        Ok(Zones {
            cfg,
            zones,
            zone_shift,
            total_blocks,
            n_open: 0,
            n_active: 0,
            n_implicit: 0,
            zrwa_in_use: 0,
            imp_head: NIL,
            imp_tail: NIL,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ZoneConfig {
        &self.cfg
    }

    /// Number of zones.
    pub fn zone_count(&self) -> u32 {
        self.cfg.zones
    }

    /// Namespace size in blocks (NSZE): zones * zone_size.
    pub fn total_blocks(&self) -> u64 {
        self.total_blocks
    }

    /// Zone holding `lba`, `None` past the end.
    #[inline]
    pub fn zone_index(&self, lba: u64) -> Option<u32> {
        (lba < self.total_blocks).then(|| self.index_of(lba) as u32)
    }

    /// ZSLBA of zone `zone`.
    #[inline]
    pub fn zone_start(&self, zone: u32) -> u64 {
        zone as u64 * self.cfg.zone_size
    }

    /// Zones in ZSIO or ZSEO.
    pub fn open_zones(&self) -> u32 {
        self.n_open
    }

    /// Zones in ZSIO, ZSEO or ZSC.
    pub fn active_zones(&self) -> u32 {
        self.n_active
    }

    /// Zones holding a ZRWA.
    pub fn zrwa_zones(&self) -> u32 {
        self.zrwa_in_use
    }

    /// Implicitly opened zones, oldest first (the first is the next auto-close victim).
    pub fn implicitly_opened(&self) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.imp_head;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let z = cur;
                cur = self.zones[z as usize].next;
                z
            })
        })
    }

    /// State of zone `zone` (panics if out of range).
    pub fn state(&self, zone: u32) -> ZoneState {
        self.zones[zone as usize].state
    }

    /// Descriptor of zone `zone` (panics if out of range).
    pub fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        let z = &self.zones[zone as usize];
        let conventional = zone < self.cfg.conventional_zones;
        ZoneDescriptor {
            zone,
            zone_type: if conventional { ZoneType::Conventional } else { ZoneType::SequentialWriteRequired },
            state: z.state,
            start: self.zone_start(zone),
            capacity: if conventional { self.cfg.zone_size } else { self.cfg.zone_capacity },
            write_pointer: z.state.has_valid_write_pointer().then_some(z.wp),
            zrwa: z.zrwa,
        }
    }

    /// Report Zones (ZNS 1.1 3.4.2.1.1): descriptors of the zones from the one holding `from_lba`
    /// on, ascending, that match `filter`. LBA Out of Range if `from_lba` is past the end.
    pub fn report(
        &self,
        from_lba: u64,
        filter: ReportFilter,
    ) -> Result<impl Iterator<Item = ZoneDescriptor> + '_, ZoneStatus> {
        let first = self.zone_index(from_lba).ok_or(ZoneStatus::LbaOutOfRange)?;
        Ok((first..self.cfg.zones)
            .filter(move |&z| filter.matches(self.zones[z as usize].state))
            .map(|z| self.descriptor(z)))
    }

    /// Does `lba` hold committed host data? `Some(lba < write pointer)` in a sequential zone (data
    /// still in a ZRWA window above the write pointer is not counted; after Finish the window's
    /// blocks count, holes included); `Some(false)` in an Offline zone; `None` for conventional
    /// zones (this module does not track their data) and past the end. Reads at or beyond the
    /// write pointer are legal and return deallocated data (ZNS 1.1 2.1.1.2.1.2).
    pub fn is_written(&self, lba: u64) -> Option<bool> {
        let zi = self.zone_index(lba)? as usize;
        let z = &self.zones[zi];
        match z.state {
            ZoneState::NotWritePointer => None,
            ZoneState::Offline => Some(false),
            _ => Some(lba < z.wp),
        }
    }

    /// Blocks of `[lba, end)` that [`Zones::is_written`] calls unwritten (`Some(false)`): at or
    /// beyond the write pointer, or in an Offline zone; conventional zones count as written.
    /// One step per zone: the written part of a zone is a prefix.
    pub fn unwritten_blocks(&self, lba: u64, end: u64) -> u64 {
        let end = end.min(self.total_blocks);
        let mut total = 0;
        let mut a = lba;
        while a < end {
            let zi = self.index_of(a);
            let b = end.min(self.zone_start(zi as u32) + self.cfg.zone_size);
            let z = &self.zones[zi];
            total += match z.state {
                ZoneState::NotWritePointer => 0,
                ZoneState::Offline => b - a,
                _ => b - z.wp.clamp(a, b),
            };
            a = b;
        }
        total
    }

    /// Checks of a Read (ZNS 1.1 2.1.1.2.1.2): LBA Out of Range, Zone Is Offline, and Zone Boundary
    /// Error for a read spanning zones unless `read_across_zones` (then every zone it touches must
    /// not be Offline). Reading unwritten blocks is not an error.
    pub fn read_check(&self, lba: u64, blocks: u64) -> Result<(), ZoneStatus> {
        let end = self.range_end(lba, blocks)?;
        let first = self.index_of(lba);
        let last = self.index_of(end - 1);
        for zi in first..=last {
            if self.zones[zi].state == ZoneState::Offline {
                return Err(ZoneStatus::ZoneIsOffline);
            }
            if zi == first && last != first && !self.cfg.read_across_zones {
                return Err(ZoneStatus::ZoneBoundaryError);
            }
        }
        Ok(())
    }

    /// Write command (also Write Zeroes / Write Uncorrectable, which follow the same rules) of
    /// `blocks` blocks at `lba`.
    ///
    /// Checks in QEMU `nvme_do_write` order: LBA range; zone state (Full, Read Only, Offline);
    /// write pointer (start must equal it; with a ZRWA the write must lie in `[wp, wp + 2*ZRWAS)`);
    /// end within the zone capacity (Zone Boundary Error: QEMU `nvme_check_zone_write` and FEMU
    /// bound writes by ZSLBA + ZCAP, not by the zone size); then resources for an implicit open.
    pub fn write(&mut self, lba: u64, blocks: u64) -> Result<WriteResult, ZoneStatus> {
        self.do_write(lba, blocks, false)
    }

    /// Zone Append of `blocks` blocks to the zone starting at `zslba` (ZNS 1.1 3.4.1). The data
    /// goes at the write pointer; `WriteResult::lba` is the assigned LBA (ALBA). Invalid Field if
    /// `zslba` is not a zone start or the zone is conventional; Invalid Zone Operation if the zone
    /// has a ZRWA (QEMU `nvme_do_write`).
    pub fn append(&mut self, zslba: u64, blocks: u64) -> Result<WriteResult, ZoneStatus> {
        self.do_write(zslba, blocks, true)
    }

    fn do_write(&mut self, lba: u64, blocks: u64, append: bool) -> Result<WriteResult, ZoneStatus> {
        let end = self.range_end(lba, blocks)?;
        let zi = self.index_of(lba);
        let start = self.zone_start(zi as u32);
        if self.zones[zi].state == ZoneState::NotWritePointer {
            // ZNS 1.1 3.4.1: Zone Append to a zone that is not Sequential Write Required.
            if append {
                return Err(ZoneStatus::InvalidField);
            }
            if end > start + self.cfg.zone_size {
                return Err(ZoneStatus::ZoneBoundaryError);
            }
            let r = WriteResult {
                lba,
                blocks,
                zone: zi as u32,
                committed: blocks,
                opened: false,
                closed_zone: None,
                full: false,
            };
            return Ok(r);
        }
        let z = self.zones[zi];
        let slba = if append {
            if lba != start {
                return Err(ZoneStatus::InvalidField);
            }
            if z.zrwa {
                return Err(ZoneStatus::InvalidZoneOperation);
            }
            z.wp
        } else {
            lba
        };
        let end = if append { slba + blocks } else { end };
        match z.state {
            ZoneState::Full => return Err(ZoneStatus::ZoneIsFull),
            ZoneState::ReadOnly => return Err(ZoneStatus::ZoneIsReadOnly),
            ZoneState::Offline => return Err(ZoneStatus::ZoneIsOffline),
            _ => {}
        }
        let zrwa_size = if z.zrwa { self.zrwa().size } else { 0 };
        let in_window = if z.zrwa { slba >= z.wp && end <= z.wp + 2 * zrwa_size } else { slba == z.wp };
        if !in_window {
            return Err(ZoneStatus::ZoneInvalidWrite);
        }
        let cap_end = start + self.cfg.zone_capacity;
        if end > cap_end {
            return Err(ZoneStatus::ZoneBoundaryError);
        }
        let (opened, closed_zone) = self.open_for_write(zi)?;
        let zone = &mut self.zones[zi];
        let committed = if zone.zrwa {
            zone.hwm = zone.hwm.max(end);
            // Implicit flush (QEMU nvme_finalize_zoned_write, NVMeVirt __zns_write_zrwa): a write
            // ending past the window moves the write pointer up, in whole granules, until the
            // window covers the write's end.
            let window_end = zone.wp + zrwa_size;
            let fg = self.cfg.zrwa.map_or(1, |c| c.flush_granularity);
            let flush = if end > window_end { (end - window_end).div_ceil(fg) * fg } else { 0 };
            zone.wp += flush;
            flush
        } else {
            zone.wp = end;
            zone.hwm = end;
            blocks
        };
        debug_assert!(zone.wp <= cap_end && zone.wp <= zone.hwm);
        let full = zone.wp == cap_end;
        if full {
            self.make_full(zi);
        }
        self.debug_check_counts();
        Ok(WriteResult { lba: slba, blocks, zone: zi as u32, committed, opened, closed_zone, full })
    }

    /// Open Zone action (ZNS 1.1 3.4.3.1.3): Empty, Implicitly Opened or Closed -> Explicitly
    /// Opened; Explicitly Opened: no change; Full, Read Only, Offline: Invalid Zone State
    /// Transition. Resources as for a write: Too Many Active Zones if an Empty zone cannot get an
    /// active resource; at the open limit the oldest implicitly opened zone is closed when
    /// `auto_close` (QEMU `nvme_zrm_open_flags` calls `nvme_zrm_auto_transition_zone` for Open
    /// too; an explicitly opened zone is never closed); otherwise Too Many Open Zones. A failed
    /// command changes no zone (ZNS 1.1 3.4.3: "no zone state transition shall occur").
    pub fn open(&mut self, zslba: u64) -> Result<OpenResult, ZoneStatus> {
        self.do_open(zslba, false)
    }

    /// Open Zone with the ZRWA Allocation bit: as [`Zones::open`], and the zone gets a ZRWA.
    /// Invalid Zone Operation if ZRWA is not configured or the zone is not Empty (FEMU and
    /// NVMeVirt allocate only on an Empty zone); success without change if it already has one;
    /// ZRWA Resources Unavailable if all NUMZRWA are in use.
    pub fn open_with_zrwa(&mut self, zslba: u64) -> Result<OpenResult, ZoneStatus> {
        self.do_open(zslba, true)
    }

    fn do_open(&mut self, zslba: u64, zrwa: bool) -> Result<OpenResult, ZoneStatus> {
        let zi = self.mgmt_zone(zslba)?;
        let z = self.zones[zi];
        let allocate = zrwa && !z.zrwa;
        if zrwa {
            if self.cfg.zrwa.is_none() {
                return Err(ZoneStatus::InvalidZoneOperation);
            }
            if allocate && z.state != ZoneState::Empty {
                return Err(ZoneStatus::InvalidZoneOperation);
            }
        }
        let closed_zone = match z.state {
            ZoneState::Empty | ZoneState::Closed => {
                let from_empty = z.state == ZoneState::Empty;
                let victim = self.acquire_open(zi, from_empty, allocate)?;
                self.set_state(zi, ZoneState::ExplicitlyOpened);
                if allocate {
                    self.zones[zi].zrwa = true;
                    self.zrwa_in_use += 1;
                }
                victim
            }
            ZoneState::ImplicitlyOpened => {
                self.set_state(zi, ZoneState::ExplicitlyOpened);
                None
            }
            ZoneState::ExplicitlyOpened => None,
            // ZBC: OPEN ZONE of a Full zone does nothing (libzbc state machine case 021).
            ZoneState::Full if self.cfg.zbc => None,
            _ => return Err(ZoneStatus::InvalidZoneStateTransition),
        };
        self.debug_check_counts();
        Ok(OpenResult { closed_zone })
    }

    /// Close Zone action (ZNS 1.1 3.4.3.1.1): opened -> Closed; Closed: no change; Empty, Full,
    /// Read Only, Offline: Invalid Zone State Transition. A ZRWA stays allocated (QEMU
    /// `nvme_zrm_close`). A zone opened but never written still goes to Closed, as ZNS says.
    /// With [`ZoneConfig::zbc`]: such a zone goes to Empty, and Empty or Full zones are left
    /// alone without an error.
    pub fn close(&mut self, zslba: u64) -> Result<(), ZoneStatus> {
        let zi = self.mgmt_zone(zslba)?;
        match self.zones[zi].state {
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                let to = self.closed_state(zi);
                self.set_state(zi, to);
            }
            ZoneState::Closed => {}
            ZoneState::Empty | ZoneState::Full if self.cfg.zbc => {}
            _ => return Err(ZoneStatus::InvalidZoneStateTransition),
        }
        Ok(())
    }

    /// Finish Zone action (ZNS 1.1 3.4.3.1.2): Empty, opened or Closed -> Full, freeing its
    /// resources (and ZRWA); Full: no change; Read Only, Offline: Invalid Zone State Transition.
    pub fn finish(&mut self, zslba: u64) -> Result<FinishResult, ZoneStatus> {
        let zi = self.mgmt_zone(zslba)?;
        self.finish_zone(zi)
    }

    /// Reset Zone action (ZNS 1.1 3.4.3.1.4): opened, Closed or Full -> Empty with the write
    /// pointer at ZSLBA, freeing resources and ZRWA; Empty: no change; Read Only, Offline: Invalid
    /// Zone State Transition.
    pub fn reset(&mut self, zslba: u64) -> Result<ResetResult, ZoneStatus> {
        let zi = self.mgmt_zone(zslba)?;
        self.reset_zone(zi)
    }

    /// Offline Zone action (ZNS 1.1 3.4.3.1.5): Read Only -> Offline; Offline: no change; any other
    /// state: Invalid Zone State Transition.
    pub fn offline(&mut self, zslba: u64) -> Result<(), ZoneStatus> {
        let zi = self.mgmt_zone(zslba)?;
        match self.zones[zi].state {
            ZoneState::ReadOnly => self.set_state(zi, ZoneState::Offline),
            ZoneState::Offline => {}
            _ => return Err(ZoneStatus::InvalidZoneStateTransition),
        }
        Ok(())
    }

    /// Open Zone with Select All: every Closed zone -> Explicitly Opened, all or none. Too Many
    /// Open Zones (nothing changes) if they do not all fit under the open limit; no zone is
    /// auto-closed for it (an auto-closed zone would itself be Closed; FEMU fails up front too).
    /// Returns how many zones opened.
    pub fn open_all(&mut self) -> Result<u32, ZoneStatus> {
        let closed = self.n_active - self.n_open;
        if self.cfg.max_open != 0 && self.n_open + closed > self.cfg.max_open {
            return Err(ZoneStatus::TooManyOpenZones);
        }
        let n = self.for_each_in(|s| s == ZoneState::Closed, |zs, zi| zs.set_state(zi, ZoneState::ExplicitlyOpened));
        Ok(n)
    }

    /// Close Zone with Select All: every opened zone -> Closed (ZBC: Empty if its write pointer
    /// is at the zone start). Returns how many.
    pub fn close_all(&mut self) -> u32 {
        self.for_each_in(ZoneState::is_open, |zs, zi| {
            let to = zs.closed_state(zi);
            zs.set_state(zi, to)
        })
    }

    /// Finish Zone with Select All: every opened or Closed zone -> Full (Empty zones are left
    /// alone, unlike single-zone Finish). `blocks` = total padding.
    pub fn finish_all(&mut self) -> BulkResult {
        self.finish_all_with(|_, _| {})
    }

    /// [`Zones::finish_all`], calling `each(zone, result)` for every zone finished.
    pub fn finish_all_with(&mut self, mut each: impl FnMut(u32, FinishResult)) -> BulkResult {
        let mut blocks = 0;
        let zones = self.for_each_in(ZoneState::is_active, |zs, zi| {
            let r = zs.finish_zone(zi).expect("active zones can be finished");
            blocks += r.filled;
            each(zi as u32, r);
        });
        BulkResult { zones, blocks }
    }

    /// Reset Zone with Select All: every opened, Closed or Full zone -> Empty. `blocks` = total
    /// written blocks dropped.
    pub fn reset_all(&mut self) -> BulkResult {
        self.reset_all_with(|_, _| {})
    }

    /// [`Zones::reset_all`], calling `each(zone, result)` for every zone reset.
    pub fn reset_all_with(&mut self, mut each: impl FnMut(u32, ResetResult)) -> BulkResult {
        let mut blocks = 0;
        let resettable = |s: ZoneState| s.is_active() || s == ZoneState::Full;
        let zones = self.for_each_in(resettable, |zs, zi| {
            let r = zs.reset_zone(zi).expect("active and full zones can be reset");
            blocks += r.written;
            each(zi as u32, r);
        });
        BulkResult { zones, blocks }
    }

    /// Offline Zone with Select All: every Read Only zone -> Offline. Returns how many.
    pub fn offline_all(&mut self) -> u32 {
        self.for_each_in(|s| s == ZoneState::ReadOnly, |zs, zi| zs.set_state(zi, ZoneState::Offline))
    }

    /// Explicit ZRWA flush (Zone Send Action 11h): commit the ZRWA up to and including `last_lba`;
    /// the write pointer becomes `last_lba + 1`. Rules as NVMeVirt and the FEMU note: `last_lba`
    /// must lie in the window `[wp, wp + ZRWAS)` (else Zone Boundary Error, QEMU's status) and
    /// `last_lba + 1 - wp` must be a multiple of ZRWAFG (else Invalid Field). Invalid Zone
    /// Operation if ZRWA is not configured, Invalid Field if the zone has no ZRWA. Like QEMU
    /// (`nvme_zrm_auto`), flushing a Closed zone opens it implicitly.
    pub fn zrwa_flush(&mut self, last_lba: u64) -> Result<FlushResult, ZoneStatus> {
        let zi = self.zone_index(last_lba).ok_or(ZoneStatus::LbaOutOfRange)? as usize;
        if self.zones[zi].state == ZoneState::NotWritePointer {
            return Err(ZoneStatus::InvalidField);
        }
        let Some(c) = self.cfg.zrwa else { return Err(ZoneStatus::InvalidZoneOperation) };
        let z = self.zones[zi];
        if !z.zrwa {
            return Err(ZoneStatus::InvalidField);
        }
        let cap_end = self.zone_start(zi as u32) + self.cfg.zone_capacity;
        if last_lba < z.wp || last_lba >= z.wp + c.size || last_lba >= cap_end {
            return Err(ZoneStatus::ZoneBoundaryError);
        }
        let n = last_lba + 1 - z.wp;
        if !n.is_multiple_of(c.flush_granularity) {
            return Err(ZoneStatus::InvalidField);
        }
        let (opened, closed_zone) = self.open_for_write(zi)?;
        let zone = &mut self.zones[zi];
        zone.wp += n;
        zone.hwm = zone.hwm.max(zone.wp);
        let full = zone.wp == cap_end;
        if full {
            self.make_full(zi);
        }
        self.debug_check_counts();
        Ok(FlushResult { committed: n, opened, closed_zone, full })
    }

    /// Controller-side media failure (ZNS 1.1 2.1.1.3: "by mechanisms outside the scope of this
    /// specification"): zone `zone` (index) -> Read Only, freeing its resources and ZRWA. Data stays
    /// readable. Already Read Only: no change. Offline or conventional: Invalid Zone State
    /// Transition / Invalid Field.
    pub fn set_read_only(&mut self, zone: u32) -> Result<(), ZoneStatus> {
        let zi = self.zone_by_index(zone)?;
        match self.zones[zi].state {
            ZoneState::ReadOnly => {}
            ZoneState::Offline => return Err(ZoneStatus::InvalidZoneStateTransition),
            _ => {
                self.release_zrwa(zi);
                self.set_state(zi, ZoneState::ReadOnly);
            }
        }
        Ok(())
    }

    /// Controller-side failure: zone `zone` (index) -> Offline from any state, freeing its
    /// resources and ZRWA. Conventional zone: Invalid Field.
    pub fn set_offline(&mut self, zone: u32) -> Result<(), ZoneStatus> {
        let zi = self.zone_by_index(zone)?;
        self.release_zrwa(zi);
        self.set_state(zi, ZoneState::Offline);
        Ok(())
    }

    /// Full consistency check (O(zones)): counters equal the states (open = ZSIO + ZSEO, active =
    /// ZSIO + ZSEO + ZSC), limits hold, the implicit-open FIFO holds exactly the ZSIO zones, every
    /// write pointer lies in `[start, start + capacity]`, Empty zones are at their start, ZRWAs only
    /// in active zones and aligned to the flush granularity.
    pub fn check_invariants(&self) -> Result<(), String> {
        let (mut open, mut active, mut implicit, mut zrwa) = (0u32, 0u32, 0u32, 0u32);
        for (i, z) in self.zones.iter().enumerate() {
            let start = self.zone_start(i as u32);
            let conventional = (i as u32) < self.cfg.conventional_zones;
            let cap_end = start + self.cfg.zone_capacity;
            if conventional != (z.state == ZoneState::NotWritePointer) {
                return Err(format!("zone {i}: type and state {:?} disagree", z.state));
            }
            open += z.state.is_open() as u32;
            active += z.state.is_active() as u32;
            implicit += (z.state == ZoneState::ImplicitlyOpened) as u32;
            zrwa += z.zrwa as u32;
            if conventional {
                continue;
            }
            if !(start <= z.wp && z.wp <= z.hwm && z.hwm <= cap_end) {
                return Err(format!("zone {i}: need {start} <= wp {} <= hwm {} <= {cap_end}", z.wp, z.hwm));
            }
            if z.state == ZoneState::Empty && z.hwm != start {
                return Err(format!("zone {i}: Empty but wp {} hwm {}", z.wp, z.hwm));
            }
            if z.state == ZoneState::Full && z.wp != z.hwm {
                return Err(format!("zone {i}: Full with wp {} != hwm {}", z.wp, z.hwm));
            }
            if z.state.is_active() && z.wp == cap_end {
                return Err(format!("zone {i}: {:?} with the write pointer at capacity", z.state));
            }
            match (z.zrwa, self.cfg.zrwa) {
                (false, _) if z.state.is_active() && z.wp != z.hwm => {
                    return Err(format!("zone {i}: data above the write pointer without a ZRWA"));
                }
                (true, None) => return Err(format!("zone {i}: ZRWA without ZRWA support")),
                (true, Some(c)) => {
                    if !z.state.is_active() {
                        return Err(format!("zone {i}: ZRWA in state {:?}", z.state));
                    }
                    if !(z.wp - start).is_multiple_of(c.flush_granularity) || z.hwm > z.wp + c.size {
                        return Err(format!("zone {i}: ZRWA wp {} hwm {} misaligned or past the window", z.wp, z.hwm));
                    }
                }
                _ => {}
            }
        }
        if (open, active, implicit, zrwa) != (self.n_open, self.n_active, self.n_implicit, self.zrwa_in_use) {
            return Err(format!(
                "counters open/active/implicit/zrwa {}/{}/{}/{} but states give {open}/{active}/{implicit}/{zrwa}",
                self.n_open, self.n_active, self.n_implicit, self.zrwa_in_use
            ));
        }
        if self.cfg.max_open != 0 && open > self.cfg.max_open {
            return Err(format!("{open} open zones > max_open {}", self.cfg.max_open));
        }
        if self.cfg.max_active != 0 && active > self.cfg.max_active {
            return Err(format!("{active} active zones > max_active {}", self.cfg.max_active));
        }
        if let Some(c) = self.cfg.zrwa {
            if zrwa > c.resources {
                return Err(format!("{zrwa} ZRWAs > {} resources", c.resources));
            }
        }
        let mut prev = NIL;
        let mut listed = 0u32;
        for z in self.implicitly_opened() {
            let zone = &self.zones[z as usize];
            if zone.state != ZoneState::ImplicitlyOpened || zone.prev != prev {
                return Err(format!("implicit-open list broken at zone {z}"));
            }
            prev = z;
            listed += 1;
            if listed > implicit {
                return Err("implicit-open list longer than the ZSIO zones (cycle?)".into());
            }
        }
        if listed != implicit || self.imp_tail != prev {
            return Err(format!("implicit-open list holds {listed} zones, {implicit} are ZSIO"));
        }
        Ok(())
    }

    // ---- internals ----

    #[inline]
    fn index_of(&self, lba: u64) -> usize {
        match self.zone_shift {
            Some(s) => (lba >> s) as usize,
            None => (lba / self.cfg.zone_size) as usize,
        }
    }

    fn zrwa(&self) -> ZrwaConfig {
        self.cfg.zrwa.expect("a zone holds a ZRWA only when ZRWA is configured")
    }

    /// End of `[lba, lba + blocks)`, checked against the namespace (NVMe NLB is 0's based, so a
    /// zero-length command cannot be expressed: Invalid Field).
    fn range_end(&self, lba: u64, blocks: u64) -> Result<u64, ZoneStatus> {
        if blocks == 0 {
            return Err(ZoneStatus::InvalidField);
        }
        match lba.checked_add(blocks) {
            Some(end) if end <= self.total_blocks => Ok(end),
            _ => Err(ZoneStatus::LbaOutOfRange),
        }
    }

    /// Zone named by a Zone Management Send SLBA: LBA Out of Range past the end (QEMU
    /// `nvme_get_mgmt_zone_slba_idx`), Invalid Field if not a zone start (ZNS 1.1 3.4.3) or the
    /// zone is conventional (ZBC: not a write pointer zone -> INVALID FIELD IN CDB; FEMU answers
    /// Invalid Zone State Transition instead).
    fn mgmt_zone(&self, zslba: u64) -> Result<usize, ZoneStatus> {
        let zi = self.zone_index(zslba).ok_or(ZoneStatus::LbaOutOfRange)?;
        if zslba != self.zone_start(zi) {
            return Err(ZoneStatus::InvalidField);
        }
        self.zone_by_index(zi)
    }

    fn zone_by_index(&self, zone: u32) -> Result<usize, ZoneStatus> {
        if zone >= self.cfg.zones {
            return Err(ZoneStatus::LbaOutOfRange);
        }
        if self.zones[zone as usize].state == ZoneState::NotWritePointer {
            return Err(ZoneStatus::InvalidField);
        }
        Ok(zone as usize)
    }

    /// A write (or flush) to an Empty or Closed zone implicitly opens it (ZNS 1.1 2.1.1.3.1,
    /// 2.1.1.3.4, A.3.1). Returns (opened, zone auto-closed).
    fn open_for_write(&mut self, zi: usize) -> Result<(bool, Option<u32>), ZoneStatus> {
        let state = self.zones[zi].state;
        if !matches!(state, ZoneState::Empty | ZoneState::Closed) {
            return Ok((false, None));
        }
        let victim = self.acquire_open(zi, state == ZoneState::Empty, false)?;
        self.set_state(zi, ZoneState::ImplicitlyOpened);
        Ok((true, victim))
    }

    /// Resource checks for zone `zi` entering an open state, all before any change so a failure
    /// leaves every zone as it was. Order as QEMU `nvme_zns_check_resources`: active first (ZNS
    /// 1.1 2.1.1.4.1: report the Active Resource when it is the one missing, in particular when
    /// MAR = MOR), then ZRWA, then open. At the open limit the oldest implicitly opened zone is
    /// closed if `auto_close` (FIFO by time of opening, as QEMU's `imp_open_zones` queue; which
    /// zone is vendor specific per ZNS 1.1 A.3.1 b).
    fn acquire_open(&mut self, zi: usize, from_empty: bool, zrwa: bool) -> Result<Option<u32>, ZoneStatus> {
        debug_assert!(!self.zones[zi].state.is_open());
        if from_empty && self.cfg.max_active != 0 && self.n_active >= self.cfg.max_active {
            return Err(ZoneStatus::TooManyActiveZones);
        }
        if zrwa && self.zrwa_in_use >= self.zrwa().resources {
            return Err(ZoneStatus::ZrwaResourcesUnavailable);
        }
        if self.cfg.max_open == 0 || self.n_open < self.cfg.max_open {
            return Ok(None);
        }
        if !self.cfg.auto_close || self.imp_head == NIL {
            return Err(ZoneStatus::TooManyOpenZones);
        }
        let victim = self.imp_head;
        let to = self.closed_state(victim as usize);
        self.set_state(victim as usize, to);
        Ok(Some(victim))
    }

    /// State an opened zone takes when closed: Closed, or under ZBC Empty when nothing was
    /// written (write pointer at the zone start; ZBC CLOSE ZONE, libzbc `zbc_zone_do_close`).
    fn closed_state(&self, zi: usize) -> ZoneState {
        let z = &self.zones[zi];
        if self.cfg.zbc && z.wp == self.zone_start(zi as u32) && z.hwm == z.wp {
            ZoneState::Empty
        } else {
            ZoneState::Closed
        }
    }

    fn finish_zone(&mut self, zi: usize) -> Result<FinishResult, ZoneStatus> {
        match self.zones[zi].state {
            ZoneState::Empty | ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed => {
                let cap_end = self.zone_start(zi as u32) + self.cfg.zone_capacity;
                let zone = &mut self.zones[zi];
                // Data in a ZRWA window is committed by Finish; the rest of the capacity is skipped.
                zone.wp = zone.hwm;
                let filled = cap_end - zone.wp;
                self.make_full(zi);
                Ok(FinishResult { filled })
            }
            ZoneState::Full => Ok(FinishResult::default()),
            _ => Err(ZoneStatus::InvalidZoneStateTransition),
        }
    }

    fn reset_zone(&mut self, zi: usize) -> Result<ResetResult, ZoneStatus> {
        let state = self.zones[zi].state;
        match state {
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed | ZoneState::Full => {
                let start = self.zone_start(zi as u32);
                let cap_end = start + self.cfg.zone_capacity;
                let zone = &mut self.zones[zi];
                let written = zone.hwm - start;
                let filled = if state == ZoneState::Full { cap_end - zone.wp } else { 0 };
                zone.wp = start;
                zone.hwm = start;
                self.release_zrwa(zi);
                self.set_state(zi, ZoneState::Empty);
                Ok(ResetResult { written, filled })
            }
            ZoneState::Empty => Ok(ResetResult::default()),
            _ => Err(ZoneStatus::InvalidZoneStateTransition),
        }
    }

    fn make_full(&mut self, zi: usize) {
        self.release_zrwa(zi);
        self.set_state(zi, ZoneState::Full);
    }

    fn release_zrwa(&mut self, zi: usize) {
        if self.zones[zi].zrwa {
            self.zones[zi].zrwa = false;
            self.zrwa_in_use -= 1;
        }
    }

    /// The only place a state changes: keeps the open/active counters (ZNS 1.1 2.1.1.4.1 a-g
    /// follow from counting states) and the implicit-open FIFO in step.
    fn set_state(&mut self, zi: usize, new: ZoneState) {
        let old = self.zones[zi].state;
        if old == new {
            return;
        }
        self.n_open -= old.is_open() as u32;
        self.n_active -= old.is_active() as u32;
        if old == ZoneState::ImplicitlyOpened {
            self.unlink_implicit(zi);
        }
        self.n_open += new.is_open() as u32;
        self.n_active += new.is_active() as u32;
        if new == ZoneState::ImplicitlyOpened {
            self.push_implicit(zi);
        }
        self.zones[zi].state = new;
    }

    fn push_implicit(&mut self, zi: usize) {
        let z = zi as u32;
        self.zones[zi].prev = self.imp_tail;
        self.zones[zi].next = NIL;
        match self.imp_tail {
            NIL => self.imp_head = z,
            t => self.zones[t as usize].next = z,
        }
        self.imp_tail = z;
        self.n_implicit += 1;
    }

    fn unlink_implicit(&mut self, zi: usize) {
        let Zone { prev, next, .. } = self.zones[zi];
        match prev {
            NIL => self.imp_head = next,
            p => self.zones[p as usize].next = next,
        }
        match next {
            NIL => self.imp_tail = prev,
            n => self.zones[n as usize].prev = prev,
        }
        self.zones[zi].prev = NIL;
        self.zones[zi].next = NIL;
        self.n_implicit -= 1;
    }

    /// Apply `f` to every sequential zone whose state (at the time it is visited) passes `pick`;
    /// returns how many. Select All actions are rare, so a scan is fine.
    fn for_each_in(&mut self, pick: impl Fn(ZoneState) -> bool, mut f: impl FnMut(&mut Self, usize)) -> u32 {
        let mut n = 0;
        for zi in self.cfg.conventional_zones as usize..self.zones.len() {
            if pick(self.zones[zi].state) {
                f(self, zi);
                n += 1;
            }
        }
        self.debug_check_counts();
        n
    }

    /// O(1) checks after every command; [`Zones::check_invariants`] is the full one.
    #[inline]
    fn debug_check_counts(&self) {
        debug_assert!(self.n_open <= self.n_active);
        debug_assert!(self.n_implicit <= self.n_open);
        debug_assert!(self.cfg.max_open == 0 || self.n_open <= self.cfg.max_open);
        debug_assert!(self.cfg.max_active == 0 || self.n_active <= self.cfg.max_active);
        debug_assert!(self.cfg.zrwa.is_some_and(|c| self.zrwa_in_use <= c.resources) || self.zrwa_in_use == 0);
    }
}

impl fmt::Display for ZoneState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ZoneState::Empty => "ZSE:Empty",
            ZoneState::ImplicitlyOpened => "ZSIO:Implicitly Opened",
            ZoneState::ExplicitlyOpened => "ZSEO:Explicitly Opened",
            ZoneState::Closed => "ZSC:Closed",
            ZoneState::Full => "ZSF:Full",
            ZoneState::ReadOnly => "ZSRO:Read Only",
            ZoneState::Offline => "ZSO:Offline",
            ZoneState::NotWritePointer => "Not Write Pointer",
        };
        f.write_str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_codes_round_trip() {
        use ZoneState::*;
        for s in [Empty, ImplicitlyOpened, ExplicitlyOpened, Closed, Full, ReadOnly, Offline, NotWritePointer] {
            assert_eq!(ZoneState::from_code(s.code()), Some(s));
        }
        assert_eq!(ZoneState::from_code(0x5), None);
    }

    #[test]
    fn non_power_of_two_zone_size_indexes_by_division() {
        let z = Zones::new(ZoneConfig::new(96, 80, 5)).unwrap();
        assert_eq!(z.zone_index(95), Some(0));
        assert_eq!(z.zone_index(96), Some(1));
        assert_eq!(z.zone_index(479), Some(4));
        assert_eq!(z.zone_index(480), None);
    }

    #[test]
    fn zone_struct_stays_compact() {
        assert_eq!(std::mem::size_of::<Zone>(), 32);
    }
}
