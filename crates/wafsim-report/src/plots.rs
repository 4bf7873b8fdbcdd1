//! The charts of `wafsim run --plot DIR`: WAF over time per variant, host vs media writes over
//! time (one chart per variant), and per-tenant WAF bars.

use crate::svg::{bar_chart, line_chart, Series};
use wafsim_core::counters::waf;
use wafsim_experiment::VariantResult;

const GIB: f64 = (1u64 << 30) as f64;

/// (file name, SVG) of every chart.
pub fn charts(results: &[VariantResult]) -> Vec<(String, String)> {
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
    out.push((
        "waf_over_time.svg".to_string(),
        line_chart("WAF over time (per sampling interval)", "host writes (GiB)", "WAF", &waf_series, true),
    ));
    for r in results {
        let all = || r.timeseries.iter().filter(|t| t.device.is_none());
        let host = all().map(|t| (t.host_bytes as f64 / GIB, t.host_bytes as f64 / GIB)).collect();
        let media = all().map(|t| (t.host_bytes as f64 / GIB, t.media_bytes as f64 / GIB)).collect();
        let series = [Series { name: "host writes".into(), points: host }, Series { name: "media writes".into(), points: media }];
        out.push((
            format!("host_vs_media_{}.svg", file_safe(&r.name)),
            line_chart(&format!("{}: host vs media writes", r.name), "host writes (GiB)", "cumulative writes (GiB)", &series, true),
        ));
    }
    // Several drives (dedicated layout): cumulative WAF of each drive and of all together.
    for r in results.iter().filter(|r| r.devices > 1) {
        let mut series = vec![cumulative(r, None, "all drives".into())];
        for d in 0..r.devices {
            let name = r.namespaces.get(d as usize).map_or(format!("drive {d}"), |n| format!("drive {d} ({})", n.name));
            series.push(cumulative(r, Some(d), name));
        }
        out.push((
            format!("drives_waf_{}.svg", file_safe(&r.name)),
            line_chart(&format!("{}: cumulative WAF per drive", r.name), "host writes, all drives (GiB)", "WAF", &series, true),
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
            let vals = tenants
                .iter()
                .map(|t| r.namespaces.iter().find(|n| &n.name == t).map(|n| waf(n.media_bytes, n.host_bytes)).unwrap_or(0.0))
                .collect();
            (r.name.clone(), vals)
        })
        .collect();
    out.push(("tenant_waf.svg".to_string(), bar_chart("WAF per tenant (namespace)", "WAF", &tenants, &groups)));
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

fn file_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}
