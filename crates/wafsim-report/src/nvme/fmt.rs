//! Number, temperature, power and time formatting the way nvme-cli's C helpers do it.
//!
//! nvme-cli formats through glibc (`printf`, `localeconv`, `strftime`) and x87 `long double`
//! arithmetic; everything here reproduces those results with integer arithmetic so the output
//! is identical on every platform Rust runs on.

/// Locale-dependent parts of nvme-cli's text output.
///
/// nvme-cli calls `setlocale(LC_ALL, "")` at start-up (src/nvme.c), so two things depend on the
/// user's environment: the thousands separator of `uint128_t_to_l10n_string` (every 128-bit
/// counter of `smart-log` and `fdp stats`) and `strftime("%c")` in `fdp events`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locale {
    /// `C`, `POSIX` and `C.UTF-8`: no thousands separator, `%c` = `%a %b %e %H:%M:%S %Y`.
    C,
    /// glibc `en_US.UTF-8`: `,` as thousands separator, `%c` = `%a %d %b %Y %r %Z`.
    EnUs,
    /// Any other separator (e.g. `.` for de_DE); `%c` follows the C locale.
    Separator(String),
}

impl Locale {
    /// The `localeconv()->thousands_sep` this locale has.
    pub fn thousands_sep(&self) -> &str {
        match self {
            Locale::C => "",
            Locale::EnUs => ",",
            Locale::Separator(s) => s,
        }
    }
}

/// Options for the text printers: what nvme-cli's environment and flags change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextOptions {
    /// The locale nvme-cli ran in.
    pub locale: Locale,
    /// `-H` / `--verbose`: adds the bit-field breakdowns (`smart-log` critical warning,
    /// `fdp configs` attributes).
    pub verbose: bool,
}

impl Default for TextOptions {
    /// en_US.UTF-8, not verbose: what most pasted nvme-cli output was produced with.
    fn default() -> Self {
        TextOptions { locale: Locale::EnUs, verbose: false }
    }
}

impl TextOptions {
    /// The C locale (no thousands separators), as in containers and minimal systems.
    pub fn c_locale() -> Self {
        TextOptions { locale: Locale::C, verbose: false }
    }
}

/// `uint128_t_to_l10n_string`: decimal digits with `sep` inserted the way nvme-cli's
/// shared/uint128-util.c does it.
///
/// The C code decides where a separator goes from the number of *bytes* already written to its
/// buffer modulo 4, so a multi-byte separator (fr_FR's U+202F is three bytes) groups
/// irregularly; reproducing the byte arithmetic keeps even that identical.
pub fn l10n(mut v: u128, sep: &str) -> String {
    let mut out: Vec<u8> = Vec::new();
    // The C buffer starts with its NUL terminator already written.
    let mut written = 1usize;
    let sep = sep.as_bytes();
    loop {
        if !sep.is_empty() && written.is_multiple_of(4) {
            for b in sep.iter().rev() {
                out.push(*b);
            }
            written += sep.len();
        }
        out.push(b'0' + (v % 10) as u8);
        written += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// x87 80-bit `long double`: value = `m * 2^e`, `m` normalised (top bit set) or zero.
#[derive(Debug, Clone, Copy)]
struct Ext {
    m: u64,
    e: i32,
}

impl Ext {
    const ZERO: Ext = Ext { m: 0, e: 0 };

    /// `v * 2^e` rounded to a 64-bit mantissa, ties to even; `sticky` says nonzero bits lie
    /// below `v` (only meaningful when `v` has more than 64 significant bits).
    fn round(v: u128, e: i32, sticky: bool) -> Ext {
        if v == 0 {
            return Ext::ZERO;
        }
        let bits = 128 - v.leading_zeros() as i32;
        if bits <= 64 {
            let sh = 64 - bits;
            return Ext { m: ((v << sh) as u64), e: e - sh };
        }
        let sh = bits - 64;
        let mut m = (v >> sh) as u64;
        let rem = v & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        let up = rem > half || (rem == half && (sticky || m & 1 == 1));
        let mut e = e + sh;
        if up {
            m = m.wrapping_add(1);
            if m == 0 {
                m = 1 << 63;
                e += 1;
            }
        }
        Ext { m, e }
    }

    fn is_zero(self) -> bool {
        self.m == 0
    }

    /// `long double` from a `double` literal (the SI table in shared/suffix-util.c is written
    /// as `1e30` etc., i.e. doubles, so 1e24..1e30 carry double rounding error).
    fn from_f64(x: f64) -> Ext {
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        if exp == 0 {
            return Ext::round(frac as u128, -1074, false);
        }
        Ext::round((frac | (1u64 << 52)) as u128, exp - 1075, false)
    }

    /// `self * 2^32 + w`, rounded: one step of `uint128_t_to_double`.
    fn shift32_add(self, w: u32) -> Ext {
        if self.is_zero() {
            return Ext::round(w as u128, 0, false);
        }
        let e2 = self.e + 32;
        if e2 >= 64 {
            // One ulp is at least 2^64, so adding less than 2^32 rounds back to the same value.
            return Ext { m: self.m, e: e2 };
        }
        // The running value is an integer, so a negative exponent only drops zero bits.
        let int = if e2 <= 0 { (self.m >> (-e2) as u32) as u128 } else { (self.m as u128) << e2 };
        Ext::round(int + w as u128, 0, false)
    }

    fn mul_u32(self, k: u32) -> Ext {
        Ext::round(self.m as u128 * k as u128, self.e, false)
    }

    fn ge(self, o: Ext) -> bool {
        match (self.is_zero(), o.is_zero()) {
            (true, true) => true,
            (true, false) => false,
            (false, true) => true,
            (false, false) => (self.e, self.m) >= (o.e, o.m),
        }
    }

    fn div(self, o: Ext) -> Ext {
        if self.is_zero() {
            return Ext::ZERO;
        }
        let n = (self.m as u128) << 64;
        let d = o.m as u128;
        let q1 = n / d;
        let r1 = n % d;
        if q1 >> 64 != 0 {
            // 65 quotient bits: one guard bit plus the remainder as sticky is enough.
            return Ext::round(q1, self.e - o.e - 64, r1 != 0);
        }
        let n2 = r1 << 64;
        let q2 = n2 / d;
        let r2 = n2 % d;
        Ext::round((q1 << 64) | q2, self.e - o.e - 128, r2 != 0)
    }

    /// glibc `printf("%.2Lf")`: the exact binary value rounded to hundredths, ties to even.
    fn fmt_2(self) -> String {
        let hundredths: u128 = if self.is_zero() {
            0
        } else {
            let p = self.m as u128 * 100;
            if self.e >= 0 {
                p.checked_shl(self.e as u32).unwrap_or(u128::MAX)
            } else {
                let s = (-self.e) as u32;
                if s >= 128 {
                    0
                } else {
                    let q = p >> s;
                    let rem = p & ((1u128 << s) - 1);
                    let half = 1u128 << (s - 1);
                    if rem > half || (rem == half && q & 1 == 1) {
                        q + 1
                    } else {
                        q
                    }
                }
            }
        };
        format!("{}.{:02}", hundredths / 100, hundredths % 100)
    }
}

/// `uint128_t_to_si_string(val, bytes_per_unit)`: e.g. `"5.84 TB"` for 11406786 data units of
/// 512,000 bytes. Reproduces the x87 `long double` conversion and SI scaling bit for bit,
/// including values past 2^64 where the conversion rounds.
pub fn si_string(val: u128, bytes_per_unit: u32) -> String {
    let words = [(val >> 96) as u32, (val >> 64) as u32, (val >> 32) as u32, val as u32];
    let mut x = Ext::ZERO;
    for w in words {
        x = x.shift32_add(w);
    }
    let mut bytes = x.mul_u32(bytes_per_unit);
    const SI: [(f64, &str); 10] = [
        (1e30, "Q"),
        (1e27, "R"),
        (1e24, "Y"),
        (1e21, "Z"),
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ];
    let mut suffix = "";
    for (mag, s) in SI {
        let mag = Ext::from_f64(mag);
        if bytes.ge(mag) {
            bytes = bytes.div(mag);
            suffix = s;
            break;
        }
    }
    format!("{} {}B", bytes.fmt_2(), suffix)
}

/// `nvme_degrees_string` (text mode): Kelvin to `"<C> °C"` with C integer arithmetic.
pub fn celsius(kelvin: u16) -> String {
    format!("{} °C", kelvin as i64 - 273)
}

/// `nvme_degrees_fahrenheit_string` (text mode): `(K - 273) * 9 / 5 + 32`, C division
/// truncating toward zero.
pub fn fahrenheit(kelvin: u16) -> String {
    format!("{} °F", (kelvin as i64 - 273) * 9 / 5 + 32)
}

/// `print_power_and_scale` as used for the SMART Interval Power Measurement.
pub fn power_field(ipm: u32) -> String {
    let power = ipm & 0xffff;
    match (ipm >> 16) & 0x3 {
        0 => "-".to_string(),
        1 => format!("{}.{:04}W", power / 10000, power % 10000),
        2 => format!("{}.{:02}W", power / 100, power % 100),
        _ => "reserved".to_string(),
    }
}

/// `nvme_power_measurement_type_to_string`.
pub fn power_measurement_type(pmt: u32) -> &'static str {
    match pmt {
        0 => "NVM subsystem total power",
        0xc..=0xf => "Vendor Specific",
        _ => "Reserved",
    }
}

/// C's `%#x`: `0` for zero (the `#` flag adds no prefix to zero), else `0x` + hex.
pub fn hash_x(v: u64) -> String {
    if v == 0 {
        "0".to_string()
    } else {
        format!("{v:#x}")
    }
}

/// `strftime(buf, .., "%c %Z", localtime(&secs))` with `TZ=UTC` in the given locale.
pub fn strftime_c_z(secs: i64, locale: &Locale) -> String {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s) = (sod / 3600, sod % 3600 / 60, sod % 60);
    // 1970-01-01 was a Thursday.
    let wd = (days + 4).rem_euclid(7) as usize;
    const WD: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MO: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (a, b) = (WD[wd], MO[(mo - 1) as usize]);
    match locale {
        Locale::EnUs => {
            let (h12, ampm) = match h {
                0 => (12, "AM"),
                1..=11 => (h, "AM"),
                12 => (12, "PM"),
                _ => (h - 12, "PM"),
            };
            format!("{a} {d:02} {b} {y} {h12:02}:{mi:02}:{s:02} {ampm} UTC UTC")
        }
        _ => format!("{a} {b} {d:>2} {h:02}:{mi:02}:{s:02} {y} UTC"),
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

/// `shr_uuid_to_string`: 16 bytes as 8-4-4-4-12 lowercase hex, in byte order.
pub fn uuid(b: &[u8; 16]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l10n_groups_by_three() {
        assert_eq!(l10n(0, ","), "0");
        assert_eq!(l10n(999, ","), "999");
        assert_eq!(l10n(1000, ","), "1,000");
        assert_eq!(l10n(1234567, ","), "1,234,567");
        assert_eq!(l10n(1234567, ""), "1234567");
        assert_eq!(l10n(u128::MAX, ""), "340282366920938463463374607431768211455");
    }

    #[test]
    fn si_matches_nvme_cli_unit_tests() {
        // shared/tests/test-uint128-util.c, si_tests[].
        assert_eq!(si_string(0, 1), "0.00 B");
        assert_eq!(si_string(1, 1), "1.00 B");
        assert_eq!(si_string(10, 1), "10.00 B");
        let v = (4u128 << 96) | (3u128 << 64) | (2u128 << 32) | 1;
        assert_eq!(si_string(v, 1), "316.91 RB");
        assert_eq!(si_string(u128::MAX, 1), "340282366.92 QB");
        assert_eq!(si_string(0xae0dc2, 512_000), "5.84 TB");
        assert_eq!(si_string(0xf9c546, 512_000), "8.38 TB");
        assert_eq!(si_string(0x4c2aa594, 512_000), "654.27 TB");
        assert_eq!(si_string(0x5b013de8, 512_000), "781.73 TB");
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(strftime_c_z(0, &Locale::C), "Thu Jan  1 00:00:00 1970 UTC");
        assert_eq!(strftime_c_z(1_787_343_978, &Locale::C), "Fri Aug 21 20:26:18 2026 UTC");
    }
}
