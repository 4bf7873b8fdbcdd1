//! One phase of an untimed run: every drive at once, fed by one interleaved stream of the
//! phase's sources, cut into rounds for the steady-state check and sampled for time series.

use super::collect::*;
use super::{Progress, RunOptions};
use crate::drives::{Stack, BATCH};
use crate::parts::{self, PhaseSources};
use crate::results::*;
use crate::schema::{ExperimentSpec, MeasureFrom, PhaseSpec};
use anyhow::Result;
use wafsim_core::counters::waf;
use wafsim_core::pipeline::{IoSource, LayerFigures};
use wafsim_core::{BlockDevice, Counters};
use crate::plan::window::{checkpoint_bytes, window_bytes};

/// One phase of an untimed run, over every drive at once.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_untimed_phase(
    spec: &ExperimentSpec,
    pi: usize,
    p: &PhaseSpec,
    fio: &[parts::LoadedFio],
    stack: &mut Stack,
    st: &mut RunState,
    result: &mut VariantResult,
    opts: RunOptions,
    progress: &dyn Fn(Progress),
) -> Result<()> {
    let mu = stack.cfg.mapping_unit as u64;
    let mut phase = parts::build(spec, pi, p, fio, &stack.target())?;
    for n in std::mem::take(&mut phase.notes) {
        result.warnings.push(format!("phase {:?}: {n}", p.name));
    }
    let phase_start: Vec<Counters> = stack.devices.iter().map(|d| d.counters().clone()).collect();
    let host0 = sum(&stack.devices, |c| c.host_write_bytes);
    let media0 = sum(&stack.devices, |c| c.media_units());
    let start_host: u64 = st.start.iter().map(|c| c.host_write_bytes).sum();
    let start_trim: u64 = st.start.iter().map(|c| c.trim_bytes).sum();
    let start_media: u64 = st.start.iter().map(|c| c.media_units()).sum();

    let ss = p.steady_state.clone().unwrap_or_default();
    let stop_when_steady = p.steady_state.is_some();
    // `measure_last`: snapshots on a grid of 1/32 of the window, the oldest still needed kept.
    let last = match &p.measure_last {
        Some(_) if stop_when_steady => anyhow::bail!("phase {:?}: measure_last and steady_state both choose the measured window; give one", p.name),
        Some(l) => Some(window_bytes("measure_last", l, p.write_rate.as_deref(), st.logical_total, spec.scale).map_err(|e| anyhow::anyhow!("phase {:?}: {e}", p.name))?),
        None => None,
    };
    // `checkpoints`: (host bytes from the phase start, media units, application bytes) where
    // each was taken, after the phase start's.
    let marks = checkpoint_bytes(p, st.logical_total, spec.scale)?;
    let app0: u64 = result.filesystems.iter().map(|f| f.file_write_bytes).sum();
    let mut taken: Vec<(u64, u64, Option<u64>)> = vec![(0, media0, Some(app0))];
    // `measure_from = "run"`: where the stores' load ended (host bytes since the phase start,
    // the drives' counters and the layers' figures there); checkpoints count from it.
    let from_run = p.measure_from == MeasureFrom::Run;
    if from_run && p.kv.is_empty() {
        anyhow::bail!("phase {:?}: measure_from = \"run\" measures from the end of the key-value stores' load, and the phase has no [[phase.kv]]", p.name);
    }
    let mut run_from: Option<(u64, Vec<Counters>, Vec<LayerFigures>)> = None;
    let mut mark_base = 0u64;
    if from_run {
        let figures = phase.figures();
        if !figures.iter().any(|f| f.loading) {
            run_from = Some((0, phase_start.clone(), figures));
        }
    }
    let grid = last.map_or(u64::MAX, |l| (l / 32).max(1));
    let mut window: std::collections::VecDeque<(u64, Vec<Counters>, Vec<LayerFigures>)> = std::collections::VecDeque::new();
    if last.is_some() {
        window.push_back((0, phase_start.clone(), phase.figures()));
    }
    let mut next_grid = grid;
    let round_bytes = ss.round_bytes(st.logical_total)?;
    // Counters at round ends, kept only where a steady phase reports its window.
    let mut snaps: Vec<Vec<Counters>> = if stop_when_steady { vec![phase_start.clone()] } else { Vec::new() };
    // The file systems' and stores' counts at the same round ends (their rows report the window too).
    let mut fs_snaps: Vec<Vec<LayerFigures>> = if stop_when_steady { vec![phase.figures()] } else { Vec::new() };
    let rows_only = phase.rows.len() == phase.labels.len();
    let erases0 = sum(&stack.devices, |c| c.erases);
    let mut round_end = (host0, media0, erases0);
    let mut round_waf: Vec<(f64, u64)> = Vec::new();
    let mut steady_at: Option<usize> = None;

    // Keep a batch below a hundredth of a round or 256 I/Os, whichever is larger (and below a
    // tenth of the sampling interval) so rounds and samples end close to where they are due.
    let mut batch = 64;
    let mut buf = Vec::with_capacity(BATCH);
    loop {
        buf.clear();
        match phase.source.fill(&mut buf, batch) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if p.stop_when_full && e.is_no_space() => {
                let host = sum(&stack.devices, |c| c.host_write_bytes) - host0;
                // Where it filled on the checkpoints' clock too (write_rate, from their origin).
                let hours = match (&p.write_rate, !from_run || run_from.is_some()) {
                    (Some(r), true) => window_bytes("write_rate", "1h", Some(r), st.logical_total, spec.scale)
                        .ok()
                        .map(|h| format!(" ({:.2} h from {} at {r})", (host - mark_base) as f64 / h.max(1) as f64, if from_run { "the run start" } else { "the phase start" })),
                    _ => None,
                };
                let why = format!("out of space after {} of host writes in the phase{}: {e}", wafsim_core::units::human(host), hours.unwrap_or_default());
                result.warnings.push(format!("phase {:?} ended {why}", p.name));
                result.phases[pi].stopped = Some(why);
                break;
            }
            Err(e) => return Err(e.into()),
        }
        let bytes: u64 = buf.iter().map(|io| io.len as u64).sum();
        let per_io = (bytes / buf.len() as u64).max(1);
        // Rounds need no batches finer than 256 I/Os (the device prefetches within a batch).
        let mut limit = ((round_bytes / 100) / per_io).max(256);
        if let Some(every) = opts.sample_every_bytes {
            limit = limit.min((every / 10) / per_io);
        }
        batch = limit.clamp(16, BATCH as u64) as usize;
        stack.submit_batch(&buf)?;

        let host = sum(&stack.devices, |c| c.host_write_bytes);
        if from_run && run_from.is_none() {
            // One look at the layers per batch until the load ends.
            let figures = phase.figures();
            if !figures.iter().any(|f| f.loading) {
                let app = app_bytes(result, &figures, rows_only, host - start_host);
                taken = vec![(host - host0, sum(&stack.devices, |c| c.media_units()), app)];
                mark_base = host - host0;
                run_from = Some((host - host0, stack.devices.iter().map(|d| d.counters().clone()).collect(), figures));
            }
        }
        let counting = !from_run || run_from.is_some();
        // A batch may pass several checkpoints: each is taken here, at the same counts.
        while counting && marks.get(taken.len() - 1).is_some_and(|&at| host - host0 >= mark_base + at) {
            let app = app_bytes(result, &phase.figures(), rows_only, host - start_host);
            taken.push((host - host0, sum(&stack.devices, |c| c.media_units()), app));
        }
        if let Some(l) = last.filter(|_| host - host0 >= next_grid) {
            let at = host - host0;
            window.push_back((at, stack.devices.iter().map(|d| d.counters().clone()).collect(), phase.figures()));
            // The window's start is the newest snapshot at least `l` before the end: an older
            // one is not needed once a newer one is that far back.
            while window.len() >= 2 && window[1].0 + l <= at {
                window.pop_front();
            }
            next_grid = (at / grid + 1) * grid;
        }
        if host - round_end.0 >= round_bytes {
            let media = sum(&stack.devices, |c| c.media_units());
            let erases = sum(&stack.devices, |c| c.erases);
            round_waf.push((waf((media - round_end.1) * mu, host - round_end.0), erases - round_end.2));
            round_end = (host, media, erases);
            if stop_when_steady && phase.figures().iter().any(|f| f.warming || (from_run && f.loading)) {
                // A store still filling (or loading, when measured from the run): its rounds
                // are not judged; the window starts after it.
                round_waf.clear();
                snaps = vec![stack.devices.iter().map(|d| d.counters().clone()).collect()];
                fs_snaps = vec![phase.figures()];
            } else if stop_when_steady {
                snaps.push(stack.devices.iter().map(|d| d.counters().clone()).collect());
                fs_snaps.push(phase.figures());
                if crate::run::steady::judge(&round_waf, round_bytes, &ss).steady {
                    steady_at = Some(round_waf.len());
                    break;
                }
                if ss.max_rounds.is_some_and(|m| round_waf.len() >= m as usize) {
                    break;
                }
            }
        }
        if let Some(every) = opts.sample_every_bytes {
            if host - start_host >= st.next_sample {
                let app = app_bytes(result, &phase.figures(), rows_only, host - start_host);
                push_samples(result, stack, st, pi, app);
                // Samples on a fixed grid of `every` bytes; a batch may skip grid points.
                while st.next_sample <= host - start_host {
                    st.next_sample += every.max(1);
                }
            }
        }
        let trim = sum(&stack.devices, |c| c.trim_bytes);
        let media = sum(&stack.devices, |c| c.media_units());
        progress(Progress {
            done_bytes: (host - start_host) + (trim - start_trim),
            total_bytes: st.total_planned,
            drive_writes: (host - start_host) as f64 / st.logical_total as f64,
            waf: waf((media - start_media) * mu, host - start_host),
        });
    }
    // Side outputs (an iolog's last lines) finish whether the sources ran dry or not.
    phase.source.finish()?;
    let host_written = sum(&stack.devices, |c| c.host_write_bytes) - host0;
    // The measured window: the steady rounds, the last `measure_last` bytes, or the phase.
    let last_from = last.and_then(|l| window.iter().rev().find(|w| w.0 + l <= host_written));
    if let (Some(l), None) = (last, last_from) {
        result.warnings.push(format!("phase {:?} wrote {} B of host data, less than measure_last ({l} B): the whole phase is reported", p.name, host_written));
    }
    let (from, fs_from, described) = match (steady_at, last_from) {
        (Some(r), _) => (&snaps[r - ss.window as usize], Some(&fs_snaps[r - ss.window as usize][..]), format!("steady state (the last {} rounds of {})", ss.window, wafsim_core::units::human(round_bytes))),
        (None, Some(w)) => (&w.1, Some(&w.2[..]), format!("last {} ({} of host writes)", p.measure_last.as_deref().unwrap_or(""), wafsim_core::units::human(host_written - w.0))),
        (None, None) => match &run_from {
            Some(r) => (&r.1, Some(&r.2[..]), format!("the run after the stores' load ({} of host writes; the load wrote {})", wafsim_core::units::human(host_written - r.0), wafsim_core::units::human(r.0))),
            None => (&phase_start, None, "whole phase".to_string()),
        },
    };
    if from_run && run_from.is_none() {
        result.warnings.push(format!("phase {:?}: measure_from = \"run\", but the stores were still loading their initial records when the phase ended: the whole phase is reported (write more: a larger amount)", p.name));
    }
    push_fs(result, p, &phase.rows, phase.figures(), fs_from);
    let PhaseSources { source, labels, .. } = phase;
    let rows = labels.into_iter().zip(source.stats().iter().copied()).map(|(l, s)| (l, s, None)).collect();
    push_jobs(result, st, pi, p, rows);
    for (di, dev) in stack.devices.iter().enumerate() {
        let delta = dev.counters().delta(&from[di]);
        account_phase(result, st, pi, p.measure, di, &delta);
    }
    if fs_from.is_some() {
        let media = sum(&stack.devices, |c| c.media_units()) - media0;
        result.phases[pi].whole_waf = Some(waf(media * mu, host_written));
    }
    result.phases[pi].window = described;
    result.phases[pi].checkpoints = checkpoint_rows(p, &marks, &taken, mu);
    if taken.len() <= marks.len() {
        result.warnings.push(format!(
            "phase {:?} ended after {} of host writes, before checkpoint {:?} ({}): it is reported as not reached",
            p.name,
            wafsim_core::units::human(host_written),
            p.checkpoints[taken.len() - 1],
            wafsim_core::units::human(marks[taken.len() - 1])
        ));
    }
    // Steadiness is about device GC; a drive without it (ZNS) has nothing to settle.
    let device_gc = stack.devices.iter().any(|d| d.flash().is_some());
    if p.measure && host_written > 0 && device_gc {
        let verdict = crate::run::steady::judge(&round_waf, round_bytes, &ss);
        if !verdict.steady {
            result.warnings.push(format!(
                "phase {:?} ended before WAF was steady ({}); the result may still be moving: write more (a larger amount or runtime) or use steady_state = {{ ... }} on the phase",
                p.name,
                verdict.describe()
            ));
        }
        result.phases[pi].steady = Some(verdict);
    }
    Ok(())
}

/// Rows of the checkpoints from the counts `taken` at the phase start and at each checkpoint
/// reached.
pub(super) fn checkpoint_rows(p: &PhaseSpec, marks: &[u64], taken: &[(u64, u64, Option<u64>)], mu: u64) -> Vec<Checkpoint> {
    let (h0, m0, a0) = taken[0];
    let origin = if p.measure_from == MeasureFrom::Run { "the run start" } else { "the phase start" };
    marks
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let Some(&(h, m, a)) = taken.get(i + 1) else {
                return Checkpoint { label: p.checkpoints[i].clone(), origin, at_bytes: at, reached: None, waf: 0.0, interval_waf: 0.0, total_waf: None };
            };
            let (hp, mp, ap) = taken[i];
            let total = match (a, ap, a0) {
                (Some(a), Some(ap), Some(a0)) if a > a0 => Some((waf((m - m0) * mu, a - a0), waf((m - mp) * mu, a.saturating_sub(ap)))),
                _ => None,
            };
            Checkpoint { label: p.checkpoints[i].clone(), origin, at_bytes: at, reached: Some(h - h0), waf: waf((m - m0) * mu, h - h0), interval_waf: waf((m - mp) * mu, h - hp), total_waf: total }
        })
        .collect()
}
