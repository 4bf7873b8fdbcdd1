//! The zone map picture: one bar per zone over the zone index, its height the share of the
//! zone's capacity that holds live data (when a zone-aware file system says what is live) or
//! else that is written (the device's view: data up to the write pointer; a Full zone counts
//! whole), empty (reset, erased) zones marked below the axis, and the overall figure in the
//! title, like the zone maps of the ZNS file-system talk (reference section 5). Conventional
//! zones are left out (no write pointer).

use crate::svg::{esc as escape, PALETTE_FIRST};
use std::fmt::Write as _;
use wafsim_core::blockdev::ZoneReport;
use wafsim_core::zone::{ZoneState, ZoneType};

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 15.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 50.0;

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

/// The zone map of `r` as a standalone SVG (deterministic): live shares when `live` (bytes per
/// zone index) is given, written shares otherwise.
pub fn zone_map_svg(title: &str, r: &ZoneReport, live: Option<&[u64]>) -> String {
    let (shares, what) = match live {
        Some(l) => (live_shares(r, l), "holds live data"),
        None => (written_shares(r), "written"),
    };
    let n = shares.len();
    let written: f64 = shares.iter().flatten().sum();
    let empty = shares.iter().filter(|s| s.is_none()).count();
    let overall = if n > 0 { written / n as f64 } else { 0.0 };
    let full_title = format!("{title}: {:.1}% of zone capacity {what}, {empty} of {n} zones empty", overall * 100.0);
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">"#);
    let _ = writeln!(s, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{}" y="24" font-size="15" text-anchor="middle" font-weight="bold">{}</text>"#, WIDTH / 2.0, escape(&full_title));
    // Axes and the 0 / 50 / 100 % grid.
    for (f, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
        let y = TOP + ph * (1.0 - f);
        let _ = writeln!(s, r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/>"##, LEFT + pw);
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{label}</text>"#, LEFT - 6.0, y + 4.0);
    }
    let bar = pw / n.max(1) as f64;
    for (i, sh) in shares.iter().enumerate() {
        let x = LEFT + i as f64 * bar;
        match sh {
            Some(f) => {
                let h = ph * f.clamp(0.0, 1.0);
                let _ = writeln!(s, r#"<rect x="{x:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="{PALETTE_FIRST}"/>"#, TOP + ph - h, bar.max(0.5));
            }
            None => {
                let _ = writeln!(s, r##"<rect x="{x:.2}" y="{:.2}" width="{:.2}" height="6" fill="#bbb"/>"##, TOP + ph + 3.0, bar.max(0.5));
            }
        }
    }
    let _ = writeln!(s, r#"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="black"/>"#, TOP + ph, LEFT + pw, TOP + ph);
    let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="middle">zone index (sequential zones; grey marks: empty)</text>"#, LEFT + pw / 2.0, HEIGHT - 12.0);
    for k in 0..=4 {
        let z = (n.saturating_sub(1)) * k / 4;
        let x = LEFT + (z as f64 + 0.5) * bar;
        let _ = writeln!(s, r#"<text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{z}</text>"#, TOP + ph + 24.0);
    }
    s.push_str("</svg>\n");
    s
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
        let svg = zone_map_svg("zns", &r, None);
        // (1 + 0.25 + 0 + 1) / 4 = 56.25 %.
        assert!(svg.contains("56.2% of zone capacity written, 1 of 4 zones empty"), "{svg}");
        assert_eq!(svg.matches("fill=\"#bbb\"").count(), 1);
        // Live data (bytes per zone; capacity 80 blocks of 4 KiB = 327,680 B): zone 0 half live,
        // zone 3 dead, zone 1 a quarter.
        let live = [163_840, 81_920, 0, 0];
        assert_eq!(live_shares(&r, &live), vec![Some(0.5), Some(0.25), None, Some(0.0)]);
        assert!(zone_map_svg("zns", &r, Some(&live)).contains("18.8% of zone capacity holds live data"));
    }
}
