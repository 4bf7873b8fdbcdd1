//! Paced serving (`wafsim serve --pace`): each reply leaves no earlier than the wall-clock time
//! at which the drive's timing model completes the command, so a client sees the latency and
//! throughput of the modelled drive (real-time emulation) instead of the speed of the host.
//!
//! Time: the model's clock is wall-clock nanoseconds since the [`Pacer`] was made (1:1). A
//! request arriving at wall time `t` is handed to the model at `t`, after the model has run its
//! internal events up to `t`, exactly as the job engine orders a host event after the device
//! events before it (wafsim-time, engine.rs). Nothing runs the model between requests: it is a
//! discrete-event model, so catching up when the next request arrives (or when a waiting
//! request polls) gives the same result as running it in real time, and an idle server costs
//! nothing.
//!
//! Completion: most commands get their completion time at submission (reads, trims, writes
//! that fit in the write buffer); the handler sleeps until then. A write that waits for buffer
//! space completes from a later internal event: its handler polls, running the events that are
//! due by now under the lock, until some handler's step has recorded its completion in the
//! shared table, then sleeps until that time. Several handlers may poll at once; whichever holds
//! the lock runs the due events for all of them.
//!
//! Locking: the drive's lock ([`LiveDrive::lock`]) first, then the pacer's state; both are held
//! only to run the model, never while sleeping. The data stores stay outside both, as for
//! untimed serving.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wafsim_core::{Device, DeviceError, Io, Op};
use wafsim_experiment::schema::{ExperimentSpec, Queues};
use wafsim_experiment::drives::{Drive, Stack};
use wafsim_time::{Cmd, Completions, FlashTimed, TimedDevice, Timeline, TimingConfig};

use crate::export::{Export, ExportError, ExportMap};
use crate::proto::BlockSizes;
use crate::sim::{chunks, exports_with, Backing, LiveDrive, NsExport};

/// A reply ready this much after the model's completion time counts as late: the host, not
/// the model, decided its latency. Below it, lateness is the sleep's own wake-up jitter.
pub const LATE_NS: u64 = 200_000;

/// Longest a handler whose command the model holds sleeps before looking again (the next
/// internal event usually wakes it sooner).
const POLL_NS: u64 = 200_000;

/// Waits shorter than this are spun (yielding) rather than slept: a sleep wakes up to the
/// thread's timer slack (50 us by default on Linux) late, as much as a whole NAND read.
const SPIN_NS: u64 = 60_000;

/// The timing configuration of every drive of `stack` for paced serving, or why there is none.
/// Pacing needs a flash drive (the timing model of flash dies, channels and write buffer; disk
/// and host-layer models are driven by the job engine only) and `[timing] enabled = true`.
pub fn timing_configs(spec: &ExperimentSpec, stack: &Stack) -> Result<Vec<TimingConfig>, String> {
    let mut out = Vec::new();
    for dev in &stack.devices {
        let Some(f) = dev.flash() else {
            return Err(format!("--pace: pacing covers flash drives; this variant is {}", dev.model().what()));
        };
        match wafsim_experiment::plan::timing::timing_config(spec, f.config()) {
            Ok(Some(tc)) => out.push(tc),
            Ok(None) => {
                return Err("--pace needs the timing model: set [timing] enabled = true in the experiment (and give [device.geometry]; see experiments/live/paced.toml)".to_string())
            }
            Err(e) => return Err(format!("--pace: {e:#}")),
        }
    }
    Ok(out)
}

/// Whether the connections to one namespace share its submission queue (`[timing] queues =
/// "per-namespace"`, as the jobs of one namespace do in timed runs); else each connection has
/// a queue of its own, as each fio job has.
pub fn namespace_queues(spec: &ExperimentSpec) -> bool {
    spec.timing.as_ref().is_some_and(|t| t.queues == Queues::PerNamespace)
}

/// Completions the pacer has sent, and how many came late (see [`LATE_NS`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PaceStats {
    /// Commands completed (a request longer than 1 GiB is several).
    pub completions: u64,
    /// Of those, replies ready more than [`LATE_NS`] after the model's completion time.
    pub late: u64,
    /// Sum and maximum of the late replies' lateness, ns.
    pub late_ns: u64,
    /// Maximum lateness, ns.
    pub max_late_ns: u64,
}

/// The timing models of a served drive, on the wall clock.
pub struct Pacer {
    drive: Arc<LiveDrive>,
    origin: Instant,
    state: Mutex<State>,
    /// `[timing] queues = "per-namespace"`: the connections to one namespace share its
    /// submission queue (else each connection has its own, as each fio job has in timed runs).
    per_namespace_queues: bool,
    completions: AtomicU64,
    late: AtomicU64,
    late_ns: AtomicU64,
    max_late_ns: AtomicU64,
}

struct State {
    /// One model per drive of the stack.
    models: Vec<Model>,
    /// Experiment namespace -> (drive, namespace on that drive).
    route: Vec<(usize, u32)>,
    /// Completion times found by whoever ran the model, by command id, until the command's own
    /// handler takes them.
    done: HashMap<u32, u64>,
    next_id: u32,
    /// Completions of one model call.
    scratch: Vec<(Cmd, u64)>,
}

struct Model {
    tl: Timeline,
    /// Latest completion time given out: with nothing held, the drive is idle from then on.
    busy_until: u64,
}

/// The commands of one request, on one drive: completion times known so far.
struct Ticket {
    drive: usize,
    /// Ids whose completion time is not known yet.
    pending: Vec<u32>,
    /// Latest completion time known.
    done_at: u64,
    /// Commands of the request.
    cmds: u64,
}

thread_local! {
    /// This thread's submission queue: the server runs each connection on its own thread.
    static CONN_QUEUE: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Queue indices handed to connection threads (dense: the model keeps a counter per queue).
static NEXT_QUEUE: AtomicU32 = AtomicU32::new(0);

fn conn_queue() -> u32 {
    CONN_QUEUE.with(|q| {
        q.get().unwrap_or_else(|| {
            let n = NEXT_QUEUE.fetch_add(1, Ordering::Relaxed);
            q.set(Some(n));
            n
        })
    })
}

fn flash(dev: &mut Drive) -> &mut Device {
    dev.flash_mut().expect("Pacer::new checked: every drive is a flash drive")
}

fn failed(e: DeviceError) -> ExportError {
    ExportError::Failed(format!("simulated drive: {e}"))
}

impl Model {
    /// Run the internal events due by `upto`, then let a stalled write buffer take a write
    /// (the engine does this when nothing else is due before the next host event).
    fn run_due(m: &mut FlashTimed<'_, Device>, upto: u64, out: &mut Vec<(Cmd, u64)>) -> Result<(), DeviceError> {
        while let Some(te) = m.next_event() {
            if te > upto {
                break;
            }
            let held = m.holding();
            m.step(te, &mut Completions::list(out))?;
            // A step that let waiting writes in moved the model's "last host event" (the
            // time a forced admission happens); the clock carries it to the next FlashTimed.
            if m.holding() < held {
                m.set_clock(m.clock().max(te));
            }
        }
        while m.holding() > 0 && m.unstick(&mut Completions::list(out))? {}
        Ok(())
    }
}

impl Pacer {
    /// Put every drive of `drive` on a timeline starting now. Call after any precondition:
    /// from here on every request must go through the pacer (the drives log their NAND work
    /// for the models).
    pub fn new(drive: Arc<LiveDrive>, configs: Vec<TimingConfig>, per_namespace_queues: bool) -> Result<Arc<Pacer>, String> {
        let (models, route) = {
            let mut live = drive.lock();
            let stack = &mut live.stack;
            if configs.len() != stack.devices.len() {
                return Err(format!("--pace: {} timing configurations for {} drives", configs.len(), stack.devices.len()));
            }
            let mut route = vec![(usize::MAX, 0); stack.cfg.namespaces.len()];
            for d in 0..stack.devices.len() {
                for (g, ns) in stack.device_target(d).io_ns.iter().enumerate() {
                    if let Some(ns) = ns {
                        route[g] = (d, *ns);
                    }
                }
            }
            let mut models = Vec::new();
            for (dev, cfg) in stack.devices.iter_mut().zip(configs) {
                let Some(f) = dev.flash_mut() else { return Err("--pace: pacing covers flash drives".into()) };
                models.push(Model { tl: Timeline::new(cfg, f), busy_until: 0 });
            }
            (models, route)
        };
        Ok(Arc::new(Pacer {
            drive,
            origin: Instant::now(),
            state: Mutex::new(State { models, route, done: HashMap::new(), next_id: 0, scratch: Vec::new() }),
            per_namespace_queues,
            completions: AtomicU64::new(0),
            late: AtomicU64::new(0),
            late_ns: AtomicU64::new(0),
            max_late_ns: AtomicU64::new(0),
        }))
    }

    /// The served drive.
    pub fn drive(&self) -> &Arc<LiveDrive> {
        &self.drive
    }

    /// Completions so far and how many were late.
    pub fn stats(&self) -> PaceStats {
        PaceStats {
            completions: self.completions.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
            late_ns: self.late_ns.load(Ordering::Relaxed),
            max_late_ns: self.max_late_ns.load(Ordering::Relaxed),
        }
    }

    /// Model time now: wall-clock ns since the pacer was made.
    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // As for the drive's lock: a panic elsewhere leaves the best state there is.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Submit `ios` (one request, addressed to experiment namespace `ios[0].ns`) at the current
    /// wall time.
    fn submit(&self, ios: &[Io]) -> Result<Ticket, ExportError> {
        let mut live = self.drive.lock();
        let mut guard = self.state();
        let st = &mut *guard;
        // Taken under the lock, so submissions reach the model in time order.
        let t = self.now_ns();
        let (d, _) = st.route[ios[0].ns as usize];
        let queue = if self.per_namespace_queues { ios[0].ns } else { conn_queue() };
        let first = st.next_id;
        st.next_id = st.next_id.wrapping_add(ios.len() as u32);
        st.scratch.clear();
        let r = {
            let State { models, route, scratch, .. } = &mut *st;
            let model = &mut models[d];
            let busy_until = model.busy_until;
            let mut m = FlashTimed::new(flash(&mut live.stack.devices[d]), &mut model.tl);
            (|| {
                if m.holding() == 0 && busy_until < t {
                    // Idle since the last completion: the engine lets background GC run then,
                    // knowing the next arrival; here that arrival is now, so the idle time is
                    // known exactly.
                    Model::run_due(&mut m, busy_until, scratch)?;
                    m.advance(busy_until);
                    m.idle(busy_until, t)?;
                }
                Model::run_due(&mut m, t, scratch)?;
                m.advance(t);
                m.set_clock(m.clock().max(t));
                for (i, io) in ios.iter().enumerate() {
                    let (dd, ns) = route[io.ns as usize];
                    debug_assert_eq!(dd, d, "one request addresses one namespace");
                    let cmd = Cmd { job: first.wrapping_add(i as u32), queue, submitted: t, io: Io { ns, ..*io } };
                    m.submit(cmd, t, &mut Completions::list(scratch))?;
                }
                while m.holding() > 0 && m.unstick(&mut Completions::list(scratch))? {}
                Ok(())
            })()
        };
        for io in ios {
            live.count(io.op);
        }
        drop(live);
        let mut ticket = Ticket { drive: d, pending: (0..ios.len() as u32).map(|i| first.wrapping_add(i)).collect(), done_at: t, cmds: ios.len() as u64 };
        // Recorded also after an error: the completions found on the way belong to others.
        st.record(d, &mut ticket);
        r.map_err(failed)?;
        Ok(ticket)
    }

    /// Wait until every command of `ticket` has completed in the model and its time has come.
    fn wait(&self, mut ticket: Ticket) -> Result<(), ExportError> {
        let n = ticket.cmds;
        while !ticket.pending.is_empty() {
            let next = {
                let mut live = self.drive.lock();
                let mut guard = self.state();
                let st = &mut *guard;
                let now = self.now_ns();
                let d = ticket.drive;
                st.scratch.clear();
                let mut m = FlashTimed::new(flash(&mut live.stack.devices[d]), &mut st.models[d].tl);
                let r = Model::run_due(&mut m, now, &mut st.scratch);
                let next = m.next_event().unwrap_or(u64::MAX).min(now + POLL_NS);
                drop(live);
                st.record(d, &mut ticket);
                r.map_err(failed)?;
                next
            };
            if !ticket.pending.is_empty() {
                self.sleep_until(next);
            }
        }
        let now = self.now_ns();
        self.completions.fetch_add(n, Ordering::Relaxed);
        if now > ticket.done_at + LATE_NS {
            let by = now - ticket.done_at;
            self.late.fetch_add(n, Ordering::Relaxed);
            self.late_ns.fetch_add(by * n, Ordering::Relaxed);
            self.max_late_ns.fetch_max(by, Ordering::Relaxed);
        } else {
            self.sleep_until(ticket.done_at);
        }
        Ok(())
    }

    /// Sleep until model time `t`: a sleep for most of it, yielding spins for the rest.
    fn sleep_until(&self, t: u64) {
        loop {
            let now = self.now_ns();
            if now >= t {
                return;
            }
            let left = t - now;
            if left > SPIN_NS {
                std::thread::sleep(Duration::from_nanos(left - SPIN_NS));
            } else {
                std::thread::yield_now();
            }
        }
    }
}

impl State {
    /// File the completions of the last model call: the ticket's own into it, the others into
    /// the table for their handlers; take the ticket's from the table.
    fn record(&mut self, d: usize, ticket: &mut Ticket) {
        for &(cmd, at) in &self.scratch {
            let m = &mut self.models[d];
            m.busy_until = m.busy_until.max(at);
            if let Some(i) = ticket.pending.iter().position(|&id| id == cmd.job) {
                ticket.pending.swap_remove(i);
                ticket.done_at = ticket.done_at.max(at);
            } else {
                self.done.insert(cmd.job, at);
            }
        }
        self.scratch.clear();
        ticket.pending.retain(|id| match self.done.remove(id) {
            Some(at) => {
                ticket.done_at = ticket.done_at.max(at);
                false
            }
            None => true,
        });
    }
}

/// [`crate::sim::exports`] with every reply paced by `pacer`'s timing model (`wafsim serve
/// --pace`).
pub fn paced_exports(pacer: &Arc<Pacer>, backing: Backing<'_>) -> Result<ExportMap, String> {
    let p = pacer.clone();
    exports_with(pacer.drive(), backing, move |inner| Arc::new(PacedExport { inner, pacer: p.clone() }))
}

/// A namespace export whose replies wait for the timing model (see the module docs); the
/// untimed [`NsExport`] it wraps gives the namespace, placement handle and data store.
pub struct PacedExport {
    pub(crate) inner: NsExport,
    pub(crate) pacer: Arc<Pacer>,
}

impl PacedExport {
    /// Model first (its time starts at arrival), then the data store while the model's time
    /// runs, then the wait.
    fn run(&self, ios: &[Io], data: impl FnOnce() -> Result<(), ExportError>) -> Result<(), ExportError> {
        // Zero-length requests make no command: nothing to time.
        if ios.is_empty() {
            return data();
        }
        let ticket = self.pacer.submit(ios)?;
        data()?;
        self.pacer.wait(ticket)
    }
}

impl Export for PacedExport {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn block_sizes(&self) -> BlockSizes {
        self.inner.block_sizes()
    }

    fn multi_conn(&self) -> bool {
        true
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), ExportError> {
        // A zero-length request is no command for the drive (as untimed).
        let ios: Vec<Io> = chunks(offset, buf.len() as u64).map(|(o, l)| self.inner.io(Op::Read, o, l)).collect();
        self.run(&ios, || self.inner.data.read(offset, buf))
    }

    fn write(&self, offset: u64, data: &[u8], fua: bool) -> Result<(), ExportError> {
        let ios: Vec<Io> = chunks(offset, data.len() as u64).map(|(o, l)| self.inner.io(Op::Write, o, l)).collect();
        self.run(&ios, || self.inner.data.write(offset, data, fua))
    }

    fn trim(&self, offset: u64, len: u64) -> Result<(), ExportError> {
        let ios: Vec<Io> = chunks(offset, len).map(|(o, l)| self.inner.io(Op::Trim, o, l)).collect();
        self.run(&ios, || self.inner.data.trim(offset, len))
    }

    fn write_zeroes(&self, offset: u64, len: u64, no_hole: bool) -> Result<(), ExportError> {
        let op = if no_hole { Op::Write } else { Op::Trim };
        let ios: Vec<Io> = chunks(offset, len).map(|(o, l)| self.inner.io(op, o, l)).collect();
        self.run(&ios, || self.inner.data.write_zeroes(offset, len, no_hole))
    }

    /// As untimed: the model has no volatile cache to flush (a buffered write is as safe as a
    /// programmed one, as with a power-loss-protected drive).
    fn flush(&self) -> Result<(), ExportError> {
        self.inner.data.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::Exports;
    use wafsim_core::BlockDevice;

    fn spec(path: &str, variant: &str) -> ExperimentSpec {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
        let mut v = wafsim_experiment::load_experiment(&file).unwrap().into_iter().find(|v| v.name == variant).unwrap();
        wafsim_experiment::plan::scale::scale_spec(&mut v.spec, 1.0).unwrap();
        v.spec
    }

    /// The paced export "ssd" of experiments/live/paced.toml, variant `variant`.
    fn paced(variant: &str, precondition: bool) -> (Arc<Pacer>, Arc<dyn Export>, TimingConfig) {
        let spec = spec("experiments/live/paced.toml", variant);
        let stack = wafsim_experiment::run::build_stack(&spec).unwrap();
        let configs = timing_configs(&spec, &stack).unwrap();
        let tc = configs[0].clone();
        let drive = LiveDrive::new(stack).unwrap();
        if precondition {
            drive.precondition().unwrap();
        }
        let pacer = Pacer::new(drive, configs, namespace_queues(&spec)).unwrap();
        let map = paced_exports(&pacer, Backing::Memory).unwrap();
        let ssd = map.resolve("ssd").unwrap();
        (pacer, ssd, tc)
    }

    #[test]
    fn a_read_returns_no_earlier_than_the_model_completes_it() {
        let (pacer, ssd, tc) = paced("tlc", true);
        // Array read, channel and link transfers, controller time.
        let min = tc.nand.t_read_ns + (4096.0 * 1e9 / tc.channel_bytes_per_sec) as u64 + (4096.0 * 1e9 / tc.host_link_bytes_per_sec) as u64 + tc.read_overhead_ns;
        let mut buf = vec![1u8; 4096];
        for i in 0..20u64 {
            let t0 = Instant::now();
            ssd.read(i * 1_048_576, &mut buf).unwrap();
            assert!(t0.elapsed().as_nanos() as u64 >= min, "read {i} took {:?}, the model needs {min} ns", t0.elapsed());
        }
        assert_eq!(buf, vec![0u8; 4096], "the preconditioned drive reads zeroes");
        assert_eq!(pacer.stats().completions, 20);
        assert_eq!(pacer.drive().lock().read_commands, 20);
    }

    /// Four connections write 16 MiB at once into a 4 MiB write buffer: most writes wait for
    /// host programs to free space (completions from later model steps, found by whichever
    /// handler runs them), so the whole takes at least the programs of what did not fit.
    #[test]
    fn writes_beyond_the_write_buffer_wait_for_programs_across_connections() {
        let (pacer, ssd, tc) = paced("tlc", false);
        const PER: u64 = 4 << 20;
        const BS: usize = 256 << 10;
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for c in 0..4u64 {
                let ssd = ssd.clone();
                s.spawn(move || {
                    let data = vec![c as u8 + 1; BS];
                    for k in 0..PER / BS as u64 {
                        ssd.write(c * PER + k * BS as u64, &data, false).unwrap();
                    }
                });
            }
        });
        let took = t0.elapsed().as_secs_f64();
        let beyond = (4 * PER - tc.write_buffer_bytes) as f64;
        let min = beyond / tc.program_bandwidth();
        assert!(took >= min * 0.9, "16 MiB through a {} B buffer in {took:.4} s; programs need {min:.4} s", tc.write_buffer_bytes);
        assert_eq!(pacer.stats().completions, 4 * PER / BS as u64);
        let mut buf = vec![0u8; BS];
        ssd.read(3 * PER, &mut buf).unwrap();
        assert_eq!(buf, vec![4u8; BS]);
        let live = pacer.drive().lock();
        assert_eq!(live.stack.devices[0].counters().host_write_bytes, 4 * PER, "every write reached the FTL");
    }

    #[test]
    fn timing_configs_name_what_is_missing() {
        let spec = spec("experiments/live/eight-tenants.toml", "fdp");
        let stack = wafsim_experiment::run::build_stack(&spec).unwrap();
        let e = timing_configs(&spec, &stack).unwrap_err();
        assert!(e.contains("[timing] enabled = true in the experiment"), "{e}");
    }
}
