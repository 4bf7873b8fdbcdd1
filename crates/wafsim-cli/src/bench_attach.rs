//! `wafsim bench --attach`: the real-stack path's speed. fio on XFS on a loop device, direct
//! I/O, 4 KiB random writes (iodepth 16) and 128 KiB sequential writes (iodepth 4), through
//! three chains, in alternating rounds on the same machine:
//!
//! 1. `wafsim attach`: the drive's simulation behind an in-process FUSE file (no NBD hop);
//! 2. `wafsim serve` + `nbdfuse`: the same simulation behind the NBD server, turned into a
//!    file by libnbd's nbdfuse (the route tried by hand before `attach` existed);
//! 3. `nbdkit memory` + `nbdfuse`: a plain RAM disk behind the same bridge, the reference.
//!
//! Both simulated drives are the 7.68 TB enterprise TLC preset at 1/10,000 (768 MB),
//! preconditioned, and their file systems are made without discarding (`mkfs.xfs -K`), so the
//! drive's GC copies from the first round on; nbdkit's device gets the same file system.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use wafsim_attach::{system, Attachment, FsKind, FsSpec, Spec};
use wafsim_core::blockdev::BlockDevice;
use wafsim_nbd::sim::{self, Backing, LiveDrive};
use wafsim_nbd::{Config, Exports, Server};

const PRESET: &str = "enterprise-tlc-7.68tb";
const SCALE: f64 = 1e-4;
/// The fio file: a third of the file system, so XFS's allocation stays simple and the drive
/// holds stale copies of the rest (GC has work).
const FILE_MIB: u64 = 256;

/// One fio job of the bench.
#[derive(Clone, Copy)]
pub struct Job {
    /// Name in the report.
    pub name: &'static str,
    rw: &'static str,
    bs: &'static str,
    iodepth: u32,
}

/// The jobs, in the order each round runs them.
pub const JOBS: [Job; 2] = [
    Job { name: "4 KiB random writes, iodepth 16", rw: "randwrite", bs: "4k", iodepth: 16 },
    Job { name: "128 KiB sequential writes, iodepth 4", rw: "write", bs: "128k", iodepth: 4 },
];

/// One chain's medians, per job: (IOPS, MB/s).
pub struct ChainResult {
    /// Which chain.
    pub name: String,
    /// Per job: every round's (IOPS, bytes per second).
    pub rounds: Vec<Vec<(f64, f64)>>,
}

impl ChainResult {
    /// Median IOPS and bytes per second of job `j`.
    pub fn median(&self, j: usize) -> (f64, f64) {
        let m = wafsim_experiment::studies::bench::median;
        let iops: Vec<f64> = self.rounds[j].iter().map(|r| r.0).collect();
        let bw: Vec<f64> = self.rounds[j].iter().map(|r| r.1).collect();
        (m(&iops), m(&bw))
    }
}

/// What `wafsim bench --attach` measured.
pub struct AttachBench {
    /// The chains, `attach` first, nbdkit last (when installed).
    pub chains: Vec<ChainResult>,
    /// Seconds per round, chain and job.
    pub seconds: u32,
    /// The WAF of `attach`'s drive over the measured rounds (host and media bytes).
    pub waf: f64,
}

/// A simulated drive of the bench, preconditioned.
fn drive() -> Result<Arc<LiveDrive>> {
    let mut vs = wafsim_experiment::parse_experiment(&format!("[device]\npreset = {PRESET:?}\n"), PRESET)?;
    wafsim_experiment::plan::scale::scale_spec(&mut vs[0].spec, SCALE)?;
    let stack = wafsim_experiment::run::build_stack(&vs[0].spec)?;
    let d = LiveDrive::new(stack).map_err(|e| anyhow!(e))?;
    d.precondition().map_err(|e| anyhow!(e))?;
    Ok(d)
}

/// A chain through nbdfuse: the FUSE file of an NBD export, a loop device on it, XFS mounted.
struct NbdfuseChain {
    nbdfuse: Child,
    fuse_dir: PathBuf,
    device: PathBuf,
    mount: PathBuf,
}

impl NbdfuseChain {
    fn start(uri: &str, dir: &Path) -> Result<NbdfuseChain> {
        let fuse_dir = dir.join("fuse");
        let mount = dir.join("mnt");
        std::fs::create_dir_all(&fuse_dir)?;
        std::fs::create_dir_all(&mount)?;
        let pidfile = dir.join("nbdfuse.pid");
        let nbdfuse = Command::new("nbdfuse").arg("-P").arg(&pidfile).arg(&fuse_dir).arg(uri).stdout(Stdio::null()).stderr(Stdio::null()).spawn().context("run nbdfuse (apt-get install libnbd-bin)")?;
        let t0 = Instant::now();
        while !pidfile.exists() {
            if t0.elapsed() > Duration::from_secs(20) {
                bail!("nbdfuse {uri}: not ready after 20 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let device = system::loop_attach(&fuse_dir.join("nbd"), 4096).map_err(|e| anyhow!(e))?;
        // From here on, Drop takes down whatever was set up.
        let c = NbdfuseChain { nbdfuse, fuse_dir, device, mount };
        system::mkfs(FsKind::Xfs, &c.device, &["-K".into()]).map_err(|e| anyhow!(e))?;
        system::mount(FsKind::Xfs, &c.device, &c.mount, "").map_err(|e| anyhow!(e))?;
        Ok(c)
    }
}

impl Drop for NbdfuseChain {
    fn drop(&mut self) {
        let _ = system::umount(&self.mount, false);
        let _ = system::loop_detach(&self.device);
        std::thread::sleep(Duration::from_millis(200));
        let _ = system::umount(&self.fuse_dir, false).or_else(|_| system::umount(&self.fuse_dir, true));
        let _ = self.nbdfuse.kill();
        let _ = self.nbdfuse.wait();
    }
}

/// fio's job `j` on `dir` for `seconds`: (IOPS, bytes per second).
fn fio(dir: &Path, job: Job, seconds: u32, warm: bool) -> Result<(f64, f64)> {
    let out = dir.join("bench-attach-fio.json");
    let mut cmd = Command::new("fio");
    cmd.args(["--name=bench", "--ioengine=libaio", "--direct=1", "--randseed=1", "--output-format=json"])
        .arg(format!("--filename={}", dir.join("bench.dat").display()))
        .arg(format!("--size={FILE_MIB}m"))
        .arg(format!("--output={}", out.display()));
    if warm {
        cmd.args(["--rw=write", "--bs=1m", "--iodepth=4"]);
    } else {
        cmd.arg(format!("--rw={}", job.rw)).arg(format!("--bs={}", job.bs)).arg(format!("--iodepth={}", job.iodepth)).arg("--time_based").arg(format!("--runtime={seconds}"));
    }
    let st = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().context("run fio (apt-get install fio)")?;
    if !st.status.success() {
        bail!("fio on {}: {}", dir.display(), String::from_utf8_lossy(&st.stderr));
    }
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out)?)?;
    let w = &j["jobs"][0]["write"];
    if j["jobs"][0]["error"] != 0 {
        bail!("fio on {}: job error {}", dir.display(), j["jobs"][0]["error"]);
    }
    Ok((w["iops"].as_f64().unwrap_or(0.0), w["bw_bytes"].as_f64().unwrap_or(0.0)))
}

/// Run `rounds` alternating rounds of `seconds` per chain and job.
pub fn run(rounds: u32, seconds: u32, progress: impl Fn(&str)) -> Result<AttachBench> {
    if rounds == 0 || seconds == 0 {
        bail!("bench --attach: need at least one round of at least one second");
    }
    wafsim_attach::preflight(&[FsKind::Xfs]).map_err(|e| anyhow!(e))?;
    for t in ["fio", "nbdfuse"] {
        if system::find_tool(t).is_none() {
            bail!("bench --attach needs `{t}` (apt-get install {})", if t == "fio" { "fio" } else { "libnbd-bin" });
        }
    }
    let dir = std::env::temp_dir().join(format!("wafsim-bench-attach-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    progress(&format!("two drives: {PRESET} at scale {SCALE}, preconditioned"));
    let ours = drive()?;
    let bytes = ours.lock().stack.target().ns_bytes[0];
    let exports = sim::exports(&ours, Backing::Memory).map_err(|e| anyhow!(e))?;
    let export = exports.resolve("").ok_or_else(|| anyhow!("the drive has no namespace"))?;
    let fs = FsSpec { kind: FsKind::Xfs, mkfs_options: vec!["-K".into()], mount_options: String::new() };
    let name = format!("bench-{}", std::process::id());
    let att = Attachment::start(Spec { name, exports: vec![("ns".into(), export, Some(fs))], mount_root: Some(dir.join("attach")), sector_size: 4096 }, &mut |s| progress(s)).map_err(|e| anyhow!(e))?;
    let attach_mnt = att.attached()[0].mount.clone().expect("made with a file system");

    let served = drive()?;
    let server = Arc::new(Server::new(sim::exports(&served, Backing::Memory).map_err(|e| anyhow!(e))?, Config::default()));
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let serving = {
        let server = server.clone();
        std::thread::spawn(move || server.serve_tcp(listener))
    };
    let serve_chain = NbdfuseChain::start(&format!("nbd://127.0.0.1:{port}/"), &dir.join("serve"))?;
    let kit = crate::bench_nbd::Nbdkit::start(bytes)?;
    let kit_chain = match &kit {
        Some(k) => Some(NbdfuseChain::start(&format!("nbd://127.0.0.1:{}/", k.1), &dir.join("nbdkit"))?),
        None => {
            progress("nbdkit not found (apt-get install nbdkit): no reference chain");
            None
        }
    };
    let mut chains: Vec<(String, PathBuf)> = vec![("wafsim attach (in-process FUSE)".into(), attach_mnt), ("wafsim serve + nbdfuse".into(), serve_chain.mount.clone())];
    if let Some(c) = &kit_chain {
        chains.push(("nbdkit memory + nbdfuse".into(), c.mount.clone()));
    }
    progress(&format!("warm-up: {FILE_MIB} MiB written sequentially on each file system"));
    for (_, m) in &chains {
        fio(m, JOBS[0], 0, true)?;
    }
    let start = ours.lock().stack.devices[0].counters().clone();
    let mut results: Vec<ChainResult> = chains.iter().map(|(n, _)| ChainResult { name: n.clone(), rounds: vec![Vec::new(); JOBS.len()] }).collect();
    for r in 1..=rounds {
        for (j, job) in JOBS.iter().enumerate() {
            let mut line = format!("round {r}/{rounds}, {}:", job.name);
            for (c, (n, m)) in chains.iter().enumerate() {
                let x = fio(m, *job, seconds, false)?;
                results[c].rounds[j].push(x);
                line += &format!(" {n} {:.0} IOPS {:.1} MB/s;", x.0, x.1 / 1e6);
            }
            progress(line.trim_end_matches(';'));
        }
    }
    let waf = {
        let live = ours.lock();
        let d = live.stack.devices[0].counters().delta(&start);
        (d.media_units() * live.stack.cfg.mapping_unit as u64) as f64 / d.host_write_bytes.max(1) as f64
    };
    drop(kit_chain);
    drop(kit);
    drop(serve_chain);
    server.shutdown_handle().shutdown();
    let _ = serving.join();
    att.teardown().map_err(|e| anyhow!(e))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(AttachBench { chains: results, seconds, waf })
}
