//! Background jobs: the file operations of memtable flushes and compactions, released a step at
//! a time, interleaved with each other and with the client requests' log appends.
//!
//! The store decides a job at once (which keys go where, which files it reads, writes and
//! deletes) and hands its ordered operations to `Jobs`; they are released later:
//! - lanes: at most `flush_lanes` flush jobs and `compaction_lanes` compaction jobs are in
//!   progress; the others wait in two first-in first-out queues and enter a lane in the order
//!   they were made;
//! - dependencies: a job in a lane releases nothing until every file it reads is complete (the
//!   job writing it released its Close);
//! - pacing: after a client write of `b` log bytes the jobs in progress may release
//!   `pace x b` read and write bytes, `pace = pace_base + backlog / window`, where the backlog
//!   is the read and write bytes of every job not released yet and the window is
//!   `pace_window_memtables` memtables; the credit goes round-robin over the jobs in
//!   progress, one step each: one read or write operation (at most the read or write size)
//!   with the zero-byte operations around it (Create before, Close and Deletes after). A step
//!   may overdraw the credit; the debt is carried to the next request. Credit left when no job
//!   can step is dropped (idle time is not banked).
//!
//! The backlog obeys, per client log byte, `dB = arrivals - pace_base - B / window`: it
//! decays towards `window x (arrival rate - pace_base)` with a time constant of one window of
//! client bytes, so it stays bounded whatever the run length (plus the largest single job).
//!
//! Log segments freed by a flush are deleted once every flush up to that one is complete.

use std::collections::{HashSet, VecDeque};

use wafsim_core::pipeline::{FileId, FileOp};

/// Read and write bytes of an operation.
#[inline]
fn op_bytes(op: &FileOp) -> u64 {
    match *op {
        FileOp::Write { len, .. } | FileOp::Read { len, .. } => len as u64,
        _ => 0,
    }
}

/// One job: its operations in order and how far they are released.
#[derive(Debug)]
struct Job {
    /// Flush of this memtable, or a compaction (None).
    flush_mem: Option<u64>,
    ops: Vec<FileOp>,
    next: usize,
    /// Files it reads: it starts once all are complete.
    inputs: Vec<FileId>,
    ready: bool,
    /// Bytes of the input files it deletes (held until its end).
    input_bytes: u64,
    /// A compaction's number (from [`Jobs::add_compaction`]).
    id: u64,
}

/// Which kind of job completed (the clock mode reacts: a flush or compaction installs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Done {
    Flush,
    /// The compaction of this number.
    Compaction(u64),
}

/// What the background jobs are doing, for inspection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobsState {
    /// Flush jobs in a lane.
    pub active_flushes: u32,
    /// Compaction jobs in a lane.
    pub active_compactions: u32,
    /// Flush jobs waiting for a lane.
    pub queued_flushes: u32,
    /// Compaction jobs waiting for a lane.
    pub queued_compactions: u32,
    /// Read and write bytes of all jobs not released yet.
    pub backlog_bytes: u64,
    /// Write bytes of all jobs not released yet.
    pub pending_write_bytes: u64,
    /// Bytes of files the store no longer uses whose Delete is not released yet.
    pub held_bytes: u64,
    /// The largest backlog seen after a request.
    pub max_backlog_bytes: u64,
}

/// The background job scheduler.
#[derive(Debug)]
pub(crate) struct Jobs {
    background: bool,
    flush_lanes: usize,
    compaction_lanes: usize,
    pace_base: f64,
    window: f64,
    flush_queue: VecDeque<Job>,
    compaction_queue: VecDeque<Job>,
    /// Jobs in a lane, in the order they entered.
    active: Vec<Job>,
    active_flushes: usize,
    active_compactions: usize,
    /// Next job in `active` to step.
    rr: usize,
    credit: i64,
    backlog: u64,
    pending_writes: u64,
    held: u64,
    max_backlog: u64,
    /// Files written by jobs that have not released their Close.
    incomplete: HashSet<FileId>,
    /// Log segments freed by flushes: (the flush's memtable, file, bytes).
    log_wait: VecDeque<(u64, FileId, u64)>,
    /// Flushes made, in memtable order, and whether complete.
    flushes: VecDeque<(u64, bool)>,
    /// Compactions added.
    compactions_added: u64,
    /// The last job to complete since [`Jobs::take_done`].
    done: Option<Done>,
}

impl Jobs {
    pub(crate) fn new(background: bool, flush_lanes: u32, compaction_lanes: u32, pace_base: f64, window_bytes: f64) -> Jobs {
        Jobs {
            background,
            flush_lanes: flush_lanes.max(1) as usize,
            compaction_lanes: compaction_lanes.max(1) as usize,
            pace_base,
            window: window_bytes,
            flush_queue: VecDeque::new(),
            compaction_queue: VecDeque::new(),
            active: Vec::new(),
            active_flushes: 0,
            active_compactions: 0,
            rr: 0,
            credit: 0,
            backlog: 0,
            pending_writes: 0,
            held: 0,
            max_backlog: 0,
            incomplete: HashSet::new(),
            log_wait: VecDeque::new(),
            flushes: VecDeque::new(),
            compactions_added: 0,
            done: None,
        }
    }

    /// A file a job will write (not complete until its Close is released).
    #[inline]
    pub(crate) fn will_write(&mut self, file: FileId) {
        self.incomplete.insert(file);
    }

    /// Whether `file` is being written by a job.
    #[inline]
    pub(crate) fn is_incomplete(&self, file: FileId) -> bool {
        !self.incomplete.is_empty() && self.incomplete.contains(&file)
    }

    /// Write bytes of all jobs not released yet.
    #[inline]
    pub(crate) fn pending_write_bytes(&self) -> u64 {
        self.pending_writes
    }

    pub(crate) fn state(&self) -> JobsState {
        JobsState {
            active_flushes: self.active_flushes as u32,
            active_compactions: self.active_compactions as u32,
            queued_flushes: self.flush_queue.len() as u32,
            queued_compactions: self.compaction_queue.len() as u32,
            backlog_bytes: self.backlog,
            pending_write_bytes: self.pending_writes,
            held_bytes: self.held,
            max_backlog_bytes: self.max_backlog,
        }
    }

    fn job(&mut self, flush_mem: Option<u64>, ops: Vec<FileOp>, inputs: Vec<FileId>, input_bytes: u64) -> Job {
        for op in &ops {
            self.backlog += op_bytes(op);
            if let FileOp::Write { len, .. } = *op {
                self.pending_writes += len as u64;
            }
        }
        self.held += input_bytes;
        Job { flush_mem, ops, next: 0, inputs, ready: false, input_bytes, id: 0 }
    }

    /// A flush of memtable `mem` writing `ops`; `log_freed` are the log segments (file,
    /// bytes) it frees, deleted once every flush up to this one is complete. At once mode
    /// releases everything now.
    pub(crate) fn add_flush(&mut self, mem: u64, ops: Vec<FileOp>, log_freed: Vec<(FileId, u64)>, out: &mut Vec<FileOp>) {
        for (f, b) in log_freed {
            self.held += b;
            self.log_wait.push_back((mem, f, b));
        }
        self.flushes.push_back((mem, false));
        let j = self.job(Some(mem), ops, Vec::new(), 0);
        self.flush_queue.push_back(j);
        self.promote();
        if !self.background {
            self.drain(out);
        }
    }

    /// A compaction reading `inputs` (of `input_bytes` together) with operations `ops` (reads,
    /// outputs, deletes of the inputs). Returns its number ([`Done::Compaction`]).
    pub(crate) fn add_compaction(&mut self, ops: Vec<FileOp>, inputs: Vec<FileId>, input_bytes: u64, out: &mut Vec<FileOp>) -> u64 {
        let mut j = self.job(None, ops, inputs, input_bytes);
        self.compactions_added += 1;
        let id = self.compactions_added;
        j.id = id;
        self.compaction_queue.push_back(j);
        self.promote();
        if !self.background {
            self.drain(out);
        }
        id
    }

    /// Move queued jobs into free lanes, oldest first.
    fn promote(&mut self) {
        while self.active_flushes < self.flush_lanes {
            let Some(j) = self.flush_queue.pop_front() else { break };
            self.active.push(j);
            self.active_flushes += 1;
        }
        while self.active_compactions < self.compaction_lanes {
            let Some(j) = self.compaction_queue.pop_front() else { break };
            self.active.push(j);
            self.active_compactions += 1;
        }
    }

    /// A client request wrote `logged` log bytes: release the jobs' share.
    #[inline]
    pub(crate) fn after_write(&mut self, logged: u64, out: &mut Vec<FileOp>) {
        if self.backlog == 0 {
            return;
        }
        self.max_backlog = self.max_backlog.max(self.backlog);
        let pace = self.pace_base + self.backlog as f64 / self.window;
        let add = pace * logged as f64;
        let add = if add >= 9.0e18 { i64::MAX } else { add as i64 };
        self.credit = self.credit.saturating_add(add);
        while self.credit > 0 {
            let Some(i) = self.next_ready() else {
                self.credit = 0;
                break;
            };
            let b = self.step(i, out);
            self.credit -= b as i64;
        }
    }

    /// Jobs in a lane (each moves at the background bandwidth).
    #[inline]
    pub(crate) fn running(&self) -> usize {
        self.active.len()
    }

    /// Whether a compaction lane is free, no compaction waiting for one.
    #[inline]
    pub(crate) fn compaction_lane_free(&self) -> bool {
        self.active_compactions + self.compaction_queue.len() < self.compaction_lanes
    }

    /// Flushes made and not complete (memtables not flushed yet, RocksDB's immutable ones).
    #[inline]
    pub(crate) fn unflushed(&self) -> usize {
        self.flushes.iter().filter(|f| !f.1).count()
    }

    /// The job that completed last, once.
    #[inline]
    pub(crate) fn take_done(&mut self) -> Option<Done> {
        self.done.take()
    }

    /// Release up to `budget` read and write bytes (the bandwidth of the time that passed),
    /// stopping early when a job completes (the caller reacts and calls again with what is
    /// left). A step may overdraw the budget; time with no job able to step is lost (idle).
    /// Returns the bytes released.
    pub(crate) fn run_for(&mut self, budget: &mut f64, out: &mut Vec<FileOp>) -> u64 {
        let mut used = 0;
        while *budget > 0.0 {
            let Some(i) = self.next_ready() else {
                *budget = 0.0;
                break;
            };
            let b = self.step(i, out);
            used += b;
            *budget -= b as f64;
            if self.done.is_some() {
                break;
            }
        }
        used
    }

    /// Release steps until a job completes; returns the bytes released, or None when no job
    /// can step (nothing to wait for).
    pub(crate) fn run_until_done(&mut self, out: &mut Vec<FileOp>) -> Option<u64> {
        let mut used = 0;
        loop {
            let i = self.next_ready()?;
            used += self.step(i, out);
            if self.done.is_some() {
                return Some(used);
            }
        }
    }

    /// Release everything (the request stream ended, or a shutdown flush).
    pub(crate) fn drain(&mut self, out: &mut Vec<FileOp>) {
        while let Some(i) = self.next_ready() {
            self.step(i, out);
        }
        debug_assert!(self.active.is_empty() && self.flush_queue.is_empty() && self.compaction_queue.is_empty());
        debug_assert_eq!((self.backlog, self.pending_writes, self.held), (0, 0, 0));
        self.credit = 0;
        self.done = None;
    }

    /// The next job in a lane, round-robin from `rr`, whose inputs are complete.
    fn next_ready(&mut self) -> Option<usize> {
        let n = self.active.len();
        for k in 0..n {
            let i = (self.rr + k) % n;
            let j = &mut self.active[i];
            if !j.ready {
                let inc = &self.incomplete;
                j.ready = j.inputs.iter().all(|f| !inc.contains(f));
            }
            if j.ready {
                return Some(i);
            }
        }
        None
    }

    /// Release one step of job `i`: the zero-byte operations up to and including one read or
    /// write, and the zero-byte operations after it. Returns its bytes.
    fn step(&mut self, i: usize, out: &mut Vec<FileOp>) -> u64 {
        let j = &mut self.active[i];
        let mut bytes = 0;
        while j.next < j.ops.len() {
            let op = j.ops[j.next];
            let b = op_bytes(&op);
            if b > 0 && bytes > 0 {
                break;
            }
            j.next += 1;
            bytes += b;
            match op {
                FileOp::Write { len, .. } => self.pending_writes -= len as u64,
                FileOp::Close { file } => {
                    self.incomplete.remove(&file);
                }
                _ => {}
            }
            out.push(op);
        }
        self.backlog -= bytes;
        if j.next == j.ops.len() {
            self.complete(i, out);
        } else {
            self.rr = (i + 1) % self.active.len();
        }
        bytes
    }

    fn complete(&mut self, i: usize, out: &mut Vec<FileOp>) {
        let j = self.active.remove(i);
        self.held -= j.input_bytes;
        if self.active.is_empty() {
            self.rr = 0;
        } else {
            // The job after the finished one steps next.
            self.rr = i % self.active.len();
        }
        match j.flush_mem {
            Some(mem) => {
                self.active_flushes -= 1;
                if let Some(f) = self.flushes.iter_mut().find(|f| f.0 == mem) {
                    f.1 = true;
                }
                while self.flushes.front().is_some_and(|f| f.1) {
                    self.flushes.pop_front();
                }
                // Segments whose flushes are all complete.
                let upto = self.flushes.front().map_or(u64::MAX, |f| f.0);
                while self.log_wait.front().is_some_and(|w| w.0 < upto) {
                    let (_, file, b) = self.log_wait.pop_front().expect("front");
                    self.held -= b;
                    out.push(FileOp::Delete { file });
                }
            }
            None => self.active_compactions -= 1,
        }
        self.done = Some(if j.flush_mem.is_some() { Done::Flush } else { Done::Compaction(j.id) });
        let before = self.active.len();
        self.promote();
        if before == 0 && !self.active.is_empty() {
            self.rr = 0;
        }
    }
}
