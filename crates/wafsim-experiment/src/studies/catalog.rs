//! docs/experiments.md: run every experiment of the catalog at its default scale and set the
//! results next to the published figures the experiment file records under `[published]`.

use crate::results::{SpreadRow, VariantResult};
use crate::schema::UnknownSpec;
use crate::run::{run_variants, RunOptions};
use crate::plan::scale::{auto_scale_all, label, scale_spec};
use crate::plan::load_experiment;
use anyhow::{Context, Result};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Experiment files under `dir` (recursively, sorted), those with a `[published]` table only.
pub fn catalog_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                let text = std::fs::read_to_string(&p)?;
                if text.lines().any(|l| l.trim() == "[published]") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// One catalog entry's results.
pub struct Entry {
    /// The experiment file.
    pub path: PathBuf,
    /// The experiment's name (its path when it has none).
    pub name: String,
    /// Capacity scale every variant ran at (1 = full scale).
    pub scale: f64,
    /// Wall-clock seconds of the variants' runs (the random-interleave reruns not included).
    pub seconds: f64,
    /// One result per variant, in the file's order.
    pub results: Vec<VariantResult>,
    /// The experiment's `[published]` table: the figures to compare against.
    pub published: toml::Table,
    /// Untimed entries: WAF per variant with `interleave = "random"`, one per seed of
    /// [`RANDOM_SEEDS`] (the spread between interleaving modes).
    pub random_interleave: Vec<Vec<f64>>,
    /// Whether the experiment draws its turns at random (`interleave = "random"`): then
    /// `random_interleave` holds the WAF with strict turns instead.
    pub written_random: bool,
    /// The experiment's `[[unknown]]` tables; the results' `spread` rows are their cases, run.
    pub unknowns: Vec<UnknownSpec>,
}

/// Seeds of the random-interleave reruns.
pub const RANDOM_SEEDS: [u64; 3] = [1, 2, 3];

/// Run one experiment at its default scale.
pub fn run_entry(path: &Path) -> Result<Entry> {
    let mut variants = load_experiment(path)?;
    let scale = auto_scale_all(variants.iter().map(|v| &v.spec))?;
    for v in &mut variants {
        scale_spec(&mut v.spec, scale)?;
    }
    // Application experiments get time series (application, host and NAND writes over time) for
    // their charts, sampled as `wafsim run --plot` does.
    let apps = variants.iter().any(|v| v.spec.phases().iter().any(|p| !p.kv.is_empty()));
    let opts = if apps { RunOptions { sample_every_bytes: Some((variants[0].spec.device_config()?.logical_bytes / 50).max(1 << 20)), ..RunOptions::default() } } else { RunOptions::default() };
    let t0 = Instant::now();
    let mut results = run_variants(&variants, opts, &|_, _| {}).into_iter().collect::<Result<Vec<_>>>()?;
    let seconds = t0.elapsed().as_secs_f64();
    // Facts the source does not give: every case of the file's unknowns, beside the central result.
    let cases = super::spread::cases(&variants)?;
    super::spread::run_spread(&cases, &mut results, &|_, _| {})?;
    let unknowns = variants[0].spec.unknown.clone();
    let timed = variants.iter().any(|v| v.spec.timing.as_ref().is_some_and(|t| t.enabled));
    let mut random_interleave = vec![Vec::new(); variants.len()];
    // The interleaving of a phase's sources only matters where a phase has several (a fio
    // file may hold several jobs).
    let several = |v: &crate::schema::Variant| {
        v.spec.phases().iter().any(|p| !p.fio.is_empty() || p.workload.len() + p.trace.len() + p.files.len() + p.kv.len() > 1)
    };
    // An experiment that draws its turns at random is compared with strict turns instead.
    use crate::schema::InterleaveKind;
    let written_random = variants.iter().any(|v| v.spec.interleave == InterleaveKind::Random || v.spec.phases().iter().any(|p| p.interleave == Some(InterleaveKind::Random)));
    if !timed && variants.iter().any(several) {
        let (other, seeds) = if written_random { (InterleaveKind::RoundRobin, &RANDOM_SEEDS[..1]) } else { (InterleaveKind::Random, &RANDOM_SEEDS[..]) };
        for &seed in seeds {
            let vs: Vec<_> = variants
                .iter()
                .cloned()
                .map(|mut v| {
                    v.spec.interleave = other;
                    v.spec.phase.iter_mut().for_each(|p| p.interleave = None);
                    if !written_random {
                        v.spec.seed = seed;
                    }
                    v
                })
                .collect();
            for (i, r) in run_variants(&vs, RunOptions::default(), &|_, _| {}).into_iter().enumerate() {
                random_interleave[i].push(r?.waf());
            }
        }
    }
    let spec = &variants[0].spec;
    Ok(Entry {
        path: path.to_path_buf(),
        name: if spec.name.is_empty() { path.display().to_string() } else { spec.name.clone() },
        scale,
        seconds,
        results,
        published: spec.published.clone().unwrap_or_default(),
        random_interleave,
        written_random,
        unknowns,
    })
}

/// The markdown of docs/experiments.md; `charts[i]`: image paths (relative to the markdown) to
/// show under entry `i`.
pub fn markdown(entries: &[Entry], charts: &[Vec<String>], command: &str, machine: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# The experiment catalog\n");
    let _ = writeln!(
        s,
        "Generated by `{command}`: every experiment under experiments/ with a `[published]` table, at its default scale, seed 1. Do not edit by hand. Run times are wall-clock seconds on {machine}, variants in parallel.\n"
    );
    for (i, e) in entries.iter().enumerate() {
        let _ = writeln!(s, "## {}\n", e.name);
        let src = e.published.get("source").and_then(|v| v.as_str()).unwrap_or("");
        let _ = writeln!(s, "`wafsim run {}` ({}, {:.1} s). Source: {src}.\n", e.path.display(), label(e.scale), e.seconds);
        // What the drives held before the first phase, and which writes each measured phase
        // counts (the same for every variant as a rule; each distinct one listed otherwise).
        let distinct = |v: Vec<String>| v.into_iter().fold(Vec::<String>::new(), |mut a, x| {
            if !a.contains(&x) {
                a.push(x);
            }
            a
        });
        let histories = distinct(e.results.iter().map(|r| r.history.clone()).collect());
        let windows = distinct(e.results.iter().flat_map(|r| r.phases.iter().filter(|p| p.measured).map(|p| format!("phase {}: {}", p.name, p.window))).collect());
        let _ = writeln!(s, "Drive history: {}. Measured: {}.\n", histories.join("; "), windows.join("; "));
        let published = e.published.get("waf").and_then(|v| v.as_table());
        let _ = writeln!(s, "| variant | layout | placement | WAF | published WAF | difference | HBMW | MBMW |");
        let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|");
        for r in &e.results {
            let p = published.and_then(|t| t.get(&r.name)).and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)));
            // An entry whose measured phases wrote nothing has no WAF ("n/a"), and no difference.
            let (pw, diff) = match (p, r.written_waf()) {
                (Some(p), Some(w)) => (format!("{p:.4}"), format!("{:+.1}%", (w - p) / p * 100.0)),
                (Some(p), None) => (format!("{p:.4}"), "-".into()),
                (None, _) => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {pw} | {diff} | {} | {} |",
                r.name,
                r.layout,
                r.placement,
                r.written_waf().map_or("n/a".into(), |w| format!("{w:.4}")),
                gib(r.hbmw()),
                gib(r.mbmw())
            );
        }
        // Steady state of the measured phases (untimed runs are judged; see docs/model.md).
        let verdicts: Vec<String> = e
            .results
            .iter()
            .flat_map(|r| r.phases.iter().filter_map(move |p| p.steady.as_ref().map(|v| (r, p, v))))
            .filter(|(_, _, v)| !v.steady)
            .map(|(r, p, v)| format!("{} / phase {}: {}", r.name, p.name, v.describe()))
            .collect();
        let judged = e.results.iter().any(|r| r.phases.iter().any(|p| p.steady.is_some()));
        if judged && verdicts.is_empty() {
            // The criteria as the phases had them (the first judged phase's; a file may set its own).
            let v = e.results.iter().flat_map(|r| r.phases.iter().filter_map(|p| p.steady.as_ref())).next().expect("judged");
            let _ = writeln!(
                s,
                "\nSteady state: every measured phase of every variant ended with a steady WAF (last {} rounds of {} host writes within {:.0}% range and {:.0}% fitted change).",
                v.window,
                wafsim_core::units::Bytes(v.round_bytes),
                v.max_excursion * 100.0,
                v.max_slope * 100.0
            );
        } else if judged {
            let _ = writeln!(s, "\nSteady state: **not reached** in {} measured phase(s); these results may still be moving:\n", verdicts.len());
            for v in verdicts {
                let _ = writeln!(s, "- {v}");
            }
        }
        if e.written_random && e.random_interleave.iter().any(|v| !v.is_empty()) {
            let _ = writeln!(
                s,
                "\nInterleaving of concurrent sources (untimed): each I/O's source drawn at random by weight (`interleave = \"random\"`, Poisson arrivals, as written, seed 1) vs strict weighted turns (`interleave = \"round-robin\"`):\n"
            );
            let _ = writeln!(s, "| variant | WAF random (as written) | WAF round-robin | change |");
            let _ = writeln!(s, "|---|---:|---:|---:|");
            for (r, v) in e.results.iter().zip(&e.random_interleave) {
                let _ = writeln!(s, "| {} | {:.4} | {:.4} | {:+.1}% |", r.name, r.waf(), v[0], (v[0] / r.waf() - 1.0) * 100.0);
            }
        } else if e.random_interleave.iter().any(|v| !v.is_empty()) {
            let _ = writeln!(
                s,
                "\nInterleaving of concurrent sources (untimed): strict weighted turns (`interleave = \"round-robin\"`, the default, seed 1, as above) vs each I/O's source drawn at random by weight (`interleave = \"random\"`, Poisson arrivals), seeds {}:\n",
                RANDOM_SEEDS.map(|x| x.to_string()).join(", ")
            );
            let _ = writeln!(s, "| variant | WAF round-robin | WAF random (mean) | random min - max | change |");
            let _ = writeln!(s, "|---|---:|---:|---|---:|");
            for (r, v) in e.results.iter().zip(&e.random_interleave) {
                let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let _ = writeln!(s, "| {} | {:.4} | {mean:.4} | {lo:.4} - {hi:.4} | {:+.1}% |", r.name, r.waf(), (mean / r.waf() - 1.0) * 100.0);
            }
        }
        unknowns_tables(&mut s, e);
        // Timed runs: bandwidth and read IOPS next to [published] write_mb_s / read_iops.
        if e.results.iter().all(|r| r.timed.is_some()) {
            let pubf = |key: &str, name: &str| {
                e.published.get(key).and_then(|v| v.as_table()).and_then(|t| t.get(name)).and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
            };
            let _ = writeln!(s, "\n| variant | write MB/s | published | read IOPS | published | write IOPS per job (min - max) | life at equal host writes |");
            let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---:|");
            let base_dwpd = e.results[0].sustainable_dwpd();
            let mut totals = Vec::new();
            for r in &e.results {
                let (w, ri) = r.timed_totals();
                let per_job: Vec<f64> = r.jobs.iter().filter(|j| j.measured).filter_map(|j| j.timing.as_ref()).filter(|t| t.write.ios > 0).map(|t| t.write.iops).collect();
                totals.push((w, ri));
                let show = |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
                let range = if per_job.is_empty() {
                    "-".to_string()
                } else {
                    let lo = per_job.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = per_job.iter().copied().fold(0.0, f64::max);
                    format!("{lo:.0} - {hi:.0}")
                };
                let life = match (r.sustainable_dwpd(), base_dwpd) {
                    (Some(a), Some(b)) if a.is_finite() && b.is_finite() && b > 0.0 => format!("{:.2}x", a / b),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {:.1} | {} | {:.0} | {} | {range} | {life} |",
                    r.name,
                    w / 1e6,
                    show(pubf("write_mb_s", &r.name), 1),
                    ri,
                    show(pubf("read_iops", &r.name), 0),
                );
            }
            if totals.len() > 1 {
                for (i, r) in e.results.iter().enumerate().skip(1) {
                    let (w0, r0) = totals[0];
                    let (w, ri) = totals[i];
                    // A change against nothing is undefined: "-".
                    let change = |a: f64, b: f64| if b > 0.0 { format!("{:+.0}%", (a / b - 1.0) * 100.0) } else { "-".to_string() };
                    let _ = writeln!(
                        s,
                        "\n- {} vs {}: write bandwidth {}, read IOPS {}{}",
                        r.name,
                        e.results[0].name,
                        change(w, w0),
                        change(ri, r0),
                        e.published.get("timed_claim").and_then(|v| v.as_str()).map_or(String::new(), |c| format!(" (published: {c})"))
                    );
                }
            }
        }
        jobs_table(&mut s, e);
        host_timeline_table(&mut s, e);
        layers_table(&mut s, e);
        checkpoints_table(&mut s, e);
        stops(&mut s, e);
        space_table(&mut s, e);
        for c in charts.get(i).into_iter().flatten() {
            let _ = writeln!(s, "\n![{c}]({c})");
        }
        // [published] ratios = [["a", "b", "what was published"], ...]: WAF(a) / WAF(b).
        if let Some(ratios) = e.published.get("ratios").and_then(|v| v.as_array()) {
            s.push('\n');
            for r in ratios {
                let Some(r) = r.as_array() else { continue };
                let get = |i: usize| r.get(i).and_then(|v| v.as_str()).unwrap_or("");
                let waf_of = |n: &str| e.results.iter().find(|x| x.name == n).map(|x| x.waf());
                if let (Some(a), Some(b)) = (waf_of(get(0)), waf_of(get(1))) {
                    let _ = writeln!(s, "- WAF {} / WAF {} = {:.2} (published: {})", get(0), get(1), a / b, get(2));
                }
            }
        }
        if let Some(n) = e.published.get("notes").and_then(|v| v.as_str()) {
            let _ = writeln!(s, "\n{}\n", n.trim().replace('\n', " "));
        } else {
            s.push('\n');
        }
    }
    s
}

/// Timed entries with a few jobs per variant (tenants, not a fleet of VMs): each job's
/// bandwidth and latency percentiles, as fio reports them.
fn jobs_table(s: &mut String, e: &Entry) {
    let timed = |r: &VariantResult| r.jobs.iter().filter(|j| j.measured && j.timing.is_some()).count();
    if e.results.iter().any(|r| r.timed.is_none() || timed(r) > 4) {
        return;
    }
    let us = |ns: f64| if ns >= 1e6 { format!("{:.2} ms", ns * 1e-6) } else { format!("{:.0} us", ns * 1e-3) };
    let _ = writeln!(s, "\n| variant | job | read IOPS | read mean | p50 | p99 | p99.9 | write MB/s | write p99 |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &e.results {
        for j in r.jobs.iter().filter(|j| j.measured) {
            let Some(t) = &j.timing else { continue };
            let (rd, wr) = (&t.read, &t.write);
            let lat = |d: &crate::results::DirTiming, v: f64| if d.ios > 0 { us(v) } else { "-".into() };
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {} | {} | {} | {} | {:.1} | {} |",
                r.name,
                j.name,
                rd.iops,
                lat(rd, rd.lat_mean_ns),
                lat(rd, rd.lat_p50_ns as f64),
                lat(rd, rd.lat_p99_ns as f64),
                lat(rd, rd.lat_p999_ns as f64),
                wr.bytes_per_sec / 1e6,
                lat(wr, wr.lat_p99_ns as f64)
            );
        }
    }
}

/// Entries with file systems or key-value stores: the application level above the drive.
fn layers_table(s: &mut String, e: &Entry) {
    if e.results.iter().all(|r| r.filesystems.is_empty()) {
        return;
    }
    let _ = writeln!(s, "\n| variant | application written | application-layer WAF | drive WAF | total WAF (media / application) | life at equal application writes |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
    let base = e.results[0].wear_per_app_byte();
    for r in &e.results {
        let f = r.figures();
        let app = f.application_bytes;
        let layer: u64 = r.filesystems.iter().filter(|f| f.measured).map(|f| f.dev_write_bytes).sum();
        let life = match (r.wear_per_app_byte(), base) {
            (Some(w), Some(b)) if w > 0.0 && b > 0.0 => format!("{:.2}x", b / w),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} | {:.3} | {life} |",
            r.name,
            gib(app),
            wafsim_core::counters::waf(layer, app),
            // The catalog's tables print 0.000 for a ratio over nothing.
            f.waf.unwrap_or(0.0),
            f.total_waf.unwrap_or(0.0)
        );
    }
}

/// `[published] checkpoints = [["5 h", 0.1], ["50 h", 1.0]]`: drive and total WAF at points of
/// an application run, named by the reference's durations, placed at fractions of the
/// application bytes the run wrote (an assumed constant rate maps durations to bytes; the file's
/// notes say so). Per checkpoint the cumulative figures from the start, and the interval since
/// the previous checkpoint. From the time series of all drives together.
fn checkpoints_table(s: &mut String, e: &Entry) {
    // The measured phase's checkpoints (the first measured phase that has them), as the run
    // took them: cumulative from the phase start, and since the previous checkpoint.
    let rows: Vec<(&str, &[crate::results::Checkpoint])> = e
        .results
        .iter()
        .filter_map(|r| r.phases.iter().find(|p| p.measured && !p.checkpoints.is_empty()).map(|p| (r.name.as_str(), &p.checkpoints[..])))
        .collect();
    let Some((_, first)) = rows.first() else { return };
    let _ = writeln!(s, "\nCheckpoints: host bytes from {} at the phase's write rate.", first[0].origin);
    let mut head = String::from("\n| variant |");
    let mut rule = String::from("|---|");
    let mut prev: Option<&str> = None;
    for c in first.iter() {
        let label = c.label.as_str();
        let _ = write!(head, " {label}: drive WAF | {label}: total WAF |");
        rule.push_str("---:|---:|");
        if let Some(p) = prev {
            let _ = write!(head, " {p} to {label}: drive WAF | {p} to {label}: total WAF |");
            rule.push_str("---:|---:|");
        }
        prev = Some(label);
    }
    let _ = writeln!(s, "{head}\n{rule}");
    let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    for (name, cps) in &rows {
        let _ = write!(s, "| {name} |");
        for (k, c) in cps.iter().enumerate() {
            let reached = c.reached.is_some();
            let _ = write!(s, " {} | {} |", if reached { format!("{:.3}", c.waf) } else { "not reached".into() }, cell(c.total_waf.map(|t| t.0)));
            if k > 0 {
                let _ = write!(s, " {} | {} |", cell(reached.then_some(c.interval_waf)), cell(c.total_waf.map(|t| t.1)));
            }
        }
        s.push('\n');
    }
}

/// Phases that ended early (`stop_when_full`): which, where and why, so a "not reached"
/// checkpoint reads as the drive filling, not as a short run.
fn stops(s: &mut String, e: &Entry) {
    let stopped: Vec<String> = e
        .results
        .iter()
        .flat_map(|r| r.phases.iter().filter_map(move |p| p.stopped.as_ref().map(|w| format!("- {}, phase {}: {w}", r.name, p.name))))
        .collect();
    if !stopped.is_empty() {
        let _ = writeln!(s, "\nStopped when a drive filled (`stop_when_full`):\n\n{}", stopped.join("\n"));
    }
}

/// What the stores and file systems of the measured phases hold on their namespaces at the
/// end (the database's size on the drive; under media classes, the hot tier's and the cold
/// tier's), where they report it.
fn space_table(s: &mut String, e: &Entry) {
    const SHARE: &str = "space held, share of its namespace";
    let cells: Vec<(&str, Vec<String>)> = e
        .results
        .iter()
        .map(|r| {
            let held = r.filesystems.iter().filter(|f| f.measured).flat_map(|f| f.metrics.iter()).filter(|(k, _)| k.ends_with(SHARE));
            (r.name.as_str(), held.map(|(k, v)| format!("{}{:.1}%", k.strip_suffix(SHARE).unwrap_or(""), v * 100.0)).collect())
        })
        .collect();
    if cells.iter().all(|(_, c)| c.is_empty()) {
        return;
    }
    let _ = writeln!(s, "\n| variant | space held at the end, share of its namespace |\n|---|---|");
    for (name, c) in cells {
        let _ = writeln!(s, "| {name} | {} |", if c.is_empty() { "-".to_string() } else { c.join(", ") });
    }
}

/// Timed dm-zoned with a bandwidth log: the plateau, when the cache zones ran out, the bandwidth
/// after, and the reclaim rate per disk.
fn host_timeline_table(s: &mut String, e: &Entry) {
    if !e.results.iter().any(|r| !r.host_timeline.is_empty() && !r.bandwidth.is_empty()) {
        return;
    }
    let _ = writeln!(s, "\n| variant | first interval MB/s | cache zones used up at | MB/s after (mean to the end) | reclaim MB/s per disk (mean over disks, after) | host-layer WAF |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
    for r in e.results.iter().filter(|r| !r.host_timeline.is_empty() && !r.bandwidth.is_empty()) {
        let rate = |b: &crate::results::BwPoint, prev: f64| b.write_bytes as f64 / (b.t_s - prev).max(1e-9) / 1e6;
        let first = rate(&r.bandwidth[0], 0.0);
        let full = r.host_timeline.iter().position(|h| h.cache_free == 0);
        let (at, after, reclaim) = match full {
            Some(k) if k + 2 < r.bandwidth.len() => {
                let t0 = r.host_timeline[k].t_s;
                let tail = &r.bandwidth[k + 1..r.bandwidth.len() - 1];
                let t1 = tail.last().map_or(t0, |b| b.t_s);
                let bytes: u64 = tail.iter().map(|b| b.write_bytes).sum();
                let h0 = &r.host_timeline[k];
                let h1 = r.host_timeline.iter().rev().find(|h| h.t_s <= t1).unwrap_or(h0);
                let disks = h0.reclaim_write_bytes.len().max(1) as f64;
                let copied: u64 = h1.reclaim_write_bytes.iter().zip(&h0.reclaim_write_bytes).map(|(a, b)| a - b).sum();
                let span = (t1 - t0).max(1e-9);
                (format!("{t0:.0} s"), format!("{:.0}", bytes as f64 / span / 1e6), format!("{:.0}", copied as f64 / span / disks / 1e6))
            }
            _ => ("not used up".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(s, "| {} | {first:.0} | {at} | {after} | {reclaim} | {:.3} |", r.name, r.waf());
    }
}

/// One table per unknown: each variant's WAF as written and under each case of the unknown
/// ("-" where a case does not apply to the variant), with the range over them. Where the
/// variants have application layers (file systems, stores), a second table gives the total WAF
/// (media / application bytes) under the same cases: a drive WAF alone reads 1.000 on a ZNS
/// drive whatever the host's own GC does.
fn unknowns_tables(s: &mut String, e: &Entry) {
    let total = e.results.iter().any(|r| r.total_waf().is_some());
    for u in &e.unknowns {
        let _ = writeln!(s, "\nUnknown: **{}**. {} As written: {}.\n", u.name, u.why.trim(), u.central);
        // No host writes in the window: no WAF ("-"), not 0.
        spread_table(s, e, u, 4, |r| r.written_waf(), |x| (x.waf > 0.0).then_some(x.waf));
        if e.results.iter().all(|r| r.timed.is_some()) {
            let _ = writeln!(s, "\nWrite bandwidth (MB/s) under the same cases:\n");
            spread_table(s, e, u, 0, |r| Some(r.timed_totals().0 / 1e6), |x| x.timed.map(|t| t.0 / 1e6));
            let _ = writeln!(s, "\nRead IOPS under the same cases:\n");
            spread_table(s, e, u, 0, |r| Some(r.timed_totals().1), |x| x.timed.map(|t| t.1));
            if e.results.iter().any(|r| r.worst_read_p99_ns().is_some()) {
                let _ = writeln!(s, "\nRead p99 (us) of the slowest reading job under the same cases:\n");
                spread_table(s, e, u, 0, |r| r.worst_read_p99_ns().map(|p| p * 1e-3), |x| x.read_p99_ns.map(|p| p * 1e-3));
            }
        }
        if total {
            let _ = writeln!(s, "\nTotal WAF (media / application bytes) under the same cases:\n");
            spread_table(s, e, u, 4, |r| r.total_waf(), |x| x.total_waf);
        }
    }
}

/// One spread table of unknown `u`: `central` of each result as written, `case` under each case.
fn spread_table(s: &mut String, e: &Entry, u: &UnknownSpec, digits: usize, central: impl Fn(&VariantResult) -> Option<f64>, case: impl Fn(&SpreadRow) -> Option<f64>) {
    let mut head = "| variant | as written |".to_string();
    let mut rule = "|---|---:|".to_string();
    for c in &u.case {
        head += &format!(" {} |", c.label);
        rule += "---:|";
    }
    let _ = writeln!(s, "{head} range |\n{rule}---|");
    let mut short = false;
    for r in &e.results {
        let here = central(r);
        let mut row = format!("| {} | {} |", r.name, here.map_or("-".into(), |w| format!("{w:.digits$}")));
        let mut seen: Vec<f64> = here.into_iter().collect();
        // The window's kind ("the run after the stores' load", "whole phase") without its bytes.
        let kind = |w: &str| w.split(" (").next().unwrap_or("").to_string();
        for c in &u.case {
            let x = r.spread.iter().find(|x| x.unknown == u.name && x.case == c.label);
            match x.and_then(&case) {
                Some(w) => {
                    // A case whose phase ended before its window began counts other writes.
                    let other = x.is_some_and(|x| kind(&x.window) != kind(&r.measured_window()));
                    short |= other;
                    row += &format!(" {w:.digits$}{} |", if other { " (whole phase)" } else { "" });
                    if !other {
                        seen.push(w);
                    }
                }
                None => row += " - |",
            }
        }
        let range = match (seen.iter().copied().reduce(f64::min), seen.iter().copied().reduce(f64::max)) {
            (Some(lo), Some(hi)) => format!("{lo:.digits$} - {hi:.digits$}"),
            _ => "-".into(),
        };
        let _ = writeln!(s, "{row} {range} |");
    }
    if short {
        let _ = writeln!(s, "\n(whole phase): the case's phase ended before the window the experiment measures began (its stores were still loading); the figure counts the whole phase and is left out of the range.");
    }
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}
