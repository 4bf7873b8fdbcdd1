//! Plain-text tables in the spirit of the published experiment tables.

use std::fmt::Write;
use wafsim_core::counters::{smart_data_units, waf};
use wafsim_core::units::Bytes;
use wafsim_core::{DeviceConfig, Geometry};
use wafsim_experiment::VariantResult;

/// Bytes with two decimals in binary units (GiB etc.), the way capacity tables read.
pub fn human(b: u64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", U[i])
    }
}

/// One block per variant (per-namespace rows), then a comparison of all variants.
pub fn variants(results: &[VariantResult]) -> String {
    let mut s = String::new();
    for r in results {
        let _ = writeln!(
            s,
            "variant {:?}: {} layout, {} device(s), {}, GC {}, OP {:.2}% ((physical - logical) / logical), {}",
            r.name,
            r.layout,
            r.devices,
            r.placement,
            r.gc_policy,
            r.op_logical * 100.0,
            wafsim_experiment::scale::label(r.scale)
        );
        if r.phases.len() > 1 {
            for p in &r.phases {
                let _ = writeln!(
                    s,
                    "  phase {:<14} {:>10} host {:>12} media {:>12} WAF {:.3}",
                    p.name,
                    if p.measured { "measured" } else { "unmeasured" },
                    human(p.counters.host_write_bytes),
                    human(p.counters.media_units() * r.mapping_unit as u64),
                    p.waf()
                );
            }
        }
        let _ = writeln!(s, "  {:<16} {:>12} {:>14} {:>14} {:>8}", "namespace", "size", "host written", "media written", "WAF");
        for n in &r.namespaces {
            let _ = writeln!(
                s,
                "  {:<16} {:>12} {:>14} {:>14} {:>8.3}",
                n.name,
                human(n.size_bytes),
                human(n.host_bytes),
                human(n.media_bytes),
                waf(n.media_bytes, n.host_bytes)
            );
        }
        let _ = writeln!(
            s,
            "  {:<16} {:>12} {:>14} {:>14} {:>8.3}",
            "total",
            human(r.logical_bytes),
            human(r.hbmw()),
            human(r.mbmw()),
            r.waf()
        );
        let c = &r.counters;
        let _ = writeln!(
            s,
            "  HBMW {} B, MBMW {} B, MBE {} B; SMART data units written {}; GC copied {}; erases {}; erase count min/mean/max {}/{:.1}/{}",
            r.hbmw(),
            r.mbmw(),
            r.mbe(),
            smart_data_units(r.hbmw()),
            human(c.gc_units * r.mapping_unit as u64),
            c.erases,
            r.erase_count.0,
            r.erase_count.1,
            r.erase_count.2
        );
        let e = &c.fdp_events;
        if r.placement.starts_with("fdp") {
            let _ = writeln!(
                s,
                "  FDP events: RU not fully written {}, invalid PID {}, media reallocated {} ({} moved)",
                e.ru_not_fully_written,
                e.invalid_pid,
                e.media_reallocated,
                human(e.media_reallocated_units * r.mapping_unit as u64)
            );
        }
        if r.placement.starts_with("fdp") || r.placement.starts_with("streams") {
            for f in &r.frontiers {
                let who = match (f.kind, f.ruh) {
                    ("host", Some(h)) => format!("RUH {h}"),
                    ("gc", Some(h)) => format!("RUH {h} GC"),
                    _ => "shared GC".to_string(),
                };
                let _ = writeln!(
                    s,
                    "    {:<12} RG {} MBMW {:>12} (host {:>12}, GC {:>12}) MBE {:>12}",
                    who,
                    f.rg,
                    human(f.host_bytes + f.gc_bytes),
                    human(f.host_bytes),
                    human(f.gc_bytes),
                    human(f.erases * r.erase_unit_bytes)
                );
            }
        }
        let measured_jobs: Vec<_> = r.jobs.iter().filter(|j| j.measured).collect();
        if measured_jobs.iter().any(|j| j.timing.is_some()) {
            let _ = writeln!(
                s,
                "  {:<14} {:<8} {:>10} {:>11} {:>10} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10}",
                "job", "ns", "read IOPS", "read BW", "write IOPS", "write BW", "lat mean", "p50", "p99", "p99.9", "p99.99"
            );
            for j in &measured_jobs {
                let Some(t) = &j.timing else { continue };
                // Latency columns describe the job's main direction (reads if it reads more).
                let d = if t.read.ios >= t.write.ios { &t.read } else { &t.write };
                let _ = writeln!(
                    s,
                    "  {:<14} {:<8} {:>10.0} {:>9}/s {:>10.0} {:>9}/s {:>10} {:>10} {:>10} {:>10} {:>10}",
                    j.name,
                    j.namespace,
                    t.read.iops,
                    mb(t.read.bytes_per_sec),
                    t.write.iops,
                    mb(t.write.bytes_per_sec),
                    us(d.lat_mean_ns),
                    us(d.lat_p50_ns as f64),
                    us(d.lat_p99_ns as f64),
                    us(d.lat_p999_ns as f64),
                    us(d.lat_p9999_ns as f64)
                );
            }
        } else if !measured_jobs.is_empty() {
            let _ = writeln!(s, "  {:<32} {:<10} {:>12} {:>12} {:>12} {:>12}", "job", "namespace", "written", "read", "trimmed", "I/Os");
            for j in measured_jobs {
                let _ = writeln!(
                    s,
                    "  {:<32} {:<10} {:>12} {:>12} {:>12} {:>12}",
                    j.name,
                    j.namespace,
                    human(j.stats.write_bytes),
                    human(j.stats.read_bytes),
                    human(j.stats.trim_bytes),
                    j.stats.ios
                );
            }
        }
        if let Some(t) = &r.timed {
            let secs = t.elapsed_ns as f64 * 1e-9;
            let total = (t.dies as f64 * t.elapsed_ns as f64).max(1.0);
            let _ = writeln!(
                s,
                "  simulated {:.3} s: host writes {}/s, reads {}/s; die time busy {:.1}% host, {:.1}% GC (copies + erases)",
                secs,
                mb(r.hbmw() as f64 / secs),
                mb(c.host_read_bytes as f64 / secs),
                t.busy.host_ns() as f64 / total * 100.0,
                t.busy.gc_ns() as f64 / total * 100.0
            );
            if let (Some(y), Some(dw), Some(sd)) = (r.lifetime_years(), r.measured_dwpd(), r.sustainable_dwpd()) {
                let _ = writeln!(
                    s,
                    "  endurance: {} P/E cycles -> {:.2} years at this write rate ({:.2} drive writes/day); sustains {:.2} DWPD for 5 years at WAF {:.3}",
                    t.pe_cycles, y, dw, sd, r.waf()
                );
            }
        }
        if c.trim_bytes > 0 || c.host_read_bytes > 0 {
            let _ = writeln!(s, "  trimmed {}, read {}", human(c.trim_bytes), human(c.host_read_bytes));
        }
        s.push('\n');
    }
    if results.len() > 1 {
        let _ = writeln!(s, "{:<20} {:>8} {:>14} {:>14} {:>14}", "variant", "WAF", "HBMW", "MBMW", "MBE");
        for r in results {
            let _ = writeln!(s, "{:<20} {:>8.3} {:>14} {:>14} {:>14}", r.name, r.waf(), human(r.hbmw()), human(r.mbmw()), human(r.mbe()));
        }
        if results.iter().all(|r| r.timed.is_some()) {
            let base = &results[0];
            let _ = writeln!(s, "\n{:<20} {:>12} {:>12} {:>12} {:>12} {:>14}", "variant", "write BW", "read IOPS", "write vs 1st", "read vs 1st", "life vs 1st");
            for r in results {
                let (w, ri) = timed_totals(r);
                let (bw, bri) = timed_totals(base);
                // Life at equal host writes: the ratio of sustainable DWPD (inverse WAF ratio).
                let life = match (r.sustainable_dwpd(), base.sustainable_dwpd()) {
                    (Some(a), Some(b)) => format!("{:.2}x", a / b),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    s,
                    "{:<20} {:>10}/s {:>12.0} {:>+11.0}% {:>+11.0}% {:>14}",
                    r.name,
                    mb(w),
                    ri,
                    (w / bw - 1.0) * 100.0,
                    (ri / bri - 1.0) * 100.0,
                    life
                );
            }
        }
    }
    s
}

/// Measured-phase write bandwidth (bytes/s) and read IOPS summed over jobs.
pub fn timed_totals(r: &VariantResult) -> (f64, f64) {
    let mut w = 0.0;
    let mut ri = 0.0;
    for j in r.jobs.iter().filter(|j| j.measured) {
        if let Some(t) = &j.timing {
            w += t.write.bytes_per_sec;
            ri += t.read.iops;
        }
    }
    (w, ri)
}

fn mb(bytes_per_sec: f64) -> String {
    format!("{:.1} MB", bytes_per_sec / 1e6)
}

fn us(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.0} us", ns / 1e3)
    }
}

/// `wafsim device show`.
pub fn device(cfg: &DeviceConfig, g: &Geometry) -> String {
    let mut s = String::new();
    let mu = g.mapping_unit as u64;
    let _ = writeln!(s, "logical capacity     {} ({} B)", Bytes(cfg.logical_bytes), cfg.logical_bytes);
    let _ = writeln!(s, "raw capacity         {} ({} B)", Bytes(cfg.physical_bytes), cfg.physical_bytes);
    let _ = writeln!(s, "mapping unit         {}", Bytes(mu));
    let _ = writeln!(s, "erase unit           {} = {} mapping units (Np)", Bytes(cfg.erase_unit_bytes), g.units_per_eu);
    let _ = writeln!(s, "erase units          {} ({} per reclaim group, {} reclaim group(s))", g.erase_units, g.eus_per_rg, g.reclaim_groups);
    let _ = writeln!(s, "mapping units        {} logical, {} exported by namespaces, {} physical", g.logical_units, g.namespace_units, g.physical_units());
    let _ = writeln!(s, "OP                   {:.3}% as (physical - logical) / logical", g.op_logical() * 100.0);
    let _ = writeln!(s, "                     {:.3}% as (physical - logical) / physical", g.op_physical() * 100.0);
    let _ = writeln!(s, "spare erase units    {} beyond one copy of every exported LBA", g.spare_eus());
    let _ = writeln!(
        s,
        "  of which reserved  {} free-pool minimum (gc_free_min {} .. gc_free_target {} per group), {} open frontier(s)",
        g.reserved_free_eus, cfg.gc_free_min, cfg.gc_free_target, g.open_frontiers
    );
    let _ = writeln!(
        s,
        "effective alpha      {:.5} (T/U with T = (erase units - free pool - open frontiers/2) x Np; docs/model.md)",
        g.effective_alpha()
    );
    let _ = writeln!(s, "GC policy            {}", cfg.gc_policy);
    let _ = writeln!(s, "placement            {}", cfg.placement);
    let _ = writeln!(s, "namespaces           {}", cfg.namespaces.len());
    for n in &cfg.namespaces {
        let _ = writeln!(s, "  {:<16} {:>12}  placement handles -> RUHs {:?}", n.name, Bytes(n.size_bytes), n.placement_handles);
    }
    let mem = g.memory_bytes();
    let _ = writeln!(
        s,
        "simulation memory    {} ({:.2} B per exported mapping unit)",
        human(mem),
        mem as f64 / g.namespace_units as f64
    );
    s
}
