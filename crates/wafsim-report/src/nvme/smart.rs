//! `nvme smart-log`: SMART / Health Information log page (02h).
//!
//! Text follows `stdout_smart_log` (src/nvme-print-stdout.c), JSON follows `json_smart_log`
//! (src/nvme-print-json.c); field widths from `struct nvme_smart_log`
//! (libnvme/src/nvme/nvme-types-base.h).

use super::fmt::{celsius, fahrenheit, hash_x, l10n, power_field, power_measurement_type};
use super::fmt::{si_string, TextOptions};
use super::json::{Obj, J};

/// Bytes per SMART data unit: the log counts thousands of 512-byte units.
pub const DATA_UNIT_BYTES: u32 = 1000 * 512;

/// The SMART / Health Information log, decoded (integers in host order).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SmartLog {
    /// Critical Warning bit field (bits 0..5: spare, temperature, reliability, read-only,
    /// volatile backup failed, PMR read-only).
    pub critical_warning: u8,
    /// Composite temperature in Kelvin.
    pub temperature: u16,
    /// Available Spare, percent.
    pub available_spare: u8,
    /// Available Spare Threshold, percent.
    pub available_spare_threshold: u8,
    /// Percentage Used (may exceed 100).
    pub percentage_used: u8,
    /// Endurance Group Critical Warning Summary bit field.
    pub endurance_group_critical_warning_summary: u8,
    /// Data Units Read, in thousands of 512-byte units.
    pub data_units_read: u128,
    /// Data Units Written, in thousands of 512-byte units (rounded up by the device).
    pub data_units_written: u128,
    /// Host Read Commands.
    pub host_read_commands: u128,
    /// Host Write Commands.
    pub host_write_commands: u128,
    /// Controller Busy Time, minutes.
    pub controller_busy_time: u128,
    /// Power Cycles.
    pub power_cycles: u128,
    /// Power On Hours.
    pub power_on_hours: u128,
    /// Unsafe Shutdowns.
    pub unsafe_shutdowns: u128,
    /// Media and Data Integrity Errors.
    pub media_errors: u128,
    /// Number of Error Information Log Entries.
    pub num_err_log_entries: u128,
    /// Warning Composite Temperature Time, minutes.
    pub warning_temp_time: u32,
    /// Critical Composite Temperature Time, minutes.
    pub critical_comp_time: u32,
    /// Temperature Sensors 1..8 in Kelvin; 0 means not implemented (not printed).
    pub temp_sensor: [u16; 8],
    /// Thermal Management Temperature 1 Transition Count.
    pub thm_temp1_trans_count: u32,
    /// Thermal Management Temperature 2 Transition Count.
    pub thm_temp2_trans_count: u32,
    /// Total Time For Thermal Management Temperature 1, seconds.
    pub thm_temp1_total_time: u32,
    /// Total Time For Thermal Management Temperature 2, seconds.
    pub thm_temp2_total_time: u32,
    /// Operational Lifetime Energy Consumed (NVMe 2.1), watt-hours.
    pub op_lifetime_energy_consumed: u64,
    /// Interval Power Measurement (NVMe 2.1): bits 15:0 power, 17:16 scale, 25:20 type.
    pub interval_power_measurement: u32,
}

/// `nvme smart-log <dev>` text. `nsid` is printed in hex (`0xffffffff` = the controller-wide
/// log, nvme-cli's default); `devname` is the name nvme-cli shows (e.g. `nvme0`).
pub fn print_smart_log(log: &SmartLog, nsid: u32, devname: &str, opts: &TextOptions) -> String {
    let sep = opts.locale.thousands_sep();
    let n = |v: u128| l10n(v, sep);
    let mut o = String::new();
    let mut line = |s: String| {
        o.push_str(&s);
        o.push('\n');
    };
    let cw = log.critical_warning;
    line(format!("Smart Log for NVME device:{devname} namespace-id:{nsid:x}"));
    line(format!("critical_warning\t\t\t: {}", hash_x(cw as u64)));
    if opts.verbose {
        line(format!("      Available Spare[0]             : {}", cw & 1));
        line(format!("      Temp. Threshold[1]             : {}", (cw >> 1) & 1));
        line(format!("      NVM subsystem Reliability[2]   : {}", (cw >> 2) & 1));
        line(format!("      Read-only[3]                   : {}", (cw >> 3) & 1));
        line(format!("      Volatile mem. backup failed[4] : {}", (cw >> 4) & 1));
        line(format!("      Persistent Mem. RO[5]          : {}", (cw >> 5) & 1));
    }
    let t = log.temperature;
    line(format!("temperature\t\t\t\t: {} ({} K, {})", celsius(t), t, fahrenheit(t)));
    line(format!("available_spare\t\t\t\t: {}%", log.available_spare));
    line(format!("available_spare_threshold\t\t: {}%", log.available_spare_threshold));
    line(format!("percentage_used\t\t\t\t: {}%", log.percentage_used));
    line(format!(
        "endurance group critical warning summary: {}",
        hash_x(log.endurance_group_critical_warning_summary as u64)
    ));
    line(format!(
        "Data Units Read\t\t\t\t: {} ({})",
        n(log.data_units_read),
        si_string(log.data_units_read, DATA_UNIT_BYTES)
    ));
    line(format!(
        "Data Units Written\t\t\t: {} ({})",
        n(log.data_units_written),
        si_string(log.data_units_written, DATA_UNIT_BYTES)
    ));
    line(format!("host_read_commands\t\t\t: {}", n(log.host_read_commands)));
    line(format!("host_write_commands\t\t\t: {}", n(log.host_write_commands)));
    line(format!("controller_busy_time\t\t\t: {}", n(log.controller_busy_time)));
    line(format!("power_cycles\t\t\t\t: {}", n(log.power_cycles)));
    line(format!("power_on_hours\t\t\t\t: {}", n(log.power_on_hours)));
    line(format!("unsafe_shutdowns\t\t\t: {}", n(log.unsafe_shutdowns)));
    line(format!("media_errors\t\t\t\t: {}", n(log.media_errors)));
    line(format!("num_err_log_entries\t\t\t: {}", n(log.num_err_log_entries)));
    line(format!("Warning Temperature Time\t\t: {}", log.warning_temp_time));
    line(format!("Critical Composite Temperature Time\t: {}", log.critical_comp_time));
    for (i, &k) in log.temp_sensor.iter().enumerate() {
        if k == 0 {
            continue;
        }
        line(format!(
            "Temperature Sensor {}\t\t\t: {} ({} K, {})",
            i + 1,
            celsius(k),
            k,
            fahrenheit(k)
        ));
    }
    line(format!("Thermal Management T1 Trans Count\t: {}", log.thm_temp1_trans_count));
    line(format!("Thermal Management T2 Trans Count\t: {}", log.thm_temp2_trans_count));
    line(format!("Thermal Management T1 Total Time\t: {}", log.thm_temp1_total_time));
    line(format!("Thermal Management T2 Total Time\t: {}", log.thm_temp2_total_time));
    line(format!("Operational Lifetime Energy Consumed\t: {}", log.op_lifetime_energy_consumed));
    let ipm = log.interval_power_measurement;
    line(format!(
        "Interval Power Measurement Type\t\t: {}",
        power_measurement_type((ipm >> 20) & 0x3f)
    ));
    line(format!("Interval Power Measurement\t\t: {}", power_field(ipm)));
    o
}

/// `nvme smart-log <dev> -o json` (add `verbose` for `-H`, which turns `critical_warning` into
/// an object of its bits). Exact text, keys in nvme-cli's order.
pub fn smart_log_json(log: &SmartLog, verbose: bool) -> String {
    smart_log_json_value(log, verbose).to_nvme_cli_string()
}

pub(crate) fn smart_log_json_value(log: &SmartLog, verbose: bool) -> J {
    let mut r = Obj::new();
    let cw = log.critical_warning;
    if verbose {
        let mut c = Obj::new();
        c.num("value", cw)
            .num("available_spare", cw & 1)
            .num("temp_threshold", (cw & 2) >> 1)
            .num("reliability_degraded", (cw & 4) >> 2)
            .num("ro", (cw & 8) >> 3)
            .num("vmbu_failed", (cw & 0x10) >> 4)
            .num("pmr_ro", (cw & 0x20) >> 5);
        r.add("critical_warning", c.done());
    } else {
        r.num("critical_warning", cw);
    }
    r.num("temperature", log.temperature)
        .num("avail_spare", log.available_spare)
        .num("spare_thresh", log.available_spare_threshold)
        .num("percent_used", log.percentage_used)
        .num("endurance_grp_critical_warning_summary", log.endurance_group_critical_warning_summary)
        .num("data_units_read", log.data_units_read)
        .num("data_units_written", log.data_units_written)
        .num("host_read_commands", log.host_read_commands)
        .num("host_write_commands", log.host_write_commands)
        .num("controller_busy_time", log.controller_busy_time)
        .num("power_cycles", log.power_cycles)
        .num("power_on_hours", log.power_on_hours)
        .num("unsafe_shutdowns", log.unsafe_shutdowns)
        .num("media_errors", log.media_errors)
        .num("num_err_log_entries", log.num_err_log_entries)
        .num("warning_temp_time", log.warning_temp_time)
        .num("critical_comp_time", log.critical_comp_time);
    for (i, &k) in log.temp_sensor.iter().enumerate() {
        if k != 0 {
            r.num(&format!("temperature_sensor_{}", i + 1), k);
        }
    }
    r.num("thm_temp1_trans_count", log.thm_temp1_trans_count)
        .num("thm_temp2_trans_count", log.thm_temp2_trans_count)
        .num("thm_temp1_total_time", log.thm_temp1_total_time)
        .num("thm_temp2_total_time", log.thm_temp2_total_time)
        .num("op_lifetime_energy_consumed", log.op_lifetime_energy_consumed)
        .num("interval_power_measurement", log.interval_power_measurement);
    r.done()
}
