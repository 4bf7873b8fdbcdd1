//! Block traces: streaming readers for fio iologs (v2/v3), blkparse text output and
//! MSR-Cambridge CSV, and a timestamp-ordered merge of several traces into an
//! [`IoSource`](crate::IoSource).
//!
//! Every reader is an `Iterator<Item = Result<TraceRecord, TraceError>>` over a `BufRead`,
//! reading one line at a time (giant traces are never loaded whole). Blank lines and `#`
//! comments are skipped everywhere, and format detection looks past them.
//!
//! A trace that yields no I/O at all is an error ([`TraceError::NoRecords`]), never a silent
//! replay of nothing: an empty file when it is opened, a filter that matches nothing or a file
//! of headers only when [`TraceMerge`] runs dry.
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

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use wafsim_core::Op;

pub use iolog::{IologTee, IologWriter};
pub use merge::{OffsetPolicy, TraceInput, TraceMerge};

/// One data I/O of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRecord {
    /// Nanoseconds since the trace's first record.
    pub timestamp_ns: u64,
    /// The command: read, write or trim.
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

/// A trace line that could not be read, an I/O that does not fit the namespace, or a trace
/// that yields no I/O at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// A line that does not parse, a format that cannot be told, or an I/O that cannot be
    /// replayed on its namespace.
    #[error("{file}:{line}: {message}")]
    Parse {
        /// The trace's file name.
        file: String,
        /// Line of the record, 1-based.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The trace file cannot be opened or read.
    #[error("{file}: {message}")]
    Io {
        /// The trace's file name.
        file: String,
        /// The operating system's error (with the line being read, if any).
        message: String,
    },
    /// A replay of nothing would end "successfully" with no data written, which hides a wrong
    /// `filter`, format or file; so an empty trace is an error.
    #[error("trace {file}: no I/O records ({reason})")]
    NoRecords {
        /// The trace's file name.
        file: String,
        /// Why nothing was found (empty file, filter matching nothing, ...).
        reason: String,
    },
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
    /// Guess from the first line: the fio header, an MSR CSV row or header, otherwise
    /// blkparse. See [`TraceFormat::sniff`] for a guess that can fail.
    pub fn detect(first_line: &str) -> TraceFormat {
        Self::sniff(first_line).unwrap_or(TraceFormat::Blkparse)
    }

    /// Recognise the format from the first line that is not blank or a comment: the fio
    /// header, an MSR CSV header or data row (7 comma-separated fields), or a blkparse event
    /// line (`major,minor` first); `None` for anything else.
    pub fn sniff(first_line: &str) -> Option<TraceFormat> {
        let t = content(first_line);
        if t.starts_with("fio version") {
            Some(TraceFormat::FioIolog)
        } else if msr::is_header(t) || (t.split(',').count() == 7 && t.split(',').next().is_some_and(|f| f.trim().parse::<u64>().is_ok())) {
            Some(TraceFormat::MsrCsv)
        } else if t.split_whitespace().next().is_some_and(blkparse::is_dev) {
            Some(TraceFormat::Blkparse)
        } else {
            None
        }
    }

    /// What a record key names in this format, for messages ("hosts/disks seen: hm_0").
    pub fn key_noun(self) -> &'static str {
        match self {
            TraceFormat::FioIolog => "files",
            TraceFormat::Blkparse => "devices (major,minor)",
            TraceFormat::MsrCsv => "hosts/disks",
        }
    }

    /// The name of the format as the experiment TOML spells it (`format = "msr"`).
    pub fn toml_name(self) -> &'static str {
        match self {
            TraceFormat::FioIolog => "iolog",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::MsrCsv => "msr",
        }
    }
}

/// The text of a line without its end, surrounding blanks and a leading UTF-8 byte-order mark
/// (spreadsheet tools write one at the start of CSV files).
pub(crate) fn content(line: &str) -> &str {
    line.trim_start_matches('\u{feff}').trim()
}

/// Blank lines and `#` comments carry nothing in any of the formats; readers skip them, and
/// format detection looks past them.
pub(crate) fn is_filler(line: &str) -> bool {
    let t = content(line);
    t.is_empty() || t.starts_with('#')
}

/// A boxed record stream.
pub type RecordIter = Box<dyn Iterator<Item = Result<TraceRecord, TraceError>> + Send>;

/// Open a trace file; `format = None` detects it from the first line that is not blank or a
/// comment. A file with no such line is a [`TraceError::NoRecords`] right away.
pub fn open_trace(path: &Path, format: Option<TraceFormat>) -> Result<RecordIter, TraceError> {
    open_trace_detected(path, format).map(|(records, _)| records)
}

/// [`open_trace`], also returning the format used (the given one or the detected one).
pub fn open_trace_detected(path: &Path, format: Option<TraceFormat>) -> Result<(RecordIter, TraceFormat), TraceError> {
    let name = path.display().to_string();
    let io_err = |e: std::io::Error| TraceError::Io { file: name.clone(), message: e.to_string() };
    let mut reader = BufReader::new(crate::input::open_regular(path).map_err(io_err)?);
    let first = first_content_line(&mut reader).map_err(io_err)?;
    // Detection read ahead; the reader must see the whole file (and count lines from 1).
    reader.seek(SeekFrom::Start(0)).map_err(io_err)?;
    let Some((line_no, line)) = first else {
        let reason = if reader.get_ref().metadata().map_err(io_err)?.len() == 0 {
            "the file is empty"
        } else {
            "the file holds only blank or comment lines"
        };
        return Err(TraceError::NoRecords { file: name, reason: reason.into() });
    };
    let format = match format {
        Some(f) => f,
        None => TraceFormat::sniff(&line).ok_or_else(|| TraceError::Parse {
            file: name.clone(),
            line: line_no,
            message: concat!(
                "cannot tell the trace format from its first line (not shown: the file may not be a trace): expected a fio iolog header (\"fio version 3 iolog\"), an MSR CSV row \
                 or header (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime) or a blkparse event line (\"8,0 3 1 0.000000000 \
                 1234 Q WS 1000 + 8 [fio]\"); set format = \"iolog\", \"msr\" or \"blkparse\" in the [[phase.trace]] table"
            )
            .to_string(),
        })?,
    };
    Ok((reader_for(reader, &name, format), format))
}

/// The first line that is not blank or a comment, with its 1-based number.
fn first_content_line<R: BufRead>(input: &mut R) -> std::io::Result<Option<(usize, String)>> {
    let mut buf = String::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        if crate::input::read_line_bounded(input, &mut buf)? == 0 {
            return Ok(None);
        }
        line_no += 1;
        if !is_filler(&buf) {
            return Ok(Some((line_no, buf)));
        }
    }
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
        match crate::input::read_line_bounded(&mut self.input, &mut self.buf) {
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
