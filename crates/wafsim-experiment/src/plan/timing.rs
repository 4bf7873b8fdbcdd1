//! From `[timing]` and `[device.geometry]` to the timing model's configuration.

use crate::schema::{Duration, ExperimentSpec, HddScheduling};
use anyhow::{anyhow, bail, Result};
use wafsim_core::smr::SmrConfig;
use wafsim_core::zns::ZnsConfig;
use wafsim_core::DeviceConfig;
use wafsim_time::hdd::{HddConfig, Scheduling, SeekFigures};
use wafsim_time::{NandTiming, TimingConfig};

/// Longest a single NAND operation, controller overhead, suspend or seek may take: a second
/// is far beyond any drive (tBERS is milliseconds), so a larger figure is a unit slip.
const MAX_OP_NS: u64 = 1_000_000_000;

/// A duration of `[timing]` key `key` in 0..=1 s (controller overheads, suspend latencies,
/// seeks: 0 means none).
fn field_ns_upto_1s(key: &str, v: &Duration) -> Result<u64> {
    if v.ns() > MAX_OP_NS {
        bail!("timing.{key} = {:?}: expected 0 to 1s (no drive takes longer for one operation)", v.text());
    }
    Ok(v.ns())
}

/// A NAND operation time of `[timing]` key `key`: above 0 (a zero time makes the NAND
/// infinitely fast, and every figure of the run meaningless) and at most 1 s.
fn nand_op_ns(key: &str, v: &Duration) -> Result<u64> {
    if v.ns() == 0 || v.ns() > MAX_OP_NS {
        bail!("timing.{key} = {:?}: expected a time above 0 and at most 1s (e.g. \"50us\", \"2ms\")", v.text());
    }
    Ok(v.ns())
}

/// The timing configuration of a ZNS drive, or None when timing is off: the NAND model of
/// flash drives with the zones' die groups as reclaim groups (zone width `dies_per_zone`).
pub fn timing_config_zns(spec: &ExperimentSpec, z: &ZnsConfig) -> Result<Option<TimingConfig>> {
    let Some(mut tc) = nand_timing(spec, z.block_size)? else { return Ok(None) };
    let width = spec.device.zones.as_ref().and_then(|s| s.dies_per_zone).unwrap_or(tc.dies);
    if width == 0 || tc.dies % width != 0 {
        bail!("device.zones.dies_per_zone {width}: must divide the {} dies of [device.geometry]", tc.dies);
    }
    tc.reclaim_groups = tc.dies / width;
    tc.background_gc_free = 0;
    // erase_lag_blocks stays 0: a ZNS drive keeps no free pool of its own (the host resets zones).
    let stripe = tc.units_per_program() as u64 * width as u64;
    if z.blocks_per_erase_unit() % stripe != 0 {
        bail!(
            "timing: a zone's erase unit of {} blocks is not a whole number of program units ({} blocks) on each of the {width} dies of a zone; at a small --scale it shrinks below that: use a larger --scale",
            z.blocks_per_erase_unit(),
            tc.units_per_program()
        );
    }
    let open = if z.zones.max_open == 0 { 1 } else { z.zones.max_open as u64 };
    if tc.write_buffer_bytes < tc.program_bytes() {
        bail!("timing.write_buffer: must hold a program unit ({} B; {open} zones may be open)", tc.program_bytes());
    }
    Ok(Some(tc))
}

/// The mechanics of a (scaled) SMR drive, or None when timing is off: `[timing.hdd]` with the
/// capacity and block size of the full-size drive. A scaled drive keeps its zone count and
/// shrinks its zones; the disk keeps its real zones, and each zone's blocks sit at the start
/// of the real zone (see [`wafsim_time::DiskTimeline::new`]), so seeks between zones and the
/// media rate at each zone are the full-size drive's.
pub fn disk_config(spec: &ExperimentSpec, z: &SmrConfig) -> Result<Option<(HddConfig, u64)>> {
    let Some(t) = spec.timing.as_ref().filter(|t| t.enabled) else { return Ok(None) };
    let Some(h) = &t.hdd else {
        bail!("timing: an SMR disk needs its mechanics in [timing.hdd] (rpm, heads, od_rate, seeks, ...); the smr-hm-14tb preset has them");
    };
    let bs = z.block_size as u64;
    let full_zone = ((z.zone_size as f64 / spec.erase_scale / bs as f64).round() as u64 * bs).max(z.zone_size);
    let seek = |key: &str, s: &crate::schema::SeekSpec| -> Result<SeekFigures> {
        let f = SeekFigures {
            track_to_track_ns: field_ns_upto_1s(&format!("hdd.{key}.track_to_track"), &s.track_to_track)?,
            average_ns: field_ns_upto_1s(&format!("hdd.{key}.average"), &s.average)?,
            full_stroke_ns: field_ns_upto_1s(&format!("hdd.{key}.full_stroke"), &s.full_stroke)?,
        };
        Ok(f)
    };
    let cfg = HddConfig {
        capacity: full_zone * z.zones as u64,
        block_size: z.block_size,
        rpm: h.rpm,
        heads: h.heads,
        od_rate: h.od_rate.bytes_per_s(),
        id_od_ratio: h.id_od_ratio,
        seek_read: seek("seek_read", &h.seek_read)?,
        seek_write: seek("seek_write", &h.seek_write)?,
        command_overhead_ns: field_ns_upto_1s("hdd.command_overhead", &h.command_overhead)?,
        scheduling: match h.scheduling {
            HddScheduling::Sptf => Scheduling::Sptf,
            HddScheduling::Fifo => Scheduling::Fifo,
        },
        write_cache_cmds: h.write_cache_cmds,
    };
    cfg.validate().map_err(|e| anyhow!("timing.hdd: {e}"))?;
    Ok(Some((cfg, full_zone)))
}

/// The cache device's timing for dm-zoned (`[timing.cache]`), or None when timing is off.
pub fn cache_config(spec: &ExperimentSpec) -> Result<Option<wafsim_time::PlainTiming>> {
    let Some(t) = spec.timing.as_ref().filter(|t| t.enabled) else { return Ok(None) };
    let Some(c) = &t.cache else {
        bail!("timing: dm-zoned's cache device needs [timing.cache] (write = \"2.5GB/s\", read = \"3GB/s\", latency = \"20us\")");
    };
    let cfg = wafsim_time::PlainTiming {
        write_bytes_per_sec: c.write.bytes_per_s(),
        read_bytes_per_sec: c.read.bytes_per_s(),
        latency_ns: field_ns_upto_1s("cache.latency", &c.latency)?,
        shared: c.shared,
    };
    cfg.check().map_err(|e| anyhow!("timing.cache: {e}"))?;
    Ok(Some(cfg))
}

/// `[timing] log_interval` in ns, if set.
pub fn log_interval_ns(spec: &ExperimentSpec) -> Result<Option<u64>> {
    let Some(t) = spec.timing.as_ref().filter(|t| t.enabled) else { return Ok(None) };
    let Some(s) = &t.log_interval else { return Ok(None) };
    let ns = s.ns();
    if ns == 0 {
        bail!("timing.log_interval {:?}: must be longer than 0", s.text());
    }
    Ok(Some(ns))
}

/// The timing configuration of a (scaled) experiment, or None when timing is off.
pub fn timing_config(spec: &ExperimentSpec, cfg: &DeviceConfig) -> Result<Option<TimingConfig>> {
    let Some(mut tc) = nand_timing(spec, cfg.mapping_unit)? else { return Ok(None) };
    let geo = cfg.geometry().map_err(|e| anyhow!("device: {e}"))?;
    if tc.dies % geo.reclaim_groups != 0 {
        bail!("timing: {} dies do not split evenly into {} reclaim groups", tc.dies, geo.reclaim_groups);
    }
    tc.reclaim_groups = geo.reclaim_groups;
    tc.erase_lag_blocks = cfg.gc_free_min;
    tc.background_gc_free = spec.timing.as_ref().and_then(|t| t.background_gc_free).unwrap_or(cfg.gc_free_target + 2);
    let t = spec.timing.as_ref().expect("timing on");
    let upp = tc.units_per_program() as u64 * tc.dies_per_rg() as u64;
    if geo.units_per_eu as u64 % upp != 0 {
        bail!(
            "timing: an erase unit of {} mapping units is not a whole number of program units ({} units) on each of the {} dies of a reclaim group; at a small --scale the erase unit shrinks below that: use a larger --scale",
            geo.units_per_eu,
            tc.units_per_program(),
            tc.dies_per_rg()
        );
    }
    if tc.write_buffer_bytes < tc.program_bytes() * geo.open_frontiers as u64 {
        bail!(
            "timing.write_buffer {}: must hold a program unit ({} B) for each of the {} open write frontiers",
            t.write_buffer,
            tc.program_bytes(),
            geo.open_frontiers
        );
    }
    Ok(Some(tc))
}

/// `[timing]` and `[device.geometry]` as the NAND model reads them, with one reclaim group and
/// no background GC (the callers set both for their kind of drive).
fn nand_timing(spec: &ExperimentSpec, mapping_unit: u32) -> Result<Option<TimingConfig>> {
    let Some(t) = &spec.timing else { return Ok(None) };
    if !t.enabled {
        return Ok(None);
    }
    let Some(g) = &spec.device.geometry else {
        bail!("timing: the timing model needs [device.geometry] (page_size, pages_per_block, planes_per_die, dies_per_channel, channels)");
    };
    let mut nand = NandTiming::preset(&t.nand).ok_or_else(|| anyhow!("timing.nand {:?}: expected \"slc\", \"tlc\" or \"qlc\"", t.nand))?;
    if let Some(v) = &t.t_read {
        nand.t_read_ns = nand_op_ns("t_read", v)?;
    }
    if let Some(v) = &t.t_prog_slc {
        nand.t_prog_slc_ns = nand_op_ns("t_prog_slc", v)?;
    }
    if let Some(v) = &t.t_prog {
        nand.t_prog_ns = nand_op_ns("t_prog", v)?;
    }
    if let Some(v) = &t.t_erase {
        nand.t_erase_ns = nand_op_ns("t_erase", v)?;
    }
    if let Some(v) = t.pe_cycles {
        nand.pe_cycles = v;
    }
    if let Some(v) = &t.t_read_pages {
        if v.len() != nand.bits_per_cell as usize {
            bail!("timing.t_read_pages: {} values for {} bits per cell (one per page type, LSB first)", v.len(), nand.bits_per_cell);
        }
        for (i, x) in v.iter().enumerate() {
            nand.t_read_page_ns[i] = nand_op_ns(&format!("t_read_pages[{i}]"), x)?;
        }
    }
    let dies = (g.dies_per_channel * g.channels) as u32;
    let tc = TimingConfig {
        nand,
        page_bytes: g.page_size.get(),
        planes_per_die: g.planes_per_die as u32,
        dies,
        channels: g.channels as u32,
        reclaim_groups: 1,
        channel_bytes_per_sec: t.channel_rate.bytes_per_s(),
        host_link_bytes_per_sec: t.host_link.bytes_per_s(),
        datapath_bytes_per_sec: t.datapath.as_ref().and_then(|d| d.given()).map_or(0.0, |r| r.bytes_per_s()),
        datapath_host_reads_first: t.datapath_arbitration == crate::schema::DatapathArbitration::HostReadsFirst,
        write_buffer_bytes: t.write_buffer.get(),
        program_suspend: t.program_suspend,
        suspend_ns: field_ns_upto_1s("suspend_latency", &t.suspend_latency)?,
        erase_suspend_ns: field_ns_upto_1s("erase_suspend_latency", &t.erase_suspend_latency)?,
        resume_ns: field_ns_upto_1s("resume_overhead", &t.resume_overhead)?,
        max_suspends: t.max_suspends,
        max_active_programs: t.max_active_programs,
        read_overhead_ns: field_ns_upto_1s("read_overhead", &t.read_overhead)?,
        write_overhead_ns: field_ns_upto_1s("write_overhead", &t.write_overhead)?,
        write_command_ns: field_ns_upto_1s("write_command_time", &t.write_command_time)?,
        zone_reset_ns: field_ns_upto_1s("zone_reset_time", &t.zone_reset_time)?,
        zone_reset_ns_per_byte: t.zone_reset_time_per_gib.ns() as f64 / (1u64 << 30) as f64,
        mapping_unit,
        background_gc_free: 0,
        // A scaled erase unit is this fraction of a real one: the media erases a real block
        // (full tBERS) once per 1/erase_scale reclaimed units.
        erase_scale: spec.erase_scale,
        // Set by the drive kind (the FTL's free pool; none on ZNS).
        erase_lag_blocks: 0,
    };
    if tc.page_bytes < mapping_unit as u64 {
        bail!("timing: page size {} B is below the mapping unit {} B", tc.page_bytes, mapping_unit);
    }
    tc.check().map_err(|e| anyhow!("timing: {e}"))?;
    Ok(Some(tc))
}
