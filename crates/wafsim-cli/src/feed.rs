//! `wafsim feed`: an experiment's traffic (its key-value stores, caches, fio jobs, traces and
//! synthetic workloads) sent to a served drive over NBD, and the drive's WAF over the feed.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use wafsim_core::units::human;
use wafsim_experiment::run::stream::Streams;
use wafsim_nbd::client::ServerAddr;
use wafsim_nbd::feed::{feed, FeedOptions, FeedProgress, PhaseFed};

/// Drive a served drive with an experiment's traffic, as a live NBD client: every phase's
/// sources (a store model's block I/O, fio jobs, traces) built as `wafsim run` builds them and
/// sent one command at a time, each write through the export of its namespace and placement
/// handle (`NAME@K`). Fed to a `wafsim serve` drive that starts as the run's does, the drive
/// ends where `wafsim run` ends; in between, `wafsim nvme ... --server` shows it live.
///
/// Example: wafsim serve experiments/kv/four-aerospike.toml --variant shared-fdp --scale 0.0001 &
///          wafsim feed experiments/kv/four-aerospike.toml --variant shared-fdp --scale 0.0001 --skip-reads
#[derive(clap::Args)]
pub struct FeedArgs {
    /// The experiment whose traffic to send (the one the server serves).
    pub file: PathBuf,
    /// The NBD server: nbd://HOST[:PORT] or nbd+unix:///?socket=PATH.
    #[arg(long, default_value = "nbd://127.0.0.1:10809")]
    pub server: String,
    /// The variant and scale the server serves (so namespaces and placement handles match).
    #[command(flatten)]
    pub which: crate::serve::ServedVariant,
    /// The server's control socket, read before and after the feed for the drive's WAF over
    /// it: host:port, unix:PATH, or "none" (default: as `wafsim serve` puts it, 127.0.0.1 and
    /// the NBD port + 1; skipped with a note when nothing answers there).
    #[arg(long)]
    pub control: Option<String>,
    /// Send no reads: they do not change the drive's WAF, and a store's reads are most of its
    /// commands (counted and reported as skipped).
    #[arg(long)]
    pub skip_reads: bool,
    /// Send each command of a source with a clock (a store's clients at a rate) at its time,
    /// wall clock = model time from the phase's start: with `wafsim serve --pace`, the store's
    /// I/O meets the modelled drive's latency. Without it, commands go as fast as replies come.
    #[arg(long)]
    pub real_time: bool,
}

/// Where to read the drive's state: the flag, or serve's default beside a TCP server.
fn control_of(args: &FeedArgs, server: &ServerAddr) -> (Option<String>, bool) {
    match (args.control.as_deref(), server) {
        (Some("none"), _) => (None, true),
        (Some(a), _) => (Some(a.to_string()), true),
        (None, ServerAddr::Tcp(a)) => {
            let port = a.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).and_then(|p| p.checked_add(1));
            (port.map(|p| format!("127.0.0.1:{p}")), false)
        }
        (None, ServerAddr::Unix(p)) => (Some(format!("unix:{}.ctl", p.display())), false),
    }
}

/// Each drive's state document (`STATE N` until the server says there is no drive N).
fn capture(control: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for d in 0.. {
        // The server answers an error for the first drive it does not have.
        match crate::nvme::control_request(control, &format!("STATE {d}")) {
            Ok(reply) => out.push(reply),
            Err(e) if d == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(out)
}

/// Host and media bytes written between two drive states, as `wafsim run` counts them (media:
/// host, GC, padding and pSLC-fold mapping units, less uncounted SLC programs).
fn window(before: &str, after: &str) -> Result<(u64, u64)> {
    use wafsim_report::nvme::drive::DriveState;
    let parse = |t: &str| DriveState::from_json(t).map_err(|e| anyhow!("the server's drive state: {e}"));
    let (b, a) = (parse(before)?, parse(after)?);
    let media = |s: &DriveState| {
        let c = &s.counters;
        (c.host_units + c.gc_units + c.pad_units + c.fold_units - c.uncounted_slc_units) * s.mapping_unit as u64
    };
    if a.counters.host_write_bytes < b.counters.host_write_bytes {
        bail!("the drive's counters went backwards during the feed (was the server restarted without --backing?)");
    }
    Ok((a.counters.host_write_bytes - b.counters.host_write_bytes, media(&a).saturating_sub(media(&b))))
}

fn print_phase(p: &PhaseFed) {
    let s = &p.sent;
    let cmds = s.reads + s.writes + s.trims + s.flushes;
    let secs = p.elapsed.as_secs_f64();
    println!(
        "phase {:?}{}: {cmds} commands in {secs:.1} s ({:.0}/s): {} writes ({}), {} reads ({}){}, {} trims ({}), {} flushes",
        p.name,
        if p.measured { "" } else { " (unmeasured)" },
        cmds as f64 / secs.max(1e-9),
        s.writes,
        human(s.write_bytes),
        s.reads,
        human(s.read_bytes),
        if s.skipped_reads > 0 { format!(" + {} skipped", s.skipped_reads) } else { String::new() },
        s.trims,
        human(s.trim_bytes),
        s.flushes
    );
    if p.model_ns > 0 {
        println!("  model time covered: {:.1} s", p.model_ns as f64 / 1e9);
    }
    if p.late.0 > 0 {
        println!("  {} commands sent more than 1 ms after their time (the server or this host could not keep up): at most {:.1} ms late", p.late.0, p.late.1.as_secs_f64() * 1e3);
    }
    for (name, ns, st) in &p.jobs {
        println!("  {name} ({ns}): {} writes ({}), {} reads ({}), {} trims ({})", st.write_ios, human(st.write_bytes), st.read_ios, human(st.read_bytes), st.trim_ios, human(st.trim_bytes));
    }
    for (name, fs, f) in &p.rows {
        let metrics: Vec<String> = f.metrics.iter().map(|(k, v)| format!("{k} {v:.4}")).collect();
        let ratio = if f.app_write_bytes > 0 { format!("{:.3}", f.dev_write_bytes as f64 / f.app_write_bytes as f64) } else { "n/a".into() };
        println!("  {name} [{fs}]: application {}, to the drive {} ({ratio} per application byte){}", human(f.app_write_bytes), human(f.dev_write_bytes), if metrics.is_empty() { String::new() } else { format!("; {}", metrics.join(", ")) });
    }
    for n in &p.notes {
        println!("  note: {n}");
    }
}

/// `wafsim feed`.
pub fn run_feed(args: FeedArgs) -> Result<()> {
    let server = ServerAddr::parse(&args.server).map_err(|e| anyhow!("--server {e}"))?;
    let v = crate::serve::load_variant(&args.file, &args.which)?;
    let streams = Streams::new(&v.spec).map_err(|e| anyhow!("{}, variant {:?}: {e:#}", args.file.display(), v.name))?;
    for w in &streams.warnings {
        eprintln!("wafsim feed: warning: {w}");
    }
    let (control, explicit) = control_of(&args, &server);
    let before = match &control {
        Some(c) => match capture(c) {
            Ok(b) => Some(b),
            Err(e) if explicit => return Err(e.context("--control: reading the drive's state before the feed")),
            Err(e) => {
                eprintln!("wafsim feed: note: no drive state at {c} ({e:#}); the drive's WAF over the feed is not reported (give --control)");
                None
            }
        },
        None => None,
    };
    // A drive that starts elsewhere than the run's ends elsewhere too: say so before feeding.
    if let Some(first) = before.as_ref().and_then(|b| b.first()) {
        let history = v.spec.history()?;
        let state = wafsim_report::nvme::drive::DriveState::from_json(first).map_err(|e| anyhow!("the drive state at the control socket: {e}"))?;
        if state.counters.host_write_bytes == 0 && history.kind != wafsim_experiment::schema::HistoryKind::Fresh {
            eprintln!(
                "wafsim feed: warning: the served drive has never been written, but `wafsim run` starts this experiment from a history ({}): serve it with --precondition (a sequential fill) or a [history] table for the run's starting point",
                history.describe()
            );
        }
    }
    eprintln!("wafsim feed: variant {:?} at scale {} to {server}", v.name, v.spec.scale);
    let t0 = Instant::now();
    let mut report = |p: &FeedProgress| {
        eprintln!("wafsim feed: phase {}/{} {:?}: {} commands, {} written, {:.0} s", p.phase.0 + 1, p.phase.1, p.name, p.commands, human(p.write_bytes), p.elapsed.as_secs_f64());
    };
    let opts = FeedOptions { skip_reads: args.skip_reads, real_time: args.real_time };
    let fed = feed(&streams, &server, &opts, &mut report).map_err(|e| anyhow!("{}, variant {:?}: {e}", args.file.display(), v.name))?;
    for p in &fed {
        print_phase(p);
    }
    if fed.iter().all(|p| p.sent.writes + p.sent.reads + p.sent.trims + p.sent.skipped_reads == 0) {
        bail!("{}: the experiment's sources issued no I/O (check the amounts and namespaces)", args.file.display());
    }
    for (pi, p) in fed.iter().enumerate() {
        if streams.stops_when_steady(pi) {
            println!("note: phase {:?} stops at steady state in `wafsim run`; fed here to its sources' end ({} written)", p.name, human(p.sent.write_bytes));
        }
    }
    if let (Some(c), Some(before)) = (&control, before) {
        let after = capture(c).map_err(|e| e.context("reading the drive's state after the feed"))?;
        for (d, (b, a)) in before.iter().zip(&after).enumerate() {
            let (host, media) = window(b, a)?;
            let waf = if host == 0 { "n/a (no host writes)".to_string() } else { format!("{:.4}", media as f64 / host as f64) };
            println!("drive {d} over the feed: WAF {waf} ({} host, {} media written)", human(host), human(media));
        }
    }
    eprintln!("wafsim feed: done in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}
