//! NAND scheduling: what each die does when, and the channels that move the data.
//!
//! A die serves host reads first: a read is placed on the die when it arrives, ahead of every
//! operation that has not started, and may suspend a program or erase in progress (at most
//! `max_suspends` times per operation, each adding tSUS before the read and a resume overhead
//! after). Everything else waits in per-die queues and is committed only when the die is free
//! ("lazy" dispatch), so buffered writes wait in the buffer, not on a die timeline booked in
//! advance:
//!
//! - host programs, in buffer order, once their data has crossed the host link;
//! - GC work (page reads, copy programs, erases) in the order it was released to the die. A GC
//!   program needs a program unit of copied data from any GC reads that have finished, not the
//!   reads of one batch (work-conserving: no die waits for the slowest read of a victim);
//! - when both kinds wait, the die shares its time between them by weighted fair queueing in
//!   the ratio GC pacing (below) releases GC work: the current victim's GC die time per host
//!   program die time. Host writes therefore progress at the rate GC lets them (WAF),
//!   following the current mix, without a whole victim's relocation running ahead of every
//!   host program (which would make write stalls grow with the erase unit). (Weighted by the
//!   die time each kind had logged since the start, GC's share lagged its demand wherever WAF
//!   rose, as after a sequential fill, and the GC work owed by dies without a power budget
//!   grew without bound; weighted by each die's last 100 ms, the shares followed the sporadic
//!   copies a die gets at a small scale, and a quiet reader's p99 behind them depended on the
//!   scale.)
//! - a die programs host data only while at most `erase_lag_blocks` of its blocks wait for
//!   their erase (released to it, not yet started): a drive hands the host only erased blocks,
//!   and its free pool is all the lead host writes may take over reclaim. Past it, the die
//!   does only GC work until an erase has run: the restoring force that keeps GC from falling
//!   behind for good (fair queueing cannot: a kind with nothing ready, e.g. copies waiting for
//!   their data, loses its turn).
//!
//! GC work is paced: the FTL relocates a whole victim at once, but the dies get its reads,
//! copies and erases spread over the host programs that follow, at the rate that finishes the
//! victim's work by the time the FTL takes the next one (the host program time between the two
//! previous victims sets it). Firmware balances GC against host writes the same way, by free
//! space rather than in bursts; without it, GC arrives in chunks as large as an erase unit and
//! write latency tails would grow with the erase unit, i.e. with `--scale`. Within the backlog a
//! copy program is released as soon as the reads that yield its data are, so reads run at most a
//! program unit of data ahead of the copies (a controller's copy buffer), not a whole victim
//! ahead: a victim's reads released together booked the channels and the datapath in bursts as
//! long as the erase unit. When no host program waits, all logged GC work is released
//! (background GC uses idle dies).
//!
//! Host programs into a pSLC write cache are host programs of a third of the data (a page on
//! every plane, one bit per cell) taking the SLC program time; folds out of the cache are GC
//! work (page reads of the SLC data, TLC copy programs).
//!
//! The controller's datapath (its DRAM buffer and ECC engines), when `datapath_bytes_per_sec`
//! is set, is one more shared transfer resource: every byte that crosses the NAND interface
//! crosses it once, on the controller's side of the channel. A host program's data crosses it
//! before its channel transfer, a host read's and a GC read's after theirs, and a GC copy
//! therefore twice (read out, programmed back), so under GC the datapath carries
//! (2 WAF - 1) bytes per host byte written. It is booked like a channel (first gap that fits),
//! with gaps kept down to one mapping unit's transfer. By default host reads go first: a read
//! also books a lane of its own and waits only there (`datapath_host_reads_first`); otherwise
//! first come, first served. A GC read frees its die when its array read ends, as without a
//! datapath; GC work released all at once (background GC, no host program waiting) therefore
//! books the datapath as far ahead as it reaches, and first come, first served, a host read
//! arriving then waits behind it.
//! (Holding the die until the datapath took the page was tried: with the dies' fair queueing
//! blind to that wait, GC fell behind host writes under a saturating load and caught up later.)
//!
//! Completions that the engine needs (a host program frees its buffer space) come out of an
//! event queue in time order; the engine advances the media to each host event first.

use crate::config::TimingConfig;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Die-busy nanoseconds by cause, and suspend counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Busy {
    /// Die time programming host data, ns.
    pub host_program_ns: u64,
    /// Die time reading for the host, ns.
    pub host_read_ns: u64,
    /// Die time programming data GC relocates, ns.
    pub gc_program_ns: u64,
    /// Die time reading data GC relocates, ns.
    pub gc_read_ns: u64,
    /// Die time erasing, ns.
    pub erase_ns: u64,
    /// Programs or erases suspended by a host read.
    pub suspends: u64,
    /// Host reads that found the operation on their die out of suspends and waited for it.
    pub suspend_refused: u64,
    /// Time the controller's datapath spent moving data, ns (0 when it is not modelled).
    pub datapath_ns: u64,
}

impl Busy {
    /// Die time for the host (reads and programs), ns.
    pub fn host_ns(&self) -> u64 {
        self.host_program_ns + self.host_read_ns
    }
    /// GC copies and erases (erases happen only to reclaim space).
    pub fn gc_ns(&self) -> u64 {
        self.gc_program_ns + self.gc_read_ns + self.erase_ns
    }
    /// `self - earlier`, field by field.
    pub fn since(&self, earlier: &Busy) -> Busy {
        Busy {
            host_program_ns: self.host_program_ns - earlier.host_program_ns,
            host_read_ns: self.host_read_ns - earlier.host_read_ns,
            gc_program_ns: self.gc_program_ns - earlier.gc_program_ns,
            gc_read_ns: self.gc_read_ns - earlier.gc_read_ns,
            erase_ns: self.erase_ns - earlier.erase_ns,
            suspends: self.suspends - earlier.suspends,
            suspend_refused: self.suspend_refused - earlier.suspend_refused,
            datapath_ns: self.datapath_ns - earlier.datapath_ns,
        }
    }
}

/// A channel's future busy intervals, so that a transfer can use a gap before a transfer
/// booked later in time (programs are booked when their data is buffered, possibly ahead of
/// when the die can take them).
#[derive(Debug, Clone)]
struct Channel {
    /// Disjoint (start, end) intervals, sorted by start, from index `head` on (intervals before
    /// `head` have ended and are dropped in bulk now and then).
    busy: Vec<(u64, u64)>,
    head: usize,
    /// Gaps shorter than this are closed (see [`MIN_GAP_NS`]).
    min_gap: u64,
    /// No interval from `head` on ends before this (a lower bound: `prune` has nothing to do
    /// before it, and can tell without reading the intervals).
    first_end: u64,
}

/// Gaps shorter than this cannot hold any NAND transfer worth booking (a 4 KiB transfer at
/// 1600 MT/s takes 2.56 us); closing them keeps the interval list short. The datapath, faster
/// than a channel, keeps gaps down to its own smallest transfer instead.
const MIN_GAP_NS: u64 = 2_000;
/// `Media::advance` prunes the channels' interval lists once in this many calls.
const PRUNE_EVERY: u32 = 16;
/// Gaps searched before a booking goes after the last interval (bounds the cost per booking).
const MAX_SCAN: usize = 256;

impl Channel {
    fn new(min_gap: u64) -> Channel {
        Channel { busy: Vec::new(), head: 0, min_gap, first_end: u64::MAX }
    }

    /// Book `dur` ns at the first gap starting at or after `t`; returns the start.
    fn book(&mut self, t: u64, dur: u64) -> u64 {
        // Every interval booked or extended here ends at or after t + dur.
        self.first_end = self.first_end.min(t + dur);
        // Fast path: at or after the last booking.
        match self.busy.last_mut() {
            None => {
                self.busy.push((t, t + dur));
                return t;
            }
            Some(last) if t >= last.1 => {
                if t <= last.1 + self.min_gap {
                    last.1 = t + dur;
                    // A pruned interval extended past `t` is live again: searches must see it.
                    self.head = self.head.min(self.busy.len() - 1);
                } else {
                    self.busy.push((t, t + dur));
                }
                return t;
            }
            _ => {}
        }
        let mut start = t;
        // Intervals are disjoint and sorted, so their ends are sorted too: skip those ending
        // by `t`. A booking lands within the last few intervals nearly always (measured on the
        // timed bench: 60% before the last one, 95% within the last eight), so search back
        // from the end, and by bisection past a few steps.
        // (The last interval ends after `t`; if it was pruned, every interval from `head` on is
        // gone and the booking goes at the end.)
        let mut i = (self.busy.len() - 1).max(self.head);
        let mut steps = 0;
        while i > self.head && self.busy[i - 1].1 > t {
            i -= 1;
            steps += 1;
            if steps == 8 {
                i = self.head + self.busy[self.head..i].partition_point(|&(_, e)| e <= t);
                break;
            }
        }
        let mut scanned = 0;
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if s >= start + dur {
                break;
            }
            start = start.max(e);
            i += 1;
            scanned += 1;
            if scanned == MAX_SCAN {
                let last = self.busy.len() - 1;
                start = start.max(self.busy[last].1);
                i = self.busy.len();
                break;
            }
        }
        // Insert at i (every interval before i starts before `start`); merge with neighbours
        // that touch or leave only a useless gap.
        let end = start + dur;
        let merge_prev = i > self.head && self.busy[i - 1].1 + self.min_gap >= start;
        let merge_next = i < self.busy.len() && self.busy[i].0 <= end + self.min_gap;
        match (merge_prev, merge_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = end,
            (false, true) => self.busy[i].0 = start,
            (false, false) => self.busy.insert(i, (start, end)),
        }
        start
    }

    /// Forget intervals that ended by `now` (no later request starts before `now`).
    fn prune(&mut self, now: u64) {
        if now < self.first_end {
            return;
        }
        while self.head < self.busy.len() && self.busy[self.head].1 <= now {
            self.head += 1;
        }
        self.first_end = self.busy.get(self.head).map_or(u64::MAX, |&(_, e)| e);
        if self.head > 64 && self.head * 2 > self.busy.len() {
            self.busy.drain(..self.head);
            self.head = 0;
        }
    }
}

/// What a die is doing (its last committed operation other than a host read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Kind {
    #[default]
    Idle,
    HostProgram,
    GcProgram,
    GcRead,
    Erase,
}

#[derive(Debug, Clone, Copy, Default)]
struct Current {
    kind: Kind,
    /// Array operation start and end (the end moves when host reads suspend it).
    start: u64,
    end: u64,
    suspends: u32,
    /// A program whose end is still to be processed (a host program frees buffer space; every
    /// program returns its power token).
    pending: bool,
}

/// Queued GC work of one die, in the order the FTL logged it.
#[derive(Debug, Clone, Copy)]
enum GcOp {
    /// A page read yielding `units` mapping units of live data.
    Read { units: u32 },
    /// A copy program: ready once `need` GC units have been read (device-wide count).
    Program { need: u64 },
    Erase,
}

/// GC's least weight in the fair queueing, per unit of host weight (its weight is the pace,
/// which is 0 only before GC has ever been logged): keeps the virtual finish tags finite.
const MIN_GC_WEIGHT: f64 = 1e-3;

/// Marks an SLC-mode program in a die's host queue (ready times stay far below it).
const SLC_BIT: u64 = 1 << 63;

#[derive(Debug, Clone, Default)]
struct Die {
    /// The die is free for its next queued operation (after the current one and any host reads
    /// placed behind it).
    busy_end: u64,
    cur: Current,
    /// End of the array time of the last host read placed on this die.
    read_tail: u64,
    /// The reads up to `read_tail` run inside a suspension of `cur`, or ahead of a program whose
    /// data had not reached the array when they came.
    in_suspension: bool,
    /// Ready times (data in the buffer) of queued host programs, in buffer order; an SLC-mode
    /// program has [`SLC_BIT`] set.
    host_q: VecDeque<u64>,
    /// The current host program is an SLC-mode one.
    cur_slc: bool,
    /// Queued GC work: reads and erases (always ready), each with the number of programs given
    /// to the die before it, and copy programs' needs (increasing); programs given to the die
    /// and taken by it so far. (The die's GC queue can hold a long backlog: its entries are
    /// kept to 8 bytes.)
    gc_rw: VecDeque<Queued>,
    gc_prog: VecDeque<u64>,
    progs_in: u64,
    progs_out: u64,
    /// Erases given to the die and not yet started (blocks reclaimed, not yet erased).
    erases_queued: u32,
    /// Virtual finish tags of the fair queueing.
    tag_host: f64,
    tag_gc: f64,
    /// Waits for a power token with a program ready (in `Media::power_wait`).
    power_waiting: bool,
    /// Time of this die's event (u64::MAX: none), as in `Media::die_events`.
    event_at: u64,
}

/// A logged GC operation and its die, packed in 8 bytes: the backlog holds a victim's whole
/// relocation (tens of thousands of operations on a large drive), so its size is cache traffic.
#[derive(Debug, Clone, Copy)]
struct Logged(u64);

impl Die {
    /// Host programs must wait: more reclaimed blocks wait for their erase than `lag` allows
    /// (0: no limit).
    fn erase_bound(&self, lag: u32) -> bool {
        lag > 0 && self.erases_queued > lag
    }
}

impl Logged {
    const DIE_BITS: u32 = 16;
    const KIND_BITS: u32 = 2;

    fn new(die: u32, op: GcOp) -> Logged {
        debug_assert!(die < 1 << Self::DIE_BITS);
        let (kind, payload) = match op {
            GcOp::Read { units } => (0, units as u64),
            GcOp::Program { need } => (1, need),
            GcOp::Erase => (2, 0),
        };
        debug_assert!(payload < 1 << (64 - Self::DIE_BITS - Self::KIND_BITS), "GC unit count fits");
        Logged(die as u64 | kind << Self::DIE_BITS | payload << (Self::DIE_BITS + Self::KIND_BITS))
    }

    /// An erase with its release condition: the GC read units logged before it (a read's and
    /// a program's payload is their own field).
    fn with_payload(die: u32, op: GcOp, payload: u64) -> Logged {
        debug_assert!(matches!(op, GcOp::Erase));
        Logged(Logged::new(die, op).0 | payload << (Self::DIE_BITS + Self::KIND_BITS))
    }

    fn payload(self) -> u64 {
        self.0 >> (Self::DIE_BITS + Self::KIND_BITS)
    }

    fn die(self) -> u32 {
        (self.0 & ((1 << Self::DIE_BITS) - 1)) as u32
    }

    fn op(self) -> GcOp {
        let payload = self.0 >> (Self::DIE_BITS + Self::KIND_BITS);
        match (self.0 >> Self::DIE_BITS) & ((1 << Self::KIND_BITS) - 1) {
            0 => GcOp::Read { units: payload as u32 },
            1 => GcOp::Program { need: payload },
            _ => GcOp::Erase,
        }
    }
}

/// A GC read or erase in a die's queue and the number of copy programs given to the die before
/// it, packed in 8 bytes.
#[derive(Debug, Clone, Copy)]
struct Queued(u64);

impl Queued {
    const UNIT_BITS: u32 = 23;

    fn new(programs_before: u64, op: GcOp) -> Queued {
        let low = match op {
            GcOp::Read { units } => {
                debug_assert!(units < 1 << Self::UNIT_BITS, "a page's units fit");
                units as u64
            }
            GcOp::Erase => 1 << Self::UNIT_BITS,
            GcOp::Program { .. } => unreachable!("programs queue apart"),
        };
        debug_assert!(programs_before < 1 << (63 - Self::UNIT_BITS));
        Queued(programs_before << (Self::UNIT_BITS + 1) | low)
    }

    fn programs_before(self) -> u64 {
        self.0 >> (Self::UNIT_BITS + 1)
    }

    fn op(self) -> GcOp {
        if self.0 & (1 << Self::UNIT_BITS) != 0 {
            GcOp::Erase
        } else {
            GcOp::Read { units: (self.0 & ((1 << Self::UNIT_BITS) - 1)) as u32 }
        }
    }
}

/// Each die's next event time, kept in a tournament tree: the earliest (ties to the lower die)
/// in O(1), an update in O(log dies), and no stale entries (a die's event moves often: every
/// read placed on it or operation queued can bring it forward).
#[derive(Debug, Clone)]
struct DieEvents {
    /// Leaves from `leaves` on; node i holds the minimum (time, die) of its subtree.
    tree: Vec<(u64, u32)>,
    leaves: usize,
}

impl DieEvents {
    fn new(dies: usize) -> DieEvents {
        let leaves = dies.max(1).next_power_of_two();
        let mut tree = vec![(u64::MAX, u32::MAX); 2 * leaves];
        for d in 0..leaves {
            tree[leaves + d].1 = d as u32;
        }
        for i in (1..leaves).rev() {
            tree[i] = tree[2 * i].min(tree[2 * i + 1]);
        }
        DieEvents { tree, leaves }
    }

    fn set(&mut self, die: u32, t: u64) {
        let mut i = self.leaves + die as usize;
        self.tree[i].0 = t;
        while i > 1 {
            i /= 2;
            let m = self.tree[2 * i].min(self.tree[2 * i + 1]);
            if self.tree[i] == m {
                break;
            }
            self.tree[i] = m;
        }
    }

    /// The earliest (time, die); time u64::MAX when no die has an event.
    fn first(&self) -> (u64, u32) {
        self.tree[1]
    }
}

/// The NAND media of one flash drive: per-die queues, channels, GC pacing and the power budget
/// (module docs), with die-busy accounting.
pub struct Media {
    dies: Vec<Die>,
    ch: Vec<Channel>,
    /// The controller's datapath (None: not modelled) and its transfer times of a program
    /// unit, an SLC-mode program and a page.
    dp: Option<Channel>,
    /// Host reads' own lane of the datapath when they go first (see `host_read`).
    dp_reads: Option<Channel>,
    ns_per_byte_dp: f64,
    program_dp: u64,
    program_dp_slc: u64,
    page_dp: u64,
    die_events: DieEvents,
    /// Deliveries of GC read data: (time, units).
    gc_data: BinaryHeap<Reverse<(u64, u32)>>,
    channels: u32,
    dies_per_rg: u32,
    t_read: u64,
    t_read_page: [u64; 4],
    t_prog: u64,
    /// SLC-mode program time, transfer and bytes (pSLC cache).
    t_prog_slc: u64,
    program_xfer_slc: u64,
    program_bytes_slc: u64,
    t_erase: u64,
    program_xfer: u64,
    page_xfer: u64,
    program_bytes: u64,
    ns_per_byte_channel: f64,
    suspend: bool,
    suspend_ns: u64,
    erase_suspend_ns: u64,
    resume_ns: u64,
    max_suspends: u32,
    units_per_program: u64,
    /// GC data: units of live data logged for reading, read so far, and GC programs logged.
    gc_logged: u64,
    gc_read: u64,
    gc_programs: u64,
    /// GC programs whose data is not read yet: (need, die), needs increasing.
    blocked: VecDeque<(u64, u32)>,
    erase_scale: f64,
    erase_credit: Vec<f64>,
    /// Power budget: dies programming now, the most allowed (0 = no limit), and dies waiting for
    /// a token in arrival order.
    programming: u32,
    max_programming: u32,
    power_wait: VecDeque<u32>,
    /// Host programs queued or in progress.
    host_programs: u64,
    /// Calls of `advance` so far (it prunes now and then).
    advances: u32,
    /// Reclaimed blocks per die that may wait for their erase while the die programs host data
    /// (0: no limit).
    erase_lag: u32,
    /// GC work logged by the FTL, not yet given to the dies: page reads, and copy programs and
    /// erases, each in log order; their die time; units of read data released to the dies.
    backlog: VecDeque<Logged>,
    backlog_rest: VecDeque<Logged>,
    backlog_ns: u64,
    released_units: u64,
    /// GC die time released per host program die time, and the release credit (die ns).
    pace: f64,
    credit: f64,
    /// Host program die time queued since the FTL last logged GC work.
    host_ns_since_gc: u64,
    /// GC work was logged by the command being charged.
    gc_in_command: bool,
    /// Bytes of host programs finished since the engine last took them.
    released: u64,
    now: u64,
    /// Die-busy time by cause since the media was built.
    pub busy: Busy,
}

impl Media {
    /// Idle dies and channels at time 0, sized and timed by `cfg`.
    pub fn new(cfg: &TimingConfig) -> Media {
        let nspb = 1e9 / cfg.channel_bytes_per_sec;
        let mut t_read_page = [cfg.nand.t_read_ns; 4];
        for (i, t) in t_read_page.iter_mut().enumerate() {
            *t = cfg.t_read_of(i as u32);
        }
        assert!(cfg.dies < 1 << Logged::DIE_BITS, "at most {} dies", (1u32 << Logged::DIE_BITS) - 1);
        let dp_nspb = if cfg.datapath_bytes_per_sec > 0.0 { 1e9 / cfg.datapath_bytes_per_sec } else { 0.0 };
        let dp_ns = |bytes: u64| (bytes as f64 * dp_nspb).round() as u64;
        let dp_lane = || Channel::new(MIN_GAP_NS.min(dp_ns(cfg.mapping_unit as u64)));
        Media {
            dies: vec![Die { event_at: u64::MAX, ..Die::default() }; cfg.dies as usize],
            ch: vec![Channel::new(MIN_GAP_NS); cfg.channels as usize],
            dp: (dp_nspb > 0.0).then(dp_lane),
            dp_reads: (dp_nspb > 0.0 && cfg.datapath_host_reads_first).then(dp_lane),
            ns_per_byte_dp: dp_nspb,
            program_dp: dp_ns(cfg.program_bytes()),
            program_dp_slc: dp_ns(cfg.slc_program_bytes()),
            page_dp: dp_ns(cfg.page_bytes),
            die_events: DieEvents::new(cfg.dies as usize),
            gc_data: BinaryHeap::new(),
            channels: cfg.channels,
            dies_per_rg: cfg.dies_per_rg(),
            t_read: cfg.nand.t_read_ns,
            t_read_page,
            t_prog: cfg.nand.t_prog_ns,
            t_prog_slc: cfg.nand.t_prog_slc_ns,
            program_xfer_slc: (cfg.slc_program_bytes() as f64 * nspb).round() as u64,
            program_bytes_slc: cfg.slc_program_bytes(),
            t_erase: cfg.nand.t_erase_ns,
            program_xfer: (cfg.program_bytes() as f64 * nspb).round() as u64,
            page_xfer: (cfg.page_bytes as f64 * nspb).round() as u64,
            program_bytes: cfg.program_bytes(),
            ns_per_byte_channel: nspb,
            suspend: cfg.program_suspend,
            suspend_ns: cfg.suspend_ns,
            erase_suspend_ns: cfg.erase_suspend_ns,
            resume_ns: cfg.resume_ns,
            max_suspends: cfg.max_suspends,
            units_per_program: cfg.units_per_program() as u64,
            gc_logged: 0,
            gc_read: 0,
            gc_programs: 0,
            blocked: VecDeque::new(),
            erase_scale: if cfg.erase_scale > 0.0 { cfg.erase_scale.min(1.0) } else { 1.0 },
            erase_credit: vec![0.0; cfg.reclaim_groups.max(1) as usize],
            programming: 0,
            max_programming: cfg.max_active_programs,
            power_wait: VecDeque::new(),
            host_programs: 0,
            advances: 0,
            erase_lag: cfg.erase_lag_blocks,
            backlog: VecDeque::new(),
            backlog_rest: VecDeque::new(),
            backlog_ns: 0,
            released_units: 0,
            pace: 0.0,
            credit: 0.0,
            host_ns_since_gc: 0,
            gc_in_command: false,
            released: 0,
            now: 0,
            busy: Busy::default(),
        }
    }

    fn channel_of(&self, die: u32) -> usize {
        (die % self.channels) as usize
    }

    /// Time of the next media event, if any.
    pub fn next_event(&mut self) -> Option<u64> {
        let t = self.die_events.first().0.min(self.gc_data.peek().map_or(u64::MAX, |e| e.0 .0));
        (t != u64::MAX).then_some(t)
    }

    /// Process the next media event (the one [`Media::next_event`] names); a die's event goes
    /// before a delivery of GC data at the same time.
    pub fn step(&mut self) {
        let (t, d) = self.die_events.first();
        if self.gc_data.peek().is_some_and(|e| e.0 .0 < t) {
            let Some(Reverse((t, units))) = self.gc_data.pop() else { unreachable!() };
            debug_assert!(t >= self.now, "media events run in time order");
            self.now = t;
            self.gc_read += units as u64;
            while let Some(&(need, die)) = self.blocked.front() {
                if need > self.gc_read {
                    break;
                }
                self.blocked.pop_front();
                self.schedule(die);
            }
            return;
        }
        if t == u64::MAX {
            return;
        }
        debug_assert!(t >= self.now, "media events run in time order");
        self.now = t;
        // The die's event stays booked at `t` until the `schedule` at the end moves it (one
        // tree update instead of two).
        let die = &mut self.dies[d as usize];
        if die.cur.pending && die.cur.end <= t {
            die.cur.pending = false;
            if die.cur.kind == Kind::HostProgram {
                self.host_programs -= 1;
                self.released += if die.cur_slc { self.program_bytes_slc } else { self.program_bytes };
                if self.host_programs == 0 {
                    self.release_all();
                }
            }
            self.programming -= 1;
            self.wake_power_waiter();
        }
        let die = &self.dies[d as usize];
        if die.busy_end <= t {
            debug_assert!(!die.cur.pending, "a die takes its next operation only after the last one ended");
            self.dispatch(d, t);
        }
        self.schedule(d);
    }

    /// Bytes of host programs finished since the last call (buffer space to free).
    pub fn take_released(&mut self) -> u64 {
        std::mem::take(&mut self.released)
    }

    /// Host programs queued or in progress (nothing else frees buffer space).
    pub fn host_programs_pending(&self) -> u64 {
        self.host_programs
    }

    /// The first GC operation given to die `d` that may run now: reads and erases always; a
    /// copy program once its data has been read (needs grow along the queue, so only the first
    /// program can be ready). Returns the queue it heads: true for the programs.
    fn ready_gc(&self, d: usize) -> Option<bool> {
        let die = &self.dies[d];
        let prog = die.gc_prog.front().is_some_and(|&need| need <= self.gc_read);
        match (die.gc_rw.front(), prog) {
            (None, false) => None,
            (Some(_), false) => Some(false),
            (None, true) => Some(true),
            // The first program was given before the first read or erase.
            (Some(q), true) => Some(die.progs_out < q.programs_before()),
        }
    }

    /// Whether a die may start a program now (a power token is free).
    fn may_program(&self) -> bool {
        self.max_programming == 0 || self.programming < self.max_programming
    }

    /// A power token came free: wake the die that has waited longest and is still waiting.
    /// (Dies that turned to a read or an erase meanwhile left the line; they try again when
    /// they are free, so no token waits for a busy die.)
    fn wake_power_waiter(&mut self) {
        while let Some(w) = self.power_wait.pop_front() {
            if self.dies[w as usize].power_waiting {
                self.dies[w as usize].power_waiting = false;
                self.schedule(w);
                return;
            }
        }
    }

    /// The first GC read or erase given to die `d` (what a die can do without a power token).
    fn ready_gc_no_program(&self, d: usize) -> Option<bool> {
        (!self.dies[d].gc_rw.is_empty()).then_some(false)
    }

    /// Commit die `d`'s next operation at `t` (the die is free).
    fn dispatch(&mut self, d: u32, t: u64) {
        let di = d as usize;
        let die = &self.dies[di];
        let host_ready = !die.erase_bound(self.erase_lag) && die.host_q.front().is_some_and(|&r| r & !SLC_BIT <= t);
        let can_program = self.may_program();
        let (host, gc) = if can_program { (host_ready, self.ready_gc(di)) } else { (false, self.ready_gc_no_program(di)) };
        let take_gc = match (host, gc) {
            (false, None) => {
                if !can_program && (host_ready || self.ready_gc(di).is_some()) && !self.dies[di].power_waiting {
                    self.dies[di].power_waiting = true;
                    self.power_wait.push_back(d);
                }
                return;
            }
            (true, None) => false,
            (false, Some(_)) => true,
            (true, Some(_)) => self.dies[di].tag_gc < self.dies[di].tag_host,
        };
        let ch = self.channel_of(d);
        let (kind, dur) = if take_gc {
            let op = if gc.expect("chosen") {
                let need = self.dies[di].gc_prog.pop_front().expect("ready program");
                self.dies[di].progs_out += 1;
                GcOp::Program { need }
            } else {
                self.dies[di].gc_rw.pop_front().expect("ready read or erase").op()
            };
            match op {
                GcOp::Read { units } => {
                    let done = t + self.t_read;
                    let out = self.ch[ch].book(done, self.page_xfer) + self.page_xfer;
                    let out = self.through_datapath(out, self.page_dp);
                    self.gc_data.push(Reverse((out, units)));
                    self.busy.gc_read_ns += self.t_read + self.page_xfer;
                    self.start(di, Kind::GcRead, t, done);
                    (Kind::GcRead, self.t_read)
                }
                GcOp::Program { .. } => {
                    let start = self.data_in(ch, t, t, self.program_xfer, self.program_dp);
                    self.busy.gc_program_ns += self.t_prog;
                    self.start(di, Kind::GcProgram, start, start + self.t_prog);
                    (Kind::GcProgram, self.t_prog)
                }
                GcOp::Erase => {
                    self.dies[di].erases_queued -= 1;
                    self.busy.erase_ns += self.t_erase;
                    self.start(di, Kind::Erase, t, t + self.t_erase);
                    (Kind::Erase, self.t_erase)
                }
            }
        } else {
            let ready = self.dies[di].host_q.pop_front().expect("ready host program");
            let slc = ready & SLC_BIT != 0;
            let (t_prog, xfer, dpx) = if slc { (self.t_prog_slc, self.program_xfer_slc, self.program_dp_slc) } else { (self.t_prog, self.program_xfer, self.program_dp) };
            let start = self.data_in(ch, ready & !SLC_BIT, t, xfer, dpx);
            self.busy.host_program_ns += t_prog;
            self.start(di, Kind::HostProgram, start, start + t_prog);
            self.dies[di].cur_slc = slc;
            (Kind::HostProgram, t_prog)
        };
        let programs = matches!(kind, Kind::HostProgram | Kind::GcProgram);
        if programs {
            self.dies[di].cur.pending = true;
            self.programming += 1;
        }
        // Whatever it took, it is no longer waiting for a token (a stale entry stays in the line
        // and is skipped).
        self.dies[di].power_waiting = false;
        // Weighted fair queueing, host weight 1 and GC's the pace: a kind's tag advances by its
        // service over its weight; a kind with nothing ready does not bank credit while the
        // other runs.
        let gc_weight = self.pace.max(MIN_GC_WEIGHT);
        let die = &mut self.dies[di];
        if kind == Kind::HostProgram {
            die.tag_host += dur as f64;
            if gc.is_none() {
                die.tag_gc = die.tag_gc.max(die.tag_host);
            }
        } else {
            die.tag_gc += dur as f64 / gc_weight;
            if !host {
                die.tag_host = die.tag_host.max(die.tag_gc);
            }
        }
    }

    /// Move a program unit's data into the die, through the datapath (`dpx` ns) and then the
    /// channel (`xfer` ns) (cache programming: the transfers may overlap the end of the die's
    /// previous operation, but not start before the data is buffered). Returns when the array
    /// program can start (not before `free`, when the die is free).
    fn data_in(&mut self, ch: usize, ready: u64, free: u64, xfer: u64, dpx: u64) -> u64 {
        let lead = xfer + dpx;
        let at = ready.max(free.saturating_sub(lead)).max(self.now.saturating_sub(lead));
        let at = self.through_datapath(at, dpx);
        let done = self.ch[ch].book(at, xfer) + xfer;
        done.max(free)
    }

    /// Data ready at `t` (a program's, before its channel transfer; a read's, after it) crosses
    /// the datapath (`dpx` ns); returns when it is through (`t` when the datapath is not
    /// modelled).
    fn through_datapath(&mut self, t: u64, dpx: u64) -> u64 {
        match &mut self.dp {
            Some(dp) => {
                self.busy.datapath_ns += dpx;
                dp.book(t, dpx) + dpx
            }
            None => t,
        }
    }

    fn start(&mut self, di: usize, kind: Kind, start: u64, end: u64) {
        let die = &mut self.dies[di];
        die.cur = Current { kind, start, end, suspends: 0, pending: false };
        die.in_suspension = false;
        die.busy_end = end;
    }

    /// (Re)schedule die `d`'s event: the end of a host program to report, or the time it can
    /// take its next queued operation.
    fn schedule(&mut self, d: u32) {
        let now = self.now;
        let die = &mut self.dies[d as usize];
        let mut next = u64::MAX;
        if die.cur.pending {
            next = die.cur.end;
        }
        // A die waiting for a power token does not try to program: a token's release wakes it.
        // Host programs held for an erase wait for the die's next operation (which the erase
        // is among).
        let programs_blocked = die.power_waiting;
        if !programs_blocked && !die.erase_bound(self.erase_lag) {
            if let Some(&r) = die.host_q.front() {
                next = next.min(die.busy_end.max(r & !SLC_BIT));
            }
        }
        // With no read or erase queued, the queue holds only programs, the first needing least.
        if !die.gc_rw.is_empty() || (!programs_blocked && die.gc_prog.front().is_some_and(|&need| need <= self.gc_read))
        {
            next = next.min(die.busy_end);
        }
        let next = if next == u64::MAX { next } else { next.max(now) };
        if next != die.event_at {
            die.event_at = next;
            self.die_events.set(d, next);
        }
    }

    /// The simulation clock advanced to `now`: no request will start earlier than a program's
    /// data transfer before it.
    pub fn advance(&mut self, now: u64) {
        debug_assert!(self.next_event().is_none_or(|t| t >= now), "media events before {now} must run first");
        self.now = self.now.max(now);
        // Pruning only keeps the interval lists short (a booking never reaches back past the
        // floor, so intervals ending before it never change one), and bookings search from the
        // lists' ends: every PRUNE_EVERY calls is enough.
        self.advances = self.advances.wrapping_add(1);
        if !self.advances.is_multiple_of(PRUNE_EVERY) {
            return;
        }
        let floor = now.saturating_sub(self.program_xfer);
        for c in &mut self.ch {
            c.prune(floor);
        }
        if let Some(dp) = &mut self.dp {
            let dp_floor = now.saturating_sub(self.program_xfer + self.program_dp);
            dp.prune(dp_floor);
            if let Some(lane) = &mut self.dp_reads {
                lane.prune(dp_floor);
            }
        }
    }

    /// Queue a host program on `die` whose data is buffered at `ready`; it earns the paced GC
    /// work its share of die time.
    pub fn queue_host_program(&mut self, ready: u64, die: u32) {
        self.queue_host(ready, die, self.t_prog);
    }

    /// Queue an SLC-mode host program (pSLC cache) on `die`, data buffered at `ready`.
    pub fn queue_host_program_slc(&mut self, ready: u64, die: u32) {
        debug_assert!(ready < SLC_BIT);
        self.queue_host(ready | SLC_BIT, die, self.t_prog_slc);
    }

    fn queue_host(&mut self, entry: u64, die: u32, t_prog: u64) {
        let d = &mut self.dies[die as usize];
        d.host_q.push_back(entry);
        self.host_programs += 1;
        self.schedule(die);
        self.host_ns_since_gc += t_prog;
        self.credit += self.pace * t_prog as f64;
        self.release_paced();
    }

    /// Log a GC page read on `die` that yields `units` mapping units of live data.
    pub fn queue_gc_read(&mut self, die: u32, units: u32) {
        self.gc_logged += units as u64;
        self.log_gc(die, GcOp::Read { units });
    }

    /// Log a GC copy program on `die`: it needs a program unit of data read by GC (no more
    /// than has been logged for reading, which covers a unit partly filled before timing began).
    pub fn queue_gc_program(&mut self, die: u32) {
        self.gc_programs += 1;
        let need = (self.gc_programs * self.units_per_program).min(self.gc_logged);
        self.log_gc(die, GcOp::Program { need });
    }

    /// An erase unit of reclaim group `rg` was reclaimed: erase a block on every die of the
    /// group once the scaled erase units add up to a real one (see `TimingConfig::erase_scale`).
    pub fn queue_erase(&mut self, rg: u32) {
        let c = &mut self.erase_credit[rg as usize];
        *c += self.erase_scale;
        if *c < 1.0 - 1e-9 {
            return;
        }
        *c -= 1.0;
        let first = rg * self.dies_per_rg;
        for die in first..first + self.dies_per_rg {
            self.log_gc(die, GcOp::Erase);
        }
    }

    /// The engine charged one host command's NAND work: if it logged GC work, set the pace so
    /// that the backlog is released over as much host program time as passed since the FTL
    /// last logged GC work (by then it is likely to log more).
    pub fn end_command(&mut self) {
        if self.gc_in_command {
            self.gc_in_command = false;
            self.pace = self.backlog_ns as f64 / self.host_ns_since_gc.max(self.t_prog) as f64;
            self.host_ns_since_gc = 0;
        }
        if self.host_programs == 0 {
            self.release_all();
        } else {
            self.release_paced();
        }
    }

    fn gc_op_ns(&self, op: GcOp) -> u64 {
        match op {
            GcOp::Read { .. } => self.t_read,
            GcOp::Program { .. } => self.t_prog,
            GcOp::Erase => self.t_erase,
        }
    }

    fn log_gc(&mut self, die: u32, op: GcOp) {
        self.backlog_ns += self.gc_op_ns(op);
        match op {
            GcOp::Read { .. } => self.backlog.push_back(Logged::new(die, op)),
            // An erase waits for the reads logged before it (its victim's); a program for the
            // reads that yield its data (its `need`).
            GcOp::Erase => self.backlog_rest.push_back(Logged::with_payload(die, op, self.gc_logged)),
            GcOp::Program { .. } => self.backlog_rest.push_back(Logged::new(die, op)),
        }
        self.gc_in_command = true;
    }

    /// The backlog operation to release next: a copy program or erase as soon as the reads it
    /// waits for are released, else the next read. So GC reads reach the dies just ahead of
    /// the copies that take their data, as a controller's copy buffer lets them, instead of a
    /// victim's reads all before its first copy (bursts of read data as long as an erase unit
    /// on the channels and the datapath). Returns the queue: true for the rest.
    fn next_release(&self) -> Option<bool> {
        match (self.backlog_rest.front(), self.backlog.is_empty()) {
            (None, true) => None,
            (None, false) => Some(false),
            (Some(l), reads_empty) => Some(reads_empty || l.payload() <= self.released_units),
        }
    }

    /// Release as much backlog as the credit pays for (credit is not banked while there is
    /// nothing to release).
    fn release_paced(&mut self) {
        while self.credit > 0.0 {
            match self.release_next() {
                Some(ns) => self.credit -= ns as f64,
                None => {
                    self.credit = 0.0;
                    return;
                }
            }
        }
    }

    /// Give the whole backlog to the dies.
    fn release_all(&mut self) {
        while self.release_next().is_some() {}
    }

    /// Give the next backlog operation (in [`Media::next_release`]'s order) to its die; its die
    /// time, or None when the backlog is empty.
    fn release_next(&mut self) -> Option<u64> {
        let rest = self.next_release()?;
        let l = if rest { self.backlog_rest.pop_front() } else { self.backlog.pop_front() }.expect("named by next_release");
        let (die, op) = (l.die(), l.op());
        if let GcOp::Read { units } = op {
            self.released_units += units as u64;
        }
        let ns = self.gc_op_ns(op);
        self.backlog_ns -= ns;
        let d = &mut self.dies[die as usize];
        match op {
            GcOp::Program { need } => {
                d.gc_prog.push_back(need);
                d.progs_in += 1;
                if need > self.gc_read {
                    self.blocked.push_back((need, die));
                }
            }
            GcOp::Erase => {
                d.erases_queued += 1;
                d.gc_rw.push_back(Queued::new(d.progs_in, op));
            }
            GcOp::Read { .. } => d.gc_rw.push_back(Queued::new(d.progs_in, op)),
        }
        // A queued operation can only bring the die's event forward to when the die is
        // free; if it is already due by then, there is nothing to reschedule.
        if d.event_at > d.busy_end.max(self.now) {
            self.schedule(die);
        }
        Some(ns)
    }

    /// Read `bytes` of a page of type `page_type` (0 = LSB) from `die`, arriving at `t` (no
    /// earlier than every media event before it has run). The read goes ahead of every queued
    /// operation; it suspends a program or erase in progress if suspends are on and the
    /// operation has suspends left, else waits for it. Returns when the data has left the
    /// channel.
    pub fn host_read(&mut self, t: u64, die: u32, bytes: u64, page_type: u32) -> u64 {
        let ch = self.channel_of(die);
        let t_r = self.t_read_page[(page_type as usize).min(3)];
        let xfer = (bytes as f64 * self.ns_per_byte_channel).round() as u64;
        let (suspend, max_suspends, resume_ns) = (self.suspend, self.max_suspends, self.resume_ns);
        let d = &mut self.dies[die as usize];
        let suspend_ns = if d.cur.kind == Kind::Erase { self.erase_suspend_ns } else { self.suspend_ns };
        let suspendable = matches!(d.cur.kind, Kind::HostProgram | Kind::GcProgram | Kind::Erase) && d.cur.start <= t && t < d.cur.end;
        // Suspending only pays when the operation would run longer than the suspend takes.
        let suspendable = suspendable && d.cur.end - t > suspend_ns;
        // A program whose data is still crossing the datapath and the channel has not reached
        // the array: the die is idle, and the read goes first (the program starts when it is
        // done; its data waits in the die's register).
        let before_program = matches!(d.cur.kind, Kind::HostProgram | Kind::GcProgram) && t < d.cur.start;
        let joins = d.in_suspension && t < d.read_tail;
        let array_start = if joins || before_program {
            // Join the reads already running inside a suspension or ahead of this program, or
            // start the reads ahead of it.
            let s = if joins { d.read_tail } else { t };
            d.read_tail = s + t_r;
            let pushed = if d.cur.start >= s {
                // The program has not started: it starts once the reads are done.
                let p = d.read_tail.saturating_sub(d.cur.start);
                d.cur.start += p;
                p
            } else {
                t_r
            };
            d.cur.end += pushed;
            d.busy_end += pushed;
            d.in_suspension = true;
            s
        } else if suspend && suspendable && d.cur.suspends < max_suspends {
            let s = t + suspend_ns;
            d.read_tail = s + t_r;
            let pushed = suspend_ns + t_r + resume_ns;
            d.cur.end += pushed;
            d.busy_end += pushed;
            d.cur.suspends += 1;
            d.in_suspension = true;
            self.busy.suspends += 1;
            s
        } else {
            if suspend && suspendable {
                self.busy.suspend_refused += 1;
            }
            let s = t.max(d.busy_end);
            d.read_tail = s + t_r;
            d.busy_end = d.read_tail;
            d.in_suspension = false;
            s
        };
        self.busy.host_read_ns += t_r + xfer;
        let out = self.ch[ch].book(array_start + t_r, xfer) + xfer;
        let dpx = (bytes as f64 * self.ns_per_byte_dp).round() as u64;
        // Booked with the rest either way, so program data and GC transfers booked after the read
        // see the capacity it took; host reads first, the read itself waits only for other host
        // reads (a transfer already in progress is not waited for).
        let shared = self.through_datapath(out, dpx);
        let out = match &mut self.dp_reads {
            Some(lane) => lane.book(out, dpx) + dpx,
            None => shared,
        };
        self.schedule(die);
        out
    }

    /// No GC work (copies, folds, erases) is logged or queued on any die.
    pub fn gc_idle(&self) -> bool {
        self.backlog.is_empty() && self.backlog_rest.is_empty() && self.dies.iter().all(|d| d.gc_rw.is_empty() && d.gc_prog.is_empty())
    }

    /// When the dies would finish the work queued so far if no more arrived (an estimate that
    /// ignores channel contention).
    pub fn drained_at(&self) -> u64 {
        self.dies
            .iter()
            .map(|d| {
                let host: u64 = d.host_q.iter().map(|&r| if r & SLC_BIT != 0 { self.t_prog_slc } else { self.t_prog }).sum();
                let gc: u64 = d.gc_rw.iter().map(|&q| self.gc_op_ns(q.op())).sum::<u64>() + d.gc_prog.len() as u64 * self.t_prog;
                let queued: u64 = host + gc;
                d.busy_end.max(self.now) + queued
            })
            .max()
            .unwrap_or(0)
            // The backlog spread evenly over the dies.
            + self.backlog_ns / self.dies.len().max(1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::{Channel, GcOp, Media};
    use crate::TimingConfig;

    /// A victim's relocation as the FTL logs it (every page read, then the copies, then the
    /// erase) reaches the dies with each copy right after the reads that yield its data.
    #[test]
    fn gc_reads_are_released_just_ahead_of_their_copies() {
        let cfg = TimingConfig { erase_scale: 1.0, ..TimingConfig::plain_tlc(4, 4) };
        let mut m = Media::new(&cfg);
        let (upp, pages) = (cfg.units_per_page(), cfg.units_per_program() / cfg.units_per_page());
        assert!(pages > 1);
        let copies = 8;
        for i in 0..copies * pages {
            m.queue_gc_read(i % 4, upp);
        }
        for d in 0..copies {
            m.queue_gc_program(d % 4);
        }
        m.queue_erase(0);
        let mut order = String::new();
        while let Some(rest) = m.next_release() {
            let l = if rest { m.backlog_rest.front() } else { m.backlog.front() };
            order.push(match l.unwrap().op() {
                GcOp::Read { .. } => 'r',
                GcOp::Program { .. } => 'P',
                GcOp::Erase => 'E',
            });
            m.release_next();
        }
        let expected = ("r".repeat(pages as usize) + "P").repeat(copies as usize) + "EEEE";
        assert_eq!(order, expected, "one erase per die of the group, after every read");
        assert_eq!(m.released_units, (copies * pages * upp) as u64);
        assert!(m.backlog.is_empty() && m.backlog_rest.is_empty() && m.backlog_ns == 0);
    }

    /// With more reclaimed blocks waiting for their erase than the erase lag allows, a die's
    /// host program waits for an erase; within the lag (or with no limit) the fair queueing
    /// lets it go first (ties go to the host).
    #[test]
    fn host_programs_wait_for_an_erase_past_the_erase_lag() {
        let finish = |lag: u32| {
            let cfg = TimingConfig { erase_lag_blocks: lag, ..TimingConfig::plain_tlc(1, 1) };
            let mut m = Media::new(&cfg);
            m.queue_erase(0);
            m.queue_erase(0);
            m.end_command(); // no host program waits: both erases go to the die
            assert_eq!(m.dies[0].erases_queued, 2);
            m.queue_host_program(0, 0);
            m.end_command();
            while m.take_released() == 0 {
                assert!(m.next_event().is_some(), "the host program must finish");
                m.step();
            }
            (m.now, cfg)
        };
        let (free, cfg) = finish(0);
        let xfer = (cfg.program_bytes() as f64 / cfg.channel_bytes_per_sec * 1e9).round() as u64;
        assert_eq!(free, xfer + cfg.nand.t_prog_ns, "no limit: the host program goes first");
        assert_eq!(finish(2).0, free, "two blocks waiting, two allowed");
        let (held, _) = finish(1);
        assert!(held >= cfg.nand.t_erase_ns + cfg.nand.t_prog_ns, "one allowed: the program waits for an erase ({held} ns)");
    }

    #[test]
    fn queued_gc_work_packs_its_order_and_operation() {
        use super::Queued;
        for (before, op) in [(0, GcOp::Read { units: 1 }), (5, GcOp::Erase), ((1 << 40) - 1, GcOp::Read { units: (1 << 23) - 1 })] {
            let q = Queued::new(before, op);
            assert_eq!(q.programs_before(), before);
            assert_eq!(format!("{:?}", q.op()), format!("{op:?}"));
        }
    }

    #[test]
    fn channel_books_gaps() {
        let mut c = Channel::new(super::MIN_GAP_NS);
        assert_eq!(c.book(10_000, 100), 10_000);
        assert_eq!(c.book(0, 100), 0); // a 9.9 us gap stays open (below 2 us it would close)
        assert_eq!(c.busy, vec![(0, 100), (10_000, 10_100)]);
        assert_eq!(c.book(9_950, 100), 10_100); // overlaps: goes after, merged
        assert_eq!(c.book(100, 9_000), 100); // fills the gap; the rest (< 1 us) closes
        assert_eq!(c.busy, vec![(0, 10_200)]);
        assert_eq!(c.book(13_000, 10), 13_000);
        c.prune(11_000);
        assert_eq!(&c.busy[c.head..], &[(13_000, 13_010)]);
    }

    /// A booking that extends an interval already pruned (it ended by the prune time, and the
    /// booking starts within the closing gap after it) makes it live again: a later booking
    /// must not overlap it.
    #[test]
    fn channel_extending_a_pruned_interval_keeps_it_booked() {
        let mut c = Channel::new(super::MIN_GAP_NS);
        assert_eq!(c.book(0, 100), 0);
        c.prune(100);
        assert_eq!(c.head, c.busy.len(), "the interval ended by the prune time");
        assert_eq!(c.book(150, 100), 150); // merged with the pruned interval: (0, 250)
        assert_eq!(c.book(120, 50), 250, "goes after the booking it would overlap");
    }
}
