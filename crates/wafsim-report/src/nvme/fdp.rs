//! `nvme fdp configs|usage|stats|events|status`: the Flexible Data Placement log pages and the
//! Reclaim Unit Handle Status.
//!
//! Text follows `stdout_fdp_configs`, `stdout_fdp_usage`, `stdout_fdp_stats`,
//! `stdout_fdp_events` and `stdout_fdp_ruh_status` (src/nvme-print-stdout.c); JSON follows the
//! `json_nvme_fdp_*` functions (src/nvme-print-json.c). Layouts from libnvme's
//! nvme-types-nvm.h (`struct nvme_fdp_config_log`, `nvme_fdp_ruhu_log`, `nvme_fdp_stats_log`,
//! `nvme_fdp_events_log`, `nvme_fdp_ruh_status`).

use super::fmt::{hash_x, l10n, strftime_c_z, TextOptions};
use super::json::{Obj, J};

/// One FDP configuration descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpConfig {
    /// FDP Attributes: bit 7 valid, bit 4 volatile write cache, bits 3:0 reclaim group
    /// identifier format.
    pub fdpa: u8,
    /// Vendor Specific Size.
    pub vss: u8,
    /// Number of Reclaim Groups.
    pub nrg: u32,
    /// Max Placement Identifiers. Part of the descriptor, but nvme-cli prints it in neither
    /// format; kept so a caller can carry the whole descriptor.
    pub maxpids: u16,
    /// Number of Namespaces Supported.
    pub nnss: u32,
    /// Reclaim Unit Nominal Size, bytes.
    pub runs: u64,
    /// Estimated Reclaim Unit Time Limit, seconds.
    pub erutl: u32,
    /// Reclaim Unit Handle Type of each handle (NRUH = length): 1 initially isolated,
    /// 2 persistently isolated.
    pub ruh_types: Vec<u8>,
}

/// Reclaim Unit Handle Type 1 (`NVME_FDP_RUHT_INITIALLY_ISOLATED`).
pub const RUHT_INITIALLY_ISOLATED: u8 = 1;
/// Reclaim Unit Handle Type 2 (`NVME_FDP_RUHT_PERSISTENTLY_ISOLATED`).
pub const RUHT_PERSISTENTLY_ISOLATED: u8 = 2;

/// The FDP Configurations log page (20h).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpConfigs {
    /// The configuration descriptors (the log's N field is `len() - 1`).
    pub configs: Vec<FdpConfig>,
}

/// The Reclaim Unit Handle Usage log page (21h).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpUsage {
    /// Reclaim Unit Handle Attributes per handle: 0 unused, 1 host specified, 2 controller
    /// specified.
    pub ruha: Vec<u8>,
}

/// The FDP Statistics log page (22h); every counter is 128-bit bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpStats {
    /// Host Bytes with Metadata Written.
    pub hbmw: u128,
    /// Media Bytes with Metadata Written.
    pub mbmw: u128,
    /// Media Bytes Erased.
    pub mbe: u128,
}

/// Event type 00h: Reclaim Unit Not Fully Written.
pub const EVENT_RUNFW: u8 = 0x00;
/// Event type 01h: Reclaim Unit Active Time Limit Exceeded.
pub const EVENT_RUTLE: u8 = 0x01;
/// Event type 02h: Controller Level Reset Modified Reclaim Unit Handles.
pub const EVENT_RESET: u8 = 0x02;
/// Event type 03h: Invalid Placement Identifier.
pub const EVENT_PID: u8 = 0x03;
/// Event type 80h: Media Reallocated.
pub const EVENT_REALLOC: u8 = 0x80;
/// Event type 81h: Implicitly Modified Reclaim Unit Handle.
pub const EVENT_MODIFY: u8 = 0x81;
/// Event flag: Placement Identifier Valid.
pub const EVENT_F_PIV: u8 = 1 << 0;
/// Event flag: Namespace Identifier Valid.
pub const EVENT_F_NSIDV: u8 = 1 << 1;
/// Event flag: Location (reclaim group and handle) Valid.
pub const EVENT_F_LV: u8 = 1 << 2;

/// One FDP event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpEvent {
    /// Event Type ([`EVENT_RUNFW`] ...).
    pub event_type: u8,
    /// FDP Event Flags ([`EVENT_F_PIV`] | [`EVENT_F_NSIDV`] | [`EVENT_F_LV`]).
    pub flags: u8,
    /// Placement Identifier.
    pub pid: u16,
    /// Timestamp, milliseconds since the epoch (48-bit).
    pub timestamp_ms: u64,
    /// Timestamp attribute byte (synch, origin); JSON shows it in bits 55:48 of "timestamp"
    /// because nvme-cli reads the 8-byte timestamp field as one integer.
    pub timestamp_attr: u8,
    /// Namespace Identifier.
    pub nsid: u32,
    /// Media Reallocated only: Number of LBAs Moved.
    pub nlbam: u16,
    /// Media Reallocated only: the LBA, when the LBA Valid flag is set.
    pub lba: Option<u64>,
    /// Reclaim Group Identifier.
    pub rgid: u16,
    /// Reclaim Unit Handle Identifier.
    pub ruhid: u8,
}

/// The FDP Events log page (23h).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpEvents {
    /// The events (at most 63 in one page).
    pub events: Vec<FdpEvent>,
}

/// One Reclaim Unit Handle Status descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpRuhStatus {
    /// Placement Identifier.
    pub pid: u16,
    /// Reclaim Unit Handle Identifier.
    pub ruhid: u16,
    /// Estimated Active Reclaim Unit Time Remaining, seconds.
    pub earutr: u32,
    /// Reclaim Unit Available Media Writes, logical blocks.
    pub ruamw: u64,
}

/// The I/O Management Receive "Reclaim Unit Handle Status" (`nvme fdp status`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdpStatus {
    /// The descriptors.
    pub descriptors: Vec<FdpRuhStatus>,
}

/// `nvme fdp configs <dev> -e <egid>` text (with `opts.verbose` for `-H`).
pub fn print_fdp_configs(log: &FdpConfigs, opts: &TextOptions) -> String {
    let mut o = String::new();
    for c in &log.configs {
        o += &format!("FDP Attributes: {}\n", hash_x(c.fdpa as u64));
        if opts.verbose {
            let valid = c.fdpa >> 7;
            let rsvd = (c.fdpa >> 5) & 0x3;
            let vwc = (c.fdpa >> 4) & 1;
            let rgif = c.fdpa & 0xf;
            let not = |b: u8| if b != 0 { "" } else { "Not " };
            o += &format!(
                "  [7:7] : {}\tFDP Configuration {}Valid\n",
                hash_x(valid as u64),
                not(valid)
            );
            if rsvd != 0 {
                o += &format!("  [6:5] : {}\tReserved\n", hash_x(rsvd as u64));
            }
            o += &format!(
                "  [4:4] : {}\tFDP Volatile Write Cache {}Present\n",
                hash_x(vwc as u64),
                not(vwc)
            );
            o += &format!("  [3:0] : {}\tReclaim Group Identifier Format\n", hash_x(rgif as u64));
        }
        o += &format!("Vendor Specific Size: {}\n", c.vss);
        o += &format!("Number of Reclaim Groups: {}\n", c.nrg);
        o += &format!("Number of Reclaim Unit Handles: {}\n", c.ruh_types.len());
        o += &format!("Number of Namespaces Supported: {}\n", c.nnss);
        o += &format!("Reclaim Unit Nominal Size: {}\n", c.runs);
        o += &format!("Estimated Reclaim Unit Time Limit: {}\n", c.erutl);
        o += "Reclaim Unit Handle List:\n";
        for (j, &t) in c.ruh_types.iter().enumerate() {
            // nvme-cli tests only for type 1; anything else reads as persistently isolated.
            let name = if t == RUHT_INITIALLY_ISOLATED {
                "Initially Isolated"
            } else {
                "Persistently Isolated"
            };
            o += &format!("  [{j}]: {name}\n");
        }
    }
    o
}

/// `nvme fdp configs <dev> -e <egid> -o json`.
///
/// nvme-cli builds a per-configuration handle list but never attaches it, so the JSON carries
/// no handle types; reproduced as is. "n" is the log's N field (configurations - 1).
pub fn fdp_configs_json(log: &FdpConfigs) -> String {
    let mut r = Obj::new();
    r.num("n", log.configs.len().saturating_sub(1));
    let configs = log
        .configs
        .iter()
        .map(|c| {
            let mut o = Obj::new();
            o.num("fdpa", c.fdpa)
                .num("vss", c.vss)
                .num("nrg", c.nrg)
                .num("nruh", c.ruh_types.len())
                .num("nnss", c.nnss)
                .num("runs", c.runs)
                .num("erutl", c.erutl);
            o.done()
        })
        .collect();
    r.add("configs", J::Arr(configs));
    r.done().to_nvme_cli_string()
}

/// `nvme fdp usage <dev> -e <egid>` text.
pub fn print_fdp_usage(log: &FdpUsage) -> String {
    let mut o = String::new();
    for (i, &a) in log.ruha.iter().enumerate() {
        let name = match a {
            0 => "Unused",
            1 => "Host Specified",
            2 => "Controller Specified",
            _ => "Unknown",
        };
        o += &format!("Reclaim Unit Handle {i} Attributes: {} ({name})\n", hash_x(a as u64));
    }
    o
}

/// `nvme fdp usage <dev> -e <egid> -o json`.
pub fn fdp_usage_json(log: &FdpUsage) -> String {
    let mut r = Obj::new();
    r.num("nruh", log.ruha.len());
    let ruhus = log
        .ruha
        .iter()
        .map(|&a| {
            let mut o = Obj::new();
            o.num("ruha", a);
            o.done()
        })
        .collect();
    r.add("ruhus", J::Arr(ruhus));
    r.done().to_nvme_cli_string()
}

/// `nvme fdp stats <dev> -e <egid>` text.
pub fn print_fdp_stats(log: &FdpStats, opts: &TextOptions) -> String {
    let sep = opts.locale.thousands_sep();
    format!(
        "Host Bytes with Metadata Written (HBMW): {}\n\
         Media Bytes with Metadata Written (MBMW): {}\n\
         Media Bytes Erased (MBE): {}\n",
        l10n(log.hbmw, sep),
        l10n(log.mbmw, sep),
        l10n(log.mbe, sep)
    )
}

/// `nvme fdp stats <dev> -e <egid> -o json`: the counters as exact JSON integers.
pub fn fdp_stats_json(log: &FdpStats) -> String {
    let mut r = Obj::new();
    r.num("hbmw", log.hbmw).num("mbmw", log.mbmw).num("mbe", log.mbe);
    r.done().to_nvme_cli_string()
}

/// `nvme_fdp_event_to_string`.
pub fn fdp_event_name(t: u8) -> &'static str {
    match t {
        EVENT_RUNFW => "Reclaim Unit Not Fully Written",
        EVENT_RUTLE => "Reclaim Unit Active Time Limit Exceeded",
        EVENT_RESET => "Controller Level Reset Modified Reclaim Unit Handles",
        EVENT_PID => "Invalid Placement Identifier",
        EVENT_REALLOC => "Media Reallocated",
        EVENT_MODIFY => "Implicitly Modified Reclaim Unit Handle",
        _ => "Unknown",
    }
}

/// `nvme fdp events <dev> -e <egid>` text, with timestamps rendered as with `TZ=UTC` in
/// `opts.locale` (nvme-cli uses `localtime` and `strftime("%c %Z")`).
pub fn print_fdp_events(log: &FdpEvents, opts: &TextOptions) -> String {
    let mut o = String::new();
    for (i, e) in log.events.iter().enumerate() {
        let ts = e.timestamp_ms & 0xffff_ffff_ffff;
        o += &format!("Event[{i}]\n");
        o += &format!(
            "  Event Type: {} ({})\n",
            hash_x(e.event_type as u64),
            fdp_event_name(e.event_type)
        );
        o += &format!(
            "  Event Timestamp: {ts} ({})\n",
            strftime_c_z((ts / 1000) as i64, &opts.locale)
        );
        if e.flags & EVENT_F_PIV != 0 {
            o += &format!("  Placement Identifier (PID): {}\n", hash_x(e.pid as u64));
        }
        if e.flags & EVENT_F_NSIDV != 0 {
            o += &format!("  Namespace Identifier (NSID): {}\n", e.nsid);
        }
        if e.event_type == EVENT_REALLOC {
            o += &format!("  Number of LBAs Moved (NLBAM): {}\n", e.nlbam);
            if let Some(lba) = e.lba {
                o += &format!("  Logical Block Address (LBA): {}\n", hash_x(lba));
            }
        }
        if e.flags & EVENT_F_LV != 0 {
            o += &format!("  Reclaim Group Identifier: {}\n", e.rgid);
            // nvme-cli prints this label without a colon.
            o += &format!("  Reclaim Unit Handle Identifier {}\n", e.ruhid);
        }
        o += "\n";
    }
    o
}

/// `nvme fdp events <dev> -e <egid> -o json`.
pub fn fdp_events_json(log: &FdpEvents) -> String {
    let mut r = Obj::new();
    r.num("n", log.events.len());
    let events = log
        .events
        .iter()
        .map(|e| {
            let ts = (e.timestamp_ms & 0xffff_ffff_ffff) | ((e.timestamp_attr as u64) << 48);
            let mut o = Obj::new();
            o.num("type", e.event_type)
                .num("fdpef", e.flags)
                .num("pid", e.pid)
                .num("timestamp", ts)
                .num("nsid", e.nsid);
            if e.event_type == EVENT_REALLOC {
                o.num("nlbam", e.nlbam);
                if let Some(lba) = e.lba {
                    o.num("lba", lba);
                }
            }
            o.done()
        })
        .collect();
    r.add("events", J::Arr(events));
    r.done().to_nvme_cli_string()
}

/// `nvme fdp status <dev> -n <nsid>` text.
pub fn print_fdp_status(st: &FdpStatus) -> String {
    let mut o = String::new();
    for d in &st.descriptors {
        o += &format!(
            "Placement Identifier {}; Reclaim Unit Handle Identifier {}\n",
            d.pid, d.ruhid
        );
        o += &format!("  Estimated Active Reclaim Unit Time Remaining (EARUTR): {}\n", d.earutr);
        o += &format!("  Reclaim Unit Available Media Writes (RUAMW): {}\n", d.ruamw);
        o += "\n";
    }
    o
}

/// `nvme fdp status <dev> -n <nsid> -o json`.
pub fn fdp_status_json(st: &FdpStatus) -> String {
    let mut r = Obj::new();
    r.num("nruhsd", st.descriptors.len());
    let ruhss = st
        .descriptors
        .iter()
        .map(|d| {
            let mut o = Obj::new();
            o.num("pid", d.pid).num("ruhid", d.ruhid).num("earutr", d.earutr).num("ruamw", d.ruamw);
            o.done()
        })
        .collect();
    r.add("ruhss", J::Arr(ruhss));
    r.done().to_nvme_cli_string()
}
