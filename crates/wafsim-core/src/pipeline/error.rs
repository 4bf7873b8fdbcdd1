//! Why a source stopped early: the one error type every level of the pull half returns from
//! `fill`, with the places it passed through, outermost first.

use std::fmt;

/// What went wrong in a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceErrorKind {
    /// A layer refused an operation (a file system or a store out of space, a file operation on
    /// a file that does not exist): `op` is the operation as the layer saw it.
    Refused {
        /// The refused operation in words ("the file system refused the write of ... of file 3"),
        /// or what the layer was doing ("final flush").
        op: String,
        /// The layer's reason.
        reason: String,
    },
    /// A layer ran out of space for `op` (a file system, an mpool): the drives are full, which
    /// a phase may take as its end (`stop_when_full`) rather than as a failure.
    NoSpace {
        /// The refused operation in words.
        op: String,
        /// The layer's reason.
        reason: String,
    },
    /// The source's input could not be read or parsed (a trace file: file, line, what was
    /// expected).
    Input(String),
    /// Something the source writes on the side could not be written (fio `write_iolog`: the
    /// file and the operating system's reason, e.g. no space left on the device).
    Output(String),
}

/// An error from a source's `fill`: the source is done (it returns the error once, nothing
/// appended in that call, and 0 after it). `context` names where it happened, outermost first
/// (a part's label, a stage), so the user reads which workload failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// Where, outermost first.
    pub context: Vec<String>,
    /// What.
    pub kind: SourceErrorKind,
}

impl SourceError {
    /// A layer refused `op` for `reason`.
    pub fn refused(op: impl Into<String>, reason: impl fmt::Display) -> SourceError {
        SourceError { context: Vec::new(), kind: SourceErrorKind::Refused { op: op.into(), reason: reason.to_string() } }
    }

    /// A layer had no space left for `op`.
    pub fn no_space(op: impl Into<String>, reason: impl fmt::Display) -> SourceError {
        SourceError { context: Vec::new(), kind: SourceErrorKind::NoSpace { op: op.into(), reason: reason.to_string() } }
    }

    /// Whether a layer ran out of space (rather than refused for another reason).
    pub fn is_no_space(&self) -> bool {
        matches!(self.kind, SourceErrorKind::NoSpace { .. })
    }

    /// The source's input failed (`what`: file, line and what was expected).
    pub fn input(what: impl fmt::Display) -> SourceError {
        SourceError { context: Vec::new(), kind: SourceErrorKind::Input(what.to_string()) }
    }

    /// A side output of the source failed (`what`: the file and the reason).
    pub fn output(what: impl fmt::Display) -> SourceError {
        SourceError { context: Vec::new(), kind: SourceErrorKind::Output(what.to_string()) }
    }

    /// The same error, seen from `outer` (added in front of the context).
    pub fn within(mut self, outer: impl Into<String>) -> SourceError {
        self.context.insert(0, outer.into());
        self
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.context {
            write!(f, "{c}: ")?;
        }
        match &self.kind {
            SourceErrorKind::Refused { op, reason } | SourceErrorKind::NoSpace { op, reason } => write!(f, "{op}: {reason}"),
            SourceErrorKind::Input(w) | SourceErrorKind::Output(w) => write!(f, "{w}"),
        }
    }
}

impl std::error::Error for SourceError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_reads_outermost_first() {
        let e = SourceError::refused("write of 4096 bytes at offset 0 of file 3", "no space").within("lsm").within("kv1");
        assert_eq!(e.to_string(), "kv1: lsm: write of 4096 bytes at offset 0 of file 3: no space");
        assert_eq!(SourceError::output("iolog x: disk full").to_string(), "iolog x: disk full");
    }
}
