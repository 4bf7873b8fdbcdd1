//! The pipeline vocabulary: the pull half of the data path. Sources produce operations a batch
//! at a time (block I/O through [`IoSource`], file operations through [`FileSource`], key-value
//! requests through [`KvSource`]) and engines expand operations of one level into commands of
//! the level below ([`Expand`]: requests -> file operations -> block I/O), so a file system or
//! an application model over a device is one more block source. The caller pulls: the runner
//! asks the top source for a batch, and each level asks the one above it only for what it
//! needs.
//!
//! These are the traits and plain types every layer speaks; what implements them lives above
//! this crate (generators in wafsim-workload, file systems in wafsim-host, application models
//! in wafsim-apps), and the devices that receive the block I/O are this crate's
//! [`crate::blockdev::BlockDevice`]s.
//!
//! - [`source`]: block I/O sources ([`IoSource`]), their per-source counts ([`SourceStats`]),
//!   a fixed list ([`Script`]) and sources run one after another ([`Chain`]);
//! - [`files`]: file operations ([`FileOp`]) and their sources ([`FileSource`]);
//! - [`kv`]: key-value requests ([`KvOp`]) and their sources ([`KvSource`], [`KvScript`]);
//! - [`expand`]: operations turned into commands of the level below ([`Engine`], [`Expand`]);
//! - [`error`]: why a source stopped early ([`SourceError`]), returned by every `fill`;
//! - [`figures`]: what a layered source has counted ([`LayerFigures`]), asked for by the runner.

pub mod error;
pub mod expand;
pub mod figures;
pub mod files;
pub mod kv;
pub mod source;

pub use error::{SourceError, SourceErrorKind};
pub use expand::{Command, Engine, Expand, OpSource};
pub use figures::LayerFigures;
pub use files::{FileId, FileOp, FileSource};
pub use kv::{KvOp, KvScript, KvSource};
pub use source::{Chain, IoSource, Script, SourceStats};
