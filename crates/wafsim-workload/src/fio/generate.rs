//! `FioJob` -> [`IoSource`]: the offsets, sizes, directions and placement IDs fio would issue.
//!
//! Semantics (fio HOWTO and source, checked against fio 3.33's `--write_iolog` where noted):
//! * Region: starts at `offset + offset_increment * clone`; with a percentage in either, the
//!   start is rounded *up* to `offset_align` (default: the smallest block size), as fio's
//!   `get_start_offset` does. `size` defaults to the rest of the namespace; `size=N%` is N% of
//!   the namespace, capped to the space after the start and aligned down to the smallest block.
//! * Past the end: like fio on a block device, a region that runs past the namespace end is
//!   capped there for sequential jobs (the pass ends at the end of the device). A random job
//!   whose region starts past 0 and runs past the end is refused: fio would stop it at the
//!   first random offset past the end, after a random number of I/Os. A random job starting
//!   at 0 draws from the whole namespace.
//! * Files: without `filename=`, `nrfiles=N` lays the job's N files out back to back from the
//!   region start, each `filesize` bytes or an Nth of the size (the first ones one block larger
//!   if the division leaves whole blocks, as fio's `setup_files`), each aligned down to the
//!   smallest block size. The next file comes from `file_service_type` (default round-robin,
//!   one I/O per file). The job offset places the group of files; inside each file, fio's
//!   offset would apply again, which wafsim does not do.
//! * Passes (fio's `do_io` loop and `keep_running`): a pass ends when every file is done (a
//!   sequential file when the next block does not fit, a random file with the random map when
//!   every block was used) or, with an engine that queues I/O (libaio, io_uring, ...), after
//!   `size` bytes (for random writes with `norandommap`, after `max(size, io_size)`). The job ends after `loops` passes, or earlier when it has moved
//!   `io_size` (default `size`) x `loops` bytes or done `number_ios` x `loops` I/Os; after the
//!   loops it continues while less than `io_size` was moved, as fio does. So `rw=write:4k`
//!   (holes) without `io_size` does one pass of half the blocks per loop, and `io_size` larger
//!   than `size` wraps. A `time_based` job runs passes until its runtime (timing model) or its
//!   `io_size`/`number_ios` stand-in (untimed) ends.
//! * Sequential: fio's `get_next_seq_offset`, per direction and file: the next offset is the
//!   end of the last I/O plus the `rw=...:<n>` skip, and a pass ends when it is past the
//!   region (with a fixed block size the last block may cross the region end, as in fio, but
//!   not the namespace end); a negative skip reads backwards and wraps
//!   from the start to the region end (`rw=read:-8k` with bs=4k reads 0, then end-8k,
//!   end-12k, ... down to 0, then end-8k again, verified with fio 3.33).
//! * Random: offsets aligned to the smallest block size of the job. Without `norandommap`,
//!   uniform offsets come from a per-pass keyed permutation (see [`super::dist::Permutation`]),
//!   so with a fixed block size every block is touched exactly once per pass. Non-uniform
//!   distributions disable the map, as in fio. `rw=randX:<n>` issues one random offset every
//!   n I/Os (a job-wide counter, the first I/O random; `:0` never random) and the others per
//!   `rw_sequencer`; `percentage_random` decides on the random ones. A sequential offset that
//!   does not fit falls back to a random one.
//! * Mixed directions: each I/O is a read with probability `rwmixread` %.
//! * Placement: with `fdp=1` / `dataplacement=fdp` (or `streams`), writes carry
//!   `Pid::new(0, id)`, `id` chosen from `plids`/`fdp_pli` by `plid_select` (default
//!   round-robin). Without a list, the ids are `0..available_plids` if the caller gives that
//!   count, else just 0. Reads and trims carry `Pid::NONE`. A drive without the requested kind
//!   of placement ([`SourceParams::placement`]) is an error, as in fio.
//! * `zonemode=strided` (also `zonesize` without `zonemode`, as in fio): fio's
//!   `setup_strided_zone_mode`: after `zonesize` bytes of I/O the region start moves on by
//!   `zonerange + zoneskip` (back to the job's start past the namespace end); random offsets
//!   fall in the `zonerange` bytes from there; the random map restarts every `zonerange`
//!   bytes. A new pass starts again at the job's start.
//! * `zonemode=zbd`: see [`super::zbd`].

use std::borrow::Cow;
use std::collections::VecDeque;

use wafsim_core::{Io, Op, Pid, Rng};

use super::dist::{Permutation, Picker, Placement, RandomMap, Zipf};
use super::job::FioJob;
use super::options::{DataPlacement, Distribution, FileService, PlidSelect, RwMode, RwSequencer, ZoneMode};
use super::size::{BlockSize, SizeSpec};
use super::zbd::{self, Adjusted, JobIdent, JobZones, Layout, ZbdJob, ZbdZones};
use super::FioError;
use crate::IoSource;

/// What data placement the drive behind a namespace supports. fio fails a job that asks for a
/// kind the drive lacks (it cannot fetch FDP reclaim unit handles, or the drive rejects the
/// stream directive); wafsim refuses it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DevicePlacement {
    /// Not known: every placement request is accepted (the behaviour before this was known).
    #[default]
    Unknown,
    /// A conventional drive: neither FDP nor streams.
    NoPlacement,
    /// Flexible Data Placement.
    Fdp,
    /// NVMe streams directives.
    Streams,
}

/// Where and how a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceParams {
    /// Namespace index carried by every generated I/O.
    pub ns: u32,
    /// Namespace size in bytes (resolves `size=98%` and friends).
    pub ns_bytes: u64,
    /// Base seed; `randseed=` in the job replaces it.
    pub seed: u64,
    /// Number of placement ids (FDP placement handles / streams) the namespace offers; used
    /// as the default id list and to validate `plids`.
    pub available_plids: Option<u16>,
    /// The timing model runs the job: a time_based job is then bounded by its runtime (and
    /// number_ios), not by io_size.
    pub timed: bool,
    /// The placement the namespace's drive supports (default: unknown, anything goes).
    pub placement: DevicePlacement,
    /// Zone geometry when the namespace is zoned (fio `zonemode=zbd` reads it from the device).
    pub zones: Option<wafsim_core::blockdev::ZoneGeometry>,
}

const READ: usize = 0;
const WRITE: usize = 1;
const TRIM: usize = 2;

/// One file of a job: where its I/O region lies and fio's view of it.
#[derive(Debug, Clone, Copy)]
struct FileSpan {
    /// Absolute start of the I/O region on the namespace.
    start: u64,
    /// Length of the I/O region.
    len: u64,
    /// fio's `file_offset` and `real_file_size`, used by the sequential-offset rules (for the
    /// single target: the region start and the namespace size; for laid-out files: 0 and the
    /// file length).
    fio_offset: u64,
    real: u64,
}

/// Everything that follows from the job and the namespace, before any I/O is generated.
#[derive(Debug, Clone)]
struct Plan {
    files: Vec<FileSpan>,
    bs: [BlockSize; 3],
    align: u64,
    max_bs: u64,
    /// Bytes after which a pass ends (fio's `total_bytes`).
    pass_cap: u64,
    /// Bytes after which the job ends (`io_size` or `size`, times `loops`).
    bytes_total: u64,
    /// `io_size` or `size`: after the loops, passes continue while less was moved.
    amount: u64,
    io_size_given: bool,
    ios_total: u64,
    /// Number of passes (`loops`); `None` for time-based jobs (passes until the end).
    loops: Option<u32>,
}

impl FioJob {
    fn err(&self, message: String) -> FioError {
        FioError::Job { file: self.file.clone(), line: self.line, job: self.name.clone(), message }
    }

    /// The block-size setting per direction (`bssplit` > `bsrange` > `bs` > 4096).
    pub fn block_sizes(&self) -> [BlockSize; 3] {
        std::array::from_fn(|d| {
            if let Some(s) = &self.bssplit[d] {
                BlockSize::Split(s.clone())
            } else if let Some((lo, hi)) = self.bsrange[d] {
                if lo == hi {
                    BlockSize::Fixed(lo)
                } else {
                    BlockSize::Range(lo, hi)
                }
            } else {
                BlockSize::Fixed(self.bs[d].unwrap_or(4096))
            }
        })
    }

    fn used_ddirs(&self) -> &'static [usize] {
        match self.rw {
            RwMode::Read | RwMode::RandRead => &[READ],
            RwMode::Write | RwMode::RandWrite => &[WRITE],
            RwMode::Trim | RwMode::RandTrim => &[TRIM],
            RwMode::ReadWrite | RwMode::RandRw => &[READ, WRITE],
            // trim and write the same block with the write block size
            RwMode::TrimWrite | RwMode::RandTrimWrite => &[WRITE],
        }
    }

    /// fio's `get_start_offset`: offset plus the clone's increment, rounded up to the
    /// alignment when a percentage is involved.
    fn start_offset(&self, ns_bytes: u64, min_bs: u64) -> Result<u64, FioError> {
        let unresolved = |s: &Option<SizeSpec>| matches!(s, Some(SizeSpec::Zones(_)));
        if unresolved(&self.offset) || unresolved(&self.offset_increment) {
            return Err(self.err("a zone count (e.g. offset=2z) needs zonesize=".into()));
        }
        let is_pct = |s: &Option<SizeSpec>| matches!(s, Some(SizeSpec::Percent(_)));
        let align = is_pct(&self.offset) || is_pct(&self.offset_increment);
        let base = self.offset.map_or(0, |o| o.resolve_raw(ns_bytes));
        let inc = self.offset_increment.map_or(0, |o| o.resolve_raw(ns_bytes));
        let raw = inc
            .checked_mul(self.clone_index as u64)
            .and_then(|x| x.checked_add(base))
            .ok_or_else(|| self.err("offset + offset_increment overflows".into()))?;
        if !align {
            return Ok(raw);
        }
        let a = self.offset_align.unwrap_or(min_bs).max(1);
        raw.div_ceil(a).checked_mul(a).ok_or_else(|| self.err("offset + offset_increment overflows".into()))
    }

    /// The job's files and the size fio would use for the whole job (`o->size`).
    fn layout(&self, ns_bytes: u64, start: u64, min_bs: u64) -> Result<(Vec<FileSpan>, u64), FioError> {
        if let Some(SizeSpec::Zones(_)) = self.size {
            return Err(self.err("a zone count (e.g. size=4z) needs zonesize=".into()));
        }
        let room = ns_bytes - start;
        let size = match self.size {
            // fio: size=100% is the whole device after the offset, not aligned (its setup_files
            // skips the percentage when it is 100); N% of the device is capped to what is left
            // after the offset and aligned down to the smallest block size.
            Some(SizeSpec::Percent(p)) if p >= 100.0 => room,
            Some(SizeSpec::Percent(p)) => SizeSpec::Percent(p).resolve_raw(ns_bytes).min(room) / min_bs * min_bs,
            Some(s) => s.resolve(ns_bytes, 1),
            None => room,
        };
        if self.nrfiles <= 1 {
            return self.single_target(ns_bytes, start, size).map(|f| (vec![f], size));
        }
        self.laid_out_files(start, room, size, min_bs)
    }

    /// The whole namespace as fio's one target file: a region past the end is capped there.
    fn single_target(&self, ns_bytes: u64, start: u64, size: u64) -> Result<FileSpan, FioError> {
        let len = match self.filesize {
            // filesize on the device: the region ends at filesize (fio's setup_files)
            Some((lo, hi)) if lo != hi => {
                return Err(self.err(format!("filesize={lo}-{hi} picks random file sizes; wafsim models a fixed filesize only")))
            }
            Some((fs, _)) => fs.checked_sub(start).filter(|&l| l > 0).ok_or_else(|| {
                self.err(format!("the start offset {start} is at or past filesize={fs}"))
            })?,
            None => size,
        };
        let room = ns_bytes - start;
        if len > room && self.rw.is_random() && start > 0 {
            return Err(self.err(format!(
                "region offset {start} + size {len} runs past the namespace end ({ns_bytes} bytes): fio would stop this random job at the first offset past the end, after a random number of I/Os; reduce size or offset"
            )));
        }
        Ok(FileSpan { start, len: len.min(room), fio_offset: start, real: ns_bytes })
    }

    /// `nrfiles` files back to back from the region start.
    fn laid_out_files(&self, start: u64, room: u64, size: u64, min_bs: u64) -> Result<(Vec<FileSpan>, u64), FioError> {
        if let FileService::Skewed(t) = &self.file_service {
            return Err(self.err(format!(
                "file_service_type={t} picks files by a skewed distribution; wafsim models roundrobin, sequential and random"
            )));
        }
        let n = self.nrfiles as u64;
        let (lens, job_size): (Vec<u64>, u64) = match self.filesize {
            Some((lo, hi)) if lo != hi => {
                return Err(self.err(format!("filesize={lo}-{hi} picks random file sizes; wafsim models a fixed filesize only")))
            }
            Some((fs, _)) => {
                let total = fs.saturating_mul(n);
                // fio: size caps the I/O of the job, never the files
                let job = if self.size.is_some() && size < total { size } else { total };
                (vec![fs; n as usize], job)
            }
            None => {
                // fio's setup_files: size / nrfiles each, the remainder in whole blocks to the
                // first files. The files are wafsim's to place, so they are capped to the room.
                let total = size.min(room);
                let fs = total / n;
                let extra = (total - fs * n) / min_bs;
                ((0..n).map(|i| fs + if i < extra { min_bs } else { 0 }).collect(), total)
            }
        };
        let mut files = Vec::with_capacity(lens.len());
        let mut at = start;
        for len in lens {
            // The tail below the smallest block can hold no I/O; dropping it keeps the next
            // file block-aligned.
            let len = len / min_bs * min_bs;
            files.push(FileSpan { start: at, len, fio_offset: 0, real: len });
            at += len;
        }
        if at - start > room {
            return Err(self.err(format!(
                "nrfiles={n} files of {} bytes from offset {start} need {} bytes, past the namespace end ({} bytes)",
                files[0].len,
                at - start,
                start + room
            )));
        }
        Ok((files, job_size))
    }

    fn plan(&self, ns_bytes: u64, timed: bool) -> Result<Plan, FioError> {
        let t = &self.timing;
        if !timed && t.time_based && self.io_size.is_none() && self.number_ios.is_none() {
            return Err(self.err(format!(
                "the amount of I/O is set only by runtime (time_based, runtime={}s), which needs the timing model: enable it ([timing] enabled = true in the experiment) or add io_size=<bytes> (or number_ios=<n>) to bound the job",
                t.runtime_ns.unwrap_or(0) / 1_000_000_000
            )));
        }
        let bs = self.block_sizes();
        let used = self.used_ddirs();
        let min_bs = used.iter().map(|&d| bs[d].min()).min().unwrap_or(4096).max(1);
        let max_bs = used.iter().map(|&d| bs[d].max()).max().unwrap_or(4096);
        for &d in used {
            if bs[d].max() > u32::MAX as u64 {
                return Err(self.err(format!("block size {} does not fit a 32-bit I/O length", bs[d].max())));
            }
        }
        if let (Some(skip), false) = (self.rw_modifier, self.rw.is_random()) {
            if skip < 0 && skip.unsigned_abs() >= ns_bytes {
                return Err(self.err(format!("the backward skip {skip} is larger than the namespace")));
            }
        }
        let start = self.start_offset(ns_bytes, min_bs)?;
        if start >= ns_bytes {
            return Err(self.err(format!("start offset {start} is at or past the namespace end ({ns_bytes} bytes)")));
        }
        let (files, job_size) = self.layout(ns_bytes, start, min_bs)?;
        if let Some(small) = files.iter().find(|f| f.len < max_bs) {
            return Err(self.err(format!("region of {} bytes is smaller than the block size {max_bs}", small.len)));
        }
        if let Some(SizeSpec::Zones(_)) = self.io_size {
            return Err(self.err("a zone count (e.g. io_size=4z) needs zonesize=".into()));
        }
        // zoned_abs zones are absolute: past the end of a file they would be cut short
        // silently, and the access percentages would no longer mean what the job says.
        for d in used.iter().copied() {
            if let Distribution::Zoned(zones) = &self.random_distribution[d] {
                let abs: u64 = zones.iter().map(|(_, s)| if let SizeSpec::Bytes(b) = s { *b } else { 0 }).fold(0u64, u64::saturating_add);
                let file = files.iter().map(|f| f.len).min().unwrap_or(0);
                if abs > file {
                    return Err(self.err(format!(
                        "random_distribution=zoned_abs: the zone sizes add up to {abs} bytes, more than the {file} bytes the job addresses (its file, or size=), so the zones past its end would be cut short and the access percentages not mean what they say; make the sizes fit, or use zoned: with percentages"
                    )));
                }
            }
        }
        let region: u64 = files.iter().map(|f| f.len).sum();
        let io_size = self.io_size.map(|s| s.resolve(region, 1));
        let amount = io_size.unwrap_or(job_size);
        let loops = self.loops.max(1) as u64;
        // fio ignores time_based without a runtime ("time_based requires a runtime").
        let time_based = t.time_based && (!timed || t.runtime_ns.is_some());
        let bytes_total = if time_based && timed {
            u64::MAX
        } else if time_based {
            // fio loops over the region until the runtime ends; without the timing model,
            // io_size (if given) stands in for the runtime, and number_ios bounds the job as in fio.
            io_size.unwrap_or(u64::MAX)
        } else {
            amount.saturating_mul(loops)
        };
        let random_write_nomap = self.rw.is_random() && self.rw.writes() && self.norandommap;
        // fio counts a pass's bytes only for I/O an engine queues (backend.c io_queue_event),
        // so with the synchronous engines (fio's default psync included) passes end only when
        // the files are done (fio 3.33: rw=read:-8k loops=2 reads on with psync, restarts
        // with libaio).
        let sync_engine = matches!(
            t.ioengine.as_deref().unwrap_or("psync").to_ascii_lowercase().as_str(),
            "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" | "mmap" | "splice"
        );
        let pass_cap = if time_based || sync_engine {
            u64::MAX
        } else if random_write_nomap {
            job_size.max(io_size.unwrap_or(0))
        } else {
            job_size
        };
        // fio counts number_ios per loop, and a trim+write pair as two I/Os.
        let pair = if matches!(self.rw, RwMode::TrimWrite | RwMode::RandTrimWrite) { 2 } else { 1 };
        let ios_total = self.number_ios.map_or(u64::MAX, |n| n.saturating_mul(loops).saturating_mul(pair));
        if bytes_total == 0 || ios_total == 0 {
            return Err(self.err("the job has no I/O to do (size, io_size or number_ios is 0)".into()));
        }
        Ok(Plan {
            files,
            bs,
            align: min_bs,
            max_bs,
            pass_cap,
            bytes_total,
            amount,
            io_size_given: io_size.is_some(),
            ios_total,
            loops: (!time_based).then_some(self.loops.max(1)),
        })
    }

    /// Bytes one pass can move before every file is done (`u64::MAX` if it never ends by
    /// itself: backward sequential, random without the random map).
    fn pass_capacity(&self, plan: &Plan) -> u64 {
        let used = self.used_ddirs();
        let mean = used.iter().map(|&d| plan.bs[d].mean()).sum::<f64>() / used.len() as f64;
        let mut total = 0u64;
        for f in &plan.files {
            let bytes = if self.rw.is_random() {
                let map = !self.norandommap && used.iter().all(|&d| self.random_distribution[d] == Distribution::Uniform);
                if !map {
                    return u64::MAX;
                }
                ((f.len / plan.align) as f64 * mean) as u64
            } else {
                match (self.rw_modifier.unwrap_or(0), &plan.bs[used[0]]) {
                    (h, _) if h < 0 => return u64::MAX,
                    // offsets k*(b+h) inside the region whose block ends on the device
                    (h, BlockSize::Fixed(b)) if used.len() == 1 => {
                        let step = b + h as u64;
                        let inside = f.len.div_ceil(step);
                        let room = f.real - f.fio_offset;
                        let on_device = if room >= *b { (room - b) / step + 1 } else { 0 };
                        inside.min(on_device) * b
                    }
                    (h, _) => (f.len as f64 * mean / (mean + h as f64)) as u64,
                }
            };
            total = total.saturating_add(bytes);
        }
        total
    }

    /// Bytes the job moves (all directions), following the pass rules in the module docs.
    fn moved_bytes(&self, plan: &Plan) -> u64 {
        let cap = self.pass_capacity(plan);
        let per_pass = plan.pass_cap.min(cap);
        let files_done = cap <= plan.pass_cap;
        let Some(loops) = plan.loops else { return plan.bytes_total };
        if per_pass == 0 {
            return 0;
        }
        let mut moved = 0u64;
        for _ in 0..loops {
            moved = moved.saturating_add(per_pass).min(plan.bytes_total);
        }
        while moved < plan.amount && plan.amount - moved >= plan.max_bs && (plan.io_size_given || !files_done) {
            moved = moved.saturating_add(per_pass).min(plan.bytes_total);
            if moved >= plan.bytes_total {
                break;
            }
        }
        moved
    }

    /// Bytes this job will write on a namespace of `ns_bytes` (expected value for mixed
    /// workloads, exact otherwise up to the last block); `None` if the job cannot run.
    pub fn write_bytes_hint(&self, ns_bytes: u64) -> Option<u64> {
        let plan = self.plan(ns_bytes, false).ok()?;
        let frac = match self.rw {
            RwMode::Write | RwMode::RandWrite | RwMode::TrimWrite | RwMode::RandTrimWrite => 1.0,
            RwMode::ReadWrite | RwMode::RandRw => (100 - self.rwmixread) as f64 / 100.0,
            _ => 0.0,
        };
        let mut bytes = self.moved_bytes(&plan) as f64 * frac;
        if self.number_ios.is_some() {
            let per_io = plan.bs[WRITE].mean();
            let ios = if matches!(self.rw, RwMode::TrimWrite | RwMode::RandTrimWrite) {
                plan.ios_total as f64 / 2.0
            } else {
                plan.ios_total as f64 * frac
            };
            bytes = bytes.min(ios * per_io);
        }
        Some(bytes as u64)
    }

    /// The I/O stream of this job on namespace `ns` of `ns_bytes` bytes, seeded by `seed`
    /// (see [`SourceParams`] for the placement-id count).
    ///
    /// ```
    /// use wafsim_workload::fio::parse_job_str;
    /// use std::path::Path;
    /// let jf = parse_job_str("[w]\nrw=write\nbs=4k\nsize=16k\n", "w.fio", Path::new("."), &|_| None).unwrap();
    /// let mut src = jf.phases[0][0].source(0, 1 << 20, 1).unwrap();
    /// let mut v = Vec::new();
    /// while src.fill(&mut v, 64).unwrap() > 0 {}
    /// assert_eq!(v.iter().map(|io| io.offset).collect::<Vec<_>>(), [0, 4096, 8192, 12288]);
    /// ```
    pub fn source(&self, ns: u32, ns_bytes: u64, seed: u64) -> Result<Box<dyn IoSource>, FioError> {
        self.source_with(SourceParams { ns, ns_bytes, seed, ..SourceParams::default() })
    }

    /// [`FioJob::source`] with all parameters. A `zonemode=zbd` job shares its zone state with
    /// the other sources of this thread on the same namespace (see [`super::zbd`]).
    pub fn source_with(&self, p: SourceParams) -> Result<Box<dyn IoSource>, FioError> {
        Ok(Box::new(self.generator(p)?))
    }

    /// [`FioJob::source_with`] with the zone state of the namespace given: every
    /// `zonemode=zbd` job of a namespace should get the same [`ZbdZones`] (built from the
    /// drive's zone report if earlier I/O has written zones). Other jobs ignore it.
    pub fn source_zbd(&self, p: SourceParams, zones: &ZbdZones) -> Result<Box<dyn IoSource>, FioError> {
        Ok(Box::new(self.generator_in(p, Some(zones))?))
    }

    /// The zone mode fio uses for this job (`zonemode`, else strided with `zonesize`).
    pub fn zone_mode(&self) -> ZoneMode {
        match self.zones.mode {
            ZoneMode::NotSpecified if self.zonesize.is_some() => ZoneMode::Strided,
            ZoneMode::NotSpecified => ZoneMode::None,
            // fio: strided works with one file only
            ZoneMode::Strided if self.nrfiles > 1 => ZoneMode::None,
            m => m,
        }
    }

    /// The zones a `zonemode=zbd` job works on: the drive's, or emulated with `zonesize` on a
    /// namespace that is not zoned (fio's `parse_zone_info` / `init_zone_info`).
    fn zbd_layout(&self, p: &SourceParams) -> Result<Layout, FioError> {
        if let Some(g) = &p.zones {
            if let Some(zs) = self.zonesize {
                if zs != g.zone_size {
                    return Err(self.err(format!(
                        "zonesize {zs} does not match the device zone size {} (fio: \"zonesize {zs} does not match the device zone size {}\"); drop zonesize= to use the drive's",
                        g.zone_size, g.zone_size
                    )));
                }
            }
            return Ok(Layout::device(g, p.ns_bytes));
        }
        let Some(zs) = self.zonesize else {
            return Err(self.err(
                "zonemode=zbd, but the namespace is not a zoned block device and the job sets no zonesize=: fio then emulates zones of zonesize bytes on the regular device and refuses the job without it (\"Specifying the zone size is mandatory for regular file/block device with --zonemode=zbd\"); run it on a zoned namespace or add zonesize=".into(),
            ));
        };
        if zs < 512 {
            return Err(self.err(format!("zonesize={zs}: the zone size must be at least 512 bytes for zonemode=zbd (as in fio)")));
        }
        let cap = self.zones.capacity.unwrap_or(zs);
        if cap > zs {
            return Err(self.err(format!("zonecapacity {cap} is larger than zone size {zs} (as fio refuses it)")));
        }
        if p.ns_bytes < zs {
            return Err(self.err(format!("the namespace ({} bytes) is smaller than zonesize={zs}", p.ns_bytes)));
        }
        if p.ns_bytes.div_ceil(zs) > 1 << 24 {
            return Err(self.err(format!("zonesize={zs} makes {} zones on the namespace; wafsim emulates at most 2^24", p.ns_bytes.div_ceil(zs))));
        }
        Ok(Layout::emulated(zs, cap, p.ns_bytes))
    }

    /// The job with `z` sizes in zones of `zone_size` bytes.
    fn with_zone_size(&self, zone_size: u64) -> FioJob {
        let mut j = self.clone();
        let o = &mut j.opts;
        for v in [&mut o.size, &mut o.offset, &mut o.io_size, &mut o.offset_increment, &mut o.zones.skip] {
            *v = v.map(|s| s.with_zone_size(zone_size));
        }
        j
    }

    /// fio's `setup` of a zbd job: block-size and option checks (`zbd_verify_bs`,
    /// `zbd_setup_files`), the region rounded to whole zones (`zbd_zone_align_file_sizes`),
    /// then the job joins the namespace's zone state.
    fn zbd_setup(&self, p: &SourceParams, plan: &mut Plan, zones: &ZbdZones, layout: Layout) -> Result<ZbdJob, FioError> {
        let zs = layout.zone_size;
        if plan.files.len() != 1 {
            return Err(self.err(format!(
                "zonemode=zbd with nrfiles={}: wafsim models one target per zbd job (the whole namespace); drop nrfiles=",
                self.nrfiles
            )));
        }
        if matches!(self.rw, RwMode::TrimWrite | RwMode::RandTrimWrite) {
            return Err(self.err("rw=trimwrite/randtrimwrite with zonemode=zbd is not modelled (a trim there is a zone reset of a whole zone); use rw=write or rw=trim".into()));
        }
        let writes = self.rw.writes();
        let trims = matches!(self.rw, RwMode::Trim | RwMode::RandTrim);
        if writes && plan.bs[WRITE].max() > zs {
            return Err(self.err(format!("block size {} is larger than the zone size {zs} (fio: \"I/O buflen exceeds zone size\")", plan.bs[WRITE].max())));
        }
        if trims {
            if !matches!(plan.bs[TRIM], BlockSize::Fixed(_)) {
                return Err(self.err("bsrange and bssplit are not allowed for trim with zonemode=zbd (as in fio)".into()));
            }
            if plan.bs[TRIM].min() != zs {
                return Err(self.err(format!(
                    "trim block size {} is not the zone size {zs} (fio: a trim with zonemode=zbd resets one zone; set bs={zs} for the trims)",
                    plan.bs[TRIM].min()
                )));
            }
        }
        if writes && !layout.emulated && !self.timing.direct {
            let engine = self.timing.ioengine.as_deref().unwrap_or("psync").to_ascii_lowercase();
            // The passthrough engines reach the drive through a character device or userspace
            // driver, which fio does not check.
            if !matches!(engine.as_str(), "io_uring_cmd" | "xnvme" | "spdk" | "spdk_bdev") {
                return Err(self.err(
                    "a zbd job writing a zoned drive needs direct=1 (fio: \"Using direct I/O is mandatory for writing to ZBD drives\")".into(),
                ));
            }
        }
        if let Some(SizeSpec::Bytes(skip)) = self.zones.skip {
            if skip % zs != 0 {
                return Err(self.err(format!("zoneskip {skip} is not a multiple of the device zone size {zs} (as fio refuses it)")));
            }
        }
        let f = &mut plan.files[0];
        let (mut start, mut end) = (f.start, f.start + f.len);
        let seq_zones = layout.zone_of(end - 1) >= layout.conventional;
        if seq_zones {
            let (s0, e0) = (start, end);
            let too_small = || self.err(format!("the region {s0}..{e0} holds no whole zone of {zs} bytes (fio: \"io_size must be at least one zone\")"));
            if !writes && !trims {
                let new_end = end / zs * zs;
                if end > new_end {
                    if new_end <= start {
                        return Err(too_small());
                    }
                    end = new_end;
                }
            } else {
                if start % zs != 0 {
                    start = (start / zs + 1) * zs;
                    if start >= end {
                        return Err(too_small());
                    }
                }
                let new_end = end / zs * zs;
                if new_end <= start {
                    return Err(too_small());
                }
                end = new_end;
            }
        }
        (f.start, f.fio_offset, f.len) = (start, start, end - start);
        if f.len < plan.max_bs {
            return Err(self.err(format!("region of {} bytes is smaller than the block size {}", f.len, plan.max_bs)));
        }
        let verify = self.other.iter().any(|(k, v)| k == "verify" && v.as_deref().is_some_and(|v| !matches!(v.trim(), "0" | "none")));
        let jz = JobZones {
            ns: p.ns,
            min_zone: layout.zone_of(start),
            max_zone: layout.zone_of(end),
            region_start: start,
            region_len: end - start,
            min_bs: std::array::from_fn(|d| plan.bs[d].min()),
            random: self.rw.is_random(),
            read_beyond_wp: self.zones.read_beyond_wp,
            job_max_open: self.zones.job_max_open_zones,
            reset_threshold: self.zones.reset_threshold,
            reset_frequency: self.zones.reset_frequency,
            verify,
            writes,
            modifies: writes || trims,
        };
        let who = JobIdent { name: &self.name, clone: self.clone_index, file: &self.file, job_index: self.job_index, phase: self.phase };
        zones.attach(who, self.zones.max_open_zones, self.zones.ignore_zone_limits, jz).map_err(|m| self.err(m))
    }

    /// The placement the job asks for, checked against the drive's.
    fn placement(&self, device: DevicePlacement) -> Result<Option<DataPlacement>, FioError> {
        let want = if self.fdp || self.dataplacement == DataPlacement::Fdp {
            Some(DataPlacement::Fdp)
        } else if self.dataplacement == DataPlacement::Streams {
            Some(DataPlacement::Streams)
        } else {
            None
        };
        let asked = if self.fdp { "fdp=1" } else if want == Some(DataPlacement::Fdp) { "dataplacement=fdp" } else { "dataplacement=streams" };
        let fdp_fails = "fio fails: it cannot fetch the reclaim unit handles (\"fdp fetch ruhs failed\")";
        let streams_fails = "fio's writes would fail: the drive rejects the stream directive";
        let problem = match (want, device) {
            (None, _) | (_, DevicePlacement::Unknown) => None,
            (Some(DataPlacement::Fdp), DevicePlacement::Fdp) | (Some(DataPlacement::Streams), DevicePlacement::Streams) => None,
            (Some(DataPlacement::Fdp), DevicePlacement::NoPlacement) => Some(format!("{asked} but the namespace's drive has no FDP ({fdp_fails})")),
            (Some(DataPlacement::Fdp), DevicePlacement::Streams) => {
                Some(format!("{asked} but the namespace's drive offers streams, not FDP ({fdp_fails}); use dataplacement=streams"))
            }
            (Some(_), DevicePlacement::NoPlacement) => Some(format!("{asked} but the namespace's drive has no streams ({streams_fails})")),
            (Some(_), _) => Some(format!("{asked} but the namespace's drive offers FDP, not streams ({streams_fails}); use fdp=1")),
        };
        match problem {
            Some(m) => Err(self.err(m)),
            None => Ok(want),
        }
    }

    /// The placement ids writes cycle through.
    fn placement_ids(&self, p: &SourceParams) -> Result<Vec<u16>, FioError> {
        if self.plid_select == PlidSelect::Scheme {
            return Err(self.err(format!(
                "plid_select=scheme (dp_scheme={}) is not supported yet; use roundrobin or random",
                self.dp_scheme.as_deref().unwrap_or("?")
            )));
        }
        let ids = match (&self.plids, p.available_plids) {
            (Some(l), _) => l.clone(),
            (None, Some(n)) => (0..n.max(1)).collect(),
            (None, None) => vec![0],
        };
        if let Some(n) = p.available_plids {
            if let Some(bad) = ids.iter().find(|&&i| i >= n) {
                return Err(self.err(format!("placement id {bad} is out of range (the namespace offers {n})")));
            }
        }
        Ok(ids)
    }

    /// The concrete generator (same as [`FioJob::source_with`], unboxed).
    pub fn generator(&self, p: SourceParams) -> Result<FioSource, FioError> {
        self.generator_in(p, None)
    }

    /// [`FioJob::generator`] with the zone state of a zbd job given or shared per thread.
    fn generator_in(&self, p: SourceParams, zones: Option<&ZbdZones>) -> Result<FioSource, FioError> {
        let mode = self.zone_mode();
        let mut job = Cow::Borrowed(self);
        let mut zbd_zones = None;
        if mode == ZoneMode::Zbd {
            let layout = self.zbd_layout(&p)?;
            let book = match zones {
                Some(z) => z.clone(),
                None => zbd::shared(p.ns, p.ns_bytes, p.zones),
            };
            let layout = book.layout_for(layout).map_err(|m| self.err(m))?;
            job = Cow::Owned(self.with_zone_size(layout.zone_size));
            zbd_zones = Some((book, layout));
        }
        let job = job.as_ref();
        let mut plan = job.plan(p.ns_bytes, p.timed)?;
        let zbd = match &zbd_zones {
            Some((book, layout)) => Some(job.zbd_setup(&p, &mut plan, book, *layout)?),
            None => None,
        };
        let skip = match job.zones.skip {
            Some(SizeSpec::Bytes(b)) => b,
            Some(other) => return Err(self.err(format!("zoneskip={other:?} counts zones, but the job has no zone size (set zonesize= or zonemode=zbd on a zoned namespace)"))),
            None => 0,
        };
        let stride = match (mode, &zbd) {
            (ZoneMode::Strided, _) => {
                let size = job.zonesize.expect("strided has a zone size");
                Some(Stride { size, range: job.zones.range.unwrap_or(size), skip, bytes: 0, base: plan.files[0].start, zbd: false })
            }
            (ZoneMode::Zbd, Some(z)) if skip > 0 && !job.rw.is_random() => {
                let size = z.zone_size();
                Some(Stride { size, range: size, skip, bytes: 0, base: plan.files[0].start, zbd: true })
            }
            _ => None,
        };
        self.generator_from(p, plan, zbd, stride)
    }

    fn generator_from(&self, p: SourceParams, plan: Plan, zbd: Option<ZbdJob>, stride: Option<Stride>) -> Result<FioSource, FioError> {
        let placement = self.placement(p.placement)?;
        let ids = if placement.is_some() { self.placement_ids(&p)? } else { Vec::new() };
        let base = self.randseed.unwrap_or(p.seed);
        let mut rng = Rng::derive(base, 0xF10_0000 + self.job_index as u64);
        // Per file: its random map, then one picker per direction (the draw order of a
        // single-file job is the one wafsim always had). Strided jobs draw in the zone range.
        let rand_len = |span: &FileSpan| match &stride {
            Some(s) if !s.zbd => s.range.min(span.len).max(plan.align),
            _ => span.len,
        };
        let files: Vec<FileState> = plan.files.iter().map(|span| self.file_state(*span, rand_len(span), plan.align, &mut rng)).collect();
        let random = self.rw.is_random();
        Ok(FioSource {
            zbd,
            stride,
            pre: VecDeque::new(),
            started: false,
            rwmix_write: self.rwmixread < 100,
            ns: p.ns,
            rw: self.rw,
            rwmixread: self.rwmixread,
            random,
            hole: if random { 0 } else { self.rw_modifier.unwrap_or(0) },
            seq_nr: if random { self.rw_modifier.map_or(1, |n| n as u64) } else { 1 },
            seq_left: 1,
            sequencer: self.rw_sequencer,
            pct_random: self.percentage_random,
            align: plan.align,
            bs: plan.bs,
            files,
            service: self.file_service.clone(),
            current: None,
            service_left: 0,
            next_file: 0,
            rng,
            bytes_left: plan.bytes_total,
            bytes_total: plan.bytes_total,
            ios_left: plan.ios_total,
            pass_bytes: 0,
            pass_cap: plan.pass_cap,
            pass: 1,
            loops: plan.loops,
            amount: plan.amount,
            io_size_given: plan.io_size_given,
            max_bs: plan.max_bs,
            finished: false,
            pending: None,
            placement: placement.is_some(),
            ids,
            random_ids: self.plid_select == PlidSelect::Random,
            rr: 0,
        })
    }

    fn file_state(&self, span: FileSpan, rand_len: u64, align: u64, rng: &mut Rng) -> FileState {
        let nblocks = (rand_len / align).max(1);
        let map = RandomMap::new(nblocks, rng);
        let mut pickers: [Picker; 3] = [Picker::Uniform, Picker::Uniform, Picker::Uniform];
        for (d, slot) in pickers.iter_mut().enumerate() {
            *slot = self.picker(&self.random_distribution[d], nblocks, rand_len, align, rng);
        }
        FileState { span, rand_len, nblocks, map, pickers, last_end: [0; 3], last_start: [None; 3], done: false }
    }

    fn picker(&self, d: &Distribution, n: u64, region_len: u64, align: u64, rng: &mut Rng) -> Picker {
        let place = |center: Option<f64>, rng: &mut Rng| match center {
            Some(c) => Placement::Centered(((c * n as f64) as u64).min(n - 1)),
            None => Placement::Scrambled(Permutation::new(n, rng)),
        };
        match d {
            Distribution::Uniform => {
                if self.norandommap {
                    Picker::Uniform
                } else {
                    Picker::Map
                }
            }
            Distribution::Zipf { theta, center } => Picker::Zipf(Zipf::new(n, *theta), place(*center, rng)),
            Distribution::Pareto { h, center } => Picker::Pareto(h.ln() / (1.0 - h).ln(), place(*center, rng)),
            Distribution::Normal { dev_pct, center } => Picker::Normal {
                center: center * n as f64,
                sigma: (dev_pct / 100.0 * n as f64).max(1e-9),
            },
            Distribution::Zoned(zones) => {
                let mut out = Vec::new();
                let mut cum = 0.0;
                let mut first = 0u64;
                for &(access, size) in zones {
                    let bytes = size.resolve(region_len, 1);
                    let count = (bytes / align).min(n.saturating_sub(first));
                    cum += access / 100.0;
                    out.push((cum, first, count));
                    first += count;
                }
                Picker::Zoned(out)
            }
        }
    }
}

/// The per-file state of a generator.
struct FileState {
    span: FileSpan,
    /// Bytes random offsets fall in (the region; `zonerange` for strided jobs).
    rand_len: u64,
    nblocks: u64,
    map: RandomMap,
    pickers: [Picker; 3],
    /// End of the last I/O per direction, relative to the region start (fio's `last_pos` -
    /// `file_offset`); 0 = none yet.
    last_end: [u64; 3],
    /// Start of the last I/O per direction (for `rw_sequencer=identical`).
    last_start: [Option<u64>; 3],
    /// No further offset this pass.
    done: bool,
}

impl FileState {
    /// The region now starts at `start` (fio moving `file_offset` in strided and zbd modes).
    fn move_to(&mut self, start: u64) {
        self.span.start = start;
        self.span.fio_offset = start;
    }

    /// A new pass: back to the start (fio's `fio_file_reset`).
    fn reset(&mut self) {
        self.last_end = [0; 3];
        self.last_start = [None; 3];
        self.done = false;
        self.map.restart();
    }

    /// fio's `get_next_seq_offset` and the bounds checks of `get_next_offset`, in fio's
    /// unsigned arithmetic; `None` when the file has no next block this pass. A fixed block
    /// size is not checked against the region end (fio's `get_next_buflen` returns it as is),
    /// so the last block may run past it, up to the end of the device: fio 3.33 writes 21
    /// blocks of 32k for size=671088.
    /// `at_end`: refuse an I/O that would run past the device end here (fio checks that after
    /// `zbd_adjust_block`, which may finish the last zone first: zbd jobs check it later).
    fn seq_offset(&self, d: usize, len: u64, hole: i64, fixed_bs: bool, at_end: bool) -> Option<u64> {
        let FileSpan { len: l, fio_offset: fo, real, .. } = self.span;
        let mut last = fo.wrapping_add(self.last_end[d]);
        if last >= real {
            return None;
        }
        let end = if real > l { l } else { real };
        // Backwards from the start of a region that does not start at 0: fio first rewinds
        // to `io_size` (an absolute value, as in fio).
        if hole < 0 && self.last_end[d] == 0 && fo != 0 {
            last = end;
        }
        let mut pos = last.wrapping_sub(fo);
        if pos != 0 && hole != 0 {
            pos = pos.wrapping_add(hole as u64);
            if pos >= real {
                // past the end with holes: forwards wraps to file_offset, backwards to the end
                pos = if hole > 0 { fo } else { end.wrapping_add(hole as u64) };
            }
        }
        if pos >= l || (at_end && fo.wrapping_add(pos).saturating_add(len) > real) || (!fixed_bs && pos + len > l) {
            return None;
        }
        Some(pos)
    }

    /// A random block; `None` once the random map has handed out every block this pass.
    fn rand_offset(&mut self, d: usize, len: u64, align: u64, rng: &mut Rng) -> Option<u64> {
        if matches!(self.pickers[d], Picker::Map) && self.map.exhausted() {
            return None;
        }
        let off = self.pickers[d].pick(self.nblocks, rng, &mut self.map) * align;
        let l = self.rand_len;
        Some(if off + len > l { (l - len) / align * align } else { off })
    }
}

/// fio's moving region of `zonemode=strided` (and of `zonemode=zbd` with `zoneskip`).
#[derive(Debug, Clone, Copy)]
struct Stride {
    /// Bytes of I/O in one zone (`zonesize`).
    size: u64,
    /// The zone window (`zonerange`; zbd: the zone size).
    range: u64,
    /// `zoneskip`.
    skip: u64,
    /// fio's `zone_bytes`: I/O bytes in the current zone.
    bytes: u64,
    /// Where every pass starts.
    base: u64,
    zbd: bool,
}

/// The generator behind [`FioJob::source`].
pub struct FioSource {
    /// The job's handle on the namespace's zone state (`zonemode=zbd`).
    zbd: Option<ZbdJob>,
    stride: Option<Stride>,
    /// Zone commands (and the I/O behind them) to hand out before anything else.
    pre: VecDeque<Io>,
    /// The first pass has begun (fio's per-pass zone setup has run).
    started: bool,
    /// rwmixwrite > 0.
    rwmix_write: bool,
    ns: u32,
    rw: RwMode,
    rwmixread: u32,
    random: bool,
    /// Sequential skip after each I/O (`rw=write:<n>`), negative backwards.
    hole: i64,
    /// One random offset every `seq_nr` I/Os (`rw=randX:<n>`; 0 = never).
    seq_nr: u64,
    seq_left: u64,
    sequencer: RwSequencer,
    pct_random: [u32; 3],
    align: u64,
    bs: [BlockSize; 3],
    files: Vec<FileState>,
    service: FileService,
    current: Option<usize>,
    service_left: u32,
    next_file: usize,
    rng: Rng,
    bytes_left: u64,
    bytes_total: u64,
    ios_left: u64,
    pass_bytes: u64,
    pass_cap: u64,
    /// Current pass, from 1.
    pass: u32,
    loops: Option<u32>,
    amount: u64,
    io_size_given: bool,
    max_bs: u64,
    finished: bool,
    pending: Option<Io>,
    placement: bool,
    ids: Vec<u16>,
    random_ids: bool,
    rr: usize,
}

impl FioSource {
    fn pick_len(&mut self, d: usize) -> u64 {
        match &self.bs[d] {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range(lo, hi) => {
                let steps = hi / lo;
                lo * (1 + self.rng.below(steps.max(1)))
            }
            BlockSize::Split(v) => {
                let total: u64 = v.iter().map(|e| e.1 as u64).sum();
                let mut r = self.rng.below(total.max(1));
                for &(b, w) in v {
                    if r < w as u64 {
                        return b;
                    }
                    r -= w as u64;
                }
                v.last().map_or(4096, |e| e.0)
            }
        }
    }

    /// fio's `ddir_seq_nr` countdown: is this I/O one of the random ones?
    fn random_turn(&mut self) -> bool {
        if self.seq_nr == 0 {
            return false;
        }
        self.seq_left -= 1;
        if self.seq_left == 0 {
            self.seq_left = self.seq_nr;
            return true;
        }
        false
    }

    /// fio's `get_next_block` for one file.
    fn offset_in(&mut self, fi: usize, d: usize, len: u64) -> Option<u64> {
        let fixed = self.bs[d].min() == self.bs[d].max();
        let at_end = self.zbd.is_none();
        if !self.random {
            return self.files[fi].seq_offset(d, len, self.hole, fixed, at_end);
        }
        let sequential = if self.random_turn() {
            self.pct_random[d] < 100 && self.rng.below(100) >= self.pct_random[d] as u64
        } else if self.sequencer == RwSequencer::Identical {
            let f = &self.files[fi];
            let pos = f.last_start[d].unwrap_or(0);
            if pos + len <= f.span.len {
                return Some(pos);
            }
            false
        } else {
            true
        };
        if sequential {
            if let Some(pos) = self.files[fi].seq_offset(d, len, 0, fixed, at_end) {
                return Some(pos);
            }
        }
        let (align, f) = (self.align, &mut self.files[fi]);
        f.rand_offset(d, len, align, &mut self.rng)
    }

    /// The file the next I/O goes to (fio's `__get_next_file`); `None` when all are done.
    fn select_file(&mut self) -> Option<usize> {
        let n = self.files.len();
        if n == 1 {
            return (!self.files[0].done).then_some(0);
        }
        if let Some(c) = self.current.filter(|&c| !self.files[c].done) {
            if self.service == FileService::Sequential {
                return Some(c);
            }
            if self.service_left > 0 {
                self.service_left -= 1;
                return Some(c);
            }
        }
        if self.files.iter().all(|f| f.done) {
            return None;
        }
        let (f, per) = match self.service {
            FileService::Random(per) => loop {
                let f = self.rng.below(n as u64) as usize;
                if !self.files[f].done {
                    break (f, per);
                }
            },
            FileService::RoundRobin(per) => (self.next_round_robin(), per),
            _ => (self.next_round_robin(), 1),
        };
        self.current = Some(f);
        self.service_left = per.saturating_sub(1);
        Some(f)
    }

    fn next_round_robin(&mut self) -> usize {
        loop {
            let f = self.next_file;
            self.next_file = (self.next_file + 1) % self.files.len();
            if !self.files[f].done {
                return f;
            }
        }
    }

    /// End the current pass; `false` when the job is over (fio's `keep_running`).
    fn next_pass(&mut self, files_done: bool) -> bool {
        if files_done && self.pass_bytes == 0 {
            // a pass that found no block at all would find none the next time either
            self.finished = true;
            return false;
        }
        self.pass += 1;
        if let Some(loops) = self.loops {
            if self.pass > loops {
                let moved = self.bytes_total - self.bytes_left;
                let rest = self.amount.saturating_sub(moved);
                if rest == 0 || rest < self.max_bs || (files_done && !self.io_size_given) {
                    self.finished = true;
                    return false;
                }
            }
        }
        for f in &mut self.files {
            f.reset();
        }
        self.pass_bytes = 0;
        self.pass_begins();
        true
    }

    /// Zone setup at the start of every pass (fio's `clear_io_state` and `zbd_file_reset`).
    fn pass_begins(&mut self) {
        if let Some(s) = &mut self.stride {
            s.bytes = 0;
            self.files[0].move_to(s.base);
        }
        if let Some(z) = &self.zbd {
            let mut pre = Vec::new();
            z.pass_start(&mut pre);
            self.pre.extend(pre);
        }
    }

    /// fio's `setup_strided_zone_mode` / `setup_zbd_zone_mode` before the next offset of
    /// direction `d`.
    fn zone_setup(&mut self, d: usize) {
        if let (Some(z), false, WRITE) = (&self.zbd, self.random, d) {
            // A sequential writer jumps from a zone's capacity end to the next zone.
            let f = &mut self.files[0];
            let last_pos = f.span.start.wrapping_add(f.last_end[WRITE]);
            if let Some((cap_end, end)) = z.capacity_gap(last_pos) {
                if last_pos >= cap_end {
                    f.last_end[WRITE] = end.wrapping_sub(f.span.start);
                }
            }
        }
        let Some(mut s) = self.stride else { return };
        let f = &mut self.files[0];
        let next_zone = if s.zbd {
            let z = self.zbd.as_ref().expect("zbd stride has zones");
            let last_pos = f.span.start.wrapping_add(f.last_end[d]);
            let (end, wp) = z.zone_end_and_wp(z.zone_of(last_pos));
            s.bytes >= s.size || last_pos >= end || (d == READ && !z.z.read_beyond_wp && last_pos >= wp)
        } else {
            s.bytes >= s.size
        };
        if next_zone {
            s.bytes = 0;
            let mut fo = f.span.start + s.range + s.skip;
            if fo >= f.span.real {
                fo = s.base;
            }
            f.move_to(fo);
            f.last_end[d] = 0;
        }
        if !s.zbd {
            if f.last_end[d] >= s.range {
                f.last_end[d] = 0;
            }
            if s.bytes % s.range == 0 {
                f.reset();
            }
        }
        self.stride = Some(s);
    }

    /// File and offset (relative to the file) of the next I/O, moving on to the next file or
    /// pass as fio does.
    fn place(&mut self, d: usize, len: u64) -> Option<(usize, u64)> {
        loop {
            let Some(fi) = self.select_file() else {
                if !self.next_pass(true) {
                    return None;
                }
                continue;
            };
            match self.offset_in(fi, d, len) {
                Some(pos) => return Some((fi, pos)),
                None => self.files[fi].done = true,
            }
        }
    }

    fn next_pid(&mut self) -> Pid {
        if !self.placement || self.ids.is_empty() {
            return Pid::NONE;
        }
        let i = if self.random_ids {
            self.rng.below(self.ids.len() as u64) as usize
        } else {
            let i = self.rr;
            self.rr = (self.rr + 1) % self.ids.len();
            i
        };
        Pid::new(0, self.ids[i])
    }

    fn next_io(&mut self) -> Option<Io> {
        loop {
            if let Some(io) = self.pre.pop_front() {
                return Some(io);
            }
            if let Some(io) = self.pending.take() {
                self.ios_left = self.ios_left.saturating_sub(1);
                return Some(io);
            }
            if self.finished || self.bytes_left == 0 || self.ios_left == 0 {
                return None;
            }
            if !self.started {
                self.started = true;
                self.pass_begins();
                continue;
            }
            if let Some(io) = self.next_one() {
                return Some(io);
            }
            if self.pre.is_empty() && (self.finished || self.bytes_left == 0 || self.ios_left == 0) {
                return None;
            }
        }
    }

    /// One I/O (after the zone commands it needs, queued in `pre`), or `None` when there is
    /// none for now (the caller looks at `pre` and whether the job is over).
    fn next_one(&mut self) -> Option<Io> {
        if self.pass_bytes >= self.pass_cap && !self.next_pass(false) {
            return None;
        }
        let (d, op) = match self.rw {
            RwMode::Read | RwMode::RandRead => (READ, Op::Read),
            RwMode::Write | RwMode::RandWrite => (WRITE, Op::Write),
            RwMode::Trim | RwMode::RandTrim => (TRIM, Op::Trim),
            RwMode::ReadWrite | RwMode::RandRw => {
                if self.rng.below(100) < self.rwmixread as u64 {
                    (READ, Op::Read)
                } else {
                    (WRITE, Op::Write)
                }
            }
            RwMode::TrimWrite | RwMode::RandTrimWrite => (WRITE, Op::Trim),
        };
        let (d, op) = match &self.zbd {
            Some(z) if d == READ && matches!(self.rw, RwMode::ReadWrite | RwMode::RandRw) => {
                if z.adjust_ddir(true, self.files[0].last_start[WRITE].is_some(), self.rwmix_write) {
                    (d, op)
                } else {
                    (WRITE, Op::Write)
                }
            }
            _ => (d, op),
        };
        let mut len = self.pick_len(d);
        self.zone_setup(d);
        let (fi, pos) = self.place(d, len)?;
        let mut offset = self.files[fi].span.start + pos;
        if let Some(z) = &self.zbd {
            let mut pre = Vec::new();
            let adjusted = z.adjust(d, offset, len, &mut pre);
            self.pre.extend(pre);
            match adjusted {
                Adjusted::Accept(o, l) => (offset, len) = (o, l),
                Adjusted::Done => {
                    // a trim of a zone: the reset (if the zone held data) is queued
                    let f = &mut self.files[fi];
                    f.last_end[d] = pos + len;
                    f.last_start[d] = Some(pos);
                    self.bytes_left = self.bytes_left.saturating_sub(len);
                    self.pass_bytes = self.pass_bytes.saturating_add(len);
                    self.ios_left -= 1;
                    return None;
                }
                Adjusted::Eof => {
                    self.files[fi].done = true;
                    return None;
                }
            }
            if offset + len > self.files[fi].span.real {
                // fio's check after zbd_adjust_block: the I/O would run past the device end
                self.files[fi].done = true;
                return None;
            }
        }
        let f = &mut self.files[fi];
        let rel = offset.wrapping_sub(f.span.start);
        f.last_end[d] = rel.wrapping_add(len);
        f.last_start[d] = Some(rel);
        if let Some(s) = &mut self.stride {
            s.bytes += len;
        }
        let pid = if op == Op::Write { self.next_pid() } else { Pid::NONE };
        if let (Some(z), Op::Read | Op::Write) = (&self.zbd, op) {
            // one command per zone, as Linux splits a bio at zone boundaries
            let (mut at, end) = (offset, offset + len);
            while let Some(cut) = z.split_at(at, end - at) {
                self.pre.push_back(Io { op, ns: self.ns, offset: at, len: (cut - at) as u32, pid });
                at = cut;
            }
            if at != offset {
                self.pre.push_back(Io { op, ns: self.ns, offset: at, len: (end - at) as u32, pid });
                self.bytes_left = self.bytes_left.saturating_sub(len);
                self.pass_bytes = self.pass_bytes.saturating_add(len);
                self.ios_left -= 1;
                return self.pre.pop_front();
            }
        }
        let io = Io { op, ns: self.ns, offset, len: len as u32, pid };
        if matches!(self.rw, RwMode::TrimWrite | RwMode::RandTrimWrite) {
            let wpid = self.next_pid();
            self.pending = Some(Io { op: Op::Write, pid: wpid, ..io });
        }
        self.bytes_left = self.bytes_left.saturating_sub(len);
        self.pass_bytes = self.pass_bytes.saturating_add(len);
        self.ios_left -= 1;
        if self.pre.is_empty() {
            return Some(io);
        }
        self.pre.push_back(io);
        self.pre.pop_front()
    }
}

impl IoSource for FioSource {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, wafsim_core::pipeline::SourceError> {
        if let Some(z) = &self.zbd {
            z.begin_batch();
        }
        let mut n = 0;
        while n < max {
            match self.next_io() {
                Some(io) => {
                    out.push(io);
                    n += 1;
                }
                None => {
                    if let Some(z) = &self.zbd {
                        z.done();
                    }
                    break;
                }
            }
        }
        Ok(n)
    }
}
