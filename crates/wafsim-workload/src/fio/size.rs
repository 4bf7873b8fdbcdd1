//! fio value syntax: sizes with unit suffixes (honouring `kb_base`) or in parenthesised
//! arithmetic ([`super::expr`]), percentages, zone counts, ranges, block-size lists
//! (`read,write,trim`), `bssplit`, times, booleans and integer lists.
//!
//! Every function returns `Err(expected)` with a short description of what was expected; the
//! caller adds file, line, option and value (see [`super::FioError::BadValue`]).

/// What a size option may hold before the namespace size is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A percentage (0 <= p <= 100) of the target (namespace) size, resolved later.
    Percent(f64),
    /// A number of zones (fio's `z` suffix, e.g. `size=4z`), turned into bytes with the job's
    /// `zonesize` when the job is assembled ([`SizeSpec::with_zone_size`]); an assembled
    /// [`super::FioJob`] holds one only with `zonemode=zbd` and no `zonesize`, where the
    /// drive's zone size resolves it when the job's source is built.
    Zones(u64),
}

impl SizeSpec {
    /// Resolve against the target size in bytes. Percentages are rounded down to `align`
    /// (pass 1 for no alignment). Zone counts must have been converted with
    /// [`SizeSpec::with_zone_size`]; an unconverted one resolves to 0.
    pub fn resolve(self, target: u64, align: u64) -> u64 {
        match self {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => {
                let a = align.max(1);
                percent_of(target, p).min(target) / a * a
            }
            SizeSpec::Zones(_) => 0,
        }
    }

    /// The raw (unaligned) percentage of `target`, or the byte count.
    pub fn resolve_raw(self, target: u64) -> u64 {
        match self {
            SizeSpec::Percent(p) => percent_of(target, p),
            other => other.resolve(target, 1),
        }
    }

    /// Zones become bytes (`n * zone_size`); other values are unchanged.
    pub fn with_zone_size(self, zone_size: u64) -> SizeSpec {
        match self {
            SizeSpec::Zones(n) => SizeSpec::Bytes(n.saturating_mul(zone_size)),
            other => other,
        }
    }
}

/// `target * p / 100`, rounded down (fio computes it in integers).
fn percent_of(target: u64, p: f64) -> u64 {
    if p.fract() == 0.0 {
        (target as u128 * p as u128 / 100) as u64
    } else {
        ((target as f64) * p / 100.0).floor() as u64
    }
}

/// A block-size setting for one data direction.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockSize {
    /// Every I/O has this size.
    Fixed(u64),
    /// Uniform multiple of `min` in `[min, max]` (fio `bsrange`).
    Range(u64, u64),
    /// Weighted sizes (fio `bssplit`): `(size, weight)` with weights summing to 100.
    Split(Vec<(u64, u32)>),
}

impl BlockSize {
    /// Smallest size this setting can produce.
    pub fn min(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range(lo, _) => *lo,
            BlockSize::Split(v) => v.iter().map(|p| p.0).min().unwrap_or(4096),
        }
    }
    /// Largest size this setting can produce.
    pub fn max(&self) -> u64 {
        match self {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range(_, hi) => *hi,
            BlockSize::Split(v) => v.iter().map(|p| p.0).max().unwrap_or(4096),
        }
    }
    /// Mean size (used for amount hints).
    pub fn mean(&self) -> f64 {
        match self {
            BlockSize::Fixed(b) => *b as f64,
            BlockSize::Range(lo, hi) => {
                // multiples of lo in [lo, hi]
                let n = (hi / lo).max(1);
                (*lo as f64) * (n as f64 + 1.0) / 2.0
            }
            BlockSize::Split(v) => {
                let tw: u64 = v.iter().map(|p| p.1 as u64).sum();
                if tw == 0 {
                    return self.min() as f64;
                }
                v.iter().map(|p| p.0 as f64 * p.1 as f64).sum::<f64>() / tw as f64
            }
        }
    }
}

const SIZE_EXPECTED: &str = "a size (expected e.g. 4k, 128KiB, 1g, 4096)";

/// Parse an integer with an optional unit suffix, fio style.
///
/// With `kb_base == 1024` (fio's default "compatibility mode") `k`/`kb`/`m`/`g`/`t`/`p` are
/// powers of 2 and `ki`/`kib`/`mi`... are powers of 10; with `kb_base == 1000` it is the other
/// way round (the SI/IEC convention). Suffixes are case-insensitive; a trailing `b` is allowed;
/// `0x` hexadecimal numbers are accepted.
///
/// ```
/// use wafsim_workload::fio::size::parse_size;
/// assert_eq!(parse_size("4k", 1024), Ok(4096));
/// assert_eq!(parse_size("128KB", 1024), Ok(131072));
/// assert_eq!(parse_size("1mi", 1024), Ok(1_000_000));
/// assert_eq!(parse_size("4KiB", 1000), Ok(4096));
/// assert!(parse_size("4q", 1024).is_err());
/// ```
pub fn parse_size(s: &str, kb_base: u32) -> Result<u64, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err(SIZE_EXPECTED.into());
    }
    if s.starts_with('(') {
        // The caller reports "value ... is not {this}".
        return super::expr::eval_parenthesised(s).map_err(|e| format!("a valid expression: {e}"));
    }
    let (digits, rest, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        (&h[..end], &h[end..], 16)
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        (&s[..end], &s[end..], 10)
    };
    if digits.is_empty() {
        return Err(SIZE_EXPECTED.into());
    }
    let n = u64::from_str_radix(digits, radix).map_err(|_| "a size that fits in 64 bits".to_string())?;
    let Some(mult) = suffix_multiplier(rest.trim(), kb_base) else {
        // fio would read just the leading number of "5*1024" (and silently use 5).
        if rest.contains(['+', '-', '*', '/', '^']) {
            return Err(ARITH_EXPECTED.into());
        }
        return Err(SIZE_EXPECTED.into());
    };
    n.checked_mul(mult).ok_or_else(|| "a size that fits in 64 bits".to_string())
}

const ARITH_EXPECTED: &str =
    "a size: arithmetic must be in parentheses, e.g. (5*1024)k (fio would read only the leading number)";

fn suffix_multiplier(suffix: &str, kb_base: u32) -> Option<u64> {
    let l = suffix.to_ascii_lowercase();
    if l.is_empty() || l == "b" {
        return Some(1);
    }
    let l = l.strip_suffix('b').unwrap_or(&l);
    let (letter, iec) = match l.len() {
        1 => (l.as_bytes()[0], false),
        2 if l.as_bytes()[1] == b'i' => (l.as_bytes()[0], true),
        _ => return None,
    };
    let exp = match letter {
        b'k' => 1,
        b'm' => 2,
        b'g' => 3,
        b't' => 4,
        b'p' => 5,
        _ => return None,
    };
    // kb_base=1024: plain = binary, "i" = decimal (fio compatibility mode); kb_base=1000: the
    // reverse.
    let binary = if kb_base == 1000 { iec } else { !iec };
    let base: u64 = if binary { 1024 } else { 1000 };
    Some(base.pow(exp))
}

/// A size or a percentage (`98%`, `0%`). fio takes 0 to 100 percent; above 100 its parser
/// no longer sees a percentage and reads a huge byte count instead, which is refused here.
pub fn parse_size_or_percent(s: &str, kb_base: u32) -> Result<SizeSpec, String> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| "a size or a percentage (expected e.g. 4k, 1g or 50%)".to_string())?;
        if !(0.0..=100.0).contains(&v) {
            return Err("a percentage between 0 and 100 (fio reads a larger one as a huge byte count)".into());
        }
        return Ok(SizeSpec::Percent(v));
    }
    parse_size(t, kb_base).map(SizeSpec::Bytes).map_err(|e| {
        if e == ARITH_EXPECTED || t.starts_with('(') {
            e
        } else {
            "a size or a percentage (expected e.g. 4k, 1g or 50%)".into()
        }
    })
}

/// [`parse_size_or_percent`] plus fio's zone count (`4z`, options of type
/// `FIO_OPT_STR_VAL_ZONE`: size, io_size, offset, offset_increment).
pub fn parse_size_percent_or_zones(s: &str, kb_base: u32) -> Result<SizeSpec, String> {
    let t = s.trim();
    if let Some(n) = t.strip_suffix(['z', 'Z']) {
        // fio: strtoul up to the 'z', nothing else allowed (parse.c).
        return n
            .parse::<u64>()
            .map(SizeSpec::Zones)
            .map_err(|_| "a zone count (expected e.g. 4z)".to_string());
    }
    parse_size_or_percent(t, kb_base)
}

/// Split a `read,write,trim` list following fio's rule: a missing trailing value repeats the
/// last given one, an empty value means "default" (`None`).
pub fn split_ddir(s: &str) -> [Option<&str>; 3] {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let p = if i < parts.len() { parts[i] } else { parts[parts.len() - 1] };
        *slot = if p.is_empty() { None } else { Some(p) };
    }
    out
}

/// `bs=4k,16k` style: per-direction sizes.
pub fn parse_bs_list(s: &str, kb_base: u32) -> Result<[Option<u64>; 3], String> {
    let mut out = [None; 3];
    for (i, p) in split_ddir(s).iter().enumerate() {
        if let Some(p) = p {
            let v = parse_size(p, kb_base).map_err(|e| specific_or(p, e, SIZE_EXPECTED))?;
            if v == 0 {
                return Err("a non-zero block size".into());
            }
            out[i] = Some(v);
        }
    }
    Ok(out)
}

/// One `lo-hi` or `lo:hi` range (swapped when reversed).
pub fn parse_range(s: &str, kb_base: u32) -> Result<(u64, u64), String> {
    let exp = "a size range (expected e.g. 4k-64k or 4k:64k)";
    let (a, b) = s.split_once(['-', ':']).ok_or_else(|| exp.to_string())?;
    let a = parse_size(a, kb_base).map_err(|_| exp.to_string())?;
    let b = parse_size(b, kb_base).map_err(|_| exp.to_string())?;
    if a == 0 || b == 0 {
        return Err("a range of non-zero sizes".into());
    }
    Ok((a.min(b), a.max(b)))
}

/// `bsrange=1k-4k,2k-8k`.
pub fn parse_bsrange_list(s: &str, kb_base: u32) -> Result<[Option<(u64, u64)>; 3], String> {
    let mut out = [None; 3];
    for (i, p) in split_ddir(s).iter().enumerate() {
        if let Some(p) = p {
            out[i] = Some(parse_range(p, kb_base)?);
        }
    }
    Ok(out)
}

/// A `bssplit` list: `(block size, percentage)`.
pub type Split = Vec<(u64, u32)>;

/// One direction of `bssplit`: `4k/10:64k/50:32k/` (blank percentages share the remainder
/// evenly; percentages above 100 in total are an error; a total below 100 with no blanks is
/// treated as relative weights).
pub fn parse_bssplit(s: &str, kb_base: u32) -> Result<Vec<(u64, u32)>, String> {
    let exp = "a bssplit list (expected e.g. 4k/50:64k/50)";
    let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
    for item in s.split(':') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (bs, pct) = match item.split_once('/') {
            Some((b, p)) => (b, p.trim()),
            None => (item, ""),
        };
        let bs = parse_size(bs, kb_base).map_err(|_| exp.to_string())?;
        if bs == 0 {
            return Err(exp.into());
        }
        let pct = if pct.is_empty() {
            None
        } else {
            Some(pct.parse::<u32>().map_err(|_| exp.to_string())?.min(100))
        };
        entries.push((bs, pct));
    }
    if entries.is_empty() {
        return Err(exp.into());
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    if given > 100 {
        return Err("bssplit percentages adding up to at most 100".into());
    }
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    let mut out: Vec<(u64, u32)> = Vec::with_capacity(entries.len());
    let mut rest = 100 - given;
    let mut left = missing;
    for (bs, p) in entries {
        let w = match p {
            Some(p) => p,
            None => {
                let share = rest / left;
                rest -= share;
                left -= 1;
                share
            }
        };
        out.push((bs, w));
    }
    if out.iter().all(|e| e.1 == 0) {
        return Err("bssplit with at least one non-zero percentage".into());
    }
    Ok(out)
}

/// `bssplit=...,...` per direction.
pub fn parse_bssplit_list(s: &str, kb_base: u32) -> Result<[Option<Split>; 3], String> {
    let mut out: [Option<Split>; 3] = [None, None, None];
    for (i, p) in split_ddir(s).iter().enumerate() {
        if let Some(p) = p {
            out[i] = Some(parse_bssplit(p, kb_base)?);
        }
    }
    Ok(out)
}

/// A time with optional unit (`d`, `h`, `m`, `s`/`sec`, `ms`/`msec`, `us`/`usec`, `ns`),
/// `default_unit_ns` applies when none is given. Returns nanoseconds.
///
/// ```
/// use wafsim_workload::fio::size::parse_time_ns;
/// assert_eq!(parse_time_ns("21600", 1_000_000_000), Ok(21_600_000_000_000));
/// assert_eq!(parse_time_ns("10m", 1_000_000_000), Ok(600_000_000_000));
/// assert_eq!(parse_time_ns("250ms", 1_000_000_000), Ok(250_000_000));
/// ```
pub fn parse_time_ns(s: &str, default_unit_ns: u64) -> Result<u64, String> {
    let exp = "a time (expected e.g. 60, 10m, 2h, 500ms)";
    let t = s.trim();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if end == 0 {
        return Err(exp.into());
    }
    let n: u64 = t[..end].parse().map_err(|_| exp.to_string())?;
    let unit = t[end..].trim().to_ascii_lowercase();
    let mult = match unit.as_str() {
        "" => default_unit_ns,
        "d" => 86_400_000_000_000,
        "h" => 3_600_000_000_000,
        "m" => 60_000_000_000,
        "s" | "sec" => 1_000_000_000,
        "ms" | "msec" => 1_000_000,
        "us" | "usec" => 1_000,
        "ns" | "nsec" => 1,
        _ => return Err(exp.into()),
    };
    n.checked_mul(mult).ok_or_else(|| exp.to_string())
}

/// fio booleans: `1/0`, `true/false`, `yes/no`, `on/off`.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("a boolean (expected 0 or 1)".into()),
    }
}

/// An integer that may carry a size suffix (fio `int` options accept `k`, `m`, ...).
pub fn parse_int(s: &str, kb_base: u32) -> Result<u64, String> {
    parse_size(s, kb_base).map_err(|e| specific_or(s, e, "an integer (expected e.g. 8, 1k)"))
}

/// Keep the message of an arithmetic problem (it says more than the generic expectation).
fn specific_or(s: &str, e: String, generic: &str) -> String {
    if s.trim_start().starts_with('(') || e == ARITH_EXPECTED {
        e
    } else {
        generic.to_string()
    }
}

/// Integer list with ranges: `0,2,5` or `0-3` or `1,2-4`.
///
/// ```
/// use wafsim_workload::fio::size::parse_id_list;
/// assert_eq!(parse_id_list("1,3-5"), Ok(vec![1, 3, 4, 5]));
/// ```
pub fn parse_id_list(s: &str) -> Result<Vec<u16>, String> {
    let exp = "a list of ids (expected e.g. 0,1 or 0-3)";
    let mut out = Vec::new();
    for item in s.split([',', ':']) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        if let Some((a, b)) = item.split_once('-') {
            let a: u16 = a.trim().parse().map_err(|_| exp.to_string())?;
            let b: u16 = b.trim().parse().map_err(|_| exp.to_string())?;
            if a > b || b - a > 4096 {
                return Err(exp.into());
            }
            out.extend(a..=b);
        } else {
            out.push(item.parse().map_err(|_| exp.to_string())?);
        }
    }
    if out.is_empty() {
        return Err(exp.into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes() {
        assert_eq!(parse_size("4096", 1024), Ok(4096));
        assert_eq!(parse_size("4k", 1024), Ok(4096));
        assert_eq!(parse_size("4K", 1024), Ok(4096));
        assert_eq!(parse_size("4kb", 1024), Ok(4096));
        assert_eq!(parse_size("1m", 1024), Ok(1 << 20));
        assert_eq!(parse_size("1g", 1024), Ok(1 << 30));
        assert_eq!(parse_size("1t", 1024), Ok(1 << 40));
        assert_eq!(parse_size("1p", 1024), Ok(1 << 50));
        assert_eq!(parse_size("1mi", 1024), Ok(1_000_000));
        assert_eq!(parse_size("1MiB", 1000), Ok(1 << 20));
        assert_eq!(parse_size("1MB", 1000), Ok(1_000_000));
        assert_eq!(parse_size("0x1000", 1024), Ok(4096));
        assert_eq!(parse_size("4096B", 1024), Ok(4096));
        assert!(parse_size("4q", 1024).is_err());
        assert!(parse_size("", 1024).is_err());
        assert!(parse_size("k", 1024).is_err());
        assert!(parse_size("99999999999999999999", 1024).is_err());
        assert!(parse_size("16777216p", 1024).is_err());
    }

    #[test]
    fn lists() {
        assert_eq!(parse_bs_list("4k,16k", 1024), Ok([Some(4096), Some(16384), Some(16384)]));
        assert_eq!(parse_bs_list("8k,32k,", 1024), Ok([Some(8192), Some(32768), None]));
        assert_eq!(parse_bs_list(",8k", 1024), Ok([None, Some(8192), Some(8192)]));
        assert_eq!(parse_bs_list("256k", 1024), Ok([Some(262144); 3]));
        assert_eq!(parse_range("64k-4k", 1024), Ok((4096, 65536)));
        assert_eq!(
            parse_bssplit("4k/50:1k/:32k/", 1024),
            Ok(vec![(4096, 50), (1024, 25), (32768, 25)])
        );
        assert!(parse_bssplit("4k/60:8k/60", 1024).is_err());
        assert_eq!(parse_id_list("0-3"), Ok(vec![0, 1, 2, 3]));
        assert!(parse_id_list("x").is_err());
        assert_eq!(parse_size_or_percent("98%", 1024), Ok(SizeSpec::Percent(98.0)));
        assert_eq!(SizeSpec::Percent(50.0).resolve(1 << 20, 4096), 1 << 19);
        assert_eq!(parse_size_or_percent("0%", 1024), Ok(SizeSpec::Percent(0.0)));
        assert!(parse_size_or_percent("101%", 1024).is_err());
        assert_eq!(parse_size_percent_or_zones("4z", 1024), Ok(SizeSpec::Zones(4)));
        assert!(parse_size_percent_or_zones("4kz", 1024).is_err());
        assert_eq!(parse_size("(4k*2)", 1024), Ok(8192));
        assert!(parse_size("5*1024", 1024).unwrap_err().contains("parentheses"));
    }
}
