//! What a workload hands the device front end: one command ([`Io`]), its kind ([`Op`], with a zone
//! action for zone management), its placement identifier ([`Pid`]). Depends on nothing, so both
//! the workloads and the block-device interface build on it.

/// Host command kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Write `len` bytes at `offset`: the covered mapping units are programmed anew (a partial
    /// unit costs a whole one).
    Write,
    /// Read `len` bytes at `offset`; unwritten units cost no media time.
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
    /// Open the zone explicitly: it holds an open (and active) resource while it stays opened.
    Open,
    /// Close an opened zone: it keeps its write pointer and active resource, frees the open one.
    Close,
    /// Make the zone Full now, freeing its resources (ZNS flash pads the rest of its capacity).
    Finish,
    /// Empty the zone: the write pointer returns to its start, its data is dropped (ZNS flash
    /// erases it).
    Reset,
    /// Take a Read Only zone offline (NVMe only; ZBC has no such action).
    Offline,
}

/// Placement identifier carried by a write: reclaim group + placement handle (FDP), or a stream
/// id (streams directive, `rg` = 0). `Pid::NONE` means the write carries no directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pid(pub u32);

impl Pid {
    /// The write carries no placement directive; the device chooses (FDP: placement handle 0 of
    /// the namespace).
    pub const NONE: Pid = Pid(u32::MAX);

    /// PID for placement handle `ph` in reclaim group `rg`.
    pub fn new(rg: u16, ph: u16) -> Pid {
        Pid(((rg as u32) << 16) | ph as u32)
    }
    /// Reclaim group this identifier names (0 for a stream id).
    pub fn rg(self) -> u16 {
        (self.0 >> 16) as u16
    }
    /// Placement handle (FDP, an index into the namespace's handle list) or stream id.
    pub fn handle(self) -> u16 {
        self.0 as u16
    }
    /// Whether the write carries no directive ([`Pid::NONE`]).
    pub fn is_none(self) -> bool {
        self == Pid::NONE
    }
}

/// One host I/O against a namespace. Offsets and lengths are in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    /// What the command does.
    pub op: Op,
    /// Namespace index (NVMe nsid - 1).
    pub ns: u32,
    /// First byte addressed, from the namespace's start (a zone's start for Append and zone
    /// management).
    pub offset: u64,
    /// Bytes addressed (ignored by Flush and zone management).
    pub len: u32,
    /// Placement directive of a write ([`Pid::NONE`] for none; ignored by other commands).
    pub pid: Pid,
}
