//! A conventional (update-in-place) file system over any block device, as ext4 or XFS place
//! data: a file's appends get space in allocation chunks near its group's (directory's) goal, an
//! overwrite goes where the data already is, and a delete frees the file's extents, discarding
//! them (online `discard`) or not. The device below sees the resulting block I/O: with discard
//! off an SSD keeps deleted data valid until it is overwritten, which is where a file system
//! costs write amplification.
//!
//! What is modelled and what is not (docs/model.md, "File systems"):
//! - allocation: free space as extents; a growing file takes `chunk_bytes` at a time (ext4's
//!   mballoc preallocates for a growing file, XFS its speculative preallocation), first fit
//!   from its group's goal, which moves past each allocation, so a group's files sit together
//!   and concurrent appenders interleave by chunks, not blocks; unused preallocation returns to
//!   free space when the file is deleted;
//! - no metadata or journal writes, no page cache (every write goes down at once), no
//!   fragmentation limit other than free space itself.

use std::collections::{BTreeMap, HashMap};
use wafsim_core::{Io, Op, Pid};
use wafsim_core::pipeline::{FileId, FileOp};

/// Figures of a conventional file system.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvFsConfig {
    /// Namespace of the device it lives on.
    pub ns: u32,
    /// Size of that namespace in bytes.
    pub device_bytes: u64,
    /// File system block: the unit of allocation and of every I/O it sends.
    pub block_bytes: u32,
    /// Space a growing file takes at a time (a multiple of the block).
    pub chunk_bytes: u64,
    /// Online discard: trim a deleted file's extents as it is deleted (a mount's `discard`).
    pub discard: bool,
    /// Groups start their goals this far apart (spreads directories over the device, as
    /// ext4's Orlov allocator spreads top-level directories over block groups); 0 = all at 0.
    pub group_spread_bytes: u64,
}

impl ConvFsConfig {
    /// 4 KiB blocks, 8 MiB chunks, no online discard (ext4's, XFS's and Btrfs-before-6.2's mount
    /// default), groups 1 GiB apart.
    pub fn new(ns: u32, device_bytes: u64) -> ConvFsConfig {
        ConvFsConfig { ns, device_bytes, block_bytes: 4096, chunk_bytes: 8 << 20, discard: false, group_spread_bytes: 1 << 30 }
    }
}

/// What a conventional file system refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// A configuration the file system cannot work with.
    #[error("invalid file system configuration: {0}")]
    Config(&'static str),
    /// An operation on a file that was never created or is deleted.
    #[error("file {0} does not exist")]
    NoSuchFile(FileId),
    /// A create of a live file.
    #[error("file {0} exists already")]
    Exists(FileId),
    /// A write starting past the end of the file.
    #[error("file {file}: write at {offset} leaves a hole (file size {size}); files grow by appends")]
    #[allow(missing_docs)]
    Hole { file: FileId, offset: u64, size: u64 },
    /// A read past the end of the file.
    #[error("file {file}: read of [{offset}, {end}) past the end of the file ({size} bytes)")]
    #[allow(missing_docs)]
    ReadPastEnd { file: FileId, offset: u64, end: u64, size: u64 },
    /// Not enough free space (a log-structured file system keeps some for its GC).
    #[error("no space left: {need} bytes wanted, {free} free")]
    #[allow(missing_docs)]
    NoSpace { need: u64, free: u64 },
    /// A write not in whole file system blocks.
    #[error("file {file}: offset {offset} or length {len} is not a multiple of the {block}-byte block")]
    #[allow(missing_docs)]
    Unaligned { file: FileId, offset: u64, len: u32, block: u32 },
}

/// A write of `len` bytes at `offset` of `file` in whole blocks of `block` bytes, or the error
/// both file systems refuse it with.
pub(crate) fn check_blocks(file: FileId, offset: u64, len: u32, block: u32) -> Result<(), FsError> {
    let b = block as u64;
    // A power-of-two block (always, in practice) is checked with a mask, not two divisions.
    let aligned = if b != 0 && b & (b - 1) == 0 {
        (offset | len as u64) & (b - 1) == 0
    } else {
        offset.is_multiple_of(b) && (len as u64).is_multiple_of(b)
    };
    if !aligned || len == 0 {
        return Err(FsError::Unaligned { file, offset, len, block });
    }
    Ok(())
}

/// One extent of a file: `len` bytes of the file from file offset `at` lie at device offset
/// `dev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// File offset.
    pub at: u64,
    /// Device offset.
    pub dev: u64,
    /// Length in bytes.
    pub len: u64,
}

#[derive(Debug, Clone)]
struct File {
    group: u32,
    size: u64,
    /// Allocated extents in file order (the last may reach past `size`: preallocation).
    extents: Vec<Extent>,
}

impl File {
    fn allocated(&self) -> u64 {
        self.extents.last().map_or(0, |e| e.at + e.len)
    }

    /// Drop the allocation past file byte `keep` (a block boundary); the device ranges it held.
    fn cut(&mut self, keep: u64) -> Vec<(u64, u64)> {
        let mut freed = Vec::new();
        while let Some(e) = self.extents.last_mut() {
            if e.at >= keep {
                freed.push((e.dev, e.len));
                self.extents.pop();
            } else {
                if e.at + e.len > keep {
                    let cut = e.at + e.len - keep;
                    freed.push((e.dev + e.len - cut, cut));
                    e.len -= cut;
                }
                break;
            }
        }
        freed
    }
}

/// Counts at the file system's two interfaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsCounters {
    /// Bytes the application wrote.
    pub file_write_bytes: u64,
    /// Bytes the application read.
    pub file_read_bytes: u64,
    /// Bytes written to the device.
    pub dev_write_bytes: u64,
    /// Bytes read from the device.
    pub dev_read_bytes: u64,
    /// Bytes discarded (trimmed) on the device.
    pub dev_trim_bytes: u64,
    /// Files created.
    pub creates: u64,
    /// Files deleted.
    pub deletes: u64,
}

/// The file system: files, free space, and the goal of each group.
#[derive(Debug, Clone)]
pub struct ConvFs {
    cfg: ConvFsConfig,
    files: HashMap<FileId, File>,
    /// Free extents: start -> length, disjoint, not adjacent (merged).
    free: BTreeMap<u64, u64>,
    free_bytes: u64,
    goals: HashMap<u32, u64>,
    counters: FsCounters,
}

impl ConvFs {
    /// An empty file system on the whole namespace.
    pub fn new(cfg: ConvFsConfig) -> Result<ConvFs, FsError> {
        let b = cfg.block_bytes as u64;
        if b == 0 || !b.is_power_of_two() {
            return Err(FsError::Config("block_bytes must be a power of two"));
        }
        if cfg.chunk_bytes == 0 || !cfg.chunk_bytes.is_multiple_of(b) {
            return Err(FsError::Config("chunk_bytes must be a positive multiple of the block"));
        }
        let size = cfg.device_bytes / b * b;
        if size == 0 {
            return Err(FsError::Config("the device holds no whole block"));
        }
        let mut free = BTreeMap::new();
        free.insert(0, size);
        Ok(ConvFs { cfg, files: HashMap::new(), free, free_bytes: size, goals: HashMap::new(), counters: FsCounters::default() })
    }

    /// Its figures.
    pub fn config(&self) -> &ConvFsConfig {
        &self.cfg
    }

    /// Counts at its two interfaces.
    pub fn counters(&self) -> FsCounters {
        self.counters
    }

    /// Free bytes (preallocated space of live files is not free).
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Live files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Extents of `file` holding data (preallocation past the size cut off).
    pub fn extents(&self, file: FileId) -> Option<Vec<Extent>> {
        let f = self.files.get(&file)?;
        Some(clip(&f.extents, 0, f.size))
    }

    /// Apply one file operation; the block I/O it causes is appended to `out` (in order).
    pub fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        match *op {
            FileOp::Create { file, group } => {
                if self.files.contains_key(&file) {
                    return Err(FsError::Exists(file));
                }
                self.files.insert(file, File { group, size: 0, extents: Vec::new() });
                self.counters.creates += 1;
            }
            FileOp::Write { file, offset, len } => self.write(file, offset, len, out)?,
            FileOp::Read { file, offset, len } => {
                let f = self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
                let end = offset + len as u64;
                if end > f.size {
                    return Err(FsError::ReadPastEnd { file, offset, end, size: f.size });
                }
                let pieces = clip(&f.extents, offset, end);
                self.emit(Op::Read, &pieces, out);
                self.counters.file_read_bytes += len as u64;
            }
            FileOp::Close { file } => {
                // Unused preallocation goes back to free space (ext4 discards a file's
                // preallocation when it is closed).
                let b = self.cfg.block_bytes as u64;
                let f = self.files.get_mut(&file).ok_or(FsError::NoSuchFile(file))?;
                let keep = f.size.div_ceil(b) * b;
                for (dev, len) in f.cut(keep) {
                    self.release(dev, len);
                }
            }
            // The model writes at once: nothing is left to make durable (a page cache above it
            // holds writes until these).
            FileOp::Sync { .. } | FileOp::Clock { .. } => {}
            FileOp::Truncate { file, size } => self.truncate(file, size, out)?,
            FileOp::Delete { file } => {
                let f = self.files.remove(&file).ok_or(FsError::NoSuchFile(file))?;
                let data = clip(&f.extents, 0, f.size);
                if self.cfg.discard {
                    self.emit(Op::Trim, &data, out);
                }
                for e in &f.extents {
                    self.release(e.dev, e.len);
                }
                self.counters.deletes += 1;
            }
        }
        Ok(())
    }

    /// `ftruncate` to a smaller size: the blocks wholly past the new end are freed (discarded
    /// with online discard); the file's preallocation past its end goes too.
    fn truncate(&mut self, file: FileId, size: u64, out: &mut Vec<Io>) -> Result<(), FsError> {
        let b = self.cfg.block_bytes as u64;
        let f = self.files.get_mut(&file).ok_or(FsError::NoSuchFile(file))?;
        if size > f.size {
            return Err(FsError::Hole { file, offset: size, size: f.size });
        }
        let keep = size.div_ceil(b) * b;
        let data = clip(&f.extents, keep, f.size.div_ceil(b) * b);
        let freed = f.cut(keep);
        f.size = size;
        if self.cfg.discard {
            self.emit(Op::Trim, &data, out);
        }
        for (dev, len) in freed {
            self.release(dev, len);
        }
        Ok(())
    }

    fn write(&mut self, file: FileId, offset: u64, len: u32, out: &mut Vec<Io>) -> Result<(), FsError> {
        check_blocks(file, offset, len, self.cfg.block_bytes)?;
        let f = self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
        if offset > f.size {
            return Err(FsError::Hole { file, offset, size: f.size });
        }
        let end = offset + len as u64;
        let (group, allocated) = (f.group, f.allocated());
        if end > allocated {
            let need = (end - allocated).div_ceil(self.cfg.chunk_bytes) * self.cfg.chunk_bytes;
            let got = self.allocate(group, need, end - allocated)?;
            let f = self.files.get_mut(&file).expect("checked");
            let mut at = allocated;
            for (dev, l) in got {
                // Extend the last extent when the new space follows it on the device.
                match f.extents.last_mut() {
                    Some(e) if e.dev + e.len == dev => e.len += l,
                    _ => f.extents.push(Extent { at, dev, len: l }),
                }
                at += l;
            }
        }
        let f = self.files.get_mut(&file).expect("checked");
        f.size = f.size.max(end);
        let pieces = clip(&f.extents, offset, end);
        self.emit(Op::Write, &pieces, out);
        self.counters.file_write_bytes += len as u64;
        Ok(())
    }

    /// Take `want` bytes (at least `min` of them; `want` rounded to blocks) of free space, first
    /// fit from group `group`'s goal, wrapping around; as few extents as possible.
    fn allocate(&mut self, group: u32, want: u64, min: u64) -> Result<Vec<(u64, u64)>, FsError> {
        let b = self.cfg.block_bytes as u64;
        let min = min.div_ceil(b) * b;
        if self.free_bytes < min {
            return Err(FsError::NoSpace { need: min, free: self.free_bytes });
        }
        // Near a full device take what is left.
        let mut want = want.min(self.free_bytes);
        let spread = self.cfg.group_spread_bytes;
        let size = self.cfg.device_bytes / b * b;
        let goal = *self.goals.entry(group).or_insert_with(|| if spread == 0 { 0 } else { (group as u64 * spread) % size / b * b });
        let mut got = Vec::new();
        let mut cursor = goal;
        while want > 0 {
            // The free extent holding the cursor or the next one after it, else wrap.
            let hit = self.free.range(..=cursor).next_back().filter(|(&s, &l)| s + l > cursor).map(|(&s, &l)| (s, l));
            let (s, l) = match hit.or_else(|| self.free.range(cursor..).next().map(|(&s, &l)| (s, l))).or_else(|| self.free.iter().next().map(|(&s, &l)| (s, l))) {
                Some(x) => x,
                None => break,
            };
            let from = if s <= cursor && cursor < s + l { cursor } else { s };
            let take = want.min(s + l - from);
            self.take(s, l, from, take);
            got.push((from, take));
            want -= take;
            cursor = from + take;
        }
        self.goals.insert(group, cursor % size);
        Ok(got)
    }

    /// Remove [from, from + take) from the free extent (s, l).
    fn take(&mut self, s: u64, l: u64, from: u64, take: u64) {
        self.free.remove(&s);
        if from > s {
            self.free.insert(s, from - s);
        }
        if from + take < s + l {
            self.free.insert(from + take, s + l - from - take);
        }
        self.free_bytes -= take;
    }

    /// Return [dev, dev + len) to free space, merging with neighbours.
    fn release(&mut self, dev: u64, len: u64) {
        let (mut s, mut l) = (dev, len);
        if let Some((&ps, &pl)) = self.free.range(..s).next_back() {
            debug_assert!(ps + pl <= s, "freeing space that is free");
            if ps + pl == s {
                self.free.remove(&ps);
                s = ps;
                l += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(s + l)) {
            self.free.remove(&(s + l));
            l += nl;
        }
        self.free.insert(s, l);
        self.free_bytes += len;
    }

    fn emit(&mut self, op: Op, pieces: &[Extent], out: &mut Vec<Io>) {
        // Split at u32 lengths (a command's length field).
        const MAX: u64 = 1 << 30;
        for e in pieces {
            let mut off = 0;
            while off < e.len {
                let l = (e.len - off).min(MAX);
                out.push(Io { op, ns: self.cfg.ns, offset: e.dev + off, len: l as u32, pid: Pid::NONE });
                match op {
                    Op::Write => self.counters.dev_write_bytes += l,
                    Op::Read => self.counters.dev_read_bytes += l,
                    _ => self.counters.dev_trim_bytes += l,
                }
                off += l;
            }
        }
    }
}

/// The parts of `extents` covering file bytes [from, to), as extents.
fn clip(extents: &[Extent], from: u64, to: u64) -> Vec<Extent> {
    let mut v = Vec::new();
    for e in extents {
        let (a, z) = (e.at.max(from), (e.at + e.len).min(to));
        if a < z {
            v.push(Extent { at: a, dev: e.dev + (a - e.at), len: z - a });
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn fs(discard: bool) -> ConvFs {
        ConvFs::new(ConvFsConfig { discard, chunk_bytes: MIB, group_spread_bytes: 16 * MIB, ..ConvFsConfig::new(0, 64 * MIB) }).unwrap()
    }

    fn create(fs: &mut ConvFs, file: FileId, group: u32) {
        fs.apply(&FileOp::Create { file, group }, &mut Vec::new()).unwrap();
    }

    fn write(fs: &mut ConvFs, file: FileId, offset: u64, len: u32) -> Vec<Io> {
        let mut out = Vec::new();
        fs.apply(&FileOp::Write { file, offset, len }, &mut out).unwrap();
        out
    }

    #[test]
    fn appends_fill_chunks_and_overwrites_go_in_place() {
        let mut f = fs(true);
        create(&mut f, 1, 0);
        create(&mut f, 2, 0);
        // Two files of one group appending in turn get a chunk each, side by side.
        let a = write(&mut f, 1, 0, 256 << 10);
        let b = write(&mut f, 2, 0, 256 << 10);
        assert_eq!((a[0].offset, b[0].offset), (0, MIB));
        let a2 = write(&mut f, 1, 256 << 10, 256 << 10);
        assert_eq!(a2[0].offset, 256 << 10, "the file's chunk continues");
        let again = write(&mut f, 1, 4096, 8192);
        assert_eq!((again[0].offset, again[0].len), (4096, 8192), "in place");
        assert_eq!(f.free_bytes(), 62 * MIB);
        // Another group starts at its own goal.
        create(&mut f, 3, 1);
        assert_eq!(write(&mut f, 3, 0, 4096)[0].offset, 16 * MIB);
    }

    /// `ftruncate`: the blocks wholly past the new end (and the preallocation) are freed, and
    /// discarded with online discard; the block holding the new end stays.
    #[test]
    fn truncate_frees_the_tail() {
        for discard in [true, false] {
            let mut f = fs(discard);
            create(&mut f, 1, 0);
            write(&mut f, 1, 0, 16 * 4096);
            assert_eq!(f.free_bytes(), 63 * MIB, "one 1 MiB chunk taken");
            let mut out = Vec::new();
            f.apply(&FileOp::Truncate { file: 1, size: 4 * 4096 + 100 }, &mut out).unwrap();
            assert_eq!(f.free_bytes(), 64 * MIB - 5 * 4096, "5 blocks kept");
            let trims: Vec<(u64, u32)> = out.iter().filter(|i| i.op == Op::Trim).map(|i| (i.offset, i.len)).collect();
            assert_eq!(trims, if discard { vec![(5 * 4096, 11 * 4096)] } else { vec![] });
            // The file goes on from its new end.
            assert_eq!(write(&mut f, 1, 4 * 4096, 8192)[0].offset, 4 * 4096);
            let e = f.apply(&FileOp::Truncate { file: 1, size: MIB }, &mut Vec::new()).unwrap_err();
            assert!(matches!(e, FsError::Hole { .. }), "{e}");
        }
    }

    #[test]
    fn delete_discards_the_data_and_frees_the_preallocation() {
        for discard in [true, false] {
            let mut f = fs(discard);
            create(&mut f, 1, 0);
            write(&mut f, 1, 0, 3 * (MIB as u32) / 2);
            assert_eq!(f.free_bytes(), 62 * MIB);
            let mut out = Vec::new();
            f.apply(&FileOp::Delete { file: 1 }, &mut out).unwrap();
            assert_eq!(f.free_bytes(), 64 * MIB);
            let trimmed: u64 = out.iter().filter(|i| i.op == Op::Trim).map(|i| i.len as u64).sum();
            assert_eq!(trimmed, if discard { 3 * MIB / 2 } else { 0 }, "discard {discard}: only the data is trimmed");
            assert_eq!(f.free.len(), 1, "free space merged back into one extent");
        }
    }

    #[test]
    fn close_returns_the_unused_preallocation() {
        let mut f = fs(true);
        create(&mut f, 1, 0);
        write(&mut f, 1, 0, 3 * (MIB as u32) / 2);
        assert_eq!(f.free_bytes(), 62 * MIB);
        f.apply(&FileOp::Close { file: 1 }, &mut Vec::new()).unwrap();
        assert_eq!(f.free_bytes(), 64 * MIB - 3 * MIB / 2);
        assert_eq!(f.extents(1).unwrap().iter().map(|e| e.len).sum::<u64>(), 3 * MIB / 2);
        // The freed tail joins the free space after it.
        assert_eq!(f.free.get(&(3 * MIB / 2)), Some(&(64 * MIB - 3 * MIB / 2)));
    }

    #[test]
    fn full_device_wraps_then_reports_no_space() {
        let mut f = fs(true);
        for i in 0..63 {
            create(&mut f, i, 0);
            write(&mut f, i, 0, MIB as u32);
        }
        // Free the first file; the next chunk wraps around to it.
        f.apply(&FileOp::Delete { file: 0 }, &mut Vec::new()).unwrap();
        create(&mut f, 100, 0);
        let w = write(&mut f, 100, 0, 2 * MIB as u32);
        let mut at: Vec<_> = w.iter().map(|i| (i.offset, i.len)).collect();
        at.sort();
        assert_eq!(at, vec![(0, MIB as u32), (63 * MIB, MIB as u32)], "the last free megabyte and the freed one");
        create(&mut f, 101, 0);
        let err = f.apply(&FileOp::Write { file: 101, offset: 0, len: 4096 }, &mut Vec::new()).unwrap_err();
        assert_eq!(err, FsError::NoSpace { need: 4096, free: 0 });
    }

    #[test]
    fn reads_find_the_written_blocks_and_bad_operations_are_refused() {
        let mut f = fs(true);
        create(&mut f, 1, 0);
        create(&mut f, 2, 0);
        for k in 0..6u64 {
            write(&mut f, 1 + k % 2, (k / 2) * (512 << 10), 512 << 10);
        }
        let mut out = Vec::new();
        f.apply(&FileOp::Read { file: 2, offset: 0, len: 3 * (512 << 10) }, &mut out).unwrap();
        let (reads, exts): (Vec<_>, Vec<_>) = (out.iter().map(|i| (i.offset, i.len as u64)).collect(), f.extents(2).unwrap().iter().map(|e| (e.dev, e.len)).collect());
        assert_eq!(reads, exts);
        let mut o = Vec::new();
        assert!(matches!(f.apply(&FileOp::Write { file: 1, offset: 8 * MIB, len: 4096 }, &mut o), Err(FsError::Hole { .. })));
        assert!(matches!(f.apply(&FileOp::Read { file: 1, offset: 0, len: 4 * MIB as u32 }, &mut o), Err(FsError::ReadPastEnd { .. })));
        assert!(matches!(f.apply(&FileOp::Write { file: 9, offset: 0, len: 4096 }, &mut o), Err(FsError::NoSuchFile(9))));
        assert!(matches!(f.apply(&FileOp::Write { file: 1, offset: 1, len: 4096 }, &mut o), Err(FsError::Unaligned { .. })));
        assert!(matches!(f.apply(&FileOp::Create { file: 1, group: 0 }, &mut o), Err(FsError::Exists(1))));
        assert!(o.is_empty(), "refused operations send nothing");
    }
}
