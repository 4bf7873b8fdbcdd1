//! Arithmetic in option values, the two ways fio offers it.
//!
//! * **Reserved keywords** (`$pagesize`, `$mb_memory`, `$ncpus`): fio replaces them by values of
//!   the machine running it and, if a keyword was replaced and the value contains `+ - * /`,
//!   pipes the value through `bc` (integer arithmetic, `/` truncates). wafsim replaces them by
//!   the fixed values [`PAGESIZE`], [`MB_MEMORY`] and [`NCPUS`] so that a job file means the
//!   same thing on every machine, and evaluates the value as `bc` would (see
//!   [`substitute_keywords`]).
//! * **Parenthesised expressions** (`bs=(4k*2)`, HOWTO "Job file parameters"): evaluated with
//!   fio's operators, precedence and unit suffixes (see [`eval_parenthesised`]). fio only has
//!   these when built with its expression parser (Debian's fio 3.33 is not, and refuses them).

/// `$pagesize`: the page size of the common x86-64 and arm64 configurations.
pub const PAGESIZE: u64 = 4096;
/// `$mb_memory`: 16 GiB of memory, a fixed stand-in for the machine's memory in MiB.
pub const MB_MEMORY: u64 = 16384;
/// `$ncpus`: a fixed stand-in for the number of online CPUs.
pub const NCPUS: u64 = 8;

/// Deepest nesting of an expression (parentheses, unary minus, `^` chains) evaluated: the
/// evaluators recurse, and a value nested 100,000 deep would overflow the stack.
pub const MAX_DEPTH: usize = 1000;

/// The error of an expression nested deeper than [`MAX_DEPTH`].
fn too_deep() -> String {
    format!("the expression is nested deeper than {MAX_DEPTH} levels (parentheses, unary minus or ^)")
}

/// fio's reserved keywords and the fixed values wafsim gives them.
pub const KEYWORDS: [(&str, u64); 3] = [("$pagesize", PAGESIZE), ("$mb_memory", MB_MEMORY), ("$ncpus", NCPUS)];

/// Replace fio's reserved keywords in an option value; if one was replaced and the value holds
/// arithmetic, evaluate it as fio's `bc` call does (integers only, `/` truncates, `%` is the
/// remainder, `^` a power). Values without keywords are returned unchanged.
///
/// ```
/// use wafsim_workload::fio::expr::substitute_keywords;
/// assert_eq!(substitute_keywords("5*1024*1024*$mb_memory/8").unwrap(), (5u64 * 1024 * 1024 * 16384 / 8).to_string());
/// assert_eq!(substitute_keywords("$pagesize").unwrap(), "4096");
/// assert_eq!(substitute_keywords("4k").unwrap(), "4k");
/// ```
pub fn substitute_keywords(value: &str) -> Result<String, String> {
    let mut out = value.to_string();
    let mut replaced = false;
    for (word, v) in KEYWORDS {
        if out.contains(word) {
            out = out.replace(word, &v.to_string());
            replaced = true;
        }
    }
    // fio hands the value to bc only when a keyword was replaced, it holds an operator and no
    // quote (options.c, bc_calc).
    if !replaced || !out.contains(['+', '-', '*', '/']) || out.contains('\'') {
        return Ok(out);
    }
    let v = Bc { s: out.as_bytes(), pos: 0, depth: 0 }.eval().map_err(|e| {
        format!("{} (after replacing fio's $keywords) is not integer arithmetic fio's bc call can evaluate: {e}", crate::input::quote(&out))
    })?;
    Ok(v.to_string())
}

/// A `bc` evaluator for integer expressions (`scale=0`), enough for fio's keyword arithmetic.
struct Bc<'a> {
    s: &'a [u8],
    pos: usize,
    /// Nesting of the recursive calls under way (bounded by [`MAX_DEPTH`]).
    depth: usize,
}

impl Bc<'_> {
    fn eval(mut self) -> Result<i128, String> {
        let v = self.sum()?;
        self.skip_ws();
        if self.pos != self.s.len() {
            return Err(format!("unexpected {}", crate::input::quote(&String::from_utf8_lossy(&self.s[self.pos..]))));
        }
        Ok(v)
    }
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    fn sum(&mut self) -> Result<i128, String> {
        let mut v = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == b'+' { v.checked_add(r) } else { v.checked_sub(r) }.ok_or("overflow")?;
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<i128, String> {
        let mut v = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                b'*' => v.checked_mul(r).ok_or("overflow")?,
                _ if r == 0 => return Err("division by zero".into()),
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }
    /// `^` is right-associative and binds tighter than `*`, looser than unary minus (GNU bc).
    /// `f` one level deeper (see [`MAX_DEPTH`]).
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<T, String> {
        self.depth += 1;
        let r = if self.depth > MAX_DEPTH { Err(too_deep()) } else { f(self) };
        self.depth -= 1;
        r
    }
    fn power(&mut self) -> Result<i128, String> {
        self.nested(Self::power_inner)
    }
    fn power_inner(&mut self) -> Result<i128, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            let e = self.power()?;
            let e = u32::try_from(e).map_err(|_| "a negative or huge exponent")?;
            return base.checked_pow(e).ok_or_else(|| "overflow".into());
        }
        Ok(base)
    }
    fn unary(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                Ok(-self.nested(Self::unary)?)
            }
            Some(b'(') => {
                self.pos += 1;
                let v = self.nested(Self::sum)?;
                if self.peek() != Some(b')') {
                    return Err("missing ')'".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                std::str::from_utf8(&self.s[start..self.pos]).ok().and_then(|d| d.parse().ok()).ok_or_else(|| "overflow".into())
            }
            Some(c) => Err(format!("unexpected '{}' (bc knows no unit suffixes)", c as char)),
            None => Err("missing operand".into()),
        }
    }
}

/// A value of fio's expression parser: an integer and a float view, as in
/// `exp/expression-parser.y` (integer arithmetic unless a float took part).
#[derive(Debug, Clone, Copy)]
struct Val {
    i: i64,
    d: f64,
    float: bool,
}

impl Val {
    fn int(i: i64) -> Val {
        Val { i, d: i as f64, float: false }
    }
    fn float(d: f64) -> Val {
        Val { i: d as i64, d, float: true }
    }
}

/// Binding strength of fio's operators, from `exp/expression-parser.y` (`%left '-' '+'`,
/// `%right SUFFIX`, `%left '*' '/'`, `%right '^'`, `%left '%'`): unlike C, `%` binds tighter
/// than `*` and `^`, and a unit suffix applies to the whole product before it (`2*4k` = 8k).
fn binding(op: u8) -> Option<(u8, bool)> {
    // (precedence, right-associative)
    match op {
        b'+' | b'-' => Some((1, false)),
        b'*' | b'/' => Some((3, false)),
        b'^' => Some((4, true)),
        b'%' => Some((5, false)),
        _ => None,
    }
}

/// Precedence of a unit suffix, a postfix operator between `+`/`-` and `*`/`/`.
const SUFFIX_PREC: u8 = 2;

/// Evaluate a parenthesised size/number expression (`(4k*2)`, `(2^10)k`), as fio's expression
/// parser does for integer and size options. Unit suffixes inside the expression are always
/// binary (`k` = 1024) and `kib`/`mib`/`gib`/`tib`/`pib` decimal, whatever `kb_base` says (fio's
/// lexer ignores it); integer division truncates; a float operand makes the result a float,
/// truncated at the end. fio's 32-bit truncation of unit-less results is refused instead of
/// reproduced.
///
/// ```
/// use wafsim_workload::fio::expr::eval_parenthesised;
/// assert_eq!(eval_parenthesised("(4k*2)"), Ok(8192));
/// assert_eq!(eval_parenthesised("(2^10)k"), Ok(1 << 20));
/// assert_eq!(eval_parenthesised("(1+2k)"), Ok(2049));
/// assert!(eval_parenthesised("(1/0)").is_err());
/// ```
pub fn eval_parenthesised(s: &str) -> Result<u64, String> {
    let mut p = Expr { s: s.as_bytes(), pos: 0, units: false, depth: 0 };
    let v = p.expr(0)?;
    p.skip_ws();
    if p.pos < p.s.len() && !matches!(p.s[p.pos], b'#' | b':' | b',') {
        return Err(format!("unexpected {} in the expression", crate::input::quote(&String::from_utf8_lossy(&p.s[p.pos..]))));
    }
    let v = if v.float { v.d.trunc() } else { v.i as f64 };
    if v < 0.0 {
        return Err(format!("the expression {} is negative", crate::input::quote(s)));
    }
    if !p.units && v > i32::MAX as f64 {
        return Err(format!(
            "fio converts a parenthesised value without a unit suffix to a 32-bit int, which {} = {v} overflows; move a factor into a suffix, e.g. (4*1024)m",
            crate::input::quote(s)
        ));
    }
    if v >= u64::MAX as f64 {
        return Err("a value that fits in 64 bits".into());
    }
    Ok(v as u64)
}

struct Expr<'a> {
    s: &'a [u8],
    pos: usize,
    /// A unit suffix appeared (fio then skips its 32-bit conversion).
    units: bool,
    /// Nesting of the recursive calls under way (bounded by [`MAX_DEPTH`]).
    depth: usize,
}

impl Expr<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t') {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        // fio's lexer ignores everything after '#', ':' and ','.
        self.s.get(self.pos).copied().filter(|c| !matches!(c, b'#' | b':' | b','))
    }

    /// Precedence climbing over fio's grammar.
    fn expr(&mut self, min_prec: u8) -> Result<Val, String> {
        self.nested(|p| p.expr_inner(min_prec))
    }

    /// `f` one level deeper (see [`MAX_DEPTH`]).
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<T, String> {
        self.depth += 1;
        let r = if self.depth > MAX_DEPTH { Err(too_deep()) } else { f(self) };
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, min_prec: u8) -> Result<Val, String> {
        let mut lhs = self.unary()?;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphabetic() {
                if SUFFIX_PREC < min_prec {
                    break;
                }
                let m = self.suffix()?;
                lhs = mul(lhs, m);
                continue;
            }
            let Some((prec, right)) = binding(c) else { break };
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(if right { prec } else { prec + 1 })?;
            lhs = apply(c, lhs, rhs)?;
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Val, String> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                let v = self.nested(Self::unary)?;
                Ok(Val { i: v.i.wrapping_neg(), d: -v.d, float: v.float })
            }
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr(0)?;
                if self.peek() != Some(b')') {
                    return Err("missing ')' in the expression".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) => Err(format!("unexpected '{}' in the expression", c as char)),
            None => Err("an operand is missing in the expression".into()),
        }
    }

    fn number(&mut self) -> Result<Val, String> {
        let rest = &self.s[self.pos..];
        if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
            let end = 2 + rest[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            let text = std::str::from_utf8(&rest[2..end]).map_err(|e| e.to_string())?;
            self.pos += end;
            return i64::from_str_radix(text, 16).map(Val::int).map_err(|_| "a number that fits in 64 bits".into());
        }
        let mut end = rest.iter().take_while(|c| c.is_ascii_digit() || **c == b'.').count();
        let mut float = rest[..end].contains(&b'.');
        // exponent: 1e6, 2.5E-3
        if end < rest.len() && (rest[end] | 0x20) == b'e' {
            let mut j = end + 1;
            while j < rest.len() && matches!(rest[j], b'+' | b'-') {
                j += 1;
            }
            if j < rest.len() && rest[j].is_ascii_digit() {
                end = j + rest[j..].iter().take_while(|c| c.is_ascii_digit()).count();
                float = true;
            }
        }
        let text = std::str::from_utf8(&rest[..end]).map_err(|e| e.to_string())?;
        self.pos += end;
        if float {
            text.parse::<f64>().map(Val::float).map_err(|_| format!("\"{text}\" is not a number"))
        } else {
            text.parse::<i64>().map(Val::int).map_err(|_| "a number that fits in 64 bits".into())
        }
    }

    /// A unit suffix (fio's lexer: binary `k`/`m`/`g`/`t`/`p` with optional `b`, decimal `kib`
    /// ... `pib`). Time units are not sizes and are refused here.
    fn suffix(&mut self) -> Result<Val, String> {
        let rest = &self.s[self.pos..];
        let len = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        let word = String::from_utf8_lossy(&rest[..len]).to_ascii_lowercase();
        let m: u64 = match word.as_str() {
            "k" | "kb" => 1 << 10,
            "m" | "mb" => 1 << 20,
            "g" | "gb" => 1 << 30,
            "t" | "tb" => 1 << 40,
            "p" | "pb" => 1 << 50,
            "kib" => 1_000,
            "mib" => 1_000_000,
            "gib" => 1_000_000_000,
            "tib" => 1_000_000_000_000,
            "pib" => 1_000_000_000_000_000,
            _ => return Err(format!("\"{word}\" is not a size suffix (k, m, g, t, p, kib, ...)")),
        };
        self.pos += len;
        self.units = true;
        Ok(Val::int(m as i64))
    }
}

fn mul(a: Val, b: Val) -> Val {
    if a.float || b.float {
        Val::float(a.d * b.d)
    } else {
        Val { i: a.i.wrapping_mul(b.i), d: a.d * b.d, float: false }
    }
}

fn apply(op: u8, a: Val, b: Val) -> Result<Val, String> {
    let float = a.float || b.float;
    Ok(match op {
        b'+' if float => Val::float(a.d + b.d),
        b'+' => Val::int(a.i.wrapping_add(b.i)),
        b'-' if float => Val::float(a.d - b.d),
        b'-' => Val::int(a.i.wrapping_sub(b.i)),
        b'*' => mul(a, b),
        b'/' if float => {
            if b.d.abs() < 1e-20 {
                return Err("division by zero in the expression".into());
            }
            Val::float(a.d / b.d)
        }
        b'/' => {
            if b.i == 0 {
                return Err("division by zero in the expression".into());
            }
            Val::int(a.i.wrapping_div(b.i))
        }
        b'%' => {
            if float {
                return Err("modulo of a float in the expression".into());
            }
            if b.i == 0 {
                return Err("division by zero in the expression".into());
            }
            Val::int(a.i.wrapping_rem(b.i))
        }
        b'^' if float || b.i < 0 => Val::float(a.d.powf(b.d)),
        b'^' => Val::int(a.i.wrapping_pow(u32::try_from(b.i).unwrap_or(u32::MAX))),
        _ => unreachable!("binding() only admits + - * / % ^"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bc_arithmetic() {
        assert_eq!(substitute_keywords("$ncpus").unwrap(), "8");
        assert_eq!(substitute_keywords("8*1024*$pagesize").unwrap(), (8 * 1024 * 4096).to_string());
        assert_eq!(substitute_keywords("7/2+$ncpus").unwrap(), "11");
        assert_eq!(substitute_keywords("2^3^2*$ncpus/8").unwrap(), "512");
        assert!(substitute_keywords("$mb_memory*1m").is_err(), "bc has no suffixes");
        assert!(substitute_keywords("$ncpus/0").is_err());
        // no keyword: left alone (fio does not call bc)
        assert_eq!(substitute_keywords("5*1024").unwrap(), "5*1024");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = |open: &str, close: &str, n: usize| format!("{}4k{}", open.repeat(n), close.repeat(n));
        assert!(eval_parenthesised(&deep("(", ")", 100_000)).unwrap_err().contains("nested deeper"));
        assert!(eval_parenthesised(&format!("({}1)", "-".repeat(100_000))).unwrap_err().contains("nested deeper"));
        assert!(eval_parenthesised(&format!("({}1)", "1^".repeat(100_000))).unwrap_err().contains("nested deeper"));
        assert_eq!(eval_parenthesised(&deep("(", ")", 500)), Ok(4096));
        let bc = format!("$ncpus*{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(substitute_keywords(&bc).unwrap_err().contains("nested deeper"));
        assert!(substitute_keywords(&format!("$ncpus*{}1", "-".repeat(100_000))).unwrap_err().contains("nested deeper"));
        assert!(substitute_keywords(&format!("$ncpus*{}1", "1^".repeat(100_000))).unwrap_err().contains("nested deeper"));
    }

    #[test]
    fn fio_expression_precedence() {
        assert_eq!(eval_parenthesised("(2*4k)"), Ok(8192));
        assert_eq!(eval_parenthesised("(8/2%3)"), Ok(4), "% binds tighter than / in fio");
        assert_eq!(eval_parenthesised("(-2^2)"), Ok(4), "unary minus binds tightest");
        assert_eq!(eval_parenthesised("(1.5k)"), Ok(1536));
        assert_eq!(eval_parenthesised("(7/2)"), Ok(3));
        assert_eq!(eval_parenthesised("(7.0/2)*2"), Ok(7));
        assert_eq!(eval_parenthesised("(1mib)"), Ok(1_000_000));
        assert_eq!(eval_parenthesised("(0x10)"), Ok(16));
        assert_eq!(eval_parenthesised("(4*1024)m"), Ok(4 << 30));
        assert!(eval_parenthesised("(4096*1024*1024)").unwrap_err().contains("32-bit"));
        assert!(eval_parenthesised("(1-2)").is_err());
        assert!(eval_parenthesised("(1+)").is_err());
        assert!(eval_parenthesised("(2h)").is_err());
    }
}
