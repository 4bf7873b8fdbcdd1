//! Higher-level operations (file operations, key-value requests) turned into block I/O a batch at
//! a time. A file system or an application model (the [`Engine`]) applies each operation and
//! appends the commands it causes; what does not fit the caller's batch waits for the next one,
//! so one operation may span batches and the stream is the same whatever the batch sizes.

use crate::files::{FileOp, FileSource};
use crate::kv::{KvOp, KvSource};
use crate::IoSource;
use wafsim_core::{Io, Op};

/// Where operations come from (file workloads, key-value request generators).
pub trait OpSource<T>: Send {
    /// Append up to `max` operations to `out`; how many (0: exhausted).
    fn fill_ops(&mut self, out: &mut Vec<T>, max: usize) -> usize;
}

impl<S: FileSource + Send> OpSource<FileOp> for S {
    fn fill_ops(&mut self, out: &mut Vec<FileOp>, max: usize) -> usize {
        self.fill(out, max)
    }
}

impl<S: KvSource> OpSource<KvOp> for S {
    fn fill_ops(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        self.fill(out, max)
    }
}

/// What turns one operation into block I/O, and reports on itself.
pub trait Engine<T>: Send {
    /// Why an operation is refused.
    type Error: std::fmt::Display;
    /// Apply `op`, appending the block I/O it causes to `out` in order. A refusal ends the
    /// stream.
    fn apply(&mut self, op: &T, out: &mut Vec<Io>) -> Result<(), Self::Error>;
    /// After every batch: writes of `pending_write_bytes` bytes were made but not handed out
    /// yet (counts taken at apply time run ahead of the device by this much).
    fn publish(&mut self, pending_write_bytes: u64);
    /// The operations ran out (called once, before the last [`Engine::publish`]).
    fn ended(&mut self) {}
    /// The first refused operation, described (the stream stops after it).
    fn refused(&mut self, what: String);
}

/// Operations from `S` through engine `E`, as a block I/O source.
pub struct Expand<T, S, E> {
    src: S,
    engine: E,
    ops: Vec<T>,
    pos: usize,
    /// Operations taken from the source at a time.
    ops_batch: usize,
    /// Block I/O made but not handed out yet.
    pending: Vec<Io>,
    taken: usize,
    /// Write bytes in `pending[taken..]`.
    pending_write_bytes: u64,
    failed: bool,
    ended: bool,
}

/// Bytes of the writes among `ios`.
fn write_bytes(ios: &[Io]) -> u64 {
    ios.iter().filter(|i| i.op == Op::Write).map(|i| i.len as u64).sum()
}

impl<T, S, E> Expand<T, S, E> {
    /// Take operations from `src` `ops_batch` at a time and apply them with `engine`.
    pub fn new(src: S, engine: E, ops_batch: usize) -> Self {
        Expand { src, engine, ops: Vec::new(), pos: 0, ops_batch: ops_batch.max(1), pending: Vec::new(), taken: 0, pending_write_bytes: 0, failed: false, ended: false }
    }

    /// The engine (for inspection).
    pub fn engine(&self) -> &E {
        &self.engine
    }
}

impl<T: Copy + std::fmt::Debug + Send, S: OpSource<T>, E: Engine<T>> IoSource for Expand<T, S, E> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> usize {
        let before = out.len();
        while out.len() - before < max {
            if self.taken < self.pending.len() {
                let n = (max - (out.len() - before)).min(self.pending.len() - self.taken);
                out.extend_from_slice(&self.pending[self.taken..self.taken + n]);
                self.pending_write_bytes -= write_bytes(&self.pending[self.taken..self.taken + n]);
                self.taken += n;
                continue;
            }
            self.pending.clear();
            self.taken = 0;
            if self.failed || self.ended {
                break;
            }
            if self.pos == self.ops.len() {
                self.ops.clear();
                self.pos = 0;
                if self.src.fill_ops(&mut self.ops, self.ops_batch) == 0 {
                    self.ended = true;
                    self.engine.ended();
                    break;
                }
            }
            let op = self.ops[self.pos];
            self.pos += 1;
            // The operation's I/O goes straight to `out`; what does not fit waits in `pending`
            // (the same stream as going through `pending` always, without copying every command).
            let r = self.engine.apply(&op, out);
            if out.len() - before > max {
                self.pending.extend_from_slice(&out[before + max..]);
                self.pending_write_bytes += write_bytes(&out[before + max..]);
                out.truncate(before + max);
            }
            if let Err(e) = r {
                self.engine.refused(format!("{op:?}: {e}"));
                self.failed = true;
            }
        }
        self.engine.publish(self.pending_write_bytes);
        out.len() - before
    }
}
