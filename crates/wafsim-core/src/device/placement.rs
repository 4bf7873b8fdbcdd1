//! Write frontiers and placement: which open erase unit a host write goes to (the single
//! conventional frontier, a stream, or an FDP reclaim unit handle per reclaim group), FDP
//! events, and opening/sealing erase units (opening one can start foreground GC).

use super::{Device, NIL, OPEN, SEALED};
use crate::error::DeviceError;
use crate::config::{Placement, RuhType};
use crate::io::Pid;

/// What a write frontier is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontierKind {
    /// Host writes of a reclaim unit handle (FDP), a stream, or the single conventional frontier.
    Host,
    /// GC copies; `shared` when several handles' data meet here.
    Gc {
        /// Whether several handles' (or streams') data meet here.
        shared: bool,
    },
}

/// One write frontier: an open erase unit being filled.
#[derive(Debug, Clone)]
pub struct Frontier {
    /// Host data or GC copies.
    pub kind: FrontierKind,
    /// Reclaim group whose erase units the frontier fills.
    pub rg: u32,
    /// RUH (FDP) or stream id this frontier serves; `NIL` for shared GC frontiers.
    pub ruh: u32,
    /// Frontier that receives GC copies of data written here.
    pub gc_dest: u32,
    /// Currently open erase unit, or `NIL`.
    pub unit: u32,
    /// 0 for a host frontier; for a GC frontier, its age class 1..=`gc_age_classes`: how many
    /// times GC has moved the data it receives since the host wrote it (the last class: at
    /// least that many).
    pub age_class: u32,
}

/// A logged FDP event (most recent [`EVENT_LOG_LEN`] are kept, counts are kept for all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdpEvent {
    /// What happened.
    pub kind: FdpEventKind,
    /// Reclaim group concerned (for an invalid PID, the one the PID named).
    pub rg: u32,
    /// Reclaim unit handle concerned (for an invalid PID, the placement handle it named).
    pub ruh: u32,
    /// Namespace of the write (invalid PID), `NIL` for events not tied to one write.
    pub ns: u32,
    /// Mapping units concerned (moved units for media reallocated, unwritten units for RU not
    /// fully written).
    pub units: u64,
}

/// The FDP event types the device logs (NVMe TP4146; counted in
/// [`crate::counters::FdpEventCounts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdpEventKind {
    /// A Reclaim Unit Handle Update moved a handle off a reclaim unit it had not filled.
    RuNotFullyWritten,
    /// A write named a reclaim group or placement handle that does not exist; it went to
    /// placement handle 0 of reclaim group 0 instead.
    InvalidPid,
    /// GC moved an initially isolated handle's data into a shared GC reclaim unit.
    MediaReallocated,
}

/// FDP events the device keeps ([`crate::Device::fdp_events`]); older ones are dropped, as an
/// FDP events log page holds a bounded number.
pub const EVENT_LOG_LEN: usize = 64;

/// The frontiers of a placement mode and where GC copies of each go: `(frontiers, host
/// frontier per (rg, ruh) or stream, handles per reclaim group)`. Conventional: one host
/// frontier and one GC chain. Streams: one host frontier per stream and one shared GC chain.
/// FDP, per reclaim group: one host frontier per RUH; initially isolated RUHs share one GC
/// chain, persistently isolated ones get their own (so GC never mixes their data with
/// others'). A GC chain is `age_classes` GC frontiers: a host frontier's copies go to the
/// chain's first, each class's copies to the next, the last class's to itself.
pub(super) fn build_frontiers(placement: &Placement, rg_count: u32, age_classes: u32) -> (Vec<Frontier>, Vec<u32>, u32) {
    debug_assert!(age_classes >= 1);
    let mut frontiers = Vec::new();
    let mut host_frontier = Vec::new();
    // Appends a GC chain for `ruh` of `rg`; returns the index of its first class.
    let chain = |frontiers: &mut Vec<Frontier>, rg: u32, ruh: u32, shared: bool| -> u32 {
        let first = frontiers.len() as u32;
        for c in 0..age_classes {
            let next = first + (c + 1).min(age_classes - 1);
            frontiers.push(Frontier { kind: FrontierKind::Gc { shared }, rg, ruh, gc_dest: next, unit: NIL, age_class: c + 1 });
        }
        first
    };
    let host = |rg: u32, ruh: u32, gc_dest: u32| Frontier { kind: FrontierKind::Host, rg, ruh, gc_dest, unit: NIL, age_class: 0 };
    let nruh;
    match placement {
        Placement::Conventional => {
            nruh = 1;
            frontiers.push(host(0, 0, 1));
            chain(&mut frontiers, 0, 0, false);
            host_frontier.push(0);
        }
        Placement::Streams { streams } => {
            nruh = *streams;
            let gc = *streams;
            for s in 0..*streams {
                frontiers.push(host(0, s, gc));
                host_frontier.push(s);
            }
            chain(&mut frontiers, 0, NIL, true);
        }
        Placement::Fdp { ruh_types, .. } => {
            nruh = ruh_types.len() as u32;
            for r in 0..rg_count {
                let any_ii = ruh_types.contains(&RuhType::InitiallyIsolated);
                let shared_gc = if any_ii { chain(&mut frontiers, r, NIL, true) } else { NIL };
                for (h, t) in ruh_types.iter().enumerate() {
                    let idx = frontiers.len() as u32;
                    host_frontier.push(idx);
                    match t {
                        RuhType::InitiallyIsolated => frontiers.push(host(r, h as u32, shared_gc)),
                        RuhType::PersistentlyIsolated => {
                            frontiers.push(host(r, h as u32, idx + 1));
                            chain(&mut frontiers, r, h as u32, false);
                        }
                    }
                }
            }
        }
    }
    (frontiers, host_frontier, nruh)
}

impl Device {
    /// Frontier for a host write, per placement mode. FDP: a write without a directive uses
    /// placement handle 0 of its namespace; an invalid PID is replaced by placement handle 0 in
    /// reclaim group 0 and logged (NVMe TP4146).
    #[inline]
    pub(super) fn resolve_frontier(&mut self, ns: u32, pid: Pid) -> u32 {
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

    pub(super) fn log_event(&mut self, e: FdpEvent) {
        if self.events.len() == EVENT_LOG_LEN {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// Next physical unit of frontier `f`, opening a fresh erase unit when needed.
    #[inline(always)]
    pub(super) fn next_slot(&mut self, f: u32) -> Result<u32, DeviceError> {
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

    /// Seal frontier `f`'s unit (if any) and open a free one. Host frontiers trigger GC when the
    /// free pool falls below `gc_free_min`; GC frontiers never do (no recursion).
    #[cold]
    #[inline(never)]
    pub(super) fn open_unit(&mut self, f: u32) -> Result<(), DeviceError> {
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

    pub(super) fn seal(&mut self, u: u32) {
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

    pub(super) fn is_fdp(&self) -> bool {
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
}
