//! A regression corpus nobody here wrote: every job file of Debian's `fio-examples` package
//! (fio's own examples/) runs against a standard experiment, timed where the job is time
//! based. Each must run, or be refused with file:line and a reason; no panic, no hang.
//!
//! The files come from `/usr/share/doc/fio/examples` (`apt-get install fio-examples`; `.ci/run`
//! installs it) or `$WAFSIM_FIO_EXAMPLES`. Without them the test says so and passes, unless
//! `WAFSIM_REQUIRE_FIO_CORPUS=1` (CI sets it). `WAFSIM_CORPUS_DOC=docs/fio-corpus.md` also
//! writes the table of outcomes:
//!
//! ```sh
//! WAFSIM_CORPUS_DOC=$PWD/docs/fio-corpus.md cargo test --release -p wafsim-cli --test fio_corpus
//! ```
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a single job file may run (the slowest takes a few seconds in a release build).
const TIME_BOUND: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Runs,
    Warns(usize),
    Refused(String),
}

fn examples_dir() -> Option<PathBuf> {
    let d = std::env::var_os("WAFSIM_FIO_EXAMPLES").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/share/doc/fio/examples"));
    d.is_dir().then_some(d)
}

/// Is the job time based (an uncommented `time_based` line)?
fn time_based(text: &str) -> bool {
    text.lines().map(str::trim).any(|l| !l.starts_with(['#', ';']) && (l == "time_based" || l.starts_with("time_based=")))
}

/// `${NAME}`s the examples' headers ask the user to set, with values a user would give.
const ENV: &str = "env = { CONT = \"cont\", FIO_BS = \"4k\", FIO_DIR = \"/tmp/fio\", FIO_IODEPTH = \"16\", FIO_RW = \"write\", \
    GPU_DEV_IDS = \"0\", POOL = \"pool\", SSE_KEY = \"key\", STORAGE_CLASS = \"STANDARD\", SWIFT_id = \"id\", S3_KEY = \"key\", \
    S3_KEY_ID = \"id\", S3_ID = \"id\", unixsocket = \"/tmp/nbd.sock\", uri = \"nbd://localhost\" }";

/// The standard experiment: one namespace over the whole 7.68 TB preset drive (default scale).
/// Job files for zoned block devices (`zonemode=zbd`) run on the zoned preset they were written
/// for: NVMe (io_uring passthrough, xNVMe) on the ZNS preset, the rest (libzbc, SMR disks) on the
/// host-managed SMR preset; untimed (the corpus checks that jobs parse and keep the zone rules;
/// the zoned timing models have tests of their own). A
/// zoned drive starts with empty zones, so a zbd sequential write fills them first (read jobs
/// read only below write pointers).
fn experiment(job: &Path, text: &str, timed: bool) -> String {
    if text.contains("zonemode=zbd") {
        let nvme = ["uring_cmd", "xnvme", "/dev/ng"].iter().any(|k| text.contains(k));
        let preset = if nvme { "zns-zn540" } else { "smr-hm-14tb" };
        return format!(
            "name = \"fio corpus\"\nprecondition = false\n[device]\npreset = \"{preset}\"\n[[namespace]]\nname = \"ns1\"\n\
             [[phase]]\nname = \"fill\"\nmeasure = false\n[[phase.fio]]\nnamespaces = [\"ns1\"]\n\
             args = \"--name=fill --rw=write --bs=1m --zonemode=zbd --direct=1 --size=100%\"\n\
             [[phase]]\nname = \"run\"\n[[phase.fio]]\nfile = {:?}\nnamespace = \"ns1\"\n{ENV}\n",
            job.display().to_string()
        );
    }
    format!(
        "name = \"fio corpus\"\nprecondition = false\n[device]\npreset = \"enterprise-tlc-7.68tb\"\n[device.fdp]\nenabled = true\n\
         [[namespace]]\nname = \"ns1\"\nsize = \"7.68TB\"\n[timing]\nenabled = {timed}\n\
         [[phase]]\nname = \"run\"\n[[phase.fio]]\nfile = {:?}\nnamespace = \"ns1\"\n{ENV}\n",
        job.display().to_string()
    )
}

/// Run one job file; Err if it panicked, hung or was refused without a location and reason.
fn run_one(bin: &Path, job: &Path, work: &Path) -> Result<Outcome, String> {
    let name = job.file_stem().unwrap().to_string_lossy().to_string();
    let text = std::fs::read_to_string(job).map_err(|e| format!("{name}: {e}"))?;
    let exp = work.join(format!("{name}.toml"));
    std::fs::write(&exp, experiment(job, &text, time_based(&text))).unwrap();
    let mut child = Command::new(bin)
        .args(["run", exp.to_str().unwrap()])
        .current_dir(work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{name}: cannot start wafsim: {e}"))?;
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > TIME_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{name}: still running after {} s (hang?)", TIME_BOUND.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = reader.join().unwrap();
    match status.code() {
        Some(0) => {
            let warnings = err.lines().filter(|l| l.contains("warning")).count();
            Ok(if warnings == 0 { Outcome::Runs } else { Outcome::Warns(warnings) })
        }
        Some(1) => {
            let msg = err.lines().find(|l| l.contains("error")).unwrap_or("").to_string();
            // A refusal names the job file and line, then says why.
            let file = job.display().to_string();
            let located = msg.find(&format!("{file}:")).and_then(|i| {
                let rest = &msg[i + file.len() + 1..];
                let digits = rest.chars().take_while(char::is_ascii_digit).count();
                (digits > 0 && rest[digits..].starts_with(": ") && rest[digits + 2..].trim().len() > 10).then_some(())
            });
            match located {
                Some(()) => Ok(Outcome::Refused(msg[msg.find(&file).unwrap() + file.len() + 1..].to_string())),
                None => Err(format!("{name}: refused without file:line and a reason: {msg}")),
            }
        }
        other => Err(format!("{name}: exit {other:?} (panic or signal): {}", err.lines().take(3).collect::<Vec<_>>().join(" | "))),
    }
}

#[test]
fn every_fio_example_runs_or_is_refused_with_a_reason() {
    let Some(dir) = examples_dir() else {
        if std::env::var("WAFSIM_REQUIRE_FIO_CORPUS").is_ok_and(|v| v == "1") {
            panic!("WAFSIM_REQUIRE_FIO_CORPUS=1 but no fio examples: apt-get install fio-examples or set WAFSIM_FIO_EXAMPLES");
        }
        eprintln!("SKIPPED: no fio examples at /usr/share/doc/fio/examples (apt-get install fio-examples) and WAFSIM_FIO_EXAMPLES unset");
        return;
    };
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_wafsim"));
    let work = std::env::temp_dir().join(format!("wafsim-fio-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let mut jobs: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "fio")).collect();
    jobs.sort();
    assert!(jobs.len() >= 80, "expected fio's ~86 example job files in {}, found {}", dir.display(), jobs.len());

    // Two at a time (CI has two cores).
    let results: Vec<(PathBuf, Result<Outcome, String>)> = std::thread::scope(|s| {
        let chunks: Vec<Vec<PathBuf>> = (0..2).map(|k| jobs.iter().skip(k).step_by(2).cloned().collect()).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let (bin, work) = (&bin, &work);
                s.spawn(move || chunk.into_iter().map(|j| (j.clone(), run_one(bin, &j, work))).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<_> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    });
    let failures: Vec<&String> = results.iter().filter_map(|(_, r)| r.as_ref().err()).collect();
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|(_, r)| r.as_ref().is_ok_and(f)).count();
    let runs = count(|o| *o == Outcome::Runs);
    let warns = count(|o| matches!(o, Outcome::Warns(_)));
    let refused = count(|o| matches!(o, Outcome::Refused(_)));
    eprintln!("fio corpus: {} files: {runs} run, {warns} run with warnings, {refused} refused with a reason, {} failed", results.len(), failures.len());
    if let Ok(doc) = std::env::var("WAFSIM_CORPUS_DOC") {
        std::fs::write(&doc, markdown(&results, runs, warns, refused)).unwrap();
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(failures.is_empty(), "{} job files failed:\n{}", failures.len(), failures.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"));
}

fn markdown(results: &[(PathBuf, Result<Outcome, String>)], runs: usize, warns: usize, refused: usize) -> String {
    let mut s = String::from("# fio's example job files\n\n");
    s.push_str(
        "Generated by `WAFSIM_CORPUS_DOC=$PWD/docs/fio-corpus.md cargo test --release -p wafsim-cli --test fio_corpus` \
         from Debian's fio-examples package (fio 3.33): each job file runs unchanged on one namespace over the whole \
         7.68 TB preset drive (FDP on, default scale 1/1000), timed when the job is time based; files with \
         `zonemode=zbd` run untimed on the zoned preset they target (NVMe ones on zns-zn540, the others on \
         smr-hm-14tb, default scale) after a zbd sequential fill of every zone; with the \
         `${NAME}` variables the files' headers ask for set to plain values (see `ENV` in the test). Do not edit by hand.\n\n",
    );
    s.push_str(&format!(
        "**{} files: {runs} run, {warns} run with warnings, {refused} refused with a reason.**\n\n| job file | outcome | detail |\n|---|---|---|\n",
        results.len()
    ));
    for (p, r) in results {
        let name = p.file_name().unwrap().to_string_lossy();
        let (outcome, detail) = match r {
            Ok(Outcome::Runs) => ("runs".to_string(), String::new()),
            Ok(Outcome::Warns(n)) => ("runs".to_string(), format!("{n} warning(s)")),
            Ok(Outcome::Refused(m)) => ("refused".to_string(), m.replace('|', "\\|")),
            Err(e) => ("FAILED".to_string(), e.replace('|', "\\|")),
        };
        s.push_str(&format!("| {name} | {outcome} | {detail} |\n"));
    }
    s
}
