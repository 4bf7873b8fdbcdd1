//! Block traces: streaming readers for fio iologs (v2/v3), blkparse text output and
//! MSR-Cambridge CSV, and a timestamp-ordered merge of several traces into an
//! [`IoSource`](crate::IoSource).
//!
//! Every reader is an `Iterator<Item = Result<TraceRecord, TraceError>>` over a `BufRead`,
//! reading one line at a time (giant traces are never loaded whole).
//!
//! ```
//! use wafsim_workload::trace::{iolog::IologReader, TraceRecord};
//! use wafsim_core::Op;
//! let text = "fio version 3 iolog\n0 /dev/nvme0n1 add\n1 /dev/nvme0n1 open\n5 /dev/nvme0n1 write 4096 8192\n";
//! let recs: Vec<TraceRecord> = IologReader::new(text.as_bytes(), "t.log").map(Result::unwrap).collect();
//! assert_eq!(recs.len(), 1);
//! assert_eq!((recs[0].op, recs[0].offset, recs[0].len, recs[0].timestamp_ns), (Op::Write, 4096, 8192, 0));
//! ```

pub mod blkparse;
pub mod iolog;
pub mod merge;
pub mod msr;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use wafsim_core::Op;

pub use merge::{OffsetPolicy, TraceInput, TraceMerge};

/// One data I/O of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRecord {
    /// Nanoseconds since the trace's first record.
    pub timestamp_ns: u64,
    pub op: Op,
    /// Bytes.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Line of the trace file it came from (for diagnostics).
    pub line: usize,
    /// File or device the I/O went to: iolog file name, blkparse `major,minor`, MSR
    /// `<hostname>_<disk>` (the MSR file naming, e.g. `hm_0`).
    pub key: Arc<str>,
}

/// A trace line that could not be read, or an I/O that does not fit the namespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error("{file}:{line}: {message}")]
    Parse { file: String, line: usize, message: String },
    #[error("{file}: {message}")]
    Io { file: String, message: String },
}

/// Supported trace formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// fio `write_iolog` output, version 2 or 3 (told apart by the header).
    FioIolog,
    /// `blkparse` default text output.
    Blkparse,
    /// MSR-Cambridge CSV.
    MsrCsv,
}

impl TraceFormat {
    /// Guess from the first line: the fio header, an MSR CSV row (7 comma-separated fields),
    /// otherwise blkparse.
    pub fn detect(first_line: &str) -> TraceFormat {
        let t = first_line.trim();
        if t.starts_with("fio version") {
            TraceFormat::FioIolog
        } else if t.split(',').count() == 7 && t.split(',').next().is_some_and(|f| f.trim().parse::<u64>().is_ok()) {
            TraceFormat::MsrCsv
        } else {
            TraceFormat::Blkparse
        }
    }
}

/// A boxed record stream.
pub type RecordIter = Box<dyn Iterator<Item = Result<TraceRecord, TraceError>> + Send>;

/// Open a trace file; `format = None` detects it from the first line.
pub fn open_trace(path: &Path, format: Option<TraceFormat>) -> Result<RecordIter, TraceError> {
    let name = path.display().to_string();
    let io_err = |e: std::io::Error| TraceError::Io { file: name.clone(), message: e.to_string() };
    let mut reader = BufReader::new(File::open(path).map_err(io_err)?);
    let format = match format {
        Some(f) => f,
        None => {
            let buf = reader.fill_buf().map_err(io_err)?;
            let end = buf.iter().position(|&b| b == b'\n').unwrap_or(buf.len());
            TraceFormat::detect(&String::from_utf8_lossy(&buf[..end]))
        }
    };
    Ok(reader_for(reader, &name, format))
}

/// A reader of `format` over any buffered input.
pub fn reader_for<R: BufRead + Send + 'static>(input: R, name: &str, format: TraceFormat) -> RecordIter {
    match format {
        TraceFormat::FioIolog => Box::new(iolog::IologReader::new(input, name)),
        TraceFormat::Blkparse => Box::new(blkparse::BlkparseReader::new(input, name)),
        TraceFormat::MsrCsv => Box::new(msr::MsrReader::new(input, name)),
    }
}

/// Line-by-line input with position tracking and key interning, shared by the readers.
pub(crate) struct Lines<R> {
    input: R,
    pub name: String,
    pub line_no: usize,
    pub buf: String,
    last_key: Option<Arc<str>>,
}

impl<R: BufRead> Lines<R> {
    pub fn new(input: R, name: &str) -> Self {
        Lines { input, name: name.to_string(), line_no: 0, buf: String::new(), last_key: None }
    }

    /// Read the next line into `buf`; `Ok(false)` at the end.
    pub fn advance(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        match self.input.read_line(&mut self.buf) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.line_no += 1;
                Ok(true)
            }
            Err(e) => Err(TraceError::Io { file: self.name.clone(), message: format!("line {}: {e}", self.line_no + 1) }),
        }
    }

    pub fn error(&self, message: String) -> TraceError {
        TraceError::Parse { file: self.name.clone(), line: self.line_no, message }
    }

    /// Shared `Arc<str>` for consecutive identical keys (avoids one allocation per record).
    pub fn key(&mut self, k: &str) -> Arc<str> {
        match &self.last_key {
            Some(a) if &**a == k => a.clone(),
            _ => {
                let a: Arc<str> = Arc::from(k);
                self.last_key = Some(a.clone());
                a
            }
        }
    }
}

/// Make timestamps relative to the first record (earlier ones saturate at 0).
#[derive(Debug, Default)]
pub(crate) struct Rebase {
    first: Option<u64>,
}

impl Rebase {
    pub fn rel(&mut self, t: u64) -> u64 {
        let f = *self.first.get_or_insert(t);
        t.saturating_sub(f)
    }
}
