//! `FioJob` -> [`IoSource`]: the offsets, sizes, directions and placement IDs fio would issue.
//!
//! Semantics (fio HOWTO unless noted):
//! * Region: `[offset + offset_increment * clone, + size)`; `size` defaults to the rest of the
//!   namespace. Percent offsets/sizes are aligned down to the job's smallest block size. A
//!   region past the namespace end is an error (fio fails too), never silently clamped.
//! * Amount: `io_size` (default: the region size) per loop, times `loops`; `number_ios` caps
//!   the count of I/Os. The last I/O is never shortened, so the total may exceed the budget by
//!   less than one block. For `trimwrite` the budget counts the trimmed bytes (each block is
//!   trimmed then written, as the HOWTO describes). `time_based` jobs need `io_size` or
//!   `number_ios` until wafsim has a timing model.
//! * Sequential: each direction walks its own cursor in block steps (plus the `rw=write:<n>`
//!   hole) and wraps to the region start when the next block does not fit.
//! * Random: offsets aligned to the smallest block size of the job. Without `norandommap`,
//!   uniform offsets come from a per-pass keyed permutation (see [`super::dist::Permutation`]),
//!   so with a fixed block size every block is touched exactly once per pass (with several
//!   block sizes, the *start* blocks follow the permutation). Non-uniform distributions disable
//!   the map, as in fio. `percentage_random` and `rw=randX:<n>` mix in sequential I/O.
//! * Mixed directions: each I/O is a read with probability `rwmixread` %.
//! * Placement: with `fdp=1` / `dataplacement=fdp` (or `streams`), writes carry
//!   `Pid::new(0, id)`, `id` chosen from `plids`/`fdp_pli` by `plid_select` (default
//!   round-robin). Without a list, the ids are `0..available_plids` if the caller gives that
//!   count, else just 0. Reads and trims carry `Pid::NONE`.

use wafsim_core::{Io, Op, Pid, Rng};

use super::dist::{Permutation, Picker, Placement, RandomMap, Zipf};
use super::job::FioJob;
use super::options::{DataPlacement, Distribution, PlidSelect, RwMode, RwSequencer};
use super::size::BlockSize;
use super::FioError;
use crate::IoSource;

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
}

const READ: usize = 0;
const WRITE: usize = 1;
const TRIM: usize = 2;

/// Everything that follows from the job and the namespace, before any I/O is generated.
#[derive(Debug, Clone)]
struct Plan {
    region_start: u64,
    region_len: u64,
    bs: [BlockSize; 3],
    align: u64,
    bytes_total: u64,
    ios_total: u64,
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
        let min_bs = used.iter().map(|&d| bs[d].min()).min().unwrap_or(4096);
        let max_bs = used.iter().map(|&d| bs[d].max()).max().unwrap_or(4096);
        for &d in used {
            if bs[d].max() > u32::MAX as u64 {
                return Err(self.err(format!("block size {} does not fit a 32-bit I/O length", bs[d].max())));
            }
        }
        let align_pct = self.offset_align.unwrap_or(min_bs).max(1);
        let mut start = self.offset.map_or(0, |o| o.resolve(ns_bytes, align_pct));
        if let Some(inc) = self.offset_increment {
            let inc = inc.resolve(ns_bytes, align_pct);
            start = inc
                .checked_mul(self.clone_index as u64)
                .and_then(|x| x.checked_add(start))
                .ok_or_else(|| self.err("offset + offset_increment overflows".into()))?;
        }
        if start >= ns_bytes {
            return Err(self.err(format!("start offset {start} is at or past the namespace end ({ns_bytes} bytes)")));
        }
        let len = match self.size {
            Some(s) => s.resolve(ns_bytes, min_bs),
            None => ns_bytes - start,
        };
        if start.checked_add(len).is_none_or(|end| end > ns_bytes) {
            return Err(self.err(format!(
                "region offset {start} + size {len} exceeds the namespace ({ns_bytes} bytes); reduce size or offset"
            )));
        }
        if len < max_bs {
            return Err(self.err(format!("region of {len} bytes is smaller than the block size {max_bs}")));
        }
        // fio ignores time_based without a runtime ("time_based requires a runtime").
        let bytes_total = if t.time_based && timed && t.runtime_ns.is_some() {
            u64::MAX
        } else if t.time_based && !timed {
            // fio loops over the region until the runtime ends; without the timing model,
            // io_size (if given) stands in for the runtime, and number_ios bounds the job as in fio.
            self.io_size.map_or(u64::MAX, |s| s.resolve(len, 1))
        } else {
            let per_loop = self.io_size.map_or(len, |s| s.resolve(len, 1));
            per_loop.saturating_mul(self.loops as u64)
        };
        let ios_total = self.number_ios.unwrap_or(u64::MAX);
        if bytes_total == 0 || ios_total == 0 {
            return Err(self.err("the job has no I/O to do (size, io_size or number_ios is 0)".into()));
        }
        Ok(Plan { region_start: start, region_len: len, bs, align: min_bs, bytes_total, ios_total })
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
        let mut bytes = plan.bytes_total as f64 * frac;
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
        self.source_with(SourceParams { ns, ns_bytes, seed, available_plids: None, timed: false })
    }

    /// [`FioJob::source`] with all parameters.
    pub fn source_with(&self, p: SourceParams) -> Result<Box<dyn IoSource>, FioError> {
        Ok(Box::new(self.generator(p)?))
    }

    /// The concrete generator (same as [`FioJob::source_with`], unboxed).
    pub fn generator(&self, p: SourceParams) -> Result<FioSource, FioError> {
        let plan = self.plan(p.ns_bytes, p.timed)?;
        let base = self.randseed.unwrap_or(p.seed);
        let mut rng = Rng::derive(base, 0xF10_0000 + self.job_index as u64);
        let nblocks = (plan.region_len / plan.align).max(1);
        let map = RandomMap::new(nblocks, &mut rng);
        let pickers: [Picker; 3] = {
            let mut out: [Picker; 3] = [Picker::Uniform, Picker::Uniform, Picker::Uniform];
            for (d, slot) in out.iter_mut().enumerate() {
                *slot = self.picker(&self.random_distribution[d], nblocks, plan.region_len, plan.align, &mut rng);
            }
            out
        };
        let placement = if self.fdp || self.dataplacement == DataPlacement::Fdp {
            Some(DataPlacement::Fdp)
        } else if self.dataplacement == DataPlacement::Streams {
            Some(DataPlacement::Streams)
        } else {
            None
        };
        let mut ids = Vec::new();
        if placement.is_some() {
            if self.plid_select == PlidSelect::Scheme {
                return Err(self.err(format!(
                    "plid_select=scheme (dp_scheme={}) is not supported yet; use roundrobin or random",
                    self.dp_scheme.as_deref().unwrap_or("?")
                )));
            }
            ids = match (&self.plids, p.available_plids) {
                (Some(l), _) => l.clone(),
                (None, Some(n)) => (0..n.max(1)).collect(),
                (None, None) => vec![0],
            };
            if let Some(n) = p.available_plids {
                if let Some(bad) = ids.iter().find(|&&i| i >= n) {
                    return Err(self.err(format!("placement id {bad} is out of range (the namespace offers {n})")));
                }
            }
        }
        Ok(FioSource {
            ns: p.ns,
            rw: self.rw,
            rwmixread: self.rwmixread,
            random: self.rw.is_random(),
            modifier: self.rw_modifier.unwrap_or(0),
            sequencer: self.rw_sequencer,
            pct_random: self.percentage_random,
            start: plan.region_start,
            len: plan.region_len,
            align: plan.align,
            nblocks,
            bs: plan.bs,
            pickers,
            map,
            rng,
            cursor: [0; 3],
            last: [0; 3],
            run_left: [0; 3],
            bytes_left: plan.bytes_total,
            ios_left: plan.ios_total,
            pending: None,
            placement: placement.is_some(),
            ids,
            random_ids: self.plid_select == PlidSelect::Random,
            rr: 0,
        })
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

/// The generator behind [`FioJob::source`].
pub struct FioSource {
    ns: u32,
    rw: RwMode,
    rwmixread: u32,
    random: bool,
    modifier: u64,
    sequencer: RwSequencer,
    pct_random: [u32; 3],
    start: u64,
    len: u64,
    align: u64,
    nblocks: u64,
    bs: [BlockSize; 3],
    pickers: [Picker; 3],
    map: RandomMap,
    rng: Rng,
    /// Next sequential position per direction (relative to `start`).
    cursor: [u64; 3],
    /// Offset of the last I/O per direction (relative), for `rw_sequencer=identical`.
    last: [u64; 3],
    run_left: [u64; 3],
    bytes_left: u64,
    ios_left: u64,
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

    fn sequential(&mut self, d: usize, len: u64) -> u64 {
        let mut pos = self.cursor[d];
        if pos.saturating_add(len) > self.len {
            pos = 0;
        }
        pos
    }

    fn offset(&mut self, d: usize, len: u64) -> u64 {
        let pos = if !self.random {
            self.sequential(d, len)
        } else if self.run_left[d] > 0 {
            self.run_left[d] -= 1;
            match self.sequencer {
                RwSequencer::Identical => self.last[d],
                RwSequencer::Sequential => self.sequential(d, len),
            }
        } else if self.pct_random[d] < 100 && self.rng.below(100) >= self.pct_random[d] as u64 {
            self.sequential(d, len)
        } else {
            if self.modifier > 1 {
                self.run_left[d] = self.modifier - 1;
            }
            let block = self.pickers[d].pick(self.nblocks, &mut self.rng, &mut self.map);
            let off = block * self.align;
            if off + len > self.len {
                (self.len - len) / self.align * self.align
            } else {
                off
            }
        };
        self.last[d] = pos;
        let hole = if self.random { 0 } else { self.modifier };
        self.cursor[d] = pos.saturating_add(len).saturating_add(hole);
        pos
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
        if self.bytes_left == 0 || self.ios_left == 0 {
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
        let offset = self.start + self.offset(d, len);
        let pid = if op == Op::Write { self.next_pid() } else { Pid::NONE };
        let io = Io { op, ns: self.ns, offset, len: len as u32, pid };
        if matches!(self.rw, RwMode::TrimWrite | RwMode::RandTrimWrite) {
            let wpid = self.next_pid();
            self.pending = Some(Io { op: Op::Write, pid: wpid, ..io });
        }
        self.bytes_left = self.bytes_left.saturating_sub(len);
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
