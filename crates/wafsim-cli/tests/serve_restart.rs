//! `wafsim serve --backing DIR` across restarts, with the Debian fio package over NBD: a server
//! killed with SIGKILL at random moments (while a client writes) and started again keeps every
//! write that was acknowledged and flushed, and its drive is no older than the last flush;
//! SIGTERM stops it cleanly with the final state written; the control socket answers while an
//! idle client holds a connection to it, and stays on loopback when NBD listens on all
//! interfaces.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fio, have_fio, tmpdir, wafsim, Served};
use wafsim_report::nvme::drive::DriveState;

const EXPERIMENT: &str = "experiments/quickstart.toml";
const REGION: u64 = 4 << 20;

/// fio's arguments for region `r` of vm1: random 4 KiB writes with a verification header in
/// every block, seeded by the region (a verify-only run must see the same job).
fn region_job(s: &Served, r: u64) -> Vec<String> {
    vec![
        format!("--name=region{r}"),
        "--ioengine=nbd".into(),
        format!("--uri={}", s.uri("vm1")),
        "--rw=randwrite".into(),
        "--bs=4k".into(),
        format!("--offset={}", r * REGION),
        format!("--size={REGION}"),
        format!("--randseed={}", 1000 + r),
        "--verify=crc32c".into(),
    ]
}

#[test]
fn sigkill_at_random_moments_loses_no_flushed_write_and_no_drive_state() {
    if !have_fio() {
        return;
    }
    let dir = tmpdir("restart");
    let backing = dir.join("kept");
    let backing_arg = backing.to_str().unwrap().to_string();
    let extra = ["--backing", backing_arg.as_str()];
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rand = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let rounds = 8u64;
    let mut flushed = 0u64;
    let mut before = String::new();
    for r in 0..rounds {
        if r == 3 || r == 6 {
            // Killed while starting (loading, replaying or writing its first checkpoint).
            let mut child = Command::new(env!("CARGO_BIN_EXE_wafsim"))
                .args(["serve", EXPERIMENT, "--variant", "no-fdp", "--listen", "127.0.0.1:0", "--control", "none", "--backing", &backing_arg])
                .current_dir(common::repo())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(20 + rand(400)));
            child.kill().unwrap();
            child.wait().unwrap();
        }
        let s = Served::start(EXPERIMENT, "no-fdp", None, &extra);
        let now = s.state_now();
        // Before this round's flushed writes: the capture the last WAF check starts from (the
        // noise client may not get a write in before the kill on a busy machine).
        before = s.state_json();
        assert!(now.counters.host_write_bytes >= flushed, "round {r}: the drive went back to {} host bytes; {flushed} were flushed", now.counters.host_write_bytes);
        // Written and flushed (fio's end_fsync sends NBD_CMD_FLUSH) before the kill.
        let mut job = region_job(&s, r);
        job.extend(["--do_verify=0".to_string(), "--end_fsync=1".to_string()]);
        fio(&dir, &job);
        let st = s.state_now();
        flushed = st.counters.host_write_bytes;
        assert!(flushed >= now.counters.host_write_bytes + REGION, "round {r}: the region's writes did not reach the drive");
        // A second client writes on while the kill comes.
        let mut noise = Command::new("fio")
            .args(["--name=noise", "--ioengine=nbd", &format!("--uri={}", s.uri("vm2")), "--rw=randwrite", "--bs=16k", "--size=64m", "--time_based", "--runtime=30"])
            .arg(format!("--randseed={r}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100 + rand(500)));
        s.kill_9();
        let _ = noise.kill();
        let _ = noise.wait();
    }
    // Every region reads back as written, and the drive kept everything flushed.
    let s = Served::start(EXPERIMENT, "no-fdp", None, &extra);
    for r in 0..rounds {
        let mut job = region_job(&s, r);
        job.push("--verify_only".into());
        fio(&dir, &job);
    }
    let after = s.state_json();
    let last = DriveState::from_json(&after).unwrap();
    assert!(last.counters.host_write_bytes >= flushed, "the drive went back to {} host bytes; {flushed} were flushed", last.counters.host_write_bytes);
    // The WAF between a capture before the last round's writes and one after the restart.
    std::fs::write(dir.join("before.json"), &before).unwrap();
    std::fs::write(dir.join("after.json"), &after).unwrap();
    let out = wafsim(&["waf", dir.join("before.json").to_str().unwrap(), dir.join("after.json").to_str().unwrap()]);
    assert!(out.status.success(), "wafsim waf: {}", String::from_utf8_lossy(&out.stderr));
    let (err, _) = s.stop();
    assert!(err.contains("drive: continued from"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_cleanly_and_writes_the_final_state() {
    let dir = tmpdir("sigterm");
    let state = dir.join("state.json");
    let backing = dir.join("kept");
    let s = Served::start(EXPERIMENT, "no-fdp", Some(&state), &["--backing", backing.to_str().unwrap()]);
    // No client: what matters is what a signal leaves on disk.
    let pid = s.pid();
    let t0 = Instant::now();
    let ok = Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success();
    assert!(ok);
    let (status, err) = s.wait_exit();
    assert!(status.success(), "SIGTERM: exit {status:?}: {err}");
    assert!(t0.elapsed() < Duration::from_secs(10), "SIGTERM took {:?}", t0.elapsed());
    assert!(err.contains("wafsim serve: stopped"), "{err}");
    assert!(DriveState::from_json(&std::fs::read_to_string(&state).unwrap()).is_ok());
    // The kept directory has its checkpoint and a fresh journal, and no leftovers.
    let mut names: Vec<String> = std::fs::read_dir(&backing).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert!(names.contains(&"drive.snap".to_string()) && names.iter().any(|n| n.starts_with("journal.")), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    // A restart without --backing keeps the earlier state file aside instead of overwriting it.
    let s = Served::start(EXPERIMENT, "no-fdp", Some(&state), &[]);
    let (err, _) = s.stop();
    assert!(err.contains("kept as") && dir.join("state.prev").exists(), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_idle_control_client_blocks_no_one_and_control_stays_on_loopback() {
    let s = Served::start(EXPERIMENT, "no-fdp", None, &[]);
    // Clients that connect and say nothing.
    let idle: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(&s.control).unwrap()).collect();
    let t0 = Instant::now();
    let out = wafsim(&["nvme", "smart-log", "--server", &s.control]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t0.elapsed() < Duration::from_secs(3), "a control request waited {:?} behind idle clients", t0.elapsed());
    // The idle ones are closed after the control timeout.
    let mut c = &idle[0];
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(c.read(&mut buf).unwrap_or(0), 0, "an idle control client is disconnected");
    s.stop();

    // NBD on every interface: a warning, and the control socket on loopback.
    let port = common::free_port_pair();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wafsim"))
        .args(["serve", EXPERIMENT, "--variant", "no-fdp", "--listen", &format!("0.0.0.0:{port}"), "--duration", "1"])
        .current_dir(common::repo())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
    assert!(err.contains("warning: the NBD server listens on 0.0.0.0") && err.contains("no authentication"), "{err}");
    assert!(err.contains(&format!("control: 127.0.0.1:{}", port + 1)), "{err}");
}
