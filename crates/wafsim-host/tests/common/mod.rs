//! Helpers shared by the file-system tests.

use wafsim_core::blockdev::BlockDevice;
use wafsim_core::pipeline::IoSource;
use wafsim_workload::files::{DeleteOrder, FileGroup};

pub const MIB: u64 = 1 << 20;

/// Every I/O of `src` into `dev` to the end (a refusal of the file system, `fill`'s error, or
/// of the device fails the test).
pub fn drive(src: &mut impl IoSource, dev: &mut impl BlockDevice) {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if src.fill(&mut buf, 256).unwrap() == 0 {
            return;
        }
        for io in &buf {
            dev.submit(io).unwrap_or_else(|e| panic!("device refused {io:?}: {e}"));
        }
    }
}

/// Three groups: short-lived files (a log), medium (compaction output), long-lived (cold).
pub fn groups(order: DeleteOrder) -> Vec<FileGroup> {
    let g = |size: u64, live: u32, weight: f64| FileGroup { file_bytes: (size / 2, size), live_files: live, write_bytes: 256 << 10, weight, order, overwrite: 0.0 };
    vec![g(8 * MIB, 2, 4.0), g(16 * MIB, 8, 2.0), g(32 * MIB, 10, 1.0)]
}
