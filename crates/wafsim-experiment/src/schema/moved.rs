//! Keys that moved into sub-tables, and sub-tables a choice leaves without effect.
//!
//! Before the typed sub-tables every setting of a `[[phase.kv]]` store, every file-system option
//! and every setting of a `[host]` layer sat flat in its table. Such keys are still read: before a document is deserialized
//! each is moved into the sub-table of its owner (the entry's store, or `fs`), and a note names
//! the new place. Which keys a sub-table owns comes from its own struct (serde's list of its
//! fields, [`struct_keys`]), so no table of keys is kept here. The same rule moves the keys of
//! overrides given by dotted path (sweep points, the cases of an unknown).

use anyhow::{bail, Result};
use serde::de::{self, Deserialize, Visitor};

use super::{FilesSpec, FsSpec, HostLayer, HostSpec, KvSpec, KvStore};

/// The keys a struct deriving `Deserialize` reads: serde hands them to `deserialize_struct`,
/// which this deserializer records and then fails.
pub fn struct_keys<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut keys: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut keys));
    keys
}

struct Probe<'a>(&'a mut &'static [&'static str]);

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(self, _: &'static str, fields: &'static [&'static str], _: V) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("keys recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// Which entry a key is in: a store (`[[phase.kv]]`) or a file workload (`[[phase.files]]`).
#[derive(Clone, Copy)]
enum Entry {
    Kv(KvStore),
    Files,
}

impl Entry {
    fn of(kind: &str, entry: &toml::Table) -> Option<Entry> {
        match kind {
            // An unknown store word is left for deserialization to refuse.
            "kv" => entry.get("store").and_then(|s| s.as_str()).map_or(Some(KvStore::default()), |s| s.parse().ok()).map(Entry::Kv),
            "files" => Some(Entry::Files),
            _ => None,
        }
    }

    fn own_keys(self) -> &'static [&'static str] {
        match self {
            Entry::Kv(_) => struct_keys::<KvSpec>(),
            Entry::Files => struct_keys::<FilesSpec>(),
        }
    }

    /// The sub-table a flat `key` of this entry belongs in, or an error if it is another
    /// store's; None if it is no sub-table's (left for deserialization).
    fn owner(self, key: &str) -> Result<Option<&'static str>> {
        if self.own_keys().contains(&key) {
            return Ok(None);
        }
        let fs_key = struct_keys::<FsSpec>().contains(&key);
        match self {
            Entry::Files => Ok(fs_key.then_some("fs")),
            Entry::Kv(store) if store.keys().contains(&key) => Ok(Some(store.word())),
            Entry::Kv(store) if fs_key && store.reads_fs() => Ok(Some("fs")),
            Entry::Kv(store) => {
                let reads = |s: &KvStore| if fs_key { s.reads_fs() } else { s.keys().contains(&key) };
                let of: Vec<String> = KvStore::ALL.iter().filter(|s| reads(s)).map(|s| format!("store = \"{s}\"")).collect();
                if !of.is_empty() {
                    bail!("{key}: a setting of {}, not of store = \"{store}\"", of.join(" or "));
                }
                Ok(None)
            }
        }
    }
}

/// Move the flat keys of every `[[phase.kv]]` and `[[phase.files]]` entry of `doc` into their
/// sub-tables. Returns the notes: where moved keys belong now, and sub-tables the entry's
/// choice leaves without effect. Errors: a key of another store, or a key given both flat and
/// in its sub-table.
pub fn move_flat_keys(doc: &mut toml::Table) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    if let Some(toml::Value::Table(host)) = doc.get_mut("host") {
        move_host_keys(host, &mut notes)?;
    }
    let Some(toml::Value::Array(phases)) = doc.get_mut("phase") else { return Ok(notes) };
    for phase in phases.iter_mut() {
        let Some(phase) = phase.as_table_mut() else { continue };
        let name = phase.get("name").and_then(|n| n.as_str()).unwrap_or("").to_string();
        for kind in ["kv", "files"] {
            let Some(toml::Value::Array(entries)) = phase.get_mut(kind) else { continue };
            for (j, entry) in entries.iter_mut().enumerate() {
                let Some(entry) = entry.as_table_mut() else { continue };
                let Some(e) = Entry::of(kind, entry) else { continue };
                let at = format!("phase {name:?}, [[phase.{kind}]] #{}", j + 1);
                move_keys(entry, &format!("phase.{kind}"), &at, |key| e.owner(key).map_err(|err| anyhow::anyhow!("{at}: {err}")), &mut notes)?;
                notes.extend(inert(e, entry, &at));
            }
        }
    }
    Ok(notes)
}

/// Move every flat key of `table` (the table at `path`, named `at` in messages) that `owner`
/// places in a sub-table into it, with one note per sub-table. Errors: `owner`'s, or a key
/// given both flat and in its sub-table with another value.
fn move_keys(table: &mut toml::Table, path: &str, at: &str, owner: impl Fn(&str) -> Result<Option<&'static str>>, notes: &mut Vec<String>) -> Result<()> {
    let mut moved: Vec<(&str, String)> = Vec::new();
    for key in table.keys().cloned().collect::<Vec<_>>() {
        let Some(sub) = owner(&key)? else { continue };
        let value = table.remove(&key).expect("a key of the table");
        let into = match table.entry(sub).or_insert_with(|| toml::Value::Table(toml::Table::new())) {
            toml::Value::Table(t) => t,
            other => bail!("{at}: {sub} is {} {other}, expected a table", other.type_str()),
        };
        if into.get(&key).is_some_and(|v| *v != value) {
            bail!("{at}: {key} is given twice, flat and in [{path}.{sub}]: keep the one in [{path}.{sub}]");
        }
        into.insert(key.clone(), value);
        moved.push((sub, key));
    }
    // Sub-tables in the order their first key came (keys of two sub-tables may interleave).
    let mut subs: Vec<&str> = Vec::new();
    for (sub, _) in &moved {
        if !subs.contains(sub) {
            subs.push(sub);
        }
    }
    for sub in subs {
        let keys: Vec<&str> = moved.iter().filter(|(s, _)| *s == sub).map(|(_, k)| k.as_str()).collect();
        let (them, belong) = if keys.len() == 1 { ("it", "belongs") } else { ("them", "belong") };
        notes.push(format!("{at}: {} {belong} in [{path}.{sub}] now (read as before; move {them} there)", keys.join(", ")));
    }
    Ok(())
}

/// The layer `[host]` chooses (None: none given, or an unknown word, left for deserialization).
fn host_layer(host: &toml::Table) -> Option<HostLayer> {
    host.get("layer").and_then(|l| l.as_str()).and_then(|l| l.parse().ok())
}

/// The sub-table a flat key of `[host]` belongs in: its layer's, or (given to another layer) that
/// layer's, where it has no effect; None if it is no sub-table's.
fn host_owner(layer: HostLayer, key: &str) -> Option<&'static str> {
    if struct_keys::<HostSpec>().contains(&key) {
        return None;
    }
    std::iter::once(layer).chain(HostLayer::ALL.iter().copied()).find(|l| l.keys().contains(&key)).map(HostLayer::word)
}

/// `[host]`: flat keys into the layer sub-tables, and a note for a sub-table of another layer
/// than the one chosen (none for `layer = "none"`, which leaves every layer's settings).
fn move_host_keys(host: &mut toml::Table, notes: &mut Vec<String>) -> Result<()> {
    let Some(layer) = host_layer(host) else { return Ok(()) };
    move_keys(host, "host", "[host]", |key| Ok(host_owner(layer, key)), notes)?;
    if layer != HostLayer::None {
        for other in HostLayer::ALL.iter().filter(|l| **l != layer && host.contains_key(l.word())) {
            notes.push(format!("[host.{other}] has no effect with host.layer = \"{layer}\""));
        }
    }
    Ok(())
}

/// The sub-tables of `entry` its choice leaves without effect: another store's, or a file
/// system's under a store that has none.
fn inert(e: Entry, entry: &toml::Table, at: &str) -> Vec<String> {
    let Entry::Kv(store) = e else { return Vec::new() };
    let mut out = Vec::new();
    for other in KvStore::ALL.iter().filter(|s| **s != store) {
        if entry.contains_key(other.word()) {
            out.push(format!("{at}: [phase.kv.{other}] has no effect with store = \"{store}\""));
        }
    }
    if entry.contains_key("fs") && !store.reads_fs() {
        out.push(format!("{at}: [phase.kv.fs] has no effect with store = \"{store}\" (it is on no file system of its own)"));
    }
    out
}

/// A dotted override path (`phase.0.kv.1.mkfs_trim`, `host.disks`) with a flat key of a
/// `[[phase.kv]]` or `[[phase.files]]` entry or of `[host]` in `doc` turned into its
/// sub-table's (`phase.0.kv.1.fs.mkfs_trim`, `host.dm-zoned.disks`), with a note if it moved.
pub fn override_path(doc: &toml::Table, path: &str, notes: &mut Vec<String>) -> Result<String> {
    let mut segs: Vec<&str> = path.split('.').collect();
    // Where the key is among the segments, and the sub-table it belongs in.
    let (at, owner) = match segs.as_slice() {
        ["host", key, ..] => (1, doc.get("host").and_then(|h| h.as_table()).and_then(host_layer).and_then(|l| host_owner(l, key))),
        ["phase", p, kind @ ("kv" | "files"), j, key, ..] => {
            let entry = doc.get("phase").and_then(|v| super::lookup(v, &format!("{p}.{kind}.{j}"))).and_then(|e| e.as_table());
            let owner = match entry.and_then(|t| Entry::of(kind, t)) {
                Some(e) => e.owner(key)?,
                None => None,
            };
            (4, owner)
        }
        _ => (0, None),
    };
    let Some(sub) = owner else { return Ok(path.to_string()) };
    segs.insert(at, sub);
    let new = segs.join(".");
    notes.push(format!("override {path}: the key is {new} now (read as before; give the new one)"));
    Ok(new)
}
