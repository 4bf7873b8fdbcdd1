//! Quantities of the experiment document, parsed when the document is read: a size, an amount
//! (bytes or a multiple), a share (bytes or a part of something), a duration, a rate, a window
//! (bytes, a multiple or a duration). Each keeps the text as written, which is what messages
//! and notes show, beside its value, which is what the plan uses. A bad quantity is refused by
//! the deserializer, so the error carries the key and, where the document is read from its
//! text, the line and column (`load::located`).
//!
//! ```
//! use wafsim_experiment::schema::{Amount, AmountOf, Bytes, Duration};
//! let b: Bytes = "256MiB".parse().unwrap();
//! assert_eq!(b.get(), 256 << 20);
//! assert_eq!(b.to_string(), "256MiB");
//! let a: Amount = "3x".parse().unwrap();
//! assert_eq!(*a.value(), AmountOf::Multiple(3.0));
//! assert_eq!(a.of(1000), 3000);
//! let d: Duration = "937.5us".parse().unwrap();
//! assert_eq!(d.ns(), 937_500);
//! assert!("12QB".parse::<Bytes>().unwrap_err().contains("12QB"));
//! ```

use serde::{Deserialize, Deserializer};
use std::fmt;
use std::str::FromStr;
use wafsim_core::units::parse_bytes;

/// The grammar of one kind of quantity: what its text parses to.
pub trait Grammar {
    /// The parsed value.
    type Value: Clone + fmt::Debug + PartialEq;
    /// The value of `text`, or what is wrong with it (the text is quoted by the caller).
    fn parse(text: &str) -> Result<Self::Value, String>;
}

/// A quantity as written and as parsed; see the module doc. `G` is its grammar. It shows
/// (`Display`) as its text, and debugs as its text quoted, as the string it was.
#[derive(Clone, PartialEq)]
pub struct Quantity<G: Grammar> {
    text: String,
    value: G::Value,
}

impl<G: Grammar> Quantity<G> {
    /// The parsed value.
    pub fn value(&self) -> &G::Value {
        &self.value
    }
    /// The text as written (or as a scaled run rewrote it).
    pub fn text(&self) -> &str {
        &self.text
    }
    /// A quantity of a value the program computed, written as `text`.
    pub fn computed(value: G::Value, text: String) -> Self {
        Quantity { text, value }
    }
}

impl<G: Grammar> FromStr for Quantity<G> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match G::parse(s) {
            Ok(value) => Ok(Quantity { text: s.to_string(), value }),
            Err(e) => Err(format!("{s:?}: {e}")),
        }
    }
}

impl<G: Grammar> fmt::Debug for Quantity<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl<G: Grammar> fmt::Display for Quantity<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de, G: Grammar> Deserialize<'de> for Quantity<G> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Grammar of [`Bytes`].
#[derive(Clone, Debug, PartialEq)]
pub enum ByteSize {}
impl Grammar for ByteSize {
    type Value = u64;
    fn parse(text: &str) -> Result<u64, String> {
        parse_bytes(text).map_err(|e| e.reason.to_string() + " (expected e.g. \"4KiB\", \"256MiB\", \"940GB\", \"7.68TB\" or a plain byte count)")
    }
}

/// A size in bytes: "7.68TB" (SI), "256GiB" (binary) or a plain byte count.
pub type Bytes = Quantity<ByteSize>;

impl Bytes {
    /// Bytes.
    pub fn get(&self) -> u64 {
        self.value
    }
    /// `b` bytes, written as a plain byte count (as a scaled run writes its sizes).
    pub fn exact(b: u64) -> Self {
        Quantity::computed(b, b.to_string())
    }
}

/// What an [`Amount`] says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AmountOf {
    /// So many bytes.
    Bytes(u64),
    /// A multiple (> 0) of a base the key names (a namespace, the drive).
    Multiple(f64),
}

/// Grammar of [`Amount`].
#[derive(Clone, Debug, PartialEq)]
pub enum AmountGrammar {}
impl Grammar for AmountGrammar {
    type Value = AmountOf;
    fn parse(text: &str) -> Result<AmountOf, String> {
        if let Some(m) = text.trim().strip_suffix('x') {
            let m: f64 = m.trim().parse().map_err(|_| "expected bytes (\"100GiB\") or a multiple (\"3x\")".to_string())?;
            if !(m > 0.0) || !m.is_finite() {
                return Err("a multiple must be > 0".into());
            }
            return Ok(AmountOf::Multiple(m));
        }
        ByteSize::parse(text).map(AmountOf::Bytes).map_err(|e| format!("{e}; or a multiple (\"3x\")"))
    }
}

/// An amount of bytes: bytes ("100GiB") or a multiple of a base ("3x", "0.25x").
pub type Amount = Quantity<AmountGrammar>;

impl Amount {
    /// Bytes of this amount with multiples taken of `base` bytes.
    pub fn of(&self, base: u64) -> u64 {
        match self.value {
            AmountOf::Bytes(b) => b,
            AmountOf::Multiple(m) => (m * base as f64) as u64,
        }
    }
}

/// What a [`Share`] says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShareOf {
    /// So many bytes.
    Bytes(u64),
    /// A percentage of a base the key names ("50%").
    Percent(f64),
    /// A fraction of a base the key names: a plain number up to 1 ("0.5").
    Fraction(f64),
}

/// Grammar of [`Share`].
#[derive(Clone, Debug, PartialEq)]
pub enum ShareGrammar {}
impl Grammar for ShareGrammar {
    type Value = ShareOf;
    fn parse(text: &str) -> Result<ShareOf, String> {
        let t = text.trim();
        if let Some(p) = t.strip_suffix('%') {
            return match p.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(ShareOf::Percent(v)),
                _ => Err("expected a percentage such as \"5%\", or bytes such as \"1GiB\"".into()),
            };
        }
        if let Ok(v) = t.parse::<f64>() {
            if (0.0..=1.0).contains(&v) {
                return Ok(ShareOf::Fraction(v));
            }
        }
        ByteSize::parse(t).map(ShareOf::Bytes).map_err(|e| format!("{e}, a percentage (\"5%\") or a fraction up to 1 (\"0.05\")"))
    }
}

/// A share of a base the key names: bytes ("40GB"), a percentage ("4.5%") or a fraction up
/// to 1 ("0.5").
pub type Share = Quantity<ShareGrammar>;

impl Share {
    /// Bytes of this share of `base` bytes.
    pub fn of(&self, base: u64) -> u64 {
        match self.value {
            ShareOf::Bytes(b) => b,
            ShareOf::Percent(p) => (base as f64 * p / 100.0) as u64,
            ShareOf::Fraction(f) => (base as f64 * f) as u64,
        }
    }
}

/// Grammar of [`Duration`].
#[derive(Clone, Debug, PartialEq)]
pub enum DurationGrammar {}
impl Grammar for DurationGrammar {
    type Value = u64;
    fn parse(text: &str) -> Result<u64, String> {
        duration_ns(text)
    }
}

/// A duration: "50us", "937.5us", "5ms", "21600s", "2m" or "2min" (minutes), "6h", or plain
/// nanoseconds.
pub type Duration = Quantity<DurationGrammar>;

impl Duration {
    /// Nanoseconds.
    pub fn ns(&self) -> u64 {
        self.value
    }
}

/// Nanoseconds of a duration (see [`Duration`]), or what is wrong with it.
fn duration_ns(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| "expected a non-negative number with a unit, e.g. \"50us\", \"5ms\", \"6h\"".to_string())?;
    let mult = match unit.trim() {
        "" | "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        u => return Err(format!("unknown unit {u:?} (ns, us, ms, s, m, h)")),
    };
    let ns = (v * mult).round();
    // `as u64` would saturate silently: a duration beyond 2^64 ns (584 years) is a typo.
    if !(ns < u64::MAX as f64) {
        return Err("longer than 584 years (2^64 ns)".into());
    }
    Ok(ns as u64)
}

/// Slowest and fastest rate a link, bus or device may have: 1 B/s to 1 PB/s. A rate of 0 (or
/// negative, NaN, infinite) would make transfers take forever or no time at all.
const RATE_RANGE: (f64, f64) = (1.0, 1e15);

/// Grammar of [`Rate`].
#[derive(Clone, Debug, PartialEq)]
pub enum RateGrammar {}
impl Grammar for RateGrammar {
    type Value = f64;
    fn parse(text: &str) -> Result<f64, String> {
        rate_bytes_per_s(text)
    }
}

/// A rate in bytes per second: "2.4GB/s", "235.7MiB/s", "1600MT/s" (an 8-bit NAND bus: MT/s x
/// 1e6 bytes/s) or a plain number; from 1 B/s to 1 PB/s ([`RATE_RANGE`]).
pub type Rate = Quantity<RateGrammar>;

impl<G: Grammar<Value = f64>> Quantity<G> {
    /// Bytes per second (of a [`Rate`] or a [`HostLink`]).
    pub fn bytes_per_s(&self) -> f64 {
        self.value
    }
}

/// Bytes per second of a rate (see [`Rate`]), or what is wrong with it; 0, negative, NaN and
/// infinite rates are refused.
fn rate_bytes_per_s(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected a rate from 1 B/s to 1 PB/s (e.g. \"1600MT/s\", \"2GB/s\", \"235MiB/s\")";
    // Said before the unit is read: "-2GB/s" is a negative rate, not an unknown unit "-2GB".
    let v = if s.trim_start().starts_with('-') { -1.0 } else { rate_value(s)? };
    if !(RATE_RANGE.0..=RATE_RANGE.1).contains(&v) {
        return Err(EXPECTED.into());
    }
    Ok(v)
}

fn rate_value(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if let Some(mt) = t.strip_suffix("MT/s") {
        return mt.trim().parse::<f64>().map(|v| v * 1e6).map_err(|_| "not a rate".to_string());
    }
    if let Some(b) = t.strip_suffix("/s") {
        // A rate need not be a whole number of bytes per second ("235.7MiB/s").
        let b = b.trim();
        let split = b.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(b.len());
        let (num, unit) = b.split_at(split);
        let unit = parse_bytes(&format!("1{}", unit.trim())).map_err(|e| e.to_string())?;
        return num.parse::<f64>().map(|v| v * unit as f64).map_err(|_| "expected a number before the unit".to_string());
    }
    t.parse::<f64>().map_err(|_| "expected e.g. \"1600MT/s\" or \"2GB/s\"".to_string())
}

/// Grammar of [`HostLink`].
#[derive(Clone, Debug, PartialEq)]
pub enum HostLinkGrammar {}
impl Grammar for HostLinkGrammar {
    type Value = f64;
    fn parse(text: &str) -> Result<f64, String> {
        let Some(rest) = text.strip_prefix("pcie") else { return rate_bytes_per_s(text) };
        if let Some((g, l)) = rest.split_once('x') {
            if let (Ok(g), Ok(l)) = (g.parse(), l.parse::<u32>()) {
                if !(1..=32).contains(&l) {
                    return Err(format!("{l} lanes; expected 1 to 32 (e.g. \"pcie4x4\")"));
                }
                return wafsim_time::config::pcie_bytes_per_sec(g, l).ok_or_else(|| "PCIe generation 3 to 6".to_string());
            }
        }
        Err("expected e.g. \"pcie4x4\"".into())
    }
}

/// A host interface: "pcie3x4", "pcie4x4", "pcie5x4", ... (generation and lanes), or a rate
/// like "7GB/s".
pub type HostLink = Quantity<HostLinkGrammar>;

/// What a [`Window`] says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WindowOf {
    /// Host bytes at full scale.
    Bytes(u64),
    /// A multiple of the drives' logical capacity.
    Multiple(f64),
    /// Nanoseconds of model time, or of host writes at a stated rate.
    Duration(u64),
}

/// Grammar of [`Window`].
#[derive(Clone, Debug, PartialEq)]
pub enum WindowGrammar {}
impl Grammar for WindowGrammar {
    type Value = WindowOf;
    fn parse(text: &str) -> Result<WindowOf, String> {
        let t = text.trim();
        if t.ends_with('x') {
            return match AmountGrammar::parse(t)? {
                AmountOf::Multiple(m) => Ok(WindowOf::Multiple(m)),
                AmountOf::Bytes(b) => Ok(WindowOf::Bytes(b)),
            };
        }
        if is_duration(t) {
            return duration_ns(t).map(WindowOf::Duration);
        }
        ByteSize::parse(t).map(WindowOf::Bytes).map_err(|e| format!("{e}; or a multiple \"0.5x\" or a duration \"5h\""))
    }
}

/// Where a measurement window starts or a checkpoint falls: host bytes ("300GB"), a multiple
/// of the drives' logical capacity ("0.15x") or a duration ("5h", "90min", "30s").
pub type Window = Quantity<WindowGrammar>;

/// Whether a window or checkpoint is given as a duration ("5h", "90min", "30s"), not as bytes
/// or a multiple of the capacity.
fn is_duration(t: &str) -> bool {
    t.ends_with('h') || t.ends_with("min") || (t.ends_with('s') && !t.ends_with("/s"))
}

/// A key that is a quantity or the word "none": `datapath` (not modelled, no limit), dm-zoned's
/// `cache_size` (no cache device).
#[derive(Clone, Debug, PartialEq)]
pub enum OrNone<G: Grammar> {
    /// "none".
    None,
    /// A quantity.
    Given(Quantity<G>),
}

impl<G: Grammar> OrNone<G> {
    /// The quantity, if one is given.
    pub fn given(&self) -> Option<&Quantity<G>> {
        match self {
            OrNone::None => None,
            OrNone::Given(q) => Some(q),
        }
    }
}

impl<'de, G: Grammar> Deserialize<'de> for OrNone<G> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "none" {
            return Ok(OrNone::None);
        }
        s.parse().map(OrNone::Given).map_err(|e: String| serde::de::Error::custom(format!("{e}, or \"none\"")))
    }
}

/// A rate or "none".
pub type RateOrNone = OrNone<RateGrammar>;

/// A size or "none".
pub type BytesOrNone = OrNone<ByteSize>;

/// A duration or "none".
pub type DurationOrNone = OrNone<DurationGrammar>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_grammar_reads_what_its_keys_take_and_quotes_what_it_refuses() {
        assert_eq!("7.68TB".parse::<Bytes>().unwrap().get(), 7_680_000_000_000);
        assert_eq!("0.25x".parse::<Amount>().unwrap().of(1 << 20), 1 << 18);
        assert_eq!("100GiB".parse::<Amount>().unwrap().of(1), 100 << 30);
        assert!("0x".parse::<Amount>().unwrap_err().contains("> 0"));
        assert_eq!("50%".parse::<Share>().unwrap().of(1000), 500);
        assert_eq!("0.5".parse::<Share>().unwrap().of(1000), 500);
        assert_eq!("1TB".parse::<Share>().unwrap().of(1000), 1_000_000_000_000);
        assert_eq!("0".parse::<Share>().unwrap().of(1000), 0);
        assert_eq!("2min".parse::<Duration>().unwrap().ns(), 120_000_000_000);
        assert_eq!("1600MT/s".parse::<Rate>().unwrap().bytes_per_s(), 1.6e9);
        assert_eq!("235.7MiB/s".parse::<Rate>().unwrap().bytes_per_s(), 235.7 * 1048576.0);
        assert!("-2GB/s".parse::<Rate>().unwrap_err().contains("1 B/s to 1 PB/s"));
        assert!("0B/s".parse::<Rate>().is_err());
        assert!(("pcie4x4".parse::<HostLink>().unwrap().bytes_per_s() - 7.877e9).abs() < 1e7);
        assert!("pcie4x64".parse::<HostLink>().unwrap_err().contains("lanes"));
        assert_eq!(*"5h".parse::<Window>().unwrap().value(), WindowOf::Duration(5 * 3600 * 1_000_000_000));
        assert_eq!(*"0.15x".parse::<Window>().unwrap().value(), WindowOf::Multiple(0.15));
        assert_eq!(*"300GB".parse::<Window>().unwrap().value(), WindowOf::Bytes(300_000_000_000));
        let e = "5 parsecs".parse::<Window>().unwrap_err();
        assert!(e.contains("5 parsecs") && e.contains("unit"), "{e}");
    }

    #[test]
    fn a_quantity_shows_the_text_it_was_written_as() {
        let b: Bytes = " 4KiB".parse().unwrap();
        assert_eq!((b.get(), b.to_string()), (4096, " 4KiB".to_string()));
        assert_eq!(Bytes::exact(12345).to_string(), "12345");
        let r: RateOrNone = toml::Value::String("none".into()).try_into().unwrap();
        assert_eq!(r, RateOrNone::None);
        let e = toml::Value::String("fast".into()).try_into::<RateOrNone>().unwrap_err().to_string();
        assert!(e.contains("\"fast\"") && e.contains("\"none\""), "{e}");
    }
}
