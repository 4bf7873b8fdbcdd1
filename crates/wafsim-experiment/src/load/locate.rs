//! Where in the experiment's text a key is, for the errors of a document that was deserialized
//! from a merged table (presets expanded, `[[variant]]` overrides merged, flat keys moved): toml
//! reports those by key path only (``in `phase.workload.bs` ``, without array indexes). The
//! path is looked up in the text as written, under the document and under `[[variant]]`.

use std::ops::Range;
use toml_edit::{ImDocument, Item, Table, Value};

/// A key of the text: its path without array indexes, the span of its key and of its value,
/// and its value when that is a string.
struct Entry {
    path: String,
    key: Option<Range<usize>>,
    value: Option<Range<usize>>,
    string: Option<String>,
}

/// The message of a toml error `e` of a document deserialized from a table made from `text`:
/// `origin:LINE:COL: PATH = "VALUE": WHAT` for a value refused (a quantity, a choice), else
/// `origin:LINE:COL: MESSAGE (in `PATH`)`; without the line and column where the key is not in
/// the text (it came from a preset), without the place where there is no `origin`, and as toml
/// says it where it names no key.
pub fn describe(origin: Option<&str>, text: Option<&str>, e: &toml::de::Error) -> String {
    let shown = e.to_string();
    let Some((message, path)) = shown.trim_end().rsplit_once("\nin `").and_then(|(m, p)| Some((m, p.strip_suffix('`')?))) else {
        return origin.map_or_else(|| shown.trim_end().to_string(), |o| format!("{o}: {}", shown.trim_end()));
    };
    let what = if message.starts_with('"') { format!("{path} = {message}") } else { format!("{message} (in `{path}`)") };
    let Some(origin) = origin else { return what };
    match text.and_then(|t| find(t, message, path).map(|offset| line_col(t, offset))) {
        Some((line, col)) => format!("{origin}:{line}:{col}: {what}"),
        None => format!("{origin}: {what}"),
    }
}

/// Byte offset in `text` of what `message` says about key `path`.
fn find(text: &str, message: &str, path: &str) -> Option<usize> {
    let doc = ImDocument::parse(text).ok()?;
    let mut entries = Vec::new();
    walk_table(doc.as_table(), "", &mut entries);
    // An unknown key is found by its own name under the table the error names.
    let unknown = message.strip_prefix("unknown field `").and_then(|r| r.split_once('`')).map(|(f, _)| format!("{path}.{f}"));
    let wanted = |p: &str| unknown.as_deref().map_or(p == path, |u| p == u);
    let quoted = |en: &&Entry| en.string.as_ref().is_some_and(|s| message.starts_with(&format!("{s:?}")));
    let mut candidates: Vec<&Entry> = entries.iter().filter(|en| wanted(&en.path) || en.path.strip_prefix("variant.").is_some_and(wanted)).collect();
    if candidates.is_empty() && unknown.is_none() {
        // A key written where it used to live (a flat key the loader moved into its
        // sub-table) is found by its name and the value the message quotes.
        let name = path.rsplit('.').next().unwrap_or(path);
        candidates = entries.iter().filter(|en| en.path.rsplit('.').next() == Some(name)).filter(quoted).collect();
    }
    // Several entries share a path across array entries: prefer the one whose value the
    // message quotes.
    let best = candidates.iter().find(|en| quoted(en)).or(candidates.first())?;
    let at = if unknown.is_some() { best.key.clone().or(best.value.clone()) } else { best.value.clone().or(best.key.clone()) }?;
    Some(at.start)
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.chars().rev().take_while(|&c| c != '\n').count() + 1;
    (line, col)
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk_table(t: &Table, prefix: &str, out: &mut Vec<Entry>) {
    for (k, item) in t.iter() {
        let key = t.get_key_value(k).and_then(|(key, _)| key.span());
        walk_item(item, &join(prefix, k), key, out);
    }
}

fn walk_item(item: &Item, path: &str, key: Option<Range<usize>>, out: &mut Vec<Entry>) {
    match item {
        Item::None => {}
        Item::Value(v) => walk_value(v, path, key, out),
        Item::Table(t) => {
            out.push(Entry { path: path.to_string(), key, value: t.span(), string: None });
            walk_table(t, path, out);
        }
        Item::ArrayOfTables(a) => {
            for t in a.iter() {
                out.push(Entry { path: path.to_string(), key: key.clone(), value: t.span(), string: None });
                walk_table(t, path, out);
            }
        }
    }
}

fn walk_value(v: &Value, path: &str, key: Option<Range<usize>>, out: &mut Vec<Entry>) {
    out.push(Entry { path: path.to_string(), key: key.clone(), value: v.span(), string: v.as_str().map(String::from) });
    match v {
        Value::InlineTable(t) => {
            for (k, item) in t.iter() {
                let key = t.get_key_value(k).and_then(|(key, _)| key.span());
                walk_value(item, &join(path, k), key, out);
            }
        }
        Value::Array(a) => {
            for x in a.iter() {
                walk_value(x, path, key.clone(), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> toml::de::Error {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct W {
            bs: crate::schema::Bytes,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct D {
            workload: Vec<W>,
        }
        let table: toml::Table = toml::from_str(text).unwrap();
        toml::Value::Table(table).try_into::<D>().unwrap_err()
    }

    #[test]
    fn a_bad_value_in_an_array_entry_is_found_by_what_it_says() {
        let text = "[[workload]]\nbs = \"4KiB\"\n[[workload]]\nbs = \"12QB\"\n";
        let e = describe(Some("x.toml"), Some(text), &error_of(text));
        assert!(e.starts_with("x.toml:4:6: workload.bs = \"12QB\": "), "{e}");
        let e = describe(Some("x.toml"), None, &error_of(text));
        assert!(e.starts_with("x.toml: workload.bs = \"12QB\": "), "{e}");
    }

    #[test]
    fn an_unknown_key_is_found_by_its_name() {
        let text = "[[workload]]\nbs = \"4KiB\"\n  sizze = 3\n";
        let e = describe(Some("x.toml"), Some(text), &error_of(text));
        assert!(e.starts_with("x.toml:3:3: unknown field `sizze`"), "{e}");
        assert!(e.ends_with("(in `workload`)"), "{e}");
    }
}
