//! Typed job options and the table that maps fio option names onto them.

use super::size::{
    parse_bool, parse_bs_list, parse_bsrange_list, parse_bssplit_list, parse_id_list, parse_int, parse_range,
    parse_size, parse_size_percent_or_zones, parse_time_ns, split_ddir, SizeSpec,
};

/// `rw=` / `readwrite=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `trim`: sequential trims.
    Trim,
    /// `randread`: random reads.
    RandRead,
    /// `randwrite`: random writes.
    RandWrite,
    /// `randtrim`: random trims.
    RandTrim,
    /// `rw` / `readwrite`: sequential mixed reads and writes.
    ReadWrite,
    /// `randrw`: random mixed reads and writes.
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
    /// `sequential`: an I/O that is not random continues from the end of the previous one (fio's
    /// default).
    Sequential,
    /// `identical`: an I/O that is not random repeats the offset of the previous one.
    Identical,
}

/// `random_distribution=` (one per data direction; only `zoned`/`zoned_abs` may differ).
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Uniform (`random`).
    Uniform,
    /// `zipf:theta[:center]`.
    Zipf {
        /// The exponent (theta), > 0 and not 1.
        theta: f64,
        /// Where rank 0 lands, as a fraction of the range in [0, 1]; `None` scatters the ranks.
        center: Option<f64>,
    },
    /// `pareto:h[:center]`: a fraction `h` of accesses goes to a fraction `1-h` of the blocks.
    Pareto {
        /// The Pareto parameter `h`, in (0, 1).
        h: f64,
        /// Where rank 0 lands, as a fraction of the range in [0, 1]; `None` scatters the ranks.
        center: Option<f64>,
    },
    /// `normal[:dev[:center]]`: deviation in percent of the range, center in [0, 1] (default 0.5).
    Normal {
        /// Standard deviation, percent of the range.
        dev_pct: f64,
        /// Mean, as a fraction of the range in [0, 1].
        center: f64,
    },
    /// `zoned:` (`SizeSpec::Percent` sizes) or `zoned_abs:` (`SizeSpec::Bytes`):
    /// `(access percentage, zone size)` in address order.
    Zoned(Vec<(f64, SizeSpec)>),
}

/// `dataplacement=` (or `fdp=1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataPlacement {
    /// No placement directive on writes (fio's default).
    None,
    /// NVMe Flexible Data Placement: writes carry a placement handle.
    Fdp,
    /// NVMe streams directive: writes carry a stream id.
    Streams,
}

/// `plid_select=` / `fdp_pli_select=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlidSelect {
    /// Placement ids in turn (fio's default).
    RoundRobin,
    /// A placement id drawn at random for each write.
    Random,
    /// Offset ranges from `dp_scheme` (parsed, not yet generated).
    Scheme,
}

/// `file_service_type=`: which of a job's `nrfiles` files the next I/O goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileService {
    /// `roundrobin[:n]` (fio's default, n = 1): `n` I/Os per file, files in turn.
    RoundRobin(u32),
    /// `sequential`: finish one file before moving to the next.
    Sequential,
    /// `random[:n]`: `n` I/Os to a file chosen uniformly at random.
    Random(u32),
    /// `zipf`, `pareto`, `normal`/`gauss` (with their parameters): fio accepts them; wafsim
    /// refuses a multi-file job that uses one (the value is kept for the message).
    Skewed(String),
}

/// `zonemode=`: how `zonesize`, `zonerange`, `zoneskip` (and the `z` size suffix) apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZoneMode {
    /// Not given: fio makes it `strided` when `zonesize` is set, else `none` (init.c
    /// `fixup_options`). An assembled job never holds it.
    #[default]
    NotSpecified,
    /// No zoning (`zonesize` with `zonemode=none` is an error in fio).
    None,
    /// `zonesize` bytes of I/O in a window of `zonerange` bytes, then skip `zoneskip` bytes.
    Strided,
    /// Zoned block device: writes at the write pointers of the device's zones (see
    /// [`super::zbd`]).
    Zbd,
}

/// The zoned-device options (`zonemode=zbd`, and `zonemode=strided` where they apply).
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneOptions {
    /// `zonemode=` (as given; [`ZoneMode::NotSpecified`] until the job is assembled).
    pub mode: ZoneMode,
    /// `zonerange=` (strided: the window random offsets fall in; default `zonesize`).
    pub range: Option<u64>,
    /// `zonecapacity=` (zbd on a namespace that is not zoned: the writable part of each zone).
    pub capacity: Option<u64>,
    /// `zoneskip=` (bytes or `Nz` zones; resolved to bytes once the zone size is known).
    pub skip: Option<SizeSpec>,
    /// `read_beyond_wp=`.
    pub read_beyond_wp: bool,
    /// `max_open_zones=` (0 = the device's limit, or none).
    pub max_open_zones: u32,
    /// `job_max_open_zones=` (0 = none).
    pub job_max_open_zones: u32,
    /// `ignore_zone_limits=`.
    pub ignore_zone_limits: bool,
    /// `zone_reset_threshold=` (0..=1).
    pub reset_threshold: f64,
    /// `zone_reset_frequency=` (0..=1; 0 = off).
    pub reset_frequency: f64,
}

impl Default for ZoneOptions {
    fn default() -> Self {
        ZoneOptions {
            mode: ZoneMode::NotSpecified,
            range: None,
            capacity: None,
            skip: None,
            read_beyond_wp: false,
            max_open_zones: 0,
            job_max_open_zones: 0,
            ignore_zone_limits: false,
            reset_threshold: 0.0,
            reset_frequency: 0.0,
        }
    }
}

/// Options that only a timing model will use; parsed and kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// `iodepth=`: I/Os kept in flight (at least 1).
    pub iodepth: u32,
    /// Bytes/s per direction (read, write, trim).
    pub rate: [Option<u64>; 3],
    /// `rate_iops=`: I/Os per second per direction (read, write, trim).
    pub rate_iops: [Option<u64>; 3],
    /// `time_based`: run for `runtime` even if the I/O amount is done, repeating the workload.
    pub time_based: bool,
    /// `runtime=`, ns.
    pub runtime_ns: Option<u64>,
    /// `ramp_time=`, ns: time before statistics are taken (it adds to the runtime).
    pub ramp_time_ns: Option<u64>,
    /// `startdelay=`, ns (the lower bound when a range is given); parsed and kept, not modelled.
    pub startdelay_ns: Option<u64>,
    /// `thinktime=`, ns (the value is in microseconds unless it has a unit); parsed and kept, not
    /// modelled.
    pub thinktime_ns: Option<u64>,
    /// `ioengine=`, as given; decides whether the job's I/O reaches a block device and whether
    /// placement directives are passed ([`engine_kind`], [`engine_passes_placement`]).
    pub ioengine: Option<String>,
    /// `direct=` (or `buffered=` inverted): O_DIRECT I/O, which fio requires for zbd writes to a
    /// zoned drive.
    pub direct: bool,
}

/// Every option of one job, typed. Defaults follow the fio HOWTO.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOptions {
    /// `name=` (defaults to the section name).
    pub name: Option<String>,
    /// `description=`: free text, not used.
    pub description: Option<String>,
    /// `rw=` / `readwrite=`: the I/O pattern.
    pub rw: RwMode,
    /// The `:<nr>` suffix of `rw=`: for random patterns the number of I/Os per new random
    /// offset (0 = never random, as in fio); for sequential ones the bytes skipped after each
    /// I/O, negative to go backwards (`rw=read:-8k`).
    pub rw_modifier: Option<i64>,
    /// `rw_sequencer=`: what the I/Os between random offsets do when `rw=randX:<n>` is given.
    pub rw_sequencer: RwSequencer,
    /// `bs=` per direction (read, write, trim); `None` = default 4096.
    pub bs: [Option<u64>; 3],
    /// `bsrange=` per direction (read, write, trim): block sizes `(min, max)` in bytes.
    pub bsrange: [Option<(u64, u64)>; 3],
    /// `bssplit=` per direction (read, write, trim): `(block size in bytes, percentage)` pairs.
    pub bssplit: [Option<Vec<(u64, u32)>>; 3],
    /// `size=`: bytes (or a percentage or zone count) of the region the job covers; `None` = the
    /// rest of the namespace.
    pub size: Option<SizeSpec>,
    /// `offset=`: start of the job's region (bytes, a percentage or zones).
    pub offset: Option<SizeSpec>,
    /// `offset_increment=`: added to the offset once per `numjobs` clone.
    pub offset_increment: Option<SizeSpec>,
    /// `offset_align=`, bytes: alignment of an offset given as a percentage (default the smallest
    /// block size).
    pub offset_align: Option<u64>,
    /// `io_size=` / `io_limit=`: the amount of I/O per loop (default `size`).
    pub io_size: Option<SizeSpec>,
    /// `loops=`: passes over the region (at least 1).
    pub loops: u32,
    /// `number_ios=`: I/Os per loop (`None` = no limit).
    pub number_ios: Option<u64>,
    /// `numjobs=`: clones of the job (1 to 65536).
    pub numjobs: u32,
    /// `rwmixread=` (or 100 - `rwmixwrite=`): percentage of a mixed job's I/Os that are reads.
    pub rwmixread: u32,
    /// `random_distribution=` per direction (read, write, trim).
    pub random_distribution: [Distribution; 3],
    /// `percentage_random=` per direction (read, write, trim): percent of a random job's I/Os that
    /// take a random offset; the others continue sequentially.
    pub percentage_random: [u32; 3],
    /// `randseed=`: seed of the job's random streams (replaces the caller's seed).
    pub randseed: Option<u64>,
    /// `randrepeat=`: parsed and kept; the streams are always repeatable for a seed.
    pub randrepeat: bool,
    /// `norandommap`: uniform random offsets drawn independently instead of once per block per
    /// pass.
    pub norandommap: bool,
    /// `filename=`: the target file or device, as given.
    pub filename: Option<String>,
    /// `nrfiles=` / `nr_files=`: files per job (1 unless given; forced to 1 when `filename=`
    /// names the target, as fio does).
    pub nrfiles: u32,
    /// `filesize=`: `(low, high)` bytes per file (equal for a fixed size).
    pub filesize: Option<(u64, u64)>,
    /// `file_service_type=`.
    pub file_service: FileService,
    /// `zonesize=`: the zone size of `zonemode=strided` (and of zbd on a namespace that is not
    /// zoned); turns `z` sizes (`size=4z`) into bytes.
    pub zonesize: Option<u64>,
    /// `zonemode=` and the other zone options.
    pub zones: ZoneOptions,
    /// `write_iolog=FILE`: where fio would log the job's I/O (wafsim's writer is wired by the
    /// caller).
    pub write_iolog: Option<String>,
    /// `fdp=1`: Flexible Data Placement (same as `dataplacement=fdp`).
    pub fdp: bool,
    /// `dataplacement=` / `data_placement=`.
    pub dataplacement: DataPlacement,
    /// `plids=` / `fdp_pli=`: the placement ids the job's writes may carry (`None`:
    /// `0..available_plids` of the [`SourceParams`](super::SourceParams), or just 0 when that count
    /// is not given).
    pub plids: Option<Vec<u16>>,
    /// `plid_select=` / `fdp_pli_select=`: how a write picks its id among `plids`.
    pub plid_select: PlidSelect,
    /// `dp_scheme=`: file of offset ranges for `plid_select=scheme` (kept; the scheme is not
    /// generated).
    pub dp_scheme: Option<String>,
    /// `kb_base=`: 1024 (fio's default: `k` is 1024, `ki` 1000) or 1000 (`k` is 1000, `ki` 1024),
    /// for the job's size values (read before the other options, wherever it stands).
    pub kb_base: u32,
    /// `stonewall` / `wait_for_previous`: the job starts a new phase, after every earlier job has
    /// finished.
    pub stonewall: bool,
    /// `new_group`: starts a new reporting group in fio; parsed and kept, no effect here.
    pub new_group: bool,
    /// Host-side options (queue depth, rates, runtime, engine).
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
            nrfiles: 1,
            filesize: None,
            file_service: FileService::RoundRobin(1),
            zonesize: None,
            zones: ZoneOptions::default(),
            write_iolog: None,
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

/// fio's `ZBD_MAX_WRITE_ZONES`: the largest `max_open_zones` / `job_max_open_zones`.
pub const MAX_WRITE_ZONES: u32 = 4096;

/// fio's option aliases (`.alias` in fio's options.c, fio 3.33 and later), `(alias, option)`:
/// an alias is handled exactly as its option, and [`canonical_option`] maps one to the other.
pub const ALIASES: &[(&str, &str)] = &[
    ("readwrite", "rw"),
    ("iodepth_batch_submit", "iodepth_batch"),
    ("iodepth_batch_complete", "iodepth_batch_complete_min"),
    ("io_limit", "io_size"),
    ("fill_fs", "fill_device"),
    ("fileoffset", "offset"),
    ("blocksize", "bs"),
    ("blockalign", "ba"),
    ("blocksize_range", "bsrange"),
    ("blocksize_unaligned", "bs_unaligned"),
    ("nr_files", "nrfiles"),
    ("timeout", "runtime"),
    ("iomem", "mem"),
    ("mem_align", "iomem_align"),
    ("ratemin", "rate_min"),
    ("ratecycle", "rate_cycle"),
    ("wait_for_previous", "stonewall"),
    ("disable_bw", "disable_bw_measurement"),
    ("ss", "steadystate"),
    ("ss_dur", "steadystate_duration"),
    ("ss_ramp", "steadystate_ramp_time"),
    ("ss_interval", "steadystate_check_interval"),
    ("data_placement", "dataplacement"),
    ("fdp_pli_select", "plid_select"),
    ("fdp_pli", "plids"),
    // Separate options in fio 3.33, aliases since; neither changes the generated I/O.
    ("log_max_value", "log_window_value"),
    ("log_unix_epoch", "log_alternate_epoch"),
    ("allrandrepeat", "randrepeat"),
];

/// The option an alias stands for (the name itself if it is not an alias).
pub fn canonical_option(key: &str) -> &str {
    ALIASES.iter().find(|(a, _)| *a == key).map_or(key, |(_, o)| o)
}

/// Options typed in [`JobOptions`] (handled by [`JobOptions::apply`]).
pub const MODELLED: &[&str] = &[
    "name", "description", "rw", "rw_sequencer", "bs", "bsrange", "bssplit", "size", "offset",
    "offset_increment", "offset_align", "io_size", "loops", "number_ios", "numjobs", "rwmixread",
    "rwmixwrite", "random_distribution", "percentage_random", "randseed", "randrepeat", "norandommap",
    "filename", "nrfiles", "filesize", "file_service_type", "zonesize", "zonemode", "zonerange", "zonecapacity",
    "zoneskip", "read_beyond_wp", "max_open_zones", "job_max_open_zones", "ignore_zone_limits",
    "zone_reset_threshold", "zone_reset_frequency", "write_iolog", "fdp", "plids",
    "plid_select", "dataplacement", "dp_scheme", "kb_base", "stonewall", "new_group", "iodepth", "rate",
    "rate_iops", "time_based", "runtime", "ramp_time", "startdelay", "thinktime", "ioengine", "direct",
    "buffered",
];

/// fio options that do not change which blocks are read/written; accepted and kept verbatim.
pub const KEPT: &[&str] = &[
    "group_reporting", "thread", "invalidate", "ioscheduler", "iodepth_batch", "iodepth_batch_complete_min",
    "iodepth_batch_complete_max", "iodepth_low", "gtod_reduce", "gtod_cpu", "clocksource", "cpus_allowed",
    "cpus_allowed_policy", "cpumask", "numa_cpu_nodes", "numa_mem_policy", "nice", "prio", "prioclass",
    "priohint", "log_avg_msec", "log_window_value", "log_offset", "log_compression", "log_compression_cpus",
    "log_store_compressed", "log_hist_msec", "log_hist_coarseness", "log_entries", "log_prio",
    "log_issue_time", "log_alternate_epoch", "log_alternate_epoch_clock_id", "job_start_clock_id",
    "per_job_logs", "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log", "disable_lat",
    "disable_clat", "disable_slat", "disable_bw_measurement", "lat_percentiles", "clat_percentiles",
    "slat_percentiles", "percentile_list", "significant_figures", "block_error_percentiles", "bwavgtime",
    "iopsavgtime", "disk_util", "fixedbufs", "registerfiles", "sqthread_poll", "sqthread_poll_cpu", "hipri",
    "nonvectored", "force_async", "cmd_type", "nowait", "unified_rw_reporting", "exitall", "exit_what",
    "create_serialize", "create_fsync", "create_on_open", "create_only", "allow_file_create",
    "allow_mounted_write", "overwrite", "end_fsync", "end_syncfs", "fsync_on_close", "zero_buffers",
    "refill_buffers", "scramble_buffers", "buffer_compress_percentage", "buffer_compress_chunk",
    "buffer_pattern", "dedupe_percentage", "dedupe_mode", "dedupe_working_set_percentage", "dedupe_global",
    "random_generator", "unit_base", "continue_on_error", "ignore_error", "error_dump", "uid", "gid",
    "exec_prerun", "exec_postrun", "rate_process", "rate_min", "rate_iops_min", "rate_cycle",
    "rate_ignore_thinktime", "latency_target", "latency_window", "latency_percentile", "latency_run",
    "max_latency", "mem", "iomem_align", "hugepage-size", "lockmem", "fadvise_hint", "fallocate",
    "serialize_overlap", "io_submit_mode", "userspace_reap", "cmdprio_percentage", "cmdprio_class", "cmdprio",
    "cmdprio_bssplit", "pre_read", "unlink", "unlink_each_loop", "steadystate", "steadystate_duration",
    "steadystate_ramp_time", "steadystate_check_interval", "directory", "filename_format", "unique_filename",
    "lockfile", "openfiles", "thinktime_spin", "thinktime_blocks", "thinktime_blocks_type", "thinktime_iotime",
    "thinkcycles", "ramp_size", "flow_id", "flow", "flow_sleep", "flow_watermark", "sync", "stats", "cgroup",
    "cgroup_weight", "cgroup_nodelete", "softrandommap", "experimental_verify", "verify_state_save",
    "verify_state_load", "verifysort", "verifysort_nr", "atomic", "gpu_dev_id", "comm", "filetype",
];

/// Real fio options whose effect is not modelled (a warning is emitted).
pub const NOT_MODELLED: &[&str] = &[
    "verify", "do_verify", "verify_only", "verify_backlog", "verify_backlog_batch", "verify_interval",
    "verify_offset", "verify_pattern", "verify_pattern_interval", "verify_fatal", "verify_dump", "verify_async",
    "verify_async_cpus", "verify_policy", "verify_write_sequence", "verify_header_seed", "trim_percentage",
    "trim_backlog", "trim_backlog_batch", "trim_verify_zero", "recover_zbd_write_error", "write_zone_remainder",
    "ba", "bs_unaligned",
    "bs_is_seq_rand", "fill_device", "file_append", "fsync", "fdatasync", "write_barrier", "sync_file_range",
    "write_hint", "stream_id", "read_iolog", "read_iolog_chunked", "replay_no_stall", "replay_time_scale",
    "replay_redirect", "replay_align", "replay_scale", "replay_skip", "wait_for", "opendir",
    "exitall_on_error", "merge_blktrace_file", "merge_blktrace_scalars", "merge_blktrace_iters",
    "sprandom", "spr_num_regions", "spr_op", "spr_cs", "num_range",
    "random_sequence_stride",
];

/// Options fio rejects when given (`FIO_OPT_DEPRECATED`: "Option ... is deprecated").
const REMOVED: &[&str] = &["percentage_sequential", "rwmixcycle"];

/// Options of fio's type `FIO_OPT_STR_SET`: a flag whose value is optional. On fio's command
/// line they are the only ones that do not take the next argument as their value.
pub const FLAGS: &[&str] = &[
    "bs_unaligned", "norandommap", "time_based", "verify_only", "exitall", "exitall_on_error", "stonewall",
    "new_group", "thread", "group_reporting", "zero_buffers", "refill_buffers",
];

/// Is `key` (after [`canonical_option`]) an option wafsim knows, typed or not?
pub fn is_known_option(key: &str) -> bool {
    let k = canonical_option(key);
    MODELLED.contains(&k) || KEPT.contains(&k) || NOT_MODELLED.contains(&k) || REMOVED.contains(&k) || k == "profile"
}

/// What an I/O engine does with the job's I/O, as far as wafsim is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Reads and writes blocks of a file or block device by offset: the pattern wafsim simulates.
    Block,
    /// A plugin loaded by path (`external:...` or a path): assumed to do block I/O (SPDK's
    /// plugins do).
    External,
    /// Its I/O never reaches a block device the way a drive sees it; the reason says where it
    /// goes instead.
    NotBlock(&'static str),
    /// Not an engine fio knows.
    Unknown,
}

/// Classify an `ioengine=` value (fio 3.33's engines plus those added up to fio 3.42).
pub fn engine_kind(engine: &str) -> EngineKind {
    let e = engine.trim().to_ascii_lowercase();
    if e.starts_with("external") || e.contains('/') {
        return EngineKind::External;
    }
    match e.as_str() {
        // System-call and async interfaces to a file or block device.
        "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" | "libaio" | "io_uring" | "posixaio" | "solarisaio"
        | "windowsaio"
        // NVMe/SCSI passthrough and userspace drivers address the device's blocks directly.
        | "io_uring_cmd" | "sg" | "xnvme" | "libzbc" | "libblkio" | "spdk" | "spdk_bdev"
        // mmap/splice copy through the page cache or a pipe, but the data lands on the file.
        | "mmap" | "splice"
        // Network block devices and LUNs: still reads and writes of blocks by offset.
        | "nbd" | "libiscsi" | "rbd"
        // GPU-direct storage moves data between GPU memory and a file on a block device.
        | "libcufile" | "libhipfile" => EngineKind::Block,
        // cpp_null is fio's C++ example of an external null engine.
        "null" | "cpp_null" => EngineKind::NotBlock("completes every I/O without any device (fio's engine for testing fio itself; a block engine such as io_uring, libaio or psync runs the pattern on a drive)"),
        "cpuio" => EngineKind::NotBlock("burns CPU cycles and does no I/O"),
        "exec" => EngineKind::NotBlock("runs a program instead of doing I/O"),
        "page_fault" => EngineKind::NotBlock("touches anonymous memory pages (page faults), not a device"),
        "net" | "netsplice" => EngineKind::NotBlock("sends I/O over the network (TCP/UDP), not to a block device"),
        "rdma" | "librpma_apm_client" | "librpma_apm_server" | "librpma_gpspm_client" | "librpma_gpspm_server" => {
            EngineKind::NotBlock("moves data over RDMA to a remote host's memory, not to a block device")
        }
        "http" => EngineKind::NotBlock("stores objects over HTTP (S3, Swift, WebDAV), not blocks of a device"),
        "rados" => EngineKind::NotBlock("stores Ceph RADOS objects, not blocks of a device"),
        "dfs" => EngineKind::NotBlock("writes files in a DAOS container, not blocks of a device"),
        "gfapi" | "gfapi_async" => EngineKind::NotBlock("writes files on a GlusterFS volume over the network"),
        "nfs" => EngineKind::NotBlock("writes files on an NFS server over the network (libnfs)"),
        "libhdfs" => EngineKind::NotBlock("writes files in HDFS over the network"),
        "ime_psync" | "ime_psyncv" | "ime_aio" => EngineKind::NotBlock("writes files through DDN's IME burst buffer API"),
        "filecreate" | "filestat" | "filedelete" | "dircreate" | "dirstat" | "dirdelete" => {
            EngineKind::NotBlock("creates, stats or deletes files and directories (metadata operations), without reading or writing data")
        }
        "ftruncate" => EngineKind::NotBlock("truncates a file to each offset instead of writing it"),
        "falloc" => EngineKind::NotBlock("allocates and punches file space with fallocate() and moves no data"),
        "e4defrag" => EngineKind::NotBlock("moves ext4 file extents with defragmentation ioctls instead of reading and writing the job's blocks"),
        "mtd" => EngineKind::NotBlock("drives raw flash through Linux MTD, where the host erases blocks and there is no FTL"),
        "dev-dax" | "libpmem" | "pmemblk" => {
            EngineKind::NotBlock("writes persistent memory with CPU stores (DAX), not a block device")
        }
        _ => EngineKind::Unknown,
    }
}

/// Does the engine pass fio's data placement (`fdp`, `dataplacement`) to the device? In fio
/// only the NVMe passthrough engines set the directive fields (engines/nvme.c, xnvme.c), and
/// only they can fetch the FDP reclaim unit handles (`fdp_fetch_ruhs`).
pub fn engine_passes_placement(engine: &str) -> bool {
    let e = engine.trim().to_ascii_lowercase();
    matches!(e.as_str(), "io_uring_cmd" | "xnvme") || engine_kind(&e) == EngineKind::External
}

fn need(v: Option<&str>) -> Result<&str, String> {
    v.ok_or_else(|| "given a value (expected key=value)".to_string())
}

/// A value that must be given and not blank; `what` says what was expected.
fn not_empty<'a>(v: Option<&'a str>, what: &str) -> Result<&'a str, String> {
    match need(v)? {
        s if s.trim().is_empty() => Err(what.to_string()),
        s => Ok(s),
    }
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

const DIST_EXPECTED: &str = "a distribution (expected random, zipf:<theta>, pareto:<h>, normal[:<dev>], zoned:<pct>/<pct>:... or zoned_abs:<pct>/<size>:...)";

fn parse_distribution(s: &str, kb_base: u32) -> Result<[Distribution; 3], String> {
    let exp = DIST_EXPECTED;
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
                if let Some(part) = part {
                    out[i] = Distribution::Zoned(parse_zones(part, abs, kb_base)?);
                }
            }
            Ok(out)
        }
        "sequence" => Err(
            "a distribution fio 3.33 knows: \"sequence\" exists only in fio's development tree after fio 3.42 and wafsim does not model it".into(),
        ),
        _ => Err(exp.into()),
    }
}

/// One direction of `zoned:`/`zoned_abs:`, with fio's rules (options.c `split_parse_ddir`,
/// `zone_split_ddir`): entries end at the first empty one; in `zoned`, a zone whose size is
/// missing, empty or 0 (`20/` as in fio's rand-zones.fio) gets an equal share of what the
/// given sizes leave of 100% (rounded down, as fio does); access percentages must add up to
/// exactly 100 and sizes to at most 100%.
fn parse_zones(part: &str, abs: bool, kb_base: u32) -> Result<Vec<(f64, SizeSpec)>, String> {
    let exp = DIST_EXPECTED;
    let mut zones: Vec<(f64, Option<SizeSpec>)> = Vec::new();
    for z in part.split(':') {
        if z.trim().is_empty() {
            break;
        }
        let (a, b) = match z.split_once('/') {
            Some((a, b)) => (a, Some(b.trim())),
            None => (z, None),
        };
        let access = parse_float(a, exp)?;
        if access < 0.0 {
            return Err(exp.into());
        }
        let size = if abs {
            // fio: no '/' = size 0; an empty size does not parse.
            Some(SizeSpec::Bytes(match b {
                Some(b) => parse_size(b, kb_base).map_err(|_| exp.to_string())?,
                None => 0,
            }))
        } else {
            match b {
                None | Some("") => None,
                Some(b) => {
                    let p = parse_float(b, exp)?;
                    if p < 0.0 {
                        return Err(exp.into());
                    }
                    // fio: 0 means "not given", above 100 is clamped
                    (p > 0.0).then_some(SizeSpec::Percent(p.min(100.0)))
                }
            }
        };
        zones.push((access, size));
    }
    if zones.is_empty() || zones.len() > 256 {
        return Err(exp.into());
    }
    let total: f64 = zones.iter().map(|z| z.0).sum();
    if (total - 100.0).abs() > 1e-6 {
        return Err(format!("zone access percentages adding up to 100 (they add up to {total})"));
    }
    let given: f64 = zones.iter().filter_map(|z| if let Some(SizeSpec::Percent(p)) = z.1 { Some(p) } else { None }).sum();
    if given > 100.0 + 1e-6 {
        return Err("zone sizes adding up to at most 100%".into());
    }
    let missing = zones.iter().filter(|z| z.1.is_none()).count();
    let share = if missing > 0 { ((100.0 - given) / missing as f64).floor() } else { 0.0 };
    Ok(zones.into_iter().map(|(a, s)| (a, s.unwrap_or(SizeSpec::Percent(share)))).collect())
}

/// `rw=<pattern>[:<n>]`: the pattern and the signed modifier.
fn parse_rw(v: &str, kb: u32) -> Result<(RwMode, Option<i64>), String> {
    let (mode, modifier) = match v.split_once(':') {
        Some((m, n)) => (m, Some(n.trim())),
        None => (v, None),
    };
    let rw = RwMode::parse(mode).ok_or_else(|| {
        "an I/O pattern (expected read, write, trim, randread, randwrite, randtrim, rw, randrw, trimwrite or randtrimwrite)".to_string()
    })?;
    let Some(n) = modifier else { return Ok((rw, None)) };
    let (neg, mag) = match n.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, n.strip_prefix('+').unwrap_or(n)),
    };
    if rw.is_random() {
        // fio: atoi(), an I/O count
        if neg {
            return Err("a pattern with a non-negative I/O count (rw=randread:<n> issues n I/Os per random offset)".into());
        }
        // fio reads the count with atoi(): leading digits, the rest ignored
        let digits = &mag[..mag.find(|c: char| !c.is_ascii_digit()).unwrap_or(mag.len())];
        let c: u64 = digits.parse().map_err(|_| "a pattern with an I/O count (expected e.g. randread:8)".to_string())?;
        return Ok((rw, Some(i64::try_from(c).map_err(|_| "a smaller I/O count".to_string())?)));
    }
    let bytes = parse_int(mag, kb)?;
    let bytes = i64::try_from(bytes).map_err(|_| "a smaller skip".to_string())?;
    Ok((rw, Some(if neg { -bytes } else { bytes })))
}

/// `file_service_type=`.
fn parse_file_service(v: &str) -> Result<FileService, String> {
    let exp = "a file service type (expected roundrobin[:n], sequential, random[:n], zipf, pareto or normal)";
    let lower = v.trim().to_ascii_lowercase();
    let (kind, nr) = match lower.split_once(':') {
        Some((k, n)) => (k, Some(n)),
        None => (lower.as_str(), None),
    };
    // fio: atoi() of the postfix; 0 behaves like 1 (switch on every I/O).
    let count = || nr.map_or(Ok(1), |n| n.trim().parse::<u32>().map(|n| n.max(1)).map_err(|_| exp.to_string()));
    Ok(match kind {
        "roundrobin" => FileService::RoundRobin(count()?),
        "sequential" => FileService::Sequential,
        "random" => FileService::Random(count()?),
        "zipf" | "pareto" | "normal" | "gauss" => FileService::Skewed(v.trim().to_string()),
        _ => return Err(exp.into()),
    })
}

/// `size=`/`io_size=`: 0 and 0% mean "not given" in fio (the whole target, the size).
fn size_or_unset(v: &str, kb: u32) -> Result<Option<SizeSpec>, String> {
    Ok(match parse_size_percent_or_zones(v, kb)? {
        SizeSpec::Bytes(0) | SizeSpec::Zones(0) => None,
        SizeSpec::Percent(0.0) => None,
        s => Some(s),
    })
}

impl JobOptions {
    /// Apply one `key[=value]` (an alias is applied as its option). `Err` carries what was
    /// expected (the caller adds location, option and value).
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<Applied, String> {
        let kb = self.kb_base;
        let key = canonical_option(key);
        match key {
            "name" => self.name = Some(need(value)?.to_string()),
            "description" => self.description = value.map(str::to_string),
            "rw" => (self.rw, self.rw_modifier) = parse_rw(need(value)?, kb)?,
            "rw_sequencer" => {
                self.rw_sequencer = match need(value)?.to_ascii_lowercase().as_str() {
                    "sequential" => RwSequencer::Sequential,
                    "identical" => RwSequencer::Identical,
                    _ => return Err("sequential or identical".into()),
                }
            }
            "bs" => self.bs = parse_bs_list(not_empty(value, "a block size (fio refuses an empty bs=; e.g. bs=4k)")?, kb)?,
            "bsrange" => self.bsrange = parse_bsrange_list(not_empty(value, "a block size range (fio refuses an empty bsrange=; e.g. 4k-64k)")?, kb)?,
            "bssplit" => self.bssplit = parse_bssplit_list(not_empty(value, "a block size split (fio refuses an empty bssplit=; e.g. 4k/50:64k/50)")?, kb)?,
            "size" => self.size = size_or_unset(need(value)?, kb)?,
            "offset" => self.offset = Some(parse_size_percent_or_zones(need(value)?, kb)?),
            "offset_increment" => self.offset_increment = Some(parse_size_percent_or_zones(need(value)?, kb)?),
            "offset_align" => self.offset_align = Some(parse_size(need(value)?, kb)?),
            "io_size" => self.io_size = size_or_unset(need(value)?, kb)?,
            "loops" => self.loops = u32_of(parse_int(need(value)?, kb)?, "a loop count")?.max(1),
            // fio: 0 = no limit
            "number_ios" => self.number_ios = Some(parse_int(need(value)?, kb)?).filter(|&n| n > 0),
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
            "nrfiles" => {
                let n = parse_int(need(value)?, kb)?;
                if n == 0 || n > 1 << 20 {
                    return Err("a file count between 1 and 1048576".into());
                }
                self.nrfiles = n as u32;
            }
            "filesize" => {
                let v = need(value)?;
                self.filesize = Some(if v.contains(['-', ':']) {
                    parse_range(v, kb)?
                } else {
                    let b = parse_size(v, kb)?;
                    (b, b)
                })
                .filter(|&(lo, _)| lo > 0);
            }
            "file_service_type" => self.file_service = parse_file_service(need(value)?)?,
            "zonesize" => self.zonesize = Some(parse_size(need(value)?, kb)?).filter(|&z| z > 0),
            "zonemode" => {
                self.zones.mode = match need(value)?.trim().to_ascii_lowercase().as_str() {
                    "none" => ZoneMode::None,
                    "strided" => ZoneMode::Strided,
                    "zbd" => ZoneMode::Zbd,
                    _ => return Err("none, strided or zbd".into()),
                }
            }
            "zonerange" => self.zones.range = Some(parse_size(need(value)?, kb)?).filter(|&z| z > 0),
            "zonecapacity" => self.zones.capacity = Some(parse_size(need(value)?, kb)?).filter(|&z| z > 0),
            "zoneskip" => {
                self.zones.skip = match parse_size_percent_or_zones(need(value)?, kb)? {
                    SizeSpec::Percent(_) => return Err("a size or a number of zones (e.g. 256m or 2z)".into()),
                    SizeSpec::Bytes(0) | SizeSpec::Zones(0) => None,
                    s => Some(s),
                }
            }
            "read_beyond_wp" => self.zones.read_beyond_wp = flag(value)?,
            "max_open_zones" | "job_max_open_zones" => {
                // fio: an int with maxval ZBD_MAX_WRITE_ZONES (zbd_types.h)
                let n = parse_int(need(value)?, kb)?;
                if n > MAX_WRITE_ZONES as u64 {
                    return Err(format!("a zone count of at most {MAX_WRITE_ZONES} (fio's ZBD_MAX_WRITE_ZONES)"));
                }
                if key == "max_open_zones" {
                    self.zones.max_open_zones = n as u32;
                } else {
                    self.zones.job_max_open_zones = n as u32;
                }
            }
            "ignore_zone_limits" => self.zones.ignore_zone_limits = flag(value)?,
            "zone_reset_threshold" | "zone_reset_frequency" => {
                let v = parse_float(need(value)?, "a number between 0 and 1")?;
                if !(0.0..=1.0).contains(&v) {
                    return Err("a number between 0 and 1".into());
                }
                if key == "zone_reset_threshold" {
                    self.zones.reset_threshold = v;
                } else {
                    self.zones.reset_frequency = v;
                }
            }
            "write_iolog" => self.write_iolog = Some(need(value)?.to_string()),
            "fdp" => self.fdp = flag(value)?,
            "plids" => self.plids = Some(parse_id_list(need(value)?)?),
            "plid_select" => {
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
            "stonewall" => self.stonewall = flag(value)?,
            "new_group" => self.new_group = flag(value)?,
            // fio's minimum is 1 ("min value out of range"); 0 was silently taken as 1.
            "iodepth" => {
                self.timing.iodepth = u32_of(parse_int(need(value)?, kb)?, "a queue depth")?;
                if self.timing.iodepth == 0 {
                    return Err("a queue depth of at least 1 (fio refuses iodepth=0: \"min value out of range\")".into());
                }
            }
            "rate" => self.timing.rate = rate_list(need(value)?, kb)?,
            "rate_iops" => self.timing.rate_iops = rate_list(need(value)?, kb)?,
            "time_based" => self.timing.time_based = flag(value)?,
            "runtime" => self.timing.runtime_ns = Some(parse_time_ns(need(value)?, 1_000_000_000)?),
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
            "profile" => {
                return Err("supported: fio's built-in profiles (tiobench, act) generate their own jobs, which wafsim does not model".into())
            }
            // Kept verbatim (it changes which random offsets fio picks, not their kind), but only
            // the generators fio has: fio refuses any other name.
            "random_generator" => {
                let v = need(value)?;
                if !["tausworthe", "lfsr", "tausworthe64"].contains(&v.trim()) {
                    return Err("one of fio's generators: tausworthe, lfsr or tausworthe64".into());
                }
                self.other.push((key.to_string(), Some(v.to_string())));
            }
            _ if REMOVED.contains(&key) => {
                return Err(format!("accepted: fio no longer has this option (it fails with \"Option {key} is deprecated\")"))
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_entry_is_handled() {
        for k in MODELLED {
            let mut o = JobOptions::default();
            let r = o.apply(k, Some("1"));
            assert!(!matches!(r, Ok(Applied::Unknown)), "{k}");
        }
        for (a, o) in ALIASES {
            assert!(is_known_option(o), "alias target {o}");
            assert!(!ALIASES.iter().any(|(x, _)| x == o), "{a} -> {o} chains");
        }
        for f in FLAGS {
            assert!(is_known_option(f), "{f}");
        }
    }
}
