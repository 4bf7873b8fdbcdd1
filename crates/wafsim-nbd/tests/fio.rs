//! Real-client interoperability: fio's `nbd` engine (libnbd) writes with verification headers
//! and reads everything back through this server.
//!
//! Needs `fio` on PATH built with the nbd engine (Debian's fio 3.33 is). Without it these tests
//! FAIL, so a missing tool is never mistaken for a pass; set `WAFSIM_SKIP_FIO=1` to skip them.

mod common;

use std::os::unix::net::UnixListener;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::Running;
use wafsim_nbd::{Config, ConnStats, ExportMap, MemExport, Server};

const MIB: u64 = 1 << 20;

/// `true` if fio is usable; `false` if the user asked to skip; panics otherwise.
fn fio_available() -> bool {
    if std::env::var("WAFSIM_SKIP_FIO").is_ok_and(|v| v == "1") {
        eprintln!("WAFSIM_SKIP_FIO=1: skipping the fio nbd test");
        return false;
    }
    match Command::new("fio").arg("--enghelp=nbd").output() {
        Ok(out) if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("uri") => true,
        Ok(out) => panic!(
            "fio is on PATH but has no nbd engine (`fio --enghelp=nbd` said: {}{}); install a fio built \
             with libnbd (Debian/Ubuntu package `fio`) or set WAFSIM_SKIP_FIO=1 to skip",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "fio not found on PATH ({e}); install it (`apt-get install fio`) or set WAFSIM_SKIP_FIO=1 to skip"
        ),
    }
}

/// Counts write requests seen by the server, to prove fio's I/O really went through it.
fn counting_config(writes: &Arc<AtomicU64>) -> Config {
    let w = writes.clone();
    Config {
        on_connection_end: Some(Arc::new(move |s: &ConnStats| {
            w.fetch_add(s.writes, Ordering::SeqCst);
        })),
        ..Config::default()
    }
}

/// Runs fio with JSON output; asserts exit 0, the expected job count, zero errors in every job
/// and that every job wrote and read back `bytes_per_job`.
fn run_fio(args: &[String], jobs: usize, bytes_per_job: u64) {
    eprintln!("fio {}", args.join(" "));
    // fio drops verify state files into its working directory; keep them out of the crate.
    // One directory per call: the tests run in parallel and each removes its directory.
    static CALL: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("wafsim-nbd-fio-cwd-{}-{}", std::process::id(), CALL.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("fio")
        .args(args)
        .args(["--output-format=json", "--verify_state_save=0"])
        .current_dir(&dir)
        .output()
        .expect("running fio");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "fio failed ({}):\n{stderr}\n{stdout}", out.status);
    // Deliberately tiny JSON scanning (no JSON dependency): each job object has one
    // `"jobname"` and one `"error"` key, and per-direction `"io_bytes"` (read, write, trim, ...).
    let values = |key: &str| -> Vec<u64> {
        let pat = format!("\"{key}\" : ");
        stdout
            .match_indices(&pat)
            .filter_map(|(i, _)| {
                let rest = &stdout[i + pat.len()..];
                let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
                rest[..end].parse().ok()
            })
            .collect()
    };
    let names = stdout.matches("\"jobname\" : ").count();
    assert_eq!(names, jobs, "job count in fio output:\n{stdout}");
    let errors = values("error");
    assert_eq!(errors.len(), jobs);
    assert!(errors.iter().all(|&e| e == 0), "fio job errors {errors:?}:\n{stdout}");
    assert!(!stdout.contains("verify: bad") && !stderr.contains("verify"), "verify errors:\n{stderr}");
    // read io_bytes then write io_bytes come first in each job (then trim, sync...).
    let io = values("io_bytes");
    assert!(io.len() >= jobs * 2, "{io:?}");
    let per_job = io.len() / jobs;
    for j in 0..jobs {
        let (read, write) = (io[j * per_job], io[j * per_job + 1]);
        assert_eq!(write, bytes_per_job, "job {j} bytes written");
        assert_eq!(read, bytes_per_job, "job {j} bytes verified");
    }
}

#[test]
fn fio_randwrite_verify_over_tcp() {
    if !fio_available() {
        return;
    }
    let writes = Arc::new(AtomicU64::new(0));
    let exports = ExportMap::new().with("mem", "fio target", Arc::new(MemExport::new(64 * MIB)));
    let srv = Running::start(exports, counting_config(&writes));
    let uri = format!("nbd://{}/mem", srv.addr);
    // Four jobs (four NBD connections), each with its own block size on its own 4 MiB region,
    // since concurrent jobs verifying overlapping regions would race each other.
    let mut args: Vec<String> = [
        "--ioengine=nbd",
        &format!("--uri={uri}"),
        "--rw=randwrite",
        "--size=4m",
        "--iodepth=8",
        "--verify=crc32c",
        "--do_verify=1",
        "--fsync=16",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (i, bs) in ["--bs=4k", "--bs=16k", "--bs=64k", "--bsrange=4k-128k"].iter().enumerate() {
        args.push(format!("--name=job{i}"));
        args.push(bs.to_string());
        args.push(format!("--offset={}m", 4 * i));
    }
    run_fio(&args, 4, 4 * MIB);
    srv.stop();
    assert!(writes.load(Ordering::SeqCst) >= 4 * 64, "server saw the writes");
}

#[test]
fn fio_trimwrite_verify_over_unix_socket() {
    if !fio_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("wafsim-nbd-fio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("nbd.sock");
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock).unwrap();
    let writes = Arc::new(AtomicU64::new(0));
    let exports = ExportMap::new().with("mem", "", Arc::new(MemExport::new(32 * MIB)));
    let server = Server::new(exports, counting_config(&writes));
    let handle = server.shutdown_handle();
    let t = std::thread::spawn(move || server.serve_unix(listener));

    // trimwrite trims each block before writing it, so this exercises NBD_CMD_TRIM too.
    let args: Vec<String> = vec![
        "--ioengine=nbd".into(),
        format!("--uri=nbd+unix:///mem?socket={}", sock.display()),
        "--rw=trimwrite".into(),
        "--size=4m".into(),
        "--iodepth=4".into(),
        "--verify=crc32c".into(),
        "--do_verify=1".into(),
        "--name=tw0".into(),
        "--bs=8k".into(),
        "--name=tw1".into(),
        "--bs=32k".into(),
        "--offset=8m".into(),
    ];
    run_fio(&args, 2, 4 * MIB);
    handle.shutdown();
    t.join().unwrap().unwrap();
    assert!(writes.load(Ordering::SeqCst) >= 4 * MIB / (32 * 1024));
    let _ = std::fs::remove_dir_all(&dir);
}
