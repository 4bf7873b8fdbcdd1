//! JSON as nvme-cli writes it (json-c, `JSON_C_TO_STRING_PRETTY | NOSLASHESCAPE`) and a reader
//! that keeps numbers exact.
//!
//! serde_json cannot do either job here: without its `preserve_order` feature it sorts keys, and
//! without `arbitrary_precision` it turns integers above `u64::MAX` (128-bit counters) into
//! floats.

/// A JSON value with object keys in insertion order and numbers as their literal text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum J {
    /// A number, exactly as written.
    Num(String),
    /// A string (unescaped).
    Str(String),
    /// An object; keys keep their order.
    Obj(Vec<(String, J)>),
    /// An array.
    Arr(Vec<J>),
}

impl J {
    /// A number from any integer.
    pub fn num(v: impl std::fmt::Display) -> J {
        J::Num(v.to_string())
    }

    /// json-c's pretty text followed by the `\n` nvme-cli's `json_print` adds.
    pub fn to_nvme_cli_string(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s.push('\n');
        s
    }

    fn write(&self, out: &mut String, level: usize) {
        match self {
            J::Num(n) => out.push_str(n),
            J::Str(s) => escape(out, s),
            J::Obj(kv) => {
                out.push('{');
                for (i, (k, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('\n');
                    indent(out, level + 1);
                    escape(out, k);
                    out.push(':');
                    v.write(out, level + 1);
                }
                if !kv.is_empty() {
                    out.push('\n');
                    indent(out, level);
                }
                out.push('}');
            }
            J::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('\n');
                    indent(out, level + 1);
                    v.write(out, level + 1);
                }
                if !items.is_empty() {
                    out.push('\n');
                    indent(out, level);
                }
                out.push(']');
            }
        }
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// json-c's `json_escape_str` with `JSON_C_TO_STRING_NOSLASHESCAPE`.
fn escape(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{c}' => out.push_str("\\f"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Builder for objects in insertion order.
#[derive(Default)]
pub struct Obj(Vec<(String, J)>);

impl Obj {
    /// An empty object.
    pub fn new() -> Self {
        Obj(Vec::new())
    }

    /// Adds `k`, replacing an earlier value in place as `json_object_object_add` does.
    pub fn add(&mut self, k: &str, v: J) -> &mut Self {
        if let Some(slot) = self.0.iter_mut().find(|(key, _)| key == k) {
            slot.1 = v;
        } else {
            self.0.push((k.to_string(), v));
        }
        self
    }

    /// Adds a number.
    pub fn num(&mut self, k: &str, v: impl std::fmt::Display) -> &mut Self {
        self.add(k, J::num(v))
    }

    /// Adds a string.
    pub fn str(&mut self, k: &str, v: impl Into<String>) -> &mut Self {
        self.add(k, J::Str(v.into()))
    }

    /// The finished object.
    pub fn done(self) -> J {
        J::Obj(self.0)
    }
}

/// A parsed value with the (1-based) line each object key was on.
#[derive(Debug, Clone)]
pub(crate) enum PJ {
    Num(String),
    Str(String),
    Other,
    Obj(Vec<(String, usize, PJ)>),
    Arr(Vec<PJ>),
}

/// A JSON syntax error: message and 1-based line.
#[derive(Debug, Clone)]
pub(crate) struct SyntaxError {
    pub line: usize,
    pub msg: String,
}

/// Parses one JSON value starting at byte `pos` of `src`; returns it and the byte just past it.
/// `first_line` is the line number of `pos`.
pub(crate) fn parse_value_at(
    src: &str,
    pos: usize,
    first_line: usize,
) -> Result<(PJ, usize), SyntaxError> {
    let mut p = Parser { s: src.as_bytes(), i: pos, line: first_line };
    let v = p.value(0)?;
    Ok((v, p.i))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    line: usize,
}

impl Parser<'_> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError { line: self.line, msg: msg.into() })
    }

    fn ws(&mut self) {
        while let Some(&c) = self.s.get(self.i) {
            match c {
                b'\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                b' ' | b'\t' | b'\r' => self.i += 1,
                _ => break,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<PJ, SyntaxError> {
        if depth > 64 {
            return self.err("JSON nested too deeply");
        }
        self.ws();
        match self.s.get(self.i) {
            None => self.err("JSON ends early"),
            Some(b'{') => {
                self.i += 1;
                let mut kv = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(PJ::Obj(kv));
                }
                loop {
                    self.ws();
                    let line = self.line;
                    if self.s.get(self.i) != Some(&b'"') {
                        return self.err("JSON object key expected");
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return self.err(format!("':' expected after JSON key \"{k}\""));
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    kv.push((k, line, v));
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(PJ::Obj(kv));
                        }
                        _ => return self.err("',' or '}' expected in JSON object"),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(PJ::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(PJ::Arr(items));
                        }
                        _ => return self.err("',' or ']' expected in JSON array"),
                    }
                }
            }
            Some(b'"') => Ok(PJ::Str(self.string()?)),
            Some(c) if *c == b'-' || c.is_ascii_digit() => {
                let start = self.i;
                while let Some(&c) = self.s.get(self.i) {
                    if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                Ok(PJ::Num(String::from_utf8_lossy(&self.s[start..self.i]).into_owned()))
            }
            Some(_) => {
                for lit in ["true", "false", "null"] {
                    if self.s[self.i..].starts_with(lit.as_bytes()) {
                        self.i += lit.len();
                        return Ok(PJ::Other);
                    }
                }
                self.err("JSON value expected")
            }
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        // Opening quote already checked.
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.s.get(self.i) {
                None => return self.err("JSON string not closed"),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                Some(b'\n') => return self.err("line break inside a JSON string"),
                Some(b'\\') => {
                    let e = self.s.get(self.i + 1).copied();
                    self.i += 2;
                    match e {
                        Some(b'n') => out.push(b'\n'),
                        Some(b't') => out.push(b'\t'),
                        Some(b'r') => out.push(b'\r'),
                        Some(b'b') => out.push(8),
                        Some(b'f') => out.push(12),
                        Some(b'u') => {
                            let hex = self.s.get(self.i..self.i + 4).unwrap_or(b"");
                            let cp = std::str::from_utf8(hex)
                                .ok()
                                .and_then(|h| u32::from_str_radix(h, 16).ok());
                            match cp {
                                Some(cp) => {
                                    let c = char::from_u32(cp).unwrap_or('\u{fffd}');
                                    let mut b = [0u8; 4];
                                    out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                                    self.i += 4;
                                }
                                None => return self.err("bad \\u escape in JSON string"),
                            }
                        }
                        Some(c) => out.push(c),
                        None => return self.err("JSON string not closed"),
                    }
                }
                Some(&c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}
