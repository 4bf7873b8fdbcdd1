//! The record of one NAND operation a device caused, as the timing model reads it
//! ([`crate::blockdev::MediaDevice::drain_media_ops`]): the FTL stays untimed and only logs what
//! the media did; the timing model books each operation on its die and channel.

/// A NAND operation the FTL caused, for the timing model (logged only when enabled with
/// [`crate::Device::enable_media_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaOp {
    /// One program unit (page x planes x bits per cell) written for host data, on a die.
    ProgramHost {
        /// Die the program occupies.
        die: u32,
    },
    /// One SLC-mode program (a page on every plane, one bit per cell) of host data in the pSLC
    /// write cache.
    ProgramSlc {
        /// Die the program occupies.
        die: u32,
    },
    /// One program unit of GC copies (and of pSLC folds).
    ProgramGc {
        /// Die the program occupies.
        die: u32,
    },
    /// One page read by GC, holding `units` mapping units of live data to copy.
    ReadGc {
        /// Die the read occupies.
        die: u32,
        /// Live mapping units on the page: what crosses the channel to be copied.
        units: u32,
    },
    /// Erase of an erase unit (superblock): one block erase on every die of the reclaim group.
    Erase {
        /// Reclaim group whose dies each erase one block.
        rg: u32,
    },
}
