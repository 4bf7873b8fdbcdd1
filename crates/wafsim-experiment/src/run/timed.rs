//! A timed run, drive by drive: each drive on its own timeline through the timing model of its
//! kind (flash, mechanical disk, dm-zoned over disks and a cache device).

use super::collect::*;
use super::meters::{At, Checkpoints, LastWindow, Mark, Rounds};
use super::{Progress, RunCtx};
use crate::drives::{strip, Stack};
use crate::parts;
use crate::results::*;
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{bail, Context, Result};
use wafsim_core::counters::waf;
use wafsim_core::pipeline::LayerFigures;
use wafsim_core::{BlockDevice, Counters};




/// Every phase of a timed run on drive `d` (drives are independent, each on its own timeline).
pub(super) fn run_timed_drive(ctx: &mut RunCtx, phases: &[PhaseSpec], fio_files: &[Vec<parts::LoadedFio>], d: usize) -> Result<()> {
    let RunCtx { spec, stack, st, result, opts, progress } = ctx;
    let (spec, opts) = (*spec, *opts);
    let mu = stack.cfg.mapping_unit as u64;
    let log_ns = crate::plan::timing::log_interval_ns(spec)?;
    let windows = phases.iter().any(|p| p.measure_last.is_some() || !p.checkpoints.is_empty());
    let engine_opts = wafsim_time::EngineOptions { sample_ns: log_ns, snapshots: windows };
    stack.devices[d].model_mut().start_clock(log_ns)?;
    let mut measured_ns = 0u64;
    let mut busy_window_ns = 0u64;
    // Time of the drive's first phase start: bandwidth points count from it.
    let mut run_origin: Option<u64> = None;

    for (pi, p) in phases.iter().enumerate() {
        let pctx = || format!("phase {:?}", p.name);
        one_window_choice(p)?;
        let from_run = measures_from_run(p)?;
        // What measures inside a phase reads one drive's counters as the phase goes.
        let inside = [("measure_from = \"run\"", from_run), ("steady_state", p.steady_state.is_some()), ("measure_last", p.measure_last.is_some()), ("checkpoints", !p.checkpoints.is_empty())];
        if let Some((key, _)) = inside.iter().find(|k| k.1).filter(|_| stack.devices.len() > 1) {
            bail!("phase {:?}: {key} in a timed run needs a single drive (this variant has {}, each on its own timeline); run the phase untimed (timing off)", p.name, stack.devices.len());
        }
        if (p.measure_last.is_some() || !p.checkpoints.is_empty()) && p.write_rate.is_some() {
            bail!("phase {:?}: write_rate turns durations into bytes in untimed phases; a timed phase has model time, and its durations are model time: drop write_rate", p.name);
        }
        let phase_start = stack.devices[d].counters().clone();
        let parts = parts::build_parts(spec, pi, p, &fio_files[pi], &stack.device_target(d), true).with_context(pctx)?;
        let fs_rows = parts.rows();
        let has_store_rows = !fs_rows.is_empty();
        // The stores' figures before the phase: whether they load first (`measure_from = "run"`).
        let figures0: Vec<_> = parts.parts.iter().map(|x| x.source.figures()).collect();
        let mut labels = Vec::new();
        let mut jobs = Vec::new();
        let per_namespace_queues = spec.timing.as_ref().is_some_and(|t| t.queues == crate::schema::Queues::PerNamespace);
        for x in parts.parts {
            labels.push((x.label.clone(), x.timing.iodepth));
            jobs.push(wafsim_time::JobSpec {
                name: x.label.name.clone(),
                source: x.source,
                iodepth: x.timing.iodepth,
                rate_iops: x.timing.rate_iops,
                rate_bytes: x.timing.rate_bytes,
                runtime_ns: x.timing.runtime_ns,
                ramp_ns: x.timing.ramp_ns,
                group: x.group,
                stage: x.stage,
                queue: per_namespace_queues.then(|| spec.namespace.iter().position(|n| n.name == x.label.namespace).unwrap_or(usize::MAX) as u32),
            });
        }
        let head_busy0 = stack.devices[d].model().clock().head_busy_ns;
        let mut watch = PhaseWatch::new(p, &phase_start, st.logical_total, mu, from_run, figures0)?;
        let watching = watch.rounds.is_some() || watch.stop_when_full || watch.from_run;
        // The engine runs monomorphized for the drive's kind, behind one call per phase.
        let run = stack.devices[d].model_mut().run_timed(jobs, &engine_opts, watching.then_some(&mut watch as &mut dyn wafsim_time::Watch), p).with_context(pctx)?;
        result.host_timeline.extend(run.host_points);
        let tr = run.run;
        let origin = *run_origin.get_or_insert(tr.start_ns);
        for iv in &tr.series {
            result.bandwidth.push(BwPoint { phase: pi, device: d as u32, t_s: (iv.end_ns - origin) as f64 * 1e-9, read_bytes: iv.read_bytes, write_bytes: iv.write_bytes, read_lat: iv.read_lat, write_lat: iv.write_lat });
        }
        if p.measure {
            measured_ns += tr.end_ns - tr.start_ns;
            busy_window_ns += tr.drained_ns - tr.start_ns;
            let s = result.timed.get_or_insert(TimedSummary { pe_cycles: stack.devices[d].model().clock().pe_cycles, ..Default::default() });
            s.busy.host_program_ns += tr.busy.host_program_ns;
            s.busy.host_read_ns += tr.busy.host_read_ns;
            s.busy.gc_program_ns += tr.busy.gc_program_ns;
            s.busy.gc_read_ns += tr.busy.gc_read_ns;
            s.busy.erase_ns += tr.busy.erase_ns;
            s.head_busy_ns += stack.devices[d].model().clock().head_busy_ns - head_busy0;
        }
        let rows = labels
            .into_iter()
            .zip(&tr.jobs)
            .map(|((label, iodepth), j)| {
                let stats = wafsim_core::pipeline::SourceStats {
                    ios: j.read.ios + j.write.ios + j.trim.ios,
                    write_ios: j.write.ios,
                    read_ios: j.read.ios,
                    trim_ios: j.trim.ios,
                    write_bytes: j.write.bytes,
                    read_bytes: j.read.bytes,
                    trim_bytes: j.trim.bytes,
                    zone_resets: j.zone_resets,
                    zone_finishes: j.zone_finishes,
                };
                (label, stats, Some(JobTiming::from_engine(j, iodepth)))
            })
            .collect();
        push_jobs(result, st, pi, p, rows);
        let dev = &stack.devices[d];
        let since = dev.counters().delta(&st.start[d]);
        progress(Progress {
            done_bytes: st.done_before + since.host_write_bytes + since.trim_bytes,
            total_bytes: st.total_planned,
            drive_writes: (st.done_before + since.host_write_bytes) as f64 / st.logical_total as f64,
            waf: waf(since.media_units() * mu, since.host_write_bytes),
        });
        if opts.sample_every_bytes.is_some() {
            result.timeseries.push(sample(pi, Some(d as u32), &strip(&since), mu));
        }
        if let Some(wafsim_time::Stop::NoSpace { at_ns, error }) = &tr.stopped {
            let host = dev.counters().host_write_bytes - phase_start.host_write_bytes;
            let why = format!("out of space after {} of host writes in the phase ({:.3} s of model time): {error}", wafsim_core::units::human(host), (at_ns - tr.start_ns) as f64 * 1e-9);
            result.warnings.push(format!("phase {:?} ended {why}", p.name));
            result.phases[pi].stopped = Some(why);
        }
        let mut from = if p.measure_last.is_some() || !p.checkpoints.is_empty() {
            if tr.snapshots.is_empty() {
                bail!("phase {:?}: measure_last and checkpoints in a timed run need a drive whose counters the timing model reads (flash, ZNS, SMR); this drive's timed model has none: run the phase untimed", p.name);
            }
            let mut snaps = tr.snapshots;
            snaps.push((tr.end_ns, dev.counters().clone()));
            // The checkpoints count from the load's end (the first snapshot at or after it; the
            // phase's end when the stores never finished loading: none is reached).
            let origin = match &watch.load_end {
                _ if !from_run => 0,
                Some(LoadEnd { ns, .. }) => snaps.iter().position(|s| s.0 >= *ns).unwrap_or(snaps.len() - 1),
                None => snaps.len() - 1,
            };
            timed_windows(spec, p, pi, &snaps, origin, st.logical_total, mu, has_store_rows, result)?
        } else {
            None
        };
        let host_written = dev.counters().host_write_bytes - phase_start.host_write_bytes;
        let whole_waf = waf((dev.counters().media_units() - phase_start.media_units()) * mu, host_written);
        let mut fs_from = None;
        if let Some((c, _, described)) = watch.rounds.as_ref().and_then(|r| r.window()) {
            let rows_note = if has_store_rows { "; file-system and store rows: the whole phase" } else { "" };
            result.phases[pi].window = format!("{described}{rows_note}");
            result.phases[pi].whole_waf = Some(whole_waf);
            from = Some(c[0].clone());
        } else if let (None, Some(le)) = (&from, &watch.load_end) {
            // Measured from the run: the drive's counters and the stores' figures where the
            // load ended.
            result.phases[pi].window = after_load(host_written, le.counters.host_write_bytes - phase_start.host_write_bytes);
            result.phases[pi].whole_waf = Some(whole_waf);
            fs_from = Some(fs_rows.iter().map(|r| le.figures[r.part].clone().unwrap_or_default()).collect::<Vec<_>>());
            from = Some(le.counters.clone());
        }
        if from_run && watch.load_end.is_none() {
            result.warnings.push(still_loading(p));
        }
        push_fs(result, p, &fs_rows, fs_rows.iter().map(|r| tr.jobs[r.part].figures.clone().unwrap_or_default()).collect(), fs_from.as_deref());
        if let Some(rounds) = &watch.rounds {
            if p.measure && host_written > 0 && dev.flash().is_some() {
                let verdict = rounds.verdict();
                if !verdict.steady {
                    result.warnings.push(format!("phase {:?} ended before WAF was steady ({}); the result may still be moving: write more (a larger amount or runtime)", p.name, verdict.describe()));
                }
                result.phases[pi].steady = Some(verdict);
            }
        }
        let delta = dev.counters().delta(from.as_ref().unwrap_or(&phase_start));
        account_phase(result, st, pi, p.measure, d, &delta);
    }
    if let Some(t) = &mut result.timed {
        t.elapsed_ns = t.elapsed_ns.max(measured_ns);
        t.busy_window_ns = t.busy_window_ns.max(busy_window_ns);
        let c = stack.devices[d].model().clock();
        t.dies += c.dies;
        t.disks += c.disks;
    }
    let since = stack.devices[d].counters().delta(&st.start[d]);
    st.done_before += since.host_write_bytes + since.trim_bytes;
    Ok(())
}



/// What a timed phase watches while the engine runs it, as an untimed phase does at its batch
/// ends: its steady-state rounds (`steady_state`: the same rounds and judgement, fed the
/// drive's counters at write completions), the end of its stores' load (`measure_from =
/// "run"`, looked for every thousandth of the drive's capacity in host writes) and a layer out
/// of space (`stop_when_full`).
struct PhaseWatch {
    rounds: Option<Rounds>,
    mu: u64,
    stop_when_full: bool,
    from_run: bool,
    load_end: Option<LoadEnd>,
    /// Host bytes between looks for the load's end, and at the last look.
    step: u64,
    looked: u64,
}

/// Where a phase's stores finished loading: model time, the drive's counters and every job's
/// figures then.
struct LoadEnd {
    ns: u64,
    counters: Counters,
    figures: Vec<Option<LayerFigures>>,
}

impl PhaseWatch {
    /// The watch of phase `p` from its start (`start`: the drive's counters; `figures`: every
    /// job's figures before it ran).
    fn new(p: &PhaseSpec, start: &Counters, logical: u64, mu: u64, from_run: bool, figures: Vec<Option<LayerFigures>>) -> Result<PhaseWatch> {
        let rounds = match &p.steady_state {
            Some(ss) => {
                let round_bytes = ss.round_bytes(logical)?;
                Some(Rounds::new(ss.clone(), true, round_bytes, (start.host_write_bytes, start.media_units(), start.erases), || (vec![start.clone()], Vec::new())))
            }
            None => None,
        };
        // Stores that load nothing: the run starts with the phase (0 stands for its start).
        let loaded = !figures.iter().flatten().any(|f| f.loading);
        let load_end = (from_run && loaded).then(|| LoadEnd { ns: 0, counters: start.clone(), figures });
        Ok(PhaseWatch { rounds, mu, stop_when_full: p.stop_when_full, from_run, load_end, step: (logical / 1000).max(1 << 16), looked: start.host_write_bytes })
    }
}

impl wafsim_time::Watch for PhaseWatch {
    fn next_bytes(&self) -> u64 {
        let rounds = self.rounds.as_ref().map_or(u64::MAX, |r| r.next_due());
        let load = if self.from_run && self.load_end.is_none() { self.looked.saturating_add(self.step) } else { u64::MAX };
        rounds.min(load)
    }
    fn look(&mut self, now: u64, c: &Counters, sources: &wafsim_time::Sources) -> bool {
        self.looked = c.host_write_bytes;
        let seeking = self.from_run && self.load_end.is_none();
        let due = self.rounds.as_ref().is_some_and(|r| r.due(c.host_write_bytes));
        if !seeking && !due {
            return false;
        }
        let figures = sources.figures();
        // A store still filling (or loading, when measured from the run): its rounds are not
        // judged; the window starts after it.
        let unsettled = figures.iter().flatten().any(|f| f.warming || (self.from_run && f.loading));
        if seeking && !figures.iter().flatten().any(|f| f.loading) {
            self.load_end = Some(LoadEnd { ns: now, counters: c.clone(), figures });
        }
        match self.rounds.as_mut().filter(|_| due) {
            Some(r) => r.close((c.host_write_bytes, c.media_units(), c.erases), self.mu, unsettled, || vec![c.clone()], Vec::new),
            None => false,
        }
    }
    fn stop_on_no_space(&self) -> bool {
        self.stop_when_full
    }
}

/// Read every drive's timing configuration before the run starts (errors before a possibly
/// long precondition); false when the run is untimed. As soon as one drive is untimed, so is
/// the run (every drive reads the same `[timing]`).
pub(super) fn configure(spec: &ExperimentSpec, stack: &mut Stack) -> Result<bool> {
    for d in &mut stack.devices {
        if !d.model_mut().configure_timing(spec)? {
            return Ok(false);
        }
    }
    Ok(!stack.devices.is_empty())
}

/// The windows of timed phase `p` from its counter snapshots (`snaps`: the phase start first,
/// its end last), through the same meters an untimed phase feeds at its batch ends: checkpoint
/// rows, the window's description and the counters where the measured window starts (None: the
/// whole phase).
#[allow(clippy::too_many_arguments)]
fn timed_windows(spec: &ExperimentSpec, p: &PhaseSpec, pi: usize, snaps: &[(u64, Counters)], origin: usize, logical: u64, mu: u64, has_rows: bool, result: &mut VariantResult) -> Result<Option<Counters>> {
    let (start, end) = (&snaps[0], &snaps[snaps.len() - 1]);
    let at = |s: &(u64, Counters)| At { host: s.1.host_write_bytes - start.1.host_write_bytes, ns: s.0 - start.0 };
    // The checkpoints' clock: from the phase start, or from where the stores' load ended.
    let clock = &snaps[origin];
    let at_clock = |s: &(u64, Counters)| At { host: s.1.host_write_bytes - clock.1.host_write_bytes, ns: s.0 - clock.0 };
    let grid = snaps.len().saturating_sub(2).max(1);
    let precision = format!("snapshots every {:.3} ms of model time", (end.0 - start.0) as f64 / grid as f64 * 1e-6);
    let mut marks = Vec::new();
    for c in &p.checkpoints {
        marks.push(Mark::parse("checkpoints", c, logical, spec.scale).map_err(|e| anyhow::anyhow!("phase {:?}: {e}", p.name))?);
    }
    // Where each checkpoint is first reached, in host bytes (a duration where the drive reached
    // it; the phase's end if it did not): its row's position, and what must increase.
    let positions: Vec<u64> = marks
        .iter()
        .map(|m| match m {
            Mark::Bytes(b) => *b,
            Mark::Ns(_) => snaps[origin..].iter().find(|s| m.reached(At::default(), at_clock(s))).map_or(at_clock(end).host, |s| at_clock(s).host),
        })
        .collect();
    let mut checkpoints = Checkpoints::new(marks, (0, clock.1.media_units(), None));
    for s in &snaps[origin..] {
        while checkpoints.due(at_clock(s)) {
            checkpoints.take((at_clock(s).host, s.1.media_units(), None));
        }
    }
    if let Some(i) = checkpoints.missed() {
        result.warnings.push(format!(
            "phase {:?} ended after {} of host writes and {:.3} s of model time, before checkpoint {:?}: it is reported as not reached",
            p.name,
            wafsim_core::units::human(at(end).host),
            (end.0 - start.0) as f64 * 1e-9,
            p.checkpoints[i]
        ));
    }
    if positions.windows(2).any(|w| w[0] > w[1]) {
        anyhow::bail!("phase {:?}: checkpoints must increase (in bytes or model time, as given)", p.name);
    }
    result.phases[pi].checkpoints = checkpoints.rows(p, &positions, mu);
    // The measured window: the newest snapshot at least `measure_last` before the end.
    let Some(last) = &p.measure_last else { return Ok(None) };
    let m = Mark::parse("measure_last", last, logical, spec.scale).map_err(|e| anyhow::anyhow!("phase {:?}: {e}", p.name))?;
    let mut window = LastWindow::new(m, start);
    for s in &snaps[1..snaps.len() - 1] {
        window.keep(at(s), s);
    }
    let Some(&(_, from)) = window.start(at(end)) else {
        result.warnings.push(format!("phase {:?} is shorter than measure_last ({last}): the whole phase is reported", p.name));
        return Ok(None);
    };
    let rows_note = if has_rows { "; file-system and store rows: the whole phase" } else { "" };
    result.phases[pi].window = format!(
        "last {last} ({} of host writes over {:.3} s of model time; {precision}{rows_note})",
        wafsim_core::units::human(end.1.host_write_bytes - from.1.host_write_bytes),
        (end.0 - from.0) as f64 * 1e-9
    );
    result.phases[pi].whole_waf = Some(waf((end.1.media_units() - start.1.media_units()) * mu, at(end).host));
    Ok(Some(from.1.clone()))
}
