//! A kept drive (`wafsim_nbd::persist`): a server that dies (no final checkpoint) and is
//! started again on the same directory continues bit-identically to a drive that never stopped:
//! same drive image bytes, same counters, same command counts, for commands before and after
//! the restart. Torn journals, a crash in the middle of a checkpoint, damaged checkpoints,
//! another experiment's directory and a second server are handled as documented.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wafsim_nbd::persist::{Ident, Kept};
use wafsim_nbd::sim::{self, Backing, LiveDrive};
use wafsim_nbd::{Export, Exports};

mod common;

/// The small FDP drive of the sim tests: namespaces a (handles 0 and 1) and b (handle 2) of
/// 8 MiB on 16 MiB; the commands below overwrite it several times, so GC works.
use common::drive;

fn ident() -> Ident {
    Ident { experiment: "kept.toml".into(), variant: "default".into(), scale: 1.0 }
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wafsim-persist-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `n` commands from `seed`: 4-64 KiB writes on a, a@1 and b, some trims and reads.
fn commands(d: &Arc<LiveDrive>, seed: u64, n: usize) {
    let map = sim::exports(d, Backing::Memory).unwrap();
    let targets: Vec<Arc<dyn Export>> = ["a", "a@1", "b"].iter().map(|n| map.resolve(n).unwrap()).collect();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let buf = vec![7u8; 64 << 10];
    let mut rbuf = vec![0u8; 64 << 10];
    for _ in 0..n {
        let t = &targets[(next() % 3) as usize];
        let len = 4096 * (1 + next() % 16);
        let off = (next() % ((8 << 20) / 4096)) * 4096;
        let len = len.min((8 << 20) - off) as usize;
        match next() % 10 {
            0 => t.trim(off, len as u64).unwrap(),
            1 => t.read(off, &mut rbuf[..len]).unwrap(),
            _ => t.write(off, &buf[..len], false).unwrap(),
        }
    }
}

/// Everything that must match: each drive's image bytes and the command counts.
fn fingerprint(d: &LiveDrive) -> (Vec<Vec<u8>>, u64, u64) {
    let live = d.lock();
    let images = live
        .stack
        .devices
        .iter()
        .map(|dev| {
            let mut v = Vec::new();
            dev.model().device().save_image_to(&mut v).unwrap();
            v
        })
        .collect();
    (images, live.write_commands, live.read_commands)
}

fn waf(d: &LiveDrive) -> f64 {
    use wafsim_core::blockdev::BlockDevice;
    let live = d.lock();
    let c = live.stack.devices[0].counters();
    c.media_units() as f64 / c.host_units as f64
}

/// Start a kept drive in `dir` (continuing what is there) with its first checkpoint taken.
fn start(dir: &Path) -> (Arc<LiveDrive>, Kept, u64) {
    let d = drive();
    let mut k = Kept::open(dir, ident(), false, true).unwrap();
    let replayed = if k.has_drive() { k.restore(&d).unwrap().replayed } else { 0 };
    k.checkpoint(&d, 0).unwrap();
    (d, k, replayed)
}

#[test]
fn a_killed_server_continues_as_if_it_never_stopped() {
    let dir = tmpdir("kill");
    let reference = drive();
    let (d, mut k, _) = start(&dir);
    commands(&d, 1, 3000);
    commands(&reference, 1, 3000);
    k.checkpoint(&d, 5).unwrap();
    commands(&d, 2, 2500);
    commands(&reference, 2, 2500);
    assert!(waf(&reference) > 1.2, "the commands must make GC work (WAF {})", waf(&reference));
    // Killed: no checkpoint at the end; the journal has the last 2500 commands.
    drop((d, k));
    let (d, k, replayed) = start(&dir);
    assert_eq!(replayed, 2500, "commands replayed from the journal");
    assert!(fingerprint(&d) == fingerprint(&reference), "the restarted drive differs from the one that never stopped");
    commands(&d, 3, 2000);
    commands(&reference, 3, 2000);
    assert!(fingerprint(&d) == fingerprint(&reference), "the drives differ after more commands");
    assert_eq!(waf(&d), waf(&reference));
    drop((d, k));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_record_cut_short_ends_the_replay_there() {
    let dir = tmpdir("torn");
    let reference = drive();
    let (d, k, _) = start(&dir);
    commands(&d, 4, 500);
    commands(&reference, 4, 499);
    drop((d, k));
    let journal = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("journal.")).unwrap();
    let len = std::fs::metadata(&journal).unwrap().len();
    // The last 32-byte record loses its last 7 bytes, as a write cut by a crash would.
    std::fs::OpenOptions::new().write(true).open(&journal).unwrap().set_len(len - 7).unwrap();
    let d = drive();
    let mut k = Kept::open(&dir, ident(), false, true).unwrap();
    let r = k.restore(&d).unwrap();
    assert_eq!((r.replayed, r.torn), (499, true));
    assert!(fingerprint(&d) == fingerprint(&reference));
    drop((d, k));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_crash_inside_a_checkpoint_leaves_the_previous_one_and_both_journals() {
    let dir = tmpdir("midcheckpoint");
    let side = tmpdir("midcheckpoint-side");
    std::fs::create_dir_all(&side).unwrap();
    let reference = drive();
    let (d, mut k, _) = start(&dir);
    commands(&d, 5, 1500);
    commands(&reference, 5, 1500);
    // What the directory held before the next checkpoint was renamed into place.
    let copy = |from: &Path, to: &Path| {
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            if name == "drive.snap" || name.starts_with("journal.") {
                std::fs::copy(&p, to.join(&name)).unwrap();
            }
        }
    };
    copy(&dir, &side);
    k.checkpoint(&d, 1).unwrap();
    commands(&d, 6, 1500);
    commands(&reference, 6, 1500);
    drop((d, k));
    // The crash: the old checkpoint and its journal are back, the new journal stays, and a
    // half-written checkpoint lies beside them.
    copy(&side, &dir);
    std::fs::write(dir.join("drive.snap.tmp"), b"WAFSIMG\0half").unwrap();
    let (d, k, replayed) = start(&dir);
    assert_eq!(replayed, 3000);
    assert!(fingerprint(&d) == fingerprint(&reference));
    drop((d, k));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&side);
}

#[test]
fn damaged_or_foreign_checkpoints_and_a_second_server_are_refused() {
    let dir = tmpdir("refuse");
    let (d, k, _) = start(&dir);
    commands(&d, 7, 100);
    // A second server on the same directory.
    let err = Kept::open(&dir, ident(), false, true).err().expect("a second server is refused");
    assert!(err.contains("in use by another wafsim serve") && err.contains(&format!("pid {}", std::process::id())), "{err}");
    drop((d, k));
    // Another experiment's drive.
    let other = Ident { variant: "fdp".into(), ..ident() };
    let mut k = Kept::open(&dir, other, false, true).unwrap();
    let err = k.restore(&drive()).unwrap_err();
    assert!(err.contains("holds the drive of kept.toml variant \"default\"") && err.contains("--fresh"), "{err}");
    drop(k);
    // A flipped byte in the checkpoint.
    let snap = dir.join("drive.snap");
    let mut bytes = std::fs::read(&snap).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&snap, &bytes).unwrap();
    let mut k = Kept::open(&dir, ident(), false, true).unwrap();
    let err = k.restore(&drive()).unwrap_err();
    assert!(err.contains("drive.snap") && (err.contains("checksum") || err.contains("damaged")), "{err}");
    drop(k);
    // --fresh starts over.
    let k = Kept::open(&dir, ident(), true, true).unwrap();
    assert!(!k.has_drive());
    drop(k);
    let _ = std::fs::remove_dir_all(&dir);
}
