//! Quantities and choices given as text are parsed when the experiment is read (schema's
//! `parsed`), so a wrong value is refused with the file's line and column.
use wafsim_experiment::parse_experiment;

const DOC: &str = "[device]\ncapacity = \"256MiB\"\nover_provisioning = 0.1\nerase_unit = \"1MiB\"\ngc_policy = \"POLICY\"\n[[namespace]]\nname = \"ns1\"\nsize = \"256MiB\"\n[[workload]]\nnamespace = \"ns1\"\npattern = \"random\"\nbs = \"4KiB\"\namount = \"1x\"\n";

#[test]
fn a_wrong_gc_policy_is_refused_at_its_line() {
    let e = format!("{:#}", parse_experiment(&DOC.replace("POLICY", "lru"), "t.toml").unwrap_err());
    assert!(e.contains("line 5, column 13"), "{e}");
    assert!(e.contains("gc_policy \"lru\": expected \"greedy\", \"cost-benefit\", \"fifo\", \"d-choices:N\" or \"busiest-handle\""), "{e}");
    let e = format!("{:#}", parse_experiment(&DOC.replace("POLICY", "d-choices:0"), "t.toml").unwrap_err());
    assert!(e.contains("line 5") && e.contains("d-choices needs a count >= 1"), "{e}");
    for (text, want) in [("d-choices:4", wafsim_core::GcPolicy::DChoices(4)), ("fifo", wafsim_core::GcPolicy::Fifo)] {
        let v = parse_experiment(&DOC.replace("POLICY", text), "t.toml").unwrap();
        assert_eq!(v[0].spec.device.gc_policy, want);
        assert_eq!(v[0].spec.device_config().unwrap().gc_policy, want);
    }
    // Without the key, greedy.
    let v = parse_experiment(&DOC.replace("gc_policy = \"POLICY\"\n", ""), "t.toml").unwrap();
    assert_eq!(v[0].spec.device.gc_policy, wafsim_core::GcPolicy::Greedy);
}
