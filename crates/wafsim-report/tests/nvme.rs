//! nvme-cli output: golden texts built by hand from nvme-cli's format strings (commit
//! e117ee68059f, v3.0-rc1-75), real captured outputs, print/parse round trips and WAF.

use wafsim_report::nvme::*;

/// Each line followed by `\n`: the expected texts below are written one printf line at a time.
fn lines(ls: &[&str]) -> String {
    ls.iter().map(|l| format!("{l}\n")).collect()
}

fn sample_smart() -> SmartLog {
    SmartLog {
        critical_warning: 0,
        temperature: 317,
        available_spare: 100,
        available_spare_threshold: 10,
        percentage_used: 3,
        endurance_group_critical_warning_summary: 0,
        data_units_read: 12_345_678,
        data_units_written: 9_876_543,
        host_read_commands: 123_456_789,
        host_write_commands: 98_765_432,
        controller_busy_time: 1234,
        power_cycles: 56,
        power_on_hours: 7890,
        unsafe_shutdowns: 12,
        media_errors: 0,
        num_err_log_entries: 3,
        warning_temp_time: 5,
        critical_comp_time: 1,
        temp_sensor: [317, 0, 325, 0, 0, 0, 0, 0],
        thm_temp1_trans_count: 1,
        thm_temp2_trans_count: 2,
        thm_temp1_total_time: 3,
        thm_temp2_total_time: 4,
        op_lifetime_energy_consumed: 42,
        // Scale 2 (0.01 W), power 1234, type 0.
        interval_power_measurement: (2 << 16) | 1234,
    }
}

// ---------------------------------------------------------------- smart-log golden texts

#[test]
fn smart_log_text_en_us() {
    // stdout_smart_log: "%s (%s)" = l10n count and uint128_t_to_si_string(v, 1000 * 512);
    // 12,345,678 x 512,000 B = 6.320987136e12 B -> "6.32 TB"; 317 K -> 44 C, 44*9/5+32 = 111 F;
    // 325 K -> 52 C, 52*9/5+32 = 125 F (C integer division).
    let want = "Smart Log for NVME device:nvme0 namespace-id:ffffffff\n\
critical_warning\t\t\t: 0\n\
temperature\t\t\t\t: 44 °C (317 K, 111 °F)\n\
available_spare\t\t\t\t: 100%\n\
available_spare_threshold\t\t: 10%\n\
percentage_used\t\t\t\t: 3%\n\
endurance group critical warning summary: 0\n\
Data Units Read\t\t\t\t: 12,345,678 (6.32 TB)\n\
Data Units Written\t\t\t: 9,876,543 (5.06 TB)\n\
host_read_commands\t\t\t: 123,456,789\n\
host_write_commands\t\t\t: 98,765,432\n\
controller_busy_time\t\t\t: 1,234\n\
power_cycles\t\t\t\t: 56\n\
power_on_hours\t\t\t\t: 7,890\n\
unsafe_shutdowns\t\t\t: 12\n\
media_errors\t\t\t\t: 0\n\
num_err_log_entries\t\t\t: 3\n\
Warning Temperature Time\t\t: 5\n\
Critical Composite Temperature Time\t: 1\n\
Temperature Sensor 1\t\t\t: 44 °C (317 K, 111 °F)\n\
Temperature Sensor 3\t\t\t: 52 °C (325 K, 125 °F)\n\
Thermal Management T1 Trans Count\t: 1\n\
Thermal Management T2 Trans Count\t: 2\n\
Thermal Management T1 Total Time\t: 3\n\
Thermal Management T2 Total Time\t: 4\n\
Operational Lifetime Energy Consumed\t: 42\n\
Interval Power Measurement Type\t\t: NVM subsystem total power\n\
Interval Power Measurement\t\t: 12.34W\n";
    let got = print_smart_log(&sample_smart(), 0xffff_ffff, "nvme0", &TextOptions::default());
    assert_eq!(got, want);
}

#[test]
fn smart_log_text_c_locale_verbose_and_large() {
    let mut s = sample_smart();
    s.critical_warning = 0x05;
    s.endurance_group_critical_warning_summary = 0x10;
    // Past 2^64: the l10n printer is exact, the SI figure goes through long double.
    s.data_units_written = (1u128 << 64) + 5;
    s.data_units_read = u128::MAX;
    s.temp_sensor = [0; 8];
    s.temperature = 250; // below freezing: -23 C, -23*9/5+32 = -41+32 = -9 F
    s.interval_power_measurement = (0xc << 20) | (1 << 16) | 12345;
    let opts = TextOptions { locale: Locale::C, verbose: true };
    let got = print_smart_log(&s, 1, "nvme1n1", &opts);
    let want_head = lines(&[
        "Smart Log for NVME device:nvme1n1 namespace-id:1",
        "critical_warning\t\t\t: 0x5",
        "      Available Spare[0]             : 1",
        "      Temp. Threshold[1]             : 0",
        "      NVM subsystem Reliability[2]   : 1",
        "      Read-only[3]                   : 0",
        "      Volatile mem. backup failed[4] : 0",
        "      Persistent Mem. RO[5]          : 0",
        "temperature\t\t\t\t: -23 °C (250 K, -9 °F)",
        "available_spare\t\t\t\t: 100%",
        "available_spare_threshold\t\t: 10%",
        "percentage_used\t\t\t\t: 3%",
        "endurance group critical warning summary: 0x10",
        "Data Units Read\t\t\t\t: 340282366920938463463374607431768211455 (174224571863520.49 QB)",
        "Data Units Written\t\t\t: 18446744073709551621 (9.44 YB)",
        "host_read_commands\t\t\t: 123456789",
    ]);
    assert!(got.starts_with(&want_head), "got:\n{got}");
    assert!(got.contains("Critical Composite Temperature Time\t: 1\nThermal Management T1"));
    assert!(got.ends_with(
        "Interval Power Measurement Type\t\t: Vendor Specific\n\
Interval Power Measurement\t\t: 1.2345W\n"
    ));
}

#[test]
fn smart_log_si_boundaries() {
    // 1,953,125 units x 512,000 B = exactly 1e12 B: the ">= magnitude" test picks T.
    assert_eq!(si_string(1_953_125, DATA_UNIT_BYTES), "1.00 TB");
    assert_eq!(si_string(999, DATA_UNIT_BYTES), "511.49 MB");
    assert_eq!(si_string(1, DATA_UNIT_BYTES), "512.00 kB");
    assert_eq!(si_string(0, DATA_UNIT_BYTES), "0.00 B");
    assert_eq!(l10n(1_000_000, ","), "1,000,000");
    assert_eq!(l10n((1u128 << 64) + 5, ","), "18,446,744,073,709,551,621");
}

#[test]
fn smart_log_json_golden() {
    let want = r#"{
  "critical_warning":0,
  "temperature":317,
  "avail_spare":100,
  "spare_thresh":10,
  "percent_used":3,
  "endurance_grp_critical_warning_summary":0,
  "data_units_read":12345678,
  "data_units_written":9876543,
  "host_read_commands":123456789,
  "host_write_commands":98765432,
  "controller_busy_time":1234,
  "power_cycles":56,
  "power_on_hours":7890,
  "unsafe_shutdowns":12,
  "media_errors":0,
  "num_err_log_entries":3,
  "warning_temp_time":5,
  "critical_comp_time":1,
  "temperature_sensor_1":317,
  "temperature_sensor_3":325,
  "thm_temp1_trans_count":1,
  "thm_temp2_trans_count":2,
  "thm_temp1_total_time":3,
  "thm_temp2_total_time":4,
  "op_lifetime_energy_consumed":42,
  "interval_power_measurement":132306
}
"#;
    assert_eq!(smart_log_json(&sample_smart(), false), want);
}

#[test]
fn smart_log_json_verbose_and_128_bit() {
    let mut s = sample_smart();
    s.critical_warning = 0x22;
    s.data_units_written = u128::MAX;
    let got = smart_log_json(&s, true);
    assert!(got.starts_with(
        r#"{
  "critical_warning":{
    "value":34,
    "available_spare":0,
    "temp_threshold":1,
    "reliability_degraded":0,
    "ro":0,
    "vmbu_failed":0,
    "pmr_ro":1
  },
  "temperature":317,"#
    ));
    // json-c writes the 128-bit counter as a bare integer, not a string or a float.
    assert!(got.contains("\n  \"data_units_written\":340282366920938463463374607431768211455,\n"));
}

// ---------------------------------------------------------------- ocp smart-add-log golden

fn sample_ocp(version: u16) -> OcpSmartAddLog {
    let mut label = [0u8; 64];
    label[..9].copy_from_slice(b"build-123");
    OcpSmartAddLog {
        physical_media_units_written: (3u128 << 64) | 7,
        physical_media_units_read: 987_654_321,
        bad_user_nand_blocks_raw: 2,
        bad_user_nand_blocks_normalized: 100,
        bad_system_nand_blocks_raw: 1,
        bad_system_nand_blocks_normalized: 99,
        xor_recovery_count: 4,
        uncorrectable_read_err_count: 5,
        soft_ecc_err_count: 6,
        end_to_end_detected_err: 7,
        end_to_end_corrected_err: 8,
        system_data_used_percent: 9,
        refresh_counts: 10,
        user_data_erase_count_max: 300,
        user_data_erase_count_min: 200,
        thermal_throttling_event_count: 11,
        thermal_throttling_current_status: 0x1f,
        dssd_errata_version: 1,
        dssd_point_version: 2,
        dssd_minor_version: 5,
        dssd_major_version: 2,
        pcie_correctable_err_count: 12,
        incomplete_shutdowns: 13,
        percent_free_blocks: 14,
        capacitor_health: 15,
        nvme_base_errata_version: 16,
        nvme_cmdset_errata_version: 17,
        nvme_over_pcie_errata_version: 18,
        nvme_mi_errata_version: 19,
        unaligned_io: 20,
        security_version: 21,
        total_nuse: 22,
        plp_start_count: 23,
        endurance_estimate: (1u128 << 64) + 24,
        pcie_link_retraining_count: 25,
        power_state_change_count: 26,
        lowest_permitted_fw_rev: 27,
        total_media_dies: 28,
        total_die_failure_tolerance: 29,
        media_dies_offline: 30,
        max_temperature_recorded: 31,
        form_factor: 32,
        nand_avg_erase_count: 33,
        command_timeouts: 34,
        sys_area_program_fail_count_raw: 35,
        sys_area_program_fail_count_normalized: 36,
        sys_area_uncorr_read_count_raw: 37,
        sys_area_uncorr_read_count_normalized: 38,
        sys_area_erase_fail_count_raw: 39,
        sys_area_erase_fail_count_normalized: 40,
        max_peak_power_capability: 41,
        current_max_avg_power: 42,
        lifetime_power_consumed: 43,
        dssd_firmware_revision: *b"FW1.2\0\0\0",
        dssd_firmware_build_uuid: [
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
            0x66, 0x77,
        ],
        dssd_firmware_build_label: label,
        die_in_use_bad_nand_block_raw: 44,
        die_in_use_bad_nand_block_normalized: 45,
        log_page_version: version,
        log_page_guid: OcpSmartAddLog::C0_GUID,
    }
}

/// stdout_smart_extended_log's lines common to every log page version.
const OCP_HEAD: &[&str] = &[
    "SMART Cloud Attributes :-",
    "  Physical media units written -\t\t3 7",
    "  Physical media units read    -\t\t0 987654321",
    "  Bad user nand blocks - Raw\t\t\t2",
    "  Bad user nand blocks - Normalized\t\t100",
    "  Bad system nand blocks - Raw\t\t\t1",
    "  Bad system nand blocks - Normalized\t\t99",
    "  XOR recovery count\t\t\t\t4",
    "  Uncorrectable read error count\t\t5",
    "  Soft ecc error count\t\t\t\t6",
    "  End to end detected errors\t\t\t7",
    "  End to end corrected errors\t\t\t8",
    "  System data percent used\t\t\t9",
    "  Refresh counts\t\t\t\t10",
    "  Max User data erase counts\t\t\t300",
    "  Min User data erase counts\t\t\t200",
    "  Number of Thermal throttling events\t\t11",
    "  Current throttling status\t\t\t0x1f",
    "  PCIe correctable error count\t\t\t12",
    "  Incomplete shutdowns\t\t\t\t13",
    "  Percent free blocks\t\t\t\t14",
    "  Capacitor health\t\t\t\t15",
    "  Unaligned I/O\t\t\t\t\t20",
    "  Security Version Number\t\t\t21",
    "  NUSE - Namespace utilization\t\t\t22",
    "  PLP start count\t\t\t\t23",
    "  Endurance estimate\t\t\t\t18446744073709551640",
];

#[test]
fn ocp_text_version_1_and_3() {
    let v1 = lines(OCP_HEAD)
        + "  Log page version\t\t\t\t1\n  Log page GUID\t\t\t\t\t0xafd514c97c6f4f9ca4f2bfea2810afc5\n\n";
    assert_eq!(print_ocp_smart_add_log(&sample_ocp(1)), v1);
    let v3 = lines(OCP_HEAD)
        + &lines(&[
            "  Log page version\t\t\t\t3",
            "  Log page GUID\t\t\t\t\t0xafd514c97c6f4f9ca4f2bfea2810afc5",
            "  Errata Version Field                          1",
            "  Point Version Field                           2",
            "  Minor Version Field                           5",
            "  Major Version Field                           2",
            "  NVMe Base Errata Version                      16",
            "  PCIe Link Retraining Count                    25",
            "  Power State Change Count                      26",
            "",
        ]);
    assert_eq!(print_ocp_smart_add_log(&sample_ocp(3)), v3);
}

#[test]
fn ocp_text_version_6_order() {
    let got = print_ocp_smart_add_log(&sample_ocp(6));
    let want_tail = lines(&[
        "  Log page version\t\t\t\t6",
        "  Log page GUID\t\t\t\t\t0xafd514c97c6f4f9ca4f2bfea2810afc5",
        "  Form factor\t\t\t\t\t32",
        "  Die in use badnandblock-Raw\t\t44",
        "  Die in use badnandblock-Normal\t\t45",
        "  NVMe Over Pcie Errata Version\t\t\t18",
        "  NVMe Mi Errata Version\t\t\t19",
        "  Total media dies\t\t\t\t28",
        "  Total die failure tolerance\t\t\t29",
        "  Media dies offline\t\t\t\t30",
        "  Max temperature recorded\t\t\t31",
        "  Nand avg erase count\t\t\t\t33",
        "  Command timeouts\t\t\t\t34",
        "  Sys area program fail count raw\t\t35",
        "  Sys area program fail count noralized\t\t36",
        "  Sys area uncorrectable read count raw\t\t37",
        "  Sys area uncorrectable read count noralized\t38",
        "  Sys area erase fail count raw\t\t\t39",
        "  Sys area erase fail count noralized\t\t40",
        "  Max peak power capability\t\t\t41",
        "  Current max avg power\t\t\t\t42",
        "  Lifetime power consumed\t\t\t43",
        "  Dssd firmware revision\t\t\tFW1.2\0\0\0",
        "  Dssd firmware build UUID\t\t\t01234567-89ab-cdef-0011-223344556677",
    ]);
    assert!(got.starts_with(&lines(OCP_HEAD)));
    assert!(got.contains(&want_tail), "got:\n{got}");
    // The 64-byte label is written byte by byte, NULs included, then the version-4 block.
    let label_line = format!("  Dssd firmware build label\t\t\tbuild-123{}\n", "\0".repeat(55));
    assert!(got.contains(
        &(label_line
            + &lines(&[
                "  NVMe Command Set Errata Version               17",
                "  Lowest Permitted Firmware Revision            27",
                "  Errata Version Field                          1",
            ]))
    ));
    assert!(got.ends_with("  Power State Change Count                      26\n\n"));
}

#[test]
fn ocp_json_v2_and_v1_golden() {
    let v2 = r#"{
  "physical_media_units_written":{
    "hi":3,
    "lo":7
  },
  "physical_media_units_read":{
    "hi":0,
    "lo":987654321
  },
  "bad_user_nand_blocks_raw":2,
  "bad_user_nand_blocks_normalized":100,
  "bad_system_nand_blocks_raw":1,
  "bad_system_nand_blocks_normalized":99,
  "xor_recovery_count":4,
  "uncorrectable_read_errors":5,
  "soft_ecc_error_count":6,
  "end_to_end_detected_errors":7,
  "end_to_end_corrected_errors":8,
  "system_data_percent_used":9,
  "refresh_count":10,
  "max_user_data_erase_count":300,
  "min_user_data_erase_count":200,
  "thermal_throttling_events":11,
  "current_throttling_status":31,
  "pcie_correctable_errors":12,
  "incomplete_shutdowns":13,
  "percent_free_blocks":14,
  "capacitor_health":15,
  "unaligned_io":20,
  "security_version_number":21,
  "nuse_namespace_utilization":22,
  "plp_start_count":23,
  "endurance_estimate":18446744073709551640,
  "log_page_version":3,
  "log_page_guid":"0xafd514c97c6f4f9ca4f2bfea2810afc5",
  "errata_version_field":1,
  "point_version_field":2,
  "minor_version_field":5,
  "major_version_field":2,
  "nvme_base_errata_version":16,
  "pcie_link_retraining_count":25,
  "power_state_change_count":26
}
"#;
    assert_eq!(ocp_smart_add_log_json(&sample_ocp(3), OcpJsonVersion::V2), v2);
    let v1 = ocp_smart_add_log_json(&sample_ocp(3), OcpJsonVersion::V1);
    assert!(v1.starts_with(
        r#"{
  "Physical media units written":{
    "hi":3,
    "lo":7
  },
  "Physical media units read":{
    "hi":0,
    "lo":987654321
  },
  "Bad user nand blocks - Raw":2,
  "Bad user nand blocks - Normalized":100,"#
    ));
    assert!(v1.ends_with(
        r#"  "Log page version":3,
  "Log page GUID":"0xafd514c97c6f4f9ca4f2bfea2810afc5",
  "Errata Version Field":1,
  "Point Version Field":2,
  "Minor Version Field":5,
  "Major Version Field":2,
  "NVMe Base Errata Version":16,
  "PCIe Link Retraining Count":25,
  "Power State Change Count":26
}
"#
    ));
}

#[test]
fn ocp_json_version_6_blocks_differ_between_v1_and_v2() {
    let log = sample_ocp(6);
    let v1 = ocp_smart_add_log_json(&log, OcpJsonVersion::V1);
    let v2 = ocp_smart_add_log_json(&log, OcpJsonVersion::V2);
    assert!(v1.contains(
        "  \"Form factor\":32,\n  \"Die use badnandblock raw\":44,\n  \"Die use badnandblock normal\":45,\n  \"NVMe Over Pcie Errata Version\":18,"
    ));
    assert!(!v2.contains("form_factor"));
    // The JSON strings end at the first NUL, as the C string nvme-cli builds does.
    assert!(v2.contains("  \"dssd_firmware_revision\":\"FW1.2\",\n"));
    assert!(
        v2.contains("  \"dssd_firmware_build_uuid\":\"01234567-89ab-cdef-0011-223344556677\",\n")
    );
    assert!(v2.contains(
        "  \"dssd_firmware_build_label\":\"build-123\",\n  \"nvme_command_set_errata_version\":17,"
    ));
}

// ---------------------------------------------------------------- FDP golden texts

fn sample_configs() -> FdpConfigs {
    FdpConfigs {
        configs: vec![FdpConfig {
            fdpa: 0x90,
            vss: 0,
            nrg: 1,
            maxpids: 8,
            nnss: 32,
            runs: 6_442_450_944,
            erutl: 0,
            ruh_types: vec![RUHT_INITIALLY_ISOLATED, RUHT_PERSISTENTLY_ISOLATED],
        }],
    }
}

#[test]
fn fdp_configs_text_and_json() {
    let want = lines(&[
        "FDP Attributes: 0x90",
        "Vendor Specific Size: 0",
        "Number of Reclaim Groups: 1",
        "Number of Reclaim Unit Handles: 2",
        "Number of Namespaces Supported: 32",
        "Reclaim Unit Nominal Size: 6442450944",
        "Estimated Reclaim Unit Time Limit: 0",
        "Reclaim Unit Handle List:",
        "  [0]: Initially Isolated",
        "  [1]: Persistently Isolated",
    ]);
    assert_eq!(print_fdp_configs(&sample_configs(), &TextOptions::default()), want);
    let verbose =
        print_fdp_configs(&sample_configs(), &TextOptions { locale: Locale::C, verbose: true });
    assert!(verbose.starts_with(&lines(&[
        "FDP Attributes: 0x90",
        "  [7:7] : 0x1\tFDP Configuration Valid",
        "  [4:4] : 0x1\tFDP Volatile Write Cache Present",
        "  [3:0] : 0\tReclaim Group Identifier Format",
        "Vendor Specific Size: 0",
    ])));
    let json = r#"{
  "n":0,
  "configs":[
    {
      "fdpa":144,
      "vss":0,
      "nrg":1,
      "nruh":2,
      "nnss":32,
      "runs":6442450944,
      "erutl":0
    }
  ]
}
"#;
    assert_eq!(fdp_configs_json(&sample_configs()), json);
}

#[test]
fn fdp_usage_text_and_json() {
    let u = FdpUsage { ruha: vec![1, 0, 2, 7] };
    assert_eq!(
        print_fdp_usage(&u),
        "Reclaim Unit Handle 0 Attributes: 0x1 (Host Specified)\n\
Reclaim Unit Handle 1 Attributes: 0 (Unused)\n\
Reclaim Unit Handle 2 Attributes: 0x2 (Controller Specified)\n\
Reclaim Unit Handle 3 Attributes: 0x7 (Unknown)\n"
    );
    assert_eq!(
        fdp_usage_json(&FdpUsage { ruha: vec![1] }),
        "{\n  \"nruh\":1,\n  \"ruhus\":[\n    {\n      \"ruha\":1\n    }\n  ]\n}\n"
    );
    // json-c prints an empty array as "[]".
    assert_eq!(fdp_usage_json(&FdpUsage::default()), "{\n  \"nruh\":0,\n  \"ruhus\":[]\n}\n");
}

#[test]
fn fdp_stats_text_and_json() {
    let s = FdpStats { hbmw: (1u128 << 64) + 1, mbmw: 1_234_567, mbe: 0 };
    assert_eq!(
        print_fdp_stats(&s, &TextOptions::default()),
        "Host Bytes with Metadata Written (HBMW): 18,446,744,073,709,551,617\n\
Media Bytes with Metadata Written (MBMW): 1,234,567\n\
Media Bytes Erased (MBE): 0\n"
    );
    assert_eq!(
        print_fdp_stats(&s, &TextOptions::c_locale()),
        "Host Bytes with Metadata Written (HBMW): 18446744073709551617\n\
Media Bytes with Metadata Written (MBMW): 1234567\n\
Media Bytes Erased (MBE): 0\n"
    );
    assert_eq!(
        fdp_stats_json(&s),
        "{\n  \"hbmw\":18446744073709551617,\n  \"mbmw\":1234567,\n  \"mbe\":0\n}\n"
    );
}

fn sample_events() -> FdpEvents {
    FdpEvents {
        events: vec![
            FdpEvent {
                event_type: EVENT_REALLOC,
                flags: EVENT_F_PIV | EVENT_F_NSIDV | EVENT_F_LV,
                pid: 0x2,
                timestamp_ms: 1_787_343_978_123,
                timestamp_attr: 0x2,
                nsid: 1,
                nlbam: 8,
                lba: Some(0x1000),
                rgid: 0,
                ruhid: 3,
            },
            FdpEvent { event_type: EVENT_RUNFW, timestamp_ms: 999, ..Default::default() },
        ],
    }
}

#[test]
fn fdp_events_text_and_json() {
    let want = lines(&[
        "Event[0]",
        "  Event Type: 0x80 (Media Reallocated)",
        "  Event Timestamp: 1787343978123 (Fri Aug 21 20:26:18 2026 UTC)",
        "  Placement Identifier (PID): 0x2",
        "  Namespace Identifier (NSID): 1",
        "  Number of LBAs Moved (NLBAM): 8",
        "  Logical Block Address (LBA): 0x1000",
        "  Reclaim Group Identifier: 0",
        "  Reclaim Unit Handle Identifier 3",
        "",
        "Event[1]",
        "  Event Type: 0 (Reclaim Unit Not Fully Written)",
        "  Event Timestamp: 999 (Thu Jan  1 00:00:00 1970 UTC)",
        "",
    ]);
    assert_eq!(print_fdp_events(&sample_events(), &TextOptions::c_locale()), want);
    // glibc en_US.UTF-8: d_t_fmt "%a %d %b %Y %r %Z", then nvme-cli's own " %Z".
    let en = print_fdp_events(&sample_events(), &TextOptions::default());
    assert!(en.contains("  Event Timestamp: 1787343978123 (Fri 21 Aug 2026 08:26:18 PM UTC UTC)\n"));
    let json = r#"{
  "n":2,
  "events":[
    {
      "type":128,
      "fdpef":7,
      "pid":2,
      "timestamp":564737297399435,
      "nsid":1,
      "nlbam":8,
      "lba":4096
    },
    {
      "type":0,
      "fdpef":0,
      "pid":0,
      "timestamp":999,
      "nsid":0
    }
  ]
}
"#;
    // 564737297399435 = 1787343978123 + (2 << 48): nvme-cli reads the 8-byte timestamp field,
    // attribute byte included, as one integer.
    assert_eq!(1_787_343_978_123u64 + (2u64 << 48), 564_737_297_399_435);
    assert_eq!(fdp_events_json(&sample_events()), json);
}

#[test]
fn fdp_status_text_and_json() {
    let st = FdpStatus {
        descriptors: vec![
            FdpRuhStatus { pid: 0, ruhid: 0, earutr: 0, ruamw: 16384 },
            FdpRuhStatus { pid: 1, ruhid: 1, earutr: 30, ruamw: 16360 },
        ],
    };
    assert_eq!(
        print_fdp_status(&st),
        lines(&[
            "Placement Identifier 0; Reclaim Unit Handle Identifier 0",
            "  Estimated Active Reclaim Unit Time Remaining (EARUTR): 0",
            "  Reclaim Unit Available Media Writes (RUAMW): 16384",
            "",
            "Placement Identifier 1; Reclaim Unit Handle Identifier 1",
            "  Estimated Active Reclaim Unit Time Remaining (EARUTR): 30",
            "  Reclaim Unit Available Media Writes (RUAMW): 16360",
            "",
        ])
    );
    assert_eq!(
        fdp_status_json(&FdpStatus { descriptors: vec![st.descriptors[1].clone()] }),
        "{\n  \"nruhsd\":1,\n  \"ruhss\":[\n    {\n      \"pid\":1,\n      \"ruhid\":1,\n      \"earutr\":30,\n      \"ruamw\":16360\n    }\n  ]\n}\n"
    );
}

// ---------------------------------------------------------------- real captured outputs

/// `nvme fdp stats` from nvme-cli 2.5 on a FEMU FDP device.
/// Source: https://github.com/MoatLab/WARP-FAST26-AE (README.md, "Phase 1").
const REAL_FDP_STATS_2_5: &str = "femu@fvm:~/libs/nvme-cli-2.5$ sudo nvme fdp stats /dev/ng0n1 -e 1
Host Bytes with Metadata Written (HBMW): 0
Media Bytes with Metadata Written (MBMW): 0
Media Bytes Erased (MBE): 0
";

/// `nvme smart-log` from nvme-cli 1.x (2016), as pasted (tabs expanded to spaces by GitHub),
/// first lines. Source: https://github.com/linux-nvme/nvme-cli/issues/48
const REAL_SMART_LOG_1X: &str = "user@node09:~$ sudo nvme smart-log /dev/nvme1n1
Smart Log for NVME device:/dev/nvme1n1 namespace-id:ffffffff
critical_warning                    : 0
temperature                         : 34 C
available_spare                     : 100%
available_spare_threshold           : 10%
percentage_used                     : 0%
data_units_read                     : 203,913,228
data_units_written                  : 64,663,716
host_read_commands                  : 7,207,810,975
host_write_commands                 : 2,931,291,530
controller_busy_time                : 399
power_cycles                        : 9
power_on_hours                      : 742
unsafe_shutdowns                    : 5
media_errors                        : 0
num_err_log_entries                 : 0
Critical Composite Temperature Time : 0
";

/// The C0h "SMART Cloud Attributes" as the WDC plugin prints it (`: HI LO`).
/// Source: https://github.com/facebook/CacheLib/blob/main/cachelib/cachebench/util/tests/NandWritesTest.cpp
/// (nandWriteBytes_handlesWesternDigitalDevice).
const REAL_WDC_C0: &str = "
  SMART Cloud Attributes :-
  Physical media units written     \t      \t: 0 609651339018240
  Physical media units read      \t      \t: 0 567611790770176
  Bad user nand blocks Raw\t\t\t: 0
  Bad user nand blocks Normalized\t\t: 100
  Refresh counts\t\t\t\t: 4
  Log page version\t\t\t\t: 2
  Log page GUID\t\t\t\t: 0x0xafd514c97c6f4f9ca4f2bfea2810afc5
";

/// Early nvme-cli 2.x `ocp smart-add-log` line, quoted in CacheLib's NandWrites.cpp comment
/// (https://github.com/facebook/CacheLib/blob/main/cachelib/cachebench/util/NandWrites.cpp).
const REAL_OCP_2X_LINE: &str =
    "SMART Cloud Attributes :- \n  Physical media units written -   \t        0 24698875318272\n";

#[test]
fn real_outputs_parse() {
    let s = parse_snapshot(REAL_FDP_STATS_2_5).unwrap();
    assert_eq!((s.hbmw, s.mbmw, s.mbe), (Some(0), Some(0), Some(0)));
    assert_eq!(s.sources, vec![Source::FdpStatsText]);

    let s = parse_snapshot(REAL_SMART_LOG_1X).unwrap();
    assert_eq!(s.data_units_written, Some(64_663_716));
    assert_eq!(s.data_units_read, Some(203_913_228));
    assert_eq!(s.host_write_commands, Some(2_931_291_530));
    assert_eq!(s.sources, vec![Source::SmartLogText]);

    let s = parse_snapshot(REAL_WDC_C0).unwrap();
    assert_eq!(s.physical_media_units_written, Some(609_651_339_018_240));
    assert_eq!(s.physical_media_units_read, Some(567_611_790_770_176));

    let s = parse_snapshot(REAL_OCP_2X_LINE).unwrap();
    assert_eq!(s.physical_media_units_written, Some(24_698_875_318_272));

    // The published method on the real 1.x smart-log and the WDC C0 capture together.
    let both = format!("{REAL_SMART_LOG_1X}{REAL_WDC_C0}");
    let s = parse_snapshot(&both).unwrap();
    assert_eq!(s.sources, vec![Source::SmartLogText, Source::OcpText]);
}

// ---------------------------------------------------------------- round trips

fn assert_smart_fields(s: &Snapshot, log: &SmartLog) {
    assert_eq!(s.data_units_written, Some(log.data_units_written));
    assert_eq!(s.data_units_read, Some(log.data_units_read));
    assert_eq!(s.host_write_commands, Some(log.host_write_commands));
}

#[test]
fn round_trip_smart_log_text_and_json() {
    for duw in [0u128, 9_876_543, u64::MAX as u128, (1u128 << 64) + 5, u128::MAX] {
        let mut log = sample_smart();
        log.data_units_written = duw;
        log.host_write_commands = duw / 3;
        for opts in [
            TextOptions::default(),
            TextOptions::c_locale(),
            TextOptions { locale: Locale::Separator(".".into()), verbose: true },
        ] {
            let s = parse_snapshot(&print_smart_log(&log, 0xffff_ffff, "nvme0", &opts)).unwrap();
            assert_smart_fields(&s, &log);
            assert_eq!(s.sources, vec![Source::SmartLogText]);
        }
        for verbose in [false, true] {
            let s = parse_snapshot(&smart_log_json(&log, verbose)).unwrap();
            assert_smart_fields(&s, &log);
            assert_eq!(s.sources, vec![Source::SmartLogJson]);
        }
    }
}

#[test]
fn round_trip_ocp_text_and_json() {
    for pmuw in [0u128, 1, u64::MAX as u128, (5u128 << 64) | 17, u128::MAX] {
        for version in [1u16, 3, 6] {
            let mut log = sample_ocp(version);
            log.physical_media_units_written = pmuw;
            let s = parse_snapshot(&print_ocp_smart_add_log(&log)).unwrap();
            assert_eq!(s.physical_media_units_written, Some(pmuw));
            assert_eq!(s.physical_media_units_read, Some(log.physical_media_units_read));
            for jv in [OcpJsonVersion::V1, OcpJsonVersion::V2] {
                let s = parse_snapshot(&ocp_smart_add_log_json(&log, jv)).unwrap();
                assert_eq!(s.physical_media_units_written, Some(pmuw));
                assert_eq!(s.sources, vec![Source::OcpJson]);
            }
        }
    }
}

#[test]
fn round_trip_fdp_stats_text_and_json() {
    let st = FdpStats { hbmw: u128::MAX - 1, mbmw: (1u128 << 100) + 3, mbe: 77 };
    for text in [
        print_fdp_stats(&st, &TextOptions::default()),
        print_fdp_stats(&st, &TextOptions::c_locale()),
        fdp_stats_json(&st),
    ] {
        let s = parse_snapshot(&text).unwrap();
        assert_eq!((s.hbmw, s.mbmw, s.mbe), (Some(st.hbmw), Some(st.mbmw), Some(st.mbe)));
    }
}

#[test]
fn concatenated_text_and_json_outputs() {
    let smart = sample_smart();
    let mut ocp = sample_ocp(3);
    ocp.physical_media_units_written = 123_456_789_000;
    let fdp = FdpStats { hbmw: 10, mbmw: 20, mbe: 30 };
    let mixed = format!(
        "$ nvme smart-log /dev/nvme0 -o json\n{}$ nvme ocp smart-add-log /dev/nvme0\n{}NVMe Status:SUCCESS(0)\n{}{}",
        smart_log_json(&smart, false),
        print_ocp_smart_add_log(&ocp),
        fdp_stats_json(&fdp),
        print_fdp_stats(&fdp, &TextOptions::default()),
    );
    let s = parse_snapshot(&mixed).unwrap();
    assert_eq!(s.data_units_written, Some(smart.data_units_written));
    assert_eq!(s.physical_media_units_written, Some(123_456_789_000));
    assert_eq!((s.hbmw, s.mbmw, s.mbe), (Some(10), Some(20), Some(30)));
    assert_eq!(
        s.sources,
        vec![Source::SmartLogJson, Source::OcpText, Source::FdpStatsJson, Source::FdpStatsText]
    );
    // Two JSON objects back to back on consecutive lines, as `cmd -o json; cmd2 -o json` gives.
    let two = format!(
        "{}{}",
        smart_log_json(&smart, false),
        ocp_smart_add_log_json(&ocp, OcpJsonVersion::V2)
    );
    let s = parse_snapshot(&two).unwrap();
    assert_eq!(s.sources, vec![Source::SmartLogJson, Source::OcpJson]);
}

// ---------------------------------------------------------------- errors with lines

#[test]
fn parse_errors_name_line_and_field() {
    let text = "Smart Log for NVME device:nvme0 namespace-id:ffffffff\n\
critical_warning\t\t\t: 0\n\
Data Units Written\t\t\t: 12x34 (1.00 MB)\n";
    let e = parse_snapshot(text).unwrap_err();
    assert_eq!(e.line, Some(3));
    assert_eq!(e.to_string(), "line 3: 'Data Units Written': '12x34' is not a number");

    let e =
        parse_snapshot("SMART Cloud Attributes :-\n  Physical media units written -\t\t1 2 3\n")
            .unwrap_err();
    assert_eq!(e.to_string(), "line 2: 'Physical media units written': '1 2 3' is not 'HI LO'");

    let json = "text before\n{\n  \"hbmw\":10,\n  \"mbmw\":\"ten\",\n  \"mbe\":0\n}\n";
    let e = parse_snapshot(json).unwrap_err();
    assert_eq!(e.to_string(), "line 4: \"mbmw\": 'ten' is not a non-negative integer");

    let broken = "Media Bytes Erased (MBE): 0\n{\n  \"hbmw\":10\n  \"mbmw\":20\n}\n";
    let e = parse_snapshot(broken).unwrap_err();
    assert_eq!(e.line, Some(4));

    let twice = "Data Units Written : 5\nData Units Written : 6\n";
    let e = parse_snapshot(twice).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 2: 'Data Units Written' given twice with different values (5, then 6)"
    );

    let e = parse_snapshot("hello\n").unwrap_err();
    assert_eq!(e.line, None);
    assert!(e.to_string().contains("no nvme-cli smart-log"));
}

#[test]
fn thousands_separators_must_group_in_threes() {
    let duw = |v: &str| parse_snapshot(&format!("Data Units Written : {v}\n")).map(|s| s.data_units_written);
    for ok in ["1,234,567", "1.234.567", "1 234 567", "1'234'567", "1234567"] {
        assert_eq!(duw(ok).unwrap(), Some(1_234_567), "{ok}");
    }
    assert_eq!(duw("12,345").unwrap(), Some(12_345));
    for bad in ["1,5", "1,23", "12,3456", "1234,567", "1,234,56", "1.5"] {
        let e = duw(bad).unwrap_err().to_string();
        assert!(e.contains("not grouped in thousands"), "{bad}: {e}");
    }
    let e = duw("1,234.567").unwrap_err().to_string();
    assert!(e.contains("mixes separators"), "{e}");
    // nvme-cli groups irregularly with a multi-byte separator (fr_FR's U+202F); what it prints
    // reads back.
    let fr = TextOptions { locale: Locale::Separator("\u{202f}".into()), verbose: false };
    let s = FdpStats { hbmw: 123_456_789_012, mbmw: 9_876_543_210_987, mbe: 0 };
    let back = parse_snapshot(&print_fdp_stats(&s, &fr)).unwrap();
    assert_eq!((back.hbmw, back.mbmw), (Some(s.hbmw), Some(s.mbmw)));
}

#[test]
fn waf_below_one_is_explained() {
    let r = waf_from_texts(
        "Host Bytes with Metadata Written (HBMW): 0\nMedia Bytes with Metadata Written (MBMW): 0\n",
        "Host Bytes with Metadata Written (HBMW): 2000\nMedia Bytes with Metadata Written (MBMW): 500\n",
    )
    .unwrap();
    assert_eq!(r.waf, 0.25);
    assert!(r.below_one().unwrap().contains("different drives"));
    let r = waf_from_texts(
        "Host Bytes with Metadata Written (HBMW): 0\nMedia Bytes with Metadata Written (MBMW): 0\n",
        "Host Bytes with Metadata Written (HBMW): 2000\nMedia Bytes with Metadata Written (MBMW): 2000\n",
    )
    .unwrap();
    assert_eq!(r.below_one(), None);
}

// ---------------------------------------------------------------- WAF

#[test]
fn waf_from_fdp_stats() {
    let before =
        print_fdp_stats(&FdpStats { hbmw: 1_000, mbmw: 1_500, mbe: 0 }, &TextOptions::default());
    let after = fdp_stats_json(&FdpStats { hbmw: 3_000, mbmw: 5_500, mbe: 4096 });
    let r = waf_from_texts(&before, &after).unwrap();
    assert_eq!(r.method, WafMethod::FdpStats);
    assert_eq!((r.host_delta, r.media_delta), (2_000, 4_000));
    assert_eq!((r.host_bytes, r.media_bytes), (2_000, 4_000));
    assert_eq!(r.waf, 2.0);
}

#[test]
fn waf_prefers_fdp_over_smart_when_both_present() {
    let snap = |duw, pmuw, hbmw, mbmw| Snapshot {
        data_units_written: Some(duw),
        physical_media_units_written: Some(pmuw),
        hbmw: Some(hbmw),
        mbmw: Some(mbmw),
        ..Default::default()
    };
    let r = waf(&snap(0, 0, 100, 100), &snap(10, 9_999_999, 300, 400)).unwrap();
    assert_eq!(r.method, WafMethod::FdpStats);
    assert_eq!(r.waf, 1.5);
}

#[test]
fn waf_from_smart_log_and_ocp() {
    let mut smart = sample_smart();
    let mut ocp = sample_ocp(3);
    smart.data_units_written = 100;
    ocp.physical_media_units_written = 100 * 512_000;
    let before = format!(
        "{}{}",
        print_smart_log(&smart, 1, "nvme0", &TextOptions::default()),
        print_ocp_smart_add_log(&ocp)
    );
    smart.data_units_written = 300;
    ocp.physical_media_units_written = 100 * 512_000 + 153_600_000;
    let after = format!(
        "{}{}",
        smart_log_json(&smart, false),
        ocp_smart_add_log_json(&ocp, OcpJsonVersion::V1)
    );
    let r = waf_from_texts(&before, &after).unwrap();
    assert_eq!(r.method, WafMethod::SmartAndOcp);
    // 200 data units = 102,400,000 host bytes; 153,600,000 media bytes: WAF 1.5.
    assert_eq!(r.host_delta, 200);
    assert_eq!(r.host_bytes, 102_400_000);
    assert_eq!(r.media_bytes, 153_600_000);
    assert_eq!(r.waf, 1.5);
}

#[test]
fn waf_errors_name_missing_field_and_input() {
    let full = Snapshot {
        data_units_written: Some(1),
        physical_media_units_written: Some(512_000),
        ..Default::default()
    };
    let no_host = Snapshot { physical_media_units_written: Some(1_024_000), ..Default::default() };
    let e = waf(&full, &no_host).unwrap_err();
    assert_eq!(
        e.to_string(),
        "AFTER: no 'Data Units Written' (smart-log) or 'hbmw' (fdp stats) found"
    );
    assert_eq!(e.side, Some(Side::After));

    let no_media = Snapshot { data_units_written: Some(2), ..Default::default() };
    let e = waf(&no_media, &full).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BEFORE: no 'Physical media units written' (ocp smart-add-log) or 'mbmw' (fdp stats) found"
    );

    let fdp = Snapshot { hbmw: Some(1), mbmw: Some(1), ..Default::default() };
    let e = waf(&fdp, &full).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no method common to both inputs: BEFORE has only fdp stats, AFTER has only smart-log + ocp smart-add-log"
    );

    let half_fdp =
        Snapshot { hbmw: Some(1), physical_media_units_written: Some(5), ..Default::default() };
    let e = waf(&half_fdp, &fdp).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BEFORE: has 'hbmw' but no 'mbmw' (fdp stats) and no complete smart-log + ocp smart-add-log pair"
    );

    let later = Snapshot { data_units_written: Some(5), ..full.clone() };
    let e = waf(&later, &full).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("AFTER: 'Data Units Written' went backwards (5 before, 1 after)"));

    let e = waf(&full, &full).unwrap_err();
    assert_eq!(
        e.to_string(),
        "AFTER: 'Data Units Written' did not change: no host writes between the captures, WAF undefined"
    );

    // A parse error inside one input names that input and the line.
    let e = waf_from_texts(REAL_FDP_STATS_2_5, "Media Bytes Erased (MBE): lots\n").unwrap_err();
    assert_eq!(e.to_string(), "AFTER: line 1: 'Media Bytes Erased (MBE)': 'lots' is not a number");
    let e = waf_from_texts(REAL_SMART_LOG_1X, REAL_SMART_LOG_1X).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BEFORE: no 'Physical media units written' (ocp smart-add-log) or 'mbmw' (fdp stats) found"
    );
}
