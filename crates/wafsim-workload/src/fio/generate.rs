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

use wafsim_core::{Io, Op, Pid, Rng};

use super::dist::{Permutation, Picker, Placement, RandomMap, Zipf};
use super::job::FioJob;
use super::options::{DataPlacement, Distribution, FileService, PlidSelect, RwMode, RwSequencer};
use super::size::{BlockSize, SizeSpec};
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
            // fio: N% of the device, capped to what is left after the offset, aligned down.
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
    /// while src.fill(&mut v, 64) > 0 {}
    /// assert_eq!(v.iter().map(|io| io.offset).collect::<Vec<_>>(), [0, 4096, 8192, 12288]);
    /// ```
    pub fn source(&self, ns: u32, ns_bytes: u64, seed: u64) -> Result<Box<dyn IoSource>, FioError> {
        self.source_with(SourceParams { ns, ns_bytes, seed, ..SourceParams::default() })
    }

    /// [`FioJob::source`] with all parameters.
    pub fn source_with(&self, p: SourceParams) -> Result<Box<dyn IoSource>, FioError> {
        Ok(Box::new(self.generator(p)?))
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
        let plan = self.plan(p.ns_bytes, p.timed)?;
        let placement = self.placement(p.placement)?;
        let ids = if placement.is_some() { self.placement_ids(&p)? } else { Vec::new() };
        let base = self.randseed.unwrap_or(p.seed);
        let mut rng = Rng::derive(base, 0xF10_0000 + self.job_index as u64);
        // Per file: its random map, then one picker per direction (the draw order of a
        // single-file job is the one wafsim always had).
        let files: Vec<FileState> = plan.files.iter().map(|span| self.file_state(*span, plan.align, &mut rng)).collect();
        let random = self.rw.is_random();
        Ok(FioSource {
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

    fn file_state(&self, span: FileSpan, align: u64, rng: &mut Rng) -> FileState {
        let nblocks = (span.len / align).max(1);
        let map = RandomMap::new(nblocks, rng);
        let mut pickers: [Picker; 3] = [Picker::Uniform, Picker::Uniform, Picker::Uniform];
        for (d, slot) in pickers.iter_mut().enumerate() {
            *slot = self.picker(&self.random_distribution[d], nblocks, span.len, align, rng);
        }
        FileState { span, nblocks, map, pickers, last_end: [0; 3], last_start: [None; 3], done: false }
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
    fn seq_offset(&self, d: usize, len: u64, hole: i64, fixed_bs: bool) -> Option<u64> {
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
        if pos >= l || fo.wrapping_add(pos).saturating_add(len) > real || (!fixed_bs && pos + len > l) {
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
        let l = self.span.len;
        Some(if off + len > l { (l - len) / align * align } else { off })
    }
}

/// The generator behind [`FioJob::source`].
pub struct FioSource {
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
        if !self.random {
            return self.files[fi].seq_offset(d, len, self.hole, fixed);
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
            if let Some(pos) = self.files[fi].seq_offset(d, len, 0, fixed) {
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
        true
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
        if let Some(io) = self.pending.take() {
            self.ios_left = self.ios_left.saturating_sub(1);
            return Some(io);
        }
        if self.finished || self.bytes_left == 0 || self.ios_left == 0 {
            return None;
        }
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
        let len = self.pick_len(d);
        let (fi, pos) = self.place(d, len)?;
        let f = &mut self.files[fi];
        f.last_end[d] = pos + len;
        f.last_start[d] = Some(pos);
        let offset = f.span.start + pos;
        let pid = if op == Op::Write { self.next_pid() } else { Pid::NONE };
        let io = Io { op, ns: self.ns, offset, len: len as u32, pid };
        if matches!(self.rw, RwMode::TrimWrite | RwMode::RandTrimWrite) {
            let wpid = self.next_pid();
            self.pending = Some(Io { op: Op::Write, pid: wpid, ..io });
        }
        self.bytes_left = self.bytes_left.saturating_sub(len);
        self.pass_bytes = self.pass_bytes.saturating_add(len);
        self.ios_left -= 1;
        Some(io)
    }
}

impl IoSource for FioSource {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            match self.next_io() {
                Some(io) => {
                    out.push(io);
                    n += 1;
                }
                None => break,
            }
        }
        n
    }
}
