//! Device counters, named as devices name them (NVMe FDP statistics, SMART, OCP C0).
//!
//! They serialize field for field (a drive-state file's `counters`, a run's results); a field
//! missing from a file reads as 0, and the pSLC cache's counters are left out where they are 0
//! so the state of a drive without one reads as before the cache existed.

use serde::{Deserialize, Serialize};

fn zero(v: &u64) -> bool {
    *v == 0
}

/// Per-namespace counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NsCounters {
    /// Bytes the host wrote to this namespace.
    pub host_write_bytes: u64,
    /// Mapping units programmed for host writes to this namespace.
    pub host_units: u64,
    /// Mapping units of this namespace's data copied by GC.
    pub gc_units: u64,
    /// Mapping units of dummy data programmed to fill this namespace's zones (ZNS Finish).
    pub pad_units: u64,
    /// Bytes the host read from this namespace.
    pub host_read_bytes: u64,
    /// Bytes the host's trims covered in this namespace (partial mapping units included).
    pub trim_bytes: u64,
    /// pSLC cache: mapping units of this namespace's data folded into TLC.
    #[serde(skip_serializing_if = "zero")]
    pub fold_units: u64,
    /// pSLC cache: this namespace's SLC programs the media-written figure leaves out.
    #[serde(skip_serializing_if = "zero")]
    pub uncounted_slc_units: u64,
}

impl NsCounters {
    /// Media mapping units programmed for this namespace (host + GC + padding + pSLC folds, less
    /// the SLC programs not counted), as [`Counters::media_units`] for the drive.
    pub fn media_units(&self) -> u64 {
        self.host_units + self.gc_units + self.pad_units + self.fold_units - self.uncounted_slc_units
    }
}

/// Per write-frontier counters (a frontier belongs to one RUH or stream, or is a GC frontier).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FrontierCounters {
    /// Mapping units of host data this frontier programmed (0 for a GC frontier).
    pub host_units: u64,
    /// Mapping units of GC copies this frontier received (0 for a host frontier).
    pub gc_units: u64,
    /// Erase units erased that this frontier had written.
    pub erases: u64,
}

/// FDP event counts (NVMe TP4146 event types).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FdpEventCounts {
    /// 0x00 Reclaim Unit Not Fully Written (host event): a RUH update left an RU partly written.
    pub ru_not_fully_written: u64,
    /// 0x03 Invalid Placement Identifier (host event).
    pub invalid_pid: u64,
    /// 0x80 Media Reallocated (controller event): GC moved an initially isolated handle's data
    /// into shared GC units.
    pub media_reallocated: u64,
    /// Mapping units moved by the media-reallocated events.
    pub media_reallocated_units: u64,
}

/// All counters of a device. Subtract two snapshots with [`Counters::delta`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// HBMW: host bytes written (no metadata is modelled, so bytes of data).
    pub host_write_bytes: u64,
    /// Mapping units programmed for host writes (partial-unit writes count a whole unit).
    pub host_units: u64,
    /// Mapping units copied by garbage collection.
    pub gc_units: u64,
    /// Mapping units of dummy data programmed to fill a partly written zone on Finish (ZNS; the
    /// device's only writes beyond the host's).
    pub pad_units: u64,
    /// Erase operations.
    pub erases: u64,
    /// Bytes the host read.
    pub host_read_bytes: u64,
    /// Mapping units host reads touched (a partial unit counts whole).
    pub read_units: u64,
    /// Reads of mapping units that hold no data (never written or trimmed).
    pub unmapped_read_units: u64,
    /// Bytes host trims covered, partial mapping units included (what they freed is
    /// `trimmed_units`).
    pub trim_bytes: u64,
    /// Mapping units deallocated by trims.
    pub trimmed_units: u64,
    /// Erase units reclaimed by background GC (timed mode, host idle).
    pub background_victims: u64,
    /// pSLC cache: mapping units of host data programmed in SLC mode (part of `host_units`).
    #[serde(skip_serializing_if = "zero")]
    pub slc_units: u64,
    /// pSLC cache: mapping units folded from SLC into TLC erase units (TLC programs).
    #[serde(skip_serializing_if = "zero")]
    pub fold_units: u64,
    /// pSLC cache: SLC-program units the media-written figure leaves out (`slc_units` when the
    /// cache's `count_slc_programs` is off, else 0).
    #[serde(skip_serializing_if = "zero")]
    pub uncounted_slc_units: u64,
    /// Per namespace, in namespace order.
    pub namespaces: Vec<NsCounters>,
    /// Per write frontier of the flash FTL, in the order of [`crate::Device::frontiers`].
    pub frontiers: Vec<FrontierCounters>,
    /// FDP events since the device was built (its event log keeps only the latest).
    pub fdp_events: FdpEventCounts,
}

fn sub(a: u64, b: u64) -> u64 {
    a - b
}

impl Counters {
    /// Media mapping units programmed (host + GC + padding + pSLC folds), less the SLC programs
    /// a drive that does not count them leaves out.
    pub fn media_units(&self) -> u64 {
        self.host_units + self.gc_units + self.pad_units + self.fold_units - self.uncounted_slc_units
    }

    /// Mapping units programmed in the native (TLC) mode: direct host writes, GC copies,
    /// padding and pSLC folds; with [`Counters::slc_units`] the whole NAND program traffic.
    pub fn tlc_units(&self) -> u64 {
        self.host_units - self.slc_units + self.gc_units + self.pad_units + self.fold_units
    }

    /// `self - earlier`, counter by counter.
    pub fn delta(&self, earlier: &Counters) -> Counters {
        Counters {
            host_write_bytes: sub(self.host_write_bytes, earlier.host_write_bytes),
            host_units: sub(self.host_units, earlier.host_units),
            gc_units: sub(self.gc_units, earlier.gc_units),
            pad_units: sub(self.pad_units, earlier.pad_units),
            erases: sub(self.erases, earlier.erases),
            host_read_bytes: sub(self.host_read_bytes, earlier.host_read_bytes),
            read_units: sub(self.read_units, earlier.read_units),
            unmapped_read_units: sub(self.unmapped_read_units, earlier.unmapped_read_units),
            trim_bytes: sub(self.trim_bytes, earlier.trim_bytes),
            trimmed_units: sub(self.trimmed_units, earlier.trimmed_units),
            background_victims: sub(self.background_victims, earlier.background_victims),
            slc_units: sub(self.slc_units, earlier.slc_units),
            fold_units: sub(self.fold_units, earlier.fold_units),
            uncounted_slc_units: sub(self.uncounted_slc_units, earlier.uncounted_slc_units),
            namespaces: self
                .namespaces
                .iter()
                .zip(&earlier.namespaces)
                .map(|(a, b)| NsCounters {
                    host_write_bytes: sub(a.host_write_bytes, b.host_write_bytes),
                    host_units: sub(a.host_units, b.host_units),
                    gc_units: sub(a.gc_units, b.gc_units),
                    pad_units: sub(a.pad_units, b.pad_units),
                    host_read_bytes: sub(a.host_read_bytes, b.host_read_bytes),
                    trim_bytes: sub(a.trim_bytes, b.trim_bytes),
                    fold_units: sub(a.fold_units, b.fold_units),
                    uncounted_slc_units: sub(a.uncounted_slc_units, b.uncounted_slc_units),
                })
                .collect(),
            frontiers: self
                .frontiers
                .iter()
                .zip(&earlier.frontiers)
                .map(|(a, b)| FrontierCounters {
                    host_units: sub(a.host_units, b.host_units),
                    gc_units: sub(a.gc_units, b.gc_units),
                    erases: sub(a.erases, b.erases),
                })
                .collect(),
            fdp_events: FdpEventCounts {
                ru_not_fully_written: sub(self.fdp_events.ru_not_fully_written, earlier.fdp_events.ru_not_fully_written),
                invalid_pid: sub(self.fdp_events.invalid_pid, earlier.fdp_events.invalid_pid),
                media_reallocated: sub(self.fdp_events.media_reallocated, earlier.fdp_events.media_reallocated),
                media_reallocated_units: sub(
                    self.fdp_events.media_reallocated_units,
                    earlier.fdp_events.media_reallocated_units,
                ),
            },
        }
    }

    /// Add another device's counters (dedicated-drive variants sum their drives).
    pub fn add(&mut self, o: &Counters) {
        self.host_write_bytes += o.host_write_bytes;
        self.host_units += o.host_units;
        self.gc_units += o.gc_units;
        self.pad_units += o.pad_units;
        self.erases += o.erases;
        self.host_read_bytes += o.host_read_bytes;
        self.read_units += o.read_units;
        self.unmapped_read_units += o.unmapped_read_units;
        self.trim_bytes += o.trim_bytes;
        self.trimmed_units += o.trimmed_units;
        self.background_victims += o.background_victims;
        self.slc_units += o.slc_units;
        self.fold_units += o.fold_units;
        self.uncounted_slc_units += o.uncounted_slc_units;
        self.namespaces.extend(o.namespaces.iter().cloned());
        self.frontiers.extend(o.frontiers.iter().cloned());
        self.fdp_events.ru_not_fully_written += o.fdp_events.ru_not_fully_written;
        self.fdp_events.invalid_pid += o.fdp_events.invalid_pid;
        self.fdp_events.media_reallocated += o.fdp_events.media_reallocated;
        self.fdp_events.media_reallocated_units += o.fdp_events.media_reallocated_units;
    }
}

/// SMART "Data Units Written": thousands of 512-byte units, rounded up (NVMe base spec, SMART /
/// Health log bytes 63:48).
pub fn smart_data_units(bytes: u64) -> u64 {
    bytes.div_ceil(512_000)
}

/// WAF = media bytes / host bytes; NaN-free: 0 when nothing was written. For figures shown to
/// a user use [`waf_if_written`]: a WAF without host writes is undefined, not 0.
pub fn waf(media_bytes: u64, host_bytes: u64) -> f64 {
    if host_bytes == 0 {
        0.0
    } else {
        media_bytes as f64 / host_bytes as f64
    }
}

/// WAF = media bytes / host bytes, or `None` when the host wrote nothing (read-only or
/// trim-only windows): reports print "n/a" (JSON null) rather than a 0 that reads as a figure.
pub fn waf_if_written(media_bytes: u64, host_bytes: u64) -> Option<f64> {
    (host_bytes > 0).then(|| media_bytes as f64 / host_bytes as f64)
}
