//! fio's command-line form: `fio --name=test --filename=/dev/vdb --rw=randrw --bs=4k ...`.
//!
//! The words are split like a POSIX shell would (quotes, backslashes, `$VAR` through the
//! caller's lookup) and read with fio's rules (init.c `parse_cmd_line`, which uses glibc's
//! `getopt_long_only`):
//! * `--opt=value`, `-opt=value`, or `--opt value` (the next argument is the value of every
//!   option except fio's optional-value flags, [`super::options::FLAGS`], as getopt does: so
//!   `--direct --bs=4k` gives `direct` the value `--bs=4k`, and fails, as in fio);
//! * a unique prefix of an option name stands for it (`--runt=60`), an ambiguous one is an
//!   error (`--rwmix=70`);
//! * options before the first `--name` are global; `--name=x` starts job `x` (and
//!   `--name=global` the global section again);
//! * fio's own options (`--output`, `--eta`, `--minimal`, ...) are accepted and ignored, those
//!   that stop fio from running jobs are refused;
//! * a word that is not an option is a job file for fio: refused (the experiment names job
//!   files itself).
//!
//! Diagnostics use the `origin` as the file name and the argument position as the line
//! (argument 1 is the first one after `fio`).

use super::expr::{substitute_keywords, KEYWORDS};
use super::ini::{Item, Loc};
use super::job::{self, NoJobs};
use super::options::{canonical_option, is_known_option, ALIASES, FLAGS, KEPT, MODELLED, NOT_MODELLED};
use super::{Diagnostic, FioError, JobFile};

/// What fio does with one of its own (non-job) options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Own {
    /// Output, progress or resource knobs: no effect on the jobs.
    Ignore,
    /// `--readonly`: fio refuses jobs that write.
    Readonly,
    /// fio does something else than running the given jobs.
    Refuse(&'static str),
}

/// How an option takes its value on fio's command line (getopt's `has_arg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg {
    None,
    Optional,
    Required,
}

/// fio's own options (init.c `l_opts`).
const OWN: &[(&str, Arg, Own)] = &[
    ("output", Arg::Required, Own::Ignore),
    ("latency-log", Arg::Required, Own::Refuse("fio refuses it (\"--latency-log is deprecated\")")),
    ("bandwidth-log", Arg::None, Own::Ignore),
    ("minimal", Arg::None, Own::Ignore),
    ("output-format", Arg::Required, Own::Ignore),
    ("append-terse", Arg::Optional, Own::Ignore),
    ("version", Arg::None, Own::Refuse("makes fio print its version instead of running jobs")),
    ("help", Arg::None, Own::Refuse("makes fio print its help instead of running jobs")),
    ("cmdhelp", Arg::Optional, Own::Refuse("makes fio print option help instead of running jobs")),
    ("enghelp", Arg::Optional, Own::Refuse("makes fio print engine help instead of running jobs")),
    ("showcmd", Arg::None, Own::Refuse("makes fio print the jobs as options instead of running them")),
    ("readonly", Arg::None, Own::Readonly),
    ("eta", Arg::Required, Own::Ignore),
    ("eta-interval", Arg::Required, Own::Ignore),
    ("eta-newline", Arg::Required, Own::Ignore),
    ("debug", Arg::Required, Own::Ignore),
    ("parse-only", Arg::None, Own::Ignore),
    ("section", Arg::Required, Own::Refuse("selects sections of job files; give wafsim the jobs to run instead")),
    ("inflate-log", Arg::Required, Own::Refuse("makes fio decompress a log instead of running jobs")),
    ("alloc-size", Arg::Required, Own::Ignore),
    ("profile", Arg::Required, Own::Refuse("runs one of fio's built-in profiles (tiobench, act), which wafsim does not model")),
    ("warnings-fatal", Arg::None, Own::Ignore),
    ("max-jobs", Arg::Required, Own::Ignore),
    ("terse-version", Arg::Required, Own::Ignore),
    ("server", Arg::Optional, Own::Refuse("runs fio as a server for remote clients")),
    ("daemonize", Arg::Required, Own::Refuse("runs fio as a background server")),
    ("client", Arg::Required, Own::Refuse("sends the jobs to remote fio servers")),
    ("remote-config", Arg::Required, Own::Refuse("makes a remote fio server read its own job file")),
    ("cpuclock-test", Arg::None, Own::Refuse("makes fio test the CPU clock instead of running jobs")),
    ("crctest", Arg::Optional, Own::Refuse("makes fio benchmark checksums instead of running jobs")),
    ("memcpytest", Arg::Optional, Own::Refuse("makes fio benchmark memcpy instead of running jobs")),
    ("idle-prof", Arg::Required, Own::Ignore),
    ("status-interval", Arg::Required, Own::Ignore),
    ("trigger-file", Arg::Required, Own::Ignore),
    ("trigger-timeout", Arg::Required, Own::Ignore),
    ("trigger", Arg::Required, Own::Ignore),
    ("trigger-remote", Arg::Required, Own::Ignore),
    ("aux-path", Arg::Required, Own::Ignore),
    ("merge-blktrace-only", Arg::None, Own::Refuse("makes fio merge blktrace files instead of running jobs")),
];

/// What a command-line option name resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolved {
    /// A job option (by its canonical name).
    Job(String),
    Own(&'static str, Arg, Own),
    Unknown,
}

/// Every long option fio's getopt sees (its own, then the job options and aliases).
fn all_names() -> impl Iterator<Item = &'static str> {
    OWN.iter().map(|o| o.0).chain(MODELLED.iter().copied()).chain(KEPT.iter().copied()).chain(NOT_MODELLED.iter().copied()).chain(ALIASES.iter().map(|a| a.0))
}

/// getopt_long_only: an exact name, else the one name it is a prefix of; two or more
/// candidates are ambiguous (getopt_long_only treats any second prefix match as such).
fn resolve(name: &str) -> Result<Resolved, Vec<&'static str>> {
    let lookup = |n: &str| -> Option<Resolved> {
        if let Some(o) = OWN.iter().find(|o| o.0 == n) {
            return Some(Resolved::Own(o.0, o.1, o.2));
        }
        is_known_option(n).then(|| Resolved::Job(canonical_option(n).to_string()))
    };
    if let Some(r) = lookup(name) {
        return Ok(r);
    }
    let mut cands: Vec<&'static str> = all_names().filter(|n| n.starts_with(name)).collect();
    cands.dedup();
    match cands.as_slice() {
        [] => Ok(Resolved::Unknown),
        [one] => Ok(lookup(one).unwrap_or(Resolved::Unknown)),
        _ => Err(cands),
    }
}

/// Split a command line into words like a POSIX shell: blanks separate words; `'...'` is
/// literal; `"..."` keeps blanks and expands `$VAR`; `\` escapes the next character (and a
/// backslash-newline joins lines). `$NAME`/`${NAME}` outside single quotes come from `env`,
/// except fio's own keywords (`$ncpus`, ...) which are left for fio.
pub fn split_words(line: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(n) => {
                    cur.push(n);
                    in_word = true;
                }
                None => return Err("the command ends with a lone backslash".into()),
            },
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(n) => cur.push(n),
                        None => return Err("unterminated single quote in the command".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => cur.push(chars.next().expect("peeked")),
                        Some('\\') if chars.peek() == Some(&'\n') => {
                            chars.next();
                        }
                        Some('$') => cur.push_str(&expand_var(&mut chars, env)?),
                        Some(n) => cur.push(n),
                        None => return Err("unterminated double quote in the command".into()),
                    }
                }
            }
            '$' => {
                in_word = true;
                cur.push_str(&expand_var(&mut chars, env)?);
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// After a `$`: the variable's value (fio keywords and a lone `$` stay as they are).
fn expand_var(chars: &mut std::iter::Peekable<std::str::Chars>, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let braced = chars.peek() == Some(&'{');
    if braced {
        chars.next();
    }
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_alphanumeric() || c == '_' {
            name.push(c);
            chars.next();
        } else {
            break;
        }
    }
    if braced && chars.next() != Some('}') {
        return Err(format!("unterminated \"${{{name}\" in the command"));
    }
    if name.is_empty() {
        return Ok(if braced { "${}".into() } else { "$".into() });
    }
    if !braced && KEYWORDS.iter().any(|(k, _)| k[1..] == name) {
        return Ok(format!("${name}"));
    }
    env(&name).ok_or_else(|| format!("environment variable \"{name}\" is not set"))
}

/// Is `w` the fio program (`fio`, `/usr/bin/fio`)?
fn is_fio(w: &str) -> bool {
    w == "fio" || w.ends_with("/fio")
}

/// The reader of the argument list.
struct Reader<'a> {
    words: Vec<String>,
    origin: &'a str,
    items: Vec<Item>,
    warnings: Vec<Diagnostic>,
    readonly: Option<usize>,
}

impl Reader<'_> {
    fn loc(&self, pos: usize) -> Loc {
        Loc { file: self.origin.to_string(), line: pos }
    }
    fn err(&self, pos: usize, message: String) -> FioError {
        FioError::Syntax { file: self.origin.to_string(), line: pos, message }
    }
    fn warn(&mut self, pos: usize, message: String) {
        self.warnings.push(Diagnostic { file: self.origin.to_string(), line: pos, message });
    }

    /// The value of an option: `=value`, or (getopt) the next argument when it needs one.
    fn value(&self, i: &mut usize, word: &str, inline: Option<&str>, arg: Arg) -> Result<Option<String>, FioError> {
        let pos = *i + 1;
        match (inline, arg) {
            (Some(""), Arg::Required) => {
                Err(self.err(pos, format!("argument {pos} \"{word}\": the option requires a value (fio: \"option requires an argument\")")))
            }
            (Some(v), _) => Ok(Some(v.to_string())),
            (None, Arg::Required) => match self.words.get(*i + 1) {
                Some(next) => {
                    *i += 1;
                    Ok(Some(next.clone()))
                }
                None => Err(self.err(pos, format!("argument {pos} \"{word}\": the option requires a value (give {word}=<value>)"))),
            },
            (None, _) => Ok(None),
        }
    }

    fn read(&mut self) -> Result<(), FioError> {
        // Options before the first --name go to fio's global defaults.
        self.items.push(Item::Section { name: "global".into(), loc: self.loc(0) });
        let mut i = 0;
        while i < self.words.len() {
            let word = self.words[i].clone();
            let pos = i + 1;
            if word == "--" || !word.starts_with('-') || word == "-" {
                let file = if word == "--" { self.words.get(i + 1).cloned().unwrap_or_default() } else { word.clone() };
                return Err(self.err(pos, format!(
                    "argument {pos} \"{file}\" names a job file for fio to read; wafsim does not read job files from the command: name it with file = in the experiment instead"
                )));
            }
            let body = word.trim_start_matches('-');
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let resolved = resolve(name).map_err(|c| {
                self.err(pos, format!("argument {pos} \"{word}\" is ambiguous: it could be any of --{} (fio refuses it too)", c.join(", --")))
            })?;
            match resolved {
                Resolved::Own(n, arg, own) => {
                    self.value(&mut i, &word, inline, arg)?;
                    match own {
                        Own::Ignore => {}
                        Own::Readonly => self.readonly = Some(pos),
                        Own::Refuse(why) => return Err(self.err(pos, format!("argument {pos} --{n} {why}"))),
                    }
                }
                Resolved::Job(key) => {
                    let arg = if FLAGS.contains(&key.as_str()) { Arg::Optional } else { Arg::Required };
                    let value = self.value(&mut i, &word, inline, arg)?;
                    let value = match value {
                        Some(v) => Some(substitute_keywords(&v).map_err(|e| self.err(pos, format!("option {key}: {e}")))?),
                        None => None,
                    };
                    self.job_option(pos, key, value);
                }
                Resolved::Unknown => {
                    // Its arity is unknown: like most options it probably takes a value.
                    let takes_next = inline.is_none() && self.words.get(i + 1).is_some_and(|n| !n.starts_with('-'));
                    let extra = if takes_next { format!(" with its value \"{}\"", self.words[i + 1]) } else { String::new() };
                    self.warn(pos, format!("argument {pos}: unknown option \"{word}\"{extra} (ignored; fio fails on options it does not know)"));
                    if takes_next {
                        i += 1;
                    }
                }
            }
            i += 1;
        }
        Ok(())
    }

    fn job_option(&mut self, pos: usize, key: String, value: Option<String>) {
        let loc = self.loc(pos);
        if key == "name" {
            let v = value.unwrap_or_default();
            // fio: a --name whose value starts with "global" edits the global defaults.
            let name = if v.starts_with("global") { "global".to_string() } else { v };
            self.items.push(Item::Section { name, loc });
        } else {
            self.items.push(Item::Opt { key, value, loc });
        }
    }
}

/// Parse fio's command-line form (`fio --name=a --rw=write ...`; the leading `fio` is
/// optional) with the same interpreter as job files. `origin` names the command in messages,
/// whose "line" is the argument position (1 = the first argument after `fio`); `env` answers
/// `$NAME` and `${NAME}` as a shell would.
///
/// ```
/// use wafsim_workload::fio::parse_job_args;
/// let jf = parse_job_args("fio --name=test --filename=/dev/vdb --rw=randrw --rwmixread=70 --bs=4k --iodepth=256",
///     "args", &|_| None).unwrap();
/// let job = &jf.phases[0][0];
/// assert_eq!((job.name.as_str(), job.rwmixread, job.timing.iodepth), ("test", 70, 256));
/// ```
pub fn parse_job_args(args: &str, origin: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<JobFile, FioError> {
    let mut words = split_words(args, env).map_err(|message| FioError::Syntax { file: origin.to_string(), line: 0, message })?;
    if words.first().is_some_and(|w| w == "sudo") {
        words.remove(0);
    }
    if words.first().is_some_and(|w| is_fio(w)) {
        words.remove(0);
    }
    let n = words.len();
    let mut r = Reader { words, origin, items: Vec::new(), warnings: Vec::new(), readonly: None };
    r.read()?;
    let no_jobs = NoJobs { file: origin, line: n, hint: "the command starts no job; add --name=<job> before the job's options" };
    let mut jf = job::assemble(std::mem::take(&mut r.items), no_jobs)?;
    if let Some(pos) = r.readonly {
        if let Some(j) = jf.jobs().find(|j| j.rw.writes()) {
            return Err(r.err(pos, format!("argument {pos} --readonly: fio refuses job \"{}\", which writes (rw={:?})", j.name, j.rw)));
        }
    }
    let mut warnings = r.warnings;
    warnings.append(&mut jf.warnings);
    warnings.sort_by_key(|w| w.line);
    jf.warnings = warnings;
    Ok(jf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words() {
        let env = |k: &str| (k == "DEV").then(|| "/dev/vdb".to_string());
        assert_eq!(split_words("fio --name=a  --filename=$DEV", &env).unwrap(), ["fio", "--name=a", "--filename=/dev/vdb"]);
        assert_eq!(split_words("--name='my job' \"--description=a b\" x\\ y", &env).unwrap(), ["--name=my job", "--description=a b", "x y"]);
        assert_eq!(split_words("--bs=4k \\\n --size=1g", &env).unwrap(), ["--bs=4k", "--size=1g"]);
        assert_eq!(split_words("--numjobs=$ncpus --x=\"${DEV}\"", &env).unwrap(), ["--numjobs=$ncpus", "--x=/dev/vdb"]);
        assert!(split_words("--name='a", &env).is_err());
        assert!(split_words("--x=$NOPE", &env).is_err());
    }

    #[test]
    fn getopt_prefixes() {
        assert_eq!(resolve("runt"), Ok(Resolved::Job("runtime".into())));
        assert_eq!(resolve("readwrite"), Ok(Resolved::Job("rw".into())));
        assert!(resolve("rwmix").is_err());
        assert!(matches!(resolve("output"), Ok(Resolved::Own("output", Arg::Required, Own::Ignore))));
        assert_eq!(resolve("frobnicate"), Ok(Resolved::Unknown));
    }
}
