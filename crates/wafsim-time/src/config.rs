//! Timing parameters, with defaults per NAND type.

/// Array timings of one NAND type. A program writes one "program unit": one page on every plane
/// of a die, times the bits per cell (one-shot programming of a whole wordline).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NandTiming {
    /// Typical array read time (GC reads, and host reads when no per-page-type times are set).
    pub t_read_ns: u64,
    /// Array read time by page type of a wordline (LSB, CSB, MSB, TSB: index = bit of the cell
    /// the page holds), `bits_per_cell` entries used; all zero = `t_read_ns` for every page.
    /// Reading a TLC/QLC page takes as many sensing steps as its Gray code has read levels,
    /// so the pages of one wordline read at different speeds.
    pub t_read_page_ns: [u64; 4],
    /// Array program time of one program unit (one-shot for TLC, both steps for QLC), ns.
    pub t_prog_ns: u64,
    /// Program time of one SLC-mode program (a page on every plane, one bit per cell) of a
    /// pSLC write cache, ns (unused without a cache).
    pub t_prog_slc_ns: u64,
    /// Block erase time (tBERS), ns.
    pub t_erase_ns: u64,
    /// Bits stored per cell (1 SLC, 3 TLC, 4 QLC): the pages one program writes on each plane.
    pub bits_per_cell: u32,
    /// Rated program/erase cycles (endurance).
    pub pe_cycles: u32,
}

impl NandTiming {
    /// Defaults per type; sources in docs/model.md ("Timing model") and docs/presets-research.md.
    /// - SLC: tR 25 us, tPROG 200 us, tBERS 1.5 ms, 100,000 P/E (HP SSD white paper).
    /// - pSLC programs (every multi-bit type): 200 us, the SLC figure (HP white paper); 3D TLC
    ///   in SLC mode is quoted at 300-320 us in py_ssd_sim (presets set their own).
    /// - TLC: tR 50 us (Samsung V5), one-shot tPROG 937.5 us (1 Tbit TLC, ISSCC 2024, as
    ///   derived in FEMU), tBERS 5 ms (512 Gbit TLC figures), 3,000 P/E.
    /// - QLC: tR 85 us, two-step tPROG 12.196 ms (280-layer 1 Tbit QLC, ISSCC 2024, as derived in
    ///   FEMU), tBERS 15 ms (inferred: above TLC), 1,000 P/E (Micron).
    pub fn preset(kind: &str) -> Option<NandTiming> {
        match kind {
            "slc" => Some(NandTiming { t_read_ns: 25_000, t_read_page_ns: [0; 4], t_prog_ns: 200_000, t_prog_slc_ns: 200_000, t_erase_ns: 1_500_000, bits_per_cell: 1, pe_cycles: 100_000 }),
            "tlc" => Some(NandTiming { t_read_ns: 50_000, t_read_page_ns: [0; 4], t_prog_ns: 937_500, t_prog_slc_ns: 200_000, t_erase_ns: 5_000_000, bits_per_cell: 3, pe_cycles: 3_000 }),
            "qlc" => Some(NandTiming { t_read_ns: 85_000, t_read_page_ns: [0; 4], t_prog_ns: 12_196_000, t_prog_slc_ns: 200_000, t_erase_ns: 15_000_000, bits_per_cell: 4, pe_cycles: 1_000 }),
            _ => None,
        }
    }
}

/// Everything the timing model needs besides the FTL.
#[derive(Debug, Clone, PartialEq)]
pub struct TimingConfig {
    /// Array timings of the NAND.
    pub nand: NandTiming,
    /// NAND page size, bytes.
    pub page_bytes: u64,
    /// Planes per die; a program writes one page on each.
    pub planes_per_die: u32,
    /// Dies of the whole device (all reclaim groups).
    pub dies: u32,
    /// NAND channels of the whole device; die `d` transfers on channel `d % channels`.
    pub channels: u32,
    /// Reclaim groups the dies are split into (each owns `dies / reclaim_groups` dies); the
    /// FTL's die groups follow them.
    pub reclaim_groups: u32,
    /// NAND bus rate per channel (an 8-bit bus: MT/s = MB/s).
    pub channel_bytes_per_sec: f64,
    /// Host interface bandwidth per direction (PCIe is full duplex).
    pub host_link_bytes_per_sec: f64,
    /// The controller's datapath (DRAM buffer and ECC engines), bytes per second shared by
    /// every byte crossing the NAND interface: host programs and reads once, GC copies twice
    /// (read out, programmed back). 0 = not modelled (no limit).
    pub datapath_bytes_per_sec: f64,
    /// Host reads cross the datapath ahead of program data and GC's transfers (they wait only
    /// for other host reads; the capacity they take still delays the rest). False: first come,
    /// first served.
    pub datapath_host_reads_first: bool,
    /// Write buffer: host writes complete once buffered; programs free it.
    pub write_buffer_bytes: u64,
    /// Host reads suspend a program or erase in progress on their die (at most
    /// `max_suspends` times per operation).
    pub program_suspend: bool,
    /// Time from a suspend command to the die being ready for the read (tSUS).
    pub suspend_ns: u64,
    /// Time from suspending an erase to the die being ready for the read.
    pub erase_suspend_ns: u64,
    /// Time a resume adds to the suspended operation (on top of the time it was suspended).
    pub resume_ns: u64,
    /// Suspends one program or erase accepts; later reads wait for it to finish.
    pub max_suspends: u32,
    /// Most dies programming at once (the drive's power budget; 0 = no limit). A die whose next
    /// operation is a program waits, first come first served, for a program elsewhere to end.
    pub max_active_programs: u32,
    /// Controller time per read command before the NAND is accessed (FTL lookup, command
    /// handling); a latency, not a shared resource.
    pub read_overhead_ns: u64,
    /// Controller time per write command (a buffered write completes this long after its data
    /// has crossed the host link).
    pub write_overhead_ns: u64,
    /// Controller time each write command occupies a single, shared command processor before
    /// its data moves (0 = none): caps small writes at 1 / this commands per second.
    pub write_command_ns: u64,
    /// Zone Reset latency: a fixed part plus a part per byte of data the zone held (at full
    /// scale); 0 and 0 = the plain command time. A latency, not a shared resource.
    pub zone_reset_ns: u64,
    /// Per-byte part of the Zone Reset latency, ns per byte the zone held.
    pub zone_reset_ns_per_byte: f64,
    /// The FTL's mapping unit, bytes (its media log counts NAND work in these units).
    pub mapping_unit: u32,
    /// Background GC: when no host I/O is in flight and the next arrives later than
    /// [`IDLE_NS`], reclaim one erase unit if the free pool is below this many (0 = off).
    pub background_gc_free: u32,
    /// Scaled runs: erase unit size / the real drive's erase unit size (1 at full scale). One
    /// scaled erase unit reclaimed erases this fraction of a real block on every die, so the
    /// timing model erases a real block (full tBERS) each time the fractions add up to one:
    /// erase time per byte and per operation stay those of the real drive.
    pub erase_scale: f64,
    /// Reclaimed blocks per die that may await their erase while the die still programs host
    /// data (0 = no limit). A drive hands the host only erased blocks, and its free pool is
    /// what lets host writes run ahead of reclaim: past this many, a die does GC work only
    /// until an erase has run. Flash FTLs take the device's free-pool minimum (`gc_free_min`
    /// erase units, one block per die each at full scale); ZNS drives have no device free
    /// pool (0).
    pub erase_lag_blocks: u32,
}

impl TimingConfig {
    /// Whether the timing model can run on these figures: rates positive and finite (a zero
    /// channel or host link would make every transfer take forever, or with a division by
    /// zero no time at all), at least one die, channel, plane and page byte, NAND operation
    /// times above 0, a positive erase scale. Callers that read figures from a user check
    /// them first with messages naming their keys; this guards every other way in.
    pub fn check(&self) -> Result<(), String> {
        let rate = |r: f64| r.is_finite() && r >= 1.0;
        if !rate(self.channel_bytes_per_sec) {
            return Err(format!("channel rate {} B/s: expected at least 1 B/s and finite", self.channel_bytes_per_sec));
        }
        if !rate(self.host_link_bytes_per_sec) {
            return Err(format!("host link rate {} B/s: expected at least 1 B/s and finite", self.host_link_bytes_per_sec));
        }
        if !(self.datapath_bytes_per_sec == 0.0 || rate(self.datapath_bytes_per_sec)) {
            return Err(format!("datapath rate {} B/s: expected 0 (no limit) or at least 1 B/s and finite", self.datapath_bytes_per_sec));
        }
        if self.dies == 0 || self.channels == 0 || self.planes_per_die == 0 || self.page_bytes == 0 || self.reclaim_groups == 0 {
            return Err("dies, channels, planes per die, page size and reclaim groups must all be at least 1".into());
        }
        if self.nand.t_read_ns == 0 || self.nand.t_prog_ns == 0 || self.nand.t_erase_ns == 0 {
            return Err("NAND read, program and erase times must be above 0".into());
        }
        if !(self.erase_scale.is_finite() && self.erase_scale > 0.0) {
            return Err(format!("erase scale {}: expected a positive fraction", self.erase_scale));
        }
        Ok(())
    }
}

/// Idle time before background GC starts.
pub const IDLE_NS: u64 = 100_000;

impl TimingConfig {
    /// A plain TLC drive of `dies` dies on `channels` channels, for benchmarks and tests: the
    /// TLC NAND defaults, 16 KiB pages on 4 planes, 1600 MT/s channels, PCIe 4.0 x4, a 64 MiB
    /// write buffer, 4 KiB mapping units, one reclaim group, an erase lag of 2 blocks per die
    /// (the FTL's default free pool), and no suspend, controller overheads, datapath limit,
    /// power budget or background GC. Change fields with struct update syntax.
    pub fn plain_tlc(dies: u32, channels: u32) -> TimingConfig {
        TimingConfig {
            nand: NandTiming::preset("tlc").expect("the tlc preset exists"),
            page_bytes: 16384,
            planes_per_die: 4,
            dies,
            channels,
            reclaim_groups: 1,
            channel_bytes_per_sec: 1.6e9,
            host_link_bytes_per_sec: pcie_bytes_per_sec(4, 4).expect("PCIe 4.0 x4"),
            datapath_bytes_per_sec: 0.0,
            datapath_host_reads_first: true,
            write_buffer_bytes: 64 << 20,
            program_suspend: false,
            suspend_ns: 0,
            erase_suspend_ns: 0,
            resume_ns: 0,
            max_suspends: 0,
            max_active_programs: 0,
            read_overhead_ns: 0,
            write_overhead_ns: 0,
            write_command_ns: 0,
            zone_reset_ns: 0,
            zone_reset_ns_per_byte: 0.0,
            erase_scale: 1.0,
            mapping_unit: 4096,
            background_gc_free: 0,
            erase_lag_blocks: 2,
        }
    }

    /// Bytes of one program (a page on every plane, times bits per cell).
    pub fn program_bytes(&self) -> u64 {
        self.page_bytes * self.planes_per_die as u64 * self.nand.bits_per_cell as u64
    }
    /// Bytes of one SLC-mode program (a page on every plane).
    pub fn slc_program_bytes(&self) -> u64 {
        self.page_bytes * self.planes_per_die as u64
    }
    /// Mapping units in one program unit (at least 1).
    pub fn units_per_program(&self) -> u32 {
        (self.program_bytes() / self.mapping_unit as u64).max(1) as u32
    }
    /// Array read time of page type `t` (0 = LSB).
    pub fn t_read_of(&self, t: u32) -> u64 {
        match self.nand.t_read_page_ns.get(t as usize) {
            Some(&v) if v > 0 => v,
            _ => self.nand.t_read_ns,
        }
    }
    /// Mapping units in one NAND page (at least 1).
    pub fn units_per_page(&self) -> u32 {
        (self.page_bytes / self.mapping_unit as u64).max(1) as u32
    }
    /// Dies in one reclaim group (at least 1).
    pub fn dies_per_rg(&self) -> u32 {
        (self.dies / self.reclaim_groups).max(1)
    }
    /// Sequential write bandwidth without GC: all dies programming, capped by the channels',
    /// the datapath's (when modelled) and the host link's transfer rates (bytes per second).
    pub fn program_bandwidth(&self) -> f64 {
        let dies = self.dies as f64 * self.program_bytes() as f64 / (self.nand.t_prog_ns as f64 * 1e-9);
        let datapath = if self.datapath_bytes_per_sec > 0.0 { self.datapath_bytes_per_sec } else { f64::INFINITY };
        dies.min(self.channels as f64 * self.channel_bytes_per_sec).min(datapath).min(self.host_link_bytes_per_sec)
    }
}

/// PCIe usable bandwidth per direction: lanes x GT/s x 128/130 encoding / 8 bits (gen 3+).
pub fn pcie_bytes_per_sec(gen: u32, lanes: u32) -> Option<f64> {
    let gts = match gen {
        3 => 8.0,
        4 => 16.0,
        5 => 32.0,
        6 => 64.0,
        _ => return None,
    };
    Some(gts * 1e9 * lanes as f64 * 128.0 / 130.0 / 8.0)
}
