//! `wafsim serve`: a simulated drive's namespaces as NBD exports, and a control socket that
//! answers `wafsim nvme ... --server` with the drive's state.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use wafsim_core::blockdev::BlockDevice;
use wafsim_experiment::plan::scale::{auto_scale_all, scale_spec};
use wafsim_nbd::pace::{self, Pacer};
use wafsim_nbd::persist::{Ident, Kept};
use wafsim_nbd::sim::{self, Backing, LiveDrive};
use wafsim_experiment::drives::Stack;
use wafsim_experiment::schema::ExperimentSpec;
use wafsim_nbd::{Config, ExportMap, Server};
use wafsim_time::TimingConfig;
use wafsim_report::nvme::drive::DriveState;

/// Serve a simulated drive over NBD (fixed newstyle handshake): one export per namespace of
/// the experiment (or device file), named as the experiment names them; `NAME@K` writes
/// through placement handle K. Every request runs through the drive's simulation; reads return
/// what was written. Binds to loopback unless told otherwise.
///
/// Example: wafsim serve experiments/fdp/eight-vms.toml --variant fdp
///          fio --ioengine=nbd --uri=nbd://127.0.0.1:10809/vm1 --rw=randwrite --bs=4k --size=1g --name=a
///          wafsim nvme fdp stats --server 127.0.0.1:10810
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Experiment file, device file (devices/*.toml) or preset name.
    #[arg(required_unless_present = "stop")]
    pub file: Option<PathBuf>,
    /// Stop the server whose control socket is at ADDR (it writes its --state file first).
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["listen", "unix", "variant", "scale", "full_scale", "backing", "precondition", "control", "state", "duration", "pace", "fresh"])]
    pub stop: Option<String>,
    /// TCP address to listen on.
    #[arg(long, default_value = "127.0.0.1:10809", conflicts_with = "unix")]
    pub listen: String,
    /// Listen on a Unix socket instead (`nbd+unix:///NAME?socket=PATH`).
    #[arg(long)]
    pub unix: Option<PathBuf>,
    #[command(flatten)]
    pub which: ServedVariant,
    /// Keep each namespace's data in DIR/NAME.img, and the drive itself (checkpoint and command
    /// journal), so that a server started again on DIR (after a stop, a crash or `kill -9`)
    /// continues with the data and the drive it had. One server per DIR (a lock refuses a
    /// second). The files are reused when they exist: the same experiment, variant and scale
    /// must be served (or --fresh given).
    #[arg(long, value_name = "DIR")]
    pub backing: Option<PathBuf>,
    /// With --backing: discard the drive and data kept in DIR and start over.
    #[arg(long, requires = "backing")]
    pub fresh: bool,
    /// Write every LBA once before serving (the experiment's precondition; the data reads as
    /// zeroes). Without it the drive starts fresh, or as the experiment's `[history]` table
    /// says where it has one. A drive continued from --backing keeps its own history.
    #[arg(long)]
    pub precondition: bool,
    /// Control socket for `wafsim nvme ... --server ADDR` and `wafsim serve --stop`: host:port,
    /// unix:PATH, or "none" (default: 127.0.0.1 and the NBD port + 1, also when --listen binds
    /// beyond loopback; with --unix, PATH.ctl as a Unix socket). Anyone who reaches it can
    /// stop the server and read the drive's state: there is no authentication.
    #[arg(long)]
    pub control: Option<String>,
    /// Most NBD connections served at once; a client beyond it is refused during the handshake
    /// with a message (NBD_REP_ERR_POLICY).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_connections: u32,
    /// Seconds a client may take to complete the NBD handshake before it is disconnected.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub handshake_timeout: u64,
    /// Write the drive's state (JSON, for `wafsim nvme ... --state FILE`) here every second
    /// while it changes and when the server stops (each time whole: written aside, synced and
    /// renamed). With --backing a restarted server continues the drive, so its counters go on;
    /// without, the drive starts anew and an earlier FILE is kept as FILE.prev.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Stop after this many seconds (0: until stopped through the control socket or killed).
    #[arg(long, default_value_t = 0)]
    pub duration: u64,
    /// Real-time emulation: send each reply no earlier than the wall-clock time at which the
    /// experiment's timing model completes the command (model time = wall time since the
    /// server started, 1:1), so clients see the modelled drive's latency, queueing and GC
    /// stalls instead of the host's speed; without it, replies leave as fast as possible.
    /// Needs a flash drive and `[timing] enabled = true` (with [device.geometry]); one model
    /// per drive, fed by all connections. Each connection is served one request at a time (a
    /// client's iodepth beyond 1 on one connection queues in the server, not in the model: use
    /// more connections, e.g. fio numjobs). A host slower than the model cannot make replies
    /// earlier: they then come late; those more than 200 us late are counted and reported
    /// when the server stops. The last 60 us of each wait spin (yielding the CPU) rather than
    /// sleep, for accuracy: a paced server keeps cores busier than its request rate suggests.
    #[arg(long)]
    pub pace: bool,
}

/// Which variant of an experiment is served, at which scale: `serve` and `feed` take the same
/// flags and must be given the same values.
#[derive(clap::Args)]
pub struct ServedVariant {
    /// The variant (default: the first).
    #[arg(long)]
    pub variant: Option<String>,
    /// Capacity scale, 0 < F <= 1 (default as for `wafsim run`: the drive at most 10 GB).
    #[arg(long, conflicts_with = "full_scale")]
    pub scale: Option<f64>,
    /// The drive at its full size (memory: about 2 GiB per TB for the mapping).
    #[arg(long)]
    pub full_scale: bool,
}

/// The drive state document of drive `d` (of a dedicated layout's several drives).
pub fn drive_state(drive: &LiveDrive, d: usize, started: Instant) -> Result<DriveState> {
    let live = drive.lock();
    let stack = &live.stack;
    let dev = stack.devices.get(d).ok_or_else(|| anyhow!("drive {d}: the served variant has {} drive(s)", stack.devices.len()))?;
    let cmds = (live.write_commands, live.read_commands);
    let secs = live.power_on_secs(started);
    Ok(match dev.flash() {
        Some(f) => DriveState::from_device(f, cmds, secs),
        // A host layer or zoned drive: the experiment's config stands for it.
        None => DriveState::new(&stack.cfg, dev.counters(), cmds, secs),
    })
}

/// Load the experiment (or device file, or preset), pick the variant, scale it.
fn load(args: &ServeArgs) -> Result<wafsim_experiment::Variant> {
    load_variant(args.file.as_ref().expect("clap: a file unless --stop"), &args.which)
}

/// The variant (default: the first) of experiment, device file or preset `f`, at its scale, at
/// full scale, or at the scale `wafsim run` would choose: what `serve` serves and `feed` feeds,
/// so both choose alike.
pub(crate) fn load_variant(f: &Path, which: &ServedVariant) -> Result<wafsim_experiment::Variant> {
    let ServedVariant { variant, scale, full_scale } = which;
    let (variant, scale, full_scale) = (variant.as_deref(), *scale, *full_scale);
    let mut all = if !f.exists() && wafsim_experiment::load::presets::PRESETS.iter().any(|(n, _)| Path::new(n) == f) {
        wafsim_experiment::parse_experiment(&format!("[device]\npreset = {:?}\n", f.display().to_string()), &format!("preset {}", f.display()))?
    } else {
        wafsim_experiment::load_experiment(f)?
    };
    let auto = auto_scale_all(all.iter().map(|v| &v.spec))?;
    let i = match variant {
        None => 0,
        Some(want) => all.iter().position(|v| v.name == want).ok_or_else(|| {
            let names: Vec<_> = all.iter().map(|v| v.name.as_str()).collect();
            anyhow!("no variant named {want:?} in {} (variants: {})", f.display(), names.join(", "))
        })?,
    };
    let mut v = all.swap_remove(i);
    let s = if full_scale { 1.0 } else { scale.unwrap_or(auto) };
    scale_spec(&mut v.spec, s).with_context(|| format!("variant {:?}", v.name))?;
    Ok(v)
}

/// Where the control socket listens, from --control / --listen / --unix: loopback unless
/// asked otherwise, whatever --listen binds.
fn control_addr(args: &ServeArgs) -> Result<Option<String>> {
    match args.control.as_deref() {
        Some("none") => Ok(None),
        Some(a) => Ok(Some(a.to_string())),
        None if args.unix.is_some() => Ok(Some(format!("unix:{}.ctl", args.unix.as_ref().expect("checked").display()))),
        None => {
            let (_, port) = args.listen.rsplit_once(':').ok_or_else(|| anyhow!("--listen {:?}: expected HOST:PORT", args.listen))?;
            let port: u16 = port.parse().map_err(|_| anyhow!("--listen {:?}: port is not a number", args.listen))?;
            if port == 0 {
                bail!("--listen with port 0 needs an explicit --control (or --control none)");
            }
            Ok(Some(format!("127.0.0.1:{}", port.checked_add(1).ok_or_else(|| anyhow!("--listen port 65535: give --control"))?)))
        }
    }
}

/// One control request: `STATE [N]` (drive N's state as JSON), `STOP`.
fn answer_control(line: &str, drive: &LiveDrive, started: Instant, stop: &AtomicBool) -> String {
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("STATE"), n, None) => {
            let d = match n.map(str::parse::<usize>) {
                None => 0,
                Some(Ok(d)) => d,
                Some(Err(_)) => return format!("ERR STATE {}: expected a drive number\n", n.unwrap_or_default()),
            };
            match drive_state(drive, d, started) {
                Ok(s) => s.to_json() + "\n",
                Err(e) => format!("ERR {e:#}\n"),
            }
        }
        (Some("STOP"), None, None) => {
            stop.store(true, Ordering::SeqCst);
            "OK stopping\n".to_string()
        }
        _ => format!("ERR unknown request {:?}: expected \"STATE [N]\" or \"STOP\"\n", line.trim()),
    }
}

/// Control connections answered at once; one beyond is told so and closed.
const CONTROL_CONNECTIONS: usize = 16;
/// How long a control client may take to send its request line or take its reply.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);

/// Answer one control connection (one request line, one reply, close).
fn control_conn<S: std::io::Read + Write>(s: S, drive: &LiveDrive, started: Instant, stop: &AtomicBool) {
    let mut r = BufReader::new(s);
    let mut line = String::new();
    // A line longer than a request can be is not one; the limit keeps a stray client from
    // growing the buffer.
    if Read::take(&mut r, 256).read_line(&mut line).is_err() {
        return;
    }
    let reply = answer_control(&line, drive, started, stop);
    let _ = r.get_mut().write_all(reply.as_bytes());
}

/// Accept control connections for ever, each on its own thread with timeouts, so an idle or
/// slow client delays no one else (nor `--stop`).
fn control_loop<S, I>(incoming: I, timeouts: impl Fn(&S) + Send + 'static, drive: Arc<LiveDrive>, started: Instant, stop: Arc<AtomicBool>)
where
    S: std::io::Read + Write + Send + 'static,
    I: Iterator<Item = std::io::Result<S>>,
{
    let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for mut s in incoming.flatten() {
        timeouts(&s);
        if active.load(Ordering::SeqCst) >= CONTROL_CONNECTIONS {
            let _ = s.write_all(format!("ERR busy: {CONTROL_CONNECTIONS} control requests in progress; try again\n").as_bytes());
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let (drive, stop, mine) = (drive.clone(), stop.clone(), active.clone());
        let spawned = std::thread::Builder::new().name("serve-control".into()).spawn(move || {
            control_conn(s, &drive, started, &stop);
            mine.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            // No thread to answer it: the connection closes, the count is given back.
            active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Answer `wafsim nvme ... --server ADDR` (host:port or unix:PATH) and `STOP` on a thread of
/// its own, for as long as the process runs.
pub(crate) fn spawn_control(addr: &str, drive: &Arc<LiveDrive>, started: Instant, stop: &Arc<AtomicBool>) -> Result<()> {
    let (drive, stop) = (drive.clone(), stop.clone());
    if let Some(path) = addr.strip_prefix("unix:") {
        let _ = std::fs::remove_file(path);
        let l = std::os::unix::net::UnixListener::bind(path).with_context(|| format!("--control {addr}: cannot listen there"))?;
        std::thread::spawn(move || {
            let t = |s: &std::os::unix::net::UnixStream| {
                let _ = s.set_read_timeout(Some(CONTROL_TIMEOUT));
                let _ = s.set_write_timeout(Some(CONTROL_TIMEOUT));
            };
            control_loop(l.incoming(), t, drive, started, stop)
        });
    } else {
        let l = TcpListener::bind(addr).with_context(|| format!("--control {addr}: cannot listen there"))?;
        warn_exposure("the control socket", l.local_addr());
        std::thread::spawn(move || {
            let t = |s: &std::net::TcpStream| {
                let _ = s.set_read_timeout(Some(CONTROL_TIMEOUT));
                let _ = s.set_write_timeout(Some(CONTROL_TIMEOUT));
            };
            control_loop(l.incoming(), t, drive, started, stop)
        });
    }
    Ok(())
}

/// Write the drive state file whole (aside, synced, renamed): a reader or a crash never leaves
/// half a document.
fn write_state(path: &Path, drive: &LiveDrive, started: Instant) -> Result<()> {
    let s = drive_state(drive, 0, started)?;
    wafsim_nbd::persist::write_atomically(path, s.to_json().as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}

/// Warn when a socket listens beyond loopback: NBD here has no authentication and no TLS.
fn warn_exposure(what: &str, addr: std::io::Result<std::net::SocketAddr>) {
    if let Ok(a) = addr {
        if !a.ip().is_loopback() {
            eprintln!("wafsim serve: warning: {what} listens on {a}, beyond loopback: anyone who can reach it can {} (no authentication, no TLS)", if what == "the control socket" { "read the drive's state and stop the server" } else { "read and write the namespaces" });
        }
    }
}

/// Where the drive comes from: kept in --backing, or the experiment's start.
pub(crate) fn start_drive(precondition: bool, v: &wafsim_experiment::Variant, drive: &Arc<LiveDrive>, kept: Option<&mut Kept>) -> Result<String> {
    if let Some(k) = kept {
        if k.has_drive() {
            let r = k.restore(drive).map_err(|e| anyhow!(e))?;
            let mut said = format!("continued from {} ({} command(s) replayed from the journal", k.dir().display(), r.replayed);
            said += if r.torn { "; its last record was cut short by the crash and dropped)" } else { ")" };
            if precondition || v.spec.history.is_some() {
                said += "; --precondition and [history] apply to a new drive only";
            }
            return Ok(said);
        }
    }
    if precondition {
        drive.precondition().map_err(|e| anyhow!(e))?;
        return Ok("sequential fill (--precondition)".into());
    }
    if v.spec.history.is_some() {
        let mut live = drive.lock();
        return wafsim_experiment::run::history::prepare(&v.spec, &mut live.stack).context("[history]");
    }
    Ok("fresh (every LBA unmapped)".into())
}

/// A served variant's drives, built after its memory is checked (refused before allocating
/// rather than killed by the allocator), with the timing configurations `pace` needs (checked
/// here, before a possibly long precondition): what `serve` and `attach` serve.
pub(crate) fn build_drives(file: &Path, v: &wafsim_experiment::Variant, pace: bool) -> Result<(Stack, Option<Vec<TimingConfig>>)> {
    wafsim_experiment::run::check_variant_memory(v)?;
    let stack = wafsim_experiment::run::build_stack(&v.spec).with_context(|| format!("variant {:?}", v.name))?;
    let timing = if pace { Some(pace::timing_configs(&v.spec, &stack).map_err(|e| anyhow!("{}, variant {:?}: {e}", file.display(), v.name))?) } else { None };
    Ok((stack, timing))
}

/// The exports of a drive whose history has run: paced from now on when `timing` is given
/// (the timelines start after the history, which is untimed as in `wafsim run`), else untimed.
pub(crate) fn drive_exports(drive: &Arc<LiveDrive>, timing: Option<Vec<TimingConfig>>, spec: &ExperimentSpec, backing: Backing<'_>) -> Result<(Option<Arc<Pacer>>, ExportMap)> {
    let pacer = match timing {
        Some(configs) => Some(Pacer::new(drive.clone(), configs, pace::namespace_queues(spec)).map_err(|e| anyhow!(e))?),
        None => None,
    };
    let exports = match &pacer {
        Some(p) => pace::paced_exports(p, backing),
        None => sim::exports(drive, backing),
    }
    .map_err(|e| anyhow!(e))?;
    Ok((pacer, exports))
}

/// `wafsim serve`.
pub fn run_serve(args: ServeArgs) -> Result<()> {
    if let Some(addr) = &args.stop {
        return stop_server(addr);
    }
    let v = load(&args)?;
    let file = args.file.as_ref().expect("clap: a file unless --stop");
    let (stack, timing) = build_drives(file, &v, args.pace)?;
    let drive = LiveDrive::new(stack).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let mut kept = match &args.backing {
        Some(dir) => {
            let experiment = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone()).display().to_string();
            let ident = Ident { experiment, variant: v.name.clone(), scale: v.spec.scale };
            let k = Kept::open(dir, ident, args.fresh, !args.pace).map_err(|e| anyhow!(e))?;
            if args.fresh {
                for ns in &v.spec.namespace {
                    let p = sim::data_file(dir, &ns.name);
                    if p.exists() {
                        std::fs::remove_file(&p).with_context(|| format!("--fresh: cannot remove {}", p.display()))?;
                    }
                }
            }
            Some(k)
        }
        None => None,
    };
    let history = start_drive(args.precondition, &v, &drive, kept.as_mut())?;
    let mut checkpoint_cost = Duration::ZERO;
    if let Some(k) = &mut kept {
        // The drive as it starts is the first checkpoint; the journal follows it.
        let t0 = Instant::now();
        let power_on_before = drive.lock().power_on_before;
        k.checkpoint(&drive, power_on_before).with_context(|| format!("--backing {}: writing the drive's checkpoint", k.dir().display()))?;
        checkpoint_cost = t0.elapsed();
    }
    if let (Some(p), None) = (&args.state, &kept) {
        if p.exists() {
            let prev = p.with_extension("prev");
            std::fs::rename(p, &prev).with_context(|| format!("--state {}: cannot keep the earlier file", p.display()))?;
            eprintln!("wafsim serve: note: --state {} exists; this drive starts anew (keep a drive across restarts with --backing DIR), so the earlier file is kept as {}", p.display(), prev.display());
        }
    }
    let backing = match &args.backing {
        Some(dir) => Backing::Dir(dir),
        None => Backing::Memory,
    };
    let (pacer, exports) = drive_exports(&drive, timing, &v.spec, backing)?;
    let list: Vec<(String, String)> = wafsim_nbd::Exports::list(&exports);
    let config = Config { max_connections: args.max_connections as usize, handshake_timeout: Some(Duration::from_secs(args.handshake_timeout)), ..Config::default() };
    let server = Arc::new(Server::new(exports, config));
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    // SIGTERM, SIGINT and SIGHUP stop the server as STOP does: the final checkpoint and state
    // are written.
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone()).context("installing the signal handlers")?;
    }

    // NBD listener first: an address error names --listen, not the control socket.
    let (nbd_listener, at) = if let Some(path) = &args.unix {
        let _ = std::fs::remove_file(path);
        let l = std::os::unix::net::UnixListener::bind(path).with_context(|| format!("--unix {}", path.display()))?;
        (Err(l), format!("unix:{}", path.display()))
    } else {
        let l = TcpListener::bind(&args.listen).with_context(|| format!("--listen {}: cannot listen there", args.listen))?;
        warn_exposure("the NBD server", l.local_addr());
        (Ok(l), args.listen.clone())
    };

    // Control socket.
    let ctl = control_addr(&args)?;
    if let Some(addr) = &ctl {
        spawn_control(addr, &drive, started, &stop)?;
    }

    // NBD server.
    let handle = server.shutdown_handle();
    let serving = {
        let server = server.clone();
        match nbd_listener {
            Ok(l) => std::thread::spawn(move || server.serve_tcp(l)),
            Err(l) => std::thread::spawn(move || server.serve_unix(l)),
        }
    };
    eprintln!("wafsim serve: variant {:?} at scale {}, listening on {at}", v.name, v.spec.scale);
    eprintln!("  drive: {history}");
    for (name, desc) in &list {
        eprintln!("  export {name}: {desc}");
    }
    if let Some(c) = &ctl {
        eprintln!("  control: {c} (wafsim nvme ... --server {c})");
    }
    if let Some(k) = &kept {
        eprintln!("  kept in {} (data, drive checkpoint{})", k.dir().display(), if pacer.is_some() { "s every 10 s: paced drives are not journaled" } else { " and command journal" });
    }
    if pacer.is_some() {
        eprintln!("  paced: replies at the timing model's completion times (model time = wall time since start)");
    }

    // Until stopped: the state file follows the drive, checkpoints bound the journal.
    let power_on = |started: Instant| drive.lock().power_on_secs(started);
    let activity = |drive: &LiveDrive| {
        let live = drive.lock();
        live.write_commands + live.read_commands + live.stack.devices.iter().map(|d| d.counters().media_units()).sum::<u64>()
    };
    let mut last_written = None;
    let mut last_checkpoint = (activity(&drive), Instant::now());
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let done = stop.load(Ordering::SeqCst) || (args.duration > 0 && started.elapsed().as_secs() >= args.duration) || serving.is_finished();
        if done {
            break;
        }
        // What changed since the last checkpoint or state file (one look at the drive).
        let now = activity(&drive);
        if let Some(k) = &mut kept {
            let (a, t) = last_checkpoint;
            let journal = drive.lock().journal.as_ref().map_or(0, |j| j.records);
            let every = if pacer.is_some() { CHECKPOINT_PACED } else { CHECKPOINT_EVERY };
            // A large drive's checkpoint takes long (a full-size 7.68 TB drive's is ~16 GB):
            // at most one in every CHECKPOINT_SHARE of the time goes to them.
            let gap = checkpoint_cost * CHECKPOINT_SHARE;
            if (journal >= CHECKPOINT_RECORDS && t.elapsed() >= gap) || (now != a && t.elapsed() >= every.max(gap)) {
                let t0 = Instant::now();
                // A failed checkpoint (a full disk) leaves the previous one and the journal,
                // which still restart the drive: say so and go on serving.
                if let Err(e) = k.checkpoint(&drive, power_on(started)) {
                    eprintln!("wafsim serve: warning: --backing {}: writing the drive's checkpoint failed ({e}); the previous checkpoint and the journal still hold the drive; retrying later", k.dir().display());
                }
                checkpoint_cost = t0.elapsed();
                last_checkpoint = (now, Instant::now());
            }
        }
        if let Some(path) = &args.state {
            if last_written.is_none_or(|(n, t): (u64, Instant)| n != now && t.elapsed() >= Duration::from_secs(1)) {
                if let Err(e) = write_state(path, &drive, started) {
                    eprintln!("wafsim serve: warning: {e:#}; the previous state file stays; retrying");
                }
                last_written = Some((now, Instant::now()));
            }
        }
    }
    handle.shutdown();
    let served = match serving.join() {
        Ok(r) => r.context("NBD server"),
        Err(_) => Err(anyhow!("NBD server thread panicked")),
    };
    // Written whatever ended the serving: the drive is what the clients left.
    if let Some(k) = &mut kept {
        k.checkpoint(&drive, power_on(started)).with_context(|| format!("--backing {}: writing the drive's checkpoint", k.dir().display()))?;
    }
    if let Some(path) = &args.state {
        write_state(path, &drive, started)?;
    }
    served?;
    if let Some(p) = &args.unix {
        let _ = std::fs::remove_file(p);
    }
    if let Some(p) = ctl.as_deref().and_then(|c| c.strip_prefix("unix:")) {
        let _ = std::fs::remove_file(p);
    }
    let live = drive.lock();
    let c = live.stack.devices[0].counters();
    // Media units over host units: the figure to glance at when stopping.
    if c.host_units == 0 {
        eprintln!("wafsim serve: stopped; drive 0: no host writes, so no WAF (n/a)");
    } else {
        eprintln!("wafsim serve: stopped; drive 0: {} host bytes written, WAF {:.3}", c.host_write_bytes, c.media_units() as f64 / c.host_units as f64);
    }
    drop(live);
    if let Some(p) = &pacer {
        let s = p.stats();
        if s.late > 0 {
            eprintln!(
                "wafsim serve: paced: {} of {} completions more than 200 us late (the host could not keep up with the model): mean {:.0} us, max {:.0} us after the model's time",
                s.late,
                s.completions,
                s.late_ns as f64 / s.late as f64 / 1e3,
                s.max_late_ns as f64 / 1e3
            );
        } else {
            eprintln!("wafsim serve: paced: {} completions, none more than 200 us late", s.completions);
        }
    }
    Ok(())
}

/// A kept drive's checkpoint is rewritten at most this often while commands arrive (a restart
/// replays at most this much journal, plus [`CHECKPOINT_RECORDS`]).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(60);
/// Paced drives are not journaled: their checkpoints are what a crash leaves.
const CHECKPOINT_PACED: Duration = Duration::from_secs(10);
/// Journal records that trigger a checkpoint sooner (2^21 records: 64 MiB of journal).
const CHECKPOINT_RECORDS: u64 = 1 << 21;
/// Checkpoints are at least this many times their own duration apart.
const CHECKPOINT_SHARE: u32 = 30;

/// Ask a running server's control socket to stop.
pub fn stop_server(addr: &str) -> Result<()> {
    let reply = crate::nvme::control_request(addr, "STOP")?;
    if !reply.starts_with("OK") {
        bail!("{addr}: {}", reply.trim());
    }
    Ok(())
}
