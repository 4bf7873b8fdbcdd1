//! The figures every output shows, derived from a [`VariantResult`] in one place: bytes from
//! mapping units and erase units, WAFs with their n/a rule, shares, per-level ratios of file
//! systems and stores, and a timed run's rates. JSON, tables, CSV, Parquet and the catalog read
//! them from here instead of each deriving its own.
//!
//! The n/a rule: a ratio over nothing (no host writes, no application bytes, an empty whole) is
//! `None`, never 0 or NaN; a report prints "n/a" or "-" (tables) or `null` (JSON) for it.

use super::{FsResult, VariantResult};
use serde::Serialize;
use wafsim_core::counters::{smart_data_units, waf_if_written};

/// Why a variant's WAF is `None`, in the words JSON (`waf_note`) and tables use.
pub const NO_HOST_WRITES: &str = "no host writes in the window";

/// `part` as a fraction of `whole`; `None` when `whole` is 0.
pub fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Figures of one variant's measured phases (and its rows), derived once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// Host bytes written (HBMW, as in the FDP statistics log).
    pub hbmw: u64,
    /// Media bytes written: host and GC programs, padding (MBMW).
    pub mbmw: u64,
    /// Media bytes erased (MBE).
    pub mbe: u64,
    /// Bytes GC copied (part of `mbmw`).
    pub gc_bytes: u64,
    /// Zoned drives: dummy data a Finish programmed (part of `mbmw`).
    pub pad_bytes: u64,
    /// SMART Data Units Written of `hbmw` (thousands of 512-byte units, rounded up).
    pub smart_data_units_written: u64,
    /// Bytes the FDP media-reallocated events moved.
    pub media_reallocated_bytes: u64,
    /// Device WAF, media / host bytes; `None` without host writes.
    pub waf: Option<f64>,
    /// Why `waf` is `None` ([`NO_HOST_WRITES`]); `None` when it is a number.
    pub waf_note: Option<&'static str>,
    /// What the application wrote: through file systems or stores where a measured phase ran
    /// them, else the host bytes.
    pub application_bytes: u64,
    /// Media bytes per application byte (the device WAF where nothing sits above the drive);
    /// `None` without application bytes.
    pub total_waf: Option<f64>,
    /// One row per phase, in the result's order.
    pub phases: Vec<PhaseFigures>,
    /// One row per namespace, in the result's order.
    pub namespaces: Vec<NsFigures>,
    /// One row per frontier, in the result's order.
    pub frontiers: Vec<FrontierFigures>,
    /// One row per host-layer device, in the result's order.
    pub host_devices: Vec<HostDeviceFigures>,
    /// One row per file system or store, in the result's order.
    pub filesystems: Vec<FsFigures>,
    /// A timed run's rates and endurance; `None` untimed.
    pub timed: Option<TimedFigures>,
}

/// Figures of one phase (of its window).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhaseFigures {
    /// Host bytes written.
    pub hbmw: u64,
    /// Media bytes written.
    pub mbmw: u64,
    /// Media bytes erased.
    pub mbe: u64,
    /// WAF; `None` without host writes.
    pub waf: Option<f64>,
}

/// A namespace's (a drive's, with a drive per namespace) part of the whole.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NsFigures {
    /// Share of the variant's host bytes; `None` when the variant wrote nothing.
    pub host_share: Option<f64>,
    /// Share of the variant's media bytes; `None` when the media took nothing.
    pub media_share: Option<f64>,
    /// The namespace's WAF; `None` without host writes to it.
    pub waf: Option<f64>,
}

/// A write frontier's media bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FrontierFigures {
    /// Bytes it programmed: host data and GC copies.
    pub mbmw: u64,
    /// Bytes of the erase units it had written that were erased.
    pub mbe: u64,
}

/// A host layer's device: its part of the media writes, and its own WAF.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HostDeviceFigures {
    /// Share of all the layer's devices' media bytes; `None` when they took nothing.
    pub media_share: Option<f64>,
    /// The device's media bytes over what the layer sent it; `None` when nothing was sent.
    pub device_waf: Option<f64>,
}

/// The levels of a file system (and a store above it): application, store, file system, media.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FsFigures {
    /// Device bytes per application byte; `None` when the application wrote nothing.
    pub waf: Option<f64>,
    /// A store's file bytes per application byte.
    pub store_waf: Option<f64>,
    /// The file system's device bytes per byte the store wrote to files.
    pub fs_waf: Option<f64>,
    /// This level's WAF times the variant's device WAF: media per application byte.
    pub total_waf: Option<f64>,
}

/// A timed run's rates and endurance (full scale).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimedFigures {
    /// Host bytes written per second of the measured phases.
    pub write_bytes_per_sec: f64,
    /// Projected drive life, years.
    pub lifetime_years: Option<f64>,
    /// Drive writes per day the measured host write rate amounts to.
    pub measured_dwpd: Option<f64>,
    /// Drive writes per day the rated P/E cycles sustain for 5 years at the measured WAF.
    pub sustainable_dwpd_5y: Option<f64>,
}

impl FsFigures {
    fn of(f: &FsResult, device_waf: Option<f64>) -> FsFigures {
        let waf = f.written_waf();
        let (store_waf, fs_waf) = match f.store_write_bytes {
            Some(store) => (waf_if_written(store, f.file_write_bytes), waf_if_written(f.dev_write_bytes, store)),
            None => (None, waf),
        };
        FsFigures { waf, store_waf, fs_waf, total_waf: waf.zip(device_waf).map(|(a, b)| a * b) }
    }
}

impl VariantResult {
    /// The figures every output shows, derived from this result.
    pub fn figures(&self) -> Figures {
        let (hbmw, mbmw) = (self.hbmw(), self.mbmw());
        let unit = self.mapping_unit as u64;
        let waf = self.written_waf();
        let application_bytes = self.application_bytes();
        let host_media: u64 = self.host_devices.iter().map(|d| d.media_write_bytes).sum();
        Figures {
            hbmw,
            mbmw,
            mbe: self.mbe(),
            gc_bytes: self.counters.gc_units * unit,
            pad_bytes: self.counters.pad_units * unit,
            smart_data_units_written: smart_data_units(hbmw),
            media_reallocated_bytes: self.counters.fdp_events.media_reallocated_units * unit,
            waf,
            waf_note: waf.is_none().then_some(NO_HOST_WRITES),
            application_bytes,
            total_waf: waf_if_written(mbmw, application_bytes),
            phases: self
                .phases
                .iter()
                .map(|p| PhaseFigures { hbmw: p.counters.host_write_bytes, mbmw: p.counters.media_units() * unit, mbe: p.counters.erases * self.erase_unit_bytes, waf: p.written_waf() })
                .collect(),
            namespaces: self
                .namespaces
                .iter()
                .map(|n| NsFigures { host_share: share(n.host_bytes, hbmw), media_share: share(n.media_bytes, mbmw), waf: waf_if_written(n.media_bytes, n.host_bytes) })
                .collect(),
            frontiers: self.frontiers.iter().map(|f| FrontierFigures { mbmw: f.host_bytes + f.gc_bytes, mbe: f.erases * self.erase_unit_bytes }).collect(),
            host_devices: self
                .host_devices
                .iter()
                .map(|d| HostDeviceFigures { media_share: share(d.media_write_bytes, host_media), device_waf: waf_if_written(d.media_write_bytes, d.sent_bytes()) })
                .collect(),
            filesystems: self.filesystems.iter().map(|f| FsFigures::of(f, waf)).collect(),
            timed: self.timed.map(|t| TimedFigures {
                write_bytes_per_sec: hbmw as f64 / (t.elapsed_ns.max(1) as f64 * 1e-9),
                lifetime_years: self.lifetime_years(),
                measured_dwpd: self.measured_dwpd(),
                sustainable_dwpd_5y: self.sustainable_dwpd(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{HostDeviceRow, NsResult};

    fn ns(name: &str, host: u64, media: u64) -> NsResult {
        NsResult { name: name.into(), size_bytes: 1 << 30, host_bytes: host, media_bytes: media, gc_bytes: media - host.min(media), read_bytes: 0, trim_bytes: 0 }
    }

    #[test]
    fn ratios_over_nothing_are_none_and_shares_add_up() {
        let mut r = VariantResult::default();
        r.mapping_unit = 4096;
        r.counters.host_write_bytes = 3 << 20;
        r.counters.host_units = 3 << 8;
        r.counters.gc_units = 1 << 8;
        r.namespaces = vec![ns("a", 1 << 20, 2 << 20), ns("b", 2 << 20, 2 << 20), ns("idle", 0, 0)];
        let f = r.figures();
        assert_eq!((f.hbmw, f.mbmw, f.gc_bytes), (3 << 20, 4 << 20, 1 << 20));
        assert_eq!(f.waf, Some(4.0 / 3.0));
        assert_eq!(f.waf_note, None);
        let shares: f64 = f.namespaces.iter().filter_map(|n| n.host_share).sum();
        assert!((shares - 1.0).abs() < 1e-12, "{shares}");
        assert_eq!(f.namespaces[0].waf, Some(2.0));
        // A namespace without writes: its WAF is undefined, its share is 0 of a whole that is not.
        assert_eq!(f.namespaces[2].waf, None);
        assert_eq!(f.namespaces[2].host_share, Some(0.0));

        // Nothing written: every ratio over host bytes is undefined, and the note says why.
        let mut idle = VariantResult::default();
        idle.namespaces = vec![ns("a", 0, 0)];
        idle.host_devices = vec![HostDeviceRow { device: "cache".into(), user_write_bytes: 0, user_read_bytes: 5, reclaim_read_bytes: 0, reclaim_write_bytes: 0, metadata_write_bytes: 0, media_write_bytes: 0 }];
        let f = idle.figures();
        assert_eq!((f.waf, f.waf_note, f.total_waf), (None, Some(NO_HOST_WRITES), None));
        assert_eq!((f.namespaces[0].host_share, f.namespaces[0].media_share), (None, None));
        assert_eq!((f.host_devices[0].media_share, f.host_devices[0].device_waf), (None, None));
    }

    #[test]
    fn a_store_splits_the_file_system_level_in_two() {
        let mut r = VariantResult::default();
        r.mapping_unit = 4096;
        r.counters.host_write_bytes = 8 << 20;
        r.counters.host_units = 4 << 10; // media 16 MiB over 8 MiB host: device WAF 2
        let store = FsResult { phase: "run".into(), measured: true, name: "kv".into(), namespace: "a".into(), filesystem: "conventional".into(), file_write_bytes: 1 << 20, dev_write_bytes: 8 << 20, zone_live_bytes: None, store_write_bytes: Some(4 << 20), metrics: vec![] };
        r.filesystems = vec![store];
        let f = r.figures();
        let fs = f.filesystems[0];
        assert_eq!((fs.waf, fs.store_waf, fs.fs_waf), (Some(8.0), Some(4.0), Some(2.0)));
        assert_eq!(fs.total_waf, fs.waf.zip(f.waf).map(|(a, b)| a * b));
        assert_eq!(f.application_bytes, 1 << 20);
        assert_eq!(f.total_waf, Some(f.mbmw as f64 / (1 << 20) as f64));
    }
}
