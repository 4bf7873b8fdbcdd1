//! MSR-Cambridge block trace CSV reader (SNIA IOTTA "MSR Cambridge Traces").
//!
//! Rows: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`. The SNIA files have no
//! header, but copies passed around often start with that header line; it is accepted (and
//! skipped) as the first line that is not blank or a comment. Timestamp is a Windows FILETIME
//! (100 ns ticks), Type is `Read` or `Write` (case-insensitive), Offset and Size are bytes. The
//! record key is `<Hostname>_<DiskNumber>` (as in the file names, `hm_0`). Blank lines, `#`
//! comments and zero-size rows are skipped; anything else that does not match is an error.

use crate::input::quote;
use std::io::BufRead;

use wafsim_core::Op;

use super::{content, is_filler, Lines, Rebase, TraceError, TraceRecord};

/// The column names, in order.
const COLUMNS: [&str; 7] = ["Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"];

/// Whether `line` is the column header (names compared case-insensitively, blanks ignored).
pub(crate) fn is_header(line: &str) -> bool {
    let f: Vec<&str> = content(line).split(',').map(str::trim).collect();
    f.len() == COLUMNS.len() && f.iter().zip(COLUMNS).all(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Streaming MSR CSV reader.
pub struct MsrReader<R> {
    lines: Lines<R>,
    rebase: Rebase,
    /// A data row or header has been seen (a header is only accepted before that).
    started: bool,
    done: bool,
}

impl<R: BufRead> MsrReader<R> {
    /// Reader of `input`; `name` identifies it in error messages.
    pub fn new(input: R, name: &str) -> Self {
        MsrReader { lines: Lines::new(input, name), rebase: Rebase::default(), started: false, done: false }
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
            if !std::mem::replace(&mut self.started, true) && is_header(&line) {
                continue;
            }
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            if f.len() != 7 {
                return Err(self.lines.error(format!(
                    "expected 7 comma-separated fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), found {}",
                    f.len()
                )));
            }
            let num = |i: usize, what: &str, lines: &Lines<R>| -> Result<u64, TraceError> {
                f[i].parse::<u64>().map_err(|_| lines.error(format!("{what} {} is not an unsigned integer", quote(f[i]))))
            };
            let ticks = num(0, "Timestamp", &self.lines)?;
            num(2, "DiskNumber", &self.lines)?;
            let op = if f[3].eq_ignore_ascii_case("read") {
                Op::Read
            } else if f[3].eq_ignore_ascii_case("write") {
                Op::Write
            } else {
                return Err(self.lines.error(format!("Type {} is not Read or Write", quote(f[3]))));
            };
            let offset = num(4, "Offset", &self.lines)?;
            let len = num(5, "Size", &self.lines)?;
            if len == 0 {
                continue;
            }
            let key = format!("{}_{}", f[1], f[2]);
            let key = self.lines.key(&key);
            let ts = self.rebase.rel(ticks).saturating_mul(100);
            return Ok(Some(TraceRecord { line: self.lines.line_no, timestamp_ns: ts, op, offset, len, key }));
        }
    }
}

impl<R: BufRead> Iterator for MsrReader<R> {
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
