//! `[timing]`: the timing model of a flash drive, its cache, and of a disk.

use super::*;

/// `[timing]`: the timing model (off by default). Needs `[device.geometry]` for page size,
/// planes, dies and channels.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingSpec {
    /// Run the timing model (default false).
    #[serde(default)]
    pub enabled: bool,
    /// "slc" | "tlc" | "qlc": default tR, tPROG, tBERS and P/E cycles (docs/model.md).
    #[serde(default = "default_nand")]
    pub nand: String,
    /// Overrides, e.g. "50us", "937.5us", "5ms".
    pub t_read: Option<Duration>,
    /// Override of the NAND program time (tPROG), e.g. "937.5us".
    pub t_prog: Option<Duration>,
    /// Program time of an SLC-mode program (pSLC write cache), e.g. "320us".
    pub t_prog_slc: Option<Duration>,
    /// Override of the block erase time (tBERS), e.g. "5ms".
    pub t_erase: Option<Duration>,
    /// Override of the rated program/erase cycles.
    pub pe_cycles: Option<u32>,
    /// NAND bus rate per channel, e.g. "1600MT/s" (8-bit bus: 1 byte per transfer).
    #[serde(default = "default_channel_rate")]
    pub channel_rate: Rate,
    /// Host interface: "pcie3x4", "pcie4x4", "pcie5x4", ... or a rate like "7GB/s".
    #[serde(default = "default_host_link")]
    pub host_link: HostLink,
    /// The controller's datapath (DRAM buffer and ECC engines) as a shared rate, e.g.
    /// "6.8GB/s": every byte crossing the NAND interface crosses it once (host programs and
    /// reads once, GC copies twice). Default (or "none"): not modelled (no limit).
    pub datapath: Option<RateOrNone>,
    /// How the datapath orders transfers: "host-reads-first" (default: a host read waits only
    /// for other host reads, as controllers put host reads ahead of background work) or "fcfs"
    /// (first come, first served: a read waits behind GC's copies booked before it).
    #[serde(default)]
    pub datapath_arbitration: DatapathArbitration,
    /// Write buffer size (writes complete once buffered).
    #[serde(default = "default_write_buffer")]
    pub write_buffer: Bytes,
    /// Per page type array read times (LSB first), e.g. ["45us", "60us", "75us"] for TLC;
    /// overrides t_read for host reads (GC reads use t_read).
    pub t_read_pages: Option<Vec<Duration>>,
    /// Host reads suspend programs and erases on their die.
    #[serde(default)]
    pub program_suspend: bool,
    /// Time from suspend to the read starting (tSUS).
    #[serde(default = "twenty_us", alias = "suspend_overhead")]
    pub suspend_latency: Duration,
    /// Time from suspending an erase to the read starting.
    #[serde(default = "twenty_us")]
    pub erase_suspend_latency: Duration,
    /// Time a resume adds to the suspended program or erase.
    #[serde(default = "twenty_us")]
    pub resume_overhead: Duration,
    /// Suspends one program or erase accepts before reads wait for it.
    #[serde(default = "default_max_suspends")]
    pub max_suspends: u32,
    /// Submission queues: "per-job" (default; every job has its own) or "per-namespace" (the
    /// jobs of one namespace share a queue that the drive takes in order, as the jobs of one
    /// VM share its virtual disk: a command behind a write waiting for buffer space waits).
    #[serde(default)]
    pub queues: Queues,
    /// Most dies programming at once (power budget; 0 = no limit).
    #[serde(default)]
    pub max_active_programs: u32,
    /// Controller time per read command (added to every read's latency).
    #[serde(default = "zero_us")]
    pub read_overhead: Duration,
    /// Controller time per write command (added to every write's latency).
    #[serde(default = "zero_us")]
    pub write_overhead: Duration,
    /// Time each write command holds the controller's one command processor (caps small-write
    /// IOPS at its inverse), e.g. "5.4us"; default none.
    #[serde(default = "zero_us")]
    pub write_command_time: Duration,
    /// Zone Reset latency (ZNS): fixed part, e.g. "1.58ms", and part per GiB the zone held,
    /// e.g. "13.1ms"; default the plain command time.
    #[serde(default = "zero_us")]
    pub zone_reset_time: Duration,
    /// Zone Reset latency (ZNS): part per GiB the zone held, e.g. "13.1ms" (see `zone_reset_time`).
    #[serde(default = "zero_us")]
    pub zone_reset_time_per_gib: Duration,
    /// Background GC when the host is idle: keep at least this many free erase units per
    /// reclaim group (default gc_free_target + 2; 0 = off).
    pub background_gc_free: Option<u32>,
    /// Mechanics of a hard disk (`device.kind = "smr"`): the `smr-hm-14tb` preset gives them.
    /// The NAND keys above do not apply to a disk.
    pub hdd: Option<HddSpec>,
    /// The regular cache device in front of the disks of `[host] layer = "dm-zoned"` (a
    /// device without a media model: rate and latency). Required when the layer has one.
    pub cache: Option<CacheTimingSpec>,
    /// Log bandwidth over time in intervals of this length (fio's `log_avg_msec`), e.g. "1s";
    /// with dm-zoned also the free cache zones and each disk's reclaim writes. Default: no log.
    pub log_interval: Option<Duration>,
}

/// `[timing.cache]`: the cache device of dm-zoned (wafsim_time::plain; docs/model.md, "Cache
/// device"). Rates are sustained transfer rates; `latency` is added to every read and write.
///
/// ```toml
/// [timing.cache]
/// write = "2.5GB/s"
/// read = "3.2GB/s"
/// latency = "20us"
/// shared = false      # reads and writes use separate pipes (true: one pipe for both)
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheTimingSpec {
    /// Sustained write rate, e.g. "2.5GB/s".
    pub write: Rate,
    /// Sustained read rate, e.g. "3.2GB/s".
    pub read: Rate,
    /// Added to every read and write, e.g. "20us" (default 0).
    #[serde(default = "zero_us")]
    pub latency: Duration,
    /// Reads and writes share one transfer pipe (default false: separate pipes).
    #[serde(default)]
    pub shared: bool,
}

/// `[timing.hdd]`: a mechanical disk (wafsim_time::hdd::HddConfig; docs/model.md,
/// "Host-managed SMR disks"). Capacity and block size come from the device.
///
/// ```toml
/// [timing.hdd]
/// rpm = 7200
/// heads = 16
/// od_rate = "235.7MiB/s"
/// id_od_ratio = 0.5
/// command_overhead = "0.5ms"
/// scheduling = "sptf"
/// write_cache_cmds = 24
/// seek_read = { track_to_track = "0.23ms", average = "7.4ms", full_stroke = "15ms" }
/// seek_write = { track_to_track = "0.32ms", average = "8.2ms", full_stroke = "15.8ms" }
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddSpec {
    /// Spindle speed, revolutions per minute.
    pub rpm: u32,
    /// Recording surfaces (one head each).
    pub heads: u32,
    /// Sustained media rate at the outer diameter, e.g. "235.7MiB/s".
    pub od_rate: Rate,
    /// Media rate at the inner diameter / at the outer diameter, in (0, 1].
    pub id_od_ratio: f64,
    /// Controller time per command (not paid by a command that streams on from the last one).
    pub command_overhead: Duration,
    /// "sptf" (shortest positioning time first, the default) or "fifo".
    #[serde(default)]
    pub scheduling: HddScheduling,
    /// Writes the drive acknowledges before they reach the media (0 = write-through).
    #[serde(default)]
    pub write_cache_cmds: u32,
    /// Seek figures of reads.
    pub seek_read: SeekSpec,
    /// Seek figures of writes (writes settle longer).
    pub seek_write: SeekSpec,
}

/// Datasheet seek figures (settling included, command overhead not).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeekSpec {
    /// Single-track seek, e.g. "0.23ms".
    pub track_to_track: Duration,
    /// Weighted average over all seek lengths.
    pub average: Duration,
    /// Full-stroke seek (outer to inner diameter), e.g. "15ms".
    pub full_stroke: Duration,
}

/// How jobs map onto submission queues in timed runs (see [`TimingSpec::queues`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Queues {
    /// Every job has its own queue (the default).
    #[default]
    PerJob,
    /// The jobs of one namespace share one queue, taken in order.
    PerNamespace,
}

fn default_nand() -> String {
    "tlc".into()
}

fn default_channel_rate() -> Rate {
    default_of("1600MT/s")
}

fn default_host_link() -> HostLink {
    default_of("pcie4x4")
}

fn default_write_buffer() -> Bytes {
    default_of("64MiB")
}

/// Default suspend latencies and resume overhead.
fn twenty_us() -> Duration {
    default_of("20us")
}

fn default_max_suspends() -> u32 {
    5
}

/// Default controller overheads (none unless a preset or the experiment sets them).
fn zero_us() -> Duration {
    default_of("0us")
}
