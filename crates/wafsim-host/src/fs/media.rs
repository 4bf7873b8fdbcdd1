//! Two file systems as one, by media class: a store that knows which of its files are hot (an
//! LSM tree's upper levels, its log) keeps them on a small fast staging device and the rest on
//! a capacity device, as HSE's media classes do (`staging` and `capacity` mpool media classes,
//! chosen per kvs by `mclass` policy: the root and internal nodes' kvsets on staging, leaves on
//! capacity). The store says where a file goes by a bit of the file's group (its directory);
//! each device has its own file system (a conventional one, or a zone-aware one on a ZNS
//! capacity drive), and this layer only routes.

use std::collections::HashSet;
use wafsim_core::Io;
use wafsim_core::pipeline::{FileId, FileOp};

use super::{FileSystem, FsError, Space};

/// Routes files by media class: files created in a group with `capacity_bit` set go to the
/// capacity file system (with the bit cleared from the group), all others to staging.
pub struct MediaClassFs<S, C> {
    staging: S,
    capacity: C,
    capacity_bit: u32,
    /// Files on the capacity file system.
    on_capacity: HashSet<FileId>,
}

/// Bytes per media class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaClassBytes {
    /// Bytes the store wrote to files of this class.
    pub file_write_bytes: u64,
    /// Bytes the class's file system wrote to its device.
    pub dev_write_bytes: u64,
}

impl<S: FileSystem, C: FileSystem> MediaClassFs<S, C> {
    /// Files of groups with `capacity_bit` set on `capacity`, the rest on `staging`.
    pub fn new(staging: S, capacity: C, capacity_bit: u32) -> Self {
        assert!(capacity_bit.is_power_of_two(), "the media class is one bit of the group");
        MediaClassFs { staging, capacity, capacity_bit, on_capacity: HashSet::new() }
    }

    /// Staging's and capacity's bytes.
    pub fn class_bytes(&self) -> [MediaClassBytes; 2] {
        let one = |(file_write_bytes, dev_write_bytes)| MediaClassBytes { file_write_bytes, dev_write_bytes };
        [one(self.staging.write_bytes()), one(self.capacity.write_bytes())]
    }

    fn capacity_file(&self, file: FileId) -> bool {
        self.on_capacity.contains(&file)
    }
}

impl<S: FileSystem, C: FileSystem> FileSystem for MediaClassFs<S, C> {
    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        let capacity = match *op {
            FileOp::Create { file, group } => {
                let cap = group & self.capacity_bit != 0;
                let op = FileOp::Create { file, group: group & !self.capacity_bit };
                let r = if cap { self.capacity.apply(&op, out) } else { self.staging.apply(&op, out) };
                if cap && r.is_ok() {
                    self.on_capacity.insert(file);
                }
                return r;
            }
            FileOp::Write { file, .. } | FileOp::Read { file, .. } | FileOp::Close { file } | FileOp::Truncate { file, .. } | FileOp::Sync { file } => self.capacity_file(file),
            // Both file systems share the application's clock.
            FileOp::Clock { .. } => {
                self.staging.apply(op, out)?;
                return self.capacity.apply(op, out);
            }
            FileOp::Delete { file } => self.on_capacity.remove(&file),
        };
        if capacity {
            self.capacity.apply(op, out)
        } else {
            self.staging.apply(op, out)
        }
    }

    fn write_bytes(&self) -> (u64, u64) {
        let (a, b) = (self.staging.write_bytes(), self.capacity.write_bytes());
        (a.0 + b.0, a.1 + b.1)
    }

    /// The capacity device's zones (the one a zone map shows).
    fn zone_live_bytes(&self) -> Option<Vec<u64>> {
        self.capacity.zone_live_bytes()
    }
    fn space(&self) -> Vec<Space> {
        let class = |v: Vec<Space>, class| v.into_iter().map(move |s| Space { class, ..s });
        class(self.staging.space(), "staging").chain(class(self.capacity.space(), "capacity")).collect()
    }
}

impl FileSystem for Box<dyn FileSystem> {
    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        (**self).apply(op, out)
    }
    fn write_bytes(&self) -> (u64, u64) {
        (**self).write_bytes()
    }
    fn zone_live_bytes(&self) -> Option<Vec<u64>> {
        (**self).zone_live_bytes()
    }
    fn space(&self) -> Vec<Space> {
        (**self).space()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{ConvFs, ConvFsConfig};
    use wafsim_core::Op;

    #[test]
    fn files_go_to_their_class_and_stay_there() {
        let staging = ConvFs::new(ConvFsConfig { discard: true, ..ConvFsConfig::new(0, 64 << 20) }).unwrap();
        let capacity = ConvFs::new(ConvFsConfig { discard: true, ..ConvFsConfig::new(1, 256 << 20) }).unwrap();
        let mut fs = MediaClassFs::new(staging, capacity, 1 << 31);
        let mut out = Vec::new();
        let ops = [
            FileOp::Create { file: 1, group: 7 },
            FileOp::Create { file: 2, group: 7 | 1 << 31 },
            FileOp::Write { file: 1, offset: 0, len: 1 << 20 },
            FileOp::Write { file: 2, offset: 0, len: 2 << 20 },
            FileOp::Read { file: 2, offset: 0, len: 4096 },
        ];
        for op in &ops {
            fs.apply(op, &mut out).unwrap();
        }
        let writes = |ns| out.iter().filter(|i| i.op == Op::Write && i.ns == ns).map(|i| i.len as u64).sum::<u64>();
        assert_eq!(writes(0), 1 << 20);
        assert_eq!(writes(1), 2 << 20);
        assert!(out.iter().any(|i| i.op == Op::Read && i.ns == 1));
        assert_eq!(fs.class_bytes()[1].file_write_bytes, 2 << 20);
        assert_eq!(fs.write_bytes().0, 3 << 20);
        // A deleted capacity file's id may come back on staging.
        fs.apply(&FileOp::Delete { file: 2 }, &mut out).unwrap();
        fs.apply(&FileOp::Create { file: 2, group: 1 }, &mut out).unwrap();
        out.clear();
        fs.apply(&FileOp::Write { file: 2, offset: 0, len: 4096 }, &mut out).unwrap();
        assert_eq!(out.iter().filter(|i| i.op == Op::Write).map(|i| i.ns).collect::<Vec<_>>(), vec![0]);
    }
}
