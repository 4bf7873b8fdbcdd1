//! CSV time series: one row per sample, cumulative counters since the end of the built-in
//! precondition, plus the WAF of the interval since the previous sample.

use std::fmt::Write;
use wafsim_core::counters::waf;
use wafsim_experiment::VariantResult;

/// Header: variant,phase,host_bytes,media_bytes,gc_bytes,erases,waf_cumulative,waf_interval
pub fn timeseries(results: &[VariantResult]) -> String {
    let mut s = String::from("variant,phase,host_bytes,media_bytes,gc_bytes,erases,waf_cumulative,waf_interval\n");
    for r in results {
        let mut prev = (0u64, 0u64);
        for t in &r.timeseries {
            let phase = r.phases.get(t.phase).map(|p| p.name.as_str()).unwrap_or("");
            let interval = waf(t.media_bytes - prev.1, t.host_bytes - prev.0);
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:.6},{:.6}",
                csv_field(&r.name),
                csv_field(phase),
                t.host_bytes,
                t.media_bytes,
                t.gc_bytes,
                t.erases,
                waf(t.media_bytes, t.host_bytes),
                interval
            );
            prev = (t.host_bytes, t.media_bytes);
        }
    }
    s
}

/// Quote a field if it holds a comma, quote or newline (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
