//! Scaled runs: the same drive and workloads with capacities divided by a factor, so an
//! experiment on a 7.68 TB drive finishes in seconds. What scales and what does not:
//!
//! - scales: logical and raw capacity, erase unit (so the erase-unit count stays the same),
//!   namespace sizes, workload amounts given in bytes, file workloads' amounts and file sizes, a
//!   conventional file system's allocation chunk and the spacing of its groups' goals (parts/files.rs `make_fs`), fio `size`/`offset`/`offset_increment`/
//!   `io_size` given in bytes and `number_ios`; in timed runs also fio runtime and ramp time and
//!   the erase time tBERS (so time per byte written, and per erase, stays the same);
//! - stays: over-provisioning, mapping unit, block sizes, amounts given as multiples ("3x") or
//!   percentages, and trace offsets, which wrap into the scaled namespace (a trace replayed at
//!   a small scale overwrites its namespace more often than at full scale: use --full-scale for
//!   traces whose footprint matters).

use crate::schema::{Amount, AmountOf, Bytes, ExperimentSpec, OrNone};
use anyhow::{anyhow, bail, Result};

/// Smallest zone the default scale shrinks a zoned drive's zones to: room for a few fio blocks
/// of 128 KiB per zone (a zoned drive costs no memory per block, so capacity is no constraint).
const MIN_AUTO_ZONE: f64 = 2.0 * 1024.0 * 1024.0;

/// Default scale: the experiment's `default_scale` if it gives one; else the largest power of
/// ten (<= 1) that brings the logical capacity to at most 10 GB; for a zoned drive, no smaller
/// than keeps its zones at 2 MiB or more; 1 for a timed SMR disk.
pub fn auto_scale(spec: &ExperimentSpec) -> Result<f64> {
    if let Some(s) = spec.default_scale {
        if !(s > 0.0 && s <= 1.0) {
            bail!("default_scale = {s}: expected 0 < default_scale <= 1");
        }
        return Ok(s);
    }
    // A timed disk: the head, its queue and its write cache do not scale, and a scaled run
    // (fio runtime scales too) would be as short as their transients; a disk's run costs time
    // per command, not memory per block, so run it at full size.
    if spec.device.drive_kind() == crate::schema::DriveKind::Smr && spec.timing.as_ref().is_some_and(|t| t.enabled) {
        return Ok(1.0);
    }
    if let Some(z) = spec.device.zones.as_ref().filter(|_| spec.device.is_zoned()) {
        let zone = z.zone_size.get() as f64;
        let logical = zone * z.zones as f64;
        let mut s = 1.0;
        while logical * s > 10e9 && zone * s / 10.0 >= MIN_AUTO_ZONE {
            s /= 10.0;
        }
        return Ok(s);
    }
    let logical = spec.device.capacity.as_ref().ok_or_else(|| anyhow!("device.capacity missing (e.g. capacity = \"7.68TB\")"))?.get() as f64;
    let mut s = 1.0;
    while logical * s > 10e9 {
        s /= 10.0;
    }
    Ok(s)
}

/// The default scale of an experiment's variants, shared so they compare: the largest any of
/// them needs.
pub fn auto_scale_all<'a>(specs: impl IntoIterator<Item = &'a ExperimentSpec>) -> Result<f64> {
    let mut s = 0f64;
    for spec in specs {
        s = s.max(auto_scale(spec)?);
    }
    Ok(if s > 0.0 { s } else { 1.0 })
}

/// `value` bytes times `s`, down to a multiple of `align`; refused at 0.
fn scaled_bytes(field: &str, value: u64, text: &str, s: f64, align: u64) -> Result<u64> {
    let v = ((value as f64 * s) as u64) / align * align;
    if v == 0 {
        bail!("{field}: {text} scaled by {s} is below {align} B; use a larger --scale");
    }
    Ok(v)
}

fn scaled(field: &str, value: &Bytes, s: f64, align: u64) -> Result<Bytes> {
    scaled_bytes(field, value.get(), value.text(), s, align).map(Bytes::exact)
}

/// An amount in bytes scaled (a multiple stays as it is).
fn scaled_amount(field: &str, a: &mut Amount, s: f64) -> Result<()> {
    if let AmountOf::Bytes(b) = *a.value() {
        let v = scaled_bytes(field, b, a.text(), s, 1)?;
        *a = Amount::computed(AmountOf::Bytes(v), v.to_string());
    }
    Ok(())
}

/// Scale `spec` in place by `s` (0 < s <= 1).
pub fn scale_spec(spec: &mut ExperimentSpec, s: f64) -> Result<()> {
    if !(s > 0.0 && s <= 1.0) {
        bail!("scale {s}: expected 0 < scale <= 1");
    }
    spec.scale = s;
    if s == 1.0 {
        return Ok(());
    }
    if spec.device.is_zoned() {
        return scale_zns(spec, s);
    }
    let full = spec.device.to_config(&spec.main_namespaces(), spec.seed)?;
    spec.full_scale_op = Some(full.geometry().map_err(|e| anyhow!("device: {e}"))?.op_logical());
    let d = &mut spec.device;
    let mu = d.mapping_unit.get();
    // Make a geometry-derived erase unit and raw capacity explicit before scaling them.
    // The geometry stays for the timing model (dies, channels, page size do not scale).
    if let Some(g) = &mut d.geometry {
        if d.erase_unit.is_none() {
            d.erase_unit = Some(Bytes::exact(g.superblock_bytes()?));
        }
        if let Some(raw) = g.raw_bytes()? {
            d.raw_capacity = Some(Bytes::exact(raw));
        }
        g.blocks_per_plane = None;
    }
    if let Some(c) = &d.capacity {
        d.capacity = Some(scaled("device.capacity", c, s, mu)?);
    }
    // The pSLC cache's static part is a share of the drive: it scales with the capacity.
    if let Some(c) = &mut d.slc_cache {
        c.static_size = Bytes::exact((c.static_size.get() as f64 * s) as u64);
    }
    if let Some(raw) = &d.raw_capacity {
        d.raw_capacity = Some(scaled("device.raw_capacity", raw, s, mu)?);
    }
    if let Some(eu) = &d.erase_unit {
        let b = eu.get();
        // At least 16 mapping units per erase unit, or the erase unit would stop being a unit.
        let mut v = (((b as f64 * s) as u64) / mu * mu).max(16 * mu).min(b);
        // The timing model stripes program units over the dies: keep the erase unit a whole
        // number of program units on every die.
        if let (Some(t), Some(g)) = (spec.timing.as_ref().filter(|t| t.enabled), &d.geometry) {
            let bits = wafsim_time::NandTiming::preset(&t.nand).map_or(1, |n| n.bits_per_cell as u64);
            let rgs = d.fdp.as_ref().filter(|f| f.enabled).map_or(1, |f| f.reclaim_groups.max(1) as u64);
            let page = g.page_size.get();
            let unit = page * g.planes_per_die * bits * (g.dies_per_channel * g.channels / rgs).max(1);
            v = ((v as f64 / unit as f64).round() as u64).max(1) * unit;
        }
        d.erase_unit = Some(Bytes::exact(v));
        spec.erase_scale = v as f64 / b as f64;
    }
    // No size: the whole drive (a sole namespace), which scales with the drive.
    for n in &mut spec.namespace {
        if let Some(size) = &n.size {
            n.size = Some(scaled(&format!("namespace {:?}: size", n.name), size, s, mu)?);
        }
    }
    scale_workload_amounts(spec, s)
}

/// A ZNS drive keeps its zone count (as a flash drive keeps its erase-unit count, so a host's
/// free-zone fractions and GC behave the same) and its limits; zone size and capacity shrink,
/// each kept a whole number of erase units of whole blocks.
fn scale_zns(spec: &mut ExperimentSpec, s: f64) -> Result<()> {
    spec.device.zoned_config(&spec.main_namespaces())?;
    let d = &mut spec.device;
    let bs = d.mapping_unit.get();
    let z = d.zones.as_mut().expect("checked by zoned_config");
    let mut unit = bs * z.erase_units_per_zone.max(1) as u64;
    // Timed: an erase unit stays whole program units on each die of the zone's width.
    if let (Some(t), Some(g)) = (spec.timing.as_ref().filter(|t| t.enabled), &d.geometry) {
        let bits = wafsim_time::NandTiming::preset(&t.nand).map_or(1, |n| n.bits_per_cell as u64);
        let page = g.page_size.get();
        let width = z.dies_per_zone.map_or(g.dies_per_channel * g.channels, |w| w as u64);
        unit = page * g.planes_per_die * bits * width * z.erase_units_per_zone.max(1) as u64;
    }
    let size = z.zone_size.get();
    let cap = z.zone_capacity.as_ref().map_or(size, Bytes::get);
    // Both in whole erase units, so a zone whose capacity is its size keeps it so.
    let mut scaled_size = ((size as f64 * s) as u64 / unit * unit).max(unit);
    // dm-zoned takes power-of-two zones only (as Linux's zoned block devices).
    if spec.host.as_ref().is_some_and(|h| h.layer == crate::schema::HostLayer::DmZoned) && !scaled_size.is_power_of_two() {
        scaled_size = (1u64 << (63 - scaled_size.leading_zeros())).max(unit);
    }
    let scaled_cap = if cap == size { scaled_size } else { ((cap as f64 * s) as u64 / unit * unit).clamp(unit, scaled_size) };
    z.zone_size = Bytes::exact(scaled_size);
    z.zone_capacity = Some(Bytes::exact(scaled_cap));
    spec.full_scale_op = Some(0.0);
    spec.erase_scale = scaled_cap as f64 / cap as f64;
    // Namespaces on drives of their own that give a size scale as those drives do.
    for n in spec.namespace.iter_mut().filter(|n| n.device.is_some()) {
        if let Some(size) = &n.size {
            n.size = Some(scaled(&format!("namespace {:?}: size", n.name), size, s, 4096)?);
        }
    }
    // A dm-zoned cache device keeps its zone count: it shrinks with the zones.
    if let Some(OrNone::Given(c)) = spec.host.as_mut().and_then(|h| h.dm_zoned.cache_size.as_mut()) {
        *c = Bytes::exact((c.get() as f64 * scaled_size as f64 / size as f64) as u64);
    }
    scale_workload_amounts(spec, s)
}

/// Workload amounts given in bytes scale; multiples ("3x") do not.
fn scale_workload_amounts(spec: &mut ExperimentSpec, s: f64) -> Result<()> {
    // Key-value stores: amounts in bytes scale; an LSM store scales its own sizes.
    for k in spec.phase.iter_mut().flat_map(|p| p.kv.iter_mut()) {
        if let Some(a) = &mut k.amount {
            scaled_amount("kv amount", a, s)?;
        }
        k.scale = s;
    }
    let workloads = spec.workload.iter_mut().chain(spec.phase.iter_mut().flat_map(|p| p.workload.iter_mut()));
    for w in workloads {
        scaled_amount("workload amount", &mut w.amount, s)?;
    }
    // File workloads: amounts and file sizes scale (so live data keeps its share of the
    // namespace); write sizes stay, and a file keeps at least one write.
    for f in spec.phase.iter_mut().flat_map(|p| p.files.iter_mut()) {
        scaled_amount("files amount", &mut f.amount, s)?;
        f.scale = s;
        let unit = f.write_size.get();
        for g in &mut f.group {
            let unit = g.write_size.as_ref().map_or(unit, Bytes::get);
            let scale_one = |v: &mut Bytes| -> Result<()> {
                *v = Bytes::exact((((v.get() as f64 * s) as u64) / unit * unit).max(unit));
                Ok(())
            };
            match &mut g.file_size {
                crate::schema::FileSize::One(v) => scale_one(v)?,
                crate::schema::FileSize::Range([a, b]) => {
                    scale_one(a)?;
                    scale_one(b)?;
                }
            }
        }
    }
    Ok(())
}

/// Human label of a scale: "full scale" or "scale 1/1000".
pub fn label(s: f64) -> String {
    if s == 1.0 {
        "full scale".into()
    } else if (1.0 / s - (1.0 / s).round()).abs() < 1e-6 {
        format!("scale 1/{}", (1.0 / s).round() as u64)
    } else {
        format!("scale {s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_experiment;

    #[test]
    fn scaling_keeps_op_and_erase_unit_count() {
        let doc = "[device]\npreset = \"enterprise-tlc-7.68tb\"\n[[namespace]]\nname = \"a\"\nsize = \"940GB\"\n[[workload]]\nnamespace = \"a\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"100GB\"\n";
        let mut spec = parse_experiment(doc, "t").unwrap().remove(0).spec;
        let full = spec.device.to_config(&spec.namespace, 1).unwrap().geometry().unwrap();
        let s = auto_scale(&spec).unwrap();
        assert_eq!(s, 0.001);
        scale_spec(&mut spec, s).unwrap();
        let small = spec.device.to_config(&spec.namespace, 1).unwrap().geometry().unwrap();
        assert!((full.op_logical() - small.op_logical()).abs() < 0.001);
        let ratio = small.erase_units as f64 / full.erase_units as f64;
        assert!((0.9..1.1).contains(&ratio), "{} vs {}", small.erase_units, full.erase_units);
        assert_eq!(spec.workload[0].amount.text(), "100000000");
        assert_eq!(label(s), "scale 1/1000");
    }
}

/// Keep the variants named in `names` (all when empty) and scale each: by `scale`, or by 1 with
/// `full_scale`, or else by the default scale of the kept variants (the largest any of them
/// needs, so they compare). `origin` names the experiment in errors. What `wafsim run` and the
/// Python package's `wafsim.run` share.
pub fn select_and_scale(mut all: Vec<crate::schema::Variant>, names: &[String], scale: Option<f64>, full_scale: bool, origin: &str) -> Result<Vec<crate::schema::Variant>> {
    use anyhow::Context;
    for want in names {
        if !all.iter().any(|v| &v.name == want) {
            let have: Vec<_> = all.iter().map(|v| v.name.as_str()).collect();
            bail!("no variant named {want:?} in {origin} (variants: {})", have.join(", "));
        }
    }
    if !names.is_empty() {
        all.retain(|v| names.contains(&v.name));
    }
    // Variants of one experiment run at one scale, so they compare (a zoned drive keeps its
    // zones at 2 MiB or more, a timed disk runs at full size).
    let auto = auto_scale_all(all.iter().map(|v| &v.spec))?;
    let s = if full_scale { 1.0 } else { scale.unwrap_or(auto) };
    for v in &mut all {
        scale_spec(&mut v.spec, s).with_context(|| format!("variant {:?}", v.name))?;
    }
    Ok(all)
}
