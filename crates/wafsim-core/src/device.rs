//! The simulated device: page-mapped FTL (L2P + P2L), erase units, write frontiers, placement
//! (conventional, streams, FDP) and garbage collection.
//!
//! Layout: erase unit `e` owns physical mapping units `e*Np .. (e+1)*Np`; erase units are split
//! into contiguous runs, one per reclaim group. Validity of a physical unit `p` is derived, not
//! stored: `p` is live iff `l2p[p2l[p]] == p`. That keeps memory at 4 B per logical and 4 B per
//! physical unit and makes trim and overwrite one store each.

use crate::config::{ConfigError, DeviceConfig, GcPolicy, Geometry, Placement, RuhType};
use crate::counters::{Counters, FrontierCounters, NsCounters};
use crate::fastdiv::FastDiv;
use crate::io::{Io, Op, Pid};
use crate::rng::Rng;
use std::collections::VecDeque;

/// Sentinel for "no mapping" in L2P/P2L and "none" in unit lists.
pub const NIL: u32 = u32::MAX;

const FREE: u8 = 0;
const OPEN: u8 = 1;
const SEALED: u8 = 2;

/// How far ahead the GC scan and batch submission prefetch L2P entries.
const PREFETCH_DISTANCE: usize = 32;

/// Errors a command can return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("namespace {0} does not exist")]
    NoSuchNamespace(u32),
    #[error("I/O at byte offset {offset} length {len} exceeds namespace {ns} of {size} bytes")]
    OutOfRange { ns: u32, offset: u64, len: u32, size: u64 },
    #[error("I/O of length 0")]
    ZeroLength,
    #[error("reclaim group {rg}: no free erase unit left (over-provisioning exhausted)")]
    OutOfSpace { rg: u32 },
    #[error("reclaim group {rg}: garbage collection cannot reclaim space (every candidate erase unit is full of valid data)")]
    NoReclaimableSpace { rg: u32 },
    #[error("RUH update: reclaim group {rg} / RUH {ruh} does not exist")]
    NoSuchHandle { rg: u32, ruh: u32 },
}

/// What a write frontier is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontierKind {
    /// Host writes of a reclaim unit handle (FDP), a stream, or the single conventional frontier.
    Host,
    /// GC copies; `shared` when several handles' data meet here.
    Gc { shared: bool },
}

/// One write frontier: an open erase unit being filled.
#[derive(Debug, Clone)]
pub struct Frontier {
    pub kind: FrontierKind,
    pub rg: u32,
    /// RUH (FDP) or stream id this frontier serves; `NIL` for shared GC frontiers.
    pub ruh: u32,
    /// Frontier that receives GC copies of data written here.
    pub gc_dest: u32,
    /// Currently open erase unit, or `NIL`.
    pub unit: u32,
}

/// A logged FDP event (most recent [`EVENT_LOG_LEN`] are kept, counts are kept for all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdpEvent {
    pub kind: FdpEventKind,
    pub rg: u32,
    pub ruh: u32,
    pub ns: u32,
    /// Mapping units concerned (moved units for media reallocated, unwritten units for RU not
    /// fully written).
    pub units: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdpEventKind {
    RuNotFullyWritten,
    InvalidPid,
    MediaReallocated,
}

pub const EVENT_LOG_LEN: usize = 64;

/// A NAND operation the FTL caused, for the timing model (logged only when enabled with
/// [`Device::enable_media_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaOp {
    /// One program unit (page x planes x bits per cell) written for host data, on a die.
    ProgramHost { die: u32 },
    /// One program unit of GC copies.
    ProgramGc { die: u32 },
    /// One page read by GC, holding `units` mapping units of live data to copy.
    ReadGc { die: u32, units: u32 },
    /// Erase of an erase unit (superblock): one block erase on every die of the reclaim group.
    Erase { rg: u32 },
}

/// How physical mapping units lie on dies (timed mode): program units are striped over the dies
/// of a reclaim group in order.
#[derive(Debug, Clone, Copy)]
struct MediaLayout {
    units_per_program: u32,
    units_per_page: u32,
    dies_per_rg: u32,
}

#[derive(Debug, Clone)]
struct ReclaimGroup {
    free: VecDeque<u32>,
    /// Sealed units in sealing order (FIFO policy only).
    fifo: VecDeque<u32>,
    /// Lowest possibly non-empty greedy bucket.
    bq_min: u32,
    sealed: u32,
    first_eu: u32,
}

/// The simulated device.
pub struct Device {
    cfg: DeviceConfig,
    geo: Geometry,
    np: u32,
    div: FastDiv,
    mu_shift: u32,
    greedy: bool,
    fifo: bool,

    l2p: Vec<u32>,
    p2l: Vec<u32>,

    // Per erase unit, struct-of-arrays.
    valid: Vec<u32>,
    wp: Vec<u32>,
    state: Vec<u8>,
    owner: Vec<u32>,
    unit_rg: Vec<u32>,
    sealed_at: Vec<u64>,
    erase_count: Vec<u32>,
    bq_next: Vec<u32>,
    bq_prev: Vec<u32>,
    /// Greedy bucket heads, index `rg * (Np + 1) + valid`.
    bq_heads: Vec<u32>,

    rgs: Vec<ReclaimGroup>,
    frontiers: Vec<Frontier>,
    /// Host frontier of (rg, ruh) for FDP or (0, stream) for streams, index `rg * nruh + ruh`.
    host_frontier: Vec<u32>,
    nruh: u32,

    ns_base: Vec<u32>,
    ns_bytes: Vec<u64>,
    ns_handles: Vec<Vec<u16>>,
    /// Global LBA where each namespace after the first starts, for attributing GC copies.
    ns_starts: Vec<u32>,

    counters: Counters,
    events: VecDeque<FdpEvent>,
    rng: Rng,
    /// Media write clock (mapping units programmed), for FIFO/cost-benefit ages.
    clock: u64,
    next_rg: u32,
    media: Option<MediaLayout>,
    media_ops: Vec<MediaOp>,
}

impl Device {
    /// Build an empty (all unmapped, all erase units free) device.
    pub fn new(cfg: DeviceConfig) -> Result<Device, ConfigError> {
        let geo = cfg.geometry()?;
        let np = geo.units_per_eu;
        let e = geo.erase_units as usize;
        let phys = geo.physical_units() as usize;
        let rg_count = geo.reclaim_groups;

        let mut rgs = Vec::with_capacity(rg_count as usize);
        let mut unit_rg = vec![0u32; e];
        for r in 0..rg_count {
            let first = r * geo.eus_per_rg;
            let free: VecDeque<u32> = (first..first + geo.eus_per_rg).collect();
            for u in first..first + geo.eus_per_rg {
                unit_rg[u as usize] = r;
            }
            rgs.push(ReclaimGroup { free, fifo: VecDeque::new(), bq_min: np + 1, sealed: 0, first_eu: first });
        }

        // Frontiers and where GC copies of each go.
        let mut frontiers = Vec::new();
        let mut host_frontier = Vec::new();
        let nruh;
        match &cfg.placement {
            Placement::Conventional => {
                nruh = 1;
                frontiers.push(Frontier { kind: FrontierKind::Host, rg: 0, ruh: 0, gc_dest: 1, unit: NIL });
                frontiers.push(Frontier { kind: FrontierKind::Gc { shared: false }, rg: 0, ruh: 0, gc_dest: 1, unit: NIL });
                host_frontier.push(0);
            }
            Placement::Streams { streams } => {
                nruh = *streams;
                let gc = *streams;
                for s in 0..*streams {
                    frontiers.push(Frontier { kind: FrontierKind::Host, rg: 0, ruh: s, gc_dest: gc, unit: NIL });
                    host_frontier.push(s);
                }
                frontiers.push(Frontier { kind: FrontierKind::Gc { shared: true }, rg: 0, ruh: NIL, gc_dest: gc, unit: NIL });
            }
            Placement::Fdp { ruh_types, .. } => {
                nruh = ruh_types.len() as u32;
                for r in 0..rg_count {
                    let any_ii = ruh_types.contains(&RuhType::InitiallyIsolated);
                    let shared_gc = if any_ii {
                        let idx = frontiers.len() as u32;
                        frontiers.push(Frontier { kind: FrontierKind::Gc { shared: true }, rg: r, ruh: NIL, gc_dest: idx, unit: NIL });
                        idx
                    } else {
                        NIL
                    };
                    for (h, t) in ruh_types.iter().enumerate() {
                        let host = frontiers.len() as u32;
                        host_frontier.push(host);
                        match t {
                            RuhType::InitiallyIsolated => {
                                frontiers.push(Frontier { kind: FrontierKind::Host, rg: r, ruh: h as u32, gc_dest: shared_gc, unit: NIL });
                            }
                            RuhType::PersistentlyIsolated => {
                                let own_gc = host + 1;
                                frontiers.push(Frontier { kind: FrontierKind::Host, rg: r, ruh: h as u32, gc_dest: own_gc, unit: NIL });
                                frontiers.push(Frontier { kind: FrontierKind::Gc { shared: false }, rg: r, ruh: h as u32, gc_dest: own_gc, unit: NIL });
                            }
                        }
                    }
                }
            }
        }

        let mut ns_base = Vec::new();
        let mut ns_bytes = Vec::new();
        let mut ns_handles = Vec::new();
        let mut base = 0u32;
        for ns in &cfg.namespaces {
            let units = (ns.size_bytes / cfg.mapping_unit as u64) as u32;
            ns_base.push(base);
            ns_bytes.push(units as u64 * cfg.mapping_unit as u64);
            ns_handles.push(ns.placement_handles.clone());
            base += units;
        }
        let ns_starts = ns_base[1..].to_vec();
        let counters = Counters {
            namespaces: vec![NsCounters::default(); cfg.namespaces.len()],
            frontiers: vec![FrontierCounters::default(); frontiers.len()],
            ..Default::default()
        };
        Ok(Device {
            np,
            div: FastDiv::new(np),
            mu_shift: cfg.mapping_unit.trailing_zeros(),
            greedy: cfg.gc_policy == GcPolicy::Greedy,
            fifo: cfg.gc_policy == GcPolicy::Fifo,
            l2p: vec![NIL; geo.namespace_units as usize],
            p2l: vec![NIL; phys],
            valid: vec![0; e],
            wp: vec![0; e],
            state: vec![FREE; e],
            owner: vec![NIL; e],
            unit_rg,
            sealed_at: vec![0; e],
            erase_count: vec![0; e],
            bq_next: vec![NIL; e],
            bq_prev: vec![NIL; e],
            bq_heads: if cfg.gc_policy == GcPolicy::Greedy { vec![NIL; rg_count as usize * (np as usize + 1)] } else { Vec::new() },
            rgs,
            frontiers,
            host_frontier,
            nruh,
            ns_base,
            ns_bytes,
            ns_handles,
            ns_starts,
            counters,
            events: VecDeque::new(),
            rng: Rng::derive(cfg.seed, 0x6763),
            clock: 0,
            next_rg: 0,
            media: None,
            media_ops: Vec::new(),
            geo,
            cfg,
        })
    }

    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
    pub fn frontiers(&self) -> &[Frontier] {
        &self.frontiers
    }
    /// Most recent FDP events, oldest first.
    pub fn fdp_events(&self) -> impl Iterator<Item = &FdpEvent> {
        self.events.iter()
    }
    /// Namespace size in bytes (whole mapping units).
    pub fn namespace_bytes(&self, ns: u32) -> u64 {
        self.ns_bytes[ns as usize]
    }
    pub fn namespace_count(&self) -> u32 {
        self.ns_bytes.len() as u32
    }
    /// Erase count of every erase unit.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Execute one command.
    #[inline]
    pub fn submit(&mut self, io: &Io) -> Result<(), DeviceError> {
        let (first, count) = self.unit_range(io)?;
        match io.op {
            Op::Write => self.write(io, first, count),
            Op::Read => {
                self.read(io, first, count);
                Ok(())
            }
            Op::Trim => {
                self.trim(io, first, count);
                Ok(())
            }
        }
    }

    /// Hint that `io` will be submitted soon: prefetch its first map entry.
    #[inline]
    pub fn prefetch_io(&self, io: &Io) {
        if let Some(&base) = self.ns_base.get(io.ns as usize) {
            prefetch(&self.l2p, base as usize + (io.offset >> self.mu_shift) as usize);
        }
    }

    /// Execute a batch of commands, prefetching the map entries of commands further ahead so
    /// random writes overlap their cache misses.
    pub fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        for i in 0..ios.len() {
            if let Some(ahead) = ios.get(i + PREFETCH_DISTANCE) {
                self.prefetch_io(ahead);
            }
            self.submit(&ios[i])?;
        }
        Ok(())
    }

    /// Check bounds; return the first global mapping unit and how many units the I/O touches.
    #[inline]
    fn unit_range(&self, io: &Io) -> Result<(u32, u32), DeviceError> {
        let ns = io.ns as usize;
        let Some(&size) = self.ns_bytes.get(ns) else {
            return Err(DeviceError::NoSuchNamespace(io.ns));
        };
        if io.len == 0 {
            return Err(DeviceError::ZeroLength);
        }
        let end = io.offset + io.len as u64;
        if end > size {
            return Err(DeviceError::OutOfRange { ns: io.ns, offset: io.offset, len: io.len, size });
        }
        let first = (io.offset >> self.mu_shift) as u32;
        let last = ((end - 1) >> self.mu_shift) as u32;
        Ok((self.ns_base[ns] + first, last - first + 1))
    }

    fn write(&mut self, io: &Io, first: u32, count: u32) -> Result<(), DeviceError> {
        let f = self.resolve_frontier(io.ns, io.pid);
        let c = &mut self.counters;
        c.host_write_bytes += io.len as u64;
        c.host_units += count as u64;
        let n = &mut c.namespaces[io.ns as usize];
        n.host_write_bytes += io.len as u64;
        n.host_units += count as u64;
        c.frontiers[f as usize].host_units += count as u64;
        for lba in first..first + count {
            let ppa = self.next_slot(f)?;
            let old = self.l2p[lba as usize];
            if old != NIL {
                self.invalidate(old);
            }
            self.l2p[lba as usize] = ppa;
            self.p2l[ppa as usize] = lba;
        }
        Ok(())
    }

    fn read(&mut self, io: &Io, first: u32, count: u32) {
        let c = &mut self.counters;
        c.host_read_bytes += io.len as u64;
        c.read_units += count as u64;
        c.namespaces[io.ns as usize].host_read_bytes += io.len as u64;
        let unmapped = self.l2p[first as usize..(first + count) as usize].iter().filter(|&&p| p == NIL).count();
        self.counters.unmapped_read_units += unmapped as u64;
    }

    fn trim(&mut self, io: &Io, first: u32, count: u32) {
        self.counters.trim_bytes += io.len as u64;
        self.counters.namespaces[io.ns as usize].trim_bytes += io.len as u64;
        // Only mapping units the range covers completely are deallocated; a partial unit keeps
        // its data (deallocation is advisory in NVMe, and a partial unit cannot be dropped).
        let mu = 1u64 << self.mu_shift;
        let mut lo = first;
        let mut hi = first + count;
        if io.offset % mu != 0 {
            lo += 1;
        }
        if (io.offset + io.len as u64) % mu != 0 {
            hi -= 1;
        }
        for lba in lo..hi.max(lo) {
            let old = self.l2p[lba as usize];
            if old != NIL {
                self.invalidate(old);
                self.l2p[lba as usize] = NIL;
                self.counters.trimmed_units += 1;
            }
        }
    }

    /// Frontier for a host write, per placement mode. FDP: a write without a directive uses
    /// placement handle 0 of its namespace; an invalid PID is replaced by placement handle 0 in
    /// reclaim group 0 and logged (NVMe TP4146).
    #[inline]
    fn resolve_frontier(&mut self, ns: u32, pid: Pid) -> u32 {
        match self.cfg.placement {
            Placement::Conventional => 0,
            Placement::Streams { streams } => {
                if pid.is_none() || pid.handle() as u32 >= streams || pid.rg() != 0 {
                    self.host_frontier[0]
                } else {
                    self.host_frontier[pid.handle() as usize]
                }
            }
            Placement::Fdp { reclaim_groups, .. } => {
                let handles = &self.ns_handles[ns as usize];
                let (rg, ph) = if pid.is_none() {
                    // No directive: placement handle 0; the controller spreads such writes over
                    // reclaim groups round-robin.
                    let rg = self.next_rg;
                    self.next_rg = (self.next_rg + 1) % reclaim_groups;
                    (rg, 0usize)
                } else if pid.rg() as u32 >= reclaim_groups || pid.handle() as usize >= handles.len() {
                    self.counters.fdp_events.invalid_pid += 1;
                    self.log_event(FdpEvent { kind: FdpEventKind::InvalidPid, rg: pid.rg() as u32, ruh: pid.handle() as u32, ns, units: 0 });
                    (0, 0)
                } else {
                    (pid.rg() as u32, pid.handle() as usize)
                };
                let ruh = self.ns_handles[ns as usize][ph] as u32;
                self.host_frontier[(rg * self.nruh + ruh) as usize]
            }
        }
    }

    fn log_event(&mut self, e: FdpEvent) {
        if self.events.len() == EVENT_LOG_LEN {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// Next physical unit of frontier `f`, opening a fresh erase unit when needed.
    #[inline(always)]
    fn next_slot(&mut self, f: u32) -> Result<u32, DeviceError> {
        let u = self.frontiers[f as usize].unit;
        if u != NIL {
            let w = self.wp[u as usize];
            if w < self.np {
                self.wp[u as usize] = w + 1;
                self.valid[u as usize] += 1;
                self.clock += 1;
                if self.media.is_some() {
                    self.log_programs(f, u, w, w + 1);
                }
                return Ok(u * self.np + w);
            }
        }
        self.open_unit(f)?;
        let u = self.frontiers[f as usize].unit;
        self.wp[u as usize] = 1;
        self.valid[u as usize] = 1;
        self.clock += 1;
        if self.media.is_some() {
            self.log_programs(f, u, 0, 1);
        }
        Ok(u * self.np)
    }

    /// Log a program for every program unit of erase unit `u` completed when its write pointer
    /// moved from `from` to `to`.
    #[cold]
    fn log_programs(&mut self, f: u32, u: u32, from: u32, to: u32) {
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
        self.unit_rg[u as usize] * m.dies_per_rg + (off / m.units_per_program) % m.dies_per_rg
    }

    /// Die holding physical mapping unit `ppa` and its position (mapping units) inside its
    /// program unit (timed mode; (0, 0) if the media log is off).
    pub fn media_pos(&self, ppa: u32) -> (u32, u32) {
        let Some(m) = self.media else { return (0, 0) };
        let u = self.div.div(ppa);
        let off = ppa - u * self.np;
        (self.unit_rg[u as usize] * m.dies_per_rg + (off / m.units_per_program) % m.dies_per_rg, off % m.units_per_program)
    }

    /// Physical mapping unit holding byte `offset` of namespace `ns`, or None if unmapped or out
    /// of range.
    pub fn lookup(&self, ns: u32, offset: u64) -> Option<u32> {
        let base = *self.ns_base.get(ns as usize)?;
        if offset >= *self.ns_bytes.get(ns as usize)? {
            return None;
        }
        let p = self.l2p[(base as u64 + (offset >> self.mu_shift)) as usize];
        (p != NIL).then_some(p)
    }

    /// Seal frontier `f`'s unit (if any) and open a free one. Host frontiers trigger GC when the
    /// free pool falls below `gc_free_min`; GC frontiers never do (no recursion).
    #[cold]
    #[inline(never)]
    fn open_unit(&mut self, f: u32) -> Result<(), DeviceError> {
        let old = self.frontiers[f as usize].unit;
        if old != NIL {
            self.seal(old);
        }
        let rg = self.frontiers[f as usize].rg;
        let Some(u) = self.rgs[rg as usize].free.pop_front() else {
            return Err(DeviceError::OutOfSpace { rg });
        };
        self.state[u as usize] = OPEN;
        self.owner[u as usize] = f;
        self.wp[u as usize] = 0;
        self.valid[u as usize] = 0;
        self.frontiers[f as usize].unit = u;
        if self.frontiers[f as usize].kind == FrontierKind::Host
            && (self.rgs[rg as usize].free.len() as u32) < self.cfg.gc_free_min
        {
            self.collect(rg)?;
        }
        Ok(())
    }

    fn seal(&mut self, u: u32) {
        self.state[u as usize] = SEALED;
        self.sealed_at[u as usize] = self.clock;
        let rg = self.unit_rg[u as usize];
        self.rgs[rg as usize].sealed += 1;
        if self.greedy {
            self.bq_link(u, self.valid[u as usize]);
        } else if self.fifo {
            self.rgs[rg as usize].fifo.push_back(u);
        }
    }

    /// Physical unit `p` no longer holds live data.
    #[inline(always)]
    fn invalidate(&mut self, p: u32) {
        let u = self.div.div(p);
        let v = self.valid[u as usize];
        self.valid[u as usize] = v - 1;
        if self.greedy && self.state[u as usize] == SEALED {
            self.bq_unlink(u, v);
            self.bq_link(u, v - 1);
        }
    }

    #[inline(always)]
    fn bq_index(&self, u: u32, v: u32) -> usize {
        self.unit_rg[u as usize] as usize * (self.np as usize + 1) + v as usize
    }

    #[inline(always)]
    fn bq_link(&mut self, u: u32, v: u32) {
        let i = self.bq_index(u, v);
        let h = self.bq_heads[i];
        self.bq_next[u as usize] = h;
        self.bq_prev[u as usize] = NIL;
        if h != NIL {
            self.bq_prev[h as usize] = u;
        }
        self.bq_heads[i] = u;
        let rg = &mut self.rgs[self.unit_rg[u as usize] as usize];
        if v < rg.bq_min {
            rg.bq_min = v;
        }
    }

    #[inline(always)]
    fn bq_unlink(&mut self, u: u32, v: u32) {
        let p = self.bq_prev[u as usize];
        let n = self.bq_next[u as usize];
        if p != NIL {
            self.bq_next[p as usize] = n;
        } else {
            let i = self.bq_index(u, v);
            self.bq_heads[i] = n;
        }
        if n != NIL {
            self.bq_prev[n as usize] = p;
        }
    }

    /// Garbage-collect reclaim group `rg` until its free pool holds `gc_free_target` units.
    fn collect(&mut self, rg: u32) -> Result<(), DeviceError> {
        let target = self.cfg.gc_free_target as usize;
        let mut victims_without_gain = 0u32;
        while self.rgs[rg as usize].free.len() < target {
            let before = self.rgs[rg as usize].free.len();
            let v = self.pick_victim(rg)?;
            self.relocate(v)?;
            self.erase(v);
            if self.rgs[rg as usize].free.len() <= before {
                // A fully valid victim frees nothing net; FIFO may need to pass several, but a
                // whole reclaim group's worth means there is nothing to reclaim.
                victims_without_gain += 1;
                if victims_without_gain > self.geo.eus_per_rg {
                    return Err(DeviceError::NoReclaimableSpace { rg });
                }
            } else {
                victims_without_gain = 0;
            }
        }
        Ok(())
    }

    /// Choose and detach a victim among the sealed units of `rg`.
    fn pick_victim(&mut self, rg: u32) -> Result<u32, DeviceError> {
        if self.rgs[rg as usize].sealed == 0 {
            return Err(DeviceError::NoReclaimableSpace { rg });
        }
        let victim = match self.cfg.gc_policy {
            GcPolicy::Greedy => {
                let base = rg as usize * (self.np as usize + 1);
                let mut b = self.rgs[rg as usize].bq_min;
                while self.bq_heads[base + b as usize] == NIL {
                    b += 1;
                }
                self.rgs[rg as usize].bq_min = b;
                let u = self.bq_heads[base + b as usize];
                self.bq_unlink(u, b);
                u
            }
            GcPolicy::Fifo => self.rgs[rg as usize].fifo.pop_front().expect("sealed count says non-empty"),
            GcPolicy::CostBenefit => {
                let first = self.rgs[rg as usize].first_eu;
                let mut best = NIL;
                let mut best_score = f64::NEG_INFINITY;
                for u in first..first + self.geo.eus_per_rg {
                    if self.state[u as usize] != SEALED {
                        continue;
                    }
                    let util = self.valid[u as usize] as f64 / self.np as f64;
                    let age = (self.clock - self.sealed_at[u as usize]) as f64 + 1.0;
                    let score = (1.0 - util) * age / (1.0 + util);
                    if score > best_score {
                        best_score = score;
                        best = u;
                    }
                }
                best
            }
            GcPolicy::DChoices(d) => {
                let first = self.rgs[rg as usize].first_eu;
                let n = self.geo.eus_per_rg as u64;
                let mut best = NIL;
                let mut taken = 0;
                // Rejection-sample sealed units; sealed units are the vast majority, so this ends fast.
                while taken < d {
                    let u = first + self.rng.below(n) as u32;
                    if self.state[u as usize] != SEALED {
                        continue;
                    }
                    taken += 1;
                    if best == NIL || self.valid[u as usize] < self.valid[best as usize] {
                        best = u;
                    }
                }
                best
            }
        };
        self.state[victim as usize] = FREE;
        self.rgs[rg as usize].sealed -= 1;
        Ok(victim)
    }

    /// Copy the live data of erase unit `v` to the GC frontier its writer designates.
    fn relocate(&mut self, v: u32) -> Result<(), DeviceError> {
        let live = self.valid[v as usize];
        let owner = self.owner[v as usize];
        let dest = self.frontiers[owner as usize].gc_dest;
        let base = (v * self.np) as usize;
        let end = base + self.wp[v as usize] as usize;
        let mut moved = 0u32;
        let single_ns = self.ns_starts.is_empty();
        // Copy into the destination unit with a local cursor; only a full unit goes back
        // through next_slot (which opens the next one).
        let mut cur = self.frontiers[dest as usize].unit;
        let mut room = if cur == NIL { 0 } else { self.np - self.wp[cur as usize] };
        let mut at = if cur == NIL { 0 } else { cur * self.np + self.wp[cur as usize] };
        let mut p = base;
        let mut last_page = u32::MAX;
        let mut last_read = usize::MAX;
        while p < end && moved < live {
            if p + PREFETCH_DISTANCE < end {
                let ahead = self.p2l[p + PREFETCH_DISTANCE];
                if ahead != NIL {
                    prefetch(&self.l2p, ahead as usize);
                }
            }
            let lba = self.p2l[p];
            if lba != NIL && self.l2p[lba as usize] == p as u32 {
                if let Some(m) = self.media {
                    let page = (p - base) as u32 / m.units_per_page;
                    if page != last_page {
                        last_page = page;
                        let die = self.die_of(p as u32);
                        last_read = self.media_ops.len();
                        self.media_ops.push(MediaOp::ReadGc { die, units: 1 });
                    } else if let Some(MediaOp::ReadGc { units, .. }) = self.media_ops.get_mut(last_read) {
                        *units += 1;
                    }
                }
                let new_p = if room > 0 {
                    room -= 1;
                    at += 1;
                    at - 1
                } else {
                    if cur != NIL {
                        self.flush_cursor(dest, cur, at);
                    }
                    let q = self.next_slot(dest)?;
                    cur = self.frontiers[dest as usize].unit;
                    room = self.np - self.wp[cur as usize];
                    at = q + 1;
                    q
                };
                self.l2p[lba as usize] = new_p;
                self.p2l[new_p as usize] = lba;
                moved += 1;
                if !single_ns {
                    let ns = self.ns_starts.partition_point(|&s| s <= lba);
                    self.counters.namespaces[ns].gc_units += 1;
                }
            }
            p += 1;
        }
        if cur != NIL {
            self.flush_cursor(dest, cur, at);
        }
        debug_assert_eq!(moved, live, "valid count of erase unit {v} disagrees with its live P2L entries");
        if single_ns {
            self.counters.namespaces[0].gc_units += moved as u64;
        }
        self.counters.gc_units += moved as u64;
        self.counters.frontiers[dest as usize].gc_units += moved as u64;
        if moved > 0
            && self.is_fdp()
            && self.frontiers[dest as usize].kind == (FrontierKind::Gc { shared: true })
            && self.frontiers[owner as usize].kind == FrontierKind::Host
        {
            let fr = &self.frontiers[owner as usize];
            let (rg, ruh) = (fr.rg, fr.ruh);
            self.counters.fdp_events.media_reallocated += 1;
            self.counters.fdp_events.media_reallocated_units += moved as u64;
            self.log_event(FdpEvent { kind: FdpEventKind::MediaReallocated, rg, ruh, ns: NIL, units: moved as u64 });
        }
        self.valid[v as usize] = 0;
        Ok(())
    }

    /// Write back a local copy cursor: unit `u` is written up to physical unit `at`.
    #[inline(always)]
    fn flush_cursor(&mut self, f: u32, u: u32, at: u32) {
        let w = at - u * self.np;
        let old = self.wp[u as usize];
        let added = w - old;
        if self.media.is_some() && added > 0 {
            self.log_programs(f, u, old, w);
        }
        self.wp[u as usize] = w;
        self.valid[u as usize] += added;
        self.clock += added as u64;
    }

    fn erase(&mut self, v: u32) {
        let owner = self.owner[v as usize];
        self.counters.frontiers[owner as usize].erases += 1;
        self.counters.erases += 1;
        self.erase_count[v as usize] += 1;
        self.wp[v as usize] = 0;
        self.valid[v as usize] = 0;
        self.owner[v as usize] = NIL;
        self.state[v as usize] = FREE;
        let rg = self.unit_rg[v as usize];
        self.rgs[rg as usize].free.push_back(v);
        if self.media.is_some() {
            self.media_ops.push(MediaOp::Erase { rg });
        }
    }

    fn is_fdp(&self) -> bool {
        matches!(self.cfg.placement, Placement::Fdp { .. })
    }

    /// FDP Reclaim Unit Handle Update: move handle `ruh` of reclaim group `rg` to a fresh
    /// reclaim unit now. A partly written unit is sealed as is and a "RU not fully written"
    /// event is logged.
    pub fn ruh_update(&mut self, rg: u32, ruh: u32) -> Result<(), DeviceError> {
        let Placement::Fdp { reclaim_groups, .. } = self.cfg.placement else {
            return Err(DeviceError::NoSuchHandle { rg, ruh });
        };
        if rg >= reclaim_groups || ruh >= self.nruh {
            return Err(DeviceError::NoSuchHandle { rg, ruh });
        }
        let f = self.host_frontier[(rg * self.nruh + ruh) as usize];
        let u = self.frontiers[f as usize].unit;
        if u == NIL || self.wp[u as usize] == 0 {
            return Ok(());
        }
        let unwritten = self.np - self.wp[u as usize];
        if unwritten > 0 {
            self.counters.fdp_events.ru_not_fully_written += 1;
            self.log_event(FdpEvent { kind: FdpEventKind::RuNotFullyWritten, rg, ruh, ns: NIL, units: unwritten as u64 });
        }
        self.open_unit(f)
    }

    /// Background GC (the timing model calls it when the host is idle): in every reclaim group
    /// whose free pool is below `target_free`, collect victims that hold invalid data, at most
    /// `max_victims` in all. Returns the number collected.
    pub fn background_gc(&mut self, target_free: u32, max_victims: u32) -> Result<u32, DeviceError> {
        let mut done = 0;
        for rg in 0..self.rgs.len() as u32 {
            while done < max_victims && (self.rgs[rg as usize].free.len() as u32) < target_free && self.rgs[rg as usize].sealed > 0 {
                // Only worth it if the best victim frees something: peek by policy is costly for
                // non-greedy policies, so take the victim and accept a full one as the end.
                let v = self.pick_victim(rg)?;
                let full = self.valid[v as usize] >= self.np;
                self.relocate(v)?;
                self.erase(v);
                self.counters.background_victims += 1;
                done += 1;
                if full {
                    break;
                }
            }
        }
        Ok(done)
    }

    /// Minimum, mean and maximum erase count over all erase units.
    pub fn erase_count_stats(&self) -> (u32, f64, u32) {
        let min = self.erase_count.iter().copied().min().unwrap_or(0);
        let max = self.erase_count.iter().copied().max().unwrap_or(0);
        let mean = self.erase_count.iter().map(|&c| c as f64).sum::<f64>() / self.erase_count.len().max(1) as f64;
        (min, mean, max)
    }

    /// Free erase units per reclaim group.
    pub fn free_units(&self) -> Vec<u32> {
        self.rgs.iter().map(|r| r.free.len() as u32).collect()
    }

    /// Global LBAs whose live data sits in erase unit `u` (for inspection and tests).
    pub fn live_lbas(&self, u: u32) -> Vec<u32> {
        let base = u * self.np;
        (base..base + self.wp[u as usize])
            .filter(|&p| {
                let l = self.p2l[p as usize];
                l != NIL && self.l2p[l as usize] == p
            })
            .map(|p| self.p2l[p as usize])
            .collect()
    }

    /// Namespace owning global LBA `lba`.
    pub fn namespace_of(&self, lba: u32) -> u32 {
        self.ns_starts.partition_point(|&s| s <= lba) as u32
    }

    /// Global LBA of mapping unit `unit` of namespace `ns`.
    pub fn global_lba(&self, ns: u32, unit: u32) -> u32 {
        self.ns_base[ns as usize] + unit
    }

    /// Frontier that wrote erase unit `u` (NIL when free).
    pub fn unit_owner(&self, u: u32) -> u32 {
        self.owner[u as usize]
    }

    /// Check every internal invariant; returns a description of the first violation.
    /// O(capacity): for tests and debugging, not for the hot path.
    pub fn check_invariants(&self) -> Result<(), String> {
        let np = self.np;
        let mut live = vec![0u32; self.valid.len()];
        for (lba, &p) in self.l2p.iter().enumerate() {
            if p == NIL {
                continue;
            }
            if self.p2l[p as usize] != lba as u32 {
                return Err(format!("L2P[{lba}] = {p} but P2L[{p}] = {}", self.p2l[p as usize]));
            }
            let u = p / np;
            if p % np >= self.wp[u as usize] {
                return Err(format!("LBA {lba} maps beyond the write pointer of erase unit {u}"));
            }
            live[u as usize] += 1;
        }
        for u in 0..self.valid.len() {
            if live[u] != self.valid[u] {
                return Err(format!("erase unit {u}: valid count {} but {} live P2L entries", self.valid[u], live[u]));
            }
            if self.state[u] == FREE && live[u] != 0 {
                return Err(format!("free erase unit {u} holds {} live units", live[u]));
            }
        }
        let c = &self.counters;
        let fr_host: u64 = c.frontiers.iter().map(|f| f.host_units).sum();
        let fr_gc: u64 = c.frontiers.iter().map(|f| f.gc_units).sum();
        let ns_host: u64 = c.namespaces.iter().map(|n| n.host_units).sum();
        let ns_gc: u64 = c.namespaces.iter().map(|n| n.gc_units).sum();
        if fr_host != c.host_units || ns_host != c.host_units || fr_gc != c.gc_units || ns_gc != c.gc_units {
            return Err("per-frontier or per-namespace counters do not add up to the device totals".into());
        }
        if self.clock != c.host_units + c.gc_units {
            return Err(format!(
                "media writes {} != host {} + GC {}",
                self.clock, c.host_units, c.gc_units
            ));
        }
        let erases: u64 = self.erase_count.iter().map(|&e| e as u64).sum();
        if erases != c.erases {
            return Err("erase counts do not add up".into());
        }
        if self.greedy {
            let mut in_buckets = 0u32;
            for (i, &h) in self.bq_heads.iter().enumerate() {
                let mut u = h;
                while u != NIL {
                    let v = (i % (np as usize + 1)) as u32;
                    if self.valid[u as usize] != v || self.state[u as usize] != SEALED {
                        return Err(format!("erase unit {u} in greedy bucket {v} has valid {}", self.valid[u as usize]));
                    }
                    in_buckets += 1;
                    u = self.bq_next[u as usize];
                }
            }
            let sealed: u32 = self.rgs.iter().map(|r| r.sealed).sum();
            if in_buckets != sealed {
                return Err(format!("{in_buckets} units in greedy buckets but {sealed} sealed"));
            }
        }
        Ok(())
    }
}

#[inline(always)]
fn prefetch(v: &[u32], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < v.len() {
        // SAFETY: the pointer is in bounds; prefetch has no architectural effect.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(v.as_ptr().add(i) as *const i8);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}
