//! Typed sub-tables of `[[phase.kv]]` and `[[phase.files]]` (schema/kv.rs, files.rs, moved.rs):
//! a store's settings in the sub-table named as its store, the file system's in `fs`; flat keys
//! as before still read, with a note; another store's key refused; a sub-table a variant's
//! choice leaves without effect noted once; overrides by the old path land where the new one does.
use wafsim_experiment::load::variant_with;
use wafsim_experiment::parse_experiment;
use wafsim_experiment::schema::moved::struct_keys;
use wafsim_experiment::schema::{FsSpec, LsmSpec};

const DRIVE: &str = "seed = 1\n[device]\ncapacity = \"512MiB\"\nover_provisioning = 0.1\nerase_unit = \"1MiB\"\n[[namespace]]\nname = \"data\"\nsize = \"512MiB\"\n[[phase]]\nname = \"load\"\n";

fn lsm(entry: &str) -> String {
    format!("{DRIVE}[[phase.kv]]\nnamespace = \"data\"\nstore = \"lsm\"\nfill = 0.1\nphases = \"load\"\n{entry}")
}

fn check(_: &wafsim_experiment::schema::ExperimentSpec) -> anyhow::Result<()> {
    Ok(())
}

/// The keys of a sub-table are its struct's fields, as serde reads them (nothing listed by hand).
#[test]
fn a_sub_table_owns_the_fields_of_its_struct() {
    assert_eq!(struct_keys::<LsmSpec>(), ["compaction", "memtable", "staging_namespace", "staging_levels", "file_groups", "wait_for_compaction", "write_controller"]);
    let fs = struct_keys::<FsSpec>();
    assert!(fs.contains(&"mkfs_trim") && fs.contains(&"zone_placement") && fs.contains(&"page_cache") && fs.len() == 13, "{fs:?}");
}

/// Flat keys and the same keys in their sub-tables give the same experiment; the flat form is
/// noted with the new place of each key, the sub-table form is not.
#[test]
fn flat_keys_read_as_their_sub_tables_with_a_note() {
    let flat = parse_experiment(&lsm("compaction = \"leveled\"\nmemtable = \"8MiB\"\nmkfs_trim = false\n"), "flat.toml").unwrap();
    let nested = parse_experiment(&lsm("[phase.kv.lsm]\ncompaction = \"leveled\"\nmemtable = \"8MiB\"\n[phase.kv.fs]\nmkfs_trim = false\n"), "nested.toml").unwrap();
    let (f, n) = (&flat[0].spec, &nested[0].spec);
    assert_eq!(format!("{:?}", f.phase[0].kv), format!("{:?}", n.phase[0].kv));
    assert_eq!(n.phase[0].kv[0].lsm.memtable.as_ref().map(|m| m.get()), Some(8 << 20));
    assert_eq!(n.phase[0].kv[0].fs.mkfs_trim, Some(false));
    assert!(n.notes.is_empty(), "{:?}", n.notes);
    let notes = f.notes.join("\n");
    assert!(notes.contains("compaction, memtable belong in [phase.kv.lsm]"), "{notes}");
    assert!(notes.contains("mkfs_trim belongs in [phase.kv.fs]"), "{notes}");
}

/// A flat key of another store is refused, naming the stores it belongs to; a key given flat
/// and in its sub-table with another value is refused.
#[test]
fn another_stores_key_and_a_key_given_twice_are_refused() {
    let e = parse_experiment(&lsm("write_block = \"64KiB\"\n"), "t.toml").unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("write_block: a setting of store = \"log-structured\", not of store = \"lsm\""), "{msg}");
    let e = parse_experiment(&lsm("memtable = \"8MiB\"\n[phase.kv.lsm]\nmemtable = \"16MiB\"\n"), "t.toml").unwrap_err();
    assert!(format!("{e:#}").contains("memtable is given twice"), "{e:#}");
    // An unknown key is still an unknown key (serde's error), not a moved one.
    let e = parse_experiment(&lsm("[phase.kv.lsm]\nwrite_block = \"64KiB\"\n"), "t.toml").unwrap_err();
    assert!(format!("{e:#}").contains("unknown field `write_block`"), "{e:#}");
}

/// A variant that switches the store leaves the other store's sub-table without effect: one
/// note for the table, not one per key; the base variant has none.
#[test]
fn a_sub_table_the_choice_leaves_is_noted_once() {
    let doc = format!(
        "{}[phase.kv.lsm]\ncompaction = \"leveled\"\nmemtable = \"8MiB\"\n[[variant]]\nname = \"lsm\"\n[[variant]]\nname = \"wt\"\nphase = [{{ name = \"load\", kv = [{{ namespace = \"data\", store = \"wiredtiger\", fill = 0.1, phases = \"load\", lsm = {{ compaction = \"leveled\", memtable = \"8MiB\" }} }}] }}]\n",
        lsm("")
    );
    let vs = parse_experiment(&doc, "t.toml").unwrap();
    assert!(vs[0].spec.notes.is_empty(), "{:?}", vs[0].spec.notes);
    let inert: Vec<&String> = vs[1].spec.notes.iter().filter(|n| n.contains("no effect")).collect();
    assert_eq!(inert.len(), 1, "{:?}", vs[1].spec.notes);
    assert!(inert[0].contains("[phase.kv.lsm] has no effect with store = \"wiredtiger\""), "{}", inert[0]);
}

/// An override by the old flat path (a sweep point, an unknown's case) sets the key in its
/// sub-table, as the new path does, with a note.
#[test]
fn an_override_by_the_old_path_lands_in_the_sub_table() {
    let vs = parse_experiment(&lsm("[phase.kv.lsm]\ncompaction = \"size-tiered\"\n"), "t.toml").unwrap();
    let set_old: toml::Table = toml::from_str("\"phase.0.kv.0.compaction\" = \"leveled\"").unwrap();
    let set_new: toml::Table = toml::from_str("\"phase.0.kv.0.lsm.compaction\" = \"leveled\"").unwrap();
    let old = variant_with(&vs[0], &set_old, &check).unwrap();
    let new = variant_with(&vs[0], &set_new, &check).unwrap();
    assert_eq!(format!("{:?}", old.spec.phase[0].kv), format!("{:?}", new.spec.phase[0].kv));
    assert_eq!(new.spec.phase[0].kv[0].lsm.compaction.map(|c| c.word()), Some("leveled"));
    assert!(old.spec.notes.iter().any(|n| n.contains("phase.0.kv.0.lsm.compaction")), "{:?}", old.spec.notes);
    assert!(new.spec.notes.is_empty(), "{:?}", new.spec.notes);
}

/// `[host]`: the layer's settings in `[host.dm-zoned]` or `[host.tiering]`; flat ones still read
/// with a note; another layer's settings noted as without effect, except under `layer = "none"`
/// (a variant without the layer); `host.disks` as an override lands in `[host.dm-zoned]`.
#[test]
fn host_layer_settings_live_in_the_layers_sub_table() {
    let smr = "seed = 1\nprecondition = false\n[device]\npreset = \"smr-hm-14tb\"\n[[namespace]]\nname = \"target\"\n[[phase]]\nname = \"w\"\n[[phase.fio]]\nnamespace = \"target\"\nargs = \"--name=w --rw=write --bs=1m --size=1m\"\n";
    let flat = parse_experiment(&format!("{smr}[host]\nlayer = \"dm-zoned\"\ndisks = 3\ncache_size = \"none\"\n"), "t.toml").unwrap();
    let nested = parse_experiment(&format!("{smr}[host]\nlayer = \"dm-zoned\"\n[host.dm-zoned]\ndisks = 3\ncache_size = \"none\"\n"), "t.toml").unwrap();
    let (f, n) = (flat[0].spec.host.as_ref().unwrap(), nested[0].spec.host.as_ref().unwrap());
    assert_eq!((f.dm_zoned.disks, f.dm_zoned.cache_size.clone()), (3, Some(wafsim_experiment::schema::BytesOrNone::None)));
    assert_eq!(format!("{f:?}"), format!("{n:?}"));
    assert!(nested[0].spec.notes.is_empty(), "{:?}", nested[0].spec.notes);
    assert!(flat[0].spec.notes.iter().any(|x| x.contains("cache_size, disks belong in [host.dm-zoned]")), "{:?}", flat[0].spec.notes);
    let other = parse_experiment(&format!("{smr}[host]\nlayer = \"dm-zoned\"\n[host.tiering]\nhot = \"enterprise-tlc-1.92tb\"\n[[variant]]\nname = \"dmz\"\n[[variant]]\nname = \"none\"\nhost = {{ layer = \"none\" }}\n"), "t.toml").unwrap();
    assert_eq!(other[0].spec.notes, vec!["[host.tiering] has no effect with host.layer = \"dm-zoned\"".to_string()]);
    assert!(other[1].spec.notes.is_empty(), "{:?}", other[1].spec.notes);
    let set: toml::Table = toml::from_str("\"host.disks\" = 5").unwrap();
    let v = variant_with(&nested[0], &set, &check).unwrap();
    assert_eq!(v.spec.host.as_ref().unwrap().dm_zoned.disks, 5);
    assert!(v.spec.notes.iter().any(|x| x.contains("host.dm-zoned.disks")), "{:?}", v.spec.notes);
}

/// Keys of two sub-tables that interleave (chunk and discard of `fs` around compaction of
/// `lsm`) give one note per sub-table, each naming all its keys.
#[test]
fn interleaved_flat_keys_give_one_note_per_sub_table() {
    let v = parse_experiment(&lsm("chunk = \"4MiB\"\ncompaction = \"leveled\"\ndiscard = true\n"), "t.toml").unwrap();
    let notes = &v[0].spec.notes;
    assert_eq!(notes.iter().filter(|n| n.contains("[phase.kv.fs]")).count(), 1, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("chunk, discard belong in [phase.kv.fs]")), "{notes:?}");
    assert_eq!(notes.iter().filter(|n| n.contains("[phase.kv.lsm]")).count(), 1, "{notes:?}");
}
