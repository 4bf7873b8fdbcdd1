//! fio iolog reader, versions 2 and 3 (fio HOWTO "Trace file format").
//!
//! * v2: `filename action [offset length]`; timestamps come from `wait` actions (microseconds,
//!   relative to the previous wait), so a v2 trace without waits has all timestamps 0.
//! * v3: `timestamp filename action [offset length]`, timestamp in microseconds since the run
//!   start (fio writes `utime_since_now`).
//!
//! File actions `add`/`open`/`close` are checked (an I/O on a file that was never added is an
//! error, as in fio); `sync`/`datasync` carry no data and are skipped; `read`, `write`, `trim`
//! become records. Zero-length I/Os are skipped. Version 1 logs are rejected. Blank lines and
//! `#` comments are skipped, also before the header (fio itself wants the header first).
//!
//! [`IologWriter`] writes version 3 logs the way fio's `write_iolog` does, and [`IologTee`]
//! records what any [`IoSource`] emits:
//!
//! ```
//! use wafsim_core::{Io, Op, Pid};
//! use wafsim_workload::trace::iolog::{IologReader, IologWriter};
//! let mut w = IologWriter::new(Vec::new(), "/dev/nvme0n1").unwrap();
//! w.record(0, &Io { op: Op::Write, ns: 0, offset: 8192, len: 4096, pid: Pid::NONE }).unwrap();
//! w.record(2_500_000, &Io { op: Op::Trim, ns: 0, offset: 0, len: 8192, pid: Pid::NONE }).unwrap();
//! let text = String::from_utf8(w.finish().unwrap()).unwrap();
//! assert_eq!(text, "fio version 3 iolog\n0 /dev/nvme0n1 add\n0 /dev/nvme0n1 open\n\
//!                   0 /dev/nvme0n1 write 8192 4096\n2500 /dev/nvme0n1 trim 0 8192\n2500 /dev/nvme0n1 close\n");
//! let back: Vec<_> = IologReader::new(text.as_bytes(), "x.log").map(Result::unwrap).collect();
//! assert_eq!((back[1].op, back[1].timestamp_ns, back[1].len), (Op::Trim, 2_500_000, 8192));
//! ```

use crate::input::quote;
use std::collections::HashSet;
use std::io::{self, BufRead, BufWriter, Write};

use wafsim_core::{Io, Op};

use super::{content, is_filler, Lines, Rebase, TraceError, TraceRecord};
use crate::IoSource;
use wafsim_core::pipeline::{LayerFigures, SourceError};

/// Streaming iolog reader.
pub struct IologReader<R> {
    lines: Lines<R>,
    version: u8,
    files: HashSet<String>,
    wait_us: u64,
    rebase: Rebase,
    done: bool,
}

impl<R: BufRead> IologReader<R> {
    /// Reader of `input`; `name` identifies it in error messages.
    pub fn new(input: R, name: &str) -> Self {
        IologReader { lines: Lines::new(input, name), version: 0, files: HashSet::new(), wait_us: 0, rebase: Rebase::default(), done: false }
    }

    /// 2 or 3 once the header has been read, 0 before.
    pub fn version(&self) -> u8 {
        self.version
    }

    fn step(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        loop {
            if !self.lines.advance()? {
                return Ok(None);
            }
            if is_filler(&self.lines.buf) {
                continue;
            }
            let line = content(&self.lines.buf).to_string();
            if self.version == 0 {
                self.version = match line.as_str() {
                    "fio version 2 iolog" => 2,
                    "fio version 3 iolog" => 3,
                    _ => {
                        return Err(self.lines.error(format!(
                            "expected the header \"fio version 2 iolog\" or \"fio version 3 iolog\", found {}",
                            quote(&line)
                        )))
                    }
                };
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let (ts_us, rest) = if self.version == 3 {
                let ts: u64 = f[0].parse().map_err(|_| {
                    self.lines.error(format!("expected a timestamp in microseconds as the first field, found {}", quote(f[0])))
                })?;
                (Some(ts), &f[1..])
            } else {
                (None, &f[..])
            };
            let expected = if self.version == 3 {
                "expected \"timestamp filename action [offset length]\""
            } else {
                "expected \"filename action [offset length]\""
            };
            if rest.len() != 2 && rest.len() != 4 {
                return Err(self.lines.error(format!("{expected}, found {}", quote(&line))));
            }
            let (file, action) = (rest[0], rest[1]);
            if rest.len() == 2 {
                match action {
                    "add" => {
                        self.files.insert(file.to_string());
                    }
                    "open" | "close" => {
                        if !self.files.contains(file) {
                            return Err(self.lines.error(format!("file {} used before \"add\"", quote(file))));
                        }
                    }
                    _ => return Err(self.lines.error(format!("unknown file action {} (expected add, open or close)", quote(action)))),
                }
                continue;
            }
            let num = |s: &str, what: &str, lines: &Lines<R>| -> Result<u64, TraceError> {
                s.parse::<u64>().map_err(|_| lines.error(format!("{what} {} is not a byte count", quote(s))))
            };
            let offset = num(rest[2], "offset", &self.lines)?;
            let len = num(rest[3], "length", &self.lines)?;
            let op = match action {
                "read" => Op::Read,
                "write" => Op::Write,
                "trim" => Op::Trim,
                "sync" | "datasync" => continue,
                "wait" if self.version == 2 => {
                    self.wait_us = self.wait_us.saturating_add(offset);
                    continue;
                }
                _ => {
                    return Err(self.lines.error(format!(
                        "unknown action {} (expected read, write, trim, sync, datasync{})",
                        quote(action),
                        if self.version == 2 { " or wait" } else { "" }
                    )))
                }
            };
            if !self.files.contains(file) {
                return Err(self.lines.error(format!("file {} used before \"add\"", quote(file))));
            }
            if len == 0 {
                continue;
            }
            let t_ns = ts_us.unwrap_or(self.wait_us).saturating_mul(1000);
            let key = self.lines.key(file);
            return Ok(Some(TraceRecord { line: self.lines.line_no, timestamp_ns: self.rebase.rel(t_ns), op, offset, len, key }));
        }
    }
}

impl<R: BufRead> Iterator for IologReader<R> {
    type Item = Result<TraceRecord, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// fio's name of an I/O direction in an iolog (`io_ddir_name` in fio's io_ddir.h).
fn action(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        // fio logs a zone append as the write it is (DDIR_WRITE) and a flush as a sync.
        Op::Write | Op::Append => "write",
        Op::Trim => "trim",
        Op::Flush => "sync",
        // Not an iolog action: fio resets zones through ioctls, not as logged I/O.
        Op::Zone(_) => "",
    }
}

/// Writes a fio iolog, version 3, as fio's `write_iolog` does (fio 3.33 iolog.c): the header
/// `fio version 3 iolog`, `<usec> <file> add|open|close` lines and
/// `<usec> <file> read|write|trim <offset> <length>` lines, times in microseconds since the
/// start. The log names one file (or device); `fio --read_iolog` replays it there (or where
/// `replay_redirect` says). Output is buffered internally.
///
/// fio 3.33 writes `trim` lines itself but its `read_iolog` skips them ("bad ddir: 2"); newer
/// fio or our reader replay them.
pub struct IologWriter<W: Write> {
    out: BufWriter<W>,
    file: String,
    /// Time of the latest line, for the closing `close`.
    last_us: u64,
}

impl<W: Write> IologWriter<W> {
    /// Start a log of I/Os to `file_name`: the header, then the file's `add` and `open` at
    /// time 0. fio reads the name as one whitespace-free word of at most 256 bytes, so other
    /// names are refused (`InvalidInput`).
    pub fn new(out: W, file_name: &str) -> io::Result<Self> {
        if file_name.is_empty() || file_name.len() > 256 || file_name.chars().any(char::is_whitespace) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("iolog file name {file_name:?}: fio needs 1 to 256 bytes without blanks"),
            ));
        }
        let mut w = IologWriter { out: BufWriter::new(out), file: file_name.to_string(), last_us: 0 };
        writeln!(w.out, "fio version 3 iolog")?;
        w.file_action(0, "add")?;
        w.file_action(0, "open")?;
        Ok(w)
    }

    /// Append one I/O issued `ts_ns` nanoseconds after the start. fio's unit is the
    /// microsecond, so the time is truncated to whole microseconds; times should not decrease
    /// (fio replays a step back as no delay). A zero-length I/O is not written: fio's reader
    /// and ours would drop it anyway.
    pub fn record(&mut self, ts_ns: u64, io: &Io) -> io::Result<()> {
        if io.len == 0 || matches!(io.op, Op::Zone(_)) {
            return Ok(());
        }
        let us = ts_ns / 1000;
        self.last_us = self.last_us.max(us);
        writeln!(self.out, "{us} {} {} {} {}", self.file, action(io.op), io.offset, io.len)
    }

    /// Close the file at the latest time written (as fio ends its logs), flush (the output
    /// too, so a buffered one reports a full disk here rather than losing it on drop), and hand
    /// the output back.
    pub fn finish(mut self) -> io::Result<W> {
        self.file_action(self.last_us, "close")?;
        let mut out = self.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        out.flush()?;
        Ok(out)
    }

    fn file_action(&mut self, us: u64, what: &str) -> io::Result<()> {
        writeln!(self.out, "{us} {} {what}", self.file)
    }
}

/// An [`IoSource`] that passes another source's I/Os through and records each one into an
/// iolog with timestamp 0 (untimed: the simulator has no issue times without the timing
/// model, and fio replays time 0 as "no delay", i.e. as fast as it can).
///
/// The first write error stops the recording, not the I/O: the source's I/Os still flow, and
/// the error is the tee's error once they run out (from `fill`), or from [`IoSource::finish`]
/// when the run stops taking I/O first (a time limit, steady state). The log is finished
/// (`close` line, flush) when the source is exhausted, by `finish` (either one), or at the
/// latest when the tee is dropped.
pub struct IologTee<W: Write + Send> {
    source: Box<dyn IoSource>,
    log: Option<IologWriter<W>>,
    error: Option<io::Error>,
    /// What the error message names first ("write_iolog PATH").
    name: String,
    /// The error went out through `fill` or `finish` (once).
    reported: bool,
}

impl<W: Write + Send> IologTee<W> {
    /// Record what `source` emits into `log`. The source is boxed because the runner holds
    /// its sources as `Box<dyn IoSource>`.
    pub fn new(source: Box<dyn IoSource>, log: IologWriter<W>) -> Self {
        IologTee { source, log: Some(log), error: None, name: "write_iolog".into(), reported: false }
    }

    /// Name the log in errors ("`name`: the operating system's reason"), e.g. "write_iolog
    /// PATH".
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    fn fail(&mut self, e: io::Error) {
        self.error.get_or_insert(e);
        self.log = None;
    }

    /// The write error that stopped the recording, if any.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Finish the log now (if the source has not run dry yet) and return its output (`None`
    /// when it was already finished at the end of the source).
    pub fn finish(mut self) -> io::Result<Option<W>> {
        let out = self.log.take().map(IologWriter::finish).transpose();
        match self.error.take() {
            Some(e) => Err(e),
            None => out,
        }
    }

    fn close_log(&mut self) {
        if let Some(log) = self.log.take() {
            if let Err(e) = log.finish() {
                self.fail(e);
            }
        }
    }

    /// The write error as the source's error, once.
    fn report(&mut self) -> Result<(), SourceError> {
        match &self.error {
            Some(e) if !self.reported => {
                self.reported = true;
                Err(SourceError::output(format!("{}: {e}", self.name)))
            }
            _ => Ok(()),
        }
    }
}

impl<W: Write + Send> IoSource for IologTee<W> {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        let start = out.len();
        let n = self.source.fill(out, max)?;
        if let Some(log) = &mut self.log {
            if let Err(e) = out[start..].iter().try_for_each(|io| log.record(0, io)) {
                self.fail(e);
            }
        }
        if n == 0 {
            self.close_log();
            self.report()?;
        }
        Ok(n)
    }

    fn figures(&self) -> Option<LayerFigures> {
        self.source.figures()
    }

    fn finish(&mut self) -> Result<(), SourceError> {
        self.source.finish()?;
        self.close_log();
        self.report()
    }
}

impl<W: Write + Send> Drop for IologTee<W> {
    /// A run may stop before its source is exhausted and without calling `finish`: the log
    /// still gets its `close` and is flushed (an error here is lost: call `finish`).
    fn drop(&mut self) {
        self.close_log();
    }
}
