//! A zone-aware, log-structured copy-on-write file system over a zoned namespace (ZNS or
//! host-managed SMR), in the manner of the file system of the ZNS prototype experiment
//! (reference section 5): every file of a group (a directory: files written together die
//! together) goes to the group's own open zone, data is never overwritten in place (an update
//! writes the new blocks at a write pointer and invalidates the old ones), a zone whose data is
//! all dead is reset at once, and when free zones run low host GC picks a victim zone, copies
//! its live blocks to a GC zone and resets it. The device then does no GC at all: the
//! file system's copies are the only write amplification, and they are counted here.
//!
//! Model choices (docs/model.md, "File systems"):
//! - streams: group g writes to stream g mod S, with S = the open-zone budget minus one (kept
//!   for GC copies) and at most `streams`; each stream has one open zone at a time;
//! - GC: when fewer than `gc_low_zones` zones are free, victims are taken (greedy: fewest live
//!   blocks; cost-benefit: highest (1 - u) age / (1 + u), u the live fraction, age the bytes
//!   written since the zone was last written, as LFS's cleaner) until `gc_high_zones` are free;
//!   live blocks are read and rewritten in victim order, then the victim is reset;
//! - metadata (inodes, extent maps) is kept on a conventional namespace in the prototype and is
//!   not modelled; neither is a page cache: every write goes down at once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use wafsim_core::blockdev::ZoneAction;
use wafsim_core::fastdiv::FastDiv;
use wafsim_core::{Io, Op, Pid};
use wafsim_core::pipeline::{FileId, FileOp};

use super::conventional::{check_blocks, FsError};

/// Victim choice of the file system's GC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcVictim {
    /// Fewest live blocks.
    Greedy,
    /// Highest (1 - u) * age / (1 + u) (Rosenblum & Ousterhout, "The design and implementation
    /// of a log-structured file system", SOSP 1991).
    CostBenefit,
}

/// Figures of a zoned log-structured file system. Zones are the device's: zone `z` starts at
/// byte `z * zone_bytes` and takes `zone_capacity` bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ZonedFsConfig {
    /// Namespace of the zoned device.
    pub ns: u32,
    /// Zones of the namespace.
    pub zones: u32,
    /// Leading conventional zones the file system leaves alone (metadata lives elsewhere).
    pub first_zone: u32,
    /// Zone size (the stride between zone starts), bytes.
    pub zone_bytes: u64,
    /// Writable bytes of a zone.
    pub zone_capacity: u64,
    /// File system block: the unit of allocation and of every I/O it sends.
    pub block_bytes: u32,
    /// Zones the device lets be open (or active) at once: the file system keeps within it.
    pub max_open_zones: u32,
    /// Most streams for file data (0 = as many as the open-zone budget allows).
    pub streams: u32,
    /// GC starts when fewer zones than this are free ...
    pub gc_low_zones: u32,
    /// ... and runs until this many are.
    pub gc_high_zones: u32,
    /// How GC picks its victim.
    pub victim: GcVictim,
}

impl ZonedFsConfig {
    /// Greedy GC from 4 free zones up to 6 (at least 2 and 3 percent of the zones).
    pub fn new(ns: u32, zones: u32, zone_bytes: u64, zone_capacity: u64, max_open_zones: u32) -> ZonedFsConfig {
        let low = (zones / 50).max(4);
        ZonedFsConfig {
            ns,
            zones,
            first_zone: 0,
            zone_bytes,
            zone_capacity,
            block_bytes: 4096,
            max_open_zones,
            streams: 0,
            gc_low_zones: low,
            gc_high_zones: low + (zones / 100).max(2),
            victim: GcVictim::Greedy,
        }
    }
}

const NONE: u32 = u32::MAX;

/// Hash of a file id for the file table: one multiply (rustc's FxHash step) instead of SipHash,
/// which took a tenth of a 4 KiB write. Ids come from the workload, not from an adversary, and
/// the table is only looked up (never iterated), so the hasher changes nothing but speed.
#[derive(Debug, Clone, Copy, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Counts at the file system's two interfaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZonedFsCounters {
    /// Bytes the application wrote.
    pub file_write_bytes: u64,
    /// Bytes the application read.
    pub file_read_bytes: u64,
    /// Bytes written to the device: file data and GC copies.
    pub dev_write_bytes: u64,
    /// GC copies among `dev_write_bytes`.
    pub gc_write_bytes: u64,
    /// Bytes read from the device (file reads and GC reads).
    pub dev_read_bytes: u64,
    /// Zones GC relocated.
    pub gc_victims: u64,
    /// Zone resets: GC victims, and zones whose data all died.
    pub zone_resets: u64,
    /// Files created.
    pub creates: u64,
    /// Files deleted.
    pub deletes: u64,
}

#[derive(Debug, Clone)]
struct File {
    group: u32,
    /// Device block of each file block.
    blocks: Vec<u32>,
}

/// Per zone: live blocks and when it was last written (file system write clock, in blocks).
#[derive(Debug, Clone, Copy)]
struct ZoneInfo {
    live: u32,
    /// Next block to write (relative to the zone start); capacity when full.
    wp: u32,
    last_write: u64,
    /// Some stream (or GC) writes here now.
    open: bool,
}

/// The file system.
#[derive(Debug, Clone)]
pub struct ZonedFs {
    cfg: ZonedFsConfig,
    /// Blocks per zone stride and capacity.
    stride: u32,
    cap: u32,
    streams: u32,
    /// Division by `stride` and by `streams` with a multiply (a hardware divide per block was a
    /// tenth of a 4 KiB write).
    stride_div: FastDiv,
    streams_div: FastDiv,
    /// log2 of the block size when it is a power of two (bytes to blocks with a shift).
    block_shift: Option<u32>,
    files: HashMap<FileId, u32, BuildHasherDefault<IdHasher>>,
    slots: Vec<Option<File>>,
    free_slots: Vec<u32>,
    /// Owner of every device block: (file slot, file block), or NONE.
    owner: Vec<(u32, u32)>,
    zone: Vec<ZoneInfo>,
    /// Free (empty) zones, taken from the front.
    free: std::collections::VecDeque<u32>,
    /// Open zone of each stream, and of GC (last entry).
    open: Vec<u32>,
    clock: u64,
    /// Live blocks over all zones.
    live_total: u64,
    counters: ZonedFsCounters,
    /// Blocks a write placed, kept between writes (no allocation per write).
    placed: Vec<u32>,
}

impl ZonedFs {
    /// An empty file system on the namespace's zones (they must be empty on the device).
    pub fn new(cfg: ZonedFsConfig) -> Result<ZonedFs, FsError> {
        let b = cfg.block_bytes as u64;
        if b == 0 || !cfg.zone_bytes.is_multiple_of(b) || !cfg.zone_capacity.is_multiple_of(b) || cfg.zone_capacity == 0 || cfg.zone_capacity > cfg.zone_bytes {
            return Err(FsError::Config("zone size and capacity must be whole blocks, 0 < capacity <= size"));
        }
        let usable = cfg.zones.saturating_sub(cfg.first_zone);
        let budget = if cfg.max_open_zones == 0 { u32::MAX } else { cfg.max_open_zones };
        if budget < 2 {
            return Err(FsError::Config("the file system needs at least two open zones (one for data, one for GC)"));
        }
        let streams = if cfg.streams == 0 { budget - 1 } else { cfg.streams.min(budget - 1) }.min(64);
        if cfg.gc_low_zones < 1 || cfg.gc_high_zones <= cfg.gc_low_zones {
            return Err(FsError::Config("need 1 <= gc_low_zones < gc_high_zones"));
        }
        if usable < cfg.gc_high_zones + streams + 2 {
            return Err(FsError::Config("too few zones: need gc_high_zones + streams + 2 zones or more"));
        }
        if cfg.zones as u64 * (cfg.zone_bytes / b) > u32::MAX as u64 {
            return Err(FsError::Config("more than 2^32 blocks: use a larger block or a smaller scale"));
        }
        let stride = (cfg.zone_bytes / b) as u32;
        let cap = (cfg.zone_capacity / b) as u32;
        let blocks = cfg.zones as usize * stride as usize;
        let zone = vec![ZoneInfo { live: 0, wp: 0, last_write: 0, open: false }; cfg.zones as usize];
        Ok(ZonedFs {
            stride,
            cap,
            streams,
            stride_div: FastDiv::new(stride),
            streams_div: FastDiv::new(streams),
            block_shift: (b & (b - 1) == 0).then(|| b.trailing_zeros()),
            files: HashMap::default(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            owner: vec![(NONE, 0); blocks],
            zone,
            free: (cfg.first_zone..cfg.zones).collect(),
            open: vec![NONE; streams as usize + 1],
            clock: 0,
            live_total: 0,
            counters: ZonedFsCounters::default(),
            placed: Vec::new(),
            cfg,
        })
    }

    /// Counts at its two interfaces.
    pub fn counters(&self) -> ZonedFsCounters {
        self.counters
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &ZonedFsConfig {
        &self.cfg
    }

    /// Live file data, bytes (all zones).
    pub fn live_bytes(&self) -> u64 {
        self.live_total as u64 * self.cfg.block_bytes as u64
    }

    /// Empty zones.
    pub fn free_zones(&self) -> usize {
        self.free.len()
    }

    /// Live blocks of zone `z`.
    pub fn live_blocks(&self, z: u32) -> u32 {
        self.zone[z as usize].live
    }

    /// Live file data of every zone, bytes, in zone order.
    pub fn zone_live_bytes(&self) -> Vec<u64> {
        self.zone.iter().map(|z| z.live as u64 * self.cfg.block_bytes as u64).collect()
    }

    /// Device byte offset of every block of `file`, in file order.
    pub fn block_offsets(&self, file: FileId) -> Option<Vec<u64>> {
        let s = *self.files.get(&file)?;
        let b = self.cfg.block_bytes as u64;
        Some(self.slots[s as usize].as_ref()?.blocks.iter().map(|&d| d as u64 * b).collect())
    }

    /// Apply one file operation; the block I/O it causes is appended to `out`, in order.
    pub fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        match *op {
            FileOp::Create { file, group } => {
                if self.files.contains_key(&file) {
                    return Err(FsError::Exists(file));
                }
                let f = File { group, blocks: Vec::new() };
                let s = match self.free_slots.pop() {
                    Some(s) => {
                        self.slots[s as usize] = Some(f);
                        s
                    }
                    None => {
                        self.slots.push(Some(f));
                        self.slots.len() as u32 - 1
                    }
                };
                self.files.insert(file, s);
                self.counters.creates += 1;
            }
            FileOp::Write { file, offset, len } => self.write(file, offset, len, out)?,
            FileOp::Read { file, offset, len } => {
                let s = *self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
                let b = self.cfg.block_bytes as u64;
                let f = self.slots[s as usize].as_ref().expect("live slot");
                let size = f.blocks.len() as u64 * b;
                let end = offset + len as u64;
                if end > size {
                    return Err(FsError::ReadPastEnd { file, offset, end, size });
                }
                let blocks: Vec<u32> = f.blocks[(offset / b) as usize..end.div_ceil(b) as usize].to_vec();
                self.emit_runs(Op::Read, &blocks, out);
                self.counters.file_read_bytes += len as u64;
            }
            // Nothing reserved: blocks are placed as they are written.
            FileOp::Close { file } => {
                self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
            }
            // The model writes at once: nothing is left to make durable (a page cache above it
            // holds writes until these).
            FileOp::Sync { .. } | FileOp::Clock { .. } => {}
            FileOp::Truncate { file, size } => {
                let b = self.cfg.block_bytes as u64;
                let s = *self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
                let have = self.slots[s as usize].as_ref().expect("live slot").blocks.len() as u64 * b;
                if size > have {
                    return Err(FsError::Hole { file, offset: size, size: have });
                }
                let keep = size.div_ceil(b) as usize;
                let cut: Vec<u32> = self.slots[s as usize].as_mut().expect("live slot").blocks.split_off(keep);
                for d in cut {
                    self.kill(d, out);
                }
            }
            FileOp::Delete { file } => {
                let s = self.files.remove(&file).ok_or(FsError::NoSuchFile(file))?;
                let f = self.slots[s as usize].take().expect("live slot");
                for &d in &f.blocks {
                    self.kill(d, out);
                }
                self.free_slots.push(s);
                self.counters.deletes += 1;
            }
        }
        Ok(())
    }

    fn write(&mut self, file: FileId, offset: u64, len: u32, out: &mut Vec<Io>) -> Result<(), FsError> {
        let b = self.cfg.block_bytes as u64;
        check_blocks(file, offset, len, self.cfg.block_bytes)?;
        let s = *self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
        let (group, size) = {
            let f = self.slots[s as usize].as_ref().expect("live slot");
            (f.group, f.blocks.len() as u64 * b)
        };
        if offset > size {
            return Err(FsError::Hole { file, offset, size });
        }
        let n = self.to_blocks(len as u64);
        let usable = (self.cfg.zones - self.cfg.first_zone) as u64 * self.cap as u64;
        // Room check: GC needs its low-water free zones, an open zone per stream and one for
        // its copies; live data may fill the rest.
        let reserve = (self.cfg.gc_low_zones as u64 + self.streams as u64 + 1) * self.cap as u64;
        let live = self.live_total;
        // An update holds its new copies before the old ones die: n blocks at the peak.
        if live + n + reserve > usable {
            return Err(FsError::NoSpace { need: n * b, free: usable.saturating_sub(live + reserve) * b });
        }
        let stream = (group - self.streams_div.div(group) * self.streams) as usize;
        let first = self.to_blocks(offset);
        let mut placed = std::mem::take(&mut self.placed);
        placed.clear();
        for i in 0..n {
            if self.needs_zone(stream) {
                // What this write placed so far goes down first (GC may pick a zone it filled),
                // then GC makes room before a free zone is taken.
                self.emit_runs(Op::Write, &placed, out);
                placed.clear();
                self.make_room(out)?;
            }
            let d = self.place(stream, out)?;
            placed.push(d);
            let fb = (first + i) as u32;
            let f = self.slots[s as usize].as_mut().expect("live slot");
            let old = if (fb as usize) < f.blocks.len() {
                let o = f.blocks[fb as usize];
                f.blocks[fb as usize] = d;
                Some(o)
            } else {
                f.blocks.push(d);
                None
            };
            self.owner[d as usize] = (s, fb);
            self.zone[self.stride_div.div(d) as usize].live += 1;
            self.live_total += 1;
            if let Some(o) = old {
                self.kill(o, out);
            }
        }
        self.emit_runs(Op::Write, &placed, out);
        self.placed = placed;
        self.counters.file_write_bytes += len as u64;
        self.counters.dev_write_bytes += len as u64;
        Ok(())
    }

    /// `bytes / block_bytes`.
    #[inline]
    fn to_blocks(&self, bytes: u64) -> u64 {
        match self.block_shift {
            Some(sh) => bytes >> sh,
            None => bytes / self.cfg.block_bytes as u64,
        }
    }

    /// Whether stream `k` (or GC, the last) must take a new zone for its next block.
    fn needs_zone(&self, k: usize) -> bool {
        let z = self.open[k];
        z == NONE || self.zone[z as usize].wp == self.cap
    }

    /// The next block of stream `k`'s open zone (a new zone when it is full or there is none).
    fn place(&mut self, k: usize, out: &mut Vec<Io>) -> Result<u32, FsError> {
        let mut z = self.open[k];
        if self.needs_zone(k) {
            if z != NONE {
                self.zone[z as usize].open = false;
                // A zone that filled after its data died can go at once.
                self.maybe_reset(z, out);
            }
            // GC found no garbage outside open zones: nowhere to write.
            z = self.free.pop_front().ok_or(FsError::NoSpace { need: self.cfg.block_bytes as u64, free: 0 })?;
            self.zone[z as usize].open = true;
            self.open[k] = z;
        }
        let info = &mut self.zone[z as usize];
        let d = z * self.stride + info.wp;
        info.wp += 1;
        self.clock += 1;
        info.last_write = self.clock;
        Ok(d)
    }

    /// Block `d` no longer holds live data.
    fn kill(&mut self, d: u32, out: &mut Vec<Io>) {
        self.owner[d as usize] = (NONE, 0);
        let z = self.stride_div.div(d);
        self.zone[z as usize].live -= 1;
        self.live_total -= 1;
        self.maybe_reset(z, out);
    }

    /// Reset zone `z` if it is full, closed and holds nothing live.
    fn maybe_reset(&mut self, z: u32, out: &mut Vec<Io>) {
        let info = self.zone[z as usize];
        if info.live == 0 && info.wp == self.cap && !info.open {
            self.reset(z, out);
        }
    }

    fn reset(&mut self, z: u32, out: &mut Vec<Io>) {
        out.push(Io { op: Op::Zone(ZoneAction::Reset), ns: self.cfg.ns, offset: z as u64 * self.cfg.zone_bytes, len: 0, pid: Pid::NONE });
        self.zone[z as usize] = ZoneInfo { live: 0, wp: 0, last_write: 0, open: false };
        self.free.push_back(z);
        self.counters.zone_resets += 1;
    }

    /// Host GC: below `gc_low_zones` free zones, relocate victims until `gc_high_zones` are free.
    fn make_room(&mut self, out: &mut Vec<Io>) -> Result<(), FsError> {
        if self.free.len() >= self.cfg.gc_low_zones as usize {
            return Ok(());
        }
        while self.free.len() < self.cfg.gc_high_zones as usize {
            // A victim without garbage frees nothing (all garbage sits in open zones).
            let Some(v) = self.victim().filter(|&v| self.zone[v as usize].live < self.cap) else { return Ok(()) };
            self.relocate(v, out)?;
        }
        Ok(())
    }

    fn victim(&self) -> Option<u32> {
        let mut best: Option<(f64, u32)> = None;
        for z in self.cfg.first_zone..self.cfg.zones {
            let i = self.zone[z as usize];
            // Only full, closed zones: an open zone still fills.
            if i.open || i.wp != self.cap {
                continue;
            }
            let u = i.live as f64 / self.cap as f64;
            let score = match self.cfg.victim {
                GcVictim::Greedy => -(i.live as f64),
                GcVictim::CostBenefit => (1.0 - u) * (self.clock - i.last_write) as f64 / (1.0 + u),
            };
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, z));
            }
        }
        best.map(|(_, z)| z)
    }

    /// Copy zone `v`'s live blocks to the GC zone, then reset `v`.
    fn relocate(&mut self, v: u32, out: &mut Vec<Io>) -> Result<(), FsError> {
        let start = v * self.stride;
        let live: Vec<u32> = (start..start + self.cap).filter(|&d| self.owner[d as usize].0 != NONE).collect();
        self.emit_runs(Op::Read, &live, out);
        let gc = self.open.len() - 1;
        let mut placed = Vec::with_capacity(live.len());
        for &d in &live {
            let (s, fb) = self.owner[d as usize];
            let nd = self.place(gc, out)?;
            self.owner[nd as usize] = (s, fb);
            self.owner[d as usize] = (NONE, 0);
            self.slots[s as usize].as_mut().expect("owner is live").blocks[fb as usize] = nd;
            self.zone[self.stride_div.div(nd) as usize].live += 1;
            placed.push(nd);
        }
        self.zone[v as usize].live = 0;
        self.emit_runs(Op::Write, &placed, out);
        let bytes = live.len() as u64 * self.cfg.block_bytes as u64;
        self.counters.gc_write_bytes += bytes;
        self.counters.dev_write_bytes += bytes;
        self.counters.gc_victims += 1;
        self.reset(v, out);
        Ok(())
    }

    /// One command per run of consecutive device blocks.
    fn emit_runs(&mut self, op: Op, blocks: &[u32], out: &mut Vec<Io>) {
        let b = self.cfg.block_bytes as u64;
        let mut i = 0;
        while i < blocks.len() {
            let mut j = i + 1;
            // A command stays inside one zone (a write crossing into the next zone is a Zone
            // Boundary Error even where capacity = size and the blocks are consecutive).
            while j < blocks.len() && blocks[j] == blocks[j - 1] + 1 && self.stride_div.div(blocks[j]) * self.stride != blocks[j] && (j - i) < (1 << 16) {
                j += 1;
            }
            let len = (j - i) as u64 * b;
            out.push(Io { op, ns: self.cfg.ns, offset: blocks[i] as u64 * b, len: len as u32, pid: Pid::NONE });
            if op == Op::Read {
                self.counters.dev_read_bytes += len;
            }
            i = j;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u64 = 4096;

    /// 16 zones of 16 blocks (capacity 12), 4 open zones: 3 streams + GC.
    fn small() -> ZonedFs {
        ZonedFs::new(small_config()).unwrap()
    }

    fn small_config() -> ZonedFsConfig {
        let mut c = ZonedFsConfig::new(0, 16, 16 * B, 12 * B, 4);
        c.gc_low_zones = 2;
        c.gc_high_zones = 3;
        c
    }

    fn op(fs: &mut ZonedFs, o: FileOp) -> Vec<Io> {
        let mut out = Vec::new();
        fs.apply(&o, &mut out).unwrap();
        out
    }

    #[test]
    fn groups_write_to_their_own_zones_and_dead_zones_reset() {
        let mut fs = small();
        op(&mut fs, FileOp::Create { file: 1, group: 0 });
        op(&mut fs, FileOp::Create { file: 2, group: 1 });
        let a = op(&mut fs, FileOp::Write { file: 1, offset: 0, len: 8 * B as u32 });
        let b = op(&mut fs, FileOp::Write { file: 2, offset: 0, len: 4 * B as u32 });
        assert_eq!((a[0].offset, a[0].len), (0, 8 * B as u32));
        assert_eq!((b[0].offset, b[0].len), (16 * B, 4 * B as u32), "group 1 in its own zone");
        // File 1 grows past its zone's capacity: the rest goes to a new zone.
        let c = op(&mut fs, FileOp::Write { file: 1, offset: 8 * B, len: 8 * B as u32 });
        let got: Vec<_> = c.iter().map(|i| (i.offset / B, i.len as u64 / B)).collect();
        assert_eq!(got, vec![(8, 4), (32, 4)]);
        // Deleting file 1 kills all of zone 0 (full, closed): it is reset at once.
        let d = op(&mut fs, FileOp::Delete { file: 1 });
        assert_eq!(d, vec![Io { op: Op::Zone(ZoneAction::Reset), ns: 0, offset: 0, len: 0, pid: Pid::NONE }]);
        assert_eq!(fs.counters().zone_resets, 1);
    }

    #[test]
    fn updates_are_copy_on_write_and_gc_copies_only_live_blocks() {
        let mut fs = ZonedFs::new(ZonedFsConfig { streams: 1, ..small_config() }).unwrap();
        op(&mut fs, FileOp::Create { file: 1, group: 0 });
        op(&mut fs, FileOp::Write { file: 1, offset: 0, len: 12 * B as u32 });
        // Rewrite every other block of the full zone 0: 6 stay live there.
        for k in (0..12).step_by(2) {
            let w = op(&mut fs, FileOp::Write { file: 1, offset: k * B, len: B as u32 });
            assert!(w[0].offset >= 16 * B, "never in place");
        }
        assert_eq!(fs.live_blocks(0), 6);
        // A cold file growing and a hot block rewritten in turn: every later zone ends half live
        // too, until free zones run low and GC starts.
        op(&mut fs, FileOp::Create { file: 2, group: 0 });
        op(&mut fs, FileOp::Create { file: 3, group: 0 });
        op(&mut fs, FileOp::Write { file: 3, offset: 0, len: B as u32 });
        let mut gc_out = Vec::new();
        let mut off = 0;
        while fs.counters().gc_victims == 0 {
            gc_out = op(&mut fs, FileOp::Write { file: 2, offset: off, len: B as u32 });
            gc_out.extend(op(&mut fs, FileOp::Write { file: 3, offset: 0, len: B as u32 }));
            off += B;
        }
        // Every victim is a zone with 6 live blocks (the fewest; ties to the lowest zone, so zone 0
        // first); two victims fill one GC zone, so freeing zones until 3 are free takes several.
        let c = fs.counters();
        assert!(c.gc_victims >= 2, "{c:?}");
        assert_eq!(c.gc_write_bytes, c.gc_victims * 6 * B);
        let reads: u64 = gc_out.iter().filter(|i| i.op == Op::Read).map(|i| i.len as u64).sum();
        assert_eq!(reads, c.gc_write_bytes, "GC reads what it rewrites");
        let resets: Vec<u64> = gc_out.iter().filter(|i| i.op == Op::Zone(ZoneAction::Reset)).map(|i| i.offset / (16 * B)).collect();
        assert_eq!(resets.len() as u64, c.gc_victims);
        assert_eq!(resets[0], 0, "zone 0 goes first");
        // GC ran until 3 zones were free, then the write took one.
        assert!(fs.free_zones() >= 2);
        // File 1 still reads back from 12 distinct blocks, none in zone 0.
        let offs = fs.block_offsets(1).unwrap();
        assert_eq!(offs.len(), 12);
        assert!(offs.iter().all(|&o| o >= 16 * B));
        let mut u = offs.clone();
        u.sort();
        u.dedup();
        assert_eq!(u.len(), 12);
    }

    #[test]
    fn a_full_file_system_refuses_writes_before_gc_starves() {
        let mut fs = small();
        op(&mut fs, FileOp::Create { file: 1, group: 0 });
        let mut err = None;
        for k in 0..1000u64 {
            let mut out = Vec::new();
            if let Err(e) = fs.apply(&FileOp::Write { file: 1, offset: k * B, len: B as u32 }, &mut out) {
                err = Some(e);
                break;
            }
        }
        assert!(matches!(err, Some(FsError::NoSpace { .. })), "{err:?}");
        assert!(ZonedFs::new(ZonedFsConfig::new(0, 4, 16 * B, 12 * B, 4)).is_err(), "too few zones");
    }
}
