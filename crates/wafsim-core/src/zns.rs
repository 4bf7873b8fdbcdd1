//! A ZNS flash device: one zoned namespace whose zones map onto erase units, with no device GC.
//!
//! Media model. A zone's capacity is backed by `erase_units_per_zone` whole erase units
//! (superblocks: one block per plane on every die of the zone's width); the zone size may be
//! larger than the capacity (the LBA range is rounded up to a power of two, as on the ZN540:
//! 2,048 MiB zones with 1,077 MiB capacity). The device writes exactly what the host writes, at
//! the write pointer, so device WAF is 1 except for what Finish costs: when `finish_pads` is on,
//! finishing a partly written zone programs dummy data up to the zone capacity (a zone without
//! data is only marked Full) (counted in
//! `pad_units`, so in media bytes). A Reset erases every erase unit of the zone that holds
//! programmed data (host or padding). Zone state and its rules live in [`crate::zone`].
//!
//! Timed mode ([`MediaDevice`]): block `b` of zone `z` lies in physical unit
//! `z * zone_capacity + (b - zslba)`. Each erase unit of the zone is striped over the
//! `dies_per_rg` dies of one die group in program units of `units_per_program` blocks, as the
//! flash FTL stripes a superblock (program unit `k` of an erase unit is on die
//! `first_die + k % dies_per_rg`); zone `z` uses die group `z % groups`, where `groups` is what
//! [`MediaDevice::set_die_groups`] set (the timing engine passes its reclaim group count; 1 by
//! default), so die `= (z % groups) * dies_per_rg + k % dies_per_rg`. The log holds a
//! `ProgramHost` each time a zone's write pointer completes a program unit (Write, Append, or a
//! Finish completing a program unit partly filled with host data), a `ProgramGc` for each
//! program unit of Finish padding (device writes), and an `Erase { rg: group }` for each erase
//! unit a Reset erases. Conventional zones are not modelled on the media (no programs logged,
//! reads of them cost no NAND time).

use crate::blockdev::{BlockDevice, Completion, ZoneAction, ZoneGeometry, ZoneMgmtDone, ZoneTarget};
use crate::counters::{Counters, NsCounters};
use crate::blockdev::MediaDevice;
use crate::error::DeviceError;
use crate::media_op::MediaOp;
use crate::io::{Io, Op};
use crate::zoned::{self, zone_err};
use crate::zone::{ReportFilter, ZoneConfig, ZoneConfigError, ZoneDescriptor, ZoneStatus, Zones};

/// Configuration of a ZNS device (one zoned namespace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZnsConfig {
    /// Logical block size in bytes (4096: the mapping unit of the flash devices).
    pub block_size: u32,
    /// Zones, in logical blocks, with their limits.
    pub zones: ZoneConfig,
    /// Erase units backing one zone's capacity (each `zone_capacity / erase_units_per_zone`
    /// blocks).
    pub erase_units_per_zone: u32,
    /// Finish of a partly written zone programs dummy data up to the zone capacity (counted as
    /// media writes). Off: the rest of the zone's NAND stays erased until the next Reset.
    pub finish_pads: bool,
}

impl ZnsConfig {
    /// `zones` zones of `zone_size` bytes with `zone_capacity` bytes writable, 4 KiB blocks, one
    /// erase unit per zone, no open/active limits, Finish pads.
    pub fn small(zones: u32, zone_size: u64, zone_capacity: u64) -> ZnsConfig {
        ZnsConfig {
            block_size: 4096,
            zones: ZoneConfig::new(zone_size / 4096, zone_capacity / 4096, zones),
            erase_units_per_zone: 1,
            finish_pads: true,
        }
    }

    /// Blocks per erase unit.
    pub fn blocks_per_erase_unit(&self) -> u64 {
        self.zones.zone_capacity / self.erase_units_per_zone.max(1) as u64
    }

    /// Check the configuration (the zone rules, and whole erase units per zone capacity).
    pub fn validate(&self) -> Result<(), ZoneConfigError> {
        self.zones.validate()?;
        if !self.block_size.is_power_of_two() || self.block_size < 512 {
            return Err(ZoneConfigError("block size must be a power of two of at least 512 bytes"));
        }
        if self.erase_units_per_zone == 0 || !self.zones.zone_capacity.is_multiple_of(self.erase_units_per_zone as u64) {
            return Err(ZoneConfigError("zone capacity must be a whole number of erase units (erase_units_per_zone >= 1 dividing it)"));
        }
        Ok(())
    }
}

/// A ZNS flash device.
pub struct ZnsDevice {
    cfg: ZnsConfig,
    zones: Zones,
    shift: u32,
    counters: Counters,
    /// Blocks programmed per zone since its last reset (host data and padding): what a Reset
    /// must erase.
    programmed: Vec<u64>,
    erase_count: Vec<u32>,
    /// Die groups zones are spread over (timed mode).
    die_groups: u32,
    /// Timed mode: the media layout, the operations logged, and each zone's committed write
    /// pointer (blocks from its start) as the media saw it.
    media: Option<ZnsMedia>,
    media_ops: Vec<MediaOp>,
    media_wp: Vec<u64>,
}

/// How zone blocks lie on dies (timed mode).
#[derive(Debug, Clone, Copy)]
struct ZnsMedia {
    units_per_program: u64,
    dies_per_rg: u32,
}

impl ZnsDevice {
    /// The kind a ZNS drive's image names.
    pub const IMAGE_KIND: &'static str = "zns";

    /// Write the drive's state as a drive image ([`crate::image`]): zones, blocks programmed
    /// and erase counts, counters. (The timing model's media state is rebuilt when it is
    /// turned on.)
    pub fn save_image<W: std::io::Write>(&self, out: W) -> std::io::Result<W> {
        let mut w = crate::image::ImageWriter::with_config(out, Self::IMAGE_KIND, &format!("{:?}", self.cfg))?;
        self.zones.save_image(&mut w)?;
        w.section(b"PROG", 8 * self.programmed.len() as u64 + 4 * self.erase_count.len() as u64)?;
        w.u64s(&self.programmed)?;
        w.u32s(&self.erase_count)?;
        crate::image::write_counters(&mut w, &self.counters)?;
        w.finish()
    }

    /// A drive built from `cfg` and continued from an image saved by
    /// [`ZnsDevice::save_image`] from a drive of the same configuration.
    pub fn load_image<R: std::io::Read>(cfg: ZnsConfig, input: R) -> Result<ZnsDevice, crate::image::ImageError> {
        use crate::image::ImageError;
        let mut d = ZnsDevice::new(cfg).map_err(|e| ImageError::Config(e.to_string()))?;
        let mut r = crate::image::ImageReader::with_config(input, Self::IMAGE_KIND, &format!("{:?}", d.cfg))?;
        d.zones.load_image(&mut r)?;
        r.section(b"PROG", 8 * d.programmed.len() as u64 + 4 * d.erase_count.len() as u64)?;
        r.u64s(&mut d.programmed)?;
        r.u32s(&mut d.erase_count)?;
        d.counters = crate::image::read_counters(&mut r)?;
        r.finish()?;
        Ok(d)
    }

    /// A ZNS drive with every zone empty and no erase yet, or why `cfg` describes no valid zone
    /// layout.
    pub fn new(cfg: ZnsConfig) -> Result<ZnsDevice, ZoneConfigError> {
        cfg.validate()?;
        let zones = Zones::new(cfg.zones.clone())?;
        let n = cfg.zones.zones as usize;
        Ok(ZnsDevice {
            shift: cfg.block_size.trailing_zeros(),
            counters: Counters { namespaces: vec![NsCounters::default()], ..Default::default() },
            programmed: vec![0; n],
            erase_count: vec![0; n * cfg.erase_units_per_zone as usize],
            die_groups: 1,
            media: None,
            media_ops: Vec::new(),
            media_wp: Vec::new(),
            zones,
            cfg,
        })
    }

    /// The configuration the drive was built from.
    pub fn config(&self) -> &ZnsConfig {
        &self.cfg
    }

    /// The zone state machine (read-only view: states, write pointers, resources).
    pub fn zones(&self) -> &Zones {
        &self.zones
    }

    /// Erase count of every erase unit (zone-major).
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Spread zones over `groups` die groups (timed mode; zone z on group z % groups).
    pub fn set_die_groups(&mut self, groups: u32) {
        self.die_groups = groups.max(1);
    }

    /// Die of block position `pos` (from the zone start) of zone `zone`, and its position in its
    /// program unit.
    #[inline]
    fn die_at(&self, m: &ZnsMedia, zone: u32, pos: u64) -> (u32, u32) {
        let off = pos % self.cfg.blocks_per_erase_unit();
        let group = zone % self.die_groups;
        (group * m.dies_per_rg + ((off / m.units_per_program) % m.dies_per_rg as u64) as u32, (off % m.units_per_program) as u32)
    }

    /// Log the program units of `zone` completed when its media write pointer moves to `to`
    /// (blocks from the zone start): host programs for units holding host data (below `host_end`),
    /// GC (padding) programs for the others.
    #[cold]
    fn log_programs(&mut self, zone: u32, to: u64, host_end: u64) {
        let Some(m) = self.media else { return };
        let per = self.cfg.blocks_per_erase_unit();
        let from = self.media_wp[zone as usize];
        self.media_wp[zone as usize] = to;
        // Program unit k of an erase unit is complete when the write pointer passes its end.
        let mut eu = from / per;
        while eu * per < to {
            let base = eu * per;
            let lf = from.max(base) - base;
            let lt = to.min(base + per) - base;
            for pu_end in (lf / m.units_per_program + 1)..=(lt / m.units_per_program) {
                let start = base + (pu_end - 1) * m.units_per_program;
                let (die, _) = self.die_at(&m, zone, start);
                self.media_ops.push(if start < host_end { MediaOp::ProgramHost { die } } else { MediaOp::ProgramGc { die } });
            }
            eu += 1;
        }
    }

    /// Timed mode: a host write committed `committed` blocks of `zone`.
    #[inline]
    fn media_write(&mut self, zone: u32, committed: u64) {
        if self.media.is_some() && committed > 0 && zone >= self.cfg.zones.conventional_zones {
            let to = self.media_wp[zone as usize] + committed;
            self.log_programs(zone, to, to);
        }
    }

    /// Timed mode: Finish of `zone`: pad to the capacity (or, without padding, program only the
    /// program unit partly filled with host data).
    fn media_finish(&mut self, zone: u32) {
        let Some(m) = self.media else { return };
        let from = self.media_wp[zone as usize];
        let cap = self.cfg.zones.zone_capacity;
        let to = if self.cfg.finish_pads { cap } else { from.div_ceil(m.units_per_program) * m.units_per_program };
        if to > from {
            self.log_programs(zone, to.min(cap), from);
        }
    }

    fn blocks(&self, io: &Io) -> Result<(u64, u64), DeviceError> {
        zoned::blocks(io, self.shift)
    }

    fn count_write(&mut self, zone: u32, blocks: u64, bytes: u64) {
        zoned::count_write(&mut self.counters, blocks, bytes);
        self.programmed[zone as usize] += blocks;
    }

    /// Media work of finishing `zone`, `filled` blocks short of its capacity: a zone holding
    /// data is padded (timed: and its last program unit closed); a zone without data just
    /// becomes Full (the drive records it; nothing to program or, later, to erase). Returns
    /// the padding in bytes.
    fn finish_media(&mut self, zone: u32, filled: u64) -> u64 {
        if self.programmed[zone as usize] == 0 {
            return 0;
        }
        self.media_finish(zone);
        self.pad(zone, filled)
    }

    fn pad(&mut self, zone: u32, blocks: u64) -> u64 {
        if !self.cfg.finish_pads || blocks == 0 {
            return 0;
        }
        self.counters.pad_units += blocks;
        self.counters.namespaces[0].pad_units += blocks;
        self.programmed[zone as usize] += blocks;
        blocks << self.shift
    }

    /// Erase the erase units of `zone` that hold programmed data.
    fn erase_zone(&mut self, zone: u32) {
        let per = self.cfg.blocks_per_erase_unit();
        let used = self.programmed[zone as usize].div_ceil(per);
        debug_assert!(used <= self.cfg.erase_units_per_zone as u64, "zone {zone} programmed beyond its capacity");
        let first = zone as usize * self.cfg.erase_units_per_zone as usize;
        for c in &mut self.erase_count[first..first + used as usize] {
            *c += 1;
        }
        self.counters.erases += used;
        self.programmed[zone as usize] = 0;
        if self.media.is_some() {
            let rg = zone % self.die_groups;
            for _ in 0..used {
                self.media_ops.push(MediaOp::Erase { rg });
            }
            self.media_wp[zone as usize] = 0;
        }
    }

    /// Invariants of the zones and the media accounting (tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.zones.check_invariants()?;
        let c = &self.counters;
        let erased_units: u64 = self.erase_count.iter().map(|&e| e as u64).sum();
        if erased_units != c.erases {
            return Err(format!("erase counts add up to {erased_units}, counter says {}", c.erases));
        }
        for (z, &p) in self.programmed.iter().enumerate() {
            if p > self.cfg.zones.zone_capacity && self.cfg.zones.conventional_zones as usize <= z {
                return Err(format!("zone {z} programmed {p} blocks, capacity {}", self.cfg.zones.zone_capacity));
            }
        }
        if c.gc_units != 0 {
            return Err("a ZNS device never copies data".into());
        }
        Ok(())
    }
}

impl BlockDevice for ZnsDevice {
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        match io.op {
            Op::Flush if io.ns != 0 => Err(DeviceError::NoSuchNamespace(io.ns)),
            Op::Flush => Ok(Completion { offset: io.offset }),
            Op::Zone(action) => self.zone_mgmt(io.ns, io.offset, action).map(|_| Completion { offset: io.offset }),
            Op::Write => {
                let (lba, n) = self.blocks(io)?;
                let r = self.zones.write(lba, n).map_err(|s| zone_err(io.offset, s))?;
                self.count_write(r.zone, n, io.len as u64);
                self.media_write(r.zone, r.committed);
                Ok(Completion { offset: io.offset })
            }
            Op::Append => {
                let (zslba, n) = self.blocks(io)?;
                let r = self.zones.append(zslba, n).map_err(|s| zone_err(io.offset, s))?;
                self.count_write(r.zone, n, io.len as u64);
                self.media_write(r.zone, r.committed);
                Ok(Completion { offset: r.lba << self.shift })
            }
            Op::Read => {
                let (lba, n) = self.blocks(io)?;
                self.zones.read_check(lba, n).map_err(|s| zone_err(io.offset, s))?;
                let unwritten = self.zones.unwritten_blocks(lba, lba + n);
                zoned::count_read(&mut self.counters, n, io.len as u64, unwritten);
                Ok(Completion { offset: io.offset })
            }
            Op::Trim => {
                // Deallocate does not move a write pointer or change a zone's state; the data stays
                // until the zone is reset, so the media is unaffected.
                let (lba, n) = self.blocks(io)?;
                if lba + n > self.zones.total_blocks() {
                    return Err(zone_err(io.offset, ZoneStatus::LbaOutOfRange));
                }
                self.counters.trim_bytes += io.len as u64;
                self.counters.namespaces[0].trim_bytes += io.len as u64;
                Ok(Completion { offset: io.offset })
            }
        }
    }

    fn zone_mgmt_target(&mut self, ns: u32, target: ZoneTarget, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        if ns != 0 {
            return Err(DeviceError::NoSuchNamespace(ns));
        }
        let shift = self.shift;
        match target {
            ZoneTarget::Zone(offset) => {
                let (zslba, zone) = zoned::zone_at(&self.zones, offset, shift)?;
                let before = self.zones.state(zone);
                let bytes = match action {
                    ZoneAction::Open => self.zones.open(zslba).map(|_| 0).map_err(zoned::err_at(offset))?,
                    ZoneAction::Close => self.zones.close(zslba).map(|_| 0).map_err(zoned::err_at(offset))?,
                    ZoneAction::Offline => self.zones.offline(zslba).map(|_| 0).map_err(zoned::err_at(offset))?,
                    ZoneAction::Finish => {
                        let r = self.zones.finish(zslba).map_err(zoned::err_at(offset))?;
                        if before != self.zones.state(zone) {
                            self.finish_media(zone, r.filled)
                        } else {
                            0
                        }
                    }
                    ZoneAction::Reset => {
                        let r = self.zones.reset(zslba).map_err(zoned::err_at(offset))?;
                        self.erase_zone(zone);
                        r.written << shift
                    }
                };
                Ok(ZoneMgmtDone { zones: (self.zones.state(zone) != before) as u32, bytes })
            }
            ZoneTarget::All => match action {
                ZoneAction::Open => {
                    let n = self.zones.open_all().map_err(zoned::err_at(0))?;
                    Ok(ZoneMgmtDone { zones: n, bytes: 0 })
                }
                ZoneAction::Close => Ok(ZoneMgmtDone { zones: self.zones.close_all(), bytes: 0 }),
                ZoneAction::Offline => Ok(ZoneMgmtDone { zones: self.zones.offline_all(), bytes: 0 }),
                ZoneAction::Finish => {
                    let mut filled = Vec::new();
                    let r = self.zones.finish_all_with(|z, f| filled.push((z, f.filled)));
                    let bytes = filled
                        .into_iter()
                        .map(|(z, b)| self.finish_media(z, b))
                        .sum();
                    Ok(ZoneMgmtDone { zones: r.zones, bytes })
                }
                ZoneAction::Reset => {
                    let mut reset = Vec::new();
                    let r = self.zones.reset_all_with(|z, _| reset.push(z));
                    for z in reset {
                        self.erase_zone(z);
                    }
                    Ok(ZoneMgmtDone { zones: r.zones, bytes: r.blocks << shift })
                }
            },
        }
    }

    fn report_zones(&self, ns: u32, from: u64, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
        zoned::report(&self.zones, ns, from, self.shift, filter)
    }

    fn zone_geometry(&self, ns: u32) -> Option<ZoneGeometry> {
        let z = &self.cfg.zones;
        (ns == 0).then(|| ZoneGeometry {
            zone_size: z.zone_size << self.shift,
            zone_capacity: z.zone_capacity << self.shift,
            zones: z.zones,
            conventional_zones: z.conventional_zones,
            max_open: z.max_open,
            max_active: z.max_active,
        })
    }

    fn namespace_count(&self) -> u32 {
        1
    }

    fn namespace_bytes(&self, ns: u32) -> u64 {
        if ns == 0 {
            self.zones.total_blocks() << self.shift
        } else {
            0
        }
    }

    fn block_size(&self) -> u32 {
        self.cfg.block_size
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

impl MediaDevice for ZnsDevice {
    fn set_die_groups(&mut self, groups: u32) {
        ZnsDevice::set_die_groups(self, groups);
    }

    fn enable_media_log(&mut self, units_per_program: u32, units_per_page: u32, dies_per_rg: u32) {
        assert!(units_per_program > 0 && units_per_page > 0 && dies_per_rg > 0);
        if self.media.is_none() {
            // Zones written before timing began: their write pointers as the media saw them.
            let cap = self.cfg.zones.zone_capacity;
            self.media_wp = self.programmed.iter().map(|&p| p.min(cap)).collect();
        }
        self.media = Some(ZnsMedia { units_per_program: units_per_program as u64, dies_per_rg });
    }

    fn drain_media_ops(&mut self, out: &mut Vec<MediaOp>) {
        out.append(&mut self.media_ops);
    }

    fn lookup(&self, ns: u32, offset: u64) -> Option<u32> {
        if ns != 0 {
            return None;
        }
        let lba = offset >> self.shift;
        let zone = self.zones.zone_index(lba)?;
        if self.zones.is_written(lba) != Some(true) {
            return None;
        }
        Some((zone as u64 * self.cfg.zones.zone_capacity + lba - self.zones.zone_start(zone)) as u32)
    }

    fn media_pos(&self, ppa: u32) -> (u32, u32) {
        let Some(m) = self.media else { return (0, 0) };
        let cap = self.cfg.zones.zone_capacity;
        let zone = (ppa as u64 / cap) as u32;
        self.die_at(&m, zone, ppa as u64 % cap)
    }
}

crate::image::saves_image_by_config!(ZnsDevice);
