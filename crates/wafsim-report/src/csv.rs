//! CSV time series: one row per sample, cumulative counters since the end of the built-in
//! precondition, plus the WAF of the interval since the previous sample.

use std::fmt::Write;
use wafsim_core::counters::waf_if_written;
use wafsim_experiment::VariantResult;

/// Header: variant,phase,drive,host_bytes,media_bytes,gc_bytes,erases,waf_cumulative,waf_interval,app_bytes
///
/// `drive` is "all" for all drives of the variant together, or the drive's index (dedicated
/// layout: one drive per namespace, in namespace order). `app_bytes`: what applications wrote
/// through file systems so far (rows of all drives, untimed runs with file workloads; empty
/// otherwise). A WAF over an interval without host writes (a read-only phase) is empty, not 0.
pub fn timeseries(results: &[VariantResult]) -> String {
    let mut s = String::from("variant,phase,drive,host_bytes,media_bytes,gc_bytes,erases,waf_cumulative,waf_interval,app_bytes\n");
    for r in results {
        // One interval baseline per drive series.
        let mut prev: std::collections::HashMap<Option<u32>, (u64, u64)> = Default::default();
        for t in &r.timeseries {
            let prev = prev.entry(t.device).or_insert((0, 0));
            let phase = r.phase_name(t.phase);
            let interval = waf_if_written(t.media_bytes - prev.1, t.host_bytes - prev.0);
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{}",
                csv_field(&r.name),
                csv_field(phase),
                t.device.map_or("all".to_string(), |d| d.to_string()),
                t.host_bytes,
                t.media_bytes,
                t.gc_bytes,
                t.erases,
                cell(waf_if_written(t.media_bytes, t.host_bytes)),
                cell(interval),
                t.app_bytes.map_or(String::new(), |b| b.to_string())
            );
            *prev = (t.host_bytes, t.media_bytes);
        }
    }
    s
}

/// A WAF cell: six decimals, empty when undefined (no host writes).
fn cell(w: Option<f64>) -> String {
    w.map_or(String::new(), |w| format!("{w:.6}"))
}

/// Quote a field if it holds a comma, quote or newline (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
