//! Overrides of an experiment document's keys by dotted path (`device.over_provisioning`,
//! `phase.0.kv.0.fs.mkfs_trim`): what sweep points and the cases of an unknown change.

pub use crate::schema::lookup;
use crate::schema::merge;
use anyhow::{anyhow, bail, Result};

/// Leaves of a table as (dotted path, value); tables nest, everything else is a leaf.
pub fn flatten(prefix: &str, t: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
    for (k, v) in t {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            toml::Value::Table(sub) if !sub.is_empty() => flatten(&key, sub, out),
            _ => out.push((key, v.clone())),
        }
    }
}

/// Set dotted `path` of `doc` to `value`: missing tables are created, a number segment
/// selects an existing entry of an array (of tables), and a table value deep-merges over a
/// table as variants do.
pub fn set_path(doc: &mut toml::Table, path: &str, value: &toml::Value) -> Result<()> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        bail!("empty segment in the key");
    }
    let mut cur: &mut toml::Value = &mut *doc.entry(segs[0].to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let mut at = segs[0].to_string();
    for seg in &segs[1..] {
        cur = match cur {
            toml::Value::Table(t) => t.entry(seg.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new())),
            toml::Value::Array(a) => {
                let n = a.len();
                let i: usize = seg.parse().map_err(|_| anyhow!("{at} is a list: expected an index (0..{n}), not {seg:?}"))?;
                a.get_mut(i).ok_or_else(|| anyhow!("{at} has {n} entries: no index {i}"))?
            }
            other => bail!("{at} is {} {other}, not a table", other.type_str()),
        };
        at = format!("{at}.{seg}");
    }
    match (cur, value) {
        (toml::Value::Table(b), toml::Value::Table(o)) => merge(b, o),
        (cur, v) => *cur = v.clone(),
    }
    Ok(())
}
