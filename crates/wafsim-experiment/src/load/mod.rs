//! From experiment text to variants: parse the document, deep-merge each `[[variant]]` over it,
//! expand device presets, deserialize into the schema. Checking a variant against the drives it
//! needs is the plan's job: the caller passes that check in.

use crate::schema::{merge, ExperimentSpec, Variant};
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;

pub mod locate;
pub mod overrides;
pub mod presets;

/// Read an experiment file and resolve its variants (one variant named "default" if none),
/// each passed to `check` as soon as it is resolved.
pub fn load_variants(path: &Path, check: Check) -> Result<Vec<Variant>> {
    let text = wafsim_workload::input::read_text(path).map_err(|e| presets::unreadable(path, e))?;
    let mut vs = parse_variants(&text, &path.display().to_string(), check)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    for v in &mut vs {
        v.spec.base_dir = dir.clone();
    }
    Ok(vs)
}

/// The error of a text that is not TOML at all, with its line and column but without the line
/// itself (toml's message quotes it): the file may be any readable file, not an experiment, and
/// its content stays private. Errors of a TOML document that is not a valid experiment keep the
/// quoted line.
pub fn not_toml(origin: &str, text: &str, e: &toml::de::Error) -> anyhow::Error {
    match e.span() {
        Some(span) => {
            let (line, col) = locate::line_col(text, span.start);
            anyhow!("{origin}:{line}:{col}: not TOML: {} (the line is not shown)", e.message().trim_end())
        }
        None => anyhow!("{origin}: not TOML: {}", e.message().trim_end()),
    }
}

/// What a caller checks of each resolved variant (the plan's checks); errors name the variant.
pub type Check<'a> = &'a dyn Fn(&ExperimentSpec) -> Result<()>;

/// Like [`load_variants`] from a string; `origin` names the source in error messages.
pub fn parse_variants(text: &str, origin: &str, check: Check) -> Result<Vec<Variant>> {
    let mut base: toml::Table = toml::from_str(text).map_err(|e| not_toml(origin, text, &e))?;
    // A sweep file names a base experiment and axes: say which command runs it, not which
    // experiment keys it lacks.
    if base.contains_key("base") && !base.contains_key("device") {
        bail!("{origin}: this is a sweep file (a base experiment and the points to run it at), not an experiment: run it with `wafsim sweep {origin}`, or run its base experiment with `wafsim run`");
    }
    // Variants merge over the document as written and expand presets afterwards, so a variant
    // may name another preset (even another kind of drive) without inheriting the base's.
    let raw = base.clone();
    // Validate the base document on its own first. Flat keys that moved into sub-tables are
    // moved first; errors find the key they name in the text.
    let moved = crate::schema::moved::move_flat_keys(&mut base).with_context(|| origin.to_string())?;
    // A document without variants keeps this one (before presets are expanded), as a variant
    // keeps its moved document.
    let moved_doc = base.clone();
    presets::expand(&mut base).with_context(|| origin.to_string())?;
    let spec: ExperimentSpec = toml::Value::Table(base.clone()).try_into().map_err(|e| anyhow!(locate::describe(Some(origin), Some(text), &e)))?;
    let names: Vec<String> = if spec.variant.is_empty() {
        vec!["default".into()]
    } else {
        spec.variant.iter().filter_map(|v| v.get("name").and_then(|n| n.as_str()).map(String::from)).collect()
    };
    check_unknowns(&spec.unknown, &names).with_context(|| origin.to_string())?;
    if spec.variant.is_empty() {
        let mut spec = spec;
        spec.notes = spec.ignored_settings();
        spec.notes.extend(moved);
        spec.variant_name = "default".into();
        spec.single_writer = spec.single_fio_writer();
        let mut doc = moved_doc;
        doc.remove("variant");
        let v = Variant { name: "default".into(), spec, doc };
        check(&v.spec).with_context(|| origin.to_string())?;
        return Ok(vec![v]);
    }
    let mut out = Vec::new();
    for (i, over) in spec.variant.iter().enumerate() {
        let name = match over.get("name") {
            Some(toml::Value::String(s)) => s.clone(),
            _ => bail!("{origin}: [[variant]] #{} needs a name = \"...\"", i + 1),
        };
        if out.iter().any(|v: &Variant| v.name == name) {
            bail!("{origin}: two variants are named {name:?}");
        }
        let mut doc = raw.clone();
        doc.remove("variant");
        if over.get("device").and_then(|d| d.get("preset")).is_some() {
            if let Some(toml::Value::Table(dev)) = doc.get_mut("device") {
                dev.remove("preset");
            }
        }
        let mut over = over.clone();
        over.remove("name");
        merge(&mut doc, &over);
        let spec = resolve(&mut doc, &name, check, Vec::new(), Some((origin, text))).with_context(|| format!("{origin}: variant {name:?}"))?;
        out.push(Variant { name, spec, doc });
    }
    Ok(out)
}

/// A variant's document with its flat keys moved into their sub-tables (in place: the document
/// a variant keeps is the moved one), then with presets expanded, deserialized and checked.
/// `notes`: notes of the overrides that made it; `source`: the file's name and text, where
/// errors find the key they name.
fn resolve(doc: &mut toml::Table, name: &str, check: Check, mut notes: Vec<String>, source: Option<(&str, &str)>) -> Result<ExperimentSpec> {
    notes.extend(crate::schema::moved::move_flat_keys(doc)?);
    let mut doc = doc.clone();
    presets::expand(&mut doc)?;
    let mut spec: ExperimentSpec = toml::Value::Table(doc).try_into().map_err(|e| anyhow!(locate::describe(source.map(|s| s.0), source.map(|s| s.1), &e)))?;
    spec.variant_name = name.to_string();
    check(&spec)?;
    spec.notes = spec.ignored_settings();
    spec.notes.extend(notes);
    Ok(spec)
}

/// Variant `v` with the keys of `set` overridden (dotted paths into the variant's resolved
/// document, as sweep points give them: `history.kind`, `phase.0.kv.0.fs.mkfs_trim`), resolved and
/// checked again; the same base directory. Errors name the key.
pub fn variant_with(v: &Variant, set: &toml::Table, check: Check) -> Result<Variant> {
    let mut doc = v.doc.clone();
    let mut flat = Vec::new();
    overrides::flatten("", set, &mut flat);
    let mut notes = Vec::new();
    for (key, value) in &flat {
        let path = crate::schema::moved::override_path(&doc, key, &mut notes).with_context(|| key.clone())?;
        overrides::set_path(&mut doc, &path, value).with_context(|| key.clone())?;
    }
    let mut spec = resolve(&mut doc, &v.name, check, notes, None)?;
    spec.base_dir = v.spec.base_dir.clone();
    spec.single_writer = v.spec.single_writer;
    Ok(Variant { name: v.name.clone(), spec, doc })
}

/// Every unknown has cases, every case overrides something, and the variants a case names exist.
fn check_unknowns(unknowns: &[crate::schema::UnknownSpec], variants: &[String]) -> Result<()> {
    for u in unknowns {
        if u.case.is_empty() {
            bail!("unknown {:?}: no [[unknown.case]]: give the other values of its range", u.name);
        }
        for c in &u.case {
            if c.set.is_empty() {
                bail!("unknown {:?}, case {:?}: set = {{}} changes nothing", u.name, c.label);
            }
            for n in c.variants.iter().flatten() {
                if !variants.contains(n) {
                    bail!("unknown {:?}, case {:?}: no variant named {n:?} (variants: {})", u.name, c.label, variants.join(", "));
                }
            }
        }
    }
    Ok(())
}
