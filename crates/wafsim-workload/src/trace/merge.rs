//! Several traces, each bound to a namespace, interleaved by timestamp into one
//! [`IoSource`].
//!
//! Each trace's timestamps are relative to its own first record, so all traces start
//! together. The next I/O is the head record with the smallest timestamp; ties go to the
//! trace listed first (stable and deterministic). Records are pulled lazily, one per trace at a
//! time, so memory stays constant whatever the trace sizes.
//!
//! `IoSource::fill` cannot return errors: on the first bad line (or an I/O that does not fit
//! under [`OffsetPolicy::Error`], or a trace that runs out without yielding a single I/O) the
//! merge stops, `fill` returns 0 and [`TraceMerge::error`] tells what happened. Check it once
//! the source is exhausted.

use std::path::Path;

use wafsim_core::{Io, Pid};

use super::{open_trace_detected, RecordIter, TraceError, TraceFormat, TraceRecord};
use crate::IoSource;
use wafsim_core::pipeline::SourceError;

/// What to do with an I/O that does not fit inside the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetPolicy {
    /// Stop with an error naming the trace line (experiment TOML: `offsets = "error"`).
    Error,
    /// `offset mod ns_bytes`, aligned down to `align` bytes; an I/O that would then cross the
    /// end is moved back to end at the last aligned position that fits (experiment TOML:
    /// `offsets = "wrap"`, the default).
    Wrap {
        /// Alignment of the folded offset, bytes.
        align: u64,
    },
}

/// One trace bound to a namespace.
pub struct TraceInput {
    /// The trace's records, in file order.
    pub records: RecordIter,
    /// Name for diagnostics.
    pub name: String,
    /// Namespace index the records are replayed on (NVMe nsid - 1).
    pub ns: u32,
    /// Namespace size, bytes: offsets must fit below it (or are folded, see `policy`).
    pub ns_bytes: u64,
    /// Keep only records whose key equals this (file name, `major,minor`, `host_disk`).
    pub key_filter: Option<String>,
    /// What to do with an I/O that does not fit the namespace.
    pub policy: OffsetPolicy,
    /// Placement id carried by this trace's writes (default `Pid::NONE`).
    pub write_pid: Pid,
    /// Byte offsets (ascending) splitting the namespace into LBA ranges whose writes carry
    /// placement handles 0, 1, ...: a write starting at or beyond `write_split[i]` and below
    /// `write_split[i + 1]` carries handle i + 1. Empty: `write_pid` for every write.
    pub write_split: Vec<u64>,
    /// The trace's format, when known (it words the message for a trace with no records).
    pub format: Option<TraceFormat>,
}

impl TraceInput {
    /// Bind a record stream to namespace `ns` of `ns_bytes` bytes (no filter, errors on
    /// out-of-range I/O, no placement id).
    pub fn new(records: RecordIter, name: &str, ns: u32, ns_bytes: u64) -> Self {
        TraceInput {
            records,
            name: name.to_string(),
            ns,
            ns_bytes,
            key_filter: None,
            policy: OffsetPolicy::Error,
            write_pid: Pid::NONE,
            write_split: Vec::new(),
            format: None,
        }
    }
    /// Open a trace file (format detected when `None`). An empty file, or one with only blank
    /// and comment lines, is a [`TraceError::NoRecords`] here already.
    pub fn open(path: &Path, format: Option<TraceFormat>, ns: u32, ns_bytes: u64) -> Result<Self, TraceError> {
        let (records, format) = open_trace_detected(path, format)?;
        Ok(Self::new(records, &path.display().to_string(), ns, ns_bytes).with_format(format))
    }
    /// Keep only records whose key is `key`.
    pub fn with_filter(mut self, key: &str) -> Self {
        self.key_filter = Some(key.to_string());
        self
    }
    /// What to do with I/Os beyond the namespace.
    pub fn with_policy(mut self, policy: OffsetPolicy) -> Self {
        self.policy = policy;
        self
    }
    /// Placement id for this trace's writes.
    pub fn with_write_pid(mut self, pid: Pid) -> Self {
        self.write_pid = pid;
        self
    }
    /// Split the trace's writes into LBA ranges by placement handle (see
    /// [`TraceInput::write_split`]); replaces `write_pid`.
    pub fn with_write_split(mut self, bounds: Vec<u64>) -> Self {
        self.write_split = bounds;
        self
    }
    /// Name the trace's format (for messages).
    pub fn with_format(mut self, format: TraceFormat) -> Self {
        self.format = Some(format);
        self
    }

    fn to_io(&self, r: &TraceRecord) -> Result<Io, TraceError> {
        let err = |message: String| TraceError::Parse { file: self.name.clone(), line: r.line, message };
        let len = u32::try_from(r.len).map_err(|_| err(format!("I/O length {} does not fit 32 bits", r.len)))?;
        let offset = match self.policy {
            OffsetPolicy::Error => {
                if r.offset.checked_add(r.len).is_none_or(|end| end > self.ns_bytes) {
                    return Err(err(format!(
                        "I/O at offset {} length {} ends beyond namespace {} ({} bytes); set offsets = \"wrap\" in this [[phase.trace]] \
                         table to fold offsets into the namespace, or run with --full-scale if the namespace was scaled down",
                        r.offset, r.len, self.ns, self.ns_bytes
                    )));
                }
                r.offset
            }
            OffsetPolicy::Wrap { align } => {
                let a = align.max(1);
                if r.len > self.ns_bytes {
                    return Err(err(format!("I/O length {} is larger than namespace {} ({} bytes)", r.len, self.ns, self.ns_bytes)));
                }
                let mut off = (r.offset % self.ns_bytes) / a * a;
                if off + r.len > self.ns_bytes {
                    off = (self.ns_bytes - r.len) / a * a;
                }
                off
            }
        };
        let pid = match r.op {
            // The range of the write's first byte (after wrapping) picks the handle.
            wafsim_core::Op::Write if !self.write_split.is_empty() => Pid::new(0, self.write_split.partition_point(|&b| b <= offset) as u16),
            wafsim_core::Op::Write => self.write_pid,
            _ => Pid::NONE,
        };
        Ok(Io { op: r.op, ns: self.ns, offset, len, pid })
    }
}

struct Slot {
    input: TraceInput,
    head: Option<TraceRecord>,
    exhausted: bool,
    /// Records read, and those that passed the filter.
    read: u64,
    matched: u64,
    /// The first few distinct keys read, for the message when the filter matches none.
    keys: Vec<String>,
}

/// Distinct keys listed in a "matched none" message.
const KEYS_SHOWN: usize = 8;

impl Slot {
    fn new(input: TraceInput) -> Self {
        Slot { input, head: None, exhausted: false, read: 0, matched: 0, keys: Vec::new() }
    }

    fn note_key(&mut self, key: &str) {
        // Checking at most KEYS_SHOWN + 1 entries keeps this cheap per record.
        if self.keys.len() <= KEYS_SHOWN && !self.keys.iter().any(|k| k == key) {
            self.keys.push(key.to_string());
        }
    }

    /// The error for a trace that ran out without a record passing the filter.
    fn no_records(&self) -> TraceError {
        let reason = match &self.input.key_filter {
            Some(f) if self.read > 0 => {
                let mut seen = self.keys.iter().take(KEYS_SHOWN).cloned().collect::<Vec<_>>().join(", ");
                if self.keys.len() > KEYS_SHOWN {
                    seen.push_str(", ...");
                }
                let noun = self.input.format.map_or("keys", TraceFormat::key_noun);
                format!("filter \"{f}\" matched none of {} records; {noun} seen: {seen}", wafsim_core::units::thousands(self.read))
            }
            _ => match self.input.format {
                Some(TraceFormat::MsrCsv) => "no data rows with Size > 0; only a header, blank or comment lines".into(),
                Some(TraceFormat::Blkparse) => {
                    "no Q (queue) events with a sector range; expected blkparse text output such as \
                     \"8,0 3 1 0.000000000 1234 Q WS 1000 + 8 [fio]\""
                        .into()
                }
                Some(TraceFormat::FioIolog) => "no read, write or trim lines of non-zero length after the header".into(),
                None => "the reader found no read, write or trim of non-zero length".into(),
            },
        };
        TraceError::NoRecords { file: self.input.name.clone(), reason }
    }
}

/// Timestamp-ordered merge of traces (see the module docs).
pub struct TraceMerge {
    slots: Vec<Slot>,
    error: Option<TraceError>,
    /// The error was returned from `fill` (once; exhausted after it).
    reported: bool,
    emitted: u64,
}

impl TraceMerge {
    /// Merge `inputs`; ties in time go to the earlier input.
    pub fn new(inputs: Vec<TraceInput>) -> Self {
        TraceMerge { slots: inputs.into_iter().map(Slot::new).collect(), error: None, reported: false, emitted: 0 }
    }
    /// The error that stopped the merge, if any.
    pub fn error(&self) -> Option<&TraceError> {
        self.error.as_ref()
    }
    /// I/Os produced so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    fn refill(&mut self, i: usize) -> Result<(), TraceError> {
        let s = &mut self.slots[i];
        while s.head.is_none() && !s.exhausted {
            match s.input.records.next() {
                None => {
                    s.exhausted = true;
                    // Replaying nothing must not pass for success (wrong filter, format or file).
                    if s.matched == 0 {
                        return Err(s.no_records());
                    }
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(r)) => {
                    s.read += 1;
                    if s.input.key_filter.as_deref().is_none_or(|k| k == &*r.key) {
                        s.matched += 1;
                        s.head = Some(r);
                    } else {
                        s.note_key(&r.key);
                    }
                }
            }
        }
        Ok(())
    }
}

impl IoSource for TraceMerge {
    /// A read or parse error ends the merge: returned once the I/Os before it are handed out
    /// (and kept for [`TraceMerge::error`]).
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        let mut n = 0;
        while n < max && self.error.is_none() {
            let mut best: Option<(u64, usize)> = None;
            for i in 0..self.slots.len() {
                if let Err(e) = self.refill(i) {
                    self.error = Some(e);
                    break;
                }
                if let Some(h) = &self.slots[i].head {
                    if best.is_none_or(|(t, _)| h.timestamp_ns < t) {
                        best = Some((h.timestamp_ns, i));
                    }
                }
            }
            if self.error.is_some() {
                break;
            }
            let Some((_, i)) = best else { break };
            let rec = self.slots[i].head.take().expect("head checked above");
            match self.slots[i].input.to_io(&rec) {
                Ok(io) => {
                    out.push(io);
                    n += 1;
                    self.emitted += 1;
                }
                Err(e) => self.error = Some(e),
            }
        }
        match &self.error {
            Some(e) if n == 0 && !self.reported => {
                self.reported = true;
                Err(SourceError::input(e))
            }
            _ => Ok(n),
        }
    }
}
