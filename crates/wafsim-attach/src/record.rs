//! The record of an attachment, kept in its runtime directory (`ROOT/NAME/record.json`, ROOT
//! being `/run/wafsim/attach` or `$WAFSIM_ATTACH_DIR`): the FUSE mount, the loop devices and the
//! mounts, each written down before or as soon as it exists. A running attachment holds an
//! exclusive `flock` on `ROOT/NAME/lock`; the kernel releases it when the process dies however
//! it dies, so a lock that can be taken beside a record means a crashed attachment whose pieces
//! are to be taken down ([`clean_stale`]).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{system, Error};

/// Where attachments keep their runtime directories.
pub fn runtime_root() -> PathBuf {
    std::env::var_os("WAFSIM_ATTACH_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/run/wafsim/attach"))
}

/// What an attachment has set up, as far as it got.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Record {
    /// The attaching process.
    pub pid: u32,
    /// The FUSE mount (the exports as files), once mounted.
    pub fuse: Option<PathBuf>,
    /// Loop devices set up on those files.
    pub devices: Vec<PathBuf>,
    /// File systems mounted on them.
    pub mounts: Vec<PathBuf>,
    #[serde(skip)]
    dir: PathBuf,
}

impl Record {
    /// Take the name: lock its runtime directory (refused while another attachment holds
    /// it), clean what a crashed one left, start an empty record.
    pub(crate) fn claim(name: &str, note: &mut dyn FnMut(&str)) -> Result<(Record, File), Error> {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(Error::Tool(format!("attachment name {name:?}: not usable as a directory name")));
        }
        let dir = runtime_root().join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::Tool(format!("{}: {e}", dir.display())))?;
        let lock = lock(&dir)?;
        clean_locked(&dir, note)?;
        // SAFETY: getpid cannot fail.
        let r = Record { pid: unsafe { libc::getpid() } as u32, dir, ..Record::default() };
        r.save()?;
        Ok((r, lock))
    }

    /// The runtime directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the FUSE file system shows the exports as files.
    pub fn files_dir(&self) -> PathBuf {
        self.dir.join("files")
    }

    fn path(dir: &Path) -> PathBuf {
        dir.join("record.json")
    }

    /// Write the record whole (aside, then renamed).
    pub(crate) fn save(&self) -> Result<(), Error> {
        let p = Record::path(&self.dir);
        let tmp = p.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).expect("a record serializes");
        std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &p)).map_err(|e| Error::Tool(format!("{}: {e}", p.display())))
    }

    /// Everything is down: the record goes (the directory stays, with its lock).
    pub(crate) fn remove(&mut self) -> Result<(), Error> {
        remove_record(&self.dir)
    }

    fn load(dir: &Path) -> Option<Record> {
        let text = std::fs::read_to_string(Record::path(dir)).ok()?;
        let mut r: Record = serde_json::from_str(&text).ok()?;
        r.dir = dir.to_path_buf();
        Some(r)
    }
}

/// Lock `dir` for this process, or say who holds it.
fn lock(dir: &Path) -> Result<File, Error> {
    let p = dir.join("lock");
    let f = File::create(&p).map_err(|e| Error::Tool(format!("{}: {e}", p.display())))?;
    // SAFETY: flock on a file descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let who = Record::load(dir).map(|r| format!(" (pid {})", r.pid)).unwrap_or_default();
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        return Err(Error::Busy(format!(
            "attachment {name:?} is running{who}: stop it (Ctrl-C in its terminal, or kill -TERM the pid) or choose another --name"
        )));
    }
    Ok(f)
}

/// Clean what a crashed attachment named `name` left (no-op when nothing is left); refused
/// while it runs. Returns what was done, one line each.
pub fn clean_stale(name: &str) -> Result<Vec<String>, Error> {
    let dir = runtime_root().join(name);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let _lock = lock(&dir)?;
    let mut done = Vec::new();
    clean_locked(&dir, &mut |s| done.push(s.to_string()))?;
    Ok(done)
}

/// With `dir` locked: take down every piece a dead attachment left, found by what the kernel
/// says (loop devices whose file is under `dir`, mounts under `dir`) as well as by the record,
/// since a crash can come between making a piece and writing it down.
fn clean_locked(dir: &Path, note: &mut dyn FnMut(&str)) -> Result<(), Error> {
    let record = Record::load(dir);
    let files = dir.join("files");
    let mut devices: Vec<PathBuf> = loop_devices_under(&files);
    for d in record.iter().flat_map(|r| r.devices.iter()) {
        if !devices.contains(d) && system::loop_backing_file(d).is_some_and(|f| f.starts_with(&files)) {
            devices.push(d.clone());
        }
    }
    let pid = record.as_ref().map(|r| format!(" (pid {})", r.pid)).unwrap_or_default();
    if !devices.is_empty() || system::is_mount_point(&files) {
        note(&format!("an earlier attachment{pid} ended without taking down its devices; cleaning up"));
    }
    for dev in &devices {
        // Its server is gone: what is still cached for it can no longer be written anywhere.
        for m in system::mounts_of(dev) {
            system::umount(&m, true)?;
            note(&format!("unmounted {} (was on {})", m.display(), dev.display()));
        }
        system::loop_detach(dev)?;
        note(&format!("detached {}", dev.display()));
    }
    // File systems under the directory whose device is gone, then the FUSE files themselves.
    let mut under: Vec<PathBuf> = system::mounts().into_iter().map(|m| m.target).filter(|t| t.starts_with(dir) && *t != files).collect();
    under.sort_by_key(|t| std::cmp::Reverse(t.components().count()));
    for t in under {
        system::umount(&t, true)?;
        note(&format!("unmounted {}", t.display()));
    }
    if system::is_mount_point(&files) {
        system::umount(&files, true)?;
        note(&format!("unmounted the FUSE file system at {}", files.display()));
    }
    remove_record(dir)
}

/// Remove `dir`'s record; none there is fine.
fn remove_record(dir: &Path) -> Result<(), Error> {
    let p = Record::path(dir);
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Tool(format!("{}: {e}", p.display()))),
    }
}

/// Loop devices attached to a file under `dir`.
fn loop_devices_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let dev = Path::new("/dev").join(&name);
            (name.starts_with("loop") && system::loop_backing_file(&dev).is_some_and(|f| f.starts_with(dir))).then_some(dev)
        })
        .collect();
    v.sort();
    v
}
