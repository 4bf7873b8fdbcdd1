//! RocksDB's write controller: when client writes are stopped or slowed, and how the slowed
//! rate moves, as a pure state machine over the tree's state at each version install (RocksDB
//! 7.8.3, `db/column_family.cc` `ColumnFamilyData::RecalculateWriteStallConditions`,
//! `GetWriteStallConditionAndCause`, `SetupDelay`; `db/write_controller.cc`).
//!
//! - Stop: memtables not flushed >= `max_write_buffer_number`, L0 files >=
//!   `level0_stop_writes_trigger`, or the compaction debt >= the hard limit. The rate is kept.
//! - Delay: L0 files >= `level0_slowdown_writes_trigger` or the debt >= the soft limit (the
//!   memtable delay needs `max_write_buffer_number` > 3: never at the default 2, not modelled).
//!   Only when a delay was already in force is the rate moved: x 0.6 near a stop (L0 >= stop
//!   trigger - 2, or the debt past three quarters of the soft-to-hard gap), x 0.8 when the
//!   debt did not shrink since the last install, x 1.25 when it did (at most the configured
//!   rate); never below 16 KiB/s. Coming from normal or from a stop the rate is kept.
//! - Normal: the rate x 1.4 (at most the configured rate) if a delay was in force.
//!
//! The L0 count is every installed L0 file, those being compacted included
//! (`VersionStorageInfo::CalculateBaseBytes`, `l0_delay_trigger_count`).

/// The write controller's figures (RocksDB's options of the same names).
#[derive(Debug, Clone, PartialEq)]
pub struct WriteControllerConfig {
    /// Read and write bytes per second each background job (one per lane) moves: the speed
    /// of a flush or compaction thread on the machine (no default in RocksDB: a property of
    /// the machine; `LsmConfig` leaves it to the caller).
    pub background_bandwidth: f64,
    /// Bytes per second of log records the clients send when not slowed; infinite: as fast as
    /// they can (db_bench's fill benchmarks).
    pub client_rate: f64,
    /// The slowed rate a delay starts from and its ceiling, bytes/s (`delayed_write_rate`:
    /// RocksDB 16 MiB/s, db_bench 8 MiB/s).
    pub delayed_write_rate: f64,
    /// L0 files that slow writes (RocksDB 20).
    pub level0_slowdown_writes_trigger: u32,
    /// L0 files that stop writes (RocksDB 36).
    pub level0_stop_writes_trigger: u32,
    /// Memtables not flushed that stop writes (RocksDB 2).
    pub max_write_buffer_number: u32,
    /// Compaction debt that slows writes (RocksDB 64 GiB).
    pub soft_pending_compaction_bytes: u64,
    /// Compaction debt that stops writes (RocksDB 256 GiB, db_bench 128 GiB).
    pub hard_pending_compaction_bytes: u64,
}

impl WriteControllerConfig {
    /// RocksDB's defaults with the machine's `background_bandwidth`; clients as fast as they
    /// can.
    pub fn rocksdb(background_bandwidth: f64) -> WriteControllerConfig {
        WriteControllerConfig {
            background_bandwidth,
            client_rate: f64::INFINITY,
            delayed_write_rate: 16.0 * 1024.0 * 1024.0,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_write_buffer_number: 2,
            soft_pending_compaction_bytes: 64 << 30,
            hard_pending_compaction_bytes: 256 << 30,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let pos = |v: f64| v > 0.0 && !v.is_nan();
        if !pos(self.background_bandwidth) || !self.background_bandwidth.is_finite() {
            return Err("write controller: background_bandwidth must be a positive number of bytes/s".into());
        }
        if !pos(self.client_rate) {
            return Err("write controller: client_rate must be positive (infinite: as fast as they can)".into());
        }
        if !pos(self.delayed_write_rate) || !self.delayed_write_rate.is_finite() {
            return Err("write controller: delayed_write_rate must be a positive number of bytes/s".into());
        }
        if self.level0_slowdown_writes_trigger == 0 || self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger {
            return Err("write controller: need 0 < level0_slowdown_writes_trigger <= level0_stop_writes_trigger".into());
        }
        if self.max_write_buffer_number < 2 {
            return Err("write controller: max_write_buffer_number must be at least 2".into());
        }
        if self.soft_pending_compaction_bytes > self.hard_pending_compaction_bytes {
            return Err("write controller: soft_pending_compaction_bytes above the hard limit".into());
        }
        Ok(())
    }
}

/// Slowest delayed rate (`kMinWriteRate`, 16 KiB/s).
const MIN_WRITE_RATE: f64 = 16.0 * 1024.0;

/// What the controller does to the next client write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    Normal,
    Delay,
    Stop,
}

/// The tree's state the controller looks at, at an install.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TreeState {
    /// Memtables switched and not flushed.
    pub unflushed: u32,
    /// Installed L0 files, those being compacted included.
    pub l0_files: u32,
    /// `EstimateCompactionBytesNeeded`.
    pub debt: u64,
}

/// The controller's state.
#[derive(Debug, Clone)]
pub(crate) struct WriteController {
    pub cfg: WriteControllerConfig,
    pub token: Token,
    /// The delayed rate, bytes/s.
    pub rate: f64,
    prev_debt: u64,
}

impl WriteController {
    pub fn new(cfg: WriteControllerConfig) -> WriteController {
        let rate = cfg.delayed_write_rate;
        WriteController { cfg, token: Token::Normal, rate, prev_debt: 0 }
    }

    /// `RecalculateWriteStallConditions` at a flush install, a compaction install or a
    /// memtable switch.
    pub fn recalc(&mut self, t: TreeState) {
        let c = &self.cfg;
        let max = c.delayed_write_rate;
        let was_delayed = self.token == Token::Delay;
        let stop = t.unflushed >= c.max_write_buffer_number || t.l0_files >= c.level0_stop_writes_trigger || t.debt >= c.hard_pending_compaction_bytes;
        let l0_slow = t.l0_files >= c.level0_slowdown_writes_trigger;
        let debt_slow = t.debt >= c.soft_pending_compaction_bytes;
        if stop {
            self.token = Token::Stop;
        } else if l0_slow || debt_slow {
            if was_delayed {
                let near_stop = if l0_slow {
                    t.l0_files + 2 >= c.level0_stop_writes_trigger
                } else {
                    let gap = c.hard_pending_compaction_bytes - c.soft_pending_compaction_bytes;
                    (t.debt - c.soft_pending_compaction_bytes) as f64 > 3.0 * gap as f64 / 4.0
                };
                if near_stop {
                    self.rate = (self.rate * 0.6).max(MIN_WRITE_RATE);
                } else if self.prev_debt > 0 && self.prev_debt <= t.debt {
                    self.rate = (self.rate * 0.8).max(MIN_WRITE_RATE);
                } else if self.prev_debt > t.debt {
                    self.rate = (self.rate * 1.25).min(max);
                }
            }
            self.token = Token::Delay;
        } else {
            if was_delayed {
                self.rate = (self.rate * 1.4).min(max);
            }
            self.token = Token::Normal;
        }
        self.prev_debt = t.debt;
    }

    /// Seconds a client write of `bytes` takes (a stop is waited for by the caller).
    pub fn write_seconds(&self, bytes: u64) -> f64 {
        match self.token {
            Token::Delay => bytes as f64 / self.rate,
            _ => bytes as f64 / self.cfg.client_rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(unflushed: u32, l0_files: u32, debt: u64) -> TreeState {
        TreeState { unflushed, l0_files, debt }
    }

    #[test]
    fn the_rate_moves_only_while_a_delay_is_in_force() {
        let mut w = WriteController::new(WriteControllerConfig::rocksdb(1e8));
        let r0 = w.cfg.delayed_write_rate;
        w.recalc(tree(0, 10, 100));
        assert_eq!((w.token, w.rate), (Token::Normal, r0));
        // Into a delay from normal: the rate is kept.
        w.recalc(tree(0, 20, 200));
        assert_eq!((w.token, w.rate), (Token::Delay, r0));
        // Debt grew: x 0.8; shrank: x 1.25 (capped at the configured rate).
        w.recalc(tree(0, 21, 300));
        assert_eq!(w.rate, r0 * 0.8);
        w.recalc(tree(0, 21, 250));
        assert_eq!(w.rate, r0);
        w.recalc(tree(0, 21, 100));
        assert_eq!(w.rate, r0, "never above delayed_write_rate");
        // Near the stop trigger: x 0.6.
        w.recalc(tree(0, 34, 50));
        assert_eq!(w.rate, r0 * 0.6);
        // A stop keeps the rate; the delay after it does not move it.
        w.recalc(tree(0, 36, 60));
        assert_eq!((w.token, w.rate), (Token::Stop, r0 * 0.6));
        w.recalc(tree(0, 25, 70));
        assert_eq!((w.token, w.rate), (Token::Delay, r0 * 0.6));
        // Back to normal: x 1.4.
        w.recalc(tree(0, 3, 10));
        assert_eq!(w.token, Token::Normal);
        assert!((w.rate - r0 * 0.6 * 1.4).abs() < 1e-6);
        // Two memtables waiting for their flush stop writes.
        w.recalc(tree(2, 0, 0));
        assert_eq!(w.token, Token::Stop);
    }

    #[test]
    fn a_write_takes_its_bytes_over_the_rate_in_force() {
        let mut w = WriteController::new(WriteControllerConfig { client_rate: 1e6, ..WriteControllerConfig::rocksdb(1e8) });
        assert_eq!(w.write_seconds(1000), 1e-3);
        w.recalc(tree(0, 20, 1));
        assert_eq!(w.write_seconds(16 * 1024 * 1024), 1.0);
    }
}
