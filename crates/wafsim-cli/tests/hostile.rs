//! The hostile-input corpus: hundreds of bad (and a few good) inputs of every kind the command
//! line reads, each with the class it must end in. No case may abort (a signal, a Rust panic,
//! an allocation failure), hang (past its time bound) or print a meaningless figure; an
//! "error" case must exit 1 or 2 with a message on stderr, an "ok" case must exit 0.
//!
//! The cases live in `tests/hostile/*.toml`, one file per input kind:
//!
//! ```toml
//! [[case]]
//! name = "fio-nested-parens"              # unique in the file
//! args = ["run", "{dir}/exp.toml"]        # {dir}: the case's scratch directory; {repo}: the workspace
//! expect = "error"                        # "error" or "ok"
//! says = "nested"                         # optional: stderr (error) or stdout+stderr (ok) contains it
//! lacks = ["0.000"]                       # optional: stdout must not contain these
//! hides = ["SECRET"]                      # optional: neither stdout nor stderr contains these
//! timeout = 30                            # optional, seconds (default 30)
//! stdin = "..."                           # optional: text fed to stdin (default: none)
//! fifos = ["trace.txt"]                   # optional: named pipes made in {dir}
//! links = { "trace.txt" = "/dev/zero" }   # optional: symlinks made in {dir}
//! [case.files]                            # files written to {dir}
//! "job.fio" = "[j]\nbs={repeat 20000 (}4k{repeat 20000 )}\n"
//! ```
//!
//! `{repeat N TEXT}` in a file expands to TEXT N times (TEXT up to the closing brace). Every case
//! runs under an address-space limit (`ulimit -v`, 6 GiB) so a case that would allocate without
//! bound fails here instead of taking the machine. Run one file with
//! `HOSTILE=fio cargo test -p wafsim-cli --test hostile`.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address-space bound of every case, KiB (6 GiB).
const VMEM_KIB: u64 = 6 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    case: Vec<Case>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    args: Vec<String>,
    expect: Expect,
    says: Option<String>,
    #[serde(default)]
    lacks: Vec<String>,
    #[serde(default)]
    hides: Vec<String>,
    timeout: Option<u64>,
    stdin: Option<String>,
    #[serde(default)]
    fifos: Vec<String>,
    #[serde(default)]
    links: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum Expect {
    Error,
    Ok,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// `{repeat N TEXT}` expanded.
fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("{repeat ") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 8..];
        let sp = after.find(' ').expect("{repeat N TEXT}: a space after N");
        let n: usize = after[..sp].parse().expect("{repeat N TEXT}: N a number");
        let end = after[sp + 1..].find('}').expect("{repeat N TEXT}: a closing brace") + sp + 1;
        out.push_str(&after[sp + 1..end].repeat(n));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// What went wrong with one case, or None.
fn run_case(file: &str, c: &Case, scratch: &Path) -> Option<String> {
    let dir = scratch.join(format!("{file}-{}", c.name));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in &c.files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, expand(text)).unwrap();
    }
    for (name, target) in &c.links {
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    }
    for name in &c.fifos {
        let ok = Command::new("mkfifo").arg(dir.join(name)).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "mkfifo {name}");
    }
    let subst = |a: &str| a.replace("{dir}", dir.to_str().unwrap()).replace("{repo}", repo().to_str().unwrap());
    let args: Vec<String> = c.args.iter().map(|a| subst(a)).collect();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {VMEM_KIB}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_wafsim"))
        .args(&args)
        .current_dir(&dir)
        .env("LC_ALL", "C")
        .env_remove("RUST_BACKTRACE")
        .stdin(if c.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = &c.stdin {
        let mut w = child.stdin.take().unwrap();
        let s = subst(s);
        std::thread::spawn(move || {
            let _ = w.write_all(s.as_bytes());
        });
    }
    // Drain both pipes on threads so a chatty case cannot block on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.by_ref().take(1 << 20).read_to_end(&mut v);
        let _ = std::io::copy(&mut so, &mut std::io::sink());
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.by_ref().take(1 << 20).read_to_end(&mut v);
        let _ = std::io::copy(&mut se, &mut std::io::sink());
        v
    });
    let bound = Duration::from_secs(c.timeout.unwrap_or(30));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&out_t.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&err_t.join().unwrap()).into_owned();
    let tail = |s: &str| s.lines().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n    ");
    let Some(status) = status else {
        return Some(format!("hung: no exit within {} s; stderr:\n    {}", bound.as_secs(), tail(&stderr)));
    };
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        return Some(format!("killed by signal {sig}; stderr:\n    {}", tail(&stderr)));
    }
    for bad in ["panicked at", "memory allocation of", "stack overflow", "RUST_BACKTRACE"] {
        if stderr.contains(bad) {
            return Some(format!("aborted ({bad:?}); stderr:\n    {}", tail(&stderr)));
        }
    }
    let code = status.code().unwrap_or(-1);
    match c.expect {
        Expect::Error if code != 1 && code != 2 => return Some(format!("expected a clear error, exited {code}; stdout:\n    {}", tail(&stdout))),
        Expect::Error if stderr.trim().is_empty() => return Some("expected a clear error, stderr is empty".into()),
        Expect::Ok if code != 0 => return Some(format!("expected success, exited {code}; stderr:\n    {}", tail(&stderr))),
        _ => {}
    }
    if let Some(want) = &c.says {
        let hay = if c.expect == Expect::Error { stderr.clone() } else { format!("{stdout}{stderr}") };
        if !hay.contains(want.as_str()) {
            return Some(format!("output does not say {want:?}; stderr:\n    {}", tail(&stderr)));
        }
    }
    for l in &c.lacks {
        if stdout.contains(l.as_str()) {
            return Some(format!("stdout contains {l:?}"));
        }
    }
    for h in &c.hides {
        if stdout.contains(h.as_str()) || stderr.contains(h.as_str()) {
            return Some(format!("output shows {h:?}; stderr:\n    {}", tail(&stderr)));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    None
}

#[test]
fn hostile_inputs_end_in_their_class() {
    let only = std::env::var("HOSTILE").ok();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "toml")).collect();
    files.sort();
    let mut cases = Vec::new();
    for f in &files {
        let stem = f.file_stem().unwrap().to_str().unwrap().to_string();
        if only.as_deref().is_some_and(|o| o != stem) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let parsed: CorpusFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut names = std::collections::HashSet::new();
        for c in parsed.case {
            assert!(names.insert(c.name.clone()), "{}: case {:?} twice", f.display(), c.name);
            cases.push((stem.clone(), c));
        }
    }
    assert!(!cases.is_empty(), "no hostile cases found in {}", corpus.display());
    let scratch = std::env::temp_dir().join(format!("wafsim-hostile-{}", std::process::id()));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((file, c)) = cases.get(i) else { break };
                if let Some(why) = run_case(file, c, &scratch) {
                    failures.lock().unwrap().push(format!("{file}.toml {}: {why}", c.name));
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let failures = failures.into_inner().unwrap();
    eprintln!("hostile corpus: {} cases, {} failed", cases.len(), failures.len());
    assert!(failures.is_empty(), "{} of {} hostile cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
