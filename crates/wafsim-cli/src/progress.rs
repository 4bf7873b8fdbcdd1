//! A one-line progress display on a terminal (stderr); silent when stderr is not a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wafsim_experiment::Progress;

pub struct Bar {
    enabled: bool,
    start: Instant,
    state: Mutex<(Vec<(String, Progress)>, Instant)>,
}

impl Bar {
    pub fn new(names: Vec<String>) -> Bar {
        let zero = Progress { done_bytes: 0, total_bytes: 0, drive_writes: 0.0, waf: 0.0 };
        Bar {
            enabled: std::io::stderr().is_terminal(),
            start: Instant::now(),
            state: Mutex::new((names.into_iter().map(|n| (n, zero)).collect(), Instant::now())),
        }
    }

    pub fn update(&self, name: &str, p: Progress) {
        if !self.enabled {
            return;
        }
        let mut st = self.state.lock().expect("progress lock");
        if let Some(e) = st.0.iter_mut().find(|(n, _)| n == name) {
            e.1 = p;
        }
        if st.1.elapsed() < Duration::from_millis(200) {
            return;
        }
        st.1 = Instant::now();
        let done: u64 = st.0.iter().map(|(_, p)| p.done_bytes).sum();
        let total: u64 = st.0.iter().map(|(_, p)| p.total_bytes).sum();
        let frac = if total > 0 { (done as f64 / total as f64).min(1.0) } else { 0.0 };
        let dw: f64 = st.0.iter().map(|(_, p)| p.drive_writes).sum::<f64>() / st.0.len().max(1) as f64;
        let secs = self.start.elapsed().as_secs_f64();
        let eta = if frac > 0.0 { secs / frac - secs } else { 0.0 };
        let wafs: Vec<String> = st.0.iter().map(|(n, p)| format!("{n} WAF {:.3}", p.waf)).collect();
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[K{:5.1}% | {:.2} drive writes per variant | ETA {:.0} s | {}", frac * 100.0, dw, eta, wafs.join(" | "));
        let _ = err.flush();
    }

    pub fn finish(&self) {
        if self.enabled {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}
