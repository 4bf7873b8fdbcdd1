//! An experiment's traffic sent to a live drive over NBD (`wafsim feed`): its stores, fio jobs,
//! traces and synthetic workloads, built as `wafsim run` builds them, as a real NBD client.
//!
//! * Each namespace is reached through the export of its name; a write with placement handle
//!   `K` goes through `NAME@K` (one connection each, opened when first needed), a write with no
//!   directive through `NAME`, as a `wafsim serve` drive names them.
//! * One command at a time over all connections: every command waits for its reply before the
//!   next is sent, so the server sees the commands in the run's order. Fed to a `wafsim serve`
//!   drive that starts as the run's does, the drive's counters end where the run's end.
//! * `real_time`: a source with a clock of its own (a store's clients at a rate) sends each
//!   command no earlier than its time after the phase's start, 1:1 (for a paced server, whose
//!   replies then carry the modelled drive's latency).
//!
//! The data written is a fixed pseudo-random pattern: the model knows where its records go,
//! not what they hold.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use wafsim_core::pipeline::{IoSource, LayerFigures, SourceStats};
use wafsim_core::{Io, Op};
use wafsim_experiment::run::stream::Streams;

use crate::client::{Client, ServerAddr};

/// Longest command sent as one (the payload limit `wafsim serve` advertises); longer reads and
/// writes go as several.
const MAX_COMMAND: u32 = 32 << 20;

/// How a feed runs.
#[derive(Debug, Clone, Default)]
pub struct FeedOptions {
    /// Send no reads (they do not change a drive's WAF; they cost a round trip and their data).
    pub skip_reads: bool,
    /// Send clocked sources' commands at their times (wall clock = model clock from the phase's
    /// start).
    pub real_time: bool,
}

/// What was sent during one phase.
#[derive(Debug, Clone, Default)]
pub struct Sent {
    /// Read commands (before splitting at [`MAX_COMMAND`]).
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Reads the model issued and the feed did not send (`skip_reads`).
    pub skipped_reads: u64,
    /// Write commands.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Trim commands.
    pub trims: u64,
    /// Bytes trimmed.
    pub trim_bytes: u64,
    /// Flush commands.
    pub flushes: u64,
}

/// One phase as fed.
#[derive(Debug, Clone)]
pub struct PhaseFed {
    /// The phase's name.
    pub name: String,
    /// Whether the experiment measures it.
    pub measured: bool,
    /// Commands and bytes sent.
    pub sent: Sent,
    /// Wall time the phase took.
    pub elapsed: Duration,
    /// Model time the phase's clocked sources covered (0 without a clock).
    pub model_ns: u64,
    /// With `real_time`: commands sent more than a millisecond after their time, and the
    /// largest delay.
    pub late: (u64, Duration),
    /// Each source: name, namespace, what it issued.
    pub jobs: Vec<(String, String, SourceStats)>,
    /// The stores' and file systems' figures at the phase's end: name, file system, figures.
    pub rows: Vec<(String, String, LayerFigures)>,
    /// Findings about how the phase's sources were combined.
    pub notes: Vec<String>,
}

/// Progress, after each batch of commands.
#[derive(Debug, Clone, Copy)]
pub struct FeedProgress<'a> {
    /// Phase being fed (index) and how many there are.
    pub phase: (usize, usize),
    /// Its name.
    pub name: &'a str,
    /// Commands sent in this phase so far.
    pub commands: u64,
    /// Bytes written in this phase so far.
    pub write_bytes: u64,
    /// Wall time since the phase began.
    pub elapsed: Duration,
}

/// The connections of a feed: each namespace's plain export, and `NAME@K` for handles in use.
struct Conns<'s> {
    server: &'s ServerAddr,
    names: Vec<String>,
    plain: Vec<Client>,
    handles: HashMap<(u32, u16), Client>,
}

impl Conns<'_> {
    fn for_io(&mut self, io: &Io) -> Result<&mut Client, String> {
        if io.op != Op::Write || io.pid.is_none() {
            return Ok(&mut self.plain[io.ns as usize]);
        }
        if io.pid.rg() != 0 {
            return Err(format!("a write to namespace {:?} names reclaim group {}: NBD exports name placement handles of reclaim group 0 only (NAME@K)", self.names[io.ns as usize], io.pid.rg()));
        }
        let key = (io.ns, io.pid.handle());
        if !self.handles.contains_key(&key) {
            let name = format!("{}@{}", self.names[io.ns as usize], key.1);
            let c = Client::connect(self.server, &name).map_err(|e| format!("{e} (the model writes namespace {:?} through placement handle {})", self.names[io.ns as usize], key.1))?;
            self.handles.insert(key, c);
        }
        Ok(self.handles.get_mut(&key).expect("inserted"))
    }

    fn close(self) {
        for c in self.plain.into_iter().chain(self.handles.into_values()) {
            let _ = c.disconnect();
        }
    }
}

/// A fixed pseudo-random pattern (xorshift64) of at least `len` bytes: grown by generating it
/// again from its start, so every write of a given length carries the same bytes.
fn pattern(buf: &mut Vec<u8>, len: usize) {
    if buf.len() >= len {
        return;
    }
    let want = len.max(2 * buf.len());
    buf.clear();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    while buf.len() < want {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf.extend_from_slice(&x.to_le_bytes());
    }
}

/// Feed every phase of `streams` to the drive behind `server`. Errors say which phase and
/// command failed.
pub fn feed(streams: &Streams, server: &ServerAddr, opts: &FeedOptions, progress: &mut dyn FnMut(&FeedProgress)) -> Result<Vec<PhaseFed>, String> {
    let cfg = streams.config();
    let names: Vec<String> = cfg.namespaces.iter().map(|n| n.name.clone()).collect();
    let mut plain = Vec::new();
    let mut sizes = Vec::new();
    for ns in &cfg.namespaces {
        let c = Client::connect(server, &ns.name).map_err(|e| e.to_string())?;
        // A server at another scale serves other sizes: the model's offsets would not fit.
        let want = ns.size_bytes;
        if c.size().abs_diff(want) > want / 100 {
            return Err(format!(
                "export {:?} is {} bytes, but the experiment (at scale {}) makes namespace {:?} {} bytes: serve and feed the same experiment at the same --scale",
                ns.name,
                c.size(),
                streams.scale(),
                ns.name,
                want
            ));
        }
        sizes.push(c.size());
        plain.push(c);
    }
    let mut conns = Conns { server, names, plain, handles: HashMap::new() };
    let mut data = Vec::new();
    let mut read_buf = Vec::new();
    let mut out = Vec::new();
    let mut fed = Vec::new();
    for pi in 0..streams.len() {
        let name = streams.phase_name(pi).to_string();
        let mut phase = streams.build(pi, &sizes).map_err(|e| format!("{e:#}"))?;
        let mut sent = Sent::default();
        let t0 = Instant::now();
        let (mut late, mut model_ns) = ((0u64, Duration::ZERO), 0u64);
        let mut times = Vec::new();
        let mut last_report = Instant::now();
        loop {
            out.clear();
            times.clear();
            let n = if opts.real_time {
                match phase.source.fill_timed(&mut out, &mut times, 256) {
                    Some(r) => r,
                    None => return Err(format!("phase {name:?}: --real-time needs sources with a clock (key-value stores with a rate, or sources with rates in time order); this phase's have none")),
                }
            } else {
                phase.source.fill(&mut out, 256)
            }
            .map_err(|e| format!("phase {name:?}: {e}"))?;
            if n == 0 {
                break;
            }
            for (k, io) in out.iter().enumerate() {
                if let Some(&t) = times.get(k) {
                    model_ns = model_ns.max(t);
                    let due = t0 + Duration::from_nanos(t);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    } else if now - due > Duration::from_millis(1) {
                        late.0 += 1;
                        late.1 = late.1.max(now - due);
                    }
                }
                send(&mut conns, io, opts, &mut sent, &mut data, &mut read_buf).map_err(|e| format!("phase {name:?}: {e}"))?;
            }
            if last_report.elapsed() >= Duration::from_millis(500) {
                last_report = Instant::now();
                progress(&FeedProgress { phase: (pi, streams.len()), name: &name, commands: sent.reads + sent.writes + sent.trims + sent.flushes, write_bytes: sent.write_bytes, elapsed: t0.elapsed() });
            }
        }
        phase.source.finish().map_err(|e| format!("phase {name:?}: {e}"))?;
        let stats = phase.source.stats().to_vec();
        let jobs = phase.labels.iter().cloned().zip(stats).map(|((n, ns), s)| (n, ns, s)).collect();
        let rows = phase.rows();
        fed.push(PhaseFed { name, measured: phase.measured, sent, elapsed: t0.elapsed(), model_ns, late, jobs, rows, notes: std::mem::take(&mut phase.notes) });
    }
    conns.close();
    Ok(fed)
}

/// Send one of the model's commands (split at [`MAX_COMMAND`] where needed) and count it.
fn send(conns: &mut Conns, io: &Io, opts: &FeedOptions, sent: &mut Sent, data: &mut Vec<u8>, read_buf: &mut Vec<u8>) -> Result<(), String> {
    let pieces = |len: u32| (0..len.div_ceil(MAX_COMMAND).max(1)).map(move |i| (i as u64 * MAX_COMMAND as u64, MAX_COMMAND.min(len - i * MAX_COMMAND)));
    match io.op {
        Op::Read if opts.skip_reads => sent.skipped_reads += 1,
        Op::Read => {
            let c = conns.for_io(io)?;
            for (o, l) in pieces(io.len) {
                c.read_into(io.offset + o, l, read_buf).map_err(|e| e.to_string())?;
            }
            sent.reads += 1;
            sent.read_bytes += io.len as u64;
        }
        Op::Write => {
            pattern(data, io.len.min(MAX_COMMAND) as usize);
            let c = conns.for_io(io)?;
            for (o, l) in pieces(io.len) {
                c.write(io.offset + o, &data[..l as usize], false).map_err(|e| e.to_string())?;
            }
            sent.writes += 1;
            sent.write_bytes += io.len as u64;
        }
        Op::Trim => {
            conns.for_io(io)?.trim(io.offset, io.len).map_err(|e| e.to_string())?;
            sent.trims += 1;
            sent.trim_bytes += io.len as u64;
        }
        Op::Flush => {
            conns.for_io(io)?.flush().map_err(|e| e.to_string())?;
            sent.flushes += 1;
        }
        other => return Err(format!("the model issued {other:?} to namespace {:?}: NBD carries reads, writes, trims and flushes only (zone commands need a zoned drive in `wafsim run`)", conns.names[io.ns as usize])),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_is_fixed_and_not_zero() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        pattern(&mut a, 4096);
        pattern(&mut b, 100);
        pattern(&mut b, 4096);
        assert_eq!(a[..4096], b[..4096]);
        assert!(a.iter().filter(|&&x| x == 0).count() < 64);
    }
}
