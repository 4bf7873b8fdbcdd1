//! The charts of `wafsim run --plot DIR`: WAF over time per variant, host vs media writes over
//! time (one chart per variant), per-tenant WAF bars, and for timed runs with a bandwidth log
//! the bandwidth and the p99 read latency over time (dm-zoned: free cache zones and reclaim per
//! disk too); cumulative WAF per drive for dedicated drives, a zone map per zoned namespace
//! (runs with zone reports) and traffic per tier for tiering runs. [`crate::chart`] draws them as SVG and PNG.

use crate::chart::{Chart, Series};
use wafsim_core::counters::waf;
use wafsim_experiment::VariantResult;

const GIB: f64 = (1u64 << 30) as f64;

/// Every chart of `results` (file names without extension: `waf_over_time`,
/// `host_vs_media_VARIANT`, `drives_waf_VARIANT`, `bandwidth`, `read_latency`, `cache_zones`,
/// `reclaim_VARIANT`, `zone_map_VARIANT_NAMESPACE`, `tiers_VARIANT`, `tenant_waf`).
pub fn charts(results: &[VariantResult]) -> Vec<Chart> {
    let mut out = Vec::new();
    let waf_series: Vec<Series> = results
        .iter()
        .map(|r| {
            let mut prev = (0u64, 0u64);
            let mut points = Vec::new();
            for t in r.timeseries.iter().filter(|t| t.device.is_none()) {
                if t.host_bytes > prev.0 {
                    points.push((t.host_bytes as f64 / GIB, waf(t.media_bytes - prev.1, t.host_bytes - prev.0)));
                    prev = (t.host_bytes, t.media_bytes);
                }
            }
            Series { name: r.name.clone(), points }
        })
        .collect();
    out.push(Chart::line("waf_over_time", "WAF over time (per sampling interval)", "host writes (GiB)", "WAF", waf_series, true));
    for r in results {
        let all = || r.timeseries.iter().filter(|t| t.device.is_none());
        let host = all().map(|t| (t.host_bytes as f64 / GIB, t.host_bytes as f64 / GIB)).collect();
        let media = all().map(|t| (t.host_bytes as f64 / GIB, t.media_bytes as f64 / GIB)).collect();
        let mut series = vec![Series { name: "host writes".into(), points: host }, Series { name: "media writes".into(), points: media }];
        if all().any(|t| t.app_bytes.is_some()) {
            let app = all().filter_map(|t| t.app_bytes.map(|a| (t.host_bytes as f64 / GIB, a as f64 / GIB))).collect();
            series.insert(0, Series { name: "application writes (file systems)".into(), points: app });
        }
        out.push(Chart::line(
            &format!("host_vs_media_{}", file_safe(&r.name)),
            &format!("{}: host vs media writes", r.name),
            "host writes (GiB)",
            "cumulative writes (GiB)",
            series,
            true,
        ));
    }
    // Several drives (dedicated layout): cumulative WAF of each drive and of all together.
    for r in results.iter().filter(|r| r.devices > 1) {
        let mut series = vec![cumulative(r, None, "all drives".into())];
        for d in 0..r.devices {
            let name = r.namespaces.get(d as usize).map_or(format!("drive {d}"), |n| format!("drive {d} ({})", n.name));
            series.push(cumulative(r, Some(d), name));
        }
        out.push(Chart::line(
            &format!("drives_waf_{}", file_safe(&r.name)),
            &format!("{}: cumulative WAF per drive", r.name),
            "host writes, all drives (GiB)",
            "WAF",
            series,
            true,
        ));
    }
    out.extend(timed_charts(results));
    // Zoned namespaces at the end of the run: the zone map.
    for r in results {
        for (ns, rep) in &r.zone_reports {
            // The last file system on the namespace says what is live.
            let live = r.filesystems.iter().rev().find(|f| &f.namespace == ns).and_then(|f| f.zone_live_bytes.as_deref());
            let name = format!("zone_map_{}_{}", file_safe(&r.name), file_safe(ns));
            out.push(crate::zonemap::zone_map(&name, &format!("{} / {ns}", r.name), rep, live));
        }
    }
    // Tiering: cumulative writes to each tier against the user's writes.
    for r in results.iter().filter(|r| !r.tier_timeline.is_empty()) {
        let pts = |f: fn(&wafsim_experiment::results::TierPoint) -> u64| r.tier_timeline.iter().map(|t| (t.host_bytes as f64 / GIB, f(t) as f64 / GIB)).collect();
        let series = vec![
            Series { name: "hot: user writes".into(), points: pts(|t| t.hot.user_write_bytes) },
            Series { name: "cold: migration writes".into(), points: pts(|t| t.cold.migration_write_bytes) },
            Series { name: "cold: user writes".into(), points: pts(|t| t.cold.user_write_bytes) },
            Series { name: "hot: migration reads".into(), points: pts(|t| t.hot.migration_read_bytes) },
        ];
        out.push(Chart::line(
            &format!("tiers_{}", file_safe(&r.name)),
            &format!("{}: traffic per tier", r.name),
            "user writes (GiB)",
            "cumulative bytes (GiB)",
            series,
            true,
        ));
    }
    let mut tenants: Vec<String> = Vec::new();
    for n in results.iter().flat_map(|r| r.namespaces.iter()) {
        if !tenants.contains(&n.name) {
            tenants.push(n.name.clone());
        }
    }
    let groups: Vec<(String, Vec<f64>)> = results
        .iter()
        .map(|r| {
            let f = r.figures();
            // A bar of 0 for a tenant without writes (or not in this variant).
            let vals = tenants
                .iter()
                .map(|t| r.namespaces.iter().zip(&f.namespaces).find(|(n, _)| &n.name == t).and_then(|(_, nf)| nf.waf).unwrap_or(0.0))
                .collect();
            (r.name.clone(), vals)
        })
        .collect();
    out.push(Chart::bars("tenant_waf", "WAF per tenant (namespace)", "WAF", tenants, groups));
    out
}

/// Charts of timed runs with a bandwidth log: write bandwidth and read latency (p99 per
/// interval) over time (all variants), and for dm-zoned the free cache zones over time (all
/// variants) and each disk's reclaim rate.
fn timed_charts(results: &[VariantResult]) -> Vec<Chart> {
    let mut out = Vec::new();
    const MB: f64 = 1e6;
    let bw: Vec<Series> = results
        .iter()
        .filter(|r| !r.bandwidth.is_empty())
        .map(|r| {
            // Drives run side by side from time 0: add up the points of one moment.
            let mut points: Vec<(f64, f64)> = Vec::new();
            let mut prev_t = 0.0;
            let mut by_t: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
            for b in &r.bandwidth {
                let e = by_t.entry((b.t_s * 1e6).round() as u64).or_insert((b.t_s, 0.0));
                e.1 += b.write_bytes as f64;
            }
            for (_, (t, bytes)) in by_t {
                let dt = t - prev_t;
                if dt > 0.0 {
                    points.push((t, bytes / dt / MB));
                }
                prev_t = t;
            }
            Series { name: r.name.clone(), points }
        })
        .collect();
    if !bw.is_empty() {
        out.push(Chart::line("bandwidth", "Write bandwidth over time", "time (s)", "MB/s", bw, true));
    }
    // Read latency over the measured phases, from the first one's start (variants with
    // different histories start measuring at different times): one line per drive that served
    // reads (a dedicated layout's drives have separate timelines, so they are not merged).
    let mut lat = Vec::new();
    for r in results {
        let measured = |b: &&wafsim_experiment::results::BwPoint| r.phases.get(b.phase).is_some_and(|p| p.measured);
        let drives: std::collections::BTreeSet<u32> = r.bandwidth.iter().filter(measured).filter(|b| b.read_lat.max_ns > 0).map(|b| b.device).collect();
        for &d in &drives {
            // Intervals are consecutive from the phase start, empty ones included: the first
            // one ends one interval after it.
            let of_drive: Vec<_> = r.bandwidth.iter().filter(measured).filter(|b| b.device == d).collect();
            let t0 = match of_drive.as_slice() {
                [a, b, ..] if a.phase == b.phase => a.t_s - (b.t_s - a.t_s),
                _ => 0.0,
            };
            let points = of_drive.iter().filter(|b| b.read_lat.max_ns > 0).map(|b| (b.t_s - t0, b.read_lat.p99_ns as f64 * 1e-3)).collect();
            let name = if drives.len() > 1 { format!("{}, drive {}", r.name, d + 1) } else { r.name.clone() };
            lat.push(Series { name, points });
        }
    }
    if !lat.is_empty() {
        out.push(Chart::line("read_latency", "Read latency over the measurement (p99 per interval)", "time since the measurement started (s)", "p99 read latency (us)", lat, true));
    }
    let cache: Vec<Series> = results
        .iter()
        .filter(|r| !r.host_timeline.is_empty())
        .map(|r| {
            let points = r.host_timeline.iter().map(|h| (h.t_s, 100.0 * h.cache_free as f64 / h.cache_total.max(1) as f64)).collect();
            Series { name: r.name.clone(), points }
        })
        .collect();
    if !cache.is_empty() {
        out.push(Chart::line("cache_zones", "dm-zoned: free cache zones", "time (s)", "free cache zones (%)", cache, true));
    }
    for r in results.iter().filter(|r| !r.host_timeline.is_empty()) {
        let disks = r.host_timeline[0].reclaim_write_bytes.len();
        let series: Vec<Series> = (0..disks)
            .map(|d| {
                let mut prev = (0.0, 0u64);
                let points = r
                    .host_timeline
                    .iter()
                    .map(|h| {
                        let rate = (h.reclaim_write_bytes[d] - prev.1) as f64 / (h.t_s - prev.0).max(1e-9) / MB;
                        prev = (h.t_s, h.reclaim_write_bytes[d]);
                        (h.t_s, rate)
                    })
                    .collect();
                Series { name: format!("disk {}", d + 1), points }
            })
            .collect();
        out.push(Chart::line(
            &format!("reclaim_{}", file_safe(&r.name)),
            &format!("{}: reclaim writes per disk", r.name),
            "time (s)",
            "MB/s",
            series,
            true,
        ));
    }
    out
}

/// Cumulative WAF of one drive (or all) against the host bytes of all drives at that moment.
fn cumulative(r: &VariantResult, device: Option<u32>, name: String) -> Series {
    let mut points = Vec::new();
    let mut x = 0.0;
    for t in &r.timeseries {
        if t.device.is_none() {
            x = t.host_bytes as f64 / GIB;
        }
        if t.device == device && t.host_bytes > 0 {
            points.push((x, waf(t.media_bytes, t.host_bytes)));
        }
    }
    Series { name, points }
}

/// `name` with every character but ASCII letters, digits, '-' and '_' replaced by '_'.
pub fn file_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}
