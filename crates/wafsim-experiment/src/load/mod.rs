//! From experiment text to variants: parse the document, deep-merge each `[[variant]]` over it,
//! expand device presets, deserialize into the schema. Checking a variant against the drives it
//! needs is the plan's job: the caller passes that check in.

use crate::schema::{merge, ExperimentSpec, Variant};
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;

pub mod presets;

/// Read an experiment file and resolve its variants (one variant named "default" if none),
/// each passed to `check` as soon as it is resolved.
pub fn load_variants(path: &Path, check: Check) -> Result<Vec<Variant>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut vs = parse_variants(&text, &path.display().to_string(), check)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    for v in &mut vs {
        v.spec.base_dir = dir.clone();
    }
    Ok(vs)
}

/// What a caller checks of each resolved variant (the plan's checks); errors name the variant.
pub type Check<'a> = &'a dyn Fn(&ExperimentSpec) -> Result<()>;

/// Like [`load_variants`] from a string; `origin` names the source in error messages.
pub fn parse_variants(text: &str, origin: &str, check: Check) -> Result<Vec<Variant>> {
    let mut base: toml::Table = toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?;
    // Variants merge over the document as written and expand presets afterwards, so a variant
    // may name another preset (even another kind of drive) without inheriting the base's.
    let raw = base.clone();
    // Validate the base document on its own first; parsed from the text (not the table) when
    // no preset is involved, so errors carry line numbers.
    let spec: ExperimentSpec = if presets::expand(&mut base).with_context(|| origin.to_string())? {
        toml::Value::Table(base.clone()).try_into().map_err(|e| anyhow!("{origin}: {e}"))?
    } else {
        toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?
    };
    if spec.variant.is_empty() {
        let mut spec = spec;
        spec.variant_name = "default".into();
        spec.single_writer = spec.single_fio_writer();
        let v = Variant { name: "default".into(), spec };
        check(&v.spec).with_context(|| format!("{origin}"))?;
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
        presets::expand(&mut doc).with_context(|| format!("{origin}: variant {name:?}"))?;
        let mut spec: ExperimentSpec = toml::Value::Table(doc)
            .try_into()
            .map_err(|e| anyhow!("{origin}: variant {name:?}: {e}"))?;
        spec.variant_name = name.clone();
        check(&spec).with_context(|| format!("{origin}: variant {name:?}"))?;
        out.push(Variant { name, spec });
    }
    Ok(out)
}
