//! `wafsim bench --nbd`: IOPS of the NBD server with the drive's simulation on every request,
//! under the real fio (`ioengine=nbd`, 4 KiB random writes, iodepth 16, loopback), side by side
//! with `nbdkit memory` (a plain RAM disk, Debian's `nbdkit`) under the same job, in alternating
//! rounds on the same machine.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use wafsim_core::blockdev::BlockDevice;
use wafsim_nbd::sim::{self, Backing, LiveDrive};
use wafsim_nbd::{Config, Server};

/// The drive served: the 7.68 TB enterprise TLC preset at 1/10,000 (768 MB: both servers hold
/// every byte in memory after the warm-up), preconditioned, so random writes make GC copy from
/// the first round on.
const PRESET: &str = "enterprise-tlc-7.68tb";
const SCALE: f64 = 1e-4;

/// Unmeasured: one sequential pass over the export, so both servers have allocated their memory
/// (a sparse store's first writes allocate; measured, they favour whichever was written first).
fn warm_up(uri: &str, size: &str) -> Result<()> {
    let st = Command::new("fio")
        .args(["--name=warmup", "--ioengine=nbd", "--rw=write", "--bs=1m", "--iodepth=4"])
        .arg(format!("--uri={uri}"))
        .arg(format!("--size={size}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("run fio (apt-get install fio)")?;
    if !st.status.success() {
        bail!("fio warm-up against {uri}: {}", String::from_utf8_lossy(&st.stderr));
    }
    Ok(())
}

/// One round's fio job against `uri`.
fn fio_round(uri: &str, size: &str, seconds: u32, dir: &Path) -> Result<f64> {
    let out = dir.join("bench-nbd-fio.json");
    let st = Command::new("fio")
        .args(["--name=bench", "--ioengine=nbd", "--rw=randwrite", "--bs=4k", "--iodepth=16", "--time_based", "--randseed=1", "--output-format=json"])
        .arg(format!("--uri={uri}"))
        .arg(format!("--size={size}"))
        .arg(format!("--runtime={seconds}"))
        .arg(format!("--output={}", out.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("run fio (apt-get install fio)")?;
    if !st.status.success() {
        bail!("fio against {uri}: {}", String::from_utf8_lossy(&st.stderr));
    }
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out)?)?;
    let job = &j["jobs"][0];
    if job["error"] != 0 {
        bail!("fio against {uri}: job error {}", job["error"]);
    }
    job["write"]["iops"].as_f64().ok_or_else(|| anyhow!("fio output without write iops"))
}

fn wait_for(port: u16) -> Result<()> {
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if t0.elapsed() > Duration::from_secs(20) {
            bail!("nothing listens on 127.0.0.1:{port} after 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// `nbdkit memory` on a free loopback port (killed on drop).
pub(crate) struct Nbdkit(Child, pub(crate) u16);

impl Nbdkit {
    /// Started and listening, or None when nbdkit is not installed.
    pub(crate) fn start(bytes: u64) -> Result<Option<Nbdkit>> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = match Command::new("nbdkit")
            .args(["-f", "--exit-with-parent", "-i", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .arg("memory")
            .arg(bytes.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).context("start nbdkit"),
        };
        let k = Nbdkit(child, port);
        wait_for(port)?;
        Ok(Some(k))
    }
}

impl Drop for Nbdkit {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Medians and rounds of one server.
pub struct NbdCase {
    pub name: String,
    pub rounds: Vec<f64>,
    pub median: f64,
}

/// What `wafsim bench --nbd` measured.
pub struct NbdBench {
    pub cases: Vec<NbdCase>,
    /// The simulated drive's WAF over the measured rounds (GC was active).
    pub waf: f64,
    pub seconds_per_round: u32,
}

/// Run `rounds` alternating rounds of `seconds` each: wafsim serve, then nbdkit memory (when
/// installed).
pub fn run(rounds: u32, seconds: u32, progress: impl Fn(&str)) -> Result<NbdBench> {
    if rounds == 0 || seconds == 0 {
        bail!("bench --nbd: need at least one round of at least one second");
    }
    let dir = std::env::temp_dir().join(format!("wafsim-bench-nbd-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut vs = wafsim_experiment::parse_experiment(&format!("[device]\npreset = {PRESET:?}\n"), PRESET)?;
    let s = SCALE;
    wafsim_experiment::plan::scale::scale_spec(&mut vs[0].spec, s)?;
    let stack = wafsim_experiment::run::build_stack(&vs[0].spec)?;
    let drive = LiveDrive::new(stack).map_err(|e| anyhow!(e))?;
    progress(&format!("precondition {PRESET} at scale {s}"));
    drive.precondition().map_err(|e| anyhow!(e))?;
    let bytes = drive.lock().stack.target().ns_bytes[0];
    let exports = sim::exports(&drive, Backing::Memory).map_err(|e| anyhow!(e))?;
    let server = Arc::new(Server::new(exports, Config::default()));
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve_tcp(listener))
    };
    let kit = Nbdkit::start(bytes)?;
    if kit.is_none() {
        progress("nbdkit not found (apt-get install nbdkit): wafsim serve alone");
    }
    // fio's job covers the export (nbdkit's is the same size).
    let size = format!("{}", bytes / 4096 * 4096);
    progress("warm-up: one sequential pass of 1 MiB writes over each export");
    warm_up(&format!("nbd://127.0.0.1:{port}/"), &size)?;
    if let Some(k) = &kit {
        warm_up(&format!("nbd://127.0.0.1:{}/", k.1), &size)?;
    }
    let start = {
        let live = drive.lock();
        live.stack.devices[0].counters().clone()
    };
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for r in 1..=rounds {
        let w = fio_round(&format!("nbd://127.0.0.1:{port}/"), &size, seconds, &dir)?;
        ours.push(w);
        let line = match &kit {
            Some(k) => {
                let n = fio_round(&format!("nbd://127.0.0.1:{}/", k.1), &size, seconds, &dir)?;
                theirs.push(n);
                format!("round {r}/{rounds}: wafsim serve {w:.0} IOPS, nbdkit memory {n:.0} IOPS")
            }
            None => format!("round {r}/{rounds}: wafsim serve {w:.0} IOPS"),
        };
        progress(&line);
    }
    let waf = {
        let live = drive.lock();
        let d = live.stack.devices[0].counters().delta(&start);
        d.media_units() as f64 / d.host_units.max(1) as f64
    };
    server.shutdown_handle().shutdown();
    let _ = serving.join();
    let _ = std::fs::remove_dir_all(&dir);
    let median = wafsim_experiment::studies::bench::median;
    let mut cases = vec![NbdCase { name: format!("wafsim serve ({PRESET} at {s}, preconditioned, GC active)"), median: median(&ours), rounds: ours }];
    if !theirs.is_empty() {
        cases.push(NbdCase { name: "nbdkit memory".into(), median: median(&theirs), rounds: theirs });
    }
    Ok(NbdBench { cases, waf, seconds_per_round: seconds })
}
