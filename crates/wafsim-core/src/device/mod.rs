//! The simulated flash device: page-mapped FTL (L2P + P2L), erase units, write frontiers,
//! placement (conventional, streams, FDP) and garbage collection. One concern per file:
//!
//! - `mod.rs` (here): the `Device` state, construction and command entry (`submit`);
//! - `mapping.rs`: logical-to-physical mapping, reads, writes, trims, invalidation;
//! - `placement.rs`: write frontiers, which frontier a write goes to (streams, FDP reclaim unit
//!   handles, FDP events), opening and sealing erase units;
//! - `gc.rs`: garbage collection: victim selection (greedy bucket queue, FIFO, cost-benefit,
//!   d-choices), relocation of live data, erase, background GC;
//! - `pslc.rs`: the pSLC write cache of client drives (SLC erase units, folding);
//! - `media_log.rs`: the NAND operations the FTL causes, for the timing model;
//! - `invariants.rs`: whole-state consistency checks for tests.
//!
//! Layout: erase unit `e` owns physical mapping units `e*Np .. (e+1)*Np`; erase units are split
//! into contiguous runs, one per reclaim group. Validity of a physical unit `p` is derived, not
//! stored: `p` is live iff `l2p[p2l[p]] == p`. That keeps memory at 4 B per logical and 4 B per
//! physical unit and makes trim and overwrite one store each.

mod gc;
mod image;
mod invariants;
mod mapping;
mod media_log;
mod placement;
mod pslc;

use media_log::MediaLayout;
// The error and the media-operation record belong to the block-device interface (error.rs,
// media_op.rs); re-exported at their old paths, which wafsim-host and wafsim-time name.
pub use crate::error::DeviceError;
pub use crate::media_op::MediaOp;
pub use image::IMAGE_KIND;
pub use placement::{FdpEvent, FdpEventKind, Frontier, FrontierKind, EVENT_LOG_LEN};

use crate::config::{ConfigError, DeviceConfig, GcPolicy, Geometry};
use crate::counters::{Counters, FrontierCounters, NsCounters};
use crate::fastdiv::FastDiv;
use crate::io::{Io, Op};
use crate::prefetch::prefetch;
use crate::rng::Rng;
use std::collections::VecDeque;

/// Sentinel for "no mapping" in L2P/P2L and "none" in unit lists.
pub const NIL: u32 = u32::MAX;

const FREE: u8 = 0;
const OPEN: u8 = 1;
const SEALED: u8 = 2;

/// How far ahead the GC scan and batch submission prefetch L2P entries.
const PREFETCH_DISTANCE: usize = 32;

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
    /// The pSLC write cache, if the configuration has one.
    slc: Option<Box<pslc::SlcCache>>,
}
/// What a new device's L2P and P2L hold.
pub(crate) enum Maps {
    /// Every entry unmapped: a fresh drive.
    Empty,
    /// A drive image overwrites them whole, so filling them first would only double the cost
    /// of a large load: zeros never touched (the image's bytes fault them in)...
    ForImage,
    /// ...or the tables of a device of the same configuration that the image replaces, in
    /// memory already (a load in place: no page is faulted in at all).
    Reused {
        /// Its L2P.
        l2p: Vec<u32>,
        /// Its P2L.
        p2l: Vec<u32>,
    },
}

impl Maps {
    /// The L2P and P2L of `l2p` and `p2l` entries.
    fn tables(self, l2p: usize, p2l: usize) -> (Vec<u32>, Vec<u32>) {
        match self {
            Maps::Empty => (crate::hugepage::table(l2p, NIL), crate::hugepage::table(p2l, NIL)),
            Maps::Reused { l2p: a, p2l: b } if a.len() == l2p && b.len() == p2l => (a, b),
            // A device whose earlier load failed gave its maps away (they are empty): new ones.
            Maps::ForImage | Maps::Reused { .. } => (crate::hugepage::untouched(l2p), crate::hugepage::untouched(p2l)),
        }
    }
}

impl Device {
    /// Build an empty (all unmapped, all erase units free) device.
    pub fn new(cfg: DeviceConfig) -> Result<Device, ConfigError> {
        Device::build(cfg, Maps::Empty)
    }

    /// Build a device whose maps are `maps`: empty, or left for a drive image to fill.
    pub(crate) fn build(cfg: DeviceConfig, maps: Maps) -> Result<Device, ConfigError> {
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

        let (frontiers, host_frontier, nruh) = placement::build_frontiers(&cfg.placement, rg_count, cfg.gc_age_classes);

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
        let (l2p, p2l) = maps.tables(geo.namespace_units as usize, phys);
        let mut dev = Device {
            np,
            div: FastDiv::new(np),
            mu_shift: cfg.mapping_unit.trailing_zeros(),
            greedy: cfg.gc_policy == GcPolicy::Greedy,
            fifo: cfg.gc_policy == GcPolicy::Fifo,
            l2p,
            p2l,
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
            slc: cfg.slc_cache.map(|c| Box::new(pslc::SlcCache::new(c, np, cfg.mapping_unit, geo.namespace_units))),
            geo,
            cfg,
        };
        if dev.cfg.fdp_idle_handles_hold_units && dev.is_fdp() {
            // The specification: every handle of every group references a reclaim unit.
            let hosts = dev.host_frontier.clone();
            for f in hosts {
                dev.open_unit(f).map_err(|e| ConfigError::Invalid(format!("fdp: every handle's first reclaim unit: {e}")))?;
            }
        }
        Ok(dev)
    }

    /// The configuration the device was built from.
    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }

    /// The figures derived from the configuration (erase units, Np, reclaim groups, OP).
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Host and media traffic, erases and FDP event counts since the device was built.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Every write frontier, host and GC, in index order (the order of
    /// [`Counters::frontiers`] and of [`Device::unit_owner`]'s answers).
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

    /// Namespaces of the device (the configuration's, in order).
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
        match io.op {
            Op::Flush => return Ok(()),
            Op::Append | Op::Zone(_) => return Err(DeviceError::NotZoned { ns: io.ns }),
            _ => {}
        }
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
            Op::Append | Op::Flush | Op::Zone(_) => unreachable!("handled above"),
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

    /// Free erase units per reclaim group.
    pub fn free_units(&self) -> Vec<u32> {
        self.rgs.iter().map(|r| r.free.len() as u32).collect()
    }

    /// Frontier that wrote erase unit `u` (NIL when free).
    pub fn unit_owner(&self, u: u32) -> u32 {
        self.owner[u as usize]
    }
}

impl crate::blockdev::BlockDevice for Device {
    #[inline]
    fn submit(&mut self, io: &Io) -> Result<crate::blockdev::Completion, DeviceError> {
        Device::submit(self, io)?;
        Ok(crate::blockdev::Completion { offset: io.offset })
    }
    fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        Device::submit_batch(self, ios)
    }
    fn namespace_count(&self) -> u32 {
        Device::namespace_count(self)
    }
    fn namespace_bytes(&self, ns: u32) -> u64 {
        Device::namespace_bytes(self, ns)
    }
    fn block_size(&self) -> u32 {
        self.cfg.mapping_unit
    }
    fn counters(&self) -> &Counters {
        &self.counters
    }
}
