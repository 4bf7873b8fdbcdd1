//! Where in a phase a measurement window starts or a checkpoint falls, in host bytes written
//! since the phase started.

use crate::plan::timing::{parse_duration_ns, parse_rate};
use crate::schema::PhaseSpec;
use anyhow::{anyhow, bail, Result};

/// Host bytes of `text` (key `field` of a phase): a multiple of the drives' logical capacity
/// ("0.15x", of `logical` bytes as simulated), a duration ("5h", "90min", "30s") at the host
/// write rate `rate` ("275MB/s"), or bytes ("300GB"). Durations and bytes describe the
/// full-scale run, so they are multiplied by `scale`; at least one byte.
pub fn window_bytes(field: &str, text: &str, rate: Option<&str>, logical: u64, scale: f64) -> Result<u64> {
    let t = text.trim();
    let full = if t.ends_with('x') {
        return Ok(crate::schema::amount_bytes(t, logical).map_err(|e| anyhow!("{field}: {e}"))?.max(1));
    } else if is_duration(t) {
        let Some(rate) = rate else {
            bail!("{field}: {text:?} is a duration: give the phase's write_rate (host bytes per second, e.g. \"275MB/s\") to turn it into bytes");
        };
        let secs = parse_duration_ns(t).map_err(|e| anyhow!("{field}: {e}"))? as f64 * 1e-9;
        secs * parse_rate("write_rate", rate)?
    } else {
        wafsim_core::units::parse_bytes(t).map_err(|e| anyhow!("{field}: {text:?}: {e} (expected bytes, a multiple \"0.5x\" or a duration \"5h\")"))? as f64
    };
    Ok(((full * scale) as u64).max(1))
}

/// Whether a window or checkpoint is given as a duration ("5h", "90min", "30s"), not as bytes
/// or a multiple of the capacity.
pub fn is_duration(text: &str) -> bool {
    let t = text.trim();
    t.ends_with('h') || t.ends_with("min") || (t.ends_with('s') && !t.ends_with("/s"))
}

/// The phase's checkpoints in host bytes from its start, checked to increase.
pub fn checkpoint_bytes(p: &PhaseSpec, logical: u64, scale: f64) -> Result<Vec<u64>> {
    let mut out: Vec<u64> = Vec::new();
    for c in &p.checkpoints {
        let b = window_bytes("checkpoints", c, p.write_rate.as_deref(), logical, scale).map_err(|e| anyhow!("phase {:?}: {e}", p.name))?;
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

    #[test]
    fn bytes_multiples_and_hours_at_a_rate() {
        assert_eq!(window_bytes("c", "300GB", None, 1 << 30, 1.0).unwrap(), 300_000_000_000);
        assert_eq!(window_bytes("c", "300GB", None, 1 << 30, 0.01).unwrap(), 3_000_000_000);
        assert_eq!(window_bytes("c", "0.5x", None, 1 << 30, 0.01).unwrap(), 1 << 29, "a multiple of the simulated drive");
        assert_eq!(window_bytes("c", "5h", Some("275MB/s"), 1 << 30, 1.0).unwrap(), 5 * 3600 * 275_000_000);
        assert_eq!(window_bytes("c", "90min", Some("1MB/s"), 1 << 30, 0.5).unwrap(), 90 * 60 * 500_000);
        let e = window_bytes("checkpoints", "5h", None, 1 << 30, 1.0).unwrap_err().to_string();
        assert!(e.contains("checkpoints") && e.contains("write_rate"), "{e}");
        let e = window_bytes("checkpoints", "5 parsecs", None, 1 << 30, 1.0).unwrap_err().to_string();
        assert!(e.contains("5 parsecs"), "{e}");
    }
}
