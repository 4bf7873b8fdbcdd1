//! wafsim-nbd: a Network Block Device server, so real block-I/O tools (fio's `nbd` engine,
//! `nbd-client`, qemu, libnbd) can drive storage that lives in this process.
//!
//! The protocol follows the NBD protocol document (`doc/proto.md` of
//! github.com/NetworkBlockDevice/nbd):
//!
//! * [`proto`]: pure, I/O-free codec for every message of the fixed newstyle handshake and the
//!   transmission phase (simple and structured replies).
//! * [`export`]: the [`Export`] trait the server calls for I/O, and [`Exports`] / [`ExportMap`]
//!   for resolving export names.
//! * [`mem`]: [`MemExport`], a sparse in-memory export; [`mod@file`]: [`FileExport`], a file-backed one.
//! * [`sim`]: the namespaces of a simulated drive as exports ([`sim::LiveDrive`],
//!   [`sim::exports`]); [`pace`]: the same with each reply at the timing model's completion time
//!   ([`pace::paced_exports`]; pace builds on sim, not the other way round).
//! * [`persist`]: a served drive kept across restarts (checkpoint and command journal).
//! * [`client`]: a blocking NBD client; [`feed`]: an experiment's traffic (store models, fio
//!   jobs, traces) sent through it to a served drive, in the order `wafsim run` submits it.
//! * [`server`]: [`Server`], one thread per TCP or Unix-socket connection, with a
//!   [`ShutdownHandle`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use wafsim_nbd::{Config, ExportMap, MemExport, Server};
//!
//! let exports = ExportMap::new().with("mem", "1 GiB scratch", Arc::new(MemExport::new(1 << 30)));
//! let server = Server::new(exports, Config::default());
//! let listener = std::net::TcpListener::bind("127.0.0.1:10809").unwrap();
//! server.serve_tcp(listener).unwrap(); // until server.shutdown_handle().shutdown()
//! ```

#![warn(missing_docs)]

pub mod client;
pub mod export;
pub mod feed;
pub mod file;
pub mod journal;
pub mod mem;
pub mod pace;
pub mod persist;
pub mod proto;
pub mod server;
pub mod sim;

pub use export::{Export, ExportError, ExportMap, Exports, Resolver};
pub use file::FileExport;
pub use mem::MemExport;
pub use proto::{BlockSizes, Errno, ProtoError};
pub use server::{Config, ConnEnd, ConnStats, Server, ShutdownHandle, StatsHook};
