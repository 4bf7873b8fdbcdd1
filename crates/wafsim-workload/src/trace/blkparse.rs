//! blkparse default text output reader.
//!
//! Event lines look like `  8,0    3        1     0.000000000  1234  Q  WS 1000 + 8 [fio]`:
//! `major,minor cpu sequence seconds.nanoseconds pid action rwbs sector + sectors [process]`.
//! By default only **Q** (queue) events are used: they are the requests as the host submitted
//! them, before the I/O scheduler merges or splits them (choose another action, e.g. `C` or
//! `D`, with [`BlkparseReader::with_action`]). Sectors are 512 bytes. RWBS: `D` = discard
//! (trim), else `W` = write, else `R` = read; events with none of them (e.g. a pure flush `F`
//! or `N`) and zero-length events are skipped. Lines that are not events (the per-CPU and total
//! summary sections, `m` messages, other actions) are skipped; an event line of the selected
//! action whose fields do not parse is an error.

use crate::input::quote;
use std::io::BufRead;

use wafsim_core::Op;

use super::{Lines, Rebase, TraceError, TraceRecord};

/// Streaming blkparse reader.
pub struct BlkparseReader<R> {
    lines: Lines<R>,
    action: String,
    rebase: Rebase,
    done: bool,
}

/// `major,minor`, the first field of every event line.
pub(crate) fn is_dev(s: &str) -> bool {
    match s.split_once(',') {
        Some((a, b)) => !a.is_empty() && !b.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()),
        None => false,
    }
}

fn parse_ts_ns(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, "0"));
    let sec: u64 = sec.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut ns: u64 = frac.parse().ok()?;
    for _ in frac.len()..9 {
        ns *= 10;
    }
    sec.checked_mul(1_000_000_000)?.checked_add(ns)
}

impl<R: BufRead> BlkparseReader<R> {
    /// Reader of Q events.
    pub fn new(input: R, name: &str) -> Self {
        Self::with_action(input, name, "Q")
    }
    /// Reader of the given action (e.g. "C" for completions, "D" for driver issue).
    pub fn with_action(input: R, name: &str, action: &str) -> Self {
        BlkparseReader { lines: Lines::new(input, name), action: action.to_string(), rebase: Rebase::default(), done: false }
    }

    fn step(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        loop {
            if !self.lines.advance()? {
                return Ok(None);
            }
            let buf = std::mem::take(&mut self.lines.buf);
            let r = self.parse_line(&buf);
            self.lines.buf = buf;
            match r? {
                Some(rec) => return Ok(Some(rec)),
                None => continue,
            }
        }
    }

    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRecord>, TraceError> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 7 || !is_dev(f[0]) || f[5] != self.action {
            return Ok(None);
        }
        let rwbs = f[6];
        let op = if rwbs.contains('D') {
            Op::Trim
        } else if rwbs.contains('W') {
            Op::Write
        } else if rwbs.contains('R') {
            Op::Read
        } else {
            return Ok(None);
        };
        // `sector + count` follows; a data-less event (e.g. a flush) has none.
        if f.len() < 10 || f[8] != "+" {
            return Ok(None);
        }
        let ts = parse_ts_ns(f[3])
            .ok_or_else(|| self.lines.error(format!("expected a timestamp like 0.000123456, found {}", quote(f[3]))))?;
        let sector: u64 = f[7]
            .parse()
            .map_err(|_| self.lines.error(format!("expected a start sector after the RWBS field, found {}", quote(f[7]))))?;
        let count: u64 = f[9]
            .parse()
            .map_err(|_| self.lines.error(format!("expected a sector count after \"+\", found {}", quote(f[9]))))?;
        if count == 0 {
            return Ok(None);
        }
        let (Some(offset), Some(len)) = (sector.checked_mul(512), count.checked_mul(512)) else {
            return Err(self.lines.error("sector number overflows 64-bit bytes".into()));
        };
        let key = self.lines.key(f[0]);
        Ok(Some(TraceRecord { line: self.lines.line_no, timestamp_ns: self.rebase.rel(ts), op, offset, len, key }))
    }
}

impl<R: BufRead> Iterator for BlkparseReader<R> {
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
