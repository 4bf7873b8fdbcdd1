//! [`ExportFs`]: NBD exports as regular files in a FUSE file system, served by this process.
//!
//! A loop device needs a file; the exports live in this process. Serving them as files
//! in-process (rather than `wafsim serve` -> `nbdfuse` -> file) saves the NBD hop (a TCP round
//! trip and a second process per request), and one process holds everything, so a crash takes
//! the whole chain down at once and the next `attach` finds one kind of leftover to clean.
//!
//! Every file is opened with `FOPEN_DIRECT_IO`: no page cache between the loop device and the
//! drive, so each write the loop device sends reaches the drive as one command of its size,
//! when it is sent, and the drive's host bytes equal what the block device wrote (a cache here
//! would absorb rewrites of hot blocks, such as a journal's, and the drive would see fewer).
//!
//! Mapping to the drive (as Linux's loop driver uses a file, drivers/block/loop.c):
//! * `read`/`write` -> [`Export::read`]/[`Export::write`] (a write on a file opened with
//!   `O_SYNC`/`O_DSYNC` is FUA);
//! * `fallocate(PUNCH_HOLE)` (loop's discard, and write-zeroes that may unmap) -> a trim
//!   (NVMe deallocate); `fallocate(ZERO_RANGE)` (write-zeroes with REQ_NOUNMAP) -> zeroes the
//!   media programs; `fallocate(0)` (allocate) -> nothing, the drive is always allocated;
//! * `fsync` (loop's flush) -> [`Export::flush`].

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, KernelConfig, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, WriteFlags};
use wafsim_nbd::{Export, ExportError};

/// The root directory's inode; export `i` is inode `FIRST_FILE + i`.
const ROOT: u64 = 1;
const FIRST_FILE: u64 = 2;
/// Attributes never change while mounted (sizes are fixed), so the kernel may keep them long.
const TTL: Duration = Duration::from_secs(3600);
/// Largest request the kernel sends (loop's requests are split to this); larger requests mean
/// fewer round trips through /dev/fuse for sequential I/O.
pub const MAX_REQUEST: u32 = 1 << 20;
/// Alignment of every read and write (the loop device's logical block size): the exports take
/// 512-byte multiples only, as an NBD client must send them.
const ALIGN: u64 = 512;

/// One file per export, in a flat root directory.
pub struct ExportFs {
    files: Vec<(String, Arc<dyn Export>)>,
    /// Owner of the files and root (the user who attached: root, so loop can open them).
    uid: u32,
    gid: u32,
    created: SystemTime,
}

impl ExportFs {
    /// Files named as `files` names them (a namespace's name, or `NAME@K`).
    pub fn new(files: Vec<(String, Arc<dyn Export>)>) -> ExportFs {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        ExportFs { files, uid, gid, created: SystemTime::now() }
    }

    fn export(&self, ino: INodeNo) -> Option<&Arc<dyn Export>> {
        let i = ino.0.checked_sub(FIRST_FILE)?;
        self.files.get(i as usize).map(|(_, e)| e)
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, size, perm, nlink) = if ino == ROOT {
            (FileType::Directory, 0, 0o755, 2)
        } else {
            let e = self.export(INodeNo(ino))?;
            (FileType::RegularFile, e.size(), 0o600, 1)
        };
        Some(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: self.created,
            mtime: self.created,
            ctime: self.created,
            crtime: self.created,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }
}

/// The errno a file operation returns for an export's error.
fn errno(e: &ExportError) -> Errno {
    match e {
        ExportError::Io(io) => io.raw_os_error().map(Errno::from_i32).unwrap_or(Errno::EIO),
        ExportError::NoSpace => Errno::ENOSPC,
        ExportError::Invalid(_) => Errno::EINVAL,
        ExportError::ReadOnly => Errno::EROFS,
        ExportError::Failed(_) => Errno::EIO,
    }
}

/// `offset .. offset + len` checked as the NBD server checks a request before an export sees
/// it: aligned, and (for writes) inside the export.
fn check(offset: u64, len: u64, size: u64) -> Result<(), Errno> {
    if !offset.is_multiple_of(ALIGN) || !len.is_multiple_of(ALIGN) {
        return Err(Errno::EINVAL);
    }
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Errno::ENOSPC),
    }
}

impl Filesystem for ExportFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Best effort: an older kernel answers with the largest it takes, which still works.
        let _ = config.set_max_write(MAX_REQUEST);
        let _ = config.set_max_readahead(MAX_REQUEST);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = (parent.0 == ROOT).then(|| self.files.iter().position(|(n, _)| OsStr::new(n) == name)).flatten();
        match found.and_then(|i| self.attr(FIRST_FILE + i as u64)) {
            Some(a) => reply.entry(&TTL, &a, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino.0) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.export(ino) {
            Some(_) => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            None => reply.error(Errno::EISDIR),
        }
    }

    fn read(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, size: u32, _flags: OpenFlags, _lock: Option<fuser::LockOwner>, reply: ReplyData) {
        let Some(e) = self.export(ino) else { return reply.error(Errno::EISDIR) };
        // A read at or past the end is short, as for any file.
        let len = (size as u64).min(e.size().saturating_sub(offset));
        if len == 0 {
            return reply.data(&[]);
        }
        if let Err(n) = check(offset, len, e.size()) {
            return reply.error(n);
        }
        let mut buf = vec![0u8; len as usize];
        match e.read(offset, &mut buf) {
            Ok(()) => reply.data(&buf),
            Err(x) => reply.error(errno(&x)),
        }
    }

    fn write(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, data: &[u8], _wf: WriteFlags, flags: OpenFlags, _lock: Option<fuser::LockOwner>, reply: ReplyWrite) {
        let Some(e) = self.export(ino) else { return reply.error(Errno::EISDIR) };
        if let Err(n) = check(offset, data.len() as u64, e.size()) {
            return reply.error(n);
        }
        let fua = flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0;
        match e.write(offset, data, fua) {
            Ok(()) => reply.written(data.len() as u32),
            Err(x) => reply.error(errno(&x)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock: fuser::LockOwner, reply: ReplyEmpty) {
        // close(): nothing is cached here, so nothing to write.
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let Some(e) = self.export(ino) else { return reply.ok() };
        match e.flush() {
            Ok(()) => reply.ok(),
            Err(x) => reply.error(errno(&x)),
        }
    }

    fn fallocate(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, length: u64, mode: i32, reply: ReplyEmpty) {
        let Some(e) = self.export(ino) else { return reply.error(Errno::EISDIR) };
        let keep = mode & libc::FALLOC_FL_KEEP_SIZE;
        let op = mode & !libc::FALLOC_FL_KEEP_SIZE;
        // Allocation within the file is a no-op (a drive's LBAs always exist); growing it is
        // refused like a write past the end.
        if op == 0 {
            let within = offset.checked_add(length).is_some_and(|end| end <= e.size());
            return if within || keep != 0 { reply.ok() } else { reply.error(Errno::ENOSPC) };
        }
        if let Err(n) = check(offset, length, e.size()) {
            return reply.error(n);
        }
        let done = if op == libc::FALLOC_FL_PUNCH_HOLE && keep != 0 {
            e.trim(offset, length)
        } else if op == libc::FALLOC_FL_ZERO_RANGE {
            e.write_zeroes(offset, length, true)
        } else {
            return reply.error(Errno::EOPNOTSUPP);
        };
        match done {
            Ok(()) => reply.ok(),
            Err(x) => reply.error(errno(&x)),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino.0 != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let mut entries: Vec<(u64, FileType, &str)> = vec![(ROOT, FileType::Directory, "."), (ROOT, FileType::Directory, "..")];
        entries.extend(self.files.iter().enumerate().map(|(i, (n, _))| (FIRST_FILE + i as u64, FileType::RegularFile, n.as_str())));
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks: u64 = self.files.iter().map(|(_, e)| e.size() / 4096).sum();
        reply.statfs(blocks, 0, 0, self.files.len() as u64 + 1, 0, 4096, 255, 4096);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked_as_the_nbd_server_checks_them() {
        assert_eq!(check(0, 4096, 8192), Ok(()));
        assert_eq!(check(4096, 4096, 8192), Ok(()));
        assert_eq!(check(100, 512, 8192), Err(Errno::EINVAL));
        assert_eq!(check(0, 100, 8192), Err(Errno::EINVAL));
        assert_eq!(check(8192, 512, 8192), Err(Errno::ENOSPC));
        assert_eq!(check(u64::MAX - 511, 512, 8192), Err(Errno::ENOSPC));
    }
}
