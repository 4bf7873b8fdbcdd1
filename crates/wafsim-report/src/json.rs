//! JSON output. Keys are stable; new keys may be added.
//!
//! Every ratio goes through [`num`]: a figure that is undefined for a run (e.g. a ratio over
//! zero time) is `null`, never NaN or infinity (which JSON cannot hold). Tables print "-" for
//! the same cases. A WAF without host writes (a read-only or trim-only window) is `null` too,
//! with a `waf_note` saying why; tables print "n/a".

use serde_json::{json, Value};
use wafsim_core::counters::{smart_data_units, waf_if_written};
use wafsim_core::{DeviceConfig, Geometry};
use wafsim_experiment::VariantResult;

/// A phase checkpoint: where it fell, and the WAF up to it and since the previous one (null
/// when the phase ended before it).
fn checkpoint(c: &wafsim_experiment::results::Checkpoint) -> Value {
    json!({
        "label": c.label,
        "at_bytes": c.at_bytes,
        "reached_bytes": c.reached,
        "waf": c.reached.map(|_| num(c.waf)),
        "interval_waf": c.reached.map(|_| num(c.interval_waf)),
        "total_waf": c.total_waf.map(|t| num(t.0)),
        "interval_total_waf": c.total_waf.map(|t| num(t.1)),
    })
}

/// `part` as a fraction of `whole`, or null when `whole` is 0.
fn share(part: u64, whole: u64) -> Value {
    if whole == 0 {
        Value::Null
    } else {
        num(part as f64 / whole as f64)
    }
}

/// `x` as a JSON number, or `null` when it is NaN or infinite. serde_json would write `null`
/// for those too; going through this says so at every ratio and keeps the choice in one place.
pub fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// An interval's latency summary (ns), as fio's clat percentiles.
fn lat(l: &wafsim_experiment::results::LatSummary) -> Value {
    json!({ "mean": l.mean_ns, "p50": l.p50_ns, "p99": l.p99_ns, "p99.9": l.p999_ns, "max": l.max_ns })
}

/// One variant's results.
pub fn variant(r: &VariantResult) -> Value {
    let c = &r.counters;
    // Timed runs with [timing] log_interval: bytes each drive completed per interval.
    let bandwidth: Vec<Value> = r
        .bandwidth
        .iter()
        .map(|b| {
            json!({
                "phase": r.phases.get(b.phase).map(|p| p.name.as_str()).unwrap_or(""),
                "device": b.device,
                "t_s": num(b.t_s),
                "read_bytes": b.read_bytes,
                "write_bytes": b.write_bytes,
                "read_lat_ns": lat(&b.read_lat),
                "write_lat_ns": lat(&b.write_lat),
            })
        })
        .collect();
    // Timed dm-zoned: free cache zones and reclaim writes per disk over time.
    let host_timeline: Vec<Value> = r
        .host_timeline
        .iter()
        .map(|h| {
            json!({
                "t_s": num(h.t_s),
                "cache_free": h.cache_free,
                "cache_total": h.cache_total,
                "user_write_bytes": h.user_write_bytes,
                "reclaim_write_bytes": h.reclaim_write_bytes,
            })
        })
        .collect();
    let mut v = json!({
        "name": r.name,
        "layout": r.layout,
        "devices": r.devices,
        "placement": r.placement,
        "gc_policy": r.gc_policy,
        "op_logical": num(r.op_logical),
        "op_logical_full": num(r.op_logical_full),
        "scale": r.scale,
        "logical_bytes": r.logical_bytes,
        "physical_bytes": r.physical_bytes,
        "waf": r.written_waf().map(num),
        "hbmw": r.hbmw(),
        "mbmw": r.mbmw(),
        "mbe": r.mbe(),
        "gc_bytes": c.gc_units * r.mapping_unit as u64,
        // Zoned drives: dummy data a Finish programmed (part of mbmw).
        "pad_bytes": c.pad_units * r.mapping_unit as u64,
        "erases": c.erases,
        // File systems of file workloads: application bytes and bytes sent to the device.
        "filesystems": r.filesystems.iter().map(|f| json!({
            "phase": f.phase,
            "measured": f.measured,
            "name": f.name,
            "namespace": f.namespace,
            "filesystem": f.filesystem,
            "file_write_bytes": f.file_write_bytes,
            "dev_write_bytes": f.dev_write_bytes,
            // A store between application and file system (an LSM tree): bytes it wrote to files.
            "store_write_bytes": f.store_write_bytes,
            // Figures of the store's own (a flash cache's hit ratios).
            "metrics": f.metrics.iter().map(|(k, v)| (k.clone(), num(*v))).collect::<serde_json::Map<_, _>>(),
            "waf": f.written_waf().map(num),
        })).collect::<Vec<_>>(),
        // Host layer (dm-zoned): traffic to each of its devices over the whole run.
        "host_devices": r.host_devices.iter().map(|d| json!({
            "device": d.device,
            "user_write_bytes": d.user_write_bytes,
            "user_read_bytes": d.user_read_bytes,
            "reclaim_read_bytes": d.reclaim_read_bytes,
            "reclaim_write_bytes": d.reclaim_write_bytes,
            "metadata_write_bytes": d.metadata_write_bytes,
            "media_write_bytes": d.media_write_bytes,
            "media_share": share(d.media_write_bytes, r.host_devices.iter().map(|d| d.media_write_bytes).sum()),
            "device_waf": waf_if_written(d.media_write_bytes, d.sent_bytes()).map(num),
        })).collect::<Vec<_>>(),
        "smart_data_units_written": smart_data_units(r.hbmw()),
        "physical_media_units_written": r.mbmw(),
        "host_read_bytes": c.host_read_bytes,
        "trim_bytes": c.trim_bytes,
        "erase_count": {"min": r.erase_count.0, "mean": num(r.erase_count.1), "max": r.erase_count.2},
        "fdp_events": {
            "ru_not_fully_written": c.fdp_events.ru_not_fully_written,
            "invalid_pid": c.fdp_events.invalid_pid,
            "media_reallocated": c.fdp_events.media_reallocated,
            "media_reallocated_bytes": c.fdp_events.media_reallocated_units * r.mapping_unit as u64,
        },
        "namespaces": r.namespaces.iter().map(|n| json!({
            "name": n.name,
            "size_bytes": n.size_bytes,
            "host_bytes": n.host_bytes,
            "media_bytes": n.media_bytes,
            "gc_bytes": n.gc_bytes,
            // Shares of the variant's host and media writes (a drive's, with a drive per
            // namespace); null when the variant wrote nothing.
            "host_share": share(n.host_bytes, r.hbmw()),
            "media_share": share(n.media_bytes, r.mbmw()),
            "waf": waf_if_written(n.media_bytes, n.host_bytes).map(num),
        })).collect::<Vec<_>>(),
        "timing": r.timed.map(|t| json!({
            "elapsed_ns": t.elapsed_ns,
            "busy_window_ns": t.busy_window_ns,
            "dies": t.dies,
            "disks": t.disks,
            "head_busy_ns": t.head_busy_ns,
            "busy_ns": {
                "host": t.busy.host_ns(),
                "gc": t.busy.gc_ns(),
                "host_program": t.busy.host_program_ns,
                "host_read": t.busy.host_read_ns,
                "gc_program": t.busy.gc_program_ns,
                "gc_read": t.busy.gc_read_ns,
                "erase": t.busy.erase_ns,
            },
            "pe_cycles": t.pe_cycles,
            "lifetime_years": r.lifetime_years().map(num),
            "measured_dwpd": r.measured_dwpd().map(num),
            "sustainable_dwpd_5y": r.sustainable_dwpd().map(num),
            "write_bytes_per_sec": num(r.hbmw() as f64 / (t.elapsed_ns.max(1) as f64 * 1e-9)),
        })),
        "phases": r.phases.iter().map(|p| with_stopped(p, json!({
            "name": p.name,
            "measured": p.measured,
            "waf": p.written_waf().map(num),
            "hbmw": p.counters.host_write_bytes,
            "mbmw": p.counters.media_units() * r.mapping_unit as u64,
            "mbe": p.counters.erases * r.erase_unit_bytes,
            "window": p.window,
            "whole_phase_waf": p.whole_waf.map(num),
            "checkpoints": p.checkpoints.iter().map(checkpoint).collect::<Vec<_>>(),
        }))).collect::<Vec<_>>(),
        "frontiers": r.frontiers.iter().map(|f| json!({
            "device": f.device,
            "kind": f.kind,
            "reclaim_group": f.rg,
            "ruh": f.ruh,
            "host_bytes": f.host_bytes,
            "gc_bytes": f.gc_bytes,
            "mbmw": f.host_bytes + f.gc_bytes,
            "erases": f.erases,
            "mbe": f.erases * r.erase_unit_bytes,
            "age_class": f.age_class,
        })).collect::<Vec<_>>(),
    });
    v["history"] = r.history.clone().into();
    // The other cases of the experiment's unknowns (empty unless they were run).
    v["spread"] = Value::Array(
        r.spread
            .iter()
            .map(|x| {
                let mut row = json!({ "unknown": x.unknown, "case": x.case, "waf": (x.waf > 0.0).then(|| num(x.waf)), "total_waf": x.total_waf.map(num), "history": x.history });
                // Timed runs only, so untimed outputs keep their keys.
                if let Some((w, ri)) = x.timed {
                    row["write_bytes_per_sec"] = num(w);
                    row["read_iops"] = num(ri);
                }
                if let Some(p) = x.read_p99_ns {
                    row["read_p99_ns"] = num(p);
                }
                row
            })
            .collect(),
    );
    v["bandwidth"] = Value::Array(bandwidth);
    // What the application wrote (through file systems, else to the host layer or drive) and
    // media bytes per application byte.
    let app = r.application_bytes();
    v["application_bytes"] = app.into();
    v["total_waf"] = waf_if_written(r.mbmw(), app).map(num).into();
    if r.hbmw() == 0 {
        // Only then, so the output of runs that wrote is unchanged.
        v["waf_note"] = "no host writes in the window".into();
    }
    // Tiering: each tier's traffic at every time-series sample.
    let traffic = |t: &wafsim_experiment::results::TierTraffic| {
        json!({
            "user_write_bytes": t.user_write_bytes,
            "migration_write_bytes": t.migration_write_bytes,
            "user_read_bytes": t.user_read_bytes,
            "migration_read_bytes": t.migration_read_bytes,
        })
    };
    v["tier_timeline"] = r
        .tier_timeline
        .iter()
        .map(|t| json!({"phase": r.phases.get(t.phase).map(|p| p.name.as_str()).unwrap_or(""), "host_bytes": t.host_bytes, "hot": traffic(&t.hot), "cold": traffic(&t.cold)}))
        .collect();
    v["host_timeline"] = Value::Array(host_timeline);
    v
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
                "phase": r.phases.get(t.phase).map(|p| p.name.as_str()).unwrap_or(""),
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

/// A phase's JSON with `"stopped"` (why it ended early) where it did: absent otherwise, so a
/// phase that ran its course reads as before.
fn with_stopped(p: &wafsim_experiment::results::PhaseResult, mut v: Value) -> Value {
    if let Some(why) = &p.stopped {
        v["stopped"] = why.clone().into();
    }
    v
}
