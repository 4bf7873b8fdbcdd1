//! Progress bars on stderr (indicatif): one bar per variant for `wafsim run` and `wafsim zone
//! report`, one bar for `wafsim sweep`. Drawn only when stderr is a terminal (hidden otherwise,
//! so pipes and test output stay clean), redrawn at most `HZ` times a second, and cleared when
//! done.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use wafsim_experiment::studies::sweep::SweepProgress;
use wafsim_experiment::Progress;

/// Redraws per second at most.
const HZ: u8 = 5;
/// Longest variant name shown in full in front of its bar.
const NAME_CHARS: usize = 24;

/// stderr at `HZ` when it is a terminal, else nothing.
fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr_with_hz(HZ)
    } else {
        ProgressDrawTarget::hidden()
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).expect("progress template").progress_chars("=> ")
}

/// One bar per variant: host bytes done of planned, the variant's WAF so far and drive writes.
pub struct Bar {
    multi: MultiProgress,
    bars: Vec<(String, ProgressBar)>,
}

impl Bar {
    pub fn new(names: Vec<String>) -> Bar {
        let multi = MultiProgress::with_draw_target(target());
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0).min(NAME_CHARS);
        let st = style(&format!("{{prefix:<{width}.bold}} [{{wide_bar}}] {{percent:>3}}% {{msg}} | ETA {{eta:>3}}"));
        let bars = names
            .into_iter()
            .map(|n| {
                let b = multi.add(ProgressBar::no_length().with_style(st.clone()));
                let shown: String = if n.chars().count() > NAME_CHARS { n.chars().take(NAME_CHARS - 1).chain(['…']).collect() } else { n.clone() };
                b.set_prefix(shown);
                b.set_message("WAF -");
                (n, b)
            })
            .collect();
        Bar { multi, bars }
    }

    pub fn update(&self, name: &str, p: Progress) {
        if self.multi.is_hidden() {
            return;
        }
        if let Some((_, b)) = self.bars.iter().find(|(n, _)| n == name) {
            // 0 = total unknown: the bar stays empty rather than showing 100%.
            if p.total_bytes > 0 && b.length() != Some(p.total_bytes) {
                b.set_length(p.total_bytes);
            }
            b.set_position(p.done_bytes);
            b.set_message(format!("WAF {:.3} | {:.2} drive writes", p.waf, p.drive_writes));
        }
    }

    pub fn finish(&self) {
        for (_, b) in &self.bars {
            b.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}

/// The sweep's bar: runs done of runs to do, points done, elapsed time and ETA.
pub struct SweepBar(ProgressBar);

impl SweepBar {
    pub fn new() -> SweepBar {
        let b = ProgressBar::with_draw_target(None, target());
        b.set_style(style("[{wide_bar}] {pos}/{len} runs | {msg} | {elapsed} | ETA {eta}"));
        SweepBar(b)
    }

    pub fn update(&self, p: SweepProgress) {
        if self.0.is_hidden() {
            return;
        }
        if self.0.length() != Some(p.runs_total as u64) {
            self.0.set_length(p.runs_total as u64);
        }
        self.0.set_position(p.runs_done as u64);
        self.0.set_message(format!("{}/{} points", p.points_done, p.points_total));
    }

    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}
