//! JSON output. Keys are stable; new keys may be added.
//!
//! Every ratio goes through [`num`]: a figure that is undefined for a run (e.g. a ratio over
//! zero time) is `null`, never NaN or infinity (which JSON cannot hold). Tables print "-" for
//! the same cases. A WAF without host writes (a read-only or trim-only window) is `null` too,
//! with a `waf_note` saying why; tables print "n/a".

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use wafsim_core::counters::waf_if_written;
use wafsim_core::{DeviceConfig, Geometry};
use wafsim_experiment::results::{FrontierFigures, HostDeviceFigures, HostDeviceRow, HostPoint, LatSummary, NsFigures, PhaseFigures, TierTraffic, TimedFigures};
use wafsim_experiment::VariantResult;

/// `x` as a JSON number, or `null` when it is NaN or infinite. serde_json would write `null`
/// for those too; going through this says so at every ratio and keeps the choice in one place.
pub fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

// The JSON of a variant is a view of the result and its figures (`VariantResult::figures`):
// the structs below name the keys, serde writes them. A view is serialized into a `Value`,
// whose objects keep their keys sorted, as every JSON output here always has been; a ratio
// that is NaN or infinite becomes `null` there (as `num` does).

/// One variant.
#[derive(Serialize)]
struct VariantJson<'a> {
    name: &'a str,
    layout: &'a str,
    devices: u32,
    placement: &'a str,
    gc_policy: &'a str,
    history: &'a str,
    op_logical: f64,
    op_logical_full: f64,
    scale: f64,
    logical_bytes: u64,
    physical_bytes: u64,
    waf: Option<f64>,
    /// Only where `waf` is null: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    waf_note: Option<&'static str>,
    hbmw: u64,
    mbmw: u64,
    mbe: u64,
    gc_bytes: u64,
    pad_bytes: u64,
    erases: u64,
    smart_data_units_written: u64,
    physical_media_units_written: u64,
    host_read_bytes: u64,
    trim_bytes: u64,
    application_bytes: u64,
    total_waf: Option<f64>,
    erase_count: EraseCountJson,
    fdp_events: FdpEventsJson,
    filesystems: Vec<FsJson<'a>>,
    host_devices: Vec<HostDeviceJson<'a>>,
    namespaces: Vec<NsJson<'a>>,
    timing: Option<TimingJson>,
    phases: Vec<PhaseJson<'a>>,
    frontiers: Vec<FrontierJson<'a>>,
    spread: Vec<SpreadJson<'a>>,
    bandwidth: Vec<BwJson<'a>>,
    tier_timeline: Vec<TierJson<'a>>,
    host_timeline: &'a [HostPoint],
}

#[derive(Serialize)]
struct EraseCountJson {
    min: u32,
    mean: f64,
    max: u32,
}

#[derive(Serialize)]
struct FdpEventsJson {
    ru_not_fully_written: u64,
    invalid_pid: u64,
    media_reallocated: u64,
    media_reallocated_bytes: u64,
}

/// A file system (and a store above it): application bytes and bytes sent to the device.
#[derive(Serialize)]
struct FsJson<'a> {
    phase: &'a str,
    measured: bool,
    name: &'a str,
    namespace: &'a str,
    filesystem: &'a str,
    file_write_bytes: u64,
    dev_write_bytes: u64,
    store_write_bytes: Option<u64>,
    metrics: BTreeMap<&'a str, f64>,
    waf: Option<f64>,
}

/// A host layer's device: traffic over the whole run, its share and its own WAF.
#[derive(Serialize)]
struct HostDeviceJson<'a> {
    #[serde(flatten)]
    row: &'a HostDeviceRow,
    #[serde(flatten)]
    figures: HostDeviceFigures,
}

#[derive(Serialize)]
struct NsJson<'a> {
    name: &'a str,
    size_bytes: u64,
    host_bytes: u64,
    media_bytes: u64,
    gc_bytes: u64,
    #[serde(flatten)]
    figures: NsFigures,
}

#[derive(Serialize)]
struct TimingJson {
    elapsed_ns: u64,
    busy_window_ns: u64,
    dies: u32,
    disks: u32,
    head_busy_ns: u64,
    busy_ns: BusyJson,
    pe_cycles: u32,
    #[serde(flatten)]
    figures: TimedFigures,
}

#[derive(Serialize)]
struct BusyJson {
    host: u64,
    gc: u64,
    host_program: u64,
    host_read: u64,
    gc_program: u64,
    gc_read: u64,
    erase: u64,
}

#[derive(Serialize)]
struct PhaseJson<'a> {
    name: &'a str,
    measured: bool,
    #[serde(flatten)]
    figures: PhaseFigures,
    window: &'a str,
    whole_phase_waf: Option<f64>,
    checkpoints: Vec<CheckpointJson<'a>>,
    /// Only where the phase ended early: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<&'a str>,
}

/// A phase checkpoint: where it fell, and the WAF up to it and since the previous one (null
/// when the phase ended before it).
#[derive(Serialize)]
struct CheckpointJson<'a> {
    label: &'a str,
    at_bytes: u64,
    reached_bytes: Option<u64>,
    waf: Option<f64>,
    interval_waf: Option<f64>,
    total_waf: Option<f64>,
    interval_total_waf: Option<f64>,
}

#[derive(Serialize)]
struct FrontierJson<'a> {
    device: u32,
    kind: &'a str,
    reclaim_group: u32,
    ruh: Option<u32>,
    host_bytes: u64,
    gc_bytes: u64,
    erases: u64,
    age_class: u32,
    #[serde(flatten)]
    figures: FrontierFigures,
}

/// The variant under another case of the experiment's unknowns. The timed figures are keys of
/// timed runs only, so untimed outputs keep their keys.
#[derive(Serialize)]
struct SpreadJson<'a> {
    unknown: &'a str,
    case: &'a str,
    waf: Option<f64>,
    total_waf: Option<f64>,
    history: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    write_bytes_per_sec: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_p99_ns: Option<f64>,
}

/// Bytes one drive completed in one log interval.
#[derive(Serialize)]
struct BwJson<'a> {
    phase: &'a str,
    device: u32,
    t_s: f64,
    read_bytes: u64,
    write_bytes: u64,
    read_lat_ns: LatJson,
    write_lat_ns: LatJson,
}

/// An interval's latency summary (ns), as fio's clat percentiles.
#[derive(Serialize)]
struct LatJson {
    mean: u64,
    p50: u64,
    p99: u64,
    #[serde(rename = "p99.9")]
    p999: u64,
    max: u64,
}

impl LatJson {
    fn of(l: &LatSummary) -> LatJson {
        LatJson { mean: l.mean_ns, p50: l.p50_ns, p99: l.p99_ns, p999: l.p999_ns, max: l.max_ns }
    }
}

/// Tiering: each tier's traffic at one time-series sample.
#[derive(Serialize)]
struct TierJson<'a> {
    phase: &'a str,
    host_bytes: u64,
    hot: TierTraffic,
    cold: TierTraffic,
}

/// One variant's results.
pub fn variant(r: &VariantResult) -> Value {
    let f = r.figures();
    let c = &r.counters;
    let view = VariantJson {
        name: &r.name,
        layout: &r.layout,
        devices: r.devices,
        placement: &r.placement,
        gc_policy: &r.gc_policy,
        history: &r.history,
        op_logical: r.op_logical,
        op_logical_full: r.op_logical_full,
        scale: r.scale,
        logical_bytes: r.logical_bytes,
        physical_bytes: r.physical_bytes,
        waf: f.waf,
        waf_note: f.waf_note,
        hbmw: f.hbmw,
        mbmw: f.mbmw,
        mbe: f.mbe,
        gc_bytes: f.gc_bytes,
        pad_bytes: f.pad_bytes,
        erases: c.erases,
        smart_data_units_written: f.smart_data_units_written,
        physical_media_units_written: f.mbmw,
        host_read_bytes: c.host_read_bytes,
        trim_bytes: c.trim_bytes,
        application_bytes: f.application_bytes,
        total_waf: f.total_waf,
        erase_count: EraseCountJson { min: r.erase_count.0, mean: r.erase_count.1, max: r.erase_count.2 },
        fdp_events: FdpEventsJson {
            ru_not_fully_written: c.fdp_events.ru_not_fully_written,
            invalid_pid: c.fdp_events.invalid_pid,
            media_reallocated: c.fdp_events.media_reallocated,
            media_reallocated_bytes: f.media_reallocated_bytes,
        },
        filesystems: r
            .filesystems
            .iter()
            .zip(&f.filesystems)
            .map(|(x, g)| FsJson {
                phase: &x.phase,
                measured: x.measured,
                name: &x.name,
                namespace: &x.namespace,
                filesystem: &x.filesystem,
                file_write_bytes: x.file_write_bytes,
                dev_write_bytes: x.dev_write_bytes,
                store_write_bytes: x.store_write_bytes,
                metrics: x.metrics.iter().map(|(k, v)| (k.as_str(), *v)).collect(),
                waf: g.waf,
            })
            .collect(),
        host_devices: r.host_devices.iter().zip(&f.host_devices).map(|(row, g)| HostDeviceJson { row, figures: *g }).collect(),
        namespaces: r
            .namespaces
            .iter()
            .zip(&f.namespaces)
            .map(|(n, g)| NsJson { name: &n.name, size_bytes: n.size_bytes, host_bytes: n.host_bytes, media_bytes: n.media_bytes, gc_bytes: n.gc_bytes, figures: *g })
            .collect(),
        timing: r.timed.zip(f.timed).map(|(t, g)| TimingJson {
            elapsed_ns: t.elapsed_ns,
            busy_window_ns: t.busy_window_ns,
            dies: t.dies,
            disks: t.disks,
            head_busy_ns: t.head_busy_ns,
            busy_ns: BusyJson {
                host: t.busy.host_ns(),
                gc: t.busy.gc_ns(),
                host_program: t.busy.host_program_ns,
                host_read: t.busy.host_read_ns,
                gc_program: t.busy.gc_program_ns,
                gc_read: t.busy.gc_read_ns,
                erase: t.busy.erase_ns,
            },
            pe_cycles: t.pe_cycles,
            figures: g,
        }),
        phases: r
            .phases
            .iter()
            .zip(&f.phases)
            .map(|(p, g)| PhaseJson {
                name: &p.name,
                measured: p.measured,
                figures: *g,
                window: &p.window,
                whole_phase_waf: p.whole_waf,
                checkpoints: p
                    .checkpoints
                    .iter()
                    .map(|c| CheckpointJson {
                        label: &c.label,
                        at_bytes: c.at_bytes,
                        reached_bytes: c.reached,
                        waf: c.reached.map(|_| c.waf),
                        interval_waf: c.reached.map(|_| c.interval_waf),
                        total_waf: c.total_waf.map(|t| t.0),
                        interval_total_waf: c.total_waf.map(|t| t.1),
                    })
                    .collect(),
                stopped: p.stopped.as_deref(),
            })
            .collect(),
        frontiers: r
            .frontiers
            .iter()
            .zip(&f.frontiers)
            .map(|(x, g)| FrontierJson {
                device: x.device,
                kind: x.kind,
                reclaim_group: x.rg,
                ruh: x.ruh,
                host_bytes: x.host_bytes,
                gc_bytes: x.gc_bytes,
                erases: x.erases,
                age_class: x.age_class,
                figures: *g,
            })
            .collect(),
        spread: r
            .spread
            .iter()
            .map(|x| SpreadJson {
                unknown: &x.unknown,
                case: &x.case,
                // A case's WAF is 0 only without host writes (media never falls below host).
                waf: (x.waf > 0.0).then_some(x.waf),
                total_waf: x.total_waf,
                history: &x.history,
                write_bytes_per_sec: x.timed.map(|t| t.0),
                read_iops: x.timed.map(|t| t.1),
                read_p99_ns: x.read_p99_ns,
            })
            .collect(),
        bandwidth: r
            .bandwidth
            .iter()
            .map(|b| BwJson {
                phase: r.phase_name(b.phase),
                device: b.device,
                t_s: b.t_s,
                read_bytes: b.read_bytes,
                write_bytes: b.write_bytes,
                read_lat_ns: LatJson::of(&b.read_lat),
                write_lat_ns: LatJson::of(&b.write_lat),
            })
            .collect(),
        tier_timeline: r.tier_timeline.iter().map(|t| TierJson { phase: r.phase_name(t.phase), host_bytes: t.host_bytes, hot: t.hot, cold: t.cold }).collect(),
        host_timeline: &r.host_timeline,
    };
    // Plain structs of numbers and strings: serializing them cannot fail.
    serde_json::to_value(view).expect("a variant's JSON view serializes")
}

/// `{"variants": [...]}`.
pub fn variants(results: &[VariantResult]) -> Value {
    json!({ "variants": results.iter().map(variant).collect::<Vec<_>>() })
}

fn direction(ios: u64, bytes: u64, t: Option<(&wafsim_experiment::results::DirTiming, u64)>) -> Value {
    let mut v = json!({ "io_bytes": bytes, "io_kbytes": bytes / 1024, "total_ios": ios });
    if let Some((d, window_ns)) = t {
        let pct = json!({
            "50.000000": d.lat_p50_ns,
            "99.000000": d.lat_p99_ns,
            "99.900000": d.lat_p999_ns,
            "99.990000": d.lat_p9999_ns,
        });
        let o = v.as_object_mut().expect("object");
        o.insert("bw_bytes".into(), json!(d.bytes_per_sec.round() as u64));
        o.insert("bw".into(), json!((d.bytes_per_sec / 1024.0).round() as u64));
        o.insert("iops".into(), num(d.iops));
        o.insert("runtime".into(), json!(window_ns / 1_000_000));
        o.insert("clat_ns".into(), json!({ "N": d.ios, "max": d.lat_max_ns, "mean": num(d.lat_mean_ns), "percentile": pct }));
        o.insert("lat_ns".into(), json!({ "N": d.ios, "max": d.lat_max_ns, "mean": num(d.lat_mean_ns) }));
    }
    v
}

/// fio's JSON layout where it fits: a "jobs" array (one entry per variant and workload
/// source, with "read"/"write"/"trim" sections; "groupid" is the variant's index), plus
/// "variants" with the device counters fio cannot know. Bandwidth, IOPS and latency need the
/// timing model and are absent.
pub fn fio_like(results: &[VariantResult]) -> Value {
    let mut jobs = Vec::new();
    for (gi, r) in results.iter().enumerate() {
        for j in &r.jobs {
            let s = &j.stats;
            jobs.push(json!({
                "jobname": j.name,
                "groupid": gi,
                "error": 0,
                "variant": r.name,
                "phase": j.phase,
                "measured": j.measured,
                "namespace": j.namespace,
                "read": direction(s.read_ios, s.read_bytes, j.timing.as_ref().map(|t| (&t.read, t.window_ns))),
                "write": direction(s.write_ios, s.write_bytes, j.timing.as_ref().map(|t| (&t.write, t.window_ns))),
                "trim": direction(s.trim_ios, s.trim_bytes, j.timing.as_ref().map(|t| (&t.trim, t.window_ns))),
                // fio's per-job count of zones its zonemode=zbd writes reset.
                "zone_resets": s.zone_resets,
                "iodepth": j.timing.map(|t| t.iodepth),
                "mean_inflight": j.timing.map(|t| num(t.mean_inflight)),
            }));
        }
    }
    json!({
        "fio version": concat!("wafsim-", env!("CARGO_PKG_VERSION")),
        "jobs": jobs,
        "variants": results.iter().map(variant).collect::<Vec<_>>(),
    })
}

/// `wafsim device show --json`.
pub fn device(cfg: &DeviceConfig, g: &Geometry) -> Value {
    json!({
        "logical_bytes": cfg.logical_bytes,
        "physical_bytes": cfg.physical_bytes,
        "mapping_unit": g.mapping_unit,
        "erase_unit_bytes": cfg.erase_unit_bytes,
        "mapping_units_per_erase_unit": g.units_per_eu,
        "erase_units": g.erase_units,
        "reclaim_groups": g.reclaim_groups,
        "logical_mapping_units": g.logical_units,
        "namespace_mapping_units": g.namespace_units,
        "physical_mapping_units": g.physical_units(),
        "op_logical": num(g.op_logical()),
        "op_physical": num(g.op_physical()),
        "spare_erase_units": g.spare_eus(),
        "reserved_free_erase_units": g.reserved_free_eus,
        "open_frontiers": g.open_frontiers,
        "effective_alpha": num(g.effective_alpha()),
        "gc_policy": cfg.gc_policy.to_string(),
        "gc_age_classes": cfg.gc_age_classes,
        "memory_bytes": g.memory_bytes(),
        "namespaces": cfg.namespaces.iter().map(|n| json!({"name": n.name, "size_bytes": n.size_bytes, "placement_handles": n.placement_handles})).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::timed_result;

    /// Every number in `v`, with its path.
    fn numbers(v: &Value, path: String, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| numbers(x, format!("{path}.{k}"), out)),
            Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| numbers(x, format!("{path}[{i}]"), out)),
            Value::Number(_) | Value::Null => out.push((path, v.clone())),
            _ => {}
        }
    }

    #[test]
    fn undefined_ratios_are_null_never_nan() {
        assert_eq!(num(f64::NAN), Value::Null);
        assert_eq!(num(f64::INFINITY), Value::Null);
        assert_eq!(num(0.5), json!(0.5));
        let mut r = timed_result("a", 0.0, 0.0, 0.0, 0.0);
        r.timed.as_mut().unwrap().elapsed_ns = 0;
        r.op_logical = f64::NAN; // no logical capacity
        r.erase_count.1 = f64::NAN;
        let v = fio_like(&[r.clone(), timed_result("b", 1e9, 0.0, 0.5, 0.1)]);
        let text = serde_json::to_string(&v).unwrap();
        assert!(!text.contains("NaN") && !text.contains("Infinity"), "{text}");
        let mut all = Vec::new();
        numbers(&v, String::new(), &mut all);
        let nulls: Vec<&String> = all.iter().filter(|(_, x)| x.is_null()).map(|(p, _)| p).collect();
        assert!(nulls.contains(&&".variants[0].op_logical".to_string()), "{nulls:?}");
        assert!(nulls.contains(&&".variants[0].erase_count.mean".to_string()), "{nulls:?}");
        // Undefined figures of an empty window are absent (null), not 0.
        assert!(nulls.contains(&&".variants[0].timing.lifetime_years".to_string()), "{nulls:?}");
    }
}

/// `wafsim device show --json` for a ZNS drive (sizes in bytes).
pub fn zns_device(z: &wafsim_core::zns::ZnsConfig, namespace: &str) -> Value {
    let bs = z.block_size as u64;
    let c = &z.zones;
    json!({
        "kind": "zns",
        "block_size": bs,
        "zones": c.zones,
        "conventional_zones": c.conventional_zones,
        "zone_size_bytes": c.zone_size * bs,
        "zone_capacity_bytes": c.zone_capacity * bs,
        "max_open_zones": c.max_open,
        "max_active_zones": c.max_active,
        "erase_units_per_zone": z.erase_units_per_zone,
        "finish_pads": z.finish_pads,
        "namespaces": [json!({"name": namespace, "size_bytes": c.zone_size * bs * c.zones as u64, "zoned": true})],
    })
}

/// `wafsim device show --json` for a host-managed SMR disk (sizes in bytes).
pub fn smr_device(z: &wafsim_core::smr::SmrConfig, namespace: &str) -> Value {
    json!({
        "kind": "smr",
        "block_size": z.block_size,
        "zones": z.zones,
        "conventional_zones": z.conventional_zones,
        "zone_size_bytes": z.zone_size,
        "max_open_zones": z.max_open,
        "namespaces": [json!({"name": namespace, "size_bytes": z.zone_size * z.zones as u64, "zoned": true})],
    })
}

/// The time series of every variant (runs with sampling): one object per sample with the
/// columns of `wafsim run --timeseries` (cumulative counters since the precondition; `drive`
/// is null for all of a variant's drives together).
pub fn timeseries(results: &[VariantResult]) -> Value {
    let mut rows = Vec::new();
    for r in results {
        for t in &r.timeseries {
            rows.push(json!({
                "variant": r.name,
                "phase": r.phase_name(t.phase),
                "drive": t.device,
                "host_bytes": t.host_bytes,
                "media_bytes": t.media_bytes,
                "gc_bytes": t.gc_bytes,
                "erases": t.erases,
                "waf": waf_if_written(t.media_bytes, t.host_bytes).map(num),
                "app_bytes": t.app_bytes,
            }));
        }
    }
    Value::Array(rows)
}
