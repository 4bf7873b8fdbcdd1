//! `wafsim sweep` end to end: the example sweep runs, writes CSV and JSON, resumes, and its
//! errors name the point and key.
use std::process::Command;

fn wafsim(args: &[&str]) -> (bool, String, String) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new(env!("CARGO_BIN_EXE_wafsim")).args(args).current_dir(root).output().expect("run wafsim");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wafsim-sweep-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn the_example_sweep_writes_csv_and_json_and_resumes() {
    let csv = tmp("op.csv");
    let (ok, out, err) = wafsim(&["sweep", "experiments/sweeps/op.toml", "--out", csv.to_str().unwrap(), "--jobs", "2"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("point  device.over_provisioning  variant") && out.lines().count() == 6, "{out}");
    assert!(err.contains("sweep: 5 points (5 run, 0 kept"), "{err}");
    assert!(!err.contains('\x1b') && !err.contains("ETA"), "no progress bar on a pipe: {err:?}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "point,device.over_provisioning,variant,waf,hbmw,mbmw,mbe,gc_bytes,waf[ns1],hash");
    let wafs: Vec<f64> = lines[1..].iter().map(|l| l.split(',').nth(3).unwrap().parse().unwrap()).collect();
    assert!(wafs.windows(2).all(|w| w[0] > w[1]), "{wafs:?}");
    // OP 7% and 28% near the closed form for greedy (docs/validation.md: 7.7 and 2.47 at Np 256).
    assert!((7.0..9.0).contains(&wafs[1]) && (2.2..2.8).contains(&wafs[3]), "{wafs:?}");

    // Resume: drop the last row, run again; one point runs, the file comes back the same.
    std::fs::write(&csv, lines[..5].join("\n") + "\n").unwrap();
    let (ok, _, err) = wafsim(&["sweep", "experiments/sweeps/op.toml", "--out", csv.to_str().unwrap()]);
    assert!(ok && err.contains("sweep: 5 points (1 run, 4 kept"), "{err}");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);

    // JSON: an array of objects with the same columns; numbers as numbers.
    let json = tmp("op.json");
    let (ok, _, err) = wafsim(&["sweep", "experiments/sweeps/op.toml", "--out", json.to_str().unwrap(), "--jobs", "1"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[1]["device.over_provisioning"], 0.07);
    assert_eq!(rows[1]["variant"], "default");
    assert_eq!(rows[1]["waf"].as_f64().unwrap(), wafs[1], "same numbers with --jobs 1 and 2");
    assert!(rows[1]["waf[ns1]"].is_number() && rows[1]["hash"].is_string());
}

#[test]
fn sweep_errors_name_the_point_and_key() {
    let sweep = tmp("bad.toml");
    let base = std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/sweeps/random-writes.toml")).unwrap();
    std::fs::write(&sweep, format!("base = {:?}\n[axes]\n\"device.over_provisioning\" = [0.07, -0.5]\n", base.display().to_string())).unwrap();
    let (ok, _, err) = wafsim(&["sweep", sweep.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("wafsim: error: point 2 (device.over_provisioning = -0.5): "), "{err}");
    let (ok, _, err) = wafsim(&["sweep", "experiments/sweeps/op.toml", "--out", "x.xlsx"]);
    assert!(!ok && err.contains("expected a .csv, .json or .parquet file"), "{err}");
}

#[test]
fn the_example_sweep_writes_parquet() {
    let pq = tmp("op.parquet");
    let _ = std::fs::remove_file(&pq);
    let (ok, _, err) = wafsim(&["sweep", "experiments/sweeps/op.toml", "--out", pq.to_str().unwrap(), "--jobs", "2"]);
    assert!(ok, "{err}");
    let bytes = std::fs::read(&pq).unwrap();
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    let reader = parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    use parquet::file::reader::FileReader;
    assert_eq!(reader.metadata().file_metadata().num_rows(), 5, "5 points x 1 variant x 1 namespace");
    // A second run finds every point in the file.
    let (ok, _, err) = wafsim(&["sweep", "experiments/sweeps/op.toml", "--out", pq.to_str().unwrap()]);
    assert!(ok && err.contains("sweep: 5 points (0 run, 5 kept"), "{err}");
    assert_eq!(std::fs::read(&pq).unwrap(), bytes);
}
