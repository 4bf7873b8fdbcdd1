//! What the `wafsim serve` tests share: fio's presence, a running server stopped through its
//! control socket, fio runs with JSON output.
#![allow(dead_code)] // each test file uses its own part

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wafsim_report::nvme::drive::DriveState;

/// Whether to run: fio with its nbd engine is on PATH. A missing fio FAILS the test (a missing
/// tool is never a pass) unless `WAFSIM_SKIP_FIO=1`.
pub fn have_fio() -> bool {
    if std::env::var("WAFSIM_SKIP_FIO").is_ok_and(|v| v == "1") {
        eprintln!("WAFSIM_SKIP_FIO=1: skipping the fio-over-NBD test");
        return false;
    }
    match Command::new("fio").arg("--enghelp=nbd").output() {
        Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).contains("uri") => true,
        Ok(_) => panic!("fio has no nbd engine; install Debian's fio (built with libnbd) or set WAFSIM_SKIP_FIO=1"),
        Err(e) => panic!("fio not found ({e}); `apt-get install fio`, or set WAFSIM_SKIP_FIO=1 to skip"),
    }
}

/// The workspace root (experiment paths are relative to it).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh scratch directory for one test.
pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wafsim-serve-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A port nothing listens on now (the kernel picks it; the race with another process taking
/// it before the server binds is acceptable in a test).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A port `p` free on every interface with `p + 1` free on loopback (`wafsim serve --listen
/// HOST:p` puts its control socket on `p + 1` by default): a free port alone is not enough
/// when other tests take the next one meanwhile.
pub fn free_port_pair() -> u16 {
    loop {
        let a = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if p < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
}

/// The binary with `args`, from the workspace root, in the C locale.
pub fn wafsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wafsim")).args(args).current_dir(repo()).env("LC_ALL", "C").output().unwrap()
}

/// A running `wafsim serve`, stopped through its control socket (killed if dropped).
pub struct Served {
    child: Child,
    pub nbd: u16,
    pub control: String,
    state: Option<PathBuf>,
}

impl Served {
    /// Serve `variant` of `experiment` with `extra` flags; `state`: where it keeps its state file.
    pub fn start(experiment: &str, variant: &str, state: Option<&Path>, extra: &[&str]) -> Served {
        let nbd = free_port();
        let control = format!("127.0.0.1:{}", free_port());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wafsim"));
        cmd.args(["serve", experiment, "--variant", variant, "--listen"]).arg(format!("127.0.0.1:{nbd}")).args(["--control", &control]);
        if let Some(p) = state {
            cmd.arg("--state").arg(p);
        }
        let child = cmd.args(extra).current_dir(repo()).stderr(Stdio::piped()).spawn().expect("start wafsim serve");
        let s = Served { child, nbd, control, state: state.map(Path::to_path_buf) };
        let t0 = Instant::now();
        while TcpStream::connect(&s.control).is_err() || TcpStream::connect(("127.0.0.1", s.nbd)).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(20), "wafsim serve did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }

    /// fio's URI of `export`.
    pub fn uri(&self, export: &str) -> String {
        format!("nbd://127.0.0.1:{}/{export}", self.nbd)
    }

    /// The drive's state now, through the control socket.
    pub fn state_now(&self) -> DriveState {
        let mut c = TcpStream::connect(&self.control).unwrap();
        c.write_all(b"STATE\n").unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        DriveState::from_json(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }

    /// Stop the server: what it printed, and its final state file (when it keeps one).
    pub fn stop(mut self) -> (String, Option<DriveState>) {
        let out = wafsim(&["serve", "--stop", &self.control]);
        assert!(out.status.success(), "serve --stop: {}", String::from_utf8_lossy(&out.stderr));
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(status.success(), "wafsim serve failed: {err}");
        let state = self.state.as_ref().map(|p| DriveState::from_json(&std::fs::read_to_string(p).unwrap()).unwrap());
        (err, state)
    }
}

impl Served {
    /// Kill the server (SIGKILL: no handler runs, nothing is written on the way out).
    pub fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait for the server to exit by itself: its status and what it printed.
    pub fn wait_exit(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        (status, err)
    }

    /// The state the control socket reports, as its raw JSON (a capture for `wafsim waf`).
    pub fn state_json(&self) -> String {
        let mut c = TcpStream::connect(&self.control).unwrap();
        c.write_all(b"STATE\n").unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        s
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run fio with `args` in `dir` (JSON output to a file there); the parsed output.
pub fn fio(dir: &Path, args: &[String]) -> serde_json::Value {
    let out_path = dir.join("fio.json");
    let out = Command::new("fio")
        .args(args)
        .arg("--output-format=json")
        .arg(format!("--output={}", out_path.display()))
        .arg("--verify_state_save=0")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "fio failed: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap()
}
