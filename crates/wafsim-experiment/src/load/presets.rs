//! Built-in device presets (the TOML files in devices/, embedded in the binary). An experiment
//! names one with `[device] preset = "NAME"`; its own `[device]` keys override the preset's.

use crate::schema::merge;
use anyhow::{anyhow, bail, Result};

/// (name, TOML text) of every preset.
pub const PRESETS: &[(&str, &str)] = &[
    ("enterprise-tlc-7.68tb", include_str!("../../../../devices/enterprise-tlc-7.68tb.toml")),
    ("enterprise-tlc-7.68tb-gen5", include_str!("../../../../devices/enterprise-tlc-7.68tb-gen5.toml")),
    ("enterprise-tlc-1.92tb", include_str!("../../../../devices/enterprise-tlc-1.92tb.toml")),
    ("client-tlc-2tb", include_str!("../../../../devices/client-tlc-2tb.toml")),
    ("qlc-15.36tb", include_str!("../../../../devices/qlc-15.36tb.toml")),
    ("zns-zn540", include_str!("../../../../devices/zns-zn540.toml")),
    ("zns-prototype-2tb", include_str!("../../../../devices/zns-prototype-2tb.toml")),
    ("smr-hm-14tb", include_str!("../../../../devices/smr-hm-14tb.toml")),
];

/// Why `path`, given where an experiment, device file or preset name is accepted, cannot be
/// read: a name without a directory or a `.toml` ending that is no file is taken as a preset name, and
/// the error says it is not one and lists the presets ("No such file or directory" said
/// nothing about presets); other paths keep the operating system's reason.
pub fn unreadable(path: &std::path::Path, e: std::io::Error) -> anyhow::Error {
    let s = path.to_string_lossy();
    // (Preset names have dots, "qlc-15.36tb": only a .toml ending marks a file name.)
    let looks_like_name = !s.contains('/') && !s.to_ascii_lowercase().ends_with(".toml");
    if e.kind() == std::io::ErrorKind::NotFound && PRESETS.iter().any(|(n, _)| *n == s) {
        return anyhow!("cannot read {s}: no such file; {s} is a device preset, which this command does not take in place of a file (an experiment names it with [device] preset = {s:?}; `wafsim device show {s}` describes it)");
    }
    if e.kind() == std::io::ErrorKind::NotFound && looks_like_name {
        let names: Vec<_> = PRESETS.iter().map(|(n, _)| *n).collect();
        return anyhow!("cannot read {s}: no such file, and no device preset has that name either (presets: {}; `wafsim device presets` describes them)", names.join(", "));
    }
    anyhow!("cannot read {}: {e}", path.display())
}

fn preset_doc(name: &str) -> Result<toml::Table> {
    let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<_> = PRESETS.iter().map(|(n, _)| *n).collect();
        bail!("device preset {name:?} does not exist (presets: {})", names.join(", "));
    };
    toml::from_str(text).map_err(|e| anyhow!("preset {name}: {e}"))
}

/// The `[device]` table of preset `name`.
pub fn device_table(name: &str) -> Result<toml::Table> {
    match preset_doc(name)?.remove("device") {
        Some(toml::Value::Table(t)) => Ok(t),
        _ => bail!("preset {name}: no [device] table"),
    }
}

/// The `[timing]` table of preset `name` (its calibrated NAND and controller figures; timing
/// stays off unless the experiment enables it), if it has one.
pub fn timing_table(name: &str) -> Result<Option<toml::Table>> {
    match preset_doc(name)?.remove("timing") {
        Some(toml::Value::Table(t)) => Ok(Some(t)),
        None => Ok(None),
        _ => bail!("preset {name}: [timing] must be a table"),
    }
}

/// Replace `device.preset` in `doc` by the preset's keys under the document's own. Returns
/// whether a preset was expanded.
pub fn expand(doc: &mut toml::Table) -> Result<bool> {
    let Some(toml::Value::Table(dev)) = doc.get_mut("device") else {
        return Ok(false);
    };
    let Some(p) = dev.remove("preset") else {
        return Ok(false);
    };
    let toml::Value::String(name) = p else {
        bail!("device.preset: expected a preset name string");
    };
    let mut base = device_table(&name)?;
    if dev.contains_key("over_provisioning") {
        base.remove("raw_capacity");
    }
    merge(&mut base, dev);
    *dev = base;
    // The preset's timing figures go under the experiment's own [timing] keys.
    if let Some(mut timing) = timing_table(&name)? {
        timing.remove("enabled");
        if let Some(toml::Value::Table(own)) = doc.get("timing") {
            merge(&mut timing, own);
        }
        doc.insert("timing".into(), toml::Value::Table(timing));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_a_valid_device() {
        for (name, _) in PRESETS {
            let t = device_table(name).unwrap();
            let spec: crate::schema::DeviceSpec = toml::Value::Table(t).try_into().unwrap();
            if spec.zoned_config(&[]).unwrap_or_else(|e| panic!("{name}: {e:#}")).is_some() {
                let cfg = spec.to_config(&[], 1).unwrap();
                assert!(cfg.logical_bytes > 1_000_000_000_000, "{name}");
                continue;
            }
            let cfg = spec.to_config(&[], 1).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert!(cfg.geometry().unwrap().erase_units >= 100, "{name}");
        }
    }

    #[test]
    fn experiment_keys_override_the_preset() {
        let mut doc: toml::Table = toml::from_str("[device]\npreset = \"client-tlc-2tb\"\ngc_policy = \"fifo\"\nover_provisioning = 0.5\n").unwrap();
        assert!(expand(&mut doc).unwrap());
        let dev = doc["device"].as_table().unwrap();
        assert_eq!(dev["gc_policy"].as_str(), Some("fifo"));
        assert!(dev.get("raw_capacity").is_none());
        assert!(dev.get("preset").is_none());
        let mut bad: toml::Table = toml::from_str("[device]\npreset = \"nope\"\n").unwrap();
        assert!(format!("{:#}", expand(&mut bad).unwrap_err()).contains("client-tlc-2tb"));
    }
}
