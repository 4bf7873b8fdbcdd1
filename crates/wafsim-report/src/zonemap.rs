//! The zone map picture: one bar per zone over the zone index, its height the share of the
//! zone's capacity that holds live data (when a zone-aware file system says what is live) or
//! else that is written (the device's view: data up to the write pointer; a Full zone counts
//! whole), coloured by zone state (full, open, closed, read-only, offline), empty (reset,
//! erased) zones marked below the axis, and the overall figure in the title, like the zone maps of the ZNS file-system talk (reference section 5). Conventional
//! zones are left out (no write pointer).

use crate::chart::{Chart, Kind, ZoneBar, ZoneClass};
use wafsim_core::blockdev::ZoneReport;
use wafsim_core::zone::{ZoneState, ZoneType};

/// Written share of each sequential zone (in zone order): `None` for an empty zone.
pub fn written_shares(r: &ZoneReport) -> Vec<Option<f64>> {
    r.zones
        .iter()
        .filter(|z| z.zone_type != ZoneType::Conventional)
        .map(|z| match (z.state, z.write_pointer) {
            (ZoneState::Empty, _) => None,
            (_, Some(wp)) => Some((wp - z.start) as f64 / z.capacity.max(1) as f64),
            (_, None) => Some(1.0),
        })
        .collect()
}

/// Live share of each sequential zone (in zone order) from the live bytes per zone index;
/// `None` for an empty zone.
pub fn live_shares(r: &ZoneReport, live: &[u64]) -> Vec<Option<f64>> {
    let bs = r.block_size as f64;
    r.zones
        .iter()
        .filter(|z| z.zone_type != ZoneType::Conventional)
        .map(|z| match z.state {
            ZoneState::Empty => None,
            _ => Some(live.get(z.zone as usize).copied().unwrap_or(0) as f64 / (z.capacity.max(1) as f64 * bs)),
        })
        .collect()
}

/// The zone map of `r` (chart file name `name`): live shares when `live` (bytes per zone index)
/// is given, written shares otherwise; bars coloured by zone state.
pub fn zone_map(name: &str, title: &str, r: &ZoneReport, live: Option<&[u64]>) -> Chart {
    let (shares, what) = match live {
        Some(l) => (live_shares(r, l), "holds live data"),
        None => (written_shares(r), "written"),
    };
    let n = shares.len();
    let written: f64 = shares.iter().flatten().sum();
    let empty = shares.iter().filter(|s| s.is_none()).count();
    let overall = if n > 0 { written / n as f64 } else { 0.0 };
    let zones = r
        .zones
        .iter()
        .filter(|z| z.zone_type != ZoneType::Conventional)
        .zip(&shares)
        .map(|(z, sh)| ZoneBar { class: class(z.state), share: sh.unwrap_or(0.0) })
        .collect();
    let y_label = if live.is_some() { "live data (% of zone capacity)" } else { "written (% of zone capacity)" };
    Chart {
        name: name.to_string(),
        title: format!("{title}: {:.1}% of zone capacity {what}, {empty} of {n} zones empty", overall * 100.0),
        kind: Kind::ZoneMap { x_label: "zone index (sequential zones)".to_string(), y_label: y_label.to_string(), zones },
    }
}

fn class(s: ZoneState) -> ZoneClass {
    match s {
        ZoneState::Empty => ZoneClass::Empty,
        ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => ZoneClass::Open,
        ZoneState::Closed => ZoneClass::Closed,
        // Conventional zones (no write pointer) are left out before; counted as written whole.
        ZoneState::Full | ZoneState::NotWritePointer => ZoneClass::Full,
        ZoneState::ReadOnly => ZoneClass::ReadOnly,
        ZoneState::Offline => ZoneClass::Offline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::zone::ZoneDescriptor;

    fn zone(i: u32, state: ZoneState, wp: Option<u64>) -> ZoneDescriptor {
        ZoneDescriptor { zone: i, zone_type: ZoneType::SequentialWriteRequired, state, start: i as u64 * 100, capacity: 80, write_pointer: wp, zrwa: false }
    }

    #[test]
    fn shares_follow_the_write_pointers() {
        let r = ZoneReport {
            block_size: 4096,
            zone_size: 100,
            zones: vec![
                zone(0, ZoneState::Full, None),
                zone(1, ZoneState::ImplicitlyOpened, Some(120)),
                zone(2, ZoneState::Empty, Some(200)),
                zone(3, ZoneState::Closed, Some(380)),
            ],
        };
        assert_eq!(written_shares(&r), vec![Some(1.0), Some(0.25), None, Some(1.0)]);
        let c = zone_map("zone_map_v_ns", "zns", &r, None);
        // (1 + 0.25 + 0 + 1) / 4 = 56.25 %.
        assert_eq!(c.title, "zns: 56.2% of zone capacity written, 1 of 4 zones empty");
        let Kind::ZoneMap { zones, y_label, .. } = &c.kind else { panic!("not a zone map") };
        assert_eq!(y_label, "written (% of zone capacity)");
        let classes: Vec<ZoneClass> = zones.iter().map(|z| z.class).collect();
        assert_eq!(classes, [ZoneClass::Full, ZoneClass::Open, ZoneClass::Empty, ZoneClass::Closed]);
        assert_eq!(c.legend(), ["full", "open", "closed", "empty (mark below 0)"]);
        // Live data (bytes per zone; capacity 80 blocks of 4 KiB = 327,680 B): zone 0 half live,
        // zone 3 dead, zone 1 a quarter.
        let live = [163_840, 81_920, 0, 0];
        assert_eq!(live_shares(&r, &live), vec![Some(0.5), Some(0.25), None, Some(0.0)]);
        let c = zone_map("zone_map_v_ns", "zns", &r, Some(&live));
        assert!(c.title.contains("18.8% of zone capacity holds live data"), "{}", c.title);
        let Kind::ZoneMap { zones, .. } = &c.kind else { panic!("not a zone map") };
        assert_eq!(zones.iter().map(|z| z.share).collect::<Vec<_>>(), [0.5, 0.25, 0.0, 0.0]);
    }
}
