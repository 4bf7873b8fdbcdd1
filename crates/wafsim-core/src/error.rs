//! The error every device returns: one type for the whole block-device interface, so a host
//! layer passes its devices' refusals up unchanged and a caller matches one enum whatever the
//! device (flash FTL, ZNS, SMR, a layer over them).

/// Errors a command can return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// The command addressed a namespace index the device does not have.
    #[error("namespace {0} does not exist")]
    NoSuchNamespace(u32),
    /// The command's byte range runs past the end of its namespace.
    #[error("I/O at byte offset {offset} length {len} exceeds namespace {ns} of {size} bytes")]
    OutOfRange {
        /// Namespace addressed.
        ns: u32,
        /// First byte of the command.
        offset: u64,
        /// Bytes the command covers.
        len: u32,
        /// The namespace's size in bytes.
        size: u64,
    },
    /// A read, write or trim of no bytes: an NVMe command cannot carry zero blocks.
    #[error("I/O of length 0")]
    ZeroLength,
    /// A frontier needed a fresh erase unit and its reclaim group had none free: the
    /// over-provisioning is used up faster than GC returns units.
    #[error("reclaim group {rg}: no free erase unit left (over-provisioning exhausted)")]
    OutOfSpace {
        /// Reclaim group that ran out.
        rg: u32,
    },
    /// GC cannot gain a free unit: nothing is sealed, or a whole reclaim group's worth of
    /// victims freed nothing because every candidate is full of valid data.
    #[error("reclaim group {rg}: garbage collection cannot reclaim space (every candidate erase unit is full of valid data)")]
    NoReclaimableSpace {
        /// Reclaim group GC ran in.
        rg: u32,
    },
    /// An FDP Reclaim Unit Handle Update named a handle the configuration does not have.
    #[error("RUH update: reclaim group {rg} / RUH {ruh} does not exist")]
    NoSuchHandle {
        /// Reclaim group named.
        rg: u32,
        /// Reclaim unit handle named.
        ruh: u32,
    },
    /// Zone Append, zone management or Report Zones on a namespace that is not zoned.
    #[error("namespace {ns} is not zoned: zone append and zone management need a zoned namespace")]
    NotZoned {
        /// Namespace addressed.
        ns: u32,
    },
    /// A zoned namespace refused the command with an NVMe ZNS status.
    #[error("namespace {ns}, byte offset {offset}: {status}")]
    Zone {
        /// Namespace addressed.
        ns: u32,
        /// Byte offset the status refers to: the command's, or the zone's it addressed.
        offset: u64,
        /// The zone state machine's verdict (its NVMe status code, and the ZBC sense on SMR).
        status: crate::zone::ZoneStatus,
    },
}
