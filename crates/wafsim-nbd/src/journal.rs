//! The command journal of a kept drive (see [`crate::persist`]): every command the drives ran
//! since a checkpoint, in order, as 32-byte records with their own CRC-32 after a 16-byte header.
//! Apart from persist.rs because the live drive (sim.rs) appends to it while persist.rs replays it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wafsim_core::{Io, Op, Pid};

pub(crate) const JOURNAL_MAGIC: [u8; 8] = *b"WAFSJRN1";
pub(crate) const RECORD: usize = 32;

/// The open journal commands are appended to (inside the drive's lock, so in run order).
pub struct Journal {
    /// Shared, so a sync can run outside the drive's lock.
    file: Arc<File>,
    buf: Vec<u8>,
    /// Records appended since it was opened.
    pub records: u64,
}

impl Journal {
    pub(crate) fn create(path: &Path, gen: u64) -> io::Result<Journal> {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
        let mut h = JOURNAL_MAGIC.to_vec();
        h.extend_from_slice(&gen.to_le_bytes());
        file.write_all(&h)?;
        Ok(Journal { file: Arc::new(file), buf: Vec::with_capacity(RECORD), records: 0 })
    }

    /// Append one command (written to the file now: a killed process loses none).
    pub fn append(&mut self, io: &Io) -> io::Result<()> {
        let op = match io.op {
            Op::Write => 0u8,
            Op::Read => 1,
            Op::Trim => 2,
            other => return Err(io::Error::other(format!("journal: {other:?} is not served over NBD"))),
        };
        self.buf.clear();
        self.buf.extend_from_slice(&[op, 0, 0, 0]);
        self.buf.extend_from_slice(&io.ns.to_le_bytes());
        self.buf.extend_from_slice(&io.offset.to_le_bytes());
        self.buf.extend_from_slice(&io.len.to_le_bytes());
        self.buf.extend_from_slice(&io.pid.0.to_le_bytes());
        self.buf.extend_from_slice(&[0; 4]);
        let crc = crc32fast::hash(&self.buf);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        (&*self.file).write_all(&self.buf)?;
        self.records += 1;
        Ok(())
    }

    /// The journal's file, to sync it without holding the drive's lock.
    pub(crate) fn file(&self) -> Arc<File> {
        self.file.clone()
    }
}

/// One record back, or None if it is damaged.
pub(crate) fn decode(r: &[u8; RECORD]) -> Option<Io> {
    if crc32fast::hash(&r[..28]) != u32::from_le_bytes(r[28..32].try_into().ok()?) {
        return None;
    }
    let op = match r[0] {
        0 => Op::Write,
        1 => Op::Read,
        2 => Op::Trim,
        _ => return None,
    };
    let word = |a: usize| u32::from_le_bytes(r[a..a + 4].try_into().expect("4 bytes"));
    Some(Io { op, ns: word(4), offset: u64::from_le_bytes(r[8..16].try_into().expect("8 bytes")), len: word(16), pid: Pid(word(20)) })
}

pub(crate) fn journal_path(dir: &Path, gen: u64) -> PathBuf {
    dir.join(format!("journal.{gen}"))
}
