//! `wafsim advise` end to end: the example finds the hot/cold split and prints the ranking and
//! both baselines; --json carries the same; errors name the file.
use std::process::Command;

fn wafsim(args: &[&str]) -> (bool, String, String) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new(env!("CARGO_BIN_EXE_wafsim")).args(args).current_dir(root).output().expect("run wafsim");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn the_example_separates_hot_from_cold() {
    let (ok, out, err) = wafsim(&["advise", "experiments/advise/hot-cold.toml", "--handles", "2", "--op", "0.07,0.28", "--jobs", "2"]);
    assert!(ok, "{err}");
    assert!(out.contains("search: exhaustive, 8 candidates; 9 simulations"), "{out}");
    let first = out.lines().find(|l| l.trim_start().starts_with("1  ")).unwrap_or_default();
    assert!(first.contains("{hot1,hot2}{cold1,cold2}"), "{out}");
    assert!(out.contains("best: {hot1,hot2}{cold1,cold2}"), "{out}");
    assert!(out.contains("vs no placement     {hot1,hot2,cold1,cold2}") && out.contains("vs one per stream   {hot1}{hot2}{cold1}{cold2}"), "{out}");
    // --op: the baselines and the seven other assignments (8 x 2 fits the exhaustive limit: all
    // of them; no placement is one of the eight and is not repeated).
    assert!(out.contains("WAF by over-provisioning") && out.contains("OP 0.07") && out.contains("OP 0.28"), "{out}");
    let op_lines = out.lines().skip_while(|l| !l.starts_with("WAF by over-provisioning")).skip(2).count();
    assert_eq!(op_lines, 9, "{out}");

    let (ok, json, err) = wafsim(&["advise", "experiments/advise/hot-cold.toml", "--handles", "2", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["ranking"][0]["label"], "{hot1,hot2}{cold1,cold2}");
    assert_eq!(v["search"]["kind"], "exhaustive");
    assert_eq!(v["ranking"].as_array().unwrap().len(), 8);
    assert!(v["ranking"][0]["waf"].as_f64().unwrap() < v["no_placement"]["waf"].as_f64().unwrap());
}

#[test]
fn errors_name_the_file() {
    let (ok, _, err) = wafsim(&["advise", "experiments/sweeps/random-writes.toml", "--handles", "2"]);
    assert!(!ok && err.contains("experiments/sweeps/random-writes.toml") && err.contains("needs an FDP drive"), "{err}");
    let (ok, _, err) = wafsim(&["advise", "experiments/advise/hot-cold.toml", "--handles", "5"]);
    assert!(!ok && err.contains("hot-cold.toml") && err.contains("--handles 5: the drive has 4"), "{err}");
    let (ok, _, err) = wafsim(&["advise", "experiments/quickstart.toml", "--handles", "2", "--variant", "no-fdp"]);
    assert!(!ok && err.contains("quickstart.toml (variant \"no-fdp\")") && err.contains("needs an FDP drive"), "{err}");
}

/// The application models' streams: the advisor runs the four Aerospike stores as `wafsim run`
/// does (its no-placement and one-handle-per-store baselines are the run's shared variants,
/// exactly), and with two handles it finds a split better than none.
#[test]
fn the_advisor_places_the_aerospike_stores() {
    let exp = "experiments/kv/four-aerospike.toml";
    let (ok, json, err) = wafsim(&["advise", exp, "--handles", "2", "--scale", "0.0001", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let run_waf = |variant: &str| {
        let (ok, out, err) = wafsim(&["run", exp, "--variant", variant, "--scale", "0.0001", "--json"]);
        assert!(ok, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["variants"][0]["waf"].as_f64().unwrap()
    };
    let none = v["no_placement"]["waf"].as_f64().unwrap();
    let each = v["one_per_stream"]["waf"].as_f64().unwrap();
    assert!((none - run_waf("shared-no-fdp")).abs() < 1e-12, "{none}");
    assert!((each - run_waf("shared-fdp")).abs() < 1e-12, "{each}");
    let best = v["ranking"][0]["waf"].as_f64().unwrap();
    assert!(best < none - 0.1, "best {best} vs no placement {none}");
    assert_eq!(v["streams"].as_array().unwrap().len(), 4);
}

/// A flash cache's two engines are two streams (placement handles 1 and 2 of its namespace):
/// with two reclaim unit handles the advisor puts them apart.
#[test]
fn the_advisor_separates_a_flash_caches_engines() {
    let exp = "crates/wafsim-cli/tests/data/small-flash-cache.toml";
    let (ok, json, err) = wafsim(&["advise", exp, "--handles", "2", "--scale", "0.00005", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let best = &v["ranking"][0];
    let a = best["assignment"].as_array().unwrap();
    // Streams are the namespace's handles 0..3; BigHash writes through 1, BlockCache through 2.
    assert_ne!(a[1], a[2], "the engines share a handle in the best assignment: {best}");
    // Written twice over, the shared drive has only begun to copy (about 1.02); apart, nothing.
    assert!(best["waf"].as_f64().unwrap() < v["no_placement"]["waf"].as_f64().unwrap(), "{json}");
}
