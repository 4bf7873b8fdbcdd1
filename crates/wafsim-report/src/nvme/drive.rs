//! One simulated drive as a saved snapshot ([`DriveState`]), and the log pages nvme-cli would
//! read from it: `smart-log`, `ocp smart-add-log` and `fdp configs|usage|stats|events|status`.
//!
//! A running NBD server or a finished run saves a [`DriveState`] as JSON; the views below are
//! pure functions of it, so `wafsim nvme ...` prints the same thing whether it reads a file or
//! asks a server, and a saved state can be re-printed later in any format.
//!
//! # What is modelled and what is a constant
//!
//! Exact (straight from the simulator's counters): SMART data units and commands, OCP physical
//! media units written, FDP HBMW / MBMW / MBE, the FDP configuration and handle usage.
//! Derived by a stated model: percentage used ([`DEFAULT_RATED_PE_CYCLES`]), OCP physical
//! media units read, FDP reclaim unit available media writes ([`fdp_status`]). Constants
//! (the simulator has no such physics): temperature ([`TEMPERATURE_KELVIN`]), available spare
//! (100 %, threshold [`AVAILABLE_SPARE_THRESHOLD`] %), no errors, one power cycle.

use super::fdp::{
    FdpConfig, FdpConfigs, FdpEvent, FdpEvents, FdpRuhStatus, FdpStats, FdpStatus, FdpUsage,
    EVENT_F_LV, EVENT_F_NSIDV, EVENT_F_PIV, EVENT_PID, EVENT_REALLOC, EVENT_RUNFW,
    RUHT_INITIALLY_ISOLATED, RUHT_PERSISTENTLY_ISOLATED,
};
use super::ocp::OcpSmartAddLog;
use super::parse::{Snapshot, Source};
use super::smart::{SmartLog, DATA_UNIT_BYTES};
use serde::{Deserialize, Serialize};
use std::fmt;
use wafsim_core::config::{DeviceConfig, Placement, RuhType};
use wafsim_core::counters::Counters;
use wafsim_core::device::{Device, FdpEventKind};

/// Value of the `"wafsim_drive_state"` marker this version writes and reads. Bumped when a
/// field changes meaning, so an old reader refuses a new file instead of misreading it.
pub const DRIVE_STATE_FORMAT: u32 = 1;

/// Rated program/erase cycles per erase unit used for SMART Percentage Used when the producer
/// does not set [`DriveState::rated_pe_cycles`]. A model assumption, not a simulated figure:
/// 3,000 is the usual rating of enterprise TLC NAND.
pub const DEFAULT_RATED_PE_CYCLES: u32 = 3000;

/// Composite temperature reported (40 °C). The simulator has no thermal model; a constant
/// plausible value is reported rather than 0 K, which monitoring tools read as a sensor fault.
pub const TEMPERATURE_KELVIN: u16 = 313;

/// SMART Available Spare Threshold, percent (a common vendor value). Available Spare itself is
/// reported as 100 %: the simulator models no bad blocks, so no spare is ever consumed.
pub const AVAILABLE_SPARE_THRESHOLD: u8 = 10;

/// The only endurance group a simulated drive has (`nvme fdp ... -e 1`).
pub const ENDURANCE_GROUP_ID: u16 = 1;

/// OCP C0h log page version reported: 3 prints the DSSD version, PCIe retraining and power
/// state change fields (all zero here) and none of the OCP 2.5 fields the simulator cannot
/// fill (die counts, power, firmware build strings).
pub const OCP_LOG_PAGE_VERSION: u16 = 3;

/// Events one FDP Events log page holds (NVMe TP4146: 63 descriptors after the header).
pub const FDP_EVENTS_PER_PAGE: usize = 63;

/// Why a [`DriveState`] could not be read, or a view is not available on this drive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriveError {
    /// The JSON is not a wafsim drive state (no marker, or not an object); says what it is.
    NotDriveState(String),
    /// The marker names a format this version cannot read.
    UnsupportedFormat(u64),
    /// The JSON has the marker but a field is missing or of the wrong type (serde's message,
    /// with line and column).
    Invalid(String),
    /// An FDP view on a drive without FDP: a real drive answers Invalid Field in Command.
    NoFdp {
        /// The drive's placement kind ("conventional", "streams").
        placement: String,
    },
    /// A namespace id the drive does not have.
    NoSuchNamespace {
        /// The id asked for.
        nsid: u32,
        /// How many namespaces the drive has (ids 1..=count).
        count: usize,
    },
}

impl fmt::Display for DriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriveError::NotDriveState(why) => write!(f, "not a wafsim drive state: {why}"),
            DriveError::UnsupportedFormat(v) => write!(
                f,
                "wafsim drive state format {v} is not supported (this wafsim reads format \
                 {DRIVE_STATE_FORMAT}); use the wafsim version that wrote it"
            ),
            DriveError::Invalid(why) => write!(f, "invalid wafsim drive state: {why}"),
            DriveError::NoFdp { placement } => {
                write!(f, "drive has no FDP configuration (placement: {placement})")
            }
            DriveError::NoSuchNamespace { nsid, count } => write!(
                f,
                "namespace {nsid} does not exist: the drive has {count} namespace(s), ids 1..={count} \
                 (0xffffffff for the whole controller)"
            ),
        }
    }
}

impl std::error::Error for DriveError {}

/// One namespace of the drive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceState {
    /// Namespace name from the device configuration.
    pub name: String,
    /// NVMe namespace id: index in the configuration + 1.
    pub nsid: u32,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Logical block size the namespace is formatted with, bytes; [`DriveState::new`] uses the
    /// mapping unit (what the simulator's block device reports). Units of FDP RUAMW.
    pub lba_bytes: u32,
    /// Placement handle i of this namespace refers to RUH `placement_handles[i]`.
    pub placement_handles: Vec<u16>,
    /// Host write commands to this namespace, when the producer counts them per namespace
    /// (the per-namespace SMART log reports 0 otherwise).
    #[serde(default)]
    pub host_write_commands: Option<u64>,
    /// Host read commands to this namespace, as [`Self::host_write_commands`].
    #[serde(default)]
    pub host_read_commands: Option<u64>,
}

/// How host writes are steered to write frontiers (a mirror of `wafsim_core::Placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// One host and one GC frontier.
    Conventional,
    /// Legacy streams directive.
    Streams,
    /// NVMe Flexible Data Placement.
    Fdp,
}

impl fmt::Display for PlacementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PlacementKind::Conventional => "conventional",
            PlacementKind::Streams => "streams",
            PlacementKind::Fdp => "fdp",
        })
    }
}

/// Reclaim unit handle type (mirror of `wafsim_core::RuhType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuhKind {
    /// GC may mix this handle's data with other initially isolated handles' data.
    InitiallyIsolated,
    /// GC keeps this handle's data apart.
    PersistentlyIsolated,
}

/// The drive's placement configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementState {
    /// Placement mode.
    pub kind: PlacementKind,
    /// Streams (kind = streams only; 0 otherwise).
    #[serde(default)]
    pub streams: u32,
    /// Reclaim groups (1 unless FDP).
    pub reclaim_groups: u32,
    /// Reclaim unit handle types, one per RUH (empty unless FDP).
    #[serde(default)]
    pub ruh_types: Vec<RuhKind>,
    /// Reclaim unit (erase unit, superblock) size in bytes.
    pub ru_bytes: u64,
}

/// One FDP event as the drive logged it, already in NVMe terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriveEvent {
    /// NVMe event type ([`EVENT_RUNFW`], [`EVENT_PID`], [`EVENT_REALLOC`], ...).
    #[serde(rename = "type")]
    pub event_type: u8,
    /// Milliseconds since the Unix epoch (simulated or wall clock: the producer's choice).
    pub timestamp_ms: u64,
    /// Placement identifier in NVMe encoding ([`nvme_pid`]), when the event concerns one.
    #[serde(default)]
    pub pid: Option<u16>,
    /// Namespace id (1-based), when known.
    #[serde(default)]
    pub nsid: Option<u32>,
    /// Reclaim group, when the event names a location.
    #[serde(default)]
    pub rg: Option<u16>,
    /// Reclaim unit handle, when the event names a location.
    #[serde(default)]
    pub ruh: Option<u16>,
    /// Mapping units concerned: moved (media reallocated) or left unwritten (RU not fully
    /// written); 0 otherwise.
    #[serde(default)]
    pub units: u64,
}

impl DriveEvent {
    /// An event of the simulator's FDP event log, stamped `timestamp_ms` (the simulator's
    /// events carry no time; the producer knows when it saw them). `reclaim_groups` sets the
    /// PID encoding ([`nvme_pid`]).
    ///
    /// Invalid Placement Identifier: the host's PID and namespace (PID and NSID valid).
    /// RU Not Fully Written and Media Reallocated: the reclaim group and handle (location
    /// valid); the simulator does not record the namespace or placement handle of these.
    pub fn from_core(
        e: &wafsim_core::device::FdpEvent,
        reclaim_groups: u32,
        timestamp_ms: u64,
    ) -> DriveEvent {
        let nsid = (e.ns != u32::MAX).then(|| e.ns + 1);
        match e.kind {
            FdpEventKind::InvalidPid => DriveEvent {
                event_type: EVENT_PID,
                timestamp_ms,
                // For an invalid PID the simulator logs the host's (reclaim group, placement
                // handle), not a RUH.
                pid: Some(nvme_pid(reclaim_groups, e.rg, e.ruh)),
                nsid,
                rg: None,
                ruh: None,
                units: e.units,
            },
            FdpEventKind::RuNotFullyWritten | FdpEventKind::MediaReallocated => DriveEvent {
                event_type: if e.kind == FdpEventKind::MediaReallocated {
                    EVENT_REALLOC
                } else {
                    EVENT_RUNFW
                },
                timestamp_ms,
                pid: None,
                nsid,
                rg: Some(e.rg as u16),
                ruh: Some(e.ruh as u16),
                units: e.units,
            },
        }
    }
}

/// Minimum and maximum erase count over the erase units (OCP "User data erase counts").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EraseCountRange {
    /// Lowest erase count of any erase unit.
    pub min: u32,
    /// Highest erase count of any erase unit.
    pub max: u32,
}

/// A snapshot of one simulated drive: configuration, counters and what a controller would
/// additionally know (commands, power-on time, event log). Serialized as one JSON object
/// starting with `"wafsim_drive_state": 1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriveState {
    /// Format marker, [`DRIVE_STATE_FORMAT`].
    pub wafsim_drive_state: u32,
    /// Device name nvme-cli shows in the smart-log header (`Smart Log for NVME device:NAME`).
    pub name: String,
    /// Model number string.
    pub model: String,
    /// Serial number string.
    pub serial: String,
    /// Firmware revision string: "wafsim" and the crate version.
    pub firmware: String,
    /// The namespaces, nsid 1, 2, ...
    pub namespaces: Vec<NamespaceState>,
    /// Placement configuration.
    pub placement: PlacementState,
    /// FTL mapping unit, bytes.
    pub mapping_unit: u32,
    /// Logical capacity, bytes.
    pub logical_bytes: u64,
    /// Raw capacity, bytes.
    pub physical_bytes: u64,
    /// Erase units of the drive (whole reclaim groups, as the simulator's geometry counts).
    pub erase_units: u64,
    /// Rated P/E cycles per erase unit for SMART Percentage Used ([`DEFAULT_RATED_PE_CYCLES`]
    /// unless the producer knows better).
    #[serde(default = "default_pe_cycles")]
    pub rated_pe_cycles: u32,
    /// The simulator's counters.
    pub counters: Counters,
    /// Host write commands (SMART).
    pub host_write_commands: u64,
    /// Host read commands (SMART).
    pub host_read_commands: u64,
    /// Power-on time in seconds, simulated or wall time (the producer decides).
    pub power_on_seconds: u64,
    /// Erase count range over the erase units, when the producer had the device at hand.
    #[serde(default)]
    pub erase_count_range: Option<EraseCountRange>,
    /// Free erase units, when the producer had the device at hand (OCP % free blocks).
    #[serde(default)]
    pub free_erase_units: Option<u64>,
    /// The FDP event log, oldest first (may be empty: the counters in `counters.fdp_events`
    /// count all events, this list only those the producer kept).
    #[serde(default)]
    pub events: Vec<DriveEvent>,
}

fn default_pe_cycles() -> u32 {
    DEFAULT_RATED_PE_CYCLES
}

/// NVMe placement identifier of (reclaim group, placement handle): the reclaim group in the
/// top RGIF bits (RGIF = bits needed for `reclaim_groups - 1`, as [`fdp_configs`] reports),
/// the placement handle below.
pub fn nvme_pid(reclaim_groups: u32, rg: u32, handle: u32) -> u16 {
    let rgif = rgif(reclaim_groups);
    if rgif == 0 {
        handle as u16
    } else {
        ((rg << (16 - rgif)) | handle) as u16
    }
}

/// Reclaim Group Identifier Format: bits of the PID that hold the reclaim group.
fn rgif(reclaim_groups: u32) -> u32 {
    32 - reclaim_groups.saturating_sub(1).leading_zeros()
}

impl DriveState {
    /// The state of a drive built from `cfg` whose counters are `counters`, after
    /// `commands = (host write commands, host read commands)` and `power_on_seconds` of power-on
    /// time. Names: "wafsim" / "wafsim simulated SSD", serial from the configuration's seed;
    /// the producer may overwrite any field. No event log, erase count range or free count:
    /// see [`DriveState::from_device`].
    pub fn new(
        cfg: &DeviceConfig,
        counters: &Counters,
        commands: (u64, u64),
        power_on_seconds: u64,
    ) -> DriveState {
        let placement = match &cfg.placement {
            Placement::Conventional => PlacementState {
                kind: PlacementKind::Conventional,
                streams: 0,
                reclaim_groups: 1,
                ruh_types: Vec::new(),
                ru_bytes: cfg.erase_unit_bytes,
            },
            Placement::Streams { streams } => PlacementState {
                kind: PlacementKind::Streams,
                streams: *streams,
                reclaim_groups: 1,
                ruh_types: Vec::new(),
                ru_bytes: cfg.erase_unit_bytes,
            },
            Placement::Fdp {
                reclaim_groups,
                ruh_types,
            } => PlacementState {
                kind: PlacementKind::Fdp,
                streams: 0,
                reclaim_groups: *reclaim_groups,
                ruh_types: ruh_types
                    .iter()
                    .map(|t| match t {
                        RuhType::InitiallyIsolated => RuhKind::InitiallyIsolated,
                        RuhType::PersistentlyIsolated => RuhKind::PersistentlyIsolated,
                    })
                    .collect(),
                ru_bytes: cfg.erase_unit_bytes,
            },
        };
        // As Geometry counts them: whole reclaim groups of whole erase units. Computed here
        // rather than through `cfg.geometry()` so an unvalidated configuration still yields a
        // state (its views are then only as good as the configuration).
        let rgs = placement.reclaim_groups.max(1) as u64;
        let erase_units = cfg
            .physical_bytes
            .checked_div(cfg.erase_unit_bytes)
            .unwrap_or(0)
            / rgs
            * rgs;
        let single = cfg.namespaces.len() == 1;
        let namespaces = cfg
            .namespaces
            .iter()
            .enumerate()
            .map(|(i, ns)| NamespaceState {
                name: ns.name.clone(),
                nsid: i as u32 + 1,
                size_bytes: ns.size_bytes,
                lba_bytes: cfg.mapping_unit,
                placement_handles: ns.placement_handles.clone(),
                // With one namespace every command is that namespace's.
                host_write_commands: single.then_some(commands.0),
                host_read_commands: single.then_some(commands.1),
            })
            .collect();
        DriveState {
            wafsim_drive_state: DRIVE_STATE_FORMAT,
            name: "wafsim".into(),
            model: "wafsim simulated SSD".into(),
            serial: format!("WS{:016X}", cfg.seed),
            firmware: format!("wafsim {}", env!("CARGO_PKG_VERSION")),
            namespaces,
            placement,
            mapping_unit: cfg.mapping_unit,
            logical_bytes: cfg.logical_bytes,
            physical_bytes: cfg.physical_bytes,
            erase_units,
            rated_pe_cycles: DEFAULT_RATED_PE_CYCLES,
            counters: counters.clone(),
            host_write_commands: commands.0,
            host_read_commands: commands.1,
            power_on_seconds,
            erase_count_range: None,
            free_erase_units: None,
            events: Vec::new(),
        }
    }

    /// [`DriveState::new`] from a live device, adding what only the device knows: the erase
    /// count range and the free erase units. The device's FDP event log is not copied because
    /// its events carry no time; add them with [`DriveEvent::from_core`] and the producer's
    /// own timestamps.
    pub fn from_device(dev: &Device, commands: (u64, u64), power_on_seconds: u64) -> DriveState {
        let mut st = DriveState::new(dev.config(), dev.counters(), commands, power_on_seconds);
        let ec = dev.erase_counts();
        if let (Some(&min), Some(&max)) = (ec.iter().min(), ec.iter().max()) {
            st.erase_count_range = Some(EraseCountRange { min, max });
        }
        st.free_erase_units = Some(dev.free_units().iter().map(|&n| n as u64).sum());
        st
    }

    /// Pretty JSON, `"wafsim_drive_state"` first.
    pub fn to_json(&self) -> String {
        // Serializing plain structs of integers and strings cannot fail.
        serde_json::to_string_pretty(self).expect("DriveState serializes")
    }

    /// Reads [`DriveState::to_json`]'s output. A document without the marker is refused as
    /// "not a wafsim drive state: ..." before any field is looked at, so feeding it nvme-cli
    /// JSON or another wafsim file gives that message rather than a missing-field error.
    pub fn from_json(text: &str) -> Result<DriveState, DriveError> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| DriveError::NotDriveState(format!("not JSON ({e})")))?;
        let obj = v.as_object().ok_or_else(|| {
            DriveError::NotDriveState(format!("expected a JSON object, found {}", kind(&v)))
        })?;
        let marker = obj.get("wafsim_drive_state").ok_or_else(|| {
            let keys: Vec<&str> = obj.keys().take(4).map(|k| k.as_str()).collect();
            DriveError::NotDriveState(format!(
                "no \"wafsim_drive_state\" marker (the object starts with keys {keys:?})"
            ))
        })?;
        let version = marker.as_u64().ok_or_else(|| {
            DriveError::NotDriveState(format!(
                "\"wafsim_drive_state\" is {}, expected the format number {DRIVE_STATE_FORMAT}",
                kind(marker)
            ))
        })?;
        if version != DRIVE_STATE_FORMAT as u64 {
            return Err(DriveError::UnsupportedFormat(version));
        }
        // Parse the text again (not the Value) so serde's errors carry line and column.
        let st: DriveState =
            serde_json::from_str(text).map_err(|e| DriveError::Invalid(e.to_string()))?;
        st.check_counters().map_err(DriveError::Invalid)?;
        Ok(st)
    }

    /// Refuses counters no drive can reach, before any figure is derived from them: sums that
    /// overflow 64 bits (the simulator's counters are u64, so such a state was edited or
    /// corrupted, and wrapped arithmetic would give a plausible but meaningless WAF), host
    /// bytes beyond the mapping units the host wrote, SLC counts beyond what they are part of.
    pub fn check_counters(&self) -> Result<(), String> {
        let c = &self.counters;
        let mu = self.mapping_unit as u64;
        if mu == 0 {
            return Err("mapping_unit is 0: expected the FTL mapping unit in bytes (e.g. 4096)".into());
        }
        let over = |what: &str| format!("counters.{what} overflows 64 bits: not a state a drive reaches (edited or corrupted file?)");
        let sum = |parts: &[u64]| parts.iter().try_fold(0u64, |a, &b| a.checked_add(b));
        let media = sum(&[c.host_units, c.gc_units, c.pad_units, c.fold_units])
            .ok_or_else(|| over("host_units + gc_units + pad_units + fold_units"))?;
        let media = media.checked_sub(c.uncounted_slc_units).ok_or_else(|| {
            format!("counters.uncounted_slc_units ({}) exceeds the media units programmed ({media})", c.uncounted_slc_units)
        })?;
        media.checked_mul(mu).ok_or_else(|| over("media units x mapping_unit (media bytes)"))?;
        if c.slc_units > c.host_units {
            return Err(format!("counters.slc_units ({}) exceeds host_units ({}), which it is part of", c.slc_units, c.host_units));
        }
        // A write of any size programs whole mapping units, so host bytes never exceed them.
        let host_cap = c.host_units.checked_mul(mu).ok_or_else(|| over("host_units x mapping_unit"))?;
        if c.host_write_bytes > host_cap {
            return Err(format!(
                "counters.host_write_bytes ({}) exceeds host_units ({}) x mapping_unit ({mu}): every host write programs whole mapping units",
                c.host_write_bytes, c.host_units
            ));
        }
        sum(&[c.read_units, c.gc_units]).and_then(|u| u.checked_mul(mu)).ok_or_else(|| over("read_units + gc_units (media bytes read)"))?;
        if self.erase_units > u64::MAX / 100 {
            return Err(format!("erase_units {} is beyond any drive", self.erase_units));
        }
        for (i, n) in c.namespaces.iter().enumerate() {
            let m = sum(&[n.host_units, n.gc_units, n.pad_units, n.fold_units])
                .and_then(|m| m.checked_sub(n.uncounted_slc_units))
                .and_then(|m| m.checked_mul(mu));
            if m.is_none() {
                return Err(format!("counters.namespaces[{i}]: media units overflow 64 bits, or uncounted_slc_units exceeds them"));
            }
        }
        Ok(())
    }

    /// True when the text looks like a drive state (a JSON object with the marker key), for
    /// callers that accept either a drive state or nvme-cli output.
    pub fn is_drive_state(text: &str) -> bool {
        let t = text.trim_start();
        t.starts_with('{') && t.contains("\"wafsim_drive_state\"")
    }

    /// The counters nvme-cli output of this drive would give [`super::parse_snapshot`]:
    /// smart-log + ocp smart-add-log always, fdp stats when FDP is configured. Lets a drive
    /// state stand on either side of [`super::waf`] against real nvme-cli captures.
    pub fn snapshot(&self) -> Snapshot {
        let smart = smart_log(self, None).expect("the controller-wide log always exists");
        let ocp = ocp_smart_add_log(self);
        let mut s = Snapshot {
            data_units_written: Some(smart.data_units_written),
            data_units_read: Some(smart.data_units_read),
            host_write_commands: Some(smart.host_write_commands),
            physical_media_units_written: Some(ocp.physical_media_units_written),
            physical_media_units_read: Some(ocp.physical_media_units_read),
            hbmw: None,
            mbmw: None,
            mbe: None,
            sources: vec![Source::SmartLogJson, Source::OcpJson],
        };
        if let Ok(f) = fdp_stats(self) {
            s.hbmw = Some(f.hbmw);
            s.mbmw = Some(f.mbmw);
            s.mbe = Some(f.mbe);
            s.sources.push(Source::FdpStatsJson);
        }
        s
    }

    /// Media bytes programmed: media mapping units x mapping unit (host + GC + padding).
    pub fn media_bytes(&self) -> u128 {
        self.counters.media_units() as u128 * self.mapping_unit as u128
    }

    fn namespace(&self, nsid: u32) -> Result<&NamespaceState, DriveError> {
        (nsid as usize)
            .checked_sub(1)
            .and_then(|i| self.namespaces.get(i))
            .ok_or(DriveError::NoSuchNamespace {
                nsid,
                count: self.namespaces.len(),
            })
    }

    fn require_fdp(&self) -> Result<(), DriveError> {
        if self.placement.kind == PlacementKind::Fdp {
            Ok(())
        } else {
            Err(DriveError::NoFdp {
                placement: self.placement.kind.to_string(),
            })
        }
    }

    fn units_per_ru(&self) -> u64 {
        (self.placement.ru_bytes / self.mapping_unit.max(1) as u64).max(1)
    }
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// SMART data units, rounded up as real drives do. NVMe Base Specification (2.0), SMART /
/// Health Information log page (02h), Data Units Written (bytes 63:48): the number of 512-byte
/// data units the host has written, "reported in thousands (i.e., a value of 1 corresponds to
/// 1,000 units of 512 bytes written) and is rounded up"; Data Units Read (bytes 47:32)
/// likewise. So a single byte written already shows as 1, and a WAF from data units is exact
/// only to within 512,000 host bytes per capture.
fn data_units(bytes: u64) -> u128 {
    (bytes as u128).div_ceil(DATA_UNIT_BYTES as u128)
}

/// `nvme smart-log [-n NSID]`: the SMART / Health Information log of the drive, or of one
/// namespace (`nsid` 1..=namespaces; `None` or `Some(0xffffffff)` for the controller).
///
/// - Data Units Written / Read: host bytes / 512,000 rounded up, as the spec requires.
/// - Host Write / Read Commands: the producer's command counts (per namespace only when the
///   producer recorded them, else 0).
/// - Power On Hours: `power_on_seconds / 3600`, whole hours completed.
/// - Percentage Used: erases / (erase units x [`DriveState::rated_pe_cycles`]) in whole
///   percent completed, capped at 255 as the spec requires. A model assumption: real drives
///   use their own wear estimate. Shared by every namespace (endurance is the drive's).
/// - Constants: temperature [`TEMPERATURE_KELVIN`], available spare 100 % (threshold
///   [`AVAILABLE_SPARE_THRESHOLD`] %), one power cycle, no errors, no critical warning,
///   controller busy time 0 (the untimed simulator has no notion of busy).
pub fn smart_log(st: &DriveState, nsid: Option<u32>) -> Result<SmartLog, DriveError> {
    let c = &st.counters;
    let (written, read, wcmd, rcmd) = match nsid {
        None | Some(0xffff_ffff) => (
            c.host_write_bytes,
            c.host_read_bytes,
            st.host_write_commands,
            st.host_read_commands,
        ),
        Some(n) => {
            let ns = st.namespace(n)?;
            let nc = c
                .namespaces
                .get(n as usize - 1)
                .cloned()
                .unwrap_or_default();
            (
                nc.host_write_bytes,
                nc.host_read_bytes,
                ns.host_write_commands.unwrap_or(0),
                ns.host_read_commands.unwrap_or(0),
            )
        }
    };
    let rated = st.erase_units as u128 * st.rated_pe_cycles as u128;
    // Whole percent completed; "shall be 255" above 254 (NVMe SMART log, Percentage Used).
    let used = (c.erases as u128 * 100)
        .checked_div(rated)
        .unwrap_or(0)
        .min(255) as u8;
    Ok(SmartLog {
        temperature: TEMPERATURE_KELVIN,
        available_spare: 100,
        available_spare_threshold: AVAILABLE_SPARE_THRESHOLD,
        percentage_used: used,
        data_units_read: data_units(read),
        data_units_written: data_units(written),
        host_read_commands: rcmd as u128,
        host_write_commands: wcmd as u128,
        power_cycles: 1,
        power_on_hours: (st.power_on_seconds / 3600) as u128,
        ..SmartLog::default()
    })
}

/// `nvme ocp smart-add-log`: the OCP C0h log (page version [`OCP_LOG_PAGE_VERSION`]).
///
/// - Physical Media Units Written: media mapping units (host + GC + padding) x mapping unit,
///   bytes. Exact.
/// - Physical Media Units Read: (host-read mapping units that held data + mapping units GC
///   copied) x mapping unit; a model: GC reads each unit it copies once, reads of unmapped
///   units never reach the media, and a partial-unit read reads the whole unit.
/// - Max / Min User Data Erase Counts, % Free Blocks: from the erase count range and free
///   erase units when the producer recorded them, else 0.
/// - Everything else 0 (no errors, throttling, PLP or version fields are modelled).
pub fn ocp_smart_add_log(st: &DriveState) -> OcpSmartAddLog {
    let c = &st.counters;
    let mu = st.mapping_unit as u128;
    let media_reads = c.read_units.saturating_sub(c.unmapped_read_units) + c.gc_units;
    let (emin, emax) = st
        .erase_count_range
        .map(|r| (r.min, r.max))
        .unwrap_or((0, 0));
    let free_pct = match (st.free_erase_units, st.erase_units) {
        (Some(f), n) if n > 0 => (f.min(n) * 100 / n) as u8,
        _ => 0,
    };
    OcpSmartAddLog {
        physical_media_units_written: st.media_bytes(),
        physical_media_units_read: media_reads as u128 * mu,
        user_data_erase_count_max: emax,
        user_data_erase_count_min: emin,
        percent_free_blocks: free_pct,
        log_page_version: OCP_LOG_PAGE_VERSION,
        ..OcpSmartAddLog::default()
    }
}

/// `nvme fdp configs -e 1`: one valid configuration describing the drive.
///
/// FDPA: valid, no volatile write cache, RGIF = bits needed for the reclaim group number;
/// NRG and the handle types from the configuration; NNSS = the namespaces; RUNS = reclaim unit
/// bytes; ERUTL = 0 (the simulator sets no reclaim unit time limit); MAXPIDS (0's based) =
/// the longest placement handle list - 1; VSS = 0.
pub fn fdp_configs(st: &DriveState) -> Result<FdpConfigs, DriveError> {
    st.require_fdp()?;
    let p = &st.placement;
    let maxpids = st
        .namespaces
        .iter()
        .map(|n| n.placement_handles.len())
        .max()
        .unwrap_or(1)
        .max(1)
        - 1;
    Ok(FdpConfigs {
        configs: vec![FdpConfig {
            fdpa: 0x80 | rgif(p.reclaim_groups) as u8,
            vss: 0,
            nrg: p.reclaim_groups,
            maxpids: maxpids as u16,
            nnss: st.namespaces.len() as u32,
            runs: p.ru_bytes,
            erutl: 0,
            ruh_types: p
                .ruh_types
                .iter()
                .map(|t| match t {
                    RuhKind::InitiallyIsolated => RUHT_INITIALLY_ISOLATED,
                    RuhKind::PersistentlyIsolated => RUHT_PERSISTENTLY_ISOLATED,
                })
                .collect(),
        }],
    })
}

/// `nvme fdp usage -e 1`: per RUH, 1 (Host Specified) when some namespace's placement handle
/// refers to it, else 0 (Unused). The simulator never assigns handles itself, so 2
/// (Controller Specified) does not occur.
pub fn fdp_usage(st: &DriveState) -> Result<FdpUsage, DriveError> {
    st.require_fdp()?;
    let n = st.placement.ruh_types.len();
    let mut ruha = vec![0u8; n];
    for ns in &st.namespaces {
        for &h in &ns.placement_handles {
            if let Some(a) = ruha.get_mut(h as usize) {
                *a = 1;
            }
        }
    }
    Ok(FdpUsage { ruha })
}

/// `nvme fdp stats -e 1`: HBMW = host bytes written, MBMW = media mapping units x mapping
/// unit, MBE = erases x reclaim unit bytes. No metadata is modelled, so "with metadata" adds
/// nothing. MBMW / HBMW is the simulator's WAF exactly.
pub fn fdp_stats(st: &DriveState) -> Result<FdpStats, DriveError> {
    st.require_fdp()?;
    Ok(FdpStats {
        hbmw: st.counters.host_write_bytes as u128,
        mbmw: st.media_bytes(),
        mbe: st.counters.erases as u128 * st.placement.ru_bytes as u128,
    })
}

/// `nvme fdp events -e 1 [-E]`: controller events (types 80h and up), or with `host_events`
/// the host events (below 80h), from [`DriveState::events`], the newest
/// [`FDP_EVENTS_PER_PAGE`] oldest first.
///
/// Only the producer's event list is used. The counts in `counters.fdp_events` are not turned
/// into events: they carry no time, reclaim group or handle, and inventing those would print
/// events that never happened that way. So a drive state without an event list shows none.
///
/// Flags: PID valid when the event has a PID, NSID valid when it has a namespace, location
/// valid when it has a reclaim group and handle. Implicitly Modified RUH (81h) never occurs:
/// the simulator does not move handles on its own. Media Reallocated's NLBAM = moved mapping
/// units in logical blocks of the namespace (or of the mapping unit when none is known),
/// capped at 65535; no LBA is given.
pub fn fdp_events(st: &DriveState, host_events: bool) -> Result<FdpEvents, DriveError> {
    st.require_fdp()?;
    let chosen: Vec<&DriveEvent> = st
        .events
        .iter()
        .filter(|e| (e.event_type < 0x80) == host_events)
        .collect();
    let skip = chosen.len().saturating_sub(FDP_EVENTS_PER_PAGE);
    let events = chosen[skip..]
        .iter()
        .map(|e| {
            let mut flags = 0;
            if e.pid.is_some() {
                flags |= EVENT_F_PIV;
            }
            if e.nsid.is_some() {
                flags |= EVENT_F_NSIDV;
            }
            if e.rg.is_some() && e.ruh.is_some() {
                flags |= EVENT_F_LV;
            }
            let lba = e
                .nsid
                .and_then(|n| st.namespace(n).ok())
                .map(|ns| ns.lba_bytes)
                .unwrap_or(st.mapping_unit)
                .max(1);
            let per_unit = (st.mapping_unit / lba).max(1) as u64;
            let nlbam = if e.event_type == EVENT_REALLOC {
                e.units.saturating_mul(per_unit).min(u16::MAX as u64) as u16
            } else {
                0
            };
            FdpEvent {
                event_type: e.event_type,
                flags,
                pid: e.pid.unwrap_or(0),
                timestamp_ms: e.timestamp_ms,
                timestamp_attr: 0,
                nsid: e.nsid.unwrap_or(0),
                nlbam,
                lba: None,
                rgid: e.rg.unwrap_or(0),
                ruhid: e.ruh.unwrap_or(0) as u8,
            }
        })
        .collect();
    Ok(FdpEvents { events })
}

/// What one write frontier of the simulator is for; see [`frontier_layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontierRole {
    /// Host writes of reclaim unit handle (or stream) `ruh` in reclaim group `rg`.
    Host {
        /// Reclaim group.
        rg: u32,
        /// Reclaim unit handle, stream id, or 0 for the conventional frontier.
        ruh: u32,
    },
    /// GC copies in reclaim group `rg`: of handle `ruh` alone (persistently isolated, or the
    /// conventional GC frontier with `ruh` 0), or shared by several handles (`ruh` = None).
    Gc {
        /// Reclaim group.
        rg: u32,
        /// The one handle whose data it receives, if only one.
        ruh: Option<u32>,
    },
}

/// The simulator's write frontiers in its order (the order of `counters.frontiers`), rebuilt
/// from the placement alone. Mirrors `build_frontiers` in wafsim-core's device/placement.rs:
/// conventional = [host, GC]; streams = [host per stream, shared GC]; FDP, per reclaim group:
/// a shared GC frontier first if any handle is initially isolated, then per handle its host
/// frontier, followed by its own GC frontier if persistently isolated. A test checks this
/// against a real device so the two cannot drift apart unnoticed.
pub fn frontier_layout(p: &PlacementState) -> Vec<FrontierRole> {
    let mut out = Vec::new();
    match p.kind {
        PlacementKind::Conventional => {
            out.push(FrontierRole::Host { rg: 0, ruh: 0 });
            out.push(FrontierRole::Gc {
                rg: 0,
                ruh: Some(0),
            });
        }
        PlacementKind::Streams => {
            for s in 0..p.streams {
                out.push(FrontierRole::Host { rg: 0, ruh: s });
            }
            out.push(FrontierRole::Gc { rg: 0, ruh: None });
        }
        PlacementKind::Fdp => {
            for rg in 0..p.reclaim_groups {
                if p.ruh_types.contains(&RuhKind::InitiallyIsolated) {
                    out.push(FrontierRole::Gc { rg, ruh: None });
                }
                for (h, t) in p.ruh_types.iter().enumerate() {
                    out.push(FrontierRole::Host { rg, ruh: h as u32 });
                    if *t == RuhKind::PersistentlyIsolated {
                        out.push(FrontierRole::Gc {
                            rg,
                            ruh: Some(h as u32),
                        });
                    }
                }
            }
        }
    }
    out
}

/// `nvme fdp status -n NSID`: one descriptor per placement identifier the namespace can use
/// (every reclaim group x every placement handle of the namespace, reclaim group major), PID
/// in NVMe encoding ([`nvme_pid`]), RUHID the handle the placement handle refers to.
///
/// RUAMW (reclaim unit available media writes, logical blocks of the namespace) is derived from
/// the counters: a handle's host frontier in a reclaim group only ever receives that handle's
/// host writes and opens a new reclaim unit only when the current one is full, so the current
/// one holds (host units written through it) mod (units per RU) units, and RUAMW is the rest
/// (a full RU when that is 0: the next write opens a fresh one). A RUH Update seals a unit
/// early; the RU-not-fully-written events in [`DriveState::events`] say by how much, so the
/// figure stays exact as long as the list holds every such event (as many as
/// `counters.fdp_events.ru_not_fully_written`); otherwise it is an estimate.
///
/// EARUTR is 0: the simulator sets no reclaim unit time limit (ERUTL = 0 in [`fdp_configs`]).
pub fn fdp_status(st: &DriveState, nsid: u32) -> Result<FdpStatus, DriveError> {
    st.require_fdp()?;
    let ns = st.namespace(nsid)?;
    let layout = frontier_layout(&st.placement);
    let np = st.units_per_ru();
    let lba = ns.lba_bytes.max(1) as u64;
    let blocks_per_unit = (st.mapping_unit as u64 / lba).max(1);
    let mut descriptors = Vec::new();
    for rg in 0..st.placement.reclaim_groups {
        for (ph, &ruh) in ns.placement_handles.iter().enumerate() {
            let ruh = ruh as u32;
            let host_units = layout
                .iter()
                .position(|r| *r == FrontierRole::Host { rg, ruh })
                .and_then(|i| st.counters.frontiers.get(i))
                .map(|f| f.host_units)
                .unwrap_or(0);
            let skipped: u64 = st
                .events
                .iter()
                .filter(|e| {
                    e.event_type == EVENT_RUNFW
                        && e.rg == Some(rg as u16)
                        && e.ruh == Some(ruh as u16)
                })
                .map(|e| e.units)
                .sum();
            let filled = (host_units + skipped) % np;
            descriptors.push(FdpRuhStatus {
                pid: nvme_pid(st.placement.reclaim_groups, rg, ph as u32),
                ruhid: ruh as u16,
                earutr: 0,
                ruamw: (np - filled) * blocks_per_unit,
            });
        }
    }
    Ok(FdpStatus { descriptors })
}
