//! Reading nvme-cli output back: the write counters a WAF measurement needs.
//!
//! Accepted, in any order and concatenated: `nvme smart-log` text (nvme-cli 1.x
//! `data_units_written : 1,234` and 2.x/3.x `Data Units Written : 1,234 (631.81 MB)`) and JSON,
//! `nvme ocp smart-add-log` text (`Physical media units written - HI LO`, also the WDC
//! plugin's `... : HI LO`) and JSON (v1 labels and v2 keys, `{"hi":..,"lo":..}`), and
//! `nvme fdp stats` text and JSON. Lines nvme-cli prints that carry none of these counters
//! (other fields, shell prompts, `NVMe Status:` lines) are skipped; a line that names a counter
//! but whose value does not parse is an error carrying its line number.

use super::json::{parse_value_at, PJ};
use super::smart::DATA_UNIT_BYTES;
use std::fmt;

/// Which kind of nvme-cli output a counter came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `nvme smart-log` text.
    SmartLogText,
    /// `nvme smart-log -o json`.
    SmartLogJson,
    /// `nvme ocp smart-add-log` text.
    OcpText,
    /// `nvme ocp smart-add-log -o json`.
    OcpJson,
    /// `nvme fdp stats` text.
    FdpStatsText,
    /// `nvme fdp stats -o json`.
    FdpStatsJson,
}

/// The write counters found in one capture of nvme-cli output.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// SMART Data Units Written (thousands of 512-byte units).
    pub data_units_written: Option<u128>,
    /// SMART Data Units Read (thousands of 512-byte units).
    pub data_units_read: Option<u128>,
    /// SMART Host Write Commands.
    pub host_write_commands: Option<u128>,
    /// OCP C0h Physical Media Units Written, bytes.
    pub physical_media_units_written: Option<u128>,
    /// OCP C0h Physical Media Units Read, bytes.
    pub physical_media_units_read: Option<u128>,
    /// FDP Host Bytes with Metadata Written.
    pub hbmw: Option<u128>,
    /// FDP Media Bytes with Metadata Written.
    pub mbmw: Option<u128>,
    /// FDP Media Bytes Erased.
    pub mbe: Option<u128>,
    /// The kinds of output recognised, in the order met (each once).
    pub sources: Vec<Source>,
}

/// Which input of a WAF computation an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The earlier capture.
    Before,
    /// The later capture.
    After,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Before => "BEFORE",
            Side::After => "AFTER",
        })
    }
}

/// Why nvme-cli output could not be read or a WAF not computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The input concerned, when known (set by [`waf`] and [`waf_from_texts`]).
    pub side: Option<Side>,
    /// 1-based line of the input where parsing failed, when a line is to blame.
    pub line: Option<usize>,
    /// What went wrong, naming the field.
    pub message: String,
}

impl ParseError {
    fn at(line: usize, message: impl Into<String>) -> Self {
        ParseError { side: None, line: Some(line), message: message.into() }
    }

    fn side(side: Side, message: impl Into<String>) -> Self {
        ParseError { side: Some(side), line: None, message: message.into() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.side {
            write!(f, "{s}: ")?;
        }
        if let Some(l) = self.line {
            write!(f, "line {l}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Copy)]
enum Field {
    Duw,
    Dur,
    Hwc,
    Pmuw,
    Pmur,
    Hbmw,
    Mbmw,
    Mbe,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Duw => "Data Units Written",
            Field::Dur => "Data Units Read",
            Field::Hwc => "host_write_commands",
            Field::Pmuw => "Physical media units written",
            Field::Pmur => "Physical media units read",
            Field::Hbmw => "hbmw",
            Field::Mbmw => "mbmw",
            Field::Mbe => "mbe",
        }
    }
}

/// Value syntax of a text label.
#[derive(Clone, Copy)]
enum Syntax {
    /// One integer, thousands separators allowed, optionally followed by `(...)` / `[...]`.
    Grouped,
    /// The OCP plugins' `HI LO` pair of 64-bit halves (a single integer is taken whole).
    HiLo,
}

/// Text labels, exactly as nvme-cli (or smartctl, for Data Units) prints them; case matters so
/// vendor plugins' look-alike labels with other meanings are not picked up.
const TEXT_LABELS: &[(&str, Field, Syntax, Source)] = &[
    ("Data Units Written", Field::Duw, Syntax::Grouped, Source::SmartLogText),
    ("data_units_written", Field::Duw, Syntax::Grouped, Source::SmartLogText),
    ("Data Units Read", Field::Dur, Syntax::Grouped, Source::SmartLogText),
    ("data_units_read", Field::Dur, Syntax::Grouped, Source::SmartLogText),
    ("host_write_commands", Field::Hwc, Syntax::Grouped, Source::SmartLogText),
    ("Physical media units written", Field::Pmuw, Syntax::HiLo, Source::OcpText),
    ("Physical media units read", Field::Pmur, Syntax::HiLo, Source::OcpText),
    ("Host Bytes with Metadata Written (HBMW)", Field::Hbmw, Syntax::Grouped, Source::FdpStatsText),
    (
        "Media Bytes with Metadata Written (MBMW)",
        Field::Mbmw,
        Syntax::Grouped,
        Source::FdpStatsText,
    ),
    ("Media Bytes Erased (MBE)", Field::Mbe, Syntax::Grouped, Source::FdpStatsText),
];

/// JSON keys: smart-log, OCP v1 and v2, FDP stats.
const JSON_KEYS: &[(&str, Field, Source)] = &[
    ("data_units_written", Field::Duw, Source::SmartLogJson),
    ("data_units_read", Field::Dur, Source::SmartLogJson),
    ("host_write_commands", Field::Hwc, Source::SmartLogJson),
    ("Physical media units written", Field::Pmuw, Source::OcpJson),
    ("physical_media_units_written", Field::Pmuw, Source::OcpJson),
    ("Physical media units read", Field::Pmur, Source::OcpJson),
    ("physical_media_units_read", Field::Pmur, Source::OcpJson),
    ("hbmw", Field::Hbmw, Source::FdpStatsJson),
    ("mbmw", Field::Mbmw, Source::FdpStatsJson),
    ("mbe", Field::Mbe, Source::FdpStatsJson),
];

impl Snapshot {
    fn slot(&mut self, f: Field) -> &mut Option<u128> {
        match f {
            Field::Duw => &mut self.data_units_written,
            Field::Dur => &mut self.data_units_read,
            Field::Hwc => &mut self.host_write_commands,
            Field::Pmuw => &mut self.physical_media_units_written,
            Field::Pmur => &mut self.physical_media_units_read,
            Field::Hbmw => &mut self.hbmw,
            Field::Mbmw => &mut self.mbmw,
            Field::Mbe => &mut self.mbe,
        }
    }

    /// Records a value; the same counter twice must agree, since two different values mean
    /// the capture mixes devices or moments and any WAF from it would be meaningless.
    fn set(&mut self, f: Field, v: u128, src: Source, line: usize) -> Result<(), ParseError> {
        let slot = self.slot(f);
        match *slot {
            Some(old) if old != v => {
                return Err(ParseError::at(
                    line,
                    format!("'{}' given twice with different values ({old}, then {v})", f.name()),
                ))
            }
            _ => *slot = Some(v),
        }
        if !self.sources.contains(&src) {
            self.sources.push(src);
        }
        Ok(())
    }
}

/// Reads the write counters out of nvme-cli output (see the module doc for the accepted
/// forms). Text without any recognised counter is an error, so an empty or wrong file is
/// caught here rather than as a missing field later.
pub fn parse_snapshot(text: &str) -> Result<Snapshot, ParseError> {
    let mut snap = Snapshot::default();
    let mut pos = 0usize;
    let mut line_no = 1usize;
    while pos < text.len() {
        let end = text[pos..].find('\n').map(|i| pos + i).unwrap_or(text.len());
        let line = &text[pos..end];
        let trimmed = line.trim_start();
        // nvme-cli's JSON is always an object; `[` also opens vendor text lines
        // (`[015:000] PhysicallyWrittenBytes`), so only `{` starts JSON.
        if trimmed.starts_with('{') {
            let start = pos + (line.len() - trimmed.len());
            let (v, after) =
                parse_value_at(text, start, line_no).map_err(|e| ParseError::at(e.line, e.msg))?;
            scan_json(&v, &mut snap)?;
            line_no += text[start..after].matches('\n').count();
            // Whatever follows the closing brace on its line is ignored, like the rest of a
            // line nvme-cli did not write.
            pos = text[after..].find('\n').map(|i| after + i + 1).unwrap_or(text.len());
            line_no += 1;
            continue;
        }
        scan_text_line(line, line_no, &mut snap)?;
        pos = end + 1;
        line_no += 1;
    }
    if snap.sources.is_empty() {
        return Err(ParseError {
            side: None,
            line: None,
            message: "no nvme-cli smart-log, ocp smart-add-log or fdp stats counters found".into(),
        });
    }
    Ok(snap)
}

fn scan_text_line(line: &str, no: usize, snap: &mut Snapshot) -> Result<(), ParseError> {
    let t = line.trim();
    for &(label, field, syntax, src) in TEXT_LABELS {
        let Some(rest) = t.strip_prefix(label) else { continue };
        // The label must end here: "Data Units Read" must not match "Data Units Readable".
        let Some(first) = rest.chars().next() else { continue };
        if !(first.is_whitespace() || first == ':' || first == '-') {
            continue;
        }
        let rest = rest.trim_start();
        let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix('-')).unwrap_or(rest);
        let value = rest.trim();
        let v = match syntax {
            Syntax::Grouped => grouped(value),
            Syntax::HiLo => hi_lo(value),
        }
        .map_err(|why| ParseError::at(no, format!("'{label}': {why}")))?;
        return snap.set(field, v, src, no);
    }
    Ok(())
}

/// An integer with thousands separators (any locale's), then optionally ` (…)` or ` […]`.
fn grouped(value: &str) -> Result<u128, String> {
    let num = value.split(['(', '[']).next().unwrap_or("").trim();
    if num.is_empty() {
        return Err("no value".into());
    }
    let ok_sep = |c: char| matches!(c, ',' | '.' | '\'' | '’' | ' ' | '\u{a0}' | '\u{202f}');
    let chars: Vec<char> = num.chars().collect();
    let bad = chars.iter().any(|&c| !(c.is_ascii_digit() || ok_sep(c)))
        || !chars[0].is_ascii_digit()
        || !chars[chars.len() - 1].is_ascii_digit();
    if bad {
        return Err(format!("'{num}' is not a number"));
    }
    // Separators must group the digits in threes, with one separator throughout: "1,5" is
    // not 15 (a decimal comma, or a typing slip), and "1,234.567" mixes two conventions.
    // nvme-cli itself groups irregularly with a multi-byte separator (see `l10n`): its exact
    // form is accepted too.
    let digits: String = chars.iter().filter(|c| c.is_ascii_digit()).collect();
    let value = digits.parse::<u128>().map_err(|_| format!("'{num}' does not fit in 128 bits"))?;
    let seps: Vec<char> = chars.iter().copied().filter(|&c| !c.is_ascii_digit()).collect();
    if let Some(&first) = seps.first() {
        if seps.iter().any(|&c| c != first) {
            return Err(format!(
                "'{num}' mixes separators ({}): expected one thousands separator throughout, e.g. 1,234,567",
                seps.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", ")
            ));
        }
        let groups: Vec<&str> = num.split(first).collect();
        let lead_ok = (1..=3).contains(&groups[0].len());
        let nvme_cli_form = first.len_utf8() > 1 && super::fmt::l10n(value, &first.to_string()) == num;
        if !nvme_cli_form && (!lead_ok || groups[1..].iter().any(|g| g.len() != 3)) {
            return Err(format!(
                "'{num}' is not grouped in thousands: with a separator ('{first}') the first group has 1 to 3 digits and every later group exactly 3 (e.g. 1{first}234{first}567)"
            ));
        }
    }
    Ok(value)
}

/// `HI LO` (two 64-bit halves) or one integer.
fn hi_lo(value: &str) -> Result<u128, String> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let int = |s: &str| -> Result<u128, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("'{s}' is not a number"));
        }
        s.parse::<u128>().map_err(|_| format!("'{s}' does not fit in 128 bits"))
    };
    match parts.as_slice() {
        [one] => int(one),
        [hi, lo] => {
            let (h, l) = (int(hi)?, int(lo)?);
            if h > u64::MAX as u128 || l > u64::MAX as u128 {
                return Err(format!("'{value}': each half must fit in 64 bits"));
            }
            Ok((h << 64) | l)
        }
        [] => Err("no value".into()),
        _ => Err(format!("'{value}' is not 'HI LO'")),
    }
}

/// Walks every object (nvme-cli's are flat, but captures sometimes wrap them) for known keys.
fn scan_json(v: &PJ, snap: &mut Snapshot) -> Result<(), ParseError> {
    match v {
        PJ::Obj(kv) => {
            for (k, line, val) in kv {
                if let Some(&(_, field, src)) = JSON_KEYS.iter().find(|(key, _, _)| key == k) {
                    let n = json_u128(val, matches!(field, Field::Pmuw | Field::Pmur))
                        .map_err(|why| ParseError::at(*line, format!("\"{k}\": {why}")))?;
                    snap.set(field, n, src, *line)?;
                } else {
                    scan_json(val, snap)?;
                }
            }
            Ok(())
        }
        PJ::Arr(items) => items.iter().try_for_each(|i| scan_json(i, snap)),
        _ => Ok(()),
    }
}

/// A JSON integer: a number, a decimal string (json-c before 0.14 wrote 64-bit values as
/// strings), or for the OCP media counters an object {"hi": .., "lo": ..}.
fn json_u128(v: &PJ, hilo_ok: bool) -> Result<u128, String> {
    let int = |s: &str| -> Result<u128, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("'{s}' is not a non-negative integer"));
        }
        s.parse::<u128>().map_err(|_| format!("'{s}' does not fit in 128 bits"))
    };
    match v {
        PJ::Num(s) | PJ::Str(s) => int(s),
        PJ::Obj(kv) if hilo_ok => {
            let get = |name: &str| {
                kv.iter()
                    .find(|(k, _, _)| k == name)
                    .map(|(_, _, v)| v)
                    .ok_or_else(|| format!("no \"{name}\" half"))
            };
            let hi = json_u128(get("hi")?, false)?;
            let lo = json_u128(get("lo")?, false)?;
            if hi > u64::MAX as u128 || lo > u64::MAX as u128 {
                return Err("each of \"hi\" and \"lo\" must fit in 64 bits".into());
            }
            Ok((hi << 64) | lo)
        }
        _ => Err("not an integer".into()),
    }
}

/// How a [`WafResult`] was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WafMethod {
    /// FDP statistics: delta MBMW / delta HBMW (both bytes, exact).
    FdpStats,
    /// OCP C0h Physical Media Units Written (bytes) over SMART Data Units Written x 512,000;
    /// the published method for drives without FDP. Data units are rounded up by the drive,
    /// so the host side is exact only to within 512,000 bytes per capture.
    SmartAndOcp,
}

/// Write amplification between two captures.
#[derive(Debug, Clone, PartialEq)]
pub struct WafResult {
    /// Which counters were used.
    pub method: WafMethod,
    /// Host-side delta in the counter's own unit: HBMW bytes, or SMART data units.
    pub host_delta: u128,
    /// Media-side delta: MBMW bytes, or physical media units written (bytes).
    pub media_delta: u128,
    /// Host bytes written between the captures.
    pub host_bytes: u128,
    /// Media bytes written between the captures.
    pub media_bytes: u128,
    /// `media_bytes / host_bytes`.
    pub waf: f64,
}

/// WAF between two snapshots: FDP statistics when both have HBMW and MBMW, else OCP physical
/// media units written over SMART data units written. Errors name the missing field and the
/// input that lacks it, and refuse counters that went backwards or no host writes.
pub fn waf(before: &Snapshot, after: &Snapshot) -> Result<WafResult, ParseError> {
    let fdp = |s: &Snapshot| s.hbmw.is_some() && s.mbmw.is_some();
    let smart =
        |s: &Snapshot| s.data_units_written.is_some() && s.physical_media_units_written.is_some();
    if fdp(before) && fdp(after) {
        let host = delta(before.hbmw, after.hbmw, "hbmw")?;
        let media = delta(before.mbmw, after.mbmw, "mbmw")?;
        return finish(WafMethod::FdpStats, host, media, host, media);
    }
    if smart(before) && smart(after) {
        let host =
            delta(before.data_units_written, after.data_units_written, "Data Units Written")?;
        let media = delta(
            before.physical_media_units_written,
            after.physical_media_units_written,
            "Physical media units written",
        )?;
        let host_bytes = host.checked_mul(DATA_UNIT_BYTES as u128).ok_or_else(|| {
            ParseError::side(Side::After, "Data Units Written delta overflows bytes")
        })?;
        return finish(WafMethod::SmartAndOcp, host, media, host_bytes, media);
    }
    // Name what is missing, input by input; host side first since it is the denominator.
    for (side, s) in [(Side::Before, before), (Side::After, after)] {
        if s.data_units_written.is_none() && s.hbmw.is_none() {
            return Err(ParseError::side(
                side,
                "no 'Data Units Written' (smart-log) or 'hbmw' (fdp stats) found",
            ));
        }
        if s.physical_media_units_written.is_none() && s.mbmw.is_none() {
            return Err(ParseError::side(
                side,
                "no 'Physical media units written' (ocp smart-add-log) or 'mbmw' (fdp stats) found",
            ));
        }
    }
    // Each input has a host and a media counter, but not of one method in both.
    for (side, s) in [(Side::Before, before), (Side::After, after)] {
        if s.hbmw.is_some() != s.mbmw.is_some() {
            let (has, lacks) = if s.hbmw.is_some() { ("hbmw", "mbmw") } else { ("mbmw", "hbmw") };
            if !smart(s) {
                return Err(ParseError::side(
                    side,
                    format!("has '{has}' but no '{lacks}' (fdp stats) and no complete smart-log + ocp smart-add-log pair"),
                ));
            }
        }
    }
    let desc =
        |s: &Snapshot| if fdp(s) { "only fdp stats" } else { "only smart-log + ocp smart-add-log" };
    Err(ParseError {
        side: None,
        line: None,
        message: format!(
            "no method common to both inputs: BEFORE has {}, AFTER has {}",
            desc(before),
            desc(after)
        ),
    })
}

fn delta(b: Option<u128>, a: Option<u128>, name: &str) -> Result<u128, ParseError> {
    let (b, a) = (b.unwrap_or(0), a.unwrap_or(0));
    a.checked_sub(b).ok_or_else(|| {
        ParseError::side(
            Side::After,
            format!("'{name}' went backwards ({b} before, {a} after): different device, reset, or inputs swapped"),
        )
    })
}

fn finish(
    method: WafMethod,
    host_delta: u128,
    media_delta: u128,
    host_bytes: u128,
    media_bytes: u128,
) -> Result<WafResult, ParseError> {
    if host_bytes == 0 {
        let what = match method {
            WafMethod::FdpStats => "'hbmw'",
            WafMethod::SmartAndOcp => "'Data Units Written'",
        };
        return Err(ParseError::side(
            Side::After,
            format!("{what} did not change: no host writes between the captures, WAF undefined"),
        ));
    }
    Ok(WafResult {
        method,
        host_delta,
        media_delta,
        host_bytes,
        media_bytes,
        waf: media_bytes as f64 / host_bytes as f64,
    })
}

impl WafResult {
    /// Why this WAF cannot be taken at face value, when it is below 1: a drive writes every host
    /// byte to the media at least once, so less media than host data means the captures do not
    /// bracket one drive's writes (two drives, a counter reset or wrapped between them, the
    /// inputs' counters from different tools), or the drive compresses data; with the SMART +
    /// OCP method, a small delta can also fall below 1 through data-unit rounding. `None` at 1
    /// or above.
    pub fn below_one(&self) -> Option<String> {
        if self.media_bytes >= self.host_bytes {
            return None;
        }
        let rounding = match self.method {
            // Data units are rounded up per capture: up to 512,000 bytes of the host side.
            WafMethod::SmartAndOcp if self.host_bytes <= 100 * super::smart::DATA_UNIT_BYTES as u128 => {
                "; with so few host bytes, the rounding of SMART data units (up to 512,000 bytes per capture) can also explain it"
            }
            _ => "",
        };
        Some(format!(
            "WAF {:.4} is below 1: the media wrote {} bytes for {} host bytes. A drive writes every host byte to the media at least once, so the captures are probably not of one drive over one interval (different drives, or a counter reset or wrapped between them), or the drive compresses data{rounding}",
            self.waf, self.media_bytes, self.host_bytes
        ))
    }
}

/// [`parse_snapshot`] on both texts, then [`waf`]; parse errors say which input failed.
pub fn waf_from_texts(before: &str, after: &str) -> Result<WafResult, ParseError> {
    let tag = |side: Side| {
        move |mut e: ParseError| {
            e.side = Some(side);
            e
        }
    };
    let b = parse_snapshot(before).map_err(tag(Side::Before))?;
    let a = parse_snapshot(after).map_err(tag(Side::After))?;
    waf(&b, &a)
}
