//! Higher-level operations (key-value requests, file operations) turned into lower-level
//! commands (file operations, block I/O) a batch at a time. A file system or an application
//! model (the [`Engine`]) applies each operation and appends the commands it causes; what does
//! not fit the caller's batch waits for the next one, so one operation may span batches and the
//! stream is the same whatever the batch sizes. An application model over a file system is two
//! of these stacked: requests -> file operations -> block I/O.

use super::files::{FileOp, FileSource};
use super::kv::{KvOp, KvSource};
use super::source::IoSource;
use super::SourceError;
use crate::io::{Io, Op};

/// Where operations come from (file workloads, key-value request generators).
pub trait OpSource<T>: Send {
    /// Append up to `max` operations to `out`; how many (`Ok(0)`: exhausted).
    fn fill_ops(&mut self, out: &mut Vec<T>, max: usize) -> Result<usize, SourceError>;
}

impl<S: FileSource + Send> OpSource<FileOp> for S {
    fn fill_ops(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
        self.fill(out, max)
    }
}

impl<S: KvSource> OpSource<KvOp> for S {
    fn fill_ops(&mut self, out: &mut Vec<KvOp>, max: usize) -> Result<usize, SourceError> {
        Ok(self.fill(out, max))
    }
}

/// A command an engine emits: block I/O or a file operation.
pub trait Command: Copy + Send {
    /// Bytes it writes (what "made but not handed out yet" counts).
    fn write_bytes(&self) -> u64;
}

impl Command for Io {
    #[inline]
    fn write_bytes(&self) -> u64 {
        if self.op == Op::Write {
            self.len as u64
        } else {
            0
        }
    }
}

impl Command for FileOp {
    #[inline]
    fn write_bytes(&self) -> u64 {
        if let FileOp::Write { len, .. } = self {
            *len as u64
        } else {
            0
        }
    }
}

/// What turns one operation into commands of the level below. Its counts are read from it
/// when asked (through [`Expand::engine`]), not pushed anywhere.
pub trait Engine<T>: Send {
    /// What it emits: [`Io`] (a file system, a store on a raw namespace) or [`FileOp`] (a
    /// store on a file system).
    type Out: Command;
    /// Why an operation is refused.
    type Error: std::fmt::Display;
    /// Apply `op`, appending the commands it causes to `out` in order. A refusal ends the
    /// stream: the commands handed out before it stand, the refusal is the source's error.
    fn apply(&mut self, op: &T, out: &mut Vec<Self::Out>) -> Result<(), Self::Error>;
    /// Whether refusal `e` means the layer is out of space (the source's error is then
    /// [`SourceError::no_space`]).
    fn is_no_space(_e: &Self::Error) -> bool {
        false
    }
    /// Refusal `e` of `op` as the source's error: no space where [`Engine::is_no_space`]
    /// says so, else a plain refusal (in words: a Rust debug struct means nothing to a user).
    fn refusal(op: impl Into<String>, e: Self::Error) -> SourceError {
        if Self::is_no_space(&e) {
            SourceError::no_space(op, e)
        } else {
            SourceError::refused(op, e)
        }
    }
    /// The operations ran out (called once); what it appends to `out` (a store's last flush,
    /// its background jobs' rest) is handed out next. An error (the last flush refused) ends
    /// the stream as a refusal does.
    fn ended(&mut self, _out: &mut Vec<Self::Out>) -> Result<(), SourceError> {
        Ok(())
    }
}

/// Operations from `S` through engine `E`, as a source of the engine's commands (an
/// [`IoSource`] or a [`FileSource`]).
pub struct Expand<T, S, E: Engine<T>> {
    src: S,
    engine: E,
    ops: Vec<T>,
    pos: usize,
    /// Operations taken from the source at a time.
    ops_batch: usize,
    /// Commands made but not handed out yet.
    pending: Vec<E::Out>,
    taken: usize,
    /// Write bytes in `pending[taken..]`.
    pending_write_bytes: u64,
    /// Why the stream stopped, until it is handed out (after the commands made before it).
    error: Option<SourceError>,
    failed: bool,
    ended: bool,
}

/// Bytes of the writes among `cmds`.
fn write_bytes<C: Command>(cmds: &[C]) -> u64 {
    cmds.iter().map(C::write_bytes).sum()
}

impl<T, S, E: Engine<T>> Expand<T, S, E> {
    /// Take operations from `src` `ops_batch` at a time and apply them with `engine`.
    pub fn new(src: S, engine: E, ops_batch: usize) -> Self {
        Expand { src, engine, ops: Vec::new(), pos: 0, ops_batch: ops_batch.max(1), pending: Vec::new(), taken: 0, pending_write_bytes: 0, error: None, failed: false, ended: false }
    }

    /// The engine (for inspection).
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The engine, to set it up before the first fill.
    pub fn engine_mut(&mut self) -> &mut E {
        &mut self.engine
    }

    /// Where the operations come from (for inspection: the store under a file system).
    pub fn source(&self) -> &S {
        &self.src
    }

    /// Where the operations come from, to set it up before the first fill.
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.src
    }

    /// Write bytes of the commands made but not handed out yet: counts the engine took at
    /// apply time run ahead of the level below by this much.
    pub fn pending_write_bytes(&self) -> u64 {
        self.pending_write_bytes
    }

    /// The operations ran out (the engine's [`Engine::ended`] was called).
    pub fn has_ended(&self) -> bool {
        self.ended
    }
}

impl<T: Copy + std::fmt::Debug + std::fmt::Display + Send, S: OpSource<T>, E: Engine<T>> Expand<T, S, E> {
    /// Move what went past `before + max` in `out` to `pending`.
    #[inline]
    fn spill(&mut self, out: &mut Vec<E::Out>, before: usize, max: usize) {
        if out.len() - before > max {
            self.pending.extend_from_slice(&out[before + max..]);
            self.pending_write_bytes += write_bytes(&out[before + max..]);
            out.truncate(before + max);
        }
    }

    /// Append up to `max` commands to `out`; how many (`Ok(0)`: the operations and everything
    /// they caused are all handed out). A refusal is returned once the commands made before it
    /// are handed out, on a call of its own (see [`IoSource::fill`]).
    pub fn fill_commands(&mut self, out: &mut Vec<E::Out>, max: usize) -> Result<usize, SourceError> {
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
                let got = match self.src.fill_ops(&mut self.ops, self.ops_batch) {
                    Ok(n) => n,
                    Err(e) => {
                        self.error = Some(e);
                        self.failed = true;
                        continue;
                    }
                };
                if got == 0 {
                    self.ended = true;
                    if let Err(e) = self.engine.ended(out) {
                        self.error = Some(e);
                        self.failed = true;
                    }
                    self.spill(out, before, max);
                    continue;
                }
            }
            let op = self.ops[self.pos];
            self.pos += 1;
            // The operation's commands go straight to `out`; what does not fit waits in
            // `pending` (the same stream as going through `pending` always, without copying
            // every command).
            let r = self.engine.apply(&op, out);
            if let Err(e) = r {
                self.error = Some(E::refusal(op.to_string(), e));
                self.failed = true;
            }
            self.spill(out, before, max);
        }
        let n = out.len() - before;
        if n == 0 {
            if let Some(e) = self.error.take() {
                return Err(e);
            }
        }
        Ok(n)
    }
}

impl<T: Copy + std::fmt::Debug + std::fmt::Display + Send, S: OpSource<T>, E: Engine<T, Out = Io>> IoSource for Expand<T, S, E> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        self.fill_commands(out, max)
    }
}

impl<T: Copy + std::fmt::Debug + std::fmt::Display + Send, S: OpSource<T>, E: Engine<T, Out = FileOp>> FileSource for Expand<T, S, E> {
    fn fill(&mut self, out: &mut Vec<FileOp>, max: usize) -> Result<usize, SourceError> {
        self.fill_commands(out, max)
    }
}
