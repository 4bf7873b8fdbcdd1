//! `nvme ocp smart-add-log`: the OCP Datacenter NVMe SSD "SMART / Health Information Extended"
//! log page (C0h).
//!
//! Text follows `stdout_smart_extended_log` (plugins/ocp/ocp-print-stdout.c); JSON follows
//! `json_smart_extended_log_v1` / `_v2` (plugins/ocp/ocp-print-json.c), chosen by
//! `--output-format-version` (default 2 since v3.0, 1 up to v2.16). Field layout from
//! `struct ocp_smart_extended_log` (plugins/ocp/ocp-smart-extended-log.h).

use super::fmt::uuid;
use super::json::{Obj, J};

/// The C0h log, decoded.
///
/// Which fields get printed depends on `log_page_version`, as in nvme-cli: versions 0-1 stop
/// after the GUID; 2-3 add the DSSD version fields, PCIe link retraining and power state
/// changes; 4 adds the command set errata and lowest firmware revision; 5 the OCP 2.5 block
/// (dies, system area counts, power, firmware build); 6 and later (text and JSON v1 only) form
/// factor and die-in-use bad blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OcpSmartAddLog {
    /// Physical Media Units Written, bytes (128-bit).
    pub physical_media_units_written: u128,
    /// Physical Media Units Read, bytes (128-bit).
    pub physical_media_units_read: u128,
    /// Bad User NAND Blocks, raw count (48-bit).
    pub bad_user_nand_blocks_raw: u64,
    /// Bad User NAND Blocks, normalized.
    pub bad_user_nand_blocks_normalized: u16,
    /// Bad System NAND Blocks, raw count (48-bit).
    pub bad_system_nand_blocks_raw: u64,
    /// Bad System NAND Blocks, normalized.
    pub bad_system_nand_blocks_normalized: u16,
    /// XOR Recovery Count.
    pub xor_recovery_count: u64,
    /// Uncorrectable Read Error Count.
    pub uncorrectable_read_err_count: u64,
    /// Soft ECC Error Count.
    pub soft_ecc_err_count: u64,
    /// End to End Correction Counts: detected errors.
    pub end_to_end_detected_err: u32,
    /// End to End Correction Counts: corrected errors.
    pub end_to_end_corrected_err: u32,
    /// System Data % Used.
    pub system_data_used_percent: u8,
    /// Refresh Counts (56-bit).
    pub refresh_counts: u64,
    /// User Data Erase Counts, maximum.
    pub user_data_erase_count_max: u32,
    /// User Data Erase Counts, minimum.
    pub user_data_erase_count_min: u32,
    /// Thermal Throttling: number of events.
    pub thermal_throttling_event_count: u8,
    /// Thermal Throttling: current status.
    pub thermal_throttling_current_status: u8,
    /// DSSD Specification Version: errata.
    pub dssd_errata_version: u8,
    /// DSSD Specification Version: point.
    pub dssd_point_version: u16,
    /// DSSD Specification Version: minor.
    pub dssd_minor_version: u16,
    /// DSSD Specification Version: major.
    pub dssd_major_version: u8,
    /// PCIe Correctable Error Count.
    pub pcie_correctable_err_count: u64,
    /// Incomplete Shutdowns.
    pub incomplete_shutdowns: u32,
    /// % Free Blocks.
    pub percent_free_blocks: u8,
    /// Capacitor Health.
    pub capacitor_health: u16,
    /// NVMe Base Errata Version.
    pub nvme_base_errata_version: u8,
    /// NVMe Command Set Errata Version.
    pub nvme_cmdset_errata_version: u8,
    /// NVMe over PCIe Errata Version.
    pub nvme_over_pcie_errata_version: u8,
    /// NVMe-MI Errata Version.
    pub nvme_mi_errata_version: u8,
    /// Unaligned I/O.
    pub unaligned_io: u64,
    /// Security Version Number.
    pub security_version: u64,
    /// Total NUSE (namespace utilization).
    pub total_nuse: u64,
    /// PLP Start Count (128-bit).
    pub plp_start_count: u128,
    /// Endurance Estimate (128-bit).
    pub endurance_estimate: u128,
    /// PCIe Link Retraining Count.
    pub pcie_link_retraining_count: u64,
    /// Power State Change Count.
    pub power_state_change_count: u64,
    /// Lowest Permitted Firmware Revision.
    pub lowest_permitted_fw_rev: u64,
    /// Total media dies.
    pub total_media_dies: u16,
    /// Total die failure tolerance.
    pub total_die_failure_tolerance: u16,
    /// Media dies offline.
    pub media_dies_offline: u16,
    /// Max temperature recorded.
    pub max_temperature_recorded: u8,
    /// Form factor.
    pub form_factor: u8,
    /// NAND average erase count.
    pub nand_avg_erase_count: u64,
    /// Command timeouts.
    pub command_timeouts: u32,
    /// System area program fail count, raw.
    pub sys_area_program_fail_count_raw: u32,
    /// System area program fail count, normalized.
    pub sys_area_program_fail_count_normalized: u8,
    /// System area uncorrectable read count, raw.
    pub sys_area_uncorr_read_count_raw: u32,
    /// System area uncorrectable read count, normalized.
    pub sys_area_uncorr_read_count_normalized: u8,
    /// System area erase fail count, raw.
    pub sys_area_erase_fail_count_raw: u32,
    /// System area erase fail count, normalized.
    pub sys_area_erase_fail_count_normalized: u8,
    /// Max peak power capability.
    pub max_peak_power_capability: u16,
    /// Current max average power.
    pub current_max_avg_power: u16,
    /// Lifetime power consumed (48-bit).
    pub lifetime_power_consumed: u64,
    /// DSSD firmware revision, 8 raw bytes (ASCII, NUL padded).
    pub dssd_firmware_revision: [u8; 8],
    /// DSSD firmware build UUID, 16 raw bytes.
    pub dssd_firmware_build_uuid: [u8; 16],
    /// DSSD firmware build label, 64 raw bytes (ASCII, NUL padded).
    pub dssd_firmware_build_label: [u8; 64],
    /// Die-in-use bad NAND blocks, raw (48-bit).
    pub die_in_use_bad_nand_block_raw: u64,
    /// Die-in-use bad NAND blocks, normalized.
    pub die_in_use_bad_nand_block_normalized: u16,
    /// Log Page Version.
    pub log_page_version: u16,
    /// Log Page GUID as nvme-cli reads it: bytes 8..16 little-endian in the high half, bytes
    /// 0..8 in the low half ([`OcpSmartAddLog::C0_GUID`] for a genuine C0h page).
    pub log_page_guid: u128,
}

impl OcpSmartAddLog {
    /// The GUID of the C0h page (`scao_guid` in ocp-smart-extended-log.c); nvme-cli refuses a
    /// page with any other GUID before printing.
    pub const C0_GUID: u128 = 0xafd5_14c9_7c6f_4f9c_a4f2_bfea_2810_afc5;
}

impl Default for OcpSmartAddLog {
    /// All zero except the GUID, which is [`OcpSmartAddLog::C0_GUID`].
    fn default() -> Self {
        OcpSmartAddLog {
            physical_media_units_written: 0,
            physical_media_units_read: 0,
            bad_user_nand_blocks_raw: 0,
            bad_user_nand_blocks_normalized: 0,
            bad_system_nand_blocks_raw: 0,
            bad_system_nand_blocks_normalized: 0,
            xor_recovery_count: 0,
            uncorrectable_read_err_count: 0,
            soft_ecc_err_count: 0,
            end_to_end_detected_err: 0,
            end_to_end_corrected_err: 0,
            system_data_used_percent: 0,
            refresh_counts: 0,
            user_data_erase_count_max: 0,
            user_data_erase_count_min: 0,
            thermal_throttling_event_count: 0,
            thermal_throttling_current_status: 0,
            dssd_errata_version: 0,
            dssd_point_version: 0,
            dssd_minor_version: 0,
            dssd_major_version: 0,
            pcie_correctable_err_count: 0,
            incomplete_shutdowns: 0,
            percent_free_blocks: 0,
            capacitor_health: 0,
            nvme_base_errata_version: 0,
            nvme_cmdset_errata_version: 0,
            nvme_over_pcie_errata_version: 0,
            nvme_mi_errata_version: 0,
            unaligned_io: 0,
            security_version: 0,
            total_nuse: 0,
            plp_start_count: 0,
            endurance_estimate: 0,
            pcie_link_retraining_count: 0,
            power_state_change_count: 0,
            lowest_permitted_fw_rev: 0,
            total_media_dies: 0,
            total_die_failure_tolerance: 0,
            media_dies_offline: 0,
            max_temperature_recorded: 0,
            form_factor: 0,
            nand_avg_erase_count: 0,
            command_timeouts: 0,
            sys_area_program_fail_count_raw: 0,
            sys_area_program_fail_count_normalized: 0,
            sys_area_uncorr_read_count_raw: 0,
            sys_area_uncorr_read_count_normalized: 0,
            sys_area_erase_fail_count_raw: 0,
            sys_area_erase_fail_count_normalized: 0,
            max_peak_power_capability: 0,
            current_max_avg_power: 0,
            lifetime_power_consumed: 0,
            dssd_firmware_revision: [0; 8],
            dssd_firmware_build_uuid: [0; 16],
            dssd_firmware_build_label: [0; 64],
            die_in_use_bad_nand_block_raw: 0,
            die_in_use_bad_nand_block_normalized: 0,
            log_page_version: 0,
            log_page_guid: Self::C0_GUID,
        }
    }
}

/// JSON layout of `nvme ocp smart-add-log -o json`, set by nvme-cli's
/// `--output-format-version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OcpJsonVersion {
    /// Labels as in the text output ("Physical media units written"); nvme-cli's default up to
    /// v2.16.
    V1,
    /// snake_case keys ("physical_media_units_written"); nvme-cli's default from v3.0.
    V2,
}

/// High and low 64-bit halves, the way the OCP printers show 128-bit media counters.
fn hi_lo(v: u128) -> (u64, u64) {
    ((v >> 64) as u64, v as u64)
}

/// `printf("0x%"PRIx64"%"PRIx64, hi, lo)`: no zero padding of the low half, as in nvme-cli.
fn guid_string(g: u128) -> String {
    let (hi, lo) = hi_lo(g);
    format!("0x{hi:x}{lo:x}")
}

/// `printf("%c")` of each byte: NULs are written too; bytes >= 0x80 map to U+0080..U+00FF.
fn raw_chars(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

/// The C string the JSON printers build with `sprintf("%c")`: it ends at the first NUL.
fn c_string(b: &[u8]) -> String {
    b.iter().take_while(|&&c| c != 0).map(|&c| c as char).collect()
}

/// `nvme ocp smart-add-log <dev>` text (stdout only; nvme-cli writes its
/// `NVMe Status:SUCCESS(0)` line to stderr).
pub fn print_ocp_smart_add_log(log: &OcpSmartAddLog) -> String {
    let mut o = String::new();
    let mut line = |s: String| {
        o.push_str(&s);
        o.push('\n');
    };
    let (wh, wl) = hi_lo(log.physical_media_units_written);
    let (rh, rl) = hi_lo(log.physical_media_units_read);
    line("SMART Cloud Attributes :-".into());
    line(format!("  Physical media units written -\t\t{wh} {wl}"));
    line(format!("  Physical media units read    -\t\t{rh} {rl}"));
    line(format!("  Bad user nand blocks - Raw\t\t\t{}", log.bad_user_nand_blocks_raw));
    line(format!("  Bad user nand blocks - Normalized\t\t{}", log.bad_user_nand_blocks_normalized));
    line(format!("  Bad system nand blocks - Raw\t\t\t{}", log.bad_system_nand_blocks_raw));
    line(format!(
        "  Bad system nand blocks - Normalized\t\t{}",
        log.bad_system_nand_blocks_normalized
    ));
    line(format!("  XOR recovery count\t\t\t\t{}", log.xor_recovery_count));
    line(format!("  Uncorrectable read error count\t\t{}", log.uncorrectable_read_err_count));
    line(format!("  Soft ecc error count\t\t\t\t{}", log.soft_ecc_err_count));
    line(format!("  End to end detected errors\t\t\t{}", log.end_to_end_detected_err));
    line(format!("  End to end corrected errors\t\t\t{}", log.end_to_end_corrected_err));
    line(format!("  System data percent used\t\t\t{}", log.system_data_used_percent));
    line(format!("  Refresh counts\t\t\t\t{}", log.refresh_counts));
    line(format!("  Max User data erase counts\t\t\t{}", log.user_data_erase_count_max));
    line(format!("  Min User data erase counts\t\t\t{}", log.user_data_erase_count_min));
    line(format!(
        "  Number of Thermal throttling events\t\t{}",
        log.thermal_throttling_event_count
    ));
    line(format!("  Current throttling status\t\t\t0x{:x}", log.thermal_throttling_current_status));
    line(format!("  PCIe correctable error count\t\t\t{}", log.pcie_correctable_err_count));
    line(format!("  Incomplete shutdowns\t\t\t\t{}", log.incomplete_shutdowns));
    line(format!("  Percent free blocks\t\t\t\t{}", log.percent_free_blocks));
    line(format!("  Capacitor health\t\t\t\t{}", log.capacitor_health));
    line(format!("  Unaligned I/O\t\t\t\t\t{}", log.unaligned_io));
    line(format!("  Security Version Number\t\t\t{}", log.security_version));
    line(format!("  NUSE - Namespace utilization\t\t\t{}", log.total_nuse));
    line(format!("  PLP start count\t\t\t\t{}", log.plp_start_count));
    line(format!("  Endurance estimate\t\t\t\t{}", log.endurance_estimate));
    line(format!("  Log page version\t\t\t\t{}", log.log_page_version));
    line(format!("  Log page GUID\t\t\t\t\t{}", guid_string(log.log_page_guid)));
    let v = log.log_page_version;
    // nvme-cli's switch falls through from the newest version's fields down to version 2's.
    if v >= 6 {
        line(format!("  Form factor\t\t\t\t\t{}", log.form_factor));
        line(format!("  Die in use badnandblock-Raw\t\t{}", log.die_in_use_bad_nand_block_raw));
        line(format!(
            "  Die in use badnandblock-Normal\t\t{}",
            log.die_in_use_bad_nand_block_normalized
        ));
    }
    if v >= 5 {
        line(format!("  NVMe Over Pcie Errata Version\t\t\t{}", log.nvme_over_pcie_errata_version));
        line(format!("  NVMe Mi Errata Version\t\t\t{}", log.nvme_mi_errata_version));
        line(format!("  Total media dies\t\t\t\t{}", log.total_media_dies));
        line(format!("  Total die failure tolerance\t\t\t{}", log.total_die_failure_tolerance));
        line(format!("  Media dies offline\t\t\t\t{}", log.media_dies_offline));
        line(format!("  Max temperature recorded\t\t\t{}", log.max_temperature_recorded));
        line(format!("  Nand avg erase count\t\t\t\t{}", log.nand_avg_erase_count));
        line(format!("  Command timeouts\t\t\t\t{}", log.command_timeouts));
        line(format!(
            "  Sys area program fail count raw\t\t{}",
            log.sys_area_program_fail_count_raw
        ));
        line(format!(
            "  Sys area program fail count noralized\t\t{}",
            log.sys_area_program_fail_count_normalized
        ));
        line(format!(
            "  Sys area uncorrectable read count raw\t\t{}",
            log.sys_area_uncorr_read_count_raw
        ));
        line(format!(
            "  Sys area uncorrectable read count noralized\t{}",
            log.sys_area_uncorr_read_count_normalized
        ));
        line(format!("  Sys area erase fail count raw\t\t\t{}", log.sys_area_erase_fail_count_raw));
        line(format!(
            "  Sys area erase fail count noralized\t\t{}",
            log.sys_area_erase_fail_count_normalized
        ));
        line(format!("  Max peak power capability\t\t\t{}", log.max_peak_power_capability));
        line(format!("  Current max avg power\t\t\t\t{}", log.current_max_avg_power));
        line(format!("  Lifetime power consumed\t\t\t{}", log.lifetime_power_consumed));
        line(format!("  Dssd firmware revision\t\t\t{}", raw_chars(&log.dssd_firmware_revision)));
        line(format!("  Dssd firmware build UUID\t\t\t{}", uuid(&log.dssd_firmware_build_uuid)));
        line(format!(
            "  Dssd firmware build label\t\t\t{}",
            raw_chars(&log.dssd_firmware_build_label)
        ));
    }
    if v >= 4 {
        line(format!(
            "  NVMe Command Set Errata Version               {}",
            log.nvme_cmdset_errata_version
        ));
        line(format!(
            "  Lowest Permitted Firmware Revision            {}",
            log.lowest_permitted_fw_rev
        ));
    }
    if v >= 2 {
        line(format!(
            "  Errata Version Field                          {}",
            log.dssd_errata_version
        ));
        line(format!("  Point Version Field                           {}", log.dssd_point_version));
        line(format!("  Minor Version Field                           {}", log.dssd_minor_version));
        line(format!("  Major Version Field                           {}", log.dssd_major_version));
        line(format!(
            "  NVMe Base Errata Version                      {}",
            log.nvme_base_errata_version
        ));
        line(format!(
            "  PCIe Link Retraining Count                    {}",
            log.pcie_link_retraining_count
        ));
        line(format!(
            "  Power State Change Count                      {}",
            log.power_state_change_count
        ));
    }
    line(String::new());
    o
}

/// `nvme ocp smart-add-log <dev> -o json [--output-format-version=N]`: exact text.
pub fn ocp_smart_add_log_json(log: &OcpSmartAddLog, version: OcpJsonVersion) -> String {
    ocp_json_value(log, version).to_nvme_cli_string()
}

pub(crate) fn ocp_json_value(log: &OcpSmartAddLog, version: OcpJsonVersion) -> J {
    let v1 = version == OcpJsonVersion::V1;
    // Every key comes as (v1 label, v2 key).
    let k = |a: &'static str, b: &'static str| if v1 { a } else { b };
    let hl = |v: u128| {
        let (h, l) = hi_lo(v);
        let mut o = Obj::new();
        o.num("hi", h).num("lo", l);
        o.done()
    };
    let mut r = Obj::new();
    r.add(
        k("Physical media units written", "physical_media_units_written"),
        hl(log.physical_media_units_written),
    );
    r.add(
        k("Physical media units read", "physical_media_units_read"),
        hl(log.physical_media_units_read),
    );
    r.num(
        k("Bad user nand blocks - Raw", "bad_user_nand_blocks_raw"),
        log.bad_user_nand_blocks_raw,
    )
    .num(
        k("Bad user nand blocks - Normalized", "bad_user_nand_blocks_normalized"),
        log.bad_user_nand_blocks_normalized,
    )
    .num(
        k("Bad system nand blocks - Raw", "bad_system_nand_blocks_raw"),
        log.bad_system_nand_blocks_raw,
    )
    .num(
        k("Bad system nand blocks - Normalized", "bad_system_nand_blocks_normalized"),
        log.bad_system_nand_blocks_normalized,
    )
    .num(k("XOR recovery count", "xor_recovery_count"), log.xor_recovery_count)
    .num(
        k("Uncorrectable read error count", "uncorrectable_read_errors"),
        log.uncorrectable_read_err_count,
    )
    .num(k("Soft ecc error count", "soft_ecc_error_count"), log.soft_ecc_err_count)
    .num(k("End to end detected errors", "end_to_end_detected_errors"), log.end_to_end_detected_err)
    .num(
        k("End to end corrected errors", "end_to_end_corrected_errors"),
        log.end_to_end_corrected_err,
    )
    .num(k("System data percent used", "system_data_percent_used"), log.system_data_used_percent)
    .num(k("Refresh counts", "refresh_count"), log.refresh_counts)
    .num(
        k("Max User data erase counts", "max_user_data_erase_count"),
        log.user_data_erase_count_max,
    )
    .num(
        k("Min User data erase counts", "min_user_data_erase_count"),
        log.user_data_erase_count_min,
    )
    .num(
        k("Number of Thermal throttling events", "thermal_throttling_events"),
        log.thermal_throttling_event_count,
    )
    .num(
        k("Current throttling status", "current_throttling_status"),
        log.thermal_throttling_current_status,
    )
    .num(
        k("PCIe correctable error count", "pcie_correctable_errors"),
        log.pcie_correctable_err_count,
    )
    .num(k("Incomplete shutdowns", "incomplete_shutdowns"), log.incomplete_shutdowns)
    .num(k("Percent free blocks", "percent_free_blocks"), log.percent_free_blocks)
    .num(k("Capacitor health", "capacitor_health"), log.capacitor_health)
    .num(k("Unaligned I/O", "unaligned_io"), log.unaligned_io)
    .num(k("Security Version Number", "security_version_number"), log.security_version)
    .num(k("NUSE - Namespace utilization", "nuse_namespace_utilization"), log.total_nuse)
    .num(k("PLP start count", "plp_start_count"), log.plp_start_count)
    .num(k("Endurance estimate", "endurance_estimate"), log.endurance_estimate)
    .num(k("Log page version", "log_page_version"), log.log_page_version)
    .str(k("Log page GUID", "log_page_guid"), guid_string(log.log_page_guid));
    let v = log.log_page_version;
    // v1 has a version-6 block; v2's switch starts at 5 (no form factor, no die-in-use counts).
    if v1 && v >= 6 {
        r.num("Form factor", log.form_factor)
            .num("Die use badnandblock raw", log.die_in_use_bad_nand_block_raw)
            .num("Die use badnandblock normal", log.die_in_use_bad_nand_block_normalized);
    }
    if v >= 5 {
        r.num(
            k("NVMe Over Pcie Errata Version", "nvme_over_pcie_errata_version"),
            log.nvme_over_pcie_errata_version,
        )
        .num(k("NVMe Mi Errata Version", "nvme_mi_errata_version"), log.nvme_mi_errata_version)
        .num(k("Total media dies", "total_media_dies"), log.total_media_dies)
        .num(
            k("Total die failure tolerance", "total_die_failure_tolerance"),
            log.total_die_failure_tolerance,
        )
        .num(k("Media dies offline", "media_dies_offline"), log.media_dies_offline)
        .num(
            k("Max temperature recorded", "max_temperature_recorded"),
            log.max_temperature_recorded,
        )
        .num(k("Nand avg erase count", "nand_avg_erase_count"), log.nand_avg_erase_count)
        .num(k("Command timeouts", "command_timeouts"), log.command_timeouts)
        .num(
            k("Sys area program fail count raw", "sys_area_program_fail_count_raw"),
            log.sys_area_program_fail_count_raw,
        )
        .num(
            k("Sys area program fail count noralized", "sys_area_program_fail_count_noralized"),
            log.sys_area_program_fail_count_normalized,
        )
        .num(
            k("Sys area uncorrectable read count raw", "sys_area_uncorrectable_read_count_raw"),
            log.sys_area_uncorr_read_count_raw,
        )
        .num(
            k(
                "Sys area uncorrectable read count noralized",
                "sys_area_uncorrectable_read_count_noralized",
            ),
            log.sys_area_uncorr_read_count_normalized,
        )
        .num(
            k("Sys area erase fail count raw", "sys_area_erase_fail_count_raw"),
            log.sys_area_erase_fail_count_raw,
        )
        .num(
            k("Sys area erase fail count noralized", "sys_area_erase_fail_count_noralized"),
            log.sys_area_erase_fail_count_normalized,
        )
        .num(
            k("Max peak power capability", "max_peak_power_capability"),
            log.max_peak_power_capability,
        )
        .num(k("Current max avg power", "current_max_avg_power"), log.current_max_avg_power)
        .num(k("Lifetime power consumed", "lifetime_power_consumed"), log.lifetime_power_consumed)
        .str(
            k("Dssd firmware revision", "dssd_firmware_revision"),
            c_string(&log.dssd_firmware_revision),
        )
        .str(
            k("Dssd firmware build UUID", "dssd_firmware_build_uuid"),
            uuid(&log.dssd_firmware_build_uuid),
        )
        .str(
            k("Dssd firmware build label", "dssd_firmware_build_label"),
            c_string(&log.dssd_firmware_build_label),
        );
    }
    if v >= 4 {
        r.num(
            k("NVMe Command Set Errata Version", "nvme_command_set_errata_version"),
            log.nvme_cmdset_errata_version,
        )
        .num(
            k("Lowest Permitted Firmware Revision", "lowest_permitted_firmware_revision"),
            log.lowest_permitted_fw_rev,
        );
    }
    if v >= 2 {
        r.num(k("Errata Version Field", "errata_version_field"), log.dssd_errata_version)
            .num(k("Point Version Field", "point_version_field"), log.dssd_point_version)
            .num(k("Minor Version Field", "minor_version_field"), log.dssd_minor_version)
            .num(k("Major Version Field", "major_version_field"), log.dssd_major_version)
            .num(
                k("NVMe Base Errata Version", "nvme_base_errata_version"),
                log.nvme_base_errata_version,
            )
            .num(
                k("PCIe Link Retraining Count", "pcie_link_retraining_count"),
                log.pcie_link_retraining_count,
            )
            .num(
                k("Power State Change Count", "power_state_change_count"),
                log.power_state_change_count,
            );
    }
    r.done()
}
