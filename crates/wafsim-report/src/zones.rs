//! Zone reports in the formats the real tools print: util-linux `blkzone report` and nvme-cli
//! `nvme zns report-zones` (text, verbose text, JSON), so scripts written for real drives read
//! wafsim's output unchanged.
//!
//! Sources (formats checked against the tools' code): util-linux sys-utils/blkzone.c (v2.42 and
//! later: `wptr N/A` for conventional, full, read-only and offline zones; start, len, cap and
//! wptr in 512-byte sectors, wptr relative to the zone start), nvme-cli src/nvme-print-stdout.c
//! (`stdout_zns_report_zones`), src/nvme-print-json.c and src/nvme-print.c (state and type
//! names; values in namespace LBAs; State is the raw ZS byte, state << 4).

use std::fmt::Write;
pub use wafsim_core::blockdev::ZoneReport;
use wafsim_core::zone::{ZoneDescriptor, ZoneState, ZoneType};

/// Write pointer as a device reports it in a zone descriptor: where the host data ends for a
/// Full zone (ZSLBA + ZCAP, as QEMU's ZNS model reports it), all ones where the spec calls it
/// invalid (read-only, offline, conventional; QEMU and FEMU report all ones there).
fn device_wp(z: &ZoneDescriptor) -> u64 {
    match (z.write_pointer, z.state) {
        (Some(wp), _) => wp,
        (None, ZoneState::Full) => z.start + z.capacity,
        (None, _) => u64::MAX,
    }
}

/// `blkzone report` (util-linux 2.42+), one line per zone.
pub fn blkzone(r: &ZoneReport) -> String {
    let sectors = r.block_size as u64 / 512;
    let mut s = String::new();
    for z in &r.zones {
        let (type_code, type_name) = match z.zone_type {
            ZoneType::Conventional => (1, "CONVENTIONAL"),
            ZoneType::SequentialWriteRequired => (2, "SEQ_WRITE_REQUIRED"),
        };
        let cond = z.state.code() as u32;
        let cond_name = match z.state {
            ZoneState::NotWritePointer => "nw",
            ZoneState::Empty => "em",
            ZoneState::ImplicitlyOpened => "oi",
            ZoneState::ExplicitlyOpened => "oe",
            ZoneState::Closed => "cl",
            ZoneState::ReadOnly => "ro",
            ZoneState::Full => "fu",
            ZoneState::Offline => "of",
        };
        let wp = match (z.zone_type, z.state, z.write_pointer) {
            (ZoneType::Conventional, ..) | (_, ZoneState::Full | ZoneState::ReadOnly | ZoneState::Offline | ZoneState::NotWritePointer, _) => "N/A".to_string(),
            (_, _, wp) => format!("0x{:06x}", (wp.unwrap_or(z.start) - z.start) * sectors),
        };
        let _ = writeln!(
            s,
            "  start: 0x{:09x}, len 0x{:06x}, cap 0x{:06x}, wptr {wp} reset:0 non-seq:0, zcond:{cond:2}({cond_name}) [type: {type_code}({type_name})]",
            z.start * sectors,
            r.zone_size * sectors,
            z.capacity * sectors,
        );
    }
    s
}

/// C's `%#-10x`: "0x"-prefixed lower hex (plain "0" for zero), left-justified to `width`.
fn c_alt_hex(v: u64, width: usize) -> String {
    let t = if v == 0 { "0".to_string() } else { format!("{v:#x}") };
    format!("{t:<width$}")
}

/// nvme-cli's state name (`nvme_zone_state_to_string`).
pub fn nvme_state_name(state: ZoneState) -> &'static str {
    match state {
        ZoneState::Empty => "EMPTY",
        ZoneState::ImplicitlyOpened => "IMP_OPENED",
        ZoneState::ExplicitlyOpened => "EXP_OPENED",
        ZoneState::Closed => "CLOSED",
        ZoneState::ReadOnly => "READONLY",
        ZoneState::Full => "FULL",
        ZoneState::Offline => "OFFLINE",
        ZoneState::NotWritePointer => "Unknown State",
    }
}

fn nvme_type_name(t: ZoneType) -> &'static str {
    match t {
        ZoneType::SequentialWriteRequired => "SEQWRITE_REQ",
        ZoneType::Conventional => "Unknown",
    }
}

/// Zone attributes byte (ZA): ZRWAV is bit 3.
fn attrs(z: &ZoneDescriptor) -> u64 {
    if z.zrwa {
        1 << 3
    } else {
        0
    }
}

/// `nvme zns report-zones` normal output; `verbose` is nvme-cli's `-V` (`-v` before 2.17).
pub fn nvme_report_zones(r: &ZoneReport, verbose: bool) -> String {
    let mut s = format!("nr_zones: {}\n", r.zones.len());
    for z in &r.zones {
        let (slba, wp, cap) = (c_alt_hex(z.start, 10), c_alt_hex(device_wp(z), 10), c_alt_hex(z.capacity, 10));
        if verbose {
            let _ = writeln!(s, "SLBA: {slba} WP: {wp} Cap: {cap} State: {:<12} Type: {:<14}", nvme_state_name(z.state), nvme_type_name(z.zone_type));
            let _ = writeln!(s, "Attrs: Zone Descriptor Extension is Not Vaild");
        } else {
            let zs = (z.state.code() as u64) << 4;
            let zt = z.zone_type.code() as u64;
            let _ = writeln!(
                s,
                "SLBA: {slba} WP: {wp} Cap: {cap} State: {} Type: {} Attrs: {} AttrsInfo: {}",
                c_alt_hex(zs, 4),
                c_alt_hex(zt, 4),
                c_alt_hex(attrs(z), 4),
                c_alt_hex(0, 4)
            );
        }
    }
    s
}

/// `nvme zns report-zones -o json`, printed as json-c's pretty printer does (`"key":value`, two
/// spaces per level; json-c 0.14+ numbers).
pub fn nvme_report_zones_json(r: &ZoneReport) -> String {
    let mut s = format!("{{\n  \"nr_zones\":{},\n  \"zone_list\":[", r.zones.len());
    for (i, z) in r.zones.iter().enumerate() {
        let _ = write!(
            s,
            "{}\n    {{\n      \"slba\":{},\n      \"wp\":{},\n      \"cap\":{},\n      \"state\":\"{}\",\n      \"type\":\"{}\",\n      \"attrs\":{},\n      \"attrs_info\":0\n    }}",
            if i == 0 { "" } else { "," },
            z.start,
            device_wp(z),
            z.capacity,
            nvme_state_name(z.state),
            nvme_type_name(z.zone_type),
            attrs(z),
        );
    }
    s.push_str(if r.zones.is_empty() { "]\n}\n" } else { "\n  ]\n}\n" });
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::zone::{ReportFilter, ZoneConfig, Zones};

    /// Three ZN540-shaped zones: one partly written, one full, one empty.
    fn report() -> ZoneReport {
        let mut zones = Zones::new(ZoneConfig::new(0x80000, 0x43500, 3)).unwrap();
        zones.write(0, 0x1000).unwrap();
        zones.finish(0x80000).unwrap();
        ZoneReport { block_size: 4096, zone_size: 0x80000, zones: zones.report(0, ReportFilter::All).unwrap().collect() }
    }

    #[test]
    fn nvme_text_matches_nvme_cli_format() {
        let t = nvme_report_zones(&report(), false);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "nr_zones: 3");
        assert_eq!(lines[1], "SLBA: 0          WP: 0x1000     Cap: 0x43500    State: 0x20 Type: 0x2  Attrs: 0    AttrsInfo: 0   ");
        assert_eq!(lines[2], "SLBA: 0x80000    WP: 0xc3500    Cap: 0x43500    State: 0xe0 Type: 0x2  Attrs: 0    AttrsInfo: 0   ");
        assert_eq!(lines[3], "SLBA: 0x100000   WP: 0x100000   Cap: 0x43500    State: 0x10 Type: 0x2  Attrs: 0    AttrsInfo: 0   ");
        let v = nvme_report_zones(&report(), true);
        assert!(v.contains("State: IMP_OPENED   Type: SEQWRITE_REQ  \nAttrs: Zone Descriptor Extension is Not Vaild\n"), "{v}");
    }

    #[test]
    fn blkzone_lines_are_in_512_byte_sectors() {
        let t = blkzone(&report());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "  start: 0x000000000, len 0x400000, cap 0x21a800, wptr 0x008000 reset:0 non-seq:0, zcond: 2(oi) [type: 2(SEQ_WRITE_REQUIRED)]");
        assert_eq!(lines[1], "  start: 0x000400000, len 0x400000, cap 0x21a800, wptr N/A reset:0 non-seq:0, zcond:14(fu) [type: 2(SEQ_WRITE_REQUIRED)]");
        assert_eq!(lines[2], "  start: 0x000800000, len 0x400000, cap 0x21a800, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]");
    }

    #[test]
    fn json_has_nvme_cli_keys_and_parses() {
        let j = nvme_report_zones_json(&report());
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["nr_zones"], 3);
        assert_eq!(v["zone_list"][1]["state"], "FULL");
        assert_eq!(v["zone_list"][0]["wp"], 0x1000);
        let keys: Vec<&str> = v["zone_list"][0].as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["attrs", "attrs_info", "cap", "slba", "state", "type", "wp"]);
        assert!(j.starts_with("{\n  \"nr_zones\":3,\n  \"zone_list\":[\n    {\n      \"slba\":0,"), "{j}");
    }
}
