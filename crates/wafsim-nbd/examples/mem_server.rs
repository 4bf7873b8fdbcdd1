//! Serves a sparse 1 GiB in-memory export named `mem` (also the default export) over NBD.
//!
//! ```text
//! cargo run --release -p wafsim-nbd --example mem_server            # 127.0.0.1:10809
//! cargo run --release -p wafsim-nbd --example mem_server -- 127.0.0.1:10900 4096   # addr, MiB
//! ```
//!
//! Drive it with fio's nbd engine (libnbd; one NBD connection per fio job):
//!
//! ```text
//! fio --name=t --ioengine=nbd --uri=nbd://127.0.0.1:10809/mem --rw=randwrite --bs=4k \
//!     --size=256m --numjobs=4 --iodepth=16 --verify=crc32c --do_verify=1
//! ```
//!
//! or attach it as a kernel block device: `nbd-client -N mem 127.0.0.1 10809 /dev/nbd0`.
//! Each connection's counters are printed when it closes. Stop with Ctrl-C.

use std::net::TcpListener;
use std::sync::Arc;

use wafsim_nbd::{Config, ConnStats, ExportMap, MemExport, Server};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:10809".into());
    let mib: u64 = args.next().map(|s| s.parse().expect("size in MiB")).unwrap_or(1024);

    let export = Arc::new(MemExport::new(mib << 20));
    let exports = ExportMap::new().with("mem", format!("{mib} MiB sparse memory"), export);
    let config = Config {
        on_connection_end: Some(Arc::new(|s: &ConnStats| {
            eprintln!(
                "{} closed ({:?}): {} reads / {} MiB, {} writes / {} MiB, {} flushes, {} errors",
                s.peer,
                s.end,
                s.reads,
                s.bytes_read >> 20,
                s.writes,
                s.bytes_written >> 20,
                s.flushes,
                s.errors
            )
        })),
        ..Config::default()
    };
    let listener = TcpListener::bind(&addr)?;
    eprintln!("serving nbd://{addr}/mem ({mib} MiB)");
    Server::new(exports, config).serve_tcp(listener)
}
