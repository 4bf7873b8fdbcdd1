//! wafsim-attach: a simulated drive's exports (namespaces, and `NAME@K` placement handles) as
//! Linux block devices, so real file systems and real databases run on the simulated drive.
//!
//! The chain, per export: this process serves the export as a file in a FUSE file system
//! ([`fuse::ExportFs`], no NBD hop), `losetup` puts a loop device on that file, and optionally a
//! file system is made and mounted on it ([`system`]). [`Attachment`] builds the chain, keeps a
//! record of every piece in a runtime directory as it goes ([`record`]), and takes it down in
//! reverse order. A crash (even `kill -9`) leaves the record and a lock the kernel has released,
//! so the next attachment of the same name cleans what is left ([`record::clean_stale`]) before
//! it starts.
//!
//! What the chain cannot carry: zones (a loop device is never zoned; real zoned file systems
//! need a kernel with `CONFIG_BLK_DEV_ZONED` and a zoned block device), and per-write placement
//! hints (`F_SET_RW_HINT` stops at the loop device): placement is per block device, one export
//! per namespace or per handle.

#![warn(missing_docs)]

pub mod fuse;
pub mod record;
pub mod system;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wafsim_nbd::Export;

pub use record::{clean_stale, runtime_root, Record};
pub use system::{BlockStat, FsKind};

/// Why an attachment could not be made or taken down.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Something the chain needs is missing here; the message says how to get it.
    #[error("{0}")]
    Missing(String),
    /// Another attachment of this name is running.
    #[error("{0}")]
    Busy(String),
    /// A tool or system call failed.
    #[error("{0}")]
    Tool(String),
}

/// What one export gets: a file system made on its block device and mounted.
#[derive(Clone, Debug)]
pub struct FsSpec {
    /// Which file system.
    pub kind: FsKind,
    /// Options added to the mkfs tool's defaults.
    pub mkfs_options: Vec<String>,
    /// `mount -o` options (empty: the file system's defaults).
    pub mount_options: String,
}

/// What to attach.
pub struct Spec {
    /// The attachment's name: its runtime directory, and what a later run cleans after a crash.
    pub name: String,
    /// The exports, each with a name (a file name: no `/`) and optionally a file system.
    pub exports: Vec<(String, Arc<dyn Export>, Option<FsSpec>)>,
    /// Where file systems are mounted (`DIR/EXPORT`); default the runtime directory's `mnt`.
    pub mount_root: Option<PathBuf>,
    /// The block devices' logical block size (512, 1024, 2048 or 4096): what the file systems
    /// align their writes to, as an NVMe drive's LBA format.
    pub sector_size: u32,
}

/// One attached export.
#[derive(Clone, Debug)]
pub struct Attached {
    /// The export's name.
    pub export: String,
    /// Its block device (`/dev/loopN`).
    pub device: PathBuf,
    /// Where its file system is mounted, if one was made.
    pub mount: Option<PathBuf>,
    /// Which file system.
    pub fs: Option<FsKind>,
}

/// Every thing Linux needs to run before an attachment can work: root, FUSE, loop devices,
/// `losetup`, and each file system's mkfs. The first that is missing, with how to get it.
pub fn preflight(fs: &[FsKind]) -> Result<(), Error> {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::Missing("wafsim attach needs root: it mounts a FUSE file system, sets up loop devices and mounts file systems (run it with sudo)".into()));
    }
    if std::fs::OpenOptions::new().read(true).write(true).open("/dev/fuse").is_err() {
        return Err(Error::Missing("/dev/fuse cannot be opened: load the fuse module (modprobe fuse); in a container, pass the device (docker run --device /dev/fuse --cap-add SYS_ADMIN)".into()));
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err(Error::Missing("/dev/loop-control is missing: load the loop module (modprobe loop); in a container, run it privileged or pass /dev/loop-control and /dev/loopN".into()));
    }
    system::tool("losetup", "util-linux")?;
    for k in fs {
        let (t, p) = k.mkfs_tool();
        system::tool(t, p)?;
    }
    Ok(())
}

/// A simulated drive's exports, attached: the FUSE file system, a loop device per export,
/// file systems, and the record that lets a later run clean up after a crash.
pub struct Attachment {
    record: Record,
    session: Option<fuser::BackgroundSession>,
    attached: Vec<Attached>,
    /// The lock held while attached (the kernel drops it when this process dies).
    _lock: std::fs::File,
}

impl Attachment {
    /// Attach `spec`'s exports: clean what a crashed attachment of the same name left, mount
    /// the FUSE files, set up the loop devices, make and mount file systems. `note` hears what
    /// was cleaned. On an error, what was built so far is taken down again.
    pub fn start(spec: Spec, note: &mut dyn FnMut(&str)) -> Result<Attachment, Error> {
        let fs: Vec<FsKind> = spec.exports.iter().filter_map(|(_, _, f)| f.as_ref().map(|f| f.kind)).collect();
        preflight(&fs)?;
        for (n, _, _) in &spec.exports {
            if n.is_empty() || n.contains('/') || n.starts_with('.') {
                return Err(Error::Tool(format!("export {n:?}: not usable as a file name")));
            }
        }
        if ![512, 1024, 2048, 4096].contains(&spec.sector_size) {
            return Err(Error::Tool(format!("sector size {}: a loop device takes 512, 1024, 2048 or 4096", spec.sector_size)));
        }
        let (record, lock) = Record::claim(&spec.name, note)?;
        let mut a = Attachment { record, session: None, attached: Vec::new(), _lock: lock };
        match a.build(spec) {
            Ok(()) => Ok(a),
            Err(e) => {
                if let Err(t) = a.teardown_inner() {
                    note(&format!("taking down the partial attachment: {t}"));
                }
                Err(e)
            }
        }
    }

    fn build(&mut self, spec: Spec) -> Result<(), Error> {
        let files = self.record.files_dir();
        std::fs::create_dir_all(&files).map_err(|e| Error::Tool(format!("{}: {e}", files.display())))?;
        let fs_files: Vec<(String, Arc<dyn Export>)> = spec.exports.iter().map(|(n, e, _)| (n.clone(), e.clone())).collect();
        let mut config = fuser::Config::default();
        config.mount_options = vec![fuser::MountOption::FSName("wafsim".into()), fuser::MountOption::Subtype("wafsim".into()), fuser::MountOption::NoDev, fuser::MountOption::NoSuid];
        // Two workers: the loop device sends requests from several kernel threads.
        config.n_threads = Some(2);
        set_io_flusher();
        // Recorded before mounting: a crash in between leaves a mount the next run must find.
        self.record.fuse = Some(files.clone());
        self.record.save()?;
        let session = fuser::spawn_mount(fuse::ExportFs::new(fs_files), &files, &config).map_err(|e| Error::Tool(format!("mounting the FUSE file system at {}: {e}", files.display())))?;
        self.session = Some(session);
        for (name, _, fs) in spec.exports {
            let file = files.join(&name);
            let device = system::loop_attach(&file, spec.sector_size)?;
            self.record.devices.push(device.clone());
            self.record.save()?;
            let mut at = Attached { export: name.clone(), device: device.clone(), mount: None, fs: None };
            if let Some(f) = fs {
                system::mkfs(f.kind, &device, &f.mkfs_options).map_err(|e| Error::Tool(format!("export {name} ({}): {e}", device.display())))?;
                let dir = spec.mount_root.clone().unwrap_or_else(|| self.record.dir().join("mnt")).join(&name);
                std::fs::create_dir_all(&dir).map_err(|e| Error::Tool(format!("{}: {e}", dir.display())))?;
                if system::is_mount_point(&dir) {
                    return Err(Error::Busy(format!("{} is already a mount point; choose another --mount-root or unmount it", dir.display())));
                }
                system::mount(f.kind, &device, &dir, &f.mount_options)?;
                self.record.mounts.push(dir.clone());
                self.record.save()?;
                at.mount = Some(dir);
                at.fs = Some(f.kind);
            }
            self.attached.push(at);
        }
        Ok(())
    }

    /// The attached exports, in the order given.
    pub fn attached(&self) -> &[Attached] {
        &self.attached
    }

    /// The runtime directory (record, FUSE files, default mount points).
    pub fn dir(&self) -> &Path {
        self.record.dir()
    }

    /// Write every file system's dirty data to the drive and unmount the file systems this
    /// attachment mounted (the drive then holds all they wrote, their unmount writes included).
    pub fn unmount(&mut self) -> Result<(), Error> {
        system::sync_all();
        let mut first = None;
        for a in &mut self.attached {
            if let Some(dir) = a.mount.take() {
                if let Err(e) = umount_patiently(&dir, 30) {
                    first.get_or_insert(e);
                    a.mount = Some(dir);
                }
            }
        }
        self.record.mounts.retain(|m| self.attached.iter().any(|a| a.mount.as_deref() == Some(m)));
        self.record.save()?;
        first.map_or(Ok(()), Err)
    }

    /// Take everything down in reverse order: file systems (also ones mounted by hand on the
    /// devices), loop devices, the FUSE file system, the record.
    pub fn teardown(mut self) -> Result<(), Error> {
        self.teardown_inner()
    }

    fn teardown_inner(&mut self) -> Result<(), Error> {
        let mut first: Option<Error> = self.unmount().err();
        for dev in std::mem::take(&mut self.record.devices).into_iter().rev() {
            // A file system mounted by hand on the device: unmounted, or the loop device cannot go.
            for m in system::mounts_of(&dev) {
                if let Err(e) = umount_patiently(&m, 30) {
                    first.get_or_insert(e);
                }
            }
            if let Err(e) = system::loop_detach(&dev) {
                first.get_or_insert(e);
            }
        }
        self.record.save()?;
        if let Some(s) = self.session.take() {
            // A loop device detached a moment ago may still hold its file briefly.
            match umount_patiently(&self.record.files_dir(), 50) {
                Ok(()) => {
                    let _ = s.join();
                }
                Err(e) => {
                    // Still held (a device someone keeps open): unmounted lazily, the session
                    // ends with the process.
                    first.get_or_insert(e);
                    std::mem::forget(s);
                }
            }
        }
        self.record.fuse = None;
        match first {
            None => self.record.remove(),
            Some(e) => {
                let _ = self.record.save();
                Err(e)
            }
        }
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        if self.session.is_some() || !self.record.devices.is_empty() {
            let _ = self.teardown_inner();
        }
    }
}

/// Unmount `dir`, retrying every 100 ms up to `tries` times while it is busy (a process still
/// closing files, a loop device letting go of its file), then lazily.
fn umount_patiently(dir: &Path, tries: u32) -> Result<(), Error> {
    let mut last = None;
    for _ in 0..tries {
        match system::umount(dir, false) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
        if !system::is_mount_point(dir) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    system::umount(dir, true)?;
    Err(Error::Tool(format!("{} stayed busy and was unmounted lazily ({}); data not yet written may be lost", dir.display(), last.map(|e| e.to_string()).unwrap_or_default())))
}

/// Mark this process as one that writes for the block layer (prctl PR_SET_IO_FLUSHER, Linux
/// 5.6): its allocations do not wait on writeback to the devices it serves, which would
/// deadlock loop -> FUSE -> this process under memory pressure. Threads started afterwards
/// inherit it. Best effort: older kernels lack it.
fn set_io_flusher() {
    const PR_SET_IO_FLUSHER: libc::c_int = 57;
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) };
}
