//! `wafsim advise`: which streams should share which reclaim unit handle? Argument parsing and
//! printing only; the search is `wafsim_experiment::studies::advise` (docs/advisor.md).

use anyhow::Result;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wafsim_experiment::studies::advise::{advise, AdviseOptions, AdviseProgress, AdviseResult, Ranked, Search};

#[derive(Args)]
pub struct AdviseArgs {
    /// Experiment TOML on an FDP drive; every placement handle of every namespace is a stream.
    experiment: PathBuf,
    /// N: reclaim unit handles the streams may use (RUHs 0..N of the drive).
    #[arg(long)]
    handles: u32,
    /// Over-provisioning values to cross the best assignments with, e.g. 0.07,0.14,0.28
    /// (sets device.over_provisioning).
    #[arg(long, value_delimiter = ',')]
    op: Vec<f64>,
    /// RUH types to cross the best assignments with, every handle of the drive of that type:
    /// e.g. `--ruh-type ii,pi` (initially-isolated, persistently-isolated; sets
    /// device.fdp.ruh_type). With --op, every OP x type.
    #[arg(long, value_delimiter = ',', value_parser = parse_ruh_type)]
    ruh_type: Vec<wafsim_core::RuhType>,
    /// Simulate every candidate assignment when there are at most this many; otherwise search
    /// greedily (docs/advisor.md).
    #[arg(long, default_value_t = 200)]
    exhaustive_limit: usize,
    /// Greedy search: stop after this many simulations (the baselines included).
    #[arg(long, default_value_t = 300)]
    max_evals: usize,
    /// Search greedily even when exhaustive search would fit the limit.
    #[arg(long)]
    greedy: bool,
    /// With --op or --ruh-type: cross this many of the best assignments with the OPs (all, when the ranking
    /// times the OPs fits --exhaustive-limit).
    #[arg(long, default_value_t = 3)]
    op_top: usize,
    /// The experiment's variant to advise on (default: the only one, or the one with FDP on).
    #[arg(long)]
    variant: Option<String>,
    /// Rows of the ranking to print (the JSON has all).
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Where the candidates run (--jobs, --ray, --python) and at what scale (--scale,
    /// --full-scale), as for `wafsim sweep`.
    #[command(flatten)]
    run: crate::sweep::SweepRunArgs,
}

pub fn run_advise(a: AdviseArgs) -> Result<()> {
    let opts = AdviseOptions {
        handles: a.handles,
        ops: a.op.clone(),
        ruh_types: a.ruh_type.clone(),
        exhaustive_limit: a.exhaustive_limit,
        max_evals: a.max_evals,
        op_top: a.op_top,
        variant: a.variant.clone(),
        jobs: a.run.jobs()?,
        scale: a.run.scale(),
        force_greedy: a.greedy,
        executor: a.run.executor(),
    };
    let start = Instant::now();
    // One line on a terminal, redrawn at most every 200 ms (as `wafsim sweep`'s).
    let tty = std::io::stderr().is_terminal();
    let last = Mutex::new(Instant::now() - Duration::from_secs(1));
    let progress = |p: AdviseProgress| {
        let mut l = last.lock().expect("progress lock");
        if !tty || l.elapsed() < Duration::from_millis(200) {
            return;
        }
        *l = Instant::now();
        let best = p.best_waf.map_or(String::new(), |w| format!(" | best WAF {w:.3}"));
        let _ = write!(std::io::stderr(), "\r\x1b[Kadvise: {} {}/{} | {} simulations{best} | {:.0} s", p.stage, p.batch_done, p.batch_total, p.evaluations, start.elapsed().as_secs_f64());
        let _ = std::io::stderr().flush();
    };
    let r = advise(&a.experiment, &opts, &progress);
    if tty {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
    let r = r?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", report(&r, a.top));
    }
    Ok(())
}

/// Relative change from `other` to `best`, in percent.
fn pct(best: f64, other: f64) -> String {
    format!("{:+.1}%", if other > 0.0 { (best - other) / other * 100.0 } else { 0.0 })
}

fn change(best: f64, other: f64) -> String {
    format!("{:+.3} ({})", best - other, pct(best, other))
}

fn ns_wafs(r: &Ranked) -> String {
    r.ns_waf.iter().map(|(n, w)| format!("{n} {w:.3}")).collect::<Vec<_>>().join(", ")
}

/// The text report: the search, the ranking, the best assignment against the baselines, the
/// OP table.
fn report(r: &AdviseResult, top: usize) -> String {
    let mut out = String::new();
    let variant = if r.variant == "default" { String::new() } else { format!(" (variant {})", r.variant) };
    let names: Vec<&str> = r.streams.iter().map(|s| s.name.as_str()).collect();
    out += &format!("advise: {}{variant}: {} streams ({}) on {} handles; {}\n", r.experiment, r.streams.len(), names.join(", "), r.handles, wafsim_experiment::plan::scale::label(r.scale));
    out += &match &r.search {
        Search::Exhaustive { candidates } => format!("search: exhaustive, {candidates} candidates"),
        Search::Greedy { candidates, start, rounds, budget_exhausted } => format!(
            "search: greedy ({candidates} candidates): start {start}, {rounds} round{} of local moves{}",
            if *rounds == 1 { "" } else { "s" },
            if *budget_exhausted { ", stopped by --max-evals" } else { "" }
        ),
    };
    // Name only the axes the run crossed.
    let points = r.op_rows.first().map_or(&[][..], |row| &row.points[..]);
    let (by_op, by_type) = (points.iter().any(|p| p.op.is_some()), points.iter().any(|p| p.ruh_type.is_some()));
    let (axes, by_what) = match (by_op, by_type) {
        (true, true) => ("--op / --ruh-type", "over-provisioning ((physical - logical) / logical) and RUH type"),
        (false, true) => ("--ruh-type", "RUH type"),
        _ => ("--op", "over-provisioning ((physical - logical) / logical)"),
    };
    out += &format!("; {} simulations", r.search_evaluations);
    if r.evaluations > r.search_evaluations {
        out += &format!(" (+{} across {axes})", r.evaluations - r.search_evaluations);
    }
    out += &format!(" in {:.1} s\n", r.seconds);
    for n in &r.notes {
        out += &format!("note: {n}\n");
    }
    out += "\n";
    let rows: Vec<[String; 5]> = r
        .ranking
        .iter()
        .take(top)
        .enumerate()
        .map(|(i, k)| [format!("{}", i + 1), k.label.clone(), format!("{:.3}", k.waf), pct(k.waf, r.no_placement.waf), ns_wafs(k)])
        .collect();
    let head = ["rank", "assignment", "WAF", "vs none", "WAF per namespace"];
    let w: Vec<usize> = (0..5).map(|i| rows.iter().map(|x| x[i].len()).chain([head[i].len()]).max().unwrap_or(0)).collect();
    let line = |c: &[String]| format!("{:>w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {}\n", c[0], c[1], c[2], c[3], c[4], w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3]).trim_end().to_string() + "\n";
    out += &line(&head.map(String::from));
    for x in &rows {
        out += &line(x);
    }
    if r.ranking.len() > top {
        out += &format!("... {} more (--top, or --json for all)\n", r.ranking.len() - top);
    }
    let b = r.best();
    out += &format!("\nbest: {}  WAF {:.3}\n", b.label, b.waf);
    out += &format!("  vs no placement     {}  WAF {:.3}: {}\n", r.no_placement.label, r.no_placement.waf, change(b.waf, r.no_placement.waf));
    let extra = r.one_per_stream_ruhs.map_or(String::new(), |n| format!(" ({n} RUHs)"));
    out += &format!("  vs one per stream   {}{extra}  WAF {:.3}: {}\n", r.one_per_stream.label, r.one_per_stream.waf, change(b.waf, r.one_per_stream.waf));
    if !r.op_rows.is_empty() {
        out += &format!("\nWAF by {by_what}:\n");
        let mut head = vec!["assignment".to_string()];
        head.extend(r.op_rows[0].points.iter().map(|p| {
            let t = p.ruh_type.map(|t| if t == wafsim_core::RuhType::InitiallyIsolated.name() { "II" } else { "PI" });
            match (p.op, t) {
                (Some(o), Some(t)) => format!("OP {o:.2} {t}"),
                (Some(o), None) => format!("OP {o:.2}"),
                (None, Some(t)) => t.to_string(),
                (None, None) => "WAF".to_string(),
            }
        }));
        let body: Vec<Vec<String>> = r.op_rows.iter().map(|o| std::iter::once(o.label.clone()).chain(o.points.iter().map(|p| format!("{:.3}", p.waf))).collect()).collect();
        let w: Vec<usize> = (0..head.len()).map(|i| body.iter().map(|x| x[i].len()).chain([head[i].len()]).max().unwrap_or(0)).collect();
        let fmt = |c: &[String]| c.iter().enumerate().map(|(i, s)| if i == 0 { format!("{s:<w$}", w = w[0]) } else { format!("{s:>w$}", w = w[i]) }).collect::<Vec<_>>().join("  ") + "\n";
        out += &fmt(&head);
        for x in &body {
            out += &fmt(x);
        }
    }
    out
}

fn parse_ruh_type(s: &str) -> std::result::Result<wafsim_core::RuhType, String> {
    s.parse()
}
