//! Reclaim: watermarks, victim choice, the three cases, and copies in kcopyd pieces
//! (`dm-zoned-reclaim.c`: `dmz_reclaim_percentage`, `dmz_should_reclaim`, `dmz_reclaim_work`,
//! `dmz_do_reclaim`, `dmz_reclaim_copy`, `dmz_reclaim_align_wp`, `dmz_reclaim_buf`,
//! `dmz_reclaim_seq_data`, `dmz_reclaim_rnd_data`, `dmz_reclaim_empty`; `dm-zoned-metadata.c`:
//! `dmz_get_zone_for_reclaim`, `dmz_get_seq_zone_for_reclaim`, `dmz_get_rnd_zone_for_reclaim`,
//! `dmz_alloc_zone`, `dmz_copy_valid_blocks`, `dmz_merge_valid_blocks`; `dm-kcopyd.c` for the
//! sub-job split).
//!
//! There is one worker per disk (the regular device's worker never reclaims). A worker reclaims
//! one zone at a time as a job: choose and lock a victim, allocate a destination if needed, copy
//! the source's valid extents one by one (each in pieces of the kcopyd sub-job size, zero-filling
//! holes before a sequential destination's write pointer), then update bitmaps and mapping, free
//! the emptied zone and flush the metadata. [`DmZoned::reclaim_step_worker`] emits one piece of
//! that work per call, so a timed driver can interleave user I/O and several workers; user I/O
//! to a chunk under reclaim stalls and makes the job stop at its next extent boundary, as the
//! kernel's `DMZ_RECLAIM_TERMINATE` does.

use super::config::BLOCK_SHIFT;
use super::zones::{
    l_map_rnd, l_map_seq, l_unmap_rnd, ZoneKind, F_BUF, F_RECLAIM, L_MAP_CACHE, L_RESERVED, L_UNMAP_CACHE,
};
use super::{DevIo, DmZoned, IoClass, NONE};
use wafsim_core::Op;

/// `DMZ_RECLAIM_LOW_UNMAP_ZONES`: a busy target reclaims at or below this percentage.
pub const LOW_UNMAP_PERCENT: u32 = 30;
/// `DMZ_RECLAIM_HIGH_UNMAP_ZONES`: a busy target never reclaims at or above this percentage.
pub const HIGH_UNMAP_PERCENT: u32 = 50;

/// Which of the reclaim cases of `dmz_do_reclaim` a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReclaimCase {
    /// A cache/random data zone without valid blocks is unmapped and freed.
    Empty,
    /// A cache/random data zone is copied into a free sequential zone (or, failing that, a
    /// reserved zone, or with a cache device a free conventional zone) and the chunk remapped.
    RndData,
    /// A buffer zone whose valid blocks all lie at or past its sequential data zone's write
    /// pointer is appended to that zone (holes zero-filled) and freed.
    Buf,
    /// A sequential data zone's valid blocks are merged into its buffer zone, which becomes the
    /// chunk's data zone; the sequential zone is reset and freed.
    SeqData,
}

/// What one reclaim step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimProgress {
    /// Emitted a zero-fill write of `bytes` before a sequential destination's write pointer.
    ZeroFill {
        /// Worker (disk index).
        worker: u32,
        /// Bytes zero-filled.
        bytes: u64,
    },
    /// Emitted one kcopyd piece: a read of `bytes` and the write of the same bytes.
    Copy {
        /// Worker (disk index).
        worker: u32,
        /// Bytes copied.
        bytes: u64,
    },
    /// A zone reclaim completed: mapping updated, zone freed (and reset), metadata flushed, all
    /// emitted in this step.
    Done {
        /// Worker (disk index).
        worker: u32,
        /// The chunk reclaimed.
        chunk: u32,
        /// The case.
        case: ReclaimCase,
    },
    /// The job stopped because user I/O needs the chunk (`-EINTR`); a destination zone it had
    /// taken was freed (and reset).
    Aborted {
        /// Worker (disk index).
        worker: u32,
        /// The chunk.
        chunk: u32,
    },
    /// Reclaim was due but no zone could be locked (`dmz_do_reclaim` returns `-EBUSY`).
    NoVictim {
        /// Worker (disk index).
        worker: u32,
    },
    /// The victim's data has nowhere to go: no free sequential, reserved or (with a cache
    /// device) random zone (`-ENOSPC`).
    NoSpace {
        /// Worker (disk index).
        worker: u32,
    },
}

/// Reclaim counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReclaimStats {
    /// Zones reclaimed per case: Empty, RndData, Buf, SeqData.
    pub zones: [u64; 4],
    /// Jobs aborted by user I/O.
    pub aborted: u64,
    /// Attempts without a victim.
    pub no_victim: u64,
    /// Attempts without a destination zone.
    pub no_space: u64,
    /// Blocks copied.
    pub copied_blocks: u64,
    /// Blocks zero-filled.
    pub zero_blocks: u64,
    /// RndData jobs whose destination was a reserved zone.
    pub reserved_used: u64,
    /// RndData jobs whose destination was a conventional zone of a disk.
    pub rnd_fallback: u64,
}

impl ReclaimStats {
    /// All zones reclaimed.
    pub fn total_zones(&self) -> u64 {
        self.zones.iter().sum()
    }
}

fn case_index(c: ReclaimCase) -> usize {
    match c {
        ReclaimCase::Empty => 0,
        ReclaimCase::RndData => 1,
        ReclaimCase::Buf => 2,
        ReclaimCase::SeqData => 3,
    }
}

/// u64 words of a drive image's reclaim state before the jobs (round robin, statistics), and
/// per job.
const RECLAIM_WORDS: usize = 12;
const JOB_WORDS: usize = 13;

/// One zone reclaim in progress.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    case: ReclaimCase,
    chunk: u32,
    /// The locked data zone.
    dzone: u32,
    src: u32,
    dst: u32,
    /// Copy source scan end (`wp` of a sequential source, else the zone size).
    end_block: u32,
    /// Next block to scan for a valid extent.
    block: u32,
    /// Current extent: next block to copy and its end.
    ext: Option<(u32, u32)>,
    /// Buf case: the data zone's write pointer before the copy (merge start).
    merge_from: u32,
    terminate: bool,
}

/// Per-worker jobs and counters.
#[derive(Debug, Clone)]
pub(crate) struct ReclaimState {
    jobs: Vec<Option<Job>>,
    next: u32,
    pub stats: ReclaimStats,
}

impl ReclaimState {
    pub fn new(workers: usize) -> ReclaimState {
        ReclaimState { jobs: vec![None; workers], next: 0, stats: ReclaimStats::default() }
    }

    /// Ask the job holding data zone `dz` to stop at its next extent; returns its worker.
    pub fn request_terminate(&mut self, dz: u32) -> u32 {
        for (w, j) in self.jobs.iter_mut().enumerate() {
            if let Some(j) = j {
                if j.dzone == dz {
                    j.terminate = true;
                    return w as u32;
                }
            }
        }
        unreachable!("zone {dz} is locked for reclaim without a job")
    }

    /// u64 words of [`ReclaimState::image_words`].
    pub fn image_len(&self) -> usize {
        RECLAIM_WORDS + JOB_WORDS * self.jobs.len()
    }

    /// The state in a drive image (`image.rs`): the round robin, the statistics, then per
    /// worker its job, a presence word first.
    pub fn image_words(&self) -> Vec<u64> {
        let ReclaimStats { zones, aborted, no_victim, no_space, copied_blocks, zero_blocks, reserved_used, rnd_fallback } = self.stats;
        let mut v = vec![self.next as u64];
        v.extend(zones);
        v.extend([aborted, no_victim, no_space, copied_blocks, zero_blocks, reserved_used, rnd_fallback]);
        for j in &self.jobs {
            v.extend(match j {
                None => [0; JOB_WORDS],
                Some(j) => {
                    let (ext, a, b) = j.ext.map_or((0, 0, 0), |(a, b)| (1, a, b));
                    let w = |x: u32| x as u64;
                    [1, case_index(j.case) as u64, w(j.chunk), w(j.dzone), w(j.src), w(j.dst), w(j.end_block), w(j.block), ext, w(a), w(b), w(j.merge_from), j.terminate as u64]
                }
            });
        }
        v
    }

    /// The state back from [`ReclaimState::image_words`] (`image_len` words); `None` when they
    /// cannot be a state of this many workers.
    pub fn load_image_words(&mut self, v: &[u64]) -> Option<()> {
        let s = &v[..RECLAIM_WORDS];
        self.next = u32::try_from(s[0]).ok().filter(|&n| (n as usize) < self.jobs.len())?;
        self.stats = ReclaimStats {
            zones: [s[1], s[2], s[3], s[4]],
            aborted: s[5],
            no_victim: s[6],
            no_space: s[7],
            copied_blocks: s[8],
            zero_blocks: s[9],
            reserved_used: s[10],
            rnd_fallback: s[11],
        };
        let cases = [ReclaimCase::Empty, ReclaimCase::RndData, ReclaimCase::Buf, ReclaimCase::SeqData];
        for (job, w) in self.jobs.iter_mut().zip(v[RECLAIM_WORDS..].chunks_exact(JOB_WORDS)) {
            let u = |x: u64| u32::try_from(x).ok();
            *job = match w[0] {
                0 => None,
                1 => Some(Job {
                    case: *cases.get(w[1] as usize)?,
                    chunk: u(w[2])?,
                    dzone: u(w[3])?,
                    src: u(w[4])?,
                    dst: u(w[5])?,
                    end_block: u(w[6])?,
                    block: u(w[7])?,
                    ext: if w[8] == 1 { Some((u(w[9])?, u(w[10])?)) } else { None },
                    merge_from: u(w[11])?,
                    terminate: w[12] == 1,
                }),
                _ => return None,
            };
        }
        Some(())
    }

    /// Whether every job's zones are below `zones` (or none) and its chunk below `chunks` (a
    /// loaded image's check).
    pub fn jobs_within(&self, zones: u32, chunks: u32) -> bool {
        self.jobs.iter().flatten().all(|j| [j.dzone, j.src, j.dst].iter().all(|&z| z == NONE || z < zones) && j.chunk < chunks)
    }

    /// Whether zone `z` is the victim, source or destination of a job.
    pub fn zone_in_job(&self, z: u32) -> bool {
        self.jobs.iter().flatten().any(|j| j.dzone == z || j.src == z || j.dst == z)
    }
}

impl DmZoned {
    /// The unmapped-zone percentage worker `worker` sees (`dmz_reclaim_percentage`): over the
    /// cache zones with a cache device, else over the worker's disk's random zones; 0 when at most
    /// one zone is unmapped.
    #[inline]
    pub fn unmapped_percentage(&self, worker: u32) -> u32 {
        let z = &self.zones;
        let (total, unmapped) = if z.nr_cache > 0 {
            (z.nr_cache, z.list_len(L_UNMAP_CACHE))
        } else {
            (z.nr_rnd[worker as usize], z.list_len(l_unmap_rnd(worker)))
        };
        if unmapped <= 1 || total == 0 {
            0
        } else {
            unmapped * 100 / total
        }
    }

    /// Whether worker `worker` should reclaim a zone now (`dmz_should_reclaim`): when idle,
    /// always (there are cache or random zones); when busy, when the unmapped percentage is at
    /// most 30 (and never at 50 or more, which the first condition already implies).
    #[inline]
    pub fn should_reclaim(&self, worker: u32, idle: bool) -> bool {
        let z = &self.zones;
        let nr_reclaim = z.nr_rnd[worker as usize] + z.nr_cache;
        if idle && nr_reclaim > 0 {
            return true;
        }
        let p = self.unmapped_percentage(worker);
        if p >= HIGH_UNMAP_PERCENT {
            return false;
        }
        p <= LOW_UNMAP_PERCENT
    }

    /// kcopyd throttle (percent of time copy I/O may be in flight) worker `worker` would use now
    /// (`dmz_reclaim_work`): 100 when idle or below 15 % unmapped, else `min(75, 100 - p/2)`.
    /// The untimed model does not use it; a timed driver can.
    pub fn throttle(&self, worker: u32, idle: bool) -> u32 {
        let p = self.unmapped_percentage(worker);
        if idle || p < LOW_UNMAP_PERCENT / 2 {
            100
        } else {
            75u32.min(100 - p / 2)
        }
    }

    /// Whether any reclaim work is due: a job in progress, or a worker that should reclaim.
    #[inline]
    pub fn reclaim_needed(&self, idle: bool) -> bool {
        self.reclaim.jobs.iter().any(Option::is_some) || (0..self.workers()).any(|w| self.should_reclaim(w, idle))
    }

    /// Whether worker `worker` has a zone reclaim in progress.
    pub fn reclaim_active(&self, worker: u32) -> bool {
        self.reclaim.jobs[worker as usize].is_some()
    }

    /// Whether worker `worker`'s job is inside a valid extent (more kcopyd pieces of the same
    /// extent follow). A kcopyd job is one extent; its pieces may run concurrently, extents run
    /// one after another.
    pub fn reclaim_in_extent(&self, worker: u32) -> bool {
        self.reclaim.jobs[worker as usize].as_ref().is_some_and(|j| j.ext.is_some())
    }

    /// One piece of reclaim work on any worker, emitted to `out`: continue the first job in
    /// progress, else start a zone on the next worker (round robin) that should reclaim. `None`
    /// when nothing is due. Jobs run one after the other; use
    /// [`DmZoned::reclaim_step_worker`] to run workers concurrently.
    pub fn reclaim_step(&mut self, idle: bool, out: &mut Vec<DevIo>) -> Option<ReclaimProgress> {
        if let Some(w) = self.reclaim.jobs.iter().position(Option::is_some) {
            return self.reclaim_step_worker(w as u32, idle, out);
        }
        let n = self.workers();
        for k in 0..n {
            let w = (self.reclaim.next + k) % n;
            if self.should_reclaim(w, idle) {
                self.reclaim.next = (w + 1) % n;
                return self.reclaim_step_worker(w, idle, out);
            }
        }
        None
    }

    /// One piece of reclaim work of worker `worker`: continue its job, or start one if it should
    /// reclaim (`None` otherwise). Starting chooses the victim and destination and emits the
    /// first piece.
    pub fn reclaim_step_worker(&mut self, worker: u32, idle: bool, out: &mut Vec<DevIo>) -> Option<ReclaimProgress> {
        if self.reclaim.jobs[worker as usize].is_none() {
            if !self.should_reclaim(worker, idle) {
                return None;
            }
            if let Err(p) = self.start_job(worker, idle) {
                return Some(p);
            }
        }
        Some(self.advance_job(worker, out))
    }

    /// Choose a victim (`dmz_get_zone_for_reclaim`).
    fn victim(&self, worker: u32, idle: bool) -> Option<u32> {
        let z = &self.zones;
        // No reserved zone left: reclaim a buffered sequential zone first, so that a random
        // zone can be reclaimed afterwards.
        if z.list_len(L_RESERVED) == 0 {
            if let Some(v) = z.iter_list(l_map_seq(worker)).find(|&s| z.bzone[s as usize] != NONE && z.lockable(s)) {
                return Some(v);
            }
        }
        let list = if z.nr_cache > 0 {
            if idle && z.list_len(L_MAP_CACHE) == 0 {
                l_map_rnd(worker)
            } else {
                L_MAP_CACHE
            }
        } else {
            l_map_rnd(worker)
        };
        // The oldest lockable zone mapped directly to a chunk wins; buffer zones only nominate
        // their data zone, the heaviest one kept.
        let skip = |dz: u32| z.kind[dz as usize] == ZoneKind::Rnd && z.disk(dz) != worker;
        let mut maxw = NONE;
        for zz in z.iter_list(list) {
            if z.has(zz, F_BUF) {
                let dz = z.bzone[zz as usize];
                if skip(dz) {
                    continue;
                }
                if maxw == NONE || z.weight[maxw as usize] < z.weight[dz as usize] {
                    maxw = dz;
                }
            } else if z.lockable(zz) {
                return Some(zz);
            }
        }
        if maxw != NONE && z.lockable(maxw) {
            return Some(maxw);
        }
        // None could be locked: the first lockable zone of any kind.
        for zz in z.iter_list(list) {
            let dz = if z.has(zz, F_BUF) {
                let dz = z.bzone[zz as usize];
                if skip(dz) {
                    continue;
                }
                dz
            } else {
                zz
            };
            if z.lockable(dz) {
                return Some(dz);
            }
        }
        None
    }

    fn start_job(&mut self, worker: u32, idle: bool) -> Result<(), ReclaimProgress> {
        let Some(dz) = self.victim(worker, idle) else {
            self.reclaim.stats.no_victim += 1;
            return Err(ReclaimProgress::NoVictim { worker });
        };
        let d = dz as usize;
        let chunk = self.zones.chunk[d];
        let zb = self.layout.zone_blocks;
        let job = if !self.zones.is_seq(dz) {
            if self.zones.weight[d] == 0 {
                Job {
                    case: ReclaimCase::Empty,
                    chunk,
                    dzone: dz,
                    src: dz,
                    dst: NONE,
                    end_block: 0,
                    block: 0,
                    ext: None,
                    merge_from: 0,
                    terminate: false,
                }
            } else {
                let reserved_before = self.zones.list_len(L_RESERVED);
                let Some(sz) = self.zones.alloc_reclaim(worker) else {
                    self.reclaim.stats.no_space += 1;
                    return Err(ReclaimProgress::NoSpace { worker });
                };
                if self.zones.list_len(L_RESERVED) < reserved_before {
                    self.reclaim.stats.reserved_used += 1;
                }
                if self.zones.kind[sz as usize] == ZoneKind::Rnd {
                    self.reclaim.stats.rnd_fallback += 1;
                }
                Job {
                    case: ReclaimCase::RndData,
                    chunk,
                    dzone: dz,
                    src: dz,
                    dst: sz,
                    end_block: zb,
                    block: 0,
                    ext: None,
                    merge_from: 0,
                    terminate: false,
                }
            }
        } else {
            let bz = self.zones.bzone[d];
            debug_assert_ne!(bz, NONE, "sequential victim without a buffer");
            let wp = self.zones.wp[d];
            match self.bitmaps.first_valid(bz, 0) {
                Some((first, _)) if first < wp => Job {
                    case: ReclaimCase::SeqData,
                    chunk,
                    dzone: dz,
                    src: dz,
                    dst: bz,
                    end_block: wp,
                    block: 0,
                    ext: None,
                    merge_from: 0,
                    terminate: false,
                },
                _ => Job {
                    case: ReclaimCase::Buf,
                    chunk,
                    dzone: dz,
                    src: bz,
                    dst: dz,
                    end_block: zb,
                    block: 0,
                    ext: None,
                    merge_from: wp,
                    terminate: false,
                },
            }
        };
        self.zones.set_flag(dz, F_RECLAIM);
        self.reclaim.jobs[worker as usize] = Some(job);
        Ok(())
    }

    /// Emit the next piece of worker `worker`'s job, or finish or abort it.
    fn advance_job(&mut self, worker: u32, out: &mut Vec<DevIo>) -> ReclaimProgress {
        let w = worker as usize;
        let mut job = self.reclaim.jobs[w].take().expect("job in progress");
        if job.ext.is_none() {
            if job.terminate {
                return self.abort_job(worker, job, out);
            }
            let next = if job.case == ReclaimCase::Empty || job.block >= job.end_block {
                None
            } else {
                self.bitmaps.first_valid(job.src, job.block).filter(|&(s, _)| s < job.end_block)
            };
            let Some((s, len)) = next else {
                return self.finish_job(worker, job, out);
            };
            job.block = s;
            job.ext = Some((s, s + len));
            if self.zones.is_seq(job.dst) {
                let wp = self.zones.wp[job.dst as usize];
                debug_assert!(wp <= s, "destination write pointer {wp} past extent start {s}");
                if wp < s {
                    // dmz_reclaim_align_wp: zero out the hole up to the extent.
                    self.emit_zone(out, job.dst, Op::Write, wp, s - wp, IoClass::ReclaimZero);
                    self.zones.wp[job.dst as usize] = s;
                    self.reclaim.stats.zero_blocks += (s - wp) as u64;
                    self.counters.gc_units += (s - wp) as u64;
                    self.reclaim.jobs[w] = Some(job);
                    return ReclaimProgress::ZeroFill { worker, bytes: ((s - wp) as u64) << BLOCK_SHIFT };
                }
            }
        }
        let (cur, end) = job.ext.expect("extent in progress");
        let n = (end - cur).min(self.layout.subjob_blocks);
        self.emit_zone(out, job.src, Op::Read, cur, n, IoClass::ReclaimRead);
        self.emit_zone(out, job.dst, Op::Write, cur, n, IoClass::ReclaimWrite);
        if self.zones.is_seq(job.dst) {
            self.zones.wp[job.dst as usize] = cur + n;
        }
        self.reclaim.stats.copied_blocks += n as u64;
        self.counters.gc_units += n as u64;
        if cur + n == end {
            job.ext = None;
            job.block = end;
        } else {
            job.ext = Some((cur + n, end));
        }
        self.reclaim.jobs[w] = Some(job);
        ReclaimProgress::Copy { worker, bytes: (n as u64) << BLOCK_SHIFT }
    }

    /// Bitmaps and mapping after the copy, free the emptied zone, flush metadata.
    fn finish_job(&mut self, worker: u32, job: Job, out: &mut Vec<DevIo>) -> ReclaimProgress {
        let zb = self.layout.zone_blocks;
        let (dz, chunk) = (job.dzone, job.chunk);
        match job.case {
            ReclaimCase::Empty => {
                self.unmap_zone(dz);
                self.zones.clear_flag(dz, F_RECLAIM);
                self.free_zone(dz, IoClass::ReclaimReset, out);
            }
            ReclaimCase::RndData => {
                let sz = job.dst;
                // dmz_copy_valid_blocks: the whole bitmap, every bitmap block dirtied.
                self.bitmaps.copy(dz, sz);
                self.zones.weight[sz as usize] = self.zones.weight[dz as usize];
                self.meta.dirty_zone_bitmap(sz);
                self.invalidate(dz, 0, zb);
                self.unmap_zone(dz);
                self.zones.clear_flag(dz, F_RECLAIM);
                self.free_zone(dz, IoClass::ReclaimReset, out);
                self.map_zone(sz, chunk);
            }
            ReclaimCase::Buf => {
                let bz = job.src;
                self.merge_valid(bz, dz, job.merge_from);
                self.invalidate(bz, 0, zb);
                self.unmap_zone(bz);
                self.zones.clear_flag(dz, F_RECLAIM);
                self.free_zone(bz, IoClass::ReclaimReset, out);
            }
            ReclaimCase::SeqData => {
                let bz = job.dst;
                self.merge_valid(dz, bz, 0);
                self.invalidate(dz, 0, zb);
                self.unmap_zone(bz);
                self.unmap_zone(dz);
                self.zones.clear_flag(dz, F_RECLAIM);
                self.free_zone(dz, IoClass::ReclaimReset, out);
                self.map_zone(bz, chunk);
            }
        }
        self.reclaim.stats.zones[case_index(job.case)] += 1;
        self.flush_metadata(out);
        ReclaimProgress::Done { worker, chunk, case: job.case }
    }

    /// Stop a job at an extent boundary: an allocated destination is freed (reset if written);
    /// copies already made stay where they are without being validated.
    fn abort_job(&mut self, worker: u32, job: Job, out: &mut Vec<DevIo>) -> ReclaimProgress {
        if job.case == ReclaimCase::RndData {
            self.free_zone(job.dst, IoClass::ReclaimReset, out);
        }
        self.zones.clear_flag(job.dzone, F_RECLAIM);
        self.reclaim.stats.aborted += 1;
        ReclaimProgress::Aborted { worker, chunk: job.chunk }
    }

    /// `dmz_merge_valid_blocks`: validate in `to` every valid extent of `from` at or after `from_block`.
    fn merge_valid(&mut self, from: u32, to: u32, from_block: u32) {
        let mut b = from_block;
        while let Some((s, n)) = self.bitmaps.first_valid(from, b) {
            self.validate(to, s, n);
            b = s + n;
        }
    }
}
