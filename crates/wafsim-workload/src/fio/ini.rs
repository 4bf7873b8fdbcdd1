//! The job-file lexer: fio's INI dialect turned into a flat list of located items.
//!
//! Handles `[section]` headers, `key=value` and bare `key` lines, full-line `;`/`#` comments
//! (and trailing ones after whitespace), `include <file>` (resolved relative to the including
//! file, nested up to [`MAX_INCLUDE_DEPTH`]), `${NAME}` expansion through a caller-supplied
//! lookup so that tests stay hermetic, and fio's `$pagesize`/`$mb_memory`/`$ncpus` keywords
//! (see [`super::expr`]).

use std::path::{Path, PathBuf};

use super::expr::substitute_keywords;
use crate::input::{quote, read_text, MAX_LINE_BYTES};
use super::FioError;

/// Nesting limit for `include` (guards against include cycles).
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// Most files one job file may include, directly or not (a fan-out of 8 includes per file over
/// 12 levels would read 8^12 files).
pub const MAX_INCLUDED_FILES: usize = 1000;

/// Most bytes of included text per job file.
pub const MAX_INCLUDED_BYTES: usize = 64 << 20;

/// What the includes of one job file have used so far.
#[derive(Default)]
struct IncludeBudget {
    files: usize,
    bytes: usize,
}

/// Where an item came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc {
    /// Name of the job file (or included file) the item is in, as used in diagnostics.
    pub file: String,
    /// Line number, 1-based.
    pub line: usize,
}

/// One meaningful line of a job file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// `[name]`
    Section {
        /// The section name (`global` for the defaults section).
        name: String,
        /// Where the header is.
        loc: Loc,
    },
    /// `key=value` (value trimmed) or a bare flag (`value == None`).
    Opt {
        /// The option name, as written.
        key: String,
        /// The value, or `None` for a bare flag.
        value: Option<String>,
        /// Where the line is.
        loc: Loc,
    },
}

/// Environment lookup used for `${NAME}`.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Lex `text` (named `name` in diagnostics; includes resolve against `base_dir`).
pub fn lex(text: &str, name: &str, base_dir: &Path, env: EnvLookup) -> Result<Vec<Item>, FioError> {
    let mut out = Vec::new();
    lex_into(text, name, base_dir, env, 0, &mut IncludeBudget::default(), &mut out)?;
    Ok(out)
}

fn lex_into(
    text: &str,
    name: &str,
    base_dir: &Path,
    env: EnvLookup,
    depth: usize,
    budget: &mut IncludeBudget,
    out: &mut Vec<Item>,
) -> Result<(), FioError> {
    // Until a line of this file has lexed, a line that does not is quoted in no error: the
    // file may be no job file at all (`include /etc/shadow`), and its content stays private.
    let mut job_file = false;
    for (i, raw) in text.lines().enumerate() {
        let loc = Loc { file: name.to_string(), line: i + 1 };
        let syntax = |message: String| FioError::Syntax { file: loc.file.clone(), line: loc.line, message };
        let shown = |line: &str| if job_file { quote(line) } else { "(not shown: the file's first line, so it may not be a job file)".to_string() };
        if raw.len() > MAX_LINE_BYTES {
            return Err(syntax(format!("a line of {} bytes, more than the {} MiB a job-file line may have", raw.len(), MAX_LINE_BYTES >> 20)));
        }
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let line = expand_env(line, env).map_err(syntax)?;
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some(sect) = rest.strip_suffix(']') else {
                return Err(syntax(format!("section header {} is missing the closing ']'", shown(line))));
            };
            let sect = sect.trim();
            if sect.is_empty() {
                return Err(syntax("empty section name \"[]\"".into()));
            }
            out.push(Item::Section { name: sect.to_string(), loc });
            job_file = true;
            continue;
        }
        if let Some(file) = include_target(line) {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(syntax(format!("include nesting deeper than {MAX_INCLUDE_DEPTH} (include cycle?)")));
            }
            let path: PathBuf = if Path::new(file).is_absolute() { PathBuf::from(file) } else { base_dir.join(file) };
            budget.files += 1;
            if budget.files > MAX_INCLUDED_FILES {
                return Err(syntax(format!("more than {MAX_INCLUDED_FILES} included files in one job file (an include fan-out?)")));
            }
            let inc = read_text(&path).map_err(|e| syntax(format!("cannot read included file {}: {e}", path.display())))?;
            budget.bytes += inc.len();
            if budget.bytes > MAX_INCLUDED_BYTES {
                return Err(syntax(format!("more than {} MiB of included text in one job file (an include fan-out?)", MAX_INCLUDED_BYTES >> 20)));
            }
            let inc_dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| base_dir.to_path_buf());
            lex_into(&inc, &path.display().to_string(), &inc_dir, env, depth + 1, budget, out)?;
            job_file = true;
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(unquote(v.trim()).to_string())),
            None => (line, None),
        };
        // fio's option names are letters, digits and '_'; anything else is no option line.
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(syntax(format!("cannot parse line {} (expected key=value, a flag or [section]; an option name has letters, digits and '_' only)", shown(line))));
        }
        let value = match value {
            Some(v) => Some(substitute_keywords(&v).map_err(|e| syntax(format!("option {key}: {e}")))?),
            None => None,
        };
        out.push(Item::Opt { key: key.to_ascii_lowercase(), value, loc });
        job_file = true;
    }
    Ok(())
}

/// `include foo.fio` -> `Some("foo.fio")`.
fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let t = rest.trim();
    if t.is_empty() || t.contains('=') {
        None
    } else {
        Some(t)
    }
}

/// Drop full-line comments and comments introduced by whitespace + `;`/`#`.
fn strip_comment(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with(';') || t.starts_with('#') {
        return "";
    }
    let bytes = line.as_bytes();
    for i in 1..bytes.len() {
        if (bytes[i] == b';' || bytes[i] == b'#') && bytes[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

fn unquote(v: &str) -> &str {
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

/// Replace every `${NAME}`; unknown names are an error (a silently empty value would change the
/// workload).
fn expand_env(line: &str, env: EnvLookup) -> Result<String, String> {
    if !line.contains("${") {
        return Ok(line.to_string());
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("unterminated \"${\" (expected ${NAME})".to_string());
        };
        let name = &after[..end];
        match env(name) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("environment variable {} is not set", quote(name))),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn basic_lines() {
        let items = lex("; c\n[global]\nbs=4k ; trailing\n# x\nnorandommap\n", "t.fio", Path::new("."), &no_env)
            .unwrap();
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[0], Item::Section { name, .. } if name == "global"));
        assert!(matches!(&items[1], Item::Opt { key, value: Some(v), loc } if key == "bs" && v == "4k" && loc.line == 3));
        assert!(matches!(&items[2], Item::Opt { key, value: None, .. } if key == "norandommap"));
    }

    #[test]
    fn env_expansion() {
        let env = |k: &str| (k == "BS").then(|| "16k".to_string());
        let items = lex("[a]\nbs=${BS}\n", "t", Path::new("."), &env).unwrap();
        assert!(matches!(&items[1], Item::Opt { value: Some(v), .. } if v == "16k"));
        let err = lex("[a]\nbs=${NOPE}\n", "t", Path::new("."), &env).unwrap_err();
        assert!(err.to_string().starts_with("t:2:"), "{err}");
    }
}
