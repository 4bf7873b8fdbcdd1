//! The error every device returns: one type for the whole block-device interface, so a host
//! layer passes its devices' refusals up unchanged and a caller matches one enum whatever the
//! device (flash FTL, ZNS, SMR, a layer over them).

/// Errors a command can return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("namespace {0} does not exist")]
    NoSuchNamespace(u32),
    #[error("I/O at byte offset {offset} length {len} exceeds namespace {ns} of {size} bytes")]
    OutOfRange { ns: u32, offset: u64, len: u32, size: u64 },
    #[error("I/O of length 0")]
    ZeroLength,
    #[error("reclaim group {rg}: no free erase unit left (over-provisioning exhausted)")]
    OutOfSpace { rg: u32 },
    #[error("reclaim group {rg}: garbage collection cannot reclaim space (every candidate erase unit is full of valid data)")]
    NoReclaimableSpace { rg: u32 },
    #[error("RUH update: reclaim group {rg} / RUH {ruh} does not exist")]
    NoSuchHandle { rg: u32, ruh: u32 },
    #[error("namespace {ns} is not zoned: zone append and zone management need a zoned namespace")]
    NotZoned { ns: u32 },
    /// A zoned namespace refused the command with an NVMe ZNS status.
    #[error("namespace {ns}, byte offset {offset}: {status}")]
    Zone { ns: u32, offset: u64, status: crate::zone::ZoneStatus },
}
