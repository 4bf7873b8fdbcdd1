//! The two zoned devices, ZNS flash ([`ZnsDevice`]) and host-managed SMR ([`SmrDevice`]), driven
//! only through the block-device interface (Write, Zone Append, Read and zone actions as
//! commands, Zone Management Send with and without Select All, Report Zones) by random command
//! sequences on small geometries, and checked after every command against a reference model
//! written here from the module documentation (zns.rs, smr.rs, zone.rs) and ZNS 1.1 / ZBC:
//! - the status of every command (accepted, or the exact `DeviceError`, zone status and offset
//!   included), the LBA a Zone Append was given, and what a zone action reports it did;
//! - Report Zones (all zones, and filtered from a position): types, states, write pointers;
//! - the data: the model keeps, per LBA, the sequence number of the last write that covered it
//!   (a Reset clears its zone). The devices keep no data, so what is checked is where it lies:
//!   on ZNS, `MediaDevice::lookup` of every LBA holding data must stay at the physical unit it
//!   returned just after the write that put the data there (the documented layout, one LBA per
//!   unit), and LBAs at or above a write pointer, reset, or conventional (not modelled on the
//!   media) have none. On SMR (no remapping) reads are unrestricted (URSWRZ): every read in the
//!   namespace succeeds, and the blocks without data are counted as unmapped reads;
//! - the counters: host bytes and units = accepted writes; ZNS media units = host units + the
//!   Finish padding (when configured), erases = erase units a Reset finds programmed; SMR media =
//!   host and nothing erased or padded; read units and unmapped read units.

use proptest::collection::vec;
use proptest::prelude::*;
use std::ops::Range;
use wafsim_core::blockdev::{BlockDevice, MediaDevice, ZoneAction, ZoneGeometry, ZoneMgmtDone, ZoneTarget};
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::zone::{ReportFilter, ZoneConfig, ZoneDescriptor, ZoneState, ZoneStatus, ZoneType};
use wafsim_core::{DeviceError, Io, Op, Pid};
use ZoneAction as A;
use ZoneState as S;
use ZoneStatus::*;

/// Zones per device.
const ZONES: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Zns,
    Smr,
}

/// A device configuration, in blocks.
#[derive(Debug, Clone)]
struct Geo {
    kind: Kind,
    /// Block size in bytes.
    bs: u64,
    /// Zone size and writable capacity.
    size: u64,
    cap: u64,
    /// Leading conventional zones.
    conv: usize,
    /// 0 = no limit.
    max_open: usize,
    max_active: usize,
    /// ZNS: Finish pads to the capacity.
    finish_pads: bool,
    /// ZNS: blocks per erase unit.
    per_eu: u64,
}

// ---- the reference model ----

/// What the host should see: zone states, write pointers, the last write per LBA, counters.
struct Model {
    g: Geo,
    state: Vec<ZoneState>,
    /// Absolute LBA where the host data of the zone ends: the write pointer while it is valid.
    wp: Vec<u64>,
    /// Implicitly opened zones, oldest first (the one the open limit closes).
    fifo: Vec<usize>,
    seq: u64,
    /// Per LBA: sequence number of the last write covering it.
    data: Vec<Option<u64>>,
    /// Per LBA: the physical unit `lookup` gave just after that write (ZNS).
    ppa: Vec<Option<u32>>,
    /// Per zone: blocks Finish padded since the last Reset (ZNS).
    padded: Vec<u64>,
    host_bytes: u64,
    host_units: u64,
    pad_units: u64,
    erases: u64,
    read_bytes: u64,
    read_units: u64,
    unmapped: u64,
}

fn zerr(offset: u64, status: ZoneStatus) -> DeviceError {
    DeviceError::Zone { ns: 0, offset, status }
}

impl Model {
    fn new(g: Geo) -> Model {
        let total = (ZONES as u64 * g.size) as usize;
        Model {
            state: (0..ZONES).map(|z| if z < g.conv { S::NotWritePointer } else { S::Empty }).collect(),
            wp: (0..ZONES as u64).map(|z| z * g.size).collect(),
            fifo: Vec::new(),
            seq: 0,
            data: vec![None; total],
            ppa: vec![None; total],
            padded: vec![0; ZONES],
            host_bytes: 0,
            host_units: 0,
            pad_units: 0,
            erases: 0,
            read_bytes: 0,
            read_units: 0,
            unmapped: 0,
            g,
        }
    }

    fn total(&self) -> u64 {
        ZONES as u64 * self.g.size
    }

    fn start(&self, z: usize) -> u64 {
        z as u64 * self.g.size
    }

    fn zone_of(&self, lba: u64) -> usize {
        (lba / self.g.size) as usize
    }

    fn conv(&self, z: usize) -> bool {
        z < self.g.conv
    }

    fn count(&self, f: impl Fn(ZoneState) -> bool) -> usize {
        self.state.iter().filter(|&&s| f(s)).count()
    }

    fn set(&mut self, z: usize, s: ZoneState) {
        if self.state[z] == s {
            return;
        }
        self.fifo.retain(|&x| x != z);
        if s == S::ImplicitlyOpened {
            self.fifo.push(z);
        }
        self.state[z] = s;
    }

    /// Where an open zone goes when closed: Closed; under ZBC, Empty if nothing was written.
    fn closed_state(&self, z: usize) -> ZoneState {
        if self.g.kind == Kind::Smr && self.wp[z] == self.start(z) {
            S::Empty
        } else {
            S::Closed
        }
    }

    /// Resources for zone `z` (Empty or Closed) to open: an active one if it is Empty, an open
    /// one, made by closing the oldest implicitly opened zone at the open limit.
    fn acquire(&mut self, z: usize) -> Result<(), ZoneStatus> {
        let active = self.count(ZoneState::is_active);
        if self.state[z] == S::Empty && self.g.max_active > 0 && active >= self.g.max_active {
            return Err(TooManyActiveZones);
        }
        if self.g.max_open > 0 && self.count(ZoneState::is_open) >= self.g.max_open {
            let Some(&victim) = self.fifo.first() else { return Err(TooManyOpenZones) };
            let to = self.closed_state(victim);
            self.set(victim, to);
        }
        Ok(())
    }

    /// Byte range of a command -> (first block, blocks).
    fn blocks(&self, io: &Io) -> Result<(u64, u64), DeviceError> {
        if io.ns != 0 {
            return Err(DeviceError::NoSuchNamespace(io.ns));
        }
        let bs = self.g.bs;
        if io.len == 0 || !io.offset.is_multiple_of(bs) || !(io.len as u64).is_multiple_of(bs) {
            return Err(zerr(io.offset, InvalidField));
        }
        let (lba, n) = (io.offset / bs, io.len as u64 / bs);
        if lba + n > self.total() {
            return Err(zerr(io.offset, LbaOutOfRange));
        }
        Ok((lba, n))
    }

    fn commit(&mut self, lba: u64, n: u64) {
        self.seq += 1;
        for b in lba..lba + n {
            self.data[b as usize] = Some(self.seq);
            self.ppa[b as usize] = None;
        }
        self.host_bytes += n * self.g.bs;
        self.host_units += n;
    }

    /// Write or Zone Append: the byte offset the data went to and its blocks.
    fn write(&mut self, io: &Io) -> Result<(u64, Range<u64>), DeviceError> {
        let append = io.op == Op::Append;
        let err = |s| zerr(io.offset, s);
        if append && self.g.kind == Kind::Smr {
            // Not a ZBC command.
            if io.ns != 0 {
                return Err(DeviceError::NoSuchNamespace(io.ns));
            }
            return Err(err(InvalidField));
        }
        let (lba, n) = self.blocks(io)?;
        let z = self.zone_of(lba);
        let zs = self.start(z);
        if self.conv(z) {
            if append {
                return Err(err(InvalidField));
            }
            // ZNS: inside the zone; SMR: across conventional zones, not into a sequential one.
            let limit = match self.g.kind {
                Kind::Zns => zs + self.g.size,
                Kind::Smr => self.g.conv as u64 * self.g.size,
            };
            if lba + n > limit {
                return Err(err(ZoneBoundaryError));
            }
            self.commit(lba, n);
            return Ok((io.offset, lba..lba + n));
        }
        if append && lba != zs {
            return Err(err(InvalidField));
        }
        let slba = if append { self.wp[z] } else { lba };
        if self.state[z] == S::Full {
            return Err(err(ZoneIsFull));
        }
        if slba != self.wp[z] {
            return Err(err(ZoneInvalidWrite));
        }
        if slba + n > zs + self.g.cap {
            return Err(err(ZoneBoundaryError));
        }
        if matches!(self.state[z], S::Empty | S::Closed) {
            self.acquire(z).map_err(err)?;
            self.set(z, S::ImplicitlyOpened);
        }
        self.commit(slba, n);
        self.wp[z] = slba + n;
        if self.wp[z] == zs + self.g.cap {
            self.set(z, S::Full);
        }
        Ok((slba * self.g.bs, slba..slba + n))
    }

    fn read(&mut self, io: &Io) -> Result<(), DeviceError> {
        let (lba, n) = self.blocks(io)?;
        if self.g.kind == Kind::Zns && self.zone_of(lba) != self.zone_of(lba + n - 1) {
            return Err(zerr(io.offset, ZoneBoundaryError));
        }
        let unwritten = (lba..lba + n).filter(|&b| !self.conv(self.zone_of(b)) && self.data[b as usize].is_none());
        self.unmapped += unwritten.count() as u64;
        self.read_units += n;
        self.read_bytes += n * self.g.bs;
        Ok(())
    }

    /// Finish zone `z` (not Full): bytes padded.
    fn finish(&mut self, z: usize) -> u64 {
        let filled = self.start(z) + self.g.cap - self.wp[z];
        let has_data = self.wp[z] > self.start(z);
        self.set(z, S::Full);
        let pads = self.g.kind == Kind::Zns && self.g.finish_pads;
        // A zone without data only becomes Full (zns.rs: nothing to pad, nothing to erase later).
        if pads && filled > 0 && has_data {
            self.padded[z] += filled;
            self.pad_units += filled;
            filled * self.g.bs
        } else {
            0
        }
    }

    /// Reset zone `z` (not Empty): bytes of host data dropped.
    fn reset(&mut self, z: usize) -> u64 {
        let s = self.start(z);
        let written = self.wp[z] - s;
        if self.g.kind == Kind::Zns {
            self.erases += (written + self.padded[z]).div_ceil(self.g.per_eu);
            self.padded[z] = 0;
        }
        for b in s..s + self.g.size {
            self.data[b as usize] = None;
            self.ppa[b as usize] = None;
        }
        self.wp[z] = s;
        self.set(z, S::Empty);
        written * self.g.bs
    }

    fn mgmt(&mut self, ns: u32, target: ZoneTarget, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        if ns != 0 {
            return Err(DeviceError::NoSuchNamespace(ns));
        }
        let zns = self.g.kind == Kind::Zns;
        let off = match target {
            ZoneTarget::Zone(off) => off,
            ZoneTarget::All => return self.mgmt_all(action),
        };
        let err = |s| zerr(off, s);
        if !off.is_multiple_of(self.g.bs) {
            return Err(err(InvalidField));
        }
        let lba = off / self.g.bs;
        if lba >= self.total() {
            return Err(err(LbaOutOfRange));
        }
        let z = self.zone_of(lba);
        if (!zns && action == A::Offline) || lba != self.start(z) || self.conv(z) {
            return Err(err(InvalidField));
        }
        let before = self.state[z];
        let bytes = match (action, before) {
            (A::Open, S::Empty | S::Closed) => {
                self.acquire(z).map_err(err)?;
                self.set(z, S::ExplicitlyOpened);
                0
            }
            (A::Open, S::ImplicitlyOpened) => {
                self.set(z, S::ExplicitlyOpened);
                0
            }
            (A::Open, S::ExplicitlyOpened) => 0,
            (A::Open, S::Full) if !zns => 0,
            (A::Close, S::ImplicitlyOpened | S::ExplicitlyOpened) => {
                let to = self.closed_state(z);
                self.set(z, to);
                0
            }
            (A::Close, S::Closed) => 0,
            (A::Close, S::Empty | S::Full) if !zns => 0,
            (A::Finish, S::Empty | S::ImplicitlyOpened | S::ExplicitlyOpened | S::Closed) => self.finish(z),
            (A::Finish, S::Full) => 0,
            (A::Reset, S::Empty) => 0,
            (A::Reset, S::ImplicitlyOpened | S::ExplicitlyOpened | S::Closed | S::Full) => self.reset(z),
            _ => return Err(err(InvalidZoneStateTransition)),
        };
        Ok(ZoneMgmtDone { zones: (self.state[z] != before) as u32, bytes })
    }

    fn mgmt_all(&mut self, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        let pick = |m: &Model, f: &dyn Fn(ZoneState) -> bool| (m.g.conv..ZONES).filter(|&z| f(m.state[z])).collect::<Vec<_>>();
        let mut done = ZoneMgmtDone::default();
        match action {
            A::Open => {
                let closed = pick(self, &|s| s == S::Closed);
                if self.g.max_open > 0 && self.count(ZoneState::is_open) + closed.len() > self.g.max_open {
                    return Err(zerr(0, TooManyOpenZones));
                }
                for &z in &closed {
                    self.set(z, S::ExplicitlyOpened);
                }
                done.zones = closed.len() as u32;
            }
            A::Close => {
                for z in pick(self, &ZoneState::is_open) {
                    let to = self.closed_state(z);
                    self.set(z, to);
                    done.zones += 1;
                }
            }
            A::Finish => {
                for z in pick(self, &ZoneState::is_active) {
                    done.bytes += self.finish(z);
                    done.zones += 1;
                }
            }
            A::Reset => {
                for z in pick(self, &|s| s.is_active() || s == S::Full) {
                    done.bytes += self.reset(z);
                    done.zones += 1;
                }
            }
            // ZNS: Offline acts on Read Only zones (none here); ZBC has no such action.
            A::Offline if self.g.kind == Kind::Zns => {}
            A::Offline => return Err(zerr(0, InvalidField)),
        }
        Ok(done)
    }

    fn descriptor(&self, z: usize) -> ZoneDescriptor {
        let conv = self.conv(z);
        let s = self.state[z];
        let wp_valid = matches!(s, S::Empty | S::ImplicitlyOpened | S::ExplicitlyOpened | S::Closed);
        ZoneDescriptor {
            zone: z as u32,
            zone_type: if conv { ZoneType::Conventional } else { ZoneType::SequentialWriteRequired },
            state: s,
            start: self.start(z),
            capacity: if conv { self.g.size } else { self.g.cap },
            write_pointer: wp_valid.then_some(self.wp[z]),
            zrwa: false,
        }
    }

    fn report(&self, ns: u32, from: u64, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
        if ns != 0 {
            return Err(DeviceError::NoSuchNamespace(ns));
        }
        let lba = from / self.g.bs;
        if lba >= self.total() {
            return Err(zerr(from, LbaOutOfRange));
        }
        let keep = |s: ZoneState| match filter {
            ReportFilter::All => true,
            ReportFilter::Empty => s == S::Empty,
            ReportFilter::ImplicitlyOpened => s == S::ImplicitlyOpened,
            ReportFilter::ExplicitlyOpened => s == S::ExplicitlyOpened,
            ReportFilter::Closed => s == S::Closed,
            ReportFilter::Full => s == S::Full,
            ReportFilter::ReadOnly => s == S::ReadOnly,
            ReportFilter::Offline => s == S::Offline,
            ReportFilter::NotWritePointer => s == S::NotWritePointer,
        };
        Ok((self.zone_of(lba)..ZONES).filter(|&z| keep(self.state[z])).map(|z| self.descriptor(z)).collect())
    }
}

// ---- the devices ----

/// What the test reads besides the block-device interface: the media location of a byte, where
/// the device has one (ZNS `MediaDevice::lookup`); `None` for a device without a media map.
trait Probe: BlockDevice {
    fn location(&self, ns: u32, offset: u64) -> Option<Option<u32>>;
}

impl Probe for ZnsDevice {
    fn location(&self, ns: u32, offset: u64) -> Option<Option<u32>> {
        Some(MediaDevice::lookup(self, ns, offset))
    }
}

impl Probe for SmrDevice {
    fn location(&self, _: u32, _: u64) -> Option<Option<u32>> {
        None
    }
}

fn zns_device(g: &Geo) -> ZnsDevice {
    let zones = ZoneConfig {
        conventional_zones: g.conv as u32,
        max_open: g.max_open as u32,
        max_active: g.max_active as u32,
        ..ZoneConfig::new(g.size, g.cap, ZONES as u32)
    };
    let cfg = ZnsConfig {
        block_size: g.bs as u32,
        zones,
        erase_units_per_zone: (g.cap / g.per_eu) as u32,
        finish_pads: g.finish_pads,
    };
    ZnsDevice::new(cfg).unwrap()
}

fn smr_device(g: &Geo) -> SmrDevice {
    let cfg = SmrConfig {
        block_size: g.bs as u32,
        zone_size: g.size * g.bs,
        zones: ZONES as u32,
        conventional_zones: g.conv as u32,
        max_open: g.max_open as u32,
    };
    SmrDevice::new(cfg).unwrap()
}

// ---- commands ----

/// One host command, in terms of the zone layout (resolved against the model when run).
#[derive(Debug, Clone)]
enum Cmd {
    /// Write at the zone's write pointer (conventional zone: somewhere in it).
    WriteAtWp { zone: usize, len: u64 },
    /// Write at an arbitrary block of the zone (mostly not the write pointer).
    WriteAt { zone: usize, off: u64, len: u64 },
    /// Write from the write pointer (conventional: the last block) past the zone end, or past
    /// the zone capacity.
    WriteCross { zone: usize, extra: u64, to_cap: bool },
    /// Zone Append to the zone start, or (`mid`) to a block inside the zone.
    Append { zone: usize, len: u64, mid: bool },
    Read { lba: u64, len: u64 },
    /// Zone action on one zone: `aim` picks the offset (zone start, inside, past the end,
    /// misaligned), `via` the interface (Op::Zone command, zone_mgmt, zone_mgmt_target).
    Zone { zone: usize, action: ZoneAction, aim: u8, via: u8 },
    /// Zone action with Select All.
    All { action: ZoneAction },
    Report { zone: usize, off: u64, filter: usize },
    /// Malformed commands: zero length, misaligned, another namespace.
    Bad { kind: u8, zone: usize },
}

const FILTERS: [ReportFilter; 9] = [
    ReportFilter::All,
    ReportFilter::Empty,
    ReportFilter::ImplicitlyOpened,
    ReportFilter::ExplicitlyOpened,
    ReportFilter::Closed,
    ReportFilter::Full,
    ReportFilter::ReadOnly,
    ReportFilter::Offline,
    ReportFilter::NotWritePointer,
];

fn action() -> impl Strategy<Value = ZoneAction> {
    prop_oneof![4 => Just(A::Open), 4 => Just(A::Close), 3 => Just(A::Finish), 3 => Just(A::Reset), 1 => Just(A::Offline)]
}

fn cmd() -> impl Strategy<Value = Cmd> {
    let z = 0..ZONES;
    prop_oneof![
        12 => (z.clone(), 1..7u64).prop_map(|(zone, len)| Cmd::WriteAtWp { zone, len }),
        3 => (z.clone(), 0..16u64, 1..8u64).prop_map(|(zone, off, len)| Cmd::WriteAt { zone, off, len }),
        2 => (z.clone(), 1..4u64, any::<bool>()).prop_map(|(zone, extra, to_cap)| Cmd::WriteCross { zone, extra, to_cap }),
        6 => (z.clone(), 1..7u64, prop::bool::weighted(0.15)).prop_map(|(zone, len, mid)| Cmd::Append { zone, len, mid }),
        3 => (0..200u64, 1..20u64).prop_map(|(lba, len)| Cmd::Read { lba, len }),
        8 => (z.clone(), action(), 0..6u8, 0..3u8).prop_map(|(zone, action, aim, via)| Cmd::Zone { zone, action, aim, via }),
        2 => action().prop_map(|action| Cmd::All { action }),
        1 => (0..ZONES + 1, 0..16u64, 0..FILTERS.len()).prop_map(|(zone, off, filter)| Cmd::Report { zone, off, filter }),
        1 => (0..9u8, z).prop_map(|(kind, zone)| Cmd::Bad { kind, zone }),
    ]
}

fn fail(what: &str, got: impl std::fmt::Debug, want: impl std::fmt::Debug) -> TestCaseError {
    TestCaseError::fail(format!("{what}: device gave {got:?}, the model expects {want:?}"))
}

/// Submit a Write, Append, Read or zone-action command to the device and the model and compare.
fn exec<D: Probe>(dev: &mut D, m: &mut Model, io: Io) -> Result<(), TestCaseError> {
    let got = dev.submit(&io).map(|c| c.offset);
    match io.op {
        Op::Write | Op::Append => {
            let want = m.write(&io);
            let want_offset = want.as_ref().map(|(o, _)| *o).map_err(Clone::clone);
            if got != want_offset {
                return Err(fail(&format!("{io:?}"), got, want_offset));
            }
            if let Ok((_, range)) = want {
                record(dev, m, range)?;
            }
        }
        Op::Read => {
            let want = m.read(&io).map(|()| io.offset);
            if got != want {
                return Err(fail(&format!("{io:?}"), got, want));
            }
        }
        Op::Zone(action) => {
            let want = m.mgmt(io.ns, ZoneTarget::Zone(io.offset), action).map(|_| io.offset);
            if got != want {
                return Err(fail(&format!("{io:?}"), got, want));
            }
        }
        _ => unreachable!(),
    }
    Ok(())
}

/// After a write of `range`: remember where each block went (ZNS). The ZNS layout puts block `b`
/// of sequential zone `z` at unit `z * capacity + (b - zone start)`; conventional zones are not
/// on the media.
fn record<D: Probe>(dev: &D, m: &mut Model, range: Range<u64>) -> Result<(), TestCaseError> {
    for b in range {
        let Some(got) = dev.location(0, b * m.g.bs) else { return Ok(()) };
        let z = m.zone_of(b);
        let want = (!m.conv(z)).then(|| (z as u64 * m.g.cap + b - m.start(z)) as u32);
        prop_assert_eq!(got, want, "lookup of LBA {} just after writing it", b);
        m.ppa[b as usize] = got;
    }
    Ok(())
}

fn mgmt<D: Probe>(dev: &mut D, m: &mut Model, ns: u32, target: ZoneTarget, action: ZoneAction, via: u8) -> Result<(), TestCaseError> {
    let got = if via == 1 {
        let ZoneTarget::Zone(off) = target else { unreachable!() };
        dev.zone_mgmt(ns, off, action)
    } else {
        dev.zone_mgmt_target(ns, target, action)
    };
    let want = m.mgmt(ns, target, action);
    if got != want {
        return Err(fail(&format!("zone action {action:?} on {target:?} of namespace {ns}"), got, want));
    }
    Ok(())
}

fn report<D: Probe>(dev: &D, m: &Model, ns: u32, from: u64, filter: ReportFilter) -> Result<(), TestCaseError> {
    let got = dev.report_zones(ns, from, filter);
    let want = m.report(ns, from, filter);
    if got != want {
        return Err(fail(&format!("Report Zones of namespace {ns} from byte {from}, {filter:?}"), got, want));
    }
    Ok(())
}

fn run_cmd<D: Probe>(dev: &mut D, m: &mut Model, cmd: &Cmd) -> Result<(), TestCaseError> {
    let (bs, size, cap) = (m.g.bs, m.g.size, m.g.cap);
    let io = |op, lba: u64, n: u64| Io { op, ns: 0, offset: lba * bs, len: (n * bs) as u32, pid: Pid::NONE };
    match *cmd {
        Cmd::WriteAtWp { zone, len } => {
            let lba = if m.conv(zone) { m.start(zone) + len % size } else { m.wp[zone] };
            exec(dev, m, io(Op::Write, lba, len))
        }
        Cmd::WriteAt { zone, off, len } => exec(dev, m, io(Op::Write, m.start(zone) + off % size, len)),
        Cmd::WriteCross { zone, extra, to_cap } => {
            let conv = m.conv(zone);
            let end = m.start(zone) + if to_cap && !conv { cap } else { size };
            let lba = if conv { end - 1 } else { m.wp[zone].min(end - 1) };
            exec(dev, m, io(Op::Write, lba, end - lba + extra))
        }
        Cmd::Append { zone, len, mid } => {
            let lba = m.start(zone) + if mid { 1 + len % (size - 1) } else { 0 };
            exec(dev, m, io(Op::Append, lba, len))
        }
        Cmd::Read { lba, len } => {
            let lba = lba % (m.total() + 4);
            exec(dev, m, io(Op::Read, lba, len))
        }
        Cmd::Zone { zone, action, aim, via } => {
            let s = m.start(zone) * bs;
            let off = match aim {
                0..=2 => s,
                3 => s + (1 + zone as u64 % (size - 1)) * bs,
                4 => (m.total() + m.start(zone)) * bs,
                _ => s + bs / 2,
            };
            if via == 0 {
                exec(dev, m, Io { op: Op::Zone(action), ns: 0, offset: off, len: 0, pid: Pid::NONE })
            } else {
                mgmt(dev, m, 0, ZoneTarget::Zone(off), action, via)
            }
        }
        Cmd::All { action } => mgmt(dev, m, 0, ZoneTarget::All, action, 2),
        Cmd::Report { zone, off, filter } => {
            // Any byte of the zone (past the end when zone == ZONES).
            let from = (zone as u64 * size + off % size) * bs + off % 3;
            report(dev, m, 0, from, FILTERS[filter])
        }
        Cmd::Bad { kind, zone } => {
            let s = m.start(zone);
            let w = if m.conv(zone) { s } else { m.wp[zone] };
            match kind {
                0 => exec(dev, m, Io { len: 0, ..io(Op::Write, w, 1) }),
                1 => exec(dev, m, Io { offset: w * bs + bs / 2, ..io(Op::Write, w, 1) }),
                2 => exec(dev, m, Io { len: (bs + bs / 2) as u32, ..io(Op::Write, w, 1) }),
                3 => exec(dev, m, Io { ns: 1, ..io(Op::Write, w, 1) }),
                4 => exec(dev, m, Io { ns: 1, ..io(Op::Read, w, 1) }),
                5 => exec(dev, m, Io { ns: 1, ..io(Op::Zone(A::Reset), s, 0) }),
                6 => exec(dev, m, Io { ns: 1, ..io(Op::Append, s, 1) }),
                7 => exec(dev, m, Io { offset: s * bs + bs / 2, ..io(Op::Append, s, 1) }),
                _ => {
                    report(dev, m, 1, 0, ReportFilter::All)?;
                    mgmt(dev, m, 1, ZoneTarget::All, A::Reset, 2)
                }
            }
        }
    }
}

/// Everything observable against the model: Report Zones, counters, data locations.
fn check<D: Probe>(dev: &D, m: &Model) -> Result<(), TestCaseError> {
    report(dev, m, 0, 0, ReportFilter::All)?;
    let c = dev.counters();
    prop_assert_eq!((c.host_write_bytes, c.host_units), (m.host_bytes, m.host_units), "host writes");
    prop_assert_eq!((c.pad_units, c.gc_units, c.erases), (m.pad_units, 0, m.erases), "padding, GC, erases");
    prop_assert_eq!(c.media_units(), m.host_units + m.pad_units, "media units = host + padding");
    prop_assert_eq!((c.read_units, c.unmapped_read_units, c.host_read_bytes), (m.read_units, m.unmapped, m.read_bytes), "reads");
    let ns = &c.namespaces[0];
    prop_assert_eq!((ns.host_write_bytes, ns.host_units, ns.pad_units), (m.host_bytes, m.host_units, m.pad_units));
    prop_assert_eq!(ns.host_read_bytes, m.read_bytes);

    // The model's own consistency: a sequential zone holds data exactly below its write pointer,
    // written in order.
    for z in m.g.conv..ZONES {
        let zone = m.start(z)..m.start(z) + m.g.size;
        for b in zone.clone() {
            prop_assert_eq!(m.data[b as usize].is_some(), b < m.wp[z], "model: zone {} LBA {}", z, b);
        }
        let seqs: Vec<u64> = zone.filter_map(|b| m.data[b as usize]).collect();
        prop_assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "model: zone {} written out of order", z);
    }

    // Where the data lies (ZNS): every block holding data where the write that put it there
    // found it, distinct blocks on distinct units; no unit for blocks without data.
    let bs = m.g.bs;
    if dev.location(0, 0).is_none() {
        return Ok(());
    }
    let mut owner = vec![None; ZONES * m.g.cap as usize];
    for b in 0..m.total() {
        let z = m.zone_of(b);
        let want = if m.conv(z) { None } else { m.data[b as usize].and(m.ppa[b as usize]) };
        prop_assert!(m.conv(z) || m.data[b as usize].is_none() || want.is_some(), "model: LBA {} written, unit not recorded", b);
        for off in [b * bs, b * bs + bs - 1] {
            let got = dev.location(0, off).unwrap();
            prop_assert_eq!(got, want, "lookup of byte {} (LBA {}, zone {}, last write #{:?})", off, b, z, m.data[b as usize]);
        }
        if let Some(p) = want {
            let slot = owner.get_mut(p as usize).ok_or_else(|| TestCaseError::fail(format!("LBA {b}: unit {p} out of range")))?;
            prop_assert_eq!(slot.replace(b), None, "LBA {} shares unit {}", b, p);
        }
    }
    prop_assert_eq!(dev.location(0, m.total() * bs), Some(None), "past the end");
    prop_assert_eq!(dev.location(1, 0), Some(None), "another namespace");
    Ok(())
}

/// Read back everything: every block alone (a block with data is a mapped read, one without an
/// unmapped one), every zone whole, and the whole namespace (unrestricted reads on SMR, a zone
/// boundary error on ZNS).
fn read_back<D: Probe>(dev: &mut D, m: &mut Model) -> Result<(), TestCaseError> {
    let bs = m.g.bs;
    let read = |lba: u64, n: u64| Io { op: Op::Read, ns: 0, offset: lba * bs, len: (n * bs) as u32, pid: Pid::NONE };
    for b in 0..m.total() {
        let before = dev.counters().unmapped_read_units;
        exec(dev, m, read(b, 1))?;
        let unmapped = dev.counters().unmapped_read_units - before;
        let z = m.zone_of(b);
        let held = m.conv(z) || m.data[b as usize].is_some();
        prop_assert_eq!(unmapped, !held as u64, "read of LBA {} (zone {}, last write #{:?})", b, z, m.data[b as usize]);
    }
    for z in 0..ZONES {
        exec(dev, m, read(m.start(z), m.g.size))?;
    }
    exec(dev, m, read(0, m.total()))?;
    check(dev, m)
}

fn check_geometry<D: Probe>(dev: &D, g: &Geo) -> Result<(), TestCaseError> {
    let want = ZoneGeometry {
        zone_size: g.size * g.bs,
        zone_capacity: g.cap * g.bs,
        zones: ZONES as u32,
        conventional_zones: g.conv as u32,
        max_open: g.max_open as u32,
        max_active: g.max_active as u32,
    };
    prop_assert_eq!(dev.zone_geometry(0), Some(want));
    prop_assert_eq!(dev.zone_geometry(1), None);
    prop_assert_eq!((dev.namespace_count(), dev.block_size() as u64), (1, g.bs));
    prop_assert_eq!((dev.namespace_bytes(0), dev.namespace_bytes(1)), (ZONES as u64 * g.size * g.bs, 0));
    Ok(())
}

fn run<D: Probe>(mut dev: D, g: Geo, cmds: &[Cmd]) -> Result<(), TestCaseError> {
    check_geometry(&dev, &g)?;
    let mut m = Model::new(g);
    check(&dev, &m)?;
    for (i, cmd) in cmds.iter().enumerate() {
        run_cmd(&mut dev, &mut m, cmd)
            .and_then(|()| check(&dev, &m))
            .map_err(|e| TestCaseError::fail(format!("command {i} {cmd:?}: {e}")))?;
    }
    read_back(&mut dev, &mut m)
}

// ---- configurations ----

fn zns_geo() -> impl Strategy<Value = Geo> {
    (
        prop_oneof![Just(512u64), Just(4096)],
        // (zone size, capacity, erase units per zone), in blocks.
        prop_oneof![Just((8u64, 6u64, 2u64)), Just((8, 8, 1)), Just((12, 9, 3)), Just((16, 12, 4)), Just((6, 4, 2))],
        0..3usize,
        // (max open, max active).
        prop_oneof![Just((0usize, 0usize)), Just((2, 3)), Just((2, 2)), Just((1, 0)), Just((1, 1)), Just((3, 4)), Just((0, 2))],
        any::<bool>(),
    )
        .prop_map(|(bs, (size, cap, eus), conv, (max_open, max_active), finish_pads)| Geo {
            kind: Kind::Zns,
            bs,
            size,
            cap,
            conv,
            max_open,
            max_active,
            finish_pads,
            per_eu: cap / eus,
        })
}

fn smr_geo() -> impl Strategy<Value = Geo> {
    (prop_oneof![Just(512u64), Just(4096)], prop_oneof![Just(6u64), Just(8), Just(12)], 0..3usize, 0..4usize).prop_map(
        |(bs, size, conv, max_open)| Geo {
            kind: Kind::Smr,
            bs,
            size,
            cap: size,
            conv,
            max_open,
            max_active: 0,
            finish_pads: false,
            per_eu: 1,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn zns_device_agrees_with_a_reference_model(g in zns_geo(), cmds in vec(cmd(), 1..150)) {
        run(zns_device(&g), g, &cmds)?;
    }

    #[test]
    fn smr_device_agrees_with_a_reference_model(g in smr_geo(), cmds in vec(cmd(), 1..150)) {
        run(smr_device(&g), g, &cmds)?;
    }
}

/// The documented rule (zns.rs `ZnsConfig::finish_pads`, docs/model.md: "Finish of a partly
/// written zone ... programs dummy data up to the capacity"): a zone without host data has
/// nothing to pad.
#[test]
fn zns_finish_of_a_zone_without_host_data_pads_nothing() {
    const BS: u64 = 4096;
    // 4 zones of 16 blocks, capacity 12 blocks on one erase unit, Finish pads.
    let mut dev = ZnsDevice::new(ZnsConfig::small(4, 16 * BS, 12 * BS)).unwrap();
    // Finish of an Empty zone.
    assert_eq!(dev.zone_mgmt(0, 0, A::Finish).unwrap(), ZoneMgmtDone { zones: 1, bytes: 0 });
    // Open and Close without a write (ZNS: Closed, write pointer at the zone start), then Finish.
    dev.zone_mgmt(0, 16 * BS, A::Open).unwrap();
    dev.zone_mgmt(0, 16 * BS, A::Close).unwrap();
    assert_eq!(dev.zone_mgmt(0, 16 * BS, A::Finish).unwrap(), ZoneMgmtDone { zones: 1, bytes: 0 });
    assert_eq!(dev.counters().pad_units, 0, "no dummy data programmed");
    // Both zones are Full without ever having been programmed: a Reset erases nothing.
    assert_eq!(dev.zone_mgmt_target(0, ZoneTarget::All, A::Reset).unwrap(), ZoneMgmtDone { zones: 2, bytes: 0 });
    assert_eq!(dev.counters().erases, 0, "nothing was programmed");
}
