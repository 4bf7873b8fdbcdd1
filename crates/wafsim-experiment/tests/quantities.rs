//! Quantities and choices given as text are parsed when the experiment is read (schema's
//! `parsed` and `quantity`), so a wrong value is refused with the file's line and column, in the
//! base document, in a variant and under a key written where it used to live.
use wafsim_experiment::parse_experiment;

const DOC: &str = "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.1\nerase_unit = \"1MiB\"\ngc_policy = \"POLICY\"\n[[namespace]]\nname = \"ns1\"\nsize = \"256MiB\"\n[[workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"1x\"\n";

#[test]
fn a_wrong_gc_policy_is_refused_at_its_line() {
    let e = format!("{:#}", parse_experiment(&DOC.replace("POLICY", "lru"), "t.toml").unwrap_err());
    assert!(e.starts_with("t.toml:5:13: "), "{e}");
    assert!(e.contains("gc_policy \"lru\": expected \"greedy\", \"cost-benefit\", \"fifo\", \"d-choices:N\" or \"busiest-handle\""), "{e}");
    let e = format!("{:#}", parse_experiment(&DOC.replace("POLICY", "d-choices:0"), "t.toml").unwrap_err());
    assert!(e.starts_with("t.toml:5:13: ") && e.contains("d-choices needs a count >= 1"), "{e}");
    for (text, want) in [("d-choices:4", wafsim_core::GcPolicy::DChoices(4)), ("fifo", wafsim_core::GcPolicy::Fifo)] {
        let v = parse_experiment(&DOC.replace("POLICY", text), "t.toml").unwrap();
        assert_eq!(v[0].spec.device.gc_policy, want);
        assert_eq!(v[0].spec.device_config().unwrap().gc_policy, want);
    }
    // Without the key, greedy.
    let v = parse_experiment(&DOC.replace("gc_policy = \"POLICY\"\n", ""), "t.toml").unwrap();
    assert_eq!(v[0].spec.device.gc_policy, wafsim_core::GcPolicy::Greedy);
}

/// Store choices in the sub-tables are words parsed at load: a wrong one is refused at its line;
/// every HSE media-class policy is read by its HSE name.
#[test]
fn store_choices_are_refused_at_their_line() {
    let cache = "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.1\nerase_unit = \"1MiB\"\n[[namespace]]\nname = \"c\"\nsize = \"256MiB\"\n[[phase]]\nname = \"p\"\n[[phase.kv]]\nnamespace = \"c\"\nstore = \"flash-cache\"\n[phase.kv.flash-cache]\nrequests = \"REQ\"\n";
    let e = format!("{:#}", parse_experiment(&cache.replace("REQ", "kvcache2"), "t.toml").unwrap_err());
    assert!(e.starts_with("t.toml:14:12: ") && e.contains("requests \"kvcache2\": expected \"kvcache\""), "{e}");
    let v = parse_experiment(&cache.replace("REQ", "flat-kvcache"), "t.toml").unwrap();
    assert_eq!(v[0].spec.phase[0].kv[0].flash_cache.requests, Some(wafsim_experiment::schema::CacheRequests::FlatKvcache));
    let hse = cache.replace("store = \"flash-cache\"\n[phase.kv.flash-cache]\nrequests = \"REQ\"", "store = \"hse\"\n[phase.kv.hse]\nmclass_policy = \"fastest\"");
    let e = format!("{:#}", parse_experiment(&hse, "t.toml").unwrap_err());
    assert!(e.starts_with("t.toml:14:") && e.contains("mclass_policy \"fastest\": expected \"capacity_only\""), "{e}");
    use wafsim_apps::MclassPolicy;
    for p in [MclassPolicy::CapacityOnly, MclassPolicy::StagingOnly, MclassPolicy::StagingMaxCapacity, MclassPolicy::StagingMinCapacity] {
        let v = parse_experiment(&hse.replace("fastest", p.name()), "t.toml").unwrap();
        assert_eq!(v[0].spec.phase[0].kv[0].hse.mclass_policy, Some(p), "{}", p.name());
    }
}

/// A quantity is refused at its value, wherever the merged document got it from; a good one
/// keeps its text for messages and its value for the plan.
#[test]
fn quantities_are_refused_at_their_value_in_the_base_a_variant_or_a_moved_key() {
    let doc = DOC.replace("POLICY", "greedy");
    let e = format!("{:#}", parse_experiment(&doc.replace("erase_unit = \"1MiB\"", "erase_unit = \"1MB ish\""), "t.toml").unwrap_err());
    assert!(e.starts_with("t.toml:4:14: device.erase_unit = \"1MB ish\": "), "{e}");
    // The same key in the second of two variants: the variant's line.
    let variants = format!("{doc}[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\ndevice.erase_unit = \"2QB\"\n");
    let e = format!("{:#}", parse_experiment(&variants, "t.toml").unwrap_err());
    assert!(e.contains("variant \"b\"") && e.contains("t.toml:18:21: device.erase_unit = \"2QB\": unknown unit suffix"), "{e}");
    // A multiple must be above zero; a duration and a rate are read with their units.
    let e = format!("{:#}", parse_experiment(&doc.replace("amount = \"1x\"", "amount = \"0x\""), "t.toml").unwrap_err());
    assert!(e.starts_with("t.toml:13:10: workload.amount = \"0x\": a multiple must be > 0"), "{e}");
    // A flat key of a store (moved into its sub-table before the document is read) is found
    // where the file has it.
    let wt = "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.1\nerase_unit = \"1MiB\"\n[[namespace]]\nname = \"w\"\n[[phase]]\nname = \"p\"\n[[phase.kv]]\nnamespace = \"w\"\nstore = \"wiredtiger\"\nwt_cache = \"lots\"\n";
    let e = format!("{:#}", parse_experiment(wt, "t.toml").unwrap_err());
    assert!(e.starts_with("t.toml:12:12: phase.kv.wiredtiger.wt_cache = \"lots\": "), "{e}");
    let v = parse_experiment(&doc.replace("bs = \"4KiB\"", "bs = \"4 KiB\""), "t.toml").unwrap();
    let bs = &v[0].spec.workload[0].bs;
    assert_eq!((bs.get(), bs.text()), (4096, "4 KiB"));
}
