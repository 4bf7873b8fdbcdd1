//! TRIM as the real stacks send it: mkfs trims the whole namespace (on by default, as
//! mkfs.ext4/xfs/btrfs), separately from the mount's online discard (off by default, as ext4, XFS
//! and Btrfs before Linux 6.2), and a drive history that mkfs erases says so.
use wafsim_experiment::{parse_experiment, run_variant, RunOptions, VariantResult};

const MIB: u64 = 1 << 20;

/// A 256 MiB namespace; the file system writes 64 MiB of 8 MiB files and keeps 4 live, so 4
/// files (32 MiB) are deleted along the way.
fn files(fs_keys: &str, history: &str) -> String {
    format!(
        "{history}[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.12\nerase_unit = \"1MiB\"\n[[namespace]]\nname = \"ns1\"\nsize = \"256MiB\"\n\
         [[phase]]\nname = \"files\"\n[[phase.files]]\nnamespace = \"ns1\"\nfilesystem = \"conventional\"\namount = \"64MiB\"\n{fs_keys}\
         [[phase.files.group]]\nname = \"g\"\nfile_size = \"8MiB\"\nlive_files = 4\n"
    )
}

fn run(doc: &str) -> anyhow::Result<VariantResult> {
    let v = parse_experiment(doc, "t.toml")?.remove(0);
    run_variant(&v, RunOptions::default(), &|_| {})
}

fn trimmed(r: &VariantResult) -> u64 {
    r.jobs.iter().map(|j| j.stats.trim_bytes).sum()
}

/// mkfs trim and online discard each send exactly their own trims: the whole namespace once
/// (256 MiB), and each deleted file's extents (4 x 8 MiB).
#[test]
fn mkfs_trim_and_online_discard_are_separate() {
    let cases = [
        ("", 256 * MIB),                                    // defaults: mkfs trim, no discard
        ("discard = true\n", 256 * MIB + 32 * MIB),         // both
        ("mkfs_trim = false\n", 0),                         // neither
        ("mkfs_trim = false\ndiscard = true\n", 32 * MIB),  // online discard only
    ];
    for (keys, want) in cases {
        let r = run(&files(keys, "")).unwrap();
        assert_eq!(trimmed(&r), want, "{keys:?}");
        assert_eq!(r.hbmw(), 64 * MIB, "{keys:?}: the file system writes what the files hold");
    }
}

/// The default history (a sequential fill) survives mkfs only with `mkfs_trim = false`: with it,
/// the drive still holds the fill, and the files' writes overwrite it in place; without it, the
/// drive is empty but for the files. The history line says which.
#[test]
fn mkfs_trim_erases_the_history_and_says_so() {
    let trimmed_run = run(&files("", "")).unwrap();
    assert!(trimmed_run.history.starts_with("sequential fill; mkfs trims namespace ns1 in phase \"files\""), "{}", trimmed_run.history);
    let kept = run(&files("mkfs_trim = false\n", "")).unwrap();
    assert_eq!(kept.history, "sequential fill");
    let fresh = run(&files("", "[history]\nkind = \"fresh\"\n")).unwrap();
    assert_eq!(fresh.history, "fresh (every LBA unmapped)", "nothing to erase on a fresh drive");
    // On a trimmed drive 64 MiB of writes fit in free erase units: nothing to collect.
    assert_eq!(trimmed_run.counters.gc_units, 0);
    assert_eq!(trimmed_run.waf(), 1.0);
}

/// Settings where they mean nothing are refused: mkfs_trim = false on a zoned file system (it
/// resets its zones), mkfs_trim or discard on a store that writes its namespace raw (given flat;
/// in `[phase.kv.fs]` they are noted as without effect).
#[test]
fn trim_settings_where_they_mean_nothing_are_refused() {
    let zoned = "[device]\nkind = \"zns\"\n[device.zones]\nzones = 16\nzone_size = \"16MiB\"\nzone_capacity = \"12MiB\"\nerase_units_per_zone = 3\nmax_open = 8\n\
         [[namespace]]\nname = \"ns1\"\n[[phase]]\nname = \"files\"\n[[phase.files]]\nnamespace = \"ns1\"\nfilesystem = \"zoned\"\namount = \"64MiB\"\nmkfs_trim = false\n\
         [[phase.files.group]]\nname = \"g\"\nfile_size = \"8MiB\"\nlive_files = 4\n";
    let e = format!("{:#}", run(zoned).unwrap_err());
    assert!(e.contains("mkfs_trim = false") && e.contains("resets every zone"), "{e}");
    for key in ["mkfs_trim = true", "discard = true"] {
        let kv = format!("[device]\ncapacity = \"256MiB\"\nerase_unit = \"1MiB\"\nover_provisioning = 0.12\n[[namespace]]\nname = \"ns1\"\nsize = \"256MiB\"\n[[phase]]\nname = \"kv\"\n[[phase.kv]]\nnamespace = \"ns1\"\nstore = \"log-structured\"\n{key}\n");
        let e = format!("{:#}", parse_experiment(&kv, "t.toml").and_then(|mut v| run_variant(&v.remove(0), RunOptions::default(), &|_| {})).unwrap_err());
        let field = key.split(' ').next().unwrap();
        assert!(e.contains(&format!("{field}: a setting of store = \"lsm\"")), "{e}");
        // In the file system's sub-table (where a variant that switched stores leaves it), the
        // setting is noted as without effect.
        let kv = kv.replace(&format!("{key}\n"), &format!("[phase.kv.fs]\n{key}\n"));
        let notes = parse_experiment(&kv, "t.toml").unwrap().remove(0).spec.notes;
        assert!(notes.iter().any(|n| n.contains("[phase.kv.fs] has no effect with store = \"log-structured\"")), "{notes:?}");
    }
}
