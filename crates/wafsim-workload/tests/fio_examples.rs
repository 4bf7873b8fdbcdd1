//! Every job file Debian's fio ships parses or fails with a located error, never panics.

use std::path::Path;

use wafsim_workload::fio::parse_job_file;

#[test]
fn shipped_examples_never_panic() {
    let dir = Path::new("/usr/share/doc/fio/examples");
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "fio")).collect();
    paths.sort();
    for p in paths {
        match parse_job_file(&p, &|_| None) {
            Ok(jf) => {
                let mut s = format!("OK   {}: {} jobs", p.display(), jf.jobs().count());
                for j in jf.jobs() {
                    match j.source(0, 1 << 30, 1) {
                        Ok(_) => {}
                        Err(e) => s.push_str(&format!("\n       gen: {e}")),
                    }
                }
                for w in &jf.warnings { s.push_str(&format!("\n       {w}")); }
                println!("{s}");
            }
            Err(e) => println!("ERR  {e}"),
        }
    }
}
