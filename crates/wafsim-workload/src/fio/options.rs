//! Typed job options and the table that maps fio option names onto them.

use super::size::{
    parse_bool, parse_bs_list, parse_bsrange_list, parse_bssplit_list, parse_id_list, parse_int,
    parse_size, parse_size_or_percent, parse_time_ns, split_ddir, SizeSpec,
};

/// `rw=` / `readwrite=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential mixed reads and writes.
    ReadWrite,
    RandRw,
    /// Sequential trim then write of the same block.
    TrimWrite,
    /// Random trim then write of the same block.
    RandTrimWrite,
}

impl RwMode {
    fn parse(s: &str) -> Option<RwMode> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "trim" => RwMode::Trim,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "randtrim" => RwMode::RandTrim,
            "rw" | "readwrite" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            "trimwrite" => RwMode::TrimWrite,
            "randtrimwrite" => RwMode::RandTrimWrite,
            _ => return None,
        })
    }
    /// Random offsets?
    pub fn is_random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandTrim | RwMode::RandRw | RwMode::RandTrimWrite)
    }
    /// Does the job write at all?
    pub fn writes(self) -> bool {
        !matches!(self, RwMode::Read | RwMode::RandRead | RwMode::Trim | RwMode::RandTrim)
    }
}

/// `rw_sequencer=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwSequencer {
    Sequential,
    Identical,
}

/// `random_distribution=` (one per data direction; only `zoned`/`zoned_abs` may differ).
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Uniform (`random`).
    Uniform,
    /// `zipf:theta[:center]`.
    Zipf { theta: f64, center: Option<f64> },
    /// `pareto:h[:center]`: a fraction `h` of accesses goes to a fraction `1-h` of the blocks.
    Pareto { h: f64, center: Option<f64> },
    /// `normal[:dev[:center]]`: deviation in percent of the range, center in [0,1] (default 0.5).
    Normal { dev_pct: f64, center: f64 },
    /// `zoned:` (`SizeSpec::Percent` sizes) or `zoned_abs:` (`SizeSpec::Bytes`):
    /// `(access percentage, zone size)` in address order.
    Zoned(Vec<(f64, SizeSpec)>),
}

/// `dataplacement=` (or `fdp=1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataPlacement {
    None,
    Fdp,
    Streams,
}

/// `plid_select=` / `fdp_pli_select=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlidSelect {
    RoundRobin,
    Random,
    /// Offset ranges from `dp_scheme` (parsed, not yet generated).
    Scheme,
}

/// Options that only a timing model will use; parsed and kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub iodepth: u32,
    /// Bytes/s per direction (read, write, trim).
    pub rate: [Option<u64>; 3],
    pub rate_iops: [Option<u64>; 3],
    pub time_based: bool,
    pub runtime_ns: Option<u64>,
    pub ramp_time_ns: Option<u64>,
    pub startdelay_ns: Option<u64>,
    pub thinktime_ns: Option<u64>,
    pub ioengine: Option<String>,
    pub direct: bool,
}

/// Every option of one job, typed. Defaults follow the fio HOWTO.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOptions {
    /// `name=` (defaults to the section name).
    pub name: Option<String>,
    pub description: Option<String>,
    pub rw: RwMode,
    /// The `:<nr>` suffix of `rw=` (random: I/Os per new offset; sequential: bytes skipped).
    pub rw_modifier: Option<u64>,
    pub rw_sequencer: RwSequencer,
    /// `bs=` per direction (read, write, trim); `None` = default 4096.
    pub bs: [Option<u64>; 3],
    pub bsrange: [Option<(u64, u64)>; 3],
    pub bssplit: [Option<Vec<(u64, u32)>>; 3],
    pub size: Option<SizeSpec>,
    pub offset: Option<SizeSpec>,
    pub offset_increment: Option<SizeSpec>,
    pub offset_align: Option<u64>,
    pub io_size: Option<SizeSpec>,
    pub loops: u32,
    pub number_ios: Option<u64>,
    pub numjobs: u32,
    pub rwmixread: u32,
    pub random_distribution: [Distribution; 3],
    pub percentage_random: [u32; 3],
    pub randseed: Option<u64>,
    pub randrepeat: bool,
    pub norandommap: bool,
    pub filename: Option<String>,
    pub fdp: bool,
    pub dataplacement: DataPlacement,
    pub plids: Option<Vec<u16>>,
    pub plid_select: PlidSelect,
    pub dp_scheme: Option<String>,
    pub kb_base: u32,
    pub stonewall: bool,
    pub new_group: bool,
    pub timing: Timing,
    /// Recognised options that do not affect the generated I/O, kept verbatim.
    pub other: Vec<(String, Option<String>)>,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            name: None,
            description: None,
            rw: RwMode::Read,
            rw_modifier: None,
            rw_sequencer: RwSequencer::Sequential,
            bs: [None; 3],
            bsrange: [None; 3],
            bssplit: [None, None, None],
            size: None,
            offset: None,
            offset_increment: None,
            offset_align: None,
            io_size: None,
            loops: 1,
            number_ios: None,
            numjobs: 1,
            rwmixread: 50,
            random_distribution: [Distribution::Uniform, Distribution::Uniform, Distribution::Uniform],
            percentage_random: [100; 3],
            randseed: None,
            randrepeat: true,
            norandommap: false,
            filename: None,
            fdp: false,
            dataplacement: DataPlacement::None,
            plids: None,
            plid_select: PlidSelect::RoundRobin,
            dp_scheme: None,
            kb_base: 1024,
            stonewall: false,
            new_group: false,
            timing: Timing {
                iodepth: 1,
                rate: [None; 3],
                rate_iops: [None; 3],
                time_based: false,
                runtime_ns: None,
                ramp_time_ns: None,
                startdelay_ns: None,
                thinktime_ns: None,
                ioengine: None,
                direct: false,
            },
            other: Vec::new(),
        }
    }
}

/// Outcome of applying one option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Modelled or kept.
    Ok,
    /// Not an fio option this interpreter knows.
    Unknown,
    /// A real fio option whose effect wafsim does not model; ignored.
    NotModelled,
}

/// fio options that do not change which blocks are read/written; accepted and kept verbatim.
const KEPT: &[&str] = &[
    "group_reporting", "thread", "invalidate", "ioscheduler", "iodepth_batch", "iodepth_batch_submit",
    "iodepth_batch_complete", "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low",
    "gtod_reduce", "gtod_cpu", "clocksource", "cpus_allowed", "cpus_allowed_policy", "cpumask",
    "numa_cpu_nodes", "numa_mem_policy", "nice", "prio", "prioclass", "log_avg_msec", "log_max_value",
    "log_offset", "log_compression", "log_hist_msec", "per_job_logs", "write_bw_log", "write_lat_log",
    "write_iops_log", "write_hist_log", "write_iolog", "disable_lat", "disable_clat", "disable_slat",
    "disable_bw_measurement", "lat_percentiles", "clat_percentiles", "slat_percentiles", "percentile_list",
    "fixedbufs", "registerfiles", "sqthread_poll", "sqthread_poll_cpu", "hipri", "nonvectored",
    "force_async", "cmd_type", "nowait", "unified_rw_reporting", "exitall", "exit_what", "create_serialize",
    "create_fsync", "create_on_open", "create_only", "allow_file_create", "allow_mounted_write", "overwrite",
    "end_fsync", "fsync_on_close", "zero_buffers", "refill_buffers", "scramble_buffers",
    "buffer_compress_percentage", "buffer_compress_chunk", "buffer_pattern", "dedupe_percentage",
    "dedupe_mode", "dedupe_working_set_percentage", "dedupe_global", "random_generator", "allrandrepeat",
    "unit_base", "continue_on_error", "ignore_error", "error_dump", "uid", "gid", "exec_prerun",
    "exec_postrun", "rate_process", "rate_min", "rate_iops_min", "rate_cycle", "rate_ignore_thinktime",
    "latency_target", "latency_window", "latency_percentile", "latency_run", "max_latency", "iomem", "mem",
    "iomem_align", "mem_align", "hugepage-size", "lockmem", "fadvise_hint", "fallocate", "serialize_overlap",
    "io_submit_mode", "userspace_reap", "cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_bssplit",
    "pre_read", "unlink", "unlink_each_loop", "steadystate", "ss", "steadystate_duration", "ss_dur",
    "steadystate_ramp_time", "ss_ramp", "steadystate_check_interval", "directory", "filename_format",
    "unique_filename", "file_service_type", "lockfile", "openfiles", "thinktime_spin", "thinktime_blocks",
    "thinktime_blocks_type", "thinktime_iotime", "flow_id", "flow", "flow_sleep", "sync", "stats",
    "cgroup", "cgroup_weight", "cgroup_nodelete", "softrandommap", "experimental_verify", "verify_state_save", "verify_state_load",
];

/// Real fio options whose effect is not modelled (a warning is emitted).
const NOT_MODELLED: &[&str] = &[
    "verify", "do_verify", "verify_only", "verify_backlog", "verify_backlog_batch", "verify_interval",
    "verify_offset", "verify_pattern", "verify_fatal", "verify_dump", "verify_async", "trim_percentage",
    "trim_backlog", "trim_backlog_batch", "trim_verify_zero", "zonemode", "zonerange", "zonesize",
    "zonecapacity", "zoneskip", "blockalign", "ba", "bs_unaligned", "blocksize_unaligned", "bs_is_seq_rand",
    "filesize", "fill_device", "fill_fs", "file_append", "fsync", "fdatasync", "write_barrier",
    "sync_file_range", "write_hint", "stream_id", "read_iolog", "read_iolog_chunked", "replay_no_stall",
    "replay_time_scale", "replay_redirect", "replay_align", "replay_scale", "replay_skip", "nrfiles",
    "wait_for", "opendir", "exitall_on_error", "merge_blktrace_file", "max_open_zones",
    "job_max_open_zones", "ignore_zone_limits", "zone_reset_threshold", "zone_reset_frequency",
];

fn need(v: Option<&str>) -> Result<&str, String> {
    v.ok_or_else(|| "given a value (expected key=value)".to_string())
}

fn flag(v: Option<&str>) -> Result<bool, String> {
    match v {
        None => Ok(true),
        Some(s) => parse_bool(s),
    }
}

fn u32_of(v: u64, what: &str) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("{what} below 2^32"))
}

fn pct_list(s: &str) -> Result<[u32; 3], String> {
    let mut out = [100; 3];
    for (i, p) in split_ddir(s).iter().enumerate() {
        if let Some(p) = p {
            let v: u32 = p.parse().map_err(|_| "a percentage 0..100 (expected e.g. 50 or 50,100)".to_string())?;
            if v > 100 {
                return Err("a percentage 0..100".into());
            }
            out[i] = v;
        }
    }
    Ok(out)
}

fn rate_list(s: &str, kb_base: u32) -> Result<[Option<u64>; 3], String> {
    let mut out = [None; 3];
    for (i, p) in split_ddir(s).iter().enumerate() {
        if let Some(p) = p {
            out[i] = Some(parse_int(p, kb_base)?);
        }
    }
    Ok(out)
}

fn parse_float(s: &str, exp: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| exp.to_string())?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(exp.into())
    }
}

fn parse_distribution(s: &str, kb_base: u32) -> Result<[Distribution; 3], String> {
    let exp = "a distribution (expected random, zipf:<theta>, pareto:<h>, normal[:<dev>], zoned:<pct>/<pct>:... or zoned_abs:<pct>/<size>:...)";
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (kind, rest) = match lower.find([':', '=']) {
        Some(i) => (&lower[..i], &t[i + 1..]),
        None => (lower.as_str(), ""),
    };
    let one = |d: Distribution| Ok([d.clone(), d.clone(), d]);
    let params: Vec<&str> = if rest.is_empty() { vec![] } else { rest.split(':').collect() };
    let center = |i: usize| -> Result<Option<f64>, String> {
        match params.get(i) {
            None => Ok(None),
            Some(c) => {
                let c = parse_float(c, exp)?;
                if (0.0..=1.0).contains(&c) {
                    Ok(Some(c))
                } else {
                    Err("a distribution center in [0, 1]".into())
                }
            }
        }
    };
    match kind {
        "random" => one(Distribution::Uniform),
        "zipf" => {
            let theta = parse_float(params.first().ok_or_else(|| exp.to_string())?, exp)?;
            if theta <= 0.0 || (theta - 1.0).abs() < 1e-9 {
                return Err("a zipf theta > 0 and != 1 (e.g. zipf:1.2)".into());
            }
            one(Distribution::Zipf { theta, center: center(1)? })
        }
        "pareto" => {
            let h = parse_float(params.first().ok_or_else(|| exp.to_string())?, exp)?;
            if !(h > 0.0 && h < 1.0) {
                return Err("a pareto h strictly between 0 and 1 (e.g. pareto:0.9)".into());
            }
            one(Distribution::Pareto { h, center: center(1)? })
        }
        "normal" | "gauss" => {
            let dev_pct = match params.first() {
                Some(d) => parse_float(d, exp)?,
                None => 10.0,
            };
            if !(0.0..=100.0).contains(&dev_pct) {
                return Err("a normal deviation between 0 and 100".into());
            }
            one(Distribution::Normal { dev_pct, center: center(1)?.unwrap_or(0.5) })
        }
        "zoned" | "zoned_abs" => {
            let abs = kind == "zoned_abs";
            let mut out: [Distribution; 3] = [Distribution::Uniform, Distribution::Uniform, Distribution::Uniform];
            for (i, part) in split_ddir(rest).iter().enumerate() {
                let Some(part) = part else { continue };
                let mut zones = Vec::new();
                let mut total = 0.0;
                for z in part.split(':').filter(|z| !z.trim().is_empty()) {
                    let (a, b) = z.split_once('/').ok_or_else(|| exp.to_string())?;
                    let access = parse_float(a, exp)?;
                    let size = if abs {
                        SizeSpec::Bytes(parse_size(b, kb_base).map_err(|_| exp.to_string())?)
                    } else {
                        SizeSpec::Percent(parse_float(b, exp)?)
                    };
                    if access < 0.0 {
                        return Err(exp.into());
                    }
                    total += access;
                    zones.push((access, size));
                }
                if zones.is_empty() || zones.len() > 256 {
                    return Err(exp.into());
                }
                if (total - 100.0).abs() > 1e-6 {
                    return Err("zone access percentages adding up to 100".into());
                }
                if !abs {
                    let sz: f64 = zones.iter().map(|z| if let SizeSpec::Percent(p) = z.1 { p } else { 0.0 }).sum();
                    if sz > 100.0 + 1e-6 {
                        return Err("zone sizes adding up to at most 100%".into());
                    }
                }
                out[i] = Distribution::Zoned(zones);
            }
            Ok(out)
        }
        _ => Err(exp.into()),
    }
}

impl JobOptions {
    /// Apply one `key[=value]`. `Err` carries what was expected (the caller adds location,
    /// option and value).
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<Applied, String> {
        let kb = self.kb_base;
        match key {
            "name" => self.name = Some(need(value)?.to_string()),
            "description" => self.description = value.map(str::to_string),
            "rw" | "readwrite" => {
                let v = need(value)?;
                let (mode, modifier) = match v.split_once(':') {
                    Some((m, n)) => (m, Some(n)),
                    None => (v, None),
                };
                self.rw = RwMode::parse(mode).ok_or_else(|| {
                    "an I/O pattern (expected read, write, trim, randread, randwrite, randtrim, rw, randrw, trimwrite or randtrimwrite)".to_string()
                })?;
                self.rw_modifier = match modifier {
                    Some(n) => Some(parse_int(n, kb)?),
                    None => None,
                };
            }
            "rw_sequencer" => {
                self.rw_sequencer = match need(value)?.to_ascii_lowercase().as_str() {
                    "sequential" => RwSequencer::Sequential,
                    "identical" => RwSequencer::Identical,
                    _ => return Err("sequential or identical".into()),
                }
            }
            "bs" | "blocksize" => self.bs = parse_bs_list(need(value)?, kb)?,
            "bsrange" | "blocksize_range" => self.bsrange = parse_bsrange_list(need(value)?, kb)?,
            "bssplit" => self.bssplit = parse_bssplit_list(need(value)?, kb)?,
            "size" => self.size = Some(parse_size_or_percent(need(value)?, kb)?),
            "offset" => self.offset = Some(parse_size_or_percent(need(value)?, kb)?),
            "offset_increment" => self.offset_increment = Some(parse_size_or_percent(need(value)?, kb)?),
            "offset_align" => self.offset_align = Some(parse_size(need(value)?, kb)?),
            "io_size" | "io_limit" => self.io_size = Some(parse_size_or_percent(need(value)?, kb)?),
            "loops" => self.loops = u32_of(parse_int(need(value)?, kb)?, "a loop count")?.max(1),
            "number_ios" => self.number_ios = Some(parse_int(need(value)?, kb)?),
            "numjobs" => {
                let n = parse_int(need(value)?, kb)?;
                if n == 0 || n > 65_536 {
                    return Err("a job count between 1 and 65536".into());
                }
                self.numjobs = n as u32;
            }
            "rwmixread" | "rwmixwrite" => {
                let v: u32 = need(value)?.trim().parse().map_err(|_| "a percentage 0..100".to_string())?;
                if v > 100 {
                    return Err("a percentage 0..100".into());
                }
                self.rwmixread = if key == "rwmixread" { v } else { 100 - v };
            }
            "random_distribution" => self.random_distribution = parse_distribution(need(value)?, kb)?,
            "percentage_random" => self.percentage_random = pct_list(need(value)?)?,
            "randseed" => self.randseed = Some(parse_int(need(value)?, kb)?),
            "randrepeat" => self.randrepeat = flag(value)?,
            "norandommap" => self.norandommap = flag(value)?,
            "filename" => self.filename = Some(need(value)?.to_string()),
            "fdp" => self.fdp = flag(value)?,
            "fdp_pli" | "plids" => self.plids = Some(parse_id_list(need(value)?)?),
            "fdp_pli_select" | "plid_select" => {
                self.plid_select = match need(value)?.to_ascii_lowercase().as_str() {
                    "roundrobin" => PlidSelect::RoundRobin,
                    "random" => PlidSelect::Random,
                    "scheme" => PlidSelect::Scheme,
                    _ => return Err("roundrobin, random or scheme".into()),
                }
            }
            "dataplacement" => {
                self.dataplacement = match need(value)?.to_ascii_lowercase().as_str() {
                    "none" => DataPlacement::None,
                    "fdp" => DataPlacement::Fdp,
                    "streams" => DataPlacement::Streams,
                    _ => return Err("none, fdp or streams".into()),
                }
            }
            "dp_scheme" => self.dp_scheme = Some(need(value)?.to_string()),
            "kb_base" => {
                self.kb_base = match need(value)?.trim() {
                    "1024" => 1024,
                    "1000" => 1000,
                    _ => return Err("1024 or 1000".into()),
                }
            }
            "stonewall" | "wait_for_previous" => self.stonewall = flag(value)?,
            "new_group" => self.new_group = flag(value)?,
            "iodepth" => self.timing.iodepth = u32_of(parse_int(need(value)?, kb)?, "a queue depth")?.max(1),
            "rate" => self.timing.rate = rate_list(need(value)?, kb)?,
            "rate_iops" => self.timing.rate_iops = rate_list(need(value)?, kb)?,
            "time_based" => self.timing.time_based = flag(value)?,
            "runtime" | "timeout" => self.timing.runtime_ns = Some(parse_time_ns(need(value)?, 1_000_000_000)?),
            "ramp_time" => self.timing.ramp_time_ns = Some(parse_time_ns(need(value)?, 1_000_000_000)?),
            "startdelay" => {
                // A range picks a random delay in fio; keep the lower bound.
                let v = need(value)?;
                let lo = v.split(['-', ':']).next().unwrap_or(v);
                self.timing.startdelay_ns = Some(parse_time_ns(lo, 1_000_000_000)?)
            }
            "thinktime" => self.timing.thinktime_ns = Some(parse_time_ns(need(value)?, 1_000)?),
            "ioengine" => self.timing.ioengine = Some(need(value)?.to_string()),
            "direct" => self.timing.direct = flag(value)?,
            "buffered" => self.timing.direct = !flag(value)?,
            _ => {
                if KEPT.contains(&key) {
                    self.other.push((key.to_string(), value.map(str::to_string)));
                } else if NOT_MODELLED.contains(&key) {
                    self.other.push((key.to_string(), value.map(str::to_string)));
                    return Ok(Applied::NotModelled);
                } else {
                    return Ok(Applied::Unknown);
                }
            }
        }
        Ok(Applied::Ok)
    }
}
