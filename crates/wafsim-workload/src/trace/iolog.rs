//! fio iolog reader, versions 2 and 3 (fio HOWTO "Trace file format").
//!
//! * v2: `filename action [offset length]`; timestamps come from `wait` actions (microseconds,
//!   relative to the previous wait), so a v2 trace without waits has all timestamps 0.
//! * v3: `timestamp filename action [offset length]`, timestamp in microseconds since the run
//!   start (fio writes `utime_since_now`).
//!
//! File actions `add`/`open`/`close` are checked (an I/O on a file that was never added is an
//! error, as in fio); `sync`/`datasync` carry no data and are skipped; `read`, `write`, `trim`
//! become records. Zero-length I/Os are skipped. Version 1 logs are rejected.

use std::collections::HashSet;
use std::io::BufRead;

use wafsim_core::Op;

use super::{Lines, Rebase, TraceError, TraceRecord};

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
            let line = self.lines.buf.trim().to_string();
            if self.version == 0 {
                self.version = match line.as_str() {
                    "fio version 2 iolog" => 2,
                    "fio version 3 iolog" => 3,
                    _ => {
                        return Err(self.lines.error(format!(
                            "expected the header \"fio version 2 iolog\" or \"fio version 3 iolog\", found \"{line}\""
                        )))
                    }
                };
                continue;
            }
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let (ts_us, rest) = if self.version == 3 {
                let ts: u64 = f[0].parse().map_err(|_| {
                    self.lines.error(format!("expected a timestamp in microseconds as the first field, found \"{}\"", f[0]))
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
                return Err(self.lines.error(format!("{expected}, found \"{line}\"")));
            }
            let (file, action) = (rest[0], rest[1]);
            if rest.len() == 2 {
                match action {
                    "add" => {
                        self.files.insert(file.to_string());
                    }
                    "open" | "close" => {
                        if !self.files.contains(file) {
                            return Err(self.lines.error(format!("file \"{file}\" used before \"add\"")));
                        }
                    }
                    _ => return Err(self.lines.error(format!("unknown file action \"{action}\" (expected add, open or close)"))),
                }
                continue;
            }
            let num = |s: &str, what: &str, lines: &Lines<R>| -> Result<u64, TraceError> {
                s.parse::<u64>().map_err(|_| lines.error(format!("{what} \"{s}\" is not a byte count")))
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
                        "unknown action \"{action}\" (expected read, write, trim, sync, datasync{})",
                        if self.version == 2 { " or wait" } else { "" }
                    )))
                }
            };
            if !self.files.contains(file) {
                return Err(self.lines.error(format!("file \"{file}\" used before \"add\"")));
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
