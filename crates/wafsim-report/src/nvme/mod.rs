//! A drive's counters exactly as nvme-cli prints them, and nvme-cli's output read back for WAF.
//!
//! # Which nvme-cli
//!
//! Printers follow nvme-cli at commit `e117ee68059fe1f44e2486dd03fd62aa3f96a9dc`
//! (`v3.0-rc1-75-ge117ee680`, 2026-08-21; libnvme is in-tree there, `libnvme/src/nvme/`):
//!
//! | output | text | JSON |
//! | --- | --- | --- |
//! | `nvme smart-log` | `stdout_smart_log` (src/nvme-print-stdout.c) | `json_smart_log` (src/nvme-print-json.c) |
//! | `nvme ocp smart-add-log` | `stdout_smart_extended_log` (plugins/ocp/ocp-print-stdout.c) | `json_smart_extended_log_v1`/`_v2` (plugins/ocp/ocp-print-json.c) |
//! | `nvme fdp configs` | `stdout_fdp_configs` | `json_nvme_fdp_configs` |
//! | `nvme fdp usage` | `stdout_fdp_usage` | `json_nvme_fdp_usage` |
//! | `nvme fdp stats` | `stdout_fdp_stats` | `json_nvme_fdp_stats` |
//! | `nvme fdp events` | `stdout_fdp_events` | `json_nvme_fdp_events` |
//! | `nvme fdp status` | `stdout_fdp_ruh_status` | `json_nvme_fdp_ruh_status` |
//!
//! Number formatting follows shared/uint128-util.c (`uint128_t_to_l10n_string`,
//! `uint128_t_to_si_string`), shared/suffix-util.c (SI suffixes) and src/nvme-print.c
//! (`nvme_degrees_string`); JSON layout follows json-c's `JSON_C_TO_STRING_PRETTY` printer
//! (json_object.c). Differences from the last stable release, v2.16, that a reader of older
//! captures meets: v2.16's `smart-log` text stops after "Thermal Management T2 Total Time" and
//! its JSON after `thm_temp2_total_time` (no energy / power measurement fields); its
//! `ocp smart-add-log -o json` defaults to the v1 labels ([`OcpJsonVersion::V1`]) where v3.0
//! defaults to v2 keys; its version-5 OCP fields come in another order. The FDP printers are
//! unchanged. The parser accepts all of these, and nvme-cli 1.x's
//! `data_units_written : 1,234` smart-log lines.
//!
//! # Environment
//!
//! nvme-cli's text depends on its locale ([`Locale`]: thousands separators, `%c` dates) and
//! `fdp events` on the time zone (rendered here as UTC). JSON depends on neither.
//!
//! # Simulated drives
//!
//! [`drive`] saves one simulated drive as a [`drive::DriveState`] (JSON) and builds each log
//! page above from it, so `wafsim nvme ...` prints a simulated drive as nvme-cli prints a
//! real one.

mod fdp;
mod fmt;
mod json;
mod ocp;
mod parse;
mod smart;

pub mod drive;

pub use fdp::{
    fdp_configs_json, fdp_event_name, fdp_events_json, fdp_stats_json, fdp_status_json,
    fdp_usage_json, print_fdp_configs, print_fdp_events, print_fdp_stats, print_fdp_status,
    print_fdp_usage, FdpConfig, FdpConfigs, FdpEvent, FdpEvents, FdpRuhStatus, FdpStats, FdpStatus,
    FdpUsage, EVENT_F_LV, EVENT_F_NSIDV, EVENT_F_PIV, EVENT_MODIFY, EVENT_PID, EVENT_REALLOC,
    EVENT_RESET, EVENT_RUNFW, EVENT_RUTLE, RUHT_INITIALLY_ISOLATED, RUHT_PERSISTENTLY_ISOLATED,
};
pub use fmt::{l10n, si_string, Locale, TextOptions};
pub use ocp::{ocp_smart_add_log_json, print_ocp_smart_add_log, OcpJsonVersion, OcpSmartAddLog};
pub use parse::{
    parse_snapshot, waf, waf_from_texts, ParseError, Side, Snapshot, Source, WafMethod, WafResult,
};
pub use smart::{print_smart_log, smart_log_json, SmartLog, DATA_UNIT_BYTES};
