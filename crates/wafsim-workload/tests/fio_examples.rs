//! Every job file Debian's fio ships (/usr/share/doc/fio/examples) parses, or fails with a
//! located error; no job panics while generating I/O. Skipped where fio's examples are not
//! installed.

use std::path::{Path, PathBuf};

use wafsim_workload::fio::{parse_job_file, FioError};

const EXAMPLES: &str = "/usr/share/doc/fio/examples";

fn examples() -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(EXAMPLES) else { return Vec::new() };
    let mut paths: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "fio")).collect();
    paths.sort();
    paths
}

/// `path:line: ...` with a real line number (0 only for whole-file problems).
fn located(e: &FioError, path: &Path) -> bool {
    let s = e.to_string();
    let Some(rest) = s.strip_prefix(&format!("{}:", path.display())) else { return false };
    rest.split(':').next().is_some_and(|n| n.parse::<usize>().is_ok())
}

#[test]
fn shipped_examples_parse_or_fail_with_a_location() {
    let ns = 1u64 << 30;
    for path in examples() {
        match parse_job_file(&path, &|_| None) {
            Ok(jf) => {
                assert!(jf.jobs().count() > 0, "{}", path.display());
                for job in jf.jobs() {
                    let _ = job.write_bytes_hint(ns);
                    match job.source(0, ns, 1) {
                        Ok(mut src) => {
                            let mut v = Vec::new();
                            src.fill(&mut v, 20_000).unwrap();
                            assert!(v.iter().all(|io| io.offset + io.len as u64 <= ns), "{}", path.display());
                        }
                        Err(e) => assert!(e.to_string().contains(&format!("job \"{}\"", job.name)), "{e}"),
                    }
                }
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(located(&e, &path) || msg.contains(".fio:"), "{msg}");
            }
        }
    }
}

/// The examples the fio-fidelity work targeted parse now, with the expected outcome.
#[test]
fn targeted_examples() {
    if examples().is_empty() {
        return;
    }
    let parse = |name: &str| parse_job_file(&Path::new(EXAMPLES).join(name), &|_| None);
    for ok in ["backwards-read.fio", "butterfly.fio", "rand-zones.fio", "jesd219.fio", "1mbs_clients.fio", "waitfor.fio"] {
        let jf = parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert!(!jf.warnings.iter().any(|w| w.message.contains("ratemin") || w.message.contains("nrfiles")), "{ok}: {:?}", jf.warnings);
    }
    let back = parse("backwards-read.fio").unwrap();
    assert_eq!(back.phases[0][0].rw_modifier, Some(-8192));
    for refused in ["cpuio.fio", "netio.fio", "null.fio", "filecreate-ioengine.fio", "exec.fio", "dev-dax.fio"] {
        let e = parse(refused).unwrap_err().to_string();
        assert!(e.contains("ioengine=") && e.contains("wafsim simulates a drive"), "{refused}: {e}");
    }
    let e = parse("http-s3.fio").unwrap_err().to_string();
    assert!(e.contains("S3_KEY"), "{e}");
}
