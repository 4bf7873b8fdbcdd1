//! Plain-text tables in the spirit of the published experiment tables.

use std::fmt::Write;
use wafsim_core::units::Bytes;
use wafsim_core::{DeviceConfig, Geometry};
use wafsim_experiment::results::TimedFigures;
use wafsim_experiment::VariantResult;

pub use wafsim_core::units::human;

/// Over-provisioning the one way this project writes it: (physical - logical) / logical, in
/// percent with two decimals and the convention named, e.g.
/// `"14.40% ((physical - logical) / logical)"`; "-" when not a number (no logical capacity).
/// Use it wherever OP is shown, so one drive shows one figure.
pub fn fmt_op(op_logical: f64) -> String {
    if op_logical.is_finite() {
        format!("{:.2}% ((physical - logical) / logical)", op_logical * 100.0)
    } else {
        "-".into()
    }
}

/// [`fmt_op`] of the drive described, plus the OP a scaled run simulated when rounding the
/// scaled capacities and erase unit moved it (visible at two decimals), e.g.
/// `"14.40% ((physical - logical) / logical; 14.37% as simulated)"`.
pub fn fmt_op_scaled(drive: f64, simulated: f64) -> String {
    let (a, b) = (format!("{:.2}", drive * 100.0), format!("{:.2}", simulated * 100.0));
    if a == b || !simulated.is_finite() || !drive.is_finite() {
        fmt_op(drive)
    } else {
        format!("{a}% ((physical - logical) / logical; {b}% as simulated)")
    }
}

/// A WAF with three decimals, or "n/a" when there were no host writes (a 0.000 would read as
/// a measured figure). Every table cell and line showing a WAF goes through this.
pub fn fmt_waf(w: Option<f64>) -> String {
    match w {
        Some(w) => format!("{w:.3}"),
        None => "n/a".into(),
    }
}

/// Why a WAF is "n/a", said once under the table that shows it.
pub const NO_WRITES_NOTE: &str = "WAF n/a: no host writes in the window (the measured phases only read or trimmed, or no phase was measured)";

/// A percentage with one decimal, "-" when the ratio is undefined (0/0, x/0).
fn pct(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{:.1}%", ratio * 100.0)
    } else {
        "-".into()
    }
}

/// `x` relative to `base` as a signed whole percentage ("+12%"); "-" when `base` is 0 (a
/// run without reads compared with another), so tables never show NaN% or inf%.
fn rel_change(x: f64, base: f64) -> String {
    if base > 0.0 && x.is_finite() && base.is_finite() {
        format!("{:+.0}%", (x / base - 1.0) * 100.0)
    } else {
        "-".into()
    }
}

/// Bytes per second over `ns` of simulated time; "-" for an empty window.
fn rate(bytes: f64, ns: u64) -> String {
    if ns == 0 {
        "-".into()
    } else {
        format!("{}/s", mb(bytes / (ns as f64 * 1e-9)))
    }
}

/// Die time busy with host and GC work as shares of `dies` x `window_ns`.
///
/// Die time is booked when the FTL issues the work, and writes complete once buffered: at the
/// end of a phase, programs of buffered data and GC copies and erases are still queued on the
/// dies and finish after the last completion. Over a short window that queued work shows as
/// more than 100%; the figures are printed as booked (clipping would hide how far behind the
/// dies were) and flagged.
fn die_busy(host_ns: u64, gc_ns: u64, dies: u32, window_ns: u64) -> String {
    let cap = dies as f64 * window_ns as f64;
    if cap <= 0.0 {
        return "die time busy -".into();
    }
    let (h, g) = (host_ns as f64 / cap, gc_ns as f64 / cap);
    let over = if h + g > 1.0005 {
        format!("; {} > 100%: work queued at the end (programs of buffered writes, GC) finishes after the last completion", pct(h + g))
    } else {
        String::new()
    };
    format!("die time busy {} host, {} GC (copies + erases{over})", pct(h), pct(g))
}

/// The variant under the other cases of the experiment's unknowns: device WAF (and media per
/// application byte) beside the central result, and the range over all of them.
fn spread_rows(s: &mut String, r: &VariantResult) {
    let Some((lo, hi)) = wafsim_experiment::studies::spread::waf_range(r) else { return };
    if r.hbmw() == 0 {
        // No range over an undefined figure (the cases set the same workloads).
        let _ = writeln!(s, "  spread over unknowns: device WAF n/a as written (no host writes in the window), {} other case(s)", r.spread.len());
    } else {
        let _ = writeln!(s, "  spread over unknowns: device WAF {:.3} as written, {lo:.3}..{hi:.3} over {} other case(s)", r.waf(), r.spread.len());
    }
    for x in &r.spread {
        let total = x.total_waf.map(|t| format!(", total WAF {t:.3}")).unwrap_or_default();
        let timed = x.timed.map(|(w, ri)| format!(", write {}/s, read {ri:.0} IOPS", mb(w))).unwrap_or_default();
        let p99 = x.read_p99_ns.map(|p| format!(" (slowest reader's p99 {:.0} us)", p * 1e-3)).unwrap_or_default();
        // A row's WAF is 0 only without host writes (media bytes never fall below host bytes).
        let _ = writeln!(s, "    {}: {}: device WAF {}{total}{timed}{p99} (drive history: {})", x.unknown, x.case, fmt_waf((x.waf > 0.0).then_some(x.waf)), x.history);
    }
}

/// One block per variant (per-namespace rows), then a comparison of all variants.
pub fn variants(results: &[VariantResult]) -> String {
    let mut s = String::new();
    for r in results {
        let f = r.figures();
        let _ = writeln!(
            s,
            "variant {:?}: {} layout, {} device(s), {}, GC {}, OP {}, {}; drive history: {}",
            r.name,
            r.layout,
            r.devices,
            r.placement,
            r.gc_policy,
            fmt_op_scaled(r.op_logical_full, r.op_logical),
            wafsim_experiment::plan::scale::label(r.scale),
            r.history
        );
        if r.phases.len() > 1 || r.phases.iter().any(|p| p.whole_waf.is_some() || !p.checkpoints.is_empty() || p.stopped.is_some()) {
            for (p, pf) in r.phases.iter().zip(&f.phases) {
                let _ = write!(
                    s,
                    "  phase {:<14} {:>10} host {:>12} media {:>12} WAF {}",
                    p.name,
                    if p.measured { "measured" } else { "unmeasured" },
                    human(pf.hbmw),
                    human(pf.mbmw),
                    fmt_waf(pf.waf)
                );
                match p.whole_waf {
                    Some(w) => {
                        let _ = writeln!(s, " over {}; whole phase WAF {w:.3}", p.window);
                    }
                    None => {
                        let _ = writeln!(s);
                    }
                }
                if let Some(why) = &p.stopped {
                    let _ = writeln!(s, "    stopped: {why}");
                }
                for (k, c) in p.checkpoints.iter().enumerate() {
                    let Some(at) = c.reached else {
                        let _ = writeln!(s, "    checkpoint {:<8} at {:>12}: not reached", c.label, human(c.at_bytes));
                        continue;
                    };
                    // The first checkpoint's interval is the phase so far: said once.
                    let since = |i: f64| if k > 0 { format!(", {i:.3} since the previous") } else { String::new() };
                    let total = c.total_waf.map(|(t, i)| format!("; total WAF {t:.3} from {}{}", c.origin, since(i))).unwrap_or_default();
                    let _ = writeln!(s, "    checkpoint {:<8} at {:>12}: WAF {:.3} from {}{}{total}", c.label, human(at), c.waf, c.origin, since(c.interval_waf));
                }
            }
        }
        // With a drive per namespace (dedicated layout) a row is a drive: its own WAF, and its
        // share of the host writes and of the media writes of the whole.
        let share = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.1}%", x * 100.0));
        let _ = writeln!(s, "  {:<16} {:>12} {:>14} {:>7} {:>14} {:>7} {:>8}", "namespace", "size", "host written", "share", "media written", "share", "WAF");
        for (n, nf) in r.namespaces.iter().zip(&f.namespaces) {
            let _ = writeln!(
                s,
                "  {:<16} {:>12} {:>14} {:>7} {:>14} {:>7} {:>8}",
                n.name,
                human(n.size_bytes),
                human(n.host_bytes),
                share(nf.host_share),
                human(n.media_bytes),
                share(nf.media_share),
                fmt_waf(nf.waf)
            );
        }
        let _ = writeln!(
            s,
            "  {:<16} {:>12} {:>14} {:>7} {:>14} {:>7} {:>8}",
            "total",
            human(r.logical_bytes),
            human(f.hbmw),
            "",
            human(f.mbmw),
            "",
            fmt_waf(f.waf)
        );
        if f.waf.is_none() {
            let _ = writeln!(s, "  {NO_WRITES_NOTE}");
        }
        let c = &r.counters;
        let _ = writeln!(
            s,
            "  HBMW {} B, MBMW {} B, MBE {} B; SMART data units written {}; GC copied {}; erases {}; erase count min/mean/max {}/{:.1}/{}",
            f.hbmw,
            f.mbmw,
            f.mbe,
            f.smart_data_units_written,
            human(f.gc_bytes),
            c.erases,
            r.erase_count.0,
            r.erase_count.1,
            r.erase_count.2
        );
        spread_rows(&mut s, r);
        if !r.zone_reports.is_empty() {
            // Zoned drives: what the host's zone management cost the media.
            let full = r.zone_reports.iter().flat_map(|(_, z)| &z.zones).filter(|z| z.state == wafsim_core::zone::ZoneState::Full).count();
            let zones: usize = r.zone_reports.iter().map(|(_, z)| z.zones.len()).sum();
            let _ = writeln!(
                s,
                "  zones: {full} of {zones} full at the end; Finish padding {} (in MBMW)",
                human(f.pad_bytes)
            );
        }
        if !r.host_devices.is_empty() {
            // Copies: dm-zoned reclaim (and zero-fill), tiering migration.
            let _ = writeln!(s, "  host layer devices (whole run)    user written    copies read   copies written       metadata   media written  device WAF");
            for (d, df) in r.host_devices.iter().zip(&f.host_devices) {
                let _ = writeln!(
                    s,
                    "  {:<30} {:>14} {:>14} {:>16} {:>14} {:>15} {:>11}",
                    d.device,
                    human(d.user_write_bytes),
                    human(d.reclaim_read_bytes),
                    human(d.reclaim_write_bytes),
                    human(d.metadata_write_bytes),
                    human(d.media_write_bytes),
                    fmt_waf(df.device_waf)
                );
            }
        }
        // File systems: application -> file system -> device -> media, per level and in total.
        // Each level's WAF is undefined when nothing reached it (a read-only YCSB run).
        for (fs, ff) in r.filesystems.iter().zip(&f.filesystems).filter(|(fs, _)| fs.measured) {
            let total = fmt_waf(ff.total_waf);
            if !fs.metrics.is_empty() {
                let figures: Vec<String> = fs.metrics.iter().map(|(k, v)| format!("{k} {v:.3}")).collect();
                let _ = writeln!(s, "  {} on {} (phase {}): {}", fs.filesystem, fs.namespace, fs.phase, figures.join(", "));
            }
            if let Some(store) = fs.store_write_bytes {
                let _ = writeln!(
                    s,
                    "  {} on {} (phase {}): application wrote {}, store wrote {} (store WAF {}), file system wrote {} (file system WAF {}); total WAF (media / application) {total}",
                    fs.filesystem,
                    fs.namespace,
                    fs.phase,
                    human(fs.file_write_bytes),
                    human(store),
                    fmt_waf(ff.store_waf),
                    human(fs.dev_write_bytes),
                    fmt_waf(ff.fs_waf),
                );
                continue;
            }
            let _ = writeln!(
                s,
                "  file system {} on {} (phase {}): application wrote {}, file system wrote {} (file system WAF {}); total WAF (media / application) {total}",
                fs.filesystem,
                fs.namespace,
                fs.phase,
                human(fs.file_write_bytes),
                human(fs.dev_write_bytes),
                fmt_waf(ff.fs_waf),
            );
        }
        let e = &c.fdp_events;
        if r.placement.starts_with("fdp") {
            let _ = writeln!(
                s,
                "  FDP events: RU not fully written {}, invalid PID {}, media reallocated {} ({} moved)",
                e.ru_not_fully_written,
                e.invalid_pid,
                e.media_reallocated,
                human(f.media_reallocated_bytes)
            );
        }
        if r.placement.starts_with("fdp") || r.placement.starts_with("streams") {
            let aged = r.frontiers.iter().any(|f| f.age_class > 1);
            for (x, xf) in r.frontiers.iter().zip(&f.frontiers) {
                let mut who = match (x.kind, x.ruh) {
                    ("host", Some(h)) => format!("RUH {h}"),
                    ("gc", Some(h)) => format!("RUH {h} GC"),
                    _ => "shared GC".to_string(),
                };
                if aged && x.age_class > 0 {
                    who += &format!(" {}", x.age_class);
                }
                let _ = writeln!(
                    s,
                    "    {:<12} RG {} MBMW {:>12} (host {:>12}, GC {:>12}) MBE {:>12}",
                    who,
                    x.rg,
                    human(xf.mbmw),
                    human(x.host_bytes),
                    human(x.gc_bytes),
                    human(xf.mbe)
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
            // fio prints "N zone resets" for zonemode=zbd jobs; a column when any job reset zones.
            let zoned = measured_jobs.iter().any(|j| j.stats.zone_resets + j.stats.zone_finishes > 0);
            let _ = write!(s, "  {:<32} {:<10} {:>12} {:>12} {:>12} {:>12}", "job", "namespace", "written", "read", "trimmed", "I/Os");
            let _ = writeln!(s, "{}", if zoned { format!(" {:>12}", "zone resets") } else { String::new() });
            for j in measured_jobs {
                let _ = write!(
                    s,
                    "  {:<32} {:<10} {:>12} {:>12} {:>12} {:>12}",
                    j.name,
                    j.namespace,
                    human(j.stats.write_bytes),
                    human(j.stats.read_bytes),
                    human(j.stats.trim_bytes),
                    j.stats.ios
                );
                let _ = writeln!(s, "{}", if zoned { format!(" {:>12}", j.stats.zone_resets) } else { String::new() });
            }
        }
        if let Some(t) = &r.timed {
            let _ = writeln!(
                s,
                "  simulated {:.3} s: host writes {}, reads {}; {}",
                t.elapsed_ns as f64 * 1e-9,
                rate(f.hbmw as f64, t.elapsed_ns),
                rate(c.host_read_bytes as f64, t.elapsed_ns),
                if t.disks > 0 && t.dies == 0 {
                    format!("head busy {} (positioning and transfer; the last cached writes reach the media after the last completion)", pct(t.head_busy_ns as f64 / (t.disks as f64 * t.busy_window_ns.max(t.elapsed_ns).max(1) as f64)))
                } else {
                    die_busy(t.busy.host_ns(), t.busy.gc_ns(), t.dies, t.busy_window_ns.max(t.elapsed_ns))
                }
            );
            if let Some(TimedFigures { lifetime_years: Some(y), measured_dwpd: Some(dw), sustainable_dwpd_5y: Some(sd), .. }) = f.timed {
                let _ = writeln!(
                    s,
                    "  endurance: {} P/E cycles -> {:.2} years at this write rate ({:.2} drive writes/day); sustains {:.2} DWPD for 5 years at WAF {}",
                    t.pe_cycles, y, dw, sd, fmt_waf(f.waf)
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
            let f = r.figures();
            let _ = writeln!(s, "{:<20} {:>8} {:>14} {:>14} {:>14}", r.name, fmt_waf(f.waf), human(f.hbmw), human(f.mbmw), human(f.mbe));
        }
        if results.iter().any(|r| !r.filesystems.is_empty() || !r.host_devices.is_empty()) {
            // Layers: what the application wrote, NAND (or disk) bytes per application byte, and
            // life at equal application writes: the inverse of NAND wear (bytes programmed per
            // byte of NAND, each program costing an erase in the long run) per application byte,
            // relative to the first variant. Disks (nothing erased) have no such life.
            let _ = writeln!(s, "\n{:<20} {:>14} {:>10} {:>12}", "variant", "app written", "total WAF", "life vs 1st");
            let base = results[0].wear_per_app_byte();
            for r in results {
                let f = r.figures();
                let life = match (r.wear_per_app_byte(), base) {
                    (Some(w), Some(b)) if w > 0.0 && b > 0.0 => format!("{:.2}x", b / w),
                    _ => "-".into(),
                };
                let _ = writeln!(s, "{:<20} {:>14} {:>10} {:>12}", r.name, human(f.application_bytes), fmt_waf(f.total_waf), life);
            }
        }
        if results.iter().all(|r| r.timed.is_some()) {
            let base = &results[0];
            let _ = writeln!(s, "\n{:<20} {:>12} {:>12} {:>12} {:>12} {:>14}", "variant", "write BW", "read IOPS", "write vs 1st", "read vs 1st", "life vs 1st");
            for r in results {
                let (w, ri) = r.timed_totals();
                let (bw, bri) = base.timed_totals();
                // Life at equal host writes: the ratio of sustainable DWPD (inverse WAF ratio).
                let life = match (r.sustainable_dwpd(), base.sustainable_dwpd()) {
                    // (A disk has no rated P/E cycles: 0 / 0.)
                    (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    s,
                    "{:<20} {:>10}/s {:>12.0} {:>12} {:>12} {:>14}",
                    r.name,
                    mb(w),
                    ri,
                    rel_change(w, bw),
                    rel_change(ri, bri),
                    life
                );
            }
        }
    }
    s
}

/// A percentage with two decimals, "-" when undefined.
fn pct_2(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{:.2}%", ratio * 100.0)
    } else {
        "-".into()
    }
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
    let _ = writeln!(s, "OP                   {}", fmt_op(g.op_logical()));
    // The same spare in the other convention gets its own name (Desnoyers' spare factor Sf), so
    // "OP" always means one figure.
    let _ = writeln!(s, "spare factor         {} of physical ((physical - logical) / physical)", pct_2(g.op_physical()));
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
    if cfg.gc_age_classes > 1 {
        let _ = writeln!(s, "GC age classes       {} (copies sorted by how often GC moved them; docs/model.md)", cfg.gc_age_classes);
    }
    let _ = writeln!(s, "placement            {}", cfg.placement);
    if let Some(c) = &cfg.slc_cache {
        // An erase unit in SLC mode holds 1/bits of its data; the static part, always kept,
        // takes that many erase units out of the spare once the drive is full.
        let slc_eu = cfg.erase_unit_bytes / c.bits_per_cell as u64;
        let static_eus = c.static_bytes.div_ceil(slc_eu.max(1));
        // Cache on an empty drive: x = static + dynamic x (capacity - x).
        let empty = (c.static_bytes as f64 + c.dynamic * cfg.logical_bytes as f64) / (1.0 + c.dynamic);
        let _ = writeln!(
            s,
            "pSLC cache           static {} ({static_eus} erase units in SLC mode, {} each) + {}% of free space; about {} on an empty drive",
            Bytes(c.static_bytes),
            Bytes(slc_eu),
            c.dynamic * 100.0,
            human(empty as u64)
        );
        let _ = writeln!(s, "  media written      SLC programs {}counted (count_slc_programs = {}); folds to TLC always", if c.count_slc_programs { "" } else { "not " }, c.count_slc_programs);
    }
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use wafsim_core::Counters;
    use wafsim_experiment::results::{JobResult, JobTiming, TimedSummary};

    /// A timed variant: `write_bps` bytes/s of writes and `read_iops` reads/s over one second,
    /// die busy `host_busy` + `gc_busy` of `dies` x 1 s.
    pub(crate) fn timed_result(name: &str, write_bps: f64, read_iops: f64, host_busy: f64, gc_busy: f64) -> VariantResult {
        let dies = 8u32;
        let sec = 1_000_000_000u64;
        let mut timing = JobTiming { window_ns: sec, iodepth: 32, ..Default::default() };
        timing.write.bytes_per_sec = write_bps;
        timing.write.bytes = write_bps as u64;
        timing.read.iops = read_iops;
        timing.read.ios = read_iops as u64;
        let mut t = TimedSummary { elapsed_ns: sec, dies, pe_cycles: 3000, ..Default::default() };
        t.busy.host_program_ns = (host_busy * (dies as u64 * sec) as f64) as u64;
        t.busy.gc_program_ns = (gc_busy * (dies as u64 * sec) as f64) as u64;
        let counters = Counters { host_write_bytes: write_bps as u64, host_units: write_bps as u64 / 4096, ..Default::default() };
        VariantResult {
            name: name.into(),
            layout: "shared".into(),
            placement: "conventional".into(),
            gc_policy: "greedy".into(),
            history: "sequential fill".into(),
            devices: 1,
            mapping_unit: 4096,
            erase_unit_bytes: 1 << 20,
            scale: 1.0,
            counters,
            phases: vec![],
            namespaces: vec![],
            jobs: vec![JobResult {
                phase: "measure".into(),
                name: "job".into(),
                namespace: "ns1".into(),
                measured: true,
                stats: Default::default(),
                timing: Some(timing),
            }],
            frontiers: vec![],
            erase_count: (0, 0.0, 0),
            logical_bytes: 1 << 30,
            physical_bytes: (1 << 30) + (1 << 27),
            op_logical: 0.125,
            op_logical_full: 0.125,
            timeseries: vec![],
            warnings: vec![],
            timed: Some(t),
            zone_reports: vec![],
            filesystems: vec![],
            host_devices: vec![],
            bandwidth: vec![],
            host_timeline: vec![],
            tier_timeline: vec![],
            spread: vec![],
        }
    }

    /// A variant that only read: its WAF is n/a (with the note) in the tables, null in JSON
    /// and an empty cell in the time-series CSV, never 0.000.
    #[test]
    fn a_run_without_host_writes_has_no_waf() {
        let mut r = timed_result("reads", 0.0, 1000.0, 0.1, 0.0);
        r.timed = None;
        r.counters.host_read_bytes = 1 << 20;
        r.namespaces = vec![wafsim_experiment::results::NsResult { name: "ns1".into(), size_bytes: 1 << 30, host_bytes: 0, media_bytes: 0, gc_bytes: 0, read_bytes: 1 << 20, trim_bytes: 0 }];
        r.timeseries = vec![wafsim_experiment::results::Sample { phase: 0, device: None, host_bytes: 0, media_bytes: 0, gc_bytes: 0, erases: 0, app_bytes: None }];
        let two = [r.clone(), r.clone()];
        let t = variants(&two);
        assert!(!t.contains("0.000"), "{t}");
        assert!(t.contains("WAF n/a: no host writes in the window"), "{t}");
        assert_eq!(t.matches(" n/a").count(), 2 * 3 + 2, "{t}"); // ns row, total row, note; comparison rows
        let j = crate::json::variant(&r);
        assert!(j["waf"].is_null() && j["total_waf"].is_null() && j["namespaces"][0]["waf"].is_null(), "{j}");
        assert_eq!(j["waf_note"], "no host writes in the window");
        let csv = crate::csv::timeseries(&[r]);
        assert!(csv.lines().nth(1).unwrap().ends_with(",0,0,0,0,,,"), "{csv}");
    }

    /// Life at equal application writes: programs per NAND byte per application byte, inverted
    /// and relative to the first variant.
    #[test]
    fn layer_table_gives_total_waf_and_life_against_the_first() {
        use wafsim_experiment::results::FsResult;
        let fs = |app: u64| FsResult {
            phase: "p".into(),
            measured: true,
            name: "files".into(),
            namespace: "ns1".into(),
            filesystem: "zoned".into(),
            file_write_bytes: app,
            dev_write_bytes: app,
            zone_live_bytes: None,
            store_write_bytes: None,
            metrics: Vec::new(),
        };
        let mut a = timed_result("a", 1e9, 0.0, 0.5, 0.1);
        let mut b = timed_result("b", 1e9, 0.0, 0.5, 0.1);
        a.timed = None;
        b.timed = None;
        // a: 1 GiB programmed for 1 GiB of application data; b: 3 GiB for the same, on twice
        // the NAND: wear 1.5x a's, life 0.67x.
        a.counters.host_units = 1 << 18;
        a.counters.erases = 1;
        b.counters.host_units = 3 << 18;
        b.counters.erases = 1;
        b.physical_bytes = 2 * a.physical_bytes;
        a.filesystems = vec![fs(1 << 30)];
        b.filesystems = vec![fs(1 << 30)];
        let text = variants(&[a, b]);
        assert!(text.contains("a                          1.00 GiB      1.000        1.00x"), "{text}");
        assert!(text.contains("b                          1.00 GiB      3.000        0.67x"), "{text}");
    }

    #[test]
    fn op_has_one_format() {
        assert_eq!(fmt_op(0.14398302), "14.40% ((physical - logical) / logical)");
        assert_eq!(fmt_op(f64::NAN), "-");
        assert_eq!(fmt_op_scaled(0.14398302, 0.14371808), "14.40% ((physical - logical) / logical; 14.37% as simulated)");
        assert_eq!(fmt_op_scaled(0.14398302, 0.1440), fmt_op(0.14398302));
        // `device show` and the run table use it.
        let cfg = wafsim_core::DeviceConfig::single_namespace(1000, 64, 4096, 0.07, wafsim_core::GcPolicy::Greedy, 1);
        let g = cfg.geometry().unwrap();
        let text = device(&cfg, &g);
        assert!(text.contains(&format!("OP                   {}", fmt_op(g.op_logical()))), "{text}");
        assert!(text.contains("spare factor         6.54% of physical") && text.matches("OP ").count() == 1, "{text}");
        let text = variants(&[timed_result("a", 1e9, 0.0, 0.5, 0.1)]);
        assert!(text.contains("OP 12.50% ((physical - logical) / logical),"), "{text}");
    }

    #[test]
    fn runs_without_reads_print_no_nan() {
        // Neither run reads: "read vs 1st" is undefined, not NaN%.
        let text = variants(&[timed_result("a", 1e9, 0.0, 0.5, 0.1), timed_result("b", 2e9, 0.0, 0.6, 0.0)]);
        assert!(!text.contains("NaN") && !text.contains("inf%"), "{text}");
        let row = text.lines().find(|l| l.starts_with("b ") && l.contains("/s")).expect("comparison row");
        assert!(row.contains("+100%") && row.split_whitespace().any(|w| w == "-"), "{row}");
        // A first run without reads, a second with: no inf% either.
        let text = variants(&[timed_result("a", 1e9, 0.0, 0.5, 0.1), timed_result("b", 0.0, 5e4, 0.3, 0.0)]);
        assert!(!text.contains("NaN") && !text.contains("inf%"), "{text}");
        // No simulated time at all.
        let mut r = timed_result("a", 0.0, 0.0, 0.0, 0.0);
        r.timed.as_mut().unwrap().elapsed_ns = 0;
        let text = variants(&[r]);
        assert!(!text.contains("NaN") && !text.contains("inf%") && text.contains("die time busy -"), "{text}");
    }

    #[test]
    fn die_busy_over_100_percent_is_flagged() {
        let text = variants(&[timed_result("a", 1e9, 0.0, 0.5, 0.1)]);
        assert!(text.contains("die time busy 50.0% host, 10.0% GC (copies + erases)\n"), "{text}");
        let text = variants(&[timed_result("a", 1e9, 0.0, 1.1, 0.074)]);
        assert!(text.contains("die time busy 110.0% host, 7.4% GC (copies + erases; 117.4% > 100%: work queued at the end"), "{text}");
        assert!(text.contains("finishes after the last completion)\n"), "{text}");
    }
}

/// `wafsim device show` for a ZNS drive.
pub fn zns_device(z: &wafsim_core::zns::ZnsConfig, namespace: &str) -> String {
    let mut s = String::new();
    let bs = z.block_size as u64;
    let c = &z.zones;
    let limit = |n: u32| if n == 0 { "none".to_string() } else { n.to_string() };
    let _ = writeln!(s, "kind                 zns (zoned namespace; the host places data and runs GC; no device GC)");
    let _ = writeln!(s, "block size           {}", Bytes(bs));
    let _ = writeln!(s, "zones                {} ({} conventional)", c.zones, c.conventional_zones);
    let _ = writeln!(s, "zone size            {} ({} blocks, the LBA stride between zone starts)", Bytes(c.zone_size * bs), c.zone_size);
    let _ = writeln!(s, "zone capacity        {} ({} blocks writable per zone)", Bytes(c.zone_capacity * bs), c.zone_capacity);
    let _ = writeln!(s, "LBA space            {} ({} B)", Bytes(c.zone_size * bs * c.zones as u64), c.zone_size * bs * c.zones as u64);
    let _ = writeln!(s, "writable capacity    {} ({} B)", Bytes(c.zone_capacity * bs * c.zones as u64), c.zone_capacity * bs * c.zones as u64);
    let _ = writeln!(s, "open / active limit  {} / {}", limit(c.max_open), limit(c.max_active));
    let _ = writeln!(s, "erase units          {} per zone of {} each", z.erase_units_per_zone, Bytes(z.blocks_per_erase_unit() * bs));
    let _ = writeln!(
        s,
        "finish               {}",
        if z.finish_pads { "pads a partly written zone to its capacity (counted as media writes)" } else { "leaves the rest of the zone unwritten" }
    );
    let _ = writeln!(s, "namespaces           1");
    let _ = writeln!(s, "  {:<16} {:>12}  zoned", namespace, Bytes(c.zone_size * bs * c.zones as u64));
    s
}

/// `wafsim device show` for a host-managed SMR disk.
pub fn smr_device(z: &wafsim_core::smr::SmrConfig, namespace: &str) -> String {
    let mut s = String::new();
    let total = z.zone_size * z.zones as u64;
    let _ = writeln!(s, "kind                 smr (host-managed SMR disk, ZBC; the host writes zones sequentially; no erase, no device GC)");
    let _ = writeln!(s, "block size           {}", Bytes(z.block_size as u64));
    let _ = writeln!(s, "zones                {} ({} conventional, {} sequential write required)", z.zones, z.conventional_zones, z.zones - z.conventional_zones);
    let _ = writeln!(s, "zone size            {} (capacity = size)", Bytes(z.zone_size));
    let _ = writeln!(s, "capacity             {} ({} B)", Bytes(total), total);
    let _ = writeln!(s, "open limit           {}", if z.max_open == 0 { "none".to_string() } else { z.max_open.to_string() });
    let _ = writeln!(s, "namespaces           1");
    let _ = writeln!(s, "  {:<16} {:>12}  zoned", namespace, Bytes(total));
    s
}
