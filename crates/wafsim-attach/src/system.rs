//! The Linux pieces an attachment uses, each through the tool a user would type (util-linux
//! `losetup`, `mount`, `umount`, the `mkfs.*` of e2fsprogs/xfsprogs/btrfs-progs) or the file
//! the kernel publishes (`/proc/self/mountinfo`, `/sys/block/loopN/...`): loop devices, file
//! systems, mounts, and the block layer's counters.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// Run `cmd`; its stderr (or status) becomes the error.
pub(crate) fn run(cmd: &mut Command) -> Result<String, Error> {
    let what = format!("{:?}", cmd).replace('"', "");
    let out = cmd.output().map_err(|e| Error::Tool(format!("{what}: cannot run it: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // The cause, not the usage text some tools print after it.
        let lines: Vec<&str> = err.trim().lines().collect();
        let err = if lines.len() > 3 { format!("{} [...]", lines[..3].join("\n")) } else { lines.join("\n") };
        return Err(Error::Tool(format!("{what} failed ({}){}", out.status, if err.is_empty() { String::new() } else { format!(": {err}") })));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether `tool` is on PATH (or in /sbin, /usr/sbin, which a non-login root shell may lack).
pub fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from)).map(|d| d.join(tool)).find(|p| p.is_file())
}

/// A tool by name, or the error saying which package has it.
pub(crate) fn tool(name: &str, package: &str) -> Result<PathBuf, Error> {
    find_tool(name).ok_or_else(|| Error::Missing(format!("`{name}` is not installed (Debian/Ubuntu: apt-get install {package})")))
}

/// Attach a loop device with logical blocks of `sector_size` bytes to `file`; its path
/// (`/dev/loopN`).
pub fn loop_attach(file: &Path, sector_size: u32) -> Result<PathBuf, Error> {
    let out = run(Command::new(tool("losetup", "util-linux")?).arg("--find").arg("--show").arg("--sector-size").arg(sector_size.to_string()).arg(file))?;
    Ok(PathBuf::from(out))
}

/// Detach loop device `dev` (a busy one is detached when its last user lets go: the kernel's
/// autoclear).
pub fn loop_detach(dev: &Path) -> Result<(), Error> {
    run(Command::new(tool("losetup", "util-linux")?).arg("--detach").arg(dev)).map(drop)
}

/// `/sys/block/loopN` of `/dev/loopN`.
fn sys_block(dev: &Path) -> PathBuf {
    Path::new("/sys/block").join(dev.file_name().unwrap_or_default())
}

/// The file loop device `dev` is attached to, if it is attached.
pub fn loop_backing_file(dev: &Path) -> Option<PathBuf> {
    let s = std::fs::read_to_string(sys_block(dev).join("loop/backing_file")).ok()?;
    Some(PathBuf::from(s.trim_end_matches('\n')))
}

/// The block layer's counters of one device (`/sys/block/DEV/stat`, Documentation/block/stat.rst),
/// in bytes. Writes include write-zeroes requests; discards are counted apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockStat {
    /// Read requests completed.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Write requests completed (write-zeroes among them).
    pub writes: u64,
    /// Bytes written (write-zeroes among them).
    pub write_bytes: u64,
    /// Discard requests completed.
    pub discards: u64,
    /// Bytes discarded.
    pub discard_bytes: u64,
    /// Flush requests completed.
    pub flushes: u64,
}

impl BlockStat {
    /// The counters of `dev` now.
    pub fn read(dev: &Path) -> Result<BlockStat, Error> {
        let p = sys_block(dev).join("stat");
        let s = std::fs::read_to_string(&p).map_err(|e| Error::Tool(format!("{}: {e}", p.display())))?;
        BlockStat::parse(&s).ok_or_else(|| Error::Tool(format!("{}: unexpected contents {s:?}", p.display())))
    }

    /// Parse the stat file's fields (11 before Linux 4.18, 15 with discards, 17 with flushes).
    pub fn parse(s: &str) -> Option<BlockStat> {
        let f: Vec<u64> = s.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
        if f.len() < 11 {
            return None;
        }
        let at = |i: usize| f.get(i).copied().unwrap_or(0);
        Some(BlockStat { reads: at(0), read_bytes: at(2) * 512, writes: at(4), write_bytes: at(6) * 512, discards: at(11), discard_bytes: at(13) * 512, flushes: at(15) })
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &BlockStat) -> BlockStat {
        BlockStat {
            reads: self.reads.saturating_sub(earlier.reads),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            writes: self.writes.saturating_sub(earlier.writes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            discards: self.discards.saturating_sub(earlier.discards),
            discard_bytes: self.discard_bytes.saturating_sub(earlier.discard_bytes),
            flushes: self.flushes.saturating_sub(earlier.flushes),
        }
    }
}

/// One line of `/proc/self/mountinfo`: what is mounted where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The mount point.
    pub target: PathBuf,
    /// The mount source (a device path for block file systems).
    pub source: String,
    /// The file system type.
    pub fstype: String,
}

/// Every mount of this process's mount namespace.
pub fn mounts() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mountinfo").map(|s| parse_mountinfo(&s)).unwrap_or_default()
}

/// Parse mountinfo (proc(5)): field 5 is the mount point; after the " - " separator come the
/// type and the source. Spaces, tabs, newlines and backslashes are octal escapes.
pub fn parse_mountinfo(s: &str) -> Vec<Mount> {
    let unescape = |f: &str| -> String {
        let b = f.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
                out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
                i += 4;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    s.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let target = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let fstype = r.next()?;
            let source = r.next()?;
            Some(Mount { target: PathBuf::from(unescape(target)), source: unescape(source), fstype: unescape(fstype) })
        })
        .collect()
}

/// Mount points of block device `dev` (by its path, as mount records it).
pub fn mounts_of(dev: &Path) -> Vec<PathBuf> {
    let d = dev.to_string_lossy();
    mounts().into_iter().filter(|m| m.source == d).map(|m| m.target).collect()
}

/// Whether something is mounted at `dir`.
pub fn is_mount_point(dir: &Path) -> bool {
    mounts().iter().any(|m| m.target == dir)
}

/// File systems `attach --fs` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsKind {
    /// ext4 (`mkfs.ext4`, e2fsprogs).
    Ext4,
    /// XFS (`mkfs.xfs`, xfsprogs).
    Xfs,
    /// Btrfs, non-zoned (`mkfs.btrfs`, btrfs-progs).
    Btrfs,
}

impl FsKind {
    /// All kinds, by name.
    pub const ALL: [(&'static str, FsKind); 3] = [("ext4", FsKind::Ext4), ("xfs", FsKind::Xfs), ("btrfs", FsKind::Btrfs)];

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<FsKind> {
        FsKind::ALL.iter().find(|(n, _)| *n == s).map(|(_, k)| *k)
    }

    /// Its name, as `mount -t` takes it.
    pub fn name(self) -> &'static str {
        FsKind::ALL.iter().find(|(_, k)| *k == self).map(|(n, _)| *n).expect("every kind is in ALL")
    }

    /// The mkfs tool and the Debian package that has it.
    pub fn mkfs_tool(self) -> (&'static str, &'static str) {
        match self {
            FsKind::Ext4 => ("mkfs.ext4", "e2fsprogs"),
            FsKind::Xfs => ("mkfs.xfs", "xfsprogs"),
            FsKind::Btrfs => ("mkfs.btrfs", "btrfs-progs"),
        }
    }
}

/// Make a file system of `kind` on `dev` with the tool's defaults and `extra` options (the
/// tools discard the whole device first unless told not to: `-K` for XFS and Btrfs,
/// `-E nodiscard` for ext4).
pub fn mkfs(kind: FsKind, dev: &Path, extra: &[String]) -> Result<(), Error> {
    let (name, package) = kind.mkfs_tool();
    let mut cmd = Command::new(tool(name, package)?);
    // Overwrite whatever an earlier attachment left on the device, quietly.
    match kind {
        FsKind::Ext4 => cmd.args(["-F", "-q"]),
        FsKind::Xfs => cmd.args(["-f", "-q"]),
        FsKind::Btrfs => cmd.args(["-f", "-q"]),
    };
    run(cmd.args(extra).arg(dev)).map(drop)
}

/// Mount `dev` (a file system of `kind`) at `dir` with `options` (may be empty).
pub fn mount(kind: FsKind, dev: &Path, dir: &Path, options: &str) -> Result<(), Error> {
    let mut cmd = Command::new(tool("mount", "mount")?);
    cmd.arg("-t").arg(kind.name());
    if !options.is_empty() {
        cmd.arg("-o").arg(options);
    }
    run(cmd.arg(dev).arg(dir)).map(drop)
}

/// Unmount `dir`; `lazy` detaches it now and lets the kernel finish when it is no longer busy
/// (for a file system whose device is already gone).
pub fn umount(dir: &Path, lazy: bool) -> Result<(), Error> {
    let mut cmd = Command::new(tool("umount", "mount")?);
    if lazy {
        cmd.arg("--lazy");
    }
    run(cmd.arg(dir)).map(drop)
}

/// Flush every file system's dirty data to its device (sync(2)).
pub fn sync_all() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_stat_fields_are_read_as_documentation_block_stat_rst_lists_them() {
        // Read from a loop device after mkfs.xfs and fio (17 fields, Linux 6.18).
        let s = "   16555        0   135492      115    16454        0   267088      634        0      740      750        1        0  3145728        0        2        0\n";
        let b = BlockStat::parse(s).unwrap();
        assert_eq!(b, BlockStat { reads: 16555, read_bytes: 135492 * 512, writes: 16454, write_bytes: 267088 * 512, discards: 1, discard_bytes: 3145728 * 512, flushes: 2 });
        // 11 fields (before 4.18): no discards, no flushes.
        let old = BlockStat::parse("1 0 8 0 2 0 16 0 0 0 0").unwrap();
        assert_eq!((old.write_bytes, old.discards, old.flushes), (16 * 512, 0, 0));
        assert_eq!(BlockStat::parse("1 2 3"), None);
        assert_eq!(b.since(&old).writes, 16454 - 2);
    }

    #[test]
    fn mountinfo_lines_give_target_type_and_source_with_escapes_undone() {
        let s = "36 35 98:0 / /mnt/a\\040b rw,noatime master:1 - xfs /dev/loop3 rw,attr2\n\
                 40 35 0:44 / /run/wafsim/attach/x/files rw,nosuid,nodev - fuse wafsim rw,user_id=0,group_id=0\n\
                 garbage\n";
        let m = parse_mountinfo(s);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], Mount { target: PathBuf::from("/mnt/a b"), source: "/dev/loop3".into(), fstype: "xfs".into() });
        assert_eq!(m[1].fstype, "fuse");
        assert_eq!(m[1].source, "wafsim");
    }

    #[test]
    fn file_system_kinds_round_trip_by_name() {
        for (n, k) in FsKind::ALL {
            assert_eq!(FsKind::parse(n), Some(k));
            assert_eq!(k.name(), n);
        }
        assert_eq!(FsKind::parse("f2fs"), None);
    }
}
