//! Byte sizes as storage people write them: "7.68TB" is SI (10^12), "256GiB" is binary (2^30).

use std::fmt;

/// Error from [`parse_bytes`]; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size {input:?}: {reason} (expected e.g. \"4KiB\", \"256MiB\", \"940GB\", \"7.68TB\" or a plain byte count)")]
pub struct SizeError {
    /// The text as given.
    pub input: String,
    /// What is wrong with it (no number, unknown unit suffix, too large, ...).
    pub reason: &'static str,
}

/// `1234567` as `1,234,567` (counts and rates in messages and tables).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes with two decimals in binary units (GiB etc.), the way capacity tables read.
pub fn human(b: u64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", U[i])
    }
}

/// Parse a byte size. SI suffixes (kB/KB, MB, GB, TB, PB) are powers of 1000, binary suffixes
/// (KiB, MiB, GiB, TiB, PiB) powers of 1024, "B" or no suffix means bytes. Case-insensitive,
/// fractions allowed ("7.68TB") when the result is a whole number of bytes.
///
/// ```
/// use wafsim_core::units::parse_bytes;
/// assert_eq!(parse_bytes("7.68TB").unwrap(), 7_680_000_000_000);
/// assert_eq!(parse_bytes("256GiB").unwrap(), 256 << 30);
/// assert_eq!(parse_bytes("4096").unwrap(), 4096);
/// ```
pub fn parse_bytes(input: &str) -> Result<u64, SizeError> {
    let err = |reason| SizeError { input: input.to_string(), reason };
    let s = input.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() {
        return Err(err("no number"));
    }
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "m" | "mb" => 1000u64.pow(2),
        "g" | "gb" => 1000u64.pow(3),
        "t" | "tb" => 1000u64.pow(4),
        "p" | "pb" => 1000u64.pow(5),
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "pib" => 1 << 50,
        _ => return Err(err("unknown unit suffix")),
    };
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac_part.contains('.') {
        return Err(err("more than one decimal point"));
    }
    let int: u64 = if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| err("number too large"))? };
    let mut total = int.checked_mul(mult).ok_or_else(|| err("number too large"))?;
    if !frac_part.is_empty() {
        // Exact decimal arithmetic: frac * mult / 10^digits must be whole.
        let digits = frac_part.len() as u32;
        if digits > 18 {
            return Err(err("too many decimal digits"));
        }
        let frac: u128 = frac_part.parse().map_err(|_| err("bad fraction"))?;
        let scale = 10u128.pow(digits);
        let num = frac * mult as u128;
        if num % scale != 0 {
            return Err(err("not a whole number of bytes"));
        }
        total = total
            .checked_add((num / scale) as u64)
            .ok_or_else(|| err("number too large"))?;
    }
    Ok(total)
}

/// A byte count that prints in the unit a human would pick (binary units for powers of two,
/// SI otherwise), e.g. `Bytes(268435456)` prints "256 MiB", `Bytes(7_680_000_000_000)` "7.68 TB".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        const BIN: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
        const SI: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
        if b < 1000 {
            return write!(f, "{b} B");
        }
        // Prefer a binary unit when it divides exactly; storage sizes like 256 MiB read better so.
        if let Some((i, name)) = BIN.iter().enumerate().rev().find(|(i, _)| b >= 1u64 << (10 * (i + 1))) {
            let unit = 1u64 << (10 * (i + 1));
            if b % unit == 0 {
                return write!(f, "{} {name}", b / unit);
            }
        }
        let mut i = 0;
        let mut unit = 1000f64;
        while i + 1 < SI.len() && b as f64 >= unit * 1000.0 {
            unit *= 1000.0;
            i += 1;
        }
        let v = b as f64 / unit;
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{s} {}", SI[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_and_binary() {
        assert_eq!(parse_bytes("940GB").unwrap(), 940_000_000_000);
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("1.5 KiB").unwrap(), 1536);
        assert_eq!(parse_bytes("128k").unwrap(), 128_000);
        assert!(parse_bytes("1.1B").is_err());
        assert!(parse_bytes("12XB").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("99999999999999PiB").is_err());
    }

    #[test]
    fn display() {
        assert_eq!(Bytes(256 << 20).to_string(), "256 MiB");
        assert_eq!(Bytes(7_680_000_000_000).to_string(), "7.68 TB");
        assert_eq!(Bytes(512).to_string(), "512 B");
    }
}
