//! The write-controller mode of the store (`LsmConfig::write_controller`): a clock, background
//! jobs that move at a bandwidth in time, compactions picked when a lane frees, and client
//! writes stopped or slowed by RocksDB's write controller ([`super::super::stall`]).
//!
//! Time passes only through client writes (their bytes over the client rate, or over the
//! delayed rate while a delay is in force) and stops (waiting until a job completes). In that
//! time every job in a lane releases `background_bandwidth` bytes per second (a lane is a
//! thread: RocksDB's flush and compaction threads run side by side). When a job completes
//! (RocksDB installs a version) the store picks compactions for the free lanes from the tree
//! as it is then (`DBImpl::MaybeScheduleFlushOrCompaction`, `BackgroundCompaction`) and the
//! controller looks at the tree again (`InstallSuperVersion` ->
//! `RecalculateWriteStallConditions`); a memtable switch does both too.

use std::collections::HashMap;

use wafsim_core::pipeline::FileOp;

use super::super::compaction::{compaction_debt, level_targets};
use super::super::jobs::Done;
use super::super::stall::{Token, TreeState};
use super::super::{CompactionConfig, LsmError};
use super::Lsm;

/// What the clock keeps besides the controller.
#[derive(Debug, Default)]
pub(super) struct Clock {
    /// Background seconds already spent ahead of the clock (a job step overdraws).
    ahead_s: f64,
    /// Input bytes and files per level of each compaction not complete, by its number.
    in_flight: HashMap<u64, Vec<(usize, u64, u32)>>,
    /// Per level, bytes and files compactions not complete are reading.
    pub compacting_bytes: Vec<u64>,
    pub compacting_files: Vec<u32>,
}

impl Clock {
    pub fn new(levels: usize) -> Clock {
        Clock { compacting_bytes: vec![0; levels], compacting_files: vec![0; levels], ..Clock::default() }
    }

    /// Compaction `id` reads `levels` (level, bytes, files) until it completes.
    pub fn compacting(&mut self, id: u64, levels: Vec<(usize, u64, u32)>) {
        for &(l, b, f) in &levels {
            self.compacting_bytes[l] += b;
            self.compacting_files[l] += f;
        }
        self.in_flight.insert(id, levels);
    }

    fn complete(&mut self, id: u64) {
        for (l, b, f) in self.in_flight.remove(&id).unwrap_or_default() {
            self.compacting_bytes[l] -= b;
            self.compacting_files[l] -= f;
        }
    }
}

impl Lsm {
    /// L0 files as RocksDB's write stalls count them: installed (their flush complete), being
    /// compacted or not (`l0_delay_trigger_count`); under universal compaction every non-empty
    /// level below L0 counts as one more (`VersionStorageInfo::CalculateBaseBytes`: the sorted
    /// runs). A level a compaction is reading counts though the model took its files out.
    pub fn l0_stall_files(&self) -> u32 {
        let l0 = self.levels[0].iter().filter(|&&s| !self.jobs.is_incomplete(self.table(s).file)).count() as u32 + self.clock.compacting_files[0];
        match self.cfg.compaction {
            CompactionConfig::Universal(_) => l0 + (1..self.levels.len()).filter(|&l| !self.levels[l].is_empty() || self.clock.compacting_files[l] > 0).count() as u32,
            _ => l0,
        }
    }

    /// Bytes per second the jobs in lanes move together.
    fn background_rate(&self) -> f64 {
        let bw = self.wc.as_ref().expect("write controller").cfg.background_bandwidth;
        bw * self.jobs.running().max(1) as f64
    }

    /// Before a client write of `bytes` log bytes: wait out a stop, then let the write's time
    /// pass (at the client's rate, or the delayed rate).
    pub(super) fn before_write(&mut self, bytes: u64, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        let mut waited = false;
        while self.wc.as_ref().expect("write controller").token == Token::Stop {
            let rate = self.background_rate();
            let Some(used) = self.jobs.run_until_done(out) else {
                // No job can run, so nothing will clear the stop: a trigger the tree cannot
                // work off (RocksDB would wait for ever). Let the write through.
                break;
            };
            let s = used as f64 / rate;
            self.counters.stop_seconds += s;
            self.counters.clock_seconds += s;
            waited = true;
            self.installed(out)?;
        }
        if waited {
            self.counters.stopped_writes += 1;
        }
        let wc = self.wc.as_ref().expect("write controller");
        let secs = wc.write_seconds(bytes);
        if wc.token == Token::Delay {
            self.counters.delayed_writes += 1;
            self.counters.delay_seconds += secs;
        }
        self.counters.clock_seconds += secs;
        self.run_seconds(secs, out)
    }

    /// Let `secs` seconds pass for the jobs in lanes, reacting to each completion.
    fn run_seconds(&mut self, secs: f64, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        let mut left = secs - self.clock.ahead_s;
        self.clock.ahead_s = 0.0;
        while left > 0.0 && self.jobs.running() > 0 {
            let rate = self.background_rate();
            let mut budget = left * rate;
            let used = self.jobs.run_for(&mut budget, out);
            left -= used as f64 / rate;
            match self.jobs.take_done() {
                None if used == 0 => return Ok(()), // no job can step: idle time
                None => {}
                Some(d) => {
                    if let Done::Compaction(id) = d {
                        self.clock.complete(id);
                    }
                    self.installed_after_take(out)?;
                }
            }
        }
        if left < 0.0 {
            self.clock.ahead_s = -left;
        }
        Ok(())
    }

    /// A job completed or a memtable switched: pick compactions for free lanes, then let the
    /// controller look at the tree.
    pub(super) fn installed(&mut self, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        if let Some(Done::Compaction(id)) = self.jobs.take_done() {
            self.clock.complete(id);
        }
        self.installed_after_take(out)
    }

    fn installed_after_take(&mut self, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        self.schedule(out)?;
        let t = self.tree_state();
        self.wc.as_mut().expect("write controller").recalc(t);
        Ok(())
    }

    /// Fill free compaction lanes with what the tree needs now.
    fn schedule(&mut self, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        let mut rounds = 0u64;
        while self.jobs.compaction_lane_free() {
            let Some(job) = self.next_job() else { break };
            rounds += 1;
            if rounds > 1_000_000 {
                return Err(LsmError::NoProgress("a million trivial moves at one install".into()));
            }
            self.run_job(job, out)?;
        }
        Ok(())
    }

    /// What the controller looks at: memtables not flushed, installed L0 files (being
    /// compacted or not), the compaction debt.
    fn tree_state(&self) -> TreeState {
        let l0_files = self.l0_stall_files() as usize;
        let unflushed = self.jobs.unflushed() as u32;
        let lc = match &self.cfg.compaction {
            CompactionConfig::Leveled(lc) => lc,
            // RocksDB 7.8 estimates no pending compaction bytes for universal compaction
            // (`EstimateCompactionBytesNeeded`: "only implemented for level-based").
            CompactionConfig::Universal(_) => return TreeState { unflushed, l0_files: l0_files as u32, debt: 0 },
            CompactionConfig::SizeTiered(_) => unreachable!("the write controller runs leveled or universal stores only (validated)"),
        };
        let mut bytes: Vec<u64> = self.levels.iter().map(|l| l.iter().map(|&s| self.table(s).file_bytes).sum()).collect();
        let installed: Vec<u64> = self.levels[0].iter().filter(|&&s| !self.jobs.is_incomplete(self.table(s).file)).map(|&s| self.table(s).file_bytes).collect();
        for (b, c) in bytes.iter_mut().zip(&self.clock.compacting_bytes) {
            *b += c;
        }
        bytes[0] = installed.iter().sum::<u64>() + self.clock.compacting_bytes[0];
        let targets = level_targets(&bytes, lc);
        TreeState { unflushed, l0_files: l0_files as u32, debt: compaction_debt(&bytes, l0_files, &targets, lc) }
    }

    /// The end of the requests (or a shutdown flush): flush the memtable (when asked), then run
    /// jobs and the compactions they lead to until none is due (db_bench's `waitforcompaction`).
    pub(super) fn settle(&mut self, flush_memtable: bool, out: &mut Vec<FileOp>) -> Result<(), LsmError> {
        if flush_memtable && !self.mem.is_empty() {
            self.flush_memtable(out)?;
            self.installed(out)?;
        }
        loop {
            if self.jobs.run_until_done(out).is_some() {
                self.installed(out)?;
                continue;
            }
            let before = self.jobs.running();
            self.schedule(out)?;
            if self.jobs.running() <= before {
                break;
            }
        }
        self.jobs.drain(out);
        Ok(())
    }
}
