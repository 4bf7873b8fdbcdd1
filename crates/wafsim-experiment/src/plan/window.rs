//! Where in a phase a measurement window starts or a checkpoint falls, in host bytes written
//! since the phase started.

use crate::schema::{PhaseSpec, Rate, Window, WindowOf};
use anyhow::{anyhow, bail, Result};

/// Host bytes of `w` (key `field` of a phase): a multiple of the drives' logical capacity
/// (of `logical` bytes as simulated), a duration at the host write rate `rate`, or bytes.
/// Durations and bytes describe the full-scale run, so they are multiplied by `scale`; at
/// least one byte.
pub fn window_bytes(field: &str, w: &Window, rate: Option<&Rate>, logical: u64, scale: f64) -> Result<u64> {
    let full = match *w.value() {
        WindowOf::Multiple(m) => return Ok(((m * logical as f64) as u64).max(1)),
        WindowOf::Duration(ns) => {
            let Some(rate) = rate else {
                bail!("{field}: {w:?} is a duration: give the phase's write_rate (host bytes per second, e.g. \"275MB/s\") to turn it into bytes");
            };
            return Ok(duration_bytes(ns, rate, scale));
        }
        WindowOf::Bytes(b) => b as f64,
    };
    Ok(((full * scale) as u64).max(1))
}

/// Host bytes written in `ns` at `rate` by the full-scale run, times `scale`; at least one.
pub fn duration_bytes(ns: u64, rate: &Rate, scale: f64) -> u64 {
    let full = ns as f64 * 1e-9 * rate.bytes_per_s();
    ((full * scale) as u64).max(1)
}

/// The phase's checkpoints in host bytes from its start, checked to increase.
pub fn checkpoint_bytes(p: &PhaseSpec, logical: u64, scale: f64) -> Result<Vec<u64>> {
    let mut out: Vec<u64> = Vec::new();
    for c in &p.checkpoints {
        let b = window_bytes("checkpoints", c, p.write_rate.as_ref(), logical, scale).map_err(|e| anyhow!("phase {:?}: {e}", p.name))?;
        if out.last().is_some_and(|&prev| prev >= b) {
            bail!("phase {:?}: checkpoints: {c:?} is not after the checkpoint before it; list them in increasing order", p.name);
        }
        out.push(b);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Window {
        text.parse().unwrap()
    }

    #[test]
    fn bytes_multiples_and_hours_at_a_rate() {
        let rate = |t: &str| t.parse::<Rate>().unwrap();
        assert_eq!(window_bytes("c", &w("300GB"), None, 1 << 30, 1.0).unwrap(), 300_000_000_000);
        assert_eq!(window_bytes("c", &w("300GB"), None, 1 << 30, 0.01).unwrap(), 3_000_000_000);
        assert_eq!(window_bytes("c", &w("0.5x"), None, 1 << 30, 0.01).unwrap(), 1 << 29, "a multiple of the simulated drive");
        assert_eq!(window_bytes("c", &w("5h"), Some(&rate("275MB/s")), 1 << 30, 1.0).unwrap(), 5 * 3600 * 275_000_000);
        assert_eq!(window_bytes("c", &w("90min"), Some(&rate("1MB/s")), 1 << 30, 0.5).unwrap(), 90 * 60 * 500_000);
        let e = window_bytes("checkpoints", &w("5h"), None, 1 << 30, 1.0).unwrap_err().to_string();
        assert!(e.contains("checkpoints") && e.contains("write_rate"), "{e}");
    }
}
