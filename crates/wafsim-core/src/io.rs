//! What a workload hands the device front end: one command ([`Io`]), its kind ([`Op`], with a zone
//! action for zone management), its placement identifier ([`Pid`]). Depends on nothing, so both
//! the workloads and the block-device interface build on it.

/// Host command kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Write,
    Read,
    /// Deallocate (NVMe Dataset Management) of the covered mapping units.
    Trim,
    /// Zone Append (zoned namespaces): `offset` is the zone's start; the data goes to the zone's
    /// write pointer and the completion says where.
    Append,
    /// Flush: make written data durable. Nothing to do in a model with a power-loss-protected
    /// buffer; `offset` and `len` are ignored.
    Flush,
    /// Zone management (zoned namespaces) of the zone starting at `offset`; `len` is ignored.
    /// The same command as [`crate::blockdev::BlockDevice::zone_mgmt`], carried in the I/O
    /// stream so a workload (fio `zonemode=zbd` resetting full zones) can issue it in order.
    Zone(ZoneAction),
}

/// A Zone Management Send action (NVMe ZNS 1.1 3.4.3; ZBC OPEN/CLOSE/FINISH/RESET WRITE POINTER).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZoneAction {
    Open,
    Close,
    Finish,
    Reset,
    Offline,
}

/// Placement identifier carried by a write: reclaim group + placement handle (FDP), or a stream
/// id (streams directive, `rg` = 0). `Pid::NONE` means the write carries no directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pid(pub u32);

impl Pid {
    pub const NONE: Pid = Pid(u32::MAX);

    /// PID for placement handle `ph` in reclaim group `rg`.
    pub fn new(rg: u16, ph: u16) -> Pid {
        Pid(((rg as u32) << 16) | ph as u32)
    }
    pub fn rg(self) -> u16 {
        (self.0 >> 16) as u16
    }
    pub fn handle(self) -> u16 {
        self.0 as u16
    }
    pub fn is_none(self) -> bool {
        self == Pid::NONE
    }
}

/// One host I/O against a namespace. Offsets and lengths are in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    pub op: Op,
    pub ns: u32,
    pub offset: u64,
    pub len: u32,
    pub pid: Pid,
}
