//! One phase of an untimed run: every drive at once, fed by one interleaved stream of the
//! phase's sources. After each batch the loop looks for the end of the stores' load
//! (`measure_from = "run"`) and shows the phase's meters (meters.rs) the counters: the
//! checkpoints, `measure_last`'s window, the steady-state rounds; then the time series and
//! progress. What they measured makes the phase's rows at its end.

use super::collect::*;
use super::meters::{At, BatchSize, Checkpoints, LastWindow, Mark, Rounds, Snap};
use super::{Progress, RunCtx};
use crate::parts::{self, PhaseSources};
use crate::plan::window::{checkpoint_bytes, window_bytes};
use crate::schema::PhaseSpec;
use anyhow::Result;
use wafsim_core::counters::waf;
use wafsim_core::pipeline::IoSource;
use wafsim_core::{BlockDevice, Counters};

/// One phase of an untimed run, over every drive at once.
pub(super) fn run_untimed_phase(ctx: &mut RunCtx, pi: usize, p: &PhaseSpec, fio: &[parts::LoadedFio]) -> Result<()> {
    let RunCtx { spec, stack, st, result, opts, progress } = ctx;
    let (spec, opts) = (*spec, *opts);
    let mu = stack.cfg.mapping_unit as u64;
    let mut phase = parts::build(spec, pi, p, fio, &stack.target())?;
    for n in std::mem::take(&mut phase.notes) {
        result.warnings.push(format!("phase {:?}: {n}", p.name));
    }
    let counters = |stack: &crate::drives::Stack| -> Vec<Counters> { stack.devices.iter().map(|d| d.counters().clone()).collect() };
    let phase_start = counters(stack);
    let host0 = sum(&stack.devices, |c| c.host_write_bytes);
    let media0 = sum(&stack.devices, |c| c.media_units());
    let start_host: u64 = st.start.iter().map(|c| c.host_write_bytes).sum();
    let start_trim: u64 = st.start.iter().map(|c| c.trim_bytes).sum();
    let start_media: u64 = st.start.iter().map(|c| c.media_units()).sum();

    let ss = p.steady_state.clone().unwrap_or_default();
    let stop_when_steady = p.steady_state.is_some();
    one_window_choice(p)?;
    let mut last = match &p.measure_last {
        Some(l) => {
            let bytes = window_bytes("measure_last", l, p.write_rate.as_ref(), st.logical_total, spec.scale).map_err(|e| anyhow::anyhow!("phase {:?}: {e}", p.name))?;
            Some((bytes, LastWindow::thinned(bytes, (phase_start.clone(), phase.figures()))))
        }
        None => None,
    };
    let app0: u64 = result.filesystems.iter().map(|f| f.file_write_bytes).sum();
    let mark_bytes = checkpoint_bytes(p, st.logical_total, spec.scale)?;
    let mut marks = Checkpoints::new(mark_bytes.iter().map(|&b| Mark::Bytes(b)).collect(), (0, media0, Some(app0)));
    // `measure_from = "run"`: where the stores' load ended; the checkpoints count from it.
    let from_run = measures_from_run(p)?;
    let mut run_from: Option<(u64, Snap)> = None;
    if from_run {
        let figures = phase.figures();
        if !figures.iter().any(|f| f.loading) {
            run_from = Some((0, (phase_start.clone(), figures)));
        }
    }
    let erases0 = sum(&stack.devices, |c| c.erases);
    let round_bytes = ss.round_bytes(st.logical_total)?;
    let mut rounds = Rounds::new(ss, stop_when_steady, round_bytes, (host0, media0, erases0), || (phase_start.clone(), phase.figures()));
    let rows_only = phase.rows.len() == phase.labels.len();

    let mut batch = BatchSize(64);
    let mut buf = Vec::with_capacity(crate::drives::BATCH);
    loop {
        buf.clear();
        match phase.source.fill(&mut buf, batch.0) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if p.stop_when_full && e.is_no_space() => {
                let host = sum(&stack.devices, |c| c.host_write_bytes) - host0;
                // Where it filled on the checkpoints' clock too (write_rate, from their origin).
                let hours = match (&p.write_rate, !from_run || run_from.is_some()) {
                    (Some(r), true) => Some(crate::plan::window::duration_bytes(3_600_000_000_000, r, spec.scale))
                        .map(|h| format!(" ({:.2} h from {} at {r})", (host - marks.base()) as f64 / h.max(1) as f64, if from_run { "the run start" } else { "the phase start" })),
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
        batch.after(bytes, buf.len(), rounds.round_bytes(), opts.sample_every_bytes);
        stack.submit_batch(&buf)?;

        let host = sum(&stack.devices, |c| c.host_write_bytes);
        if from_run && run_from.is_none() {
            // One look at the layers per batch until the load ends.
            let figures = phase.figures();
            if !figures.iter().any(|f| f.loading) {
                let app = app_bytes(result, &figures, rows_only, host - start_host);
                marks.restart(At::bytes(host - host0), (host - host0, sum(&stack.devices, |c| c.media_units()), app));
                run_from = Some((host - host0, (counters(stack), figures)));
            }
        }
        let counting = !from_run || run_from.is_some();
        // A batch may pass several checkpoints: each is taken here, at the same counts.
        while counting && marks.due(At::bytes(host - host0)) {
            let app = app_bytes(result, &phase.figures(), rows_only, host - start_host);
            marks.take((host - host0, sum(&stack.devices, |c| c.media_units()), app));
        }
        if let Some((_, w)) = last.as_mut().filter(|(_, w)| w.due(At::bytes(host - host0))) {
            w.keep(At::bytes(host - host0), (counters(stack), phase.figures()));
        }
        if rounds.due(host) {
            let now = (host, sum(&stack.devices, |c| c.media_units()), sum(&stack.devices, |c| c.erases));
            // A store still filling (or loading, when measured from the run): its rounds are
            // not judged; the window starts after it.
            let unsettled = stop_when_steady && phase.figures().iter().any(|f| f.warming || (from_run && f.loading));
            if rounds.close(now, mu, unsettled, || counters(stack), || phase.figures()) {
                break;
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
    // The measured window: the steady rounds, the last `measure_last` bytes, the run after the
    // load, or the phase.
    let last_from = last.as_ref().and_then(|(_, w)| w.start(At::bytes(host_written)));
    if let (Some((l, _)), None) = (&last, last_from) {
        result.warnings.push(format!("phase {:?} wrote {} B of host data, less than measure_last ({l} B): the whole phase is reported", p.name, host_written));
    }
    let (from, fs_from, described) = match (rounds.window(), last_from) {
        (Some((c, f, d)), _) => (c, Some(f), d),
        (None, Some((at, (c, f)))) => (c, Some(&f[..]), format!("last {} ({} of host writes)", p.measure_last.as_ref().map_or("", |w| w.text()), wafsim_core::units::human(host_written - at.host))),
        (None, None) => match &run_from {
            Some((at, (c, f))) => (c, Some(&f[..]), after_load(host_written, *at)),
            None => (&phase_start, None, "whole phase".to_string()),
        },
    };
    if from_run && run_from.is_none() {
        result.warnings.push(still_loading(p));
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
    result.phases[pi].checkpoints = marks.rows(p, &mark_bytes, mu);
    if let Some(i) = marks.missed() {
        result.warnings.push(format!(
            "phase {:?} ended after {} of host writes, before checkpoint {:?} ({}): it is reported as not reached",
            p.name,
            wafsim_core::units::human(host_written),
            p.checkpoints[i],
            wafsim_core::units::human(mark_bytes[i])
        ));
    }
    // Steadiness is about device GC; a drive without it (ZNS) has nothing to settle.
    let device_gc = stack.devices.iter().any(|d| d.flash().is_some());
    if p.measure && host_written > 0 && device_gc {
        let verdict = rounds.verdict();
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
