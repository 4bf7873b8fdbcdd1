//! A mechanical hard-disk timing model, standalone: a discrete-event engine calls it once per
//! command (which command next: [`Hdd::pick`]; when it completes: [`Hdd::service`]). It knows
//! nothing of zones or NAND; the host-managed SMR rules live in `wafsim_core::smr`.
//!
//! Geometry (a documented simplification, not a drive's real layout):
//! - `heads` surfaces; `cylinders` derived from the capacity. LBAs fill a cylinder (track of
//!   head 0, then head 1, ...) before the next one, from the outer diameter (OD, LBA 0) inward.
//! - Zoned recording with a constant linear density: a track's capacity falls linearly with
//!   the cylinder index from `od_rate / rps` bytes at the OD to `id_od_ratio` times that at the
//!   inner diameter (ID), so the media rate does too. The track capacity varies continuously
//!   (real drives step it in a few dozen recording zones).
//! - `od_rate` and the rate at every radius are sustained rates: head and cylinder switches of
//!   a sequential transfer are hidden by track skew, so a sequential stream crosses tracks at
//!   the media rate with no lost rotation (the datasheet's "sustained" vs "instantaneous" rate:
//!   the switch cost is folded into `od_rate`).
//! - Every track is one revolution long, so a byte's angle is the fractional part of the number
//!   of revolutions a stream from LBA 0 would take to reach it: with `x` the cylinder fraction
//!   (0 at the OD, 1 at the ID), that is `frac(cylinders * heads * x)`. The platter's angle at
//!   time `t` is `frac(t / revolution)`; rotational latency is the time until the target angle
//!   passes under the head after the seek.
//!
//! Seek: `seek(d) = t1 + A * u + B * sqrt(u)` with `u = (d - 1) / (cylinders - 1)` for a seek of
//! `d >= 1` cylinders, 0 for `d = 0`; `t1` the single-track seek, `t1 + A + B` the full-stroke
//! seek, and `A`, `B` solved so that the average over all seek lengths, weighted as HGST/WD
//! specifications define the average seek (length n weighted by max + 1 - n, i.e. the distance
//! between two uniformly random cylinders), is the datasheet's average: `t1 + A/3 + 8B/15 =
//! average` (`E[u] = 1/3`, `E[sqrt u] = 8/15`). The square-root + linear form is Ruemmler & Wilkes
//! ("An introduction to disk drive modeling", IEEE Computer 1994); fitting it from the three
//! datasheet figures follows Seagate cortx-motr `desim/chs.c`, which weights seek lengths
//! uniformly instead (`E[u] = 1/2`, `E[sqrt u] = 2/3`). Reads and writes have their own figures
//! (writes settle longer). A head switch within a cylinder costs the single-track seek.
//!
//! Command: `command_overhead` (controller) + seek + rotational latency + media transfer. The
//! interface transfer is not modelled (6-12 Gb/s against ~250 MB/s media), nor a read cache.
//!
//! Streaming: a command that starts at the LBA where the previous transfer ended, and is
//! started no later than that transfer's end, costs no positioning and no overhead: the drive
//! had it queued (NCQ/TCQ) or in its write cache while the previous one transferred, so
//! consecutive sequential commands at queue depth > 1 stream at the media rate.
//!
//! Write cache ([`HddQueue`]): up to `write_cache_cmds` writes are acknowledged on arrival and
//! destaged later, scheduled with the other waiting commands, so the drive chooses among more
//! commands than the host keeps outstanding. Reads are not cached (no read-ahead, no hits on
//! cached writes).
//!
//! Scheduling: [`Scheduling::Sptf`], shortest positioning time first over the queued commands,
//! as NCQ/TCQ firmware does (Seltzer, Chen & Ousterhout, "Disk scheduling revisited", USENIX
//! Winter 1990; Jacobson & Wilkes, HP Labs HPL-CSP-91-7, 1991; Worthington, Ganger & Patt,
//! "Scheduling algorithms for modern disk drives", SIGMETRICS 1994), without aging; or
//! [`Scheduling::Fifo`].

/// Three datasheet seek figures (HGST/WD style: without command overhead, including settling).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeekFigures {
    /// Single-track seek.
    pub track_to_track_ns: u64,
    /// Weighted average over all seek lengths.
    pub average_ns: u64,
    /// Full-stroke seek (OD to ID).
    pub full_stroke_ns: u64,
}

/// Which queued command the drive serves next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    /// In arrival order (queue index 0 first).
    Fifo,
    /// Shortest positioning time first (seek + rotation + overhead), ties to the oldest.
    Sptf,
}

/// A mechanical disk's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct HddConfig {
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes per LBA of [`HddCmd`].
    pub block_size: u32,
    /// Spindle speed, revolutions per minute.
    pub rpm: u32,
    /// Recording surfaces (one head each).
    pub heads: u32,
    /// Sustained media rate at the outer diameter, bytes per second.
    pub od_rate: f64,
    /// Media rate at the inner diameter / at the outer diameter, in (0, 1].
    pub id_od_ratio: f64,
    /// Seek figures of reads.
    pub seek_read: SeekFigures,
    /// Seek figures of writes (writes settle longer).
    pub seek_write: SeekFigures,
    /// Controller time per command, before the seek (not paid by a streaming command).
    pub command_overhead_ns: u64,
    /// Which queued command the drive serves next.
    pub scheduling: Scheduling,
    /// Write-back cache, in commands: at most this many writes are acknowledged to the host
    /// before they reach the media ([`HddQueue`]); 0 = write-through.
    pub write_cache_cmds: u32,
}

/// A configuration [`Hdd::new`] rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid HDD configuration: {0}")]
pub struct HddConfigError(pub &'static str);

impl HddConfig {
    /// The 14 TB host-managed SMR drive of the Ultrastar DC HC620 class. Sources and status of
    /// every figure: devices/smr-hm-14tb.toml and docs/model.md ("Host-managed SMR disks").
    /// - capacity 14,000,519,643,136 B (zonedstorage.io: 27,344,764,928 sectors); 4 KiB blocks;
    /// - 7200 rpm (press); 16 heads (8 platters, press; every surface used: assumption);
    /// - OD rate 235.7 MiB/s, fitted so that 1 GiB of 256 KiB QD8 writes from the first
    ///   sequential zone reports the measured 236 MiB/s (zonedstorage.io fio: 235 and 237 MiB/s;
    ///   the media rate there is 234.6 MiB/s, the write cache filling at the start adds 0.6%);
    ///   ID/OD 0.5 (assumption, near the 0.48 of HGST's Deskstar 7K500 specification, the
    ///   only ID/OD pair found);
    /// - seeks: WD Ultrastar DC HC310 proxy (not HC620 figures): single track 0.23/0.32 ms,
    ///   average 7.4/8.2 ms (read/write); full stroke 15.0/15.8 ms from the IBM Ultrastar
    ///   DDRS 7200 rpm specification (assumption: no HC310/HC620 value found);
    /// - command overhead 0.5 ms (assumption: not published for HC310/HC620);
    /// - SPTF scheduling; write cache of 24 commands, fitted (unpublished) to the measured
    ///   40.2 MiB/s of 256 KiB writes to random zones at 4 jobs x QD4 (zonedstorage.io, 15 TB
    ///   model, write cache enabled); without it the model gives about 33 MiB/s.
    pub fn hc620_14tb() -> HddConfig {
        HddConfig {
            capacity: 27_344_764_928 * 512,
            block_size: 4096,
            rpm: 7200,
            heads: 16,
            od_rate: 235.7 * (1u64 << 20) as f64,
            id_od_ratio: 0.5,
            seek_read: SeekFigures { track_to_track_ns: 230_000, average_ns: 7_400_000, full_stroke_ns: 15_000_000 },
            seek_write: SeekFigures { track_to_track_ns: 320_000, average_ns: 8_200_000, full_stroke_ns: 15_800_000 },
            command_overhead_ns: 500_000,
            scheduling: Scheduling::Sptf,
            write_cache_cmds: 24,
        }
    }

    /// One revolution in ns.
    pub fn revolution_ns(&self) -> f64 {
        60e9 / self.rpm as f64
    }

    /// Bytes of a track at the outer diameter.
    pub fn od_track_bytes(&self) -> f64 {
        self.od_rate * self.revolution_ns() / 1e9
    }

    /// Cylinders (real-valued): capacity / (heads x mean track bytes); the mean track is
    /// `(1 + id_od_ratio) / 2` of an OD track.
    pub fn cylinders_f64(&self) -> f64 {
        self.capacity as f64 / (self.heads as f64 * self.od_track_bytes() * (1.0 + self.id_od_ratio) / 2.0)
    }

    /// Number of cylinders (rounded up).
    pub fn cylinders(&self) -> u64 {
        self.cylinders_f64().ceil() as u64
    }

    /// Check the figures, including that a square-root + linear curve with non-negative terms
    /// fits the three seek figures (`full >= t1 + 15/8 (avg - t1)` and `full <= 3 avg - 2 t1`).
    pub fn validate(&self) -> Result<(), HddConfigError> {
        let err = |m| Err(HddConfigError(m));
        if self.capacity == 0 || self.rpm == 0 || self.heads == 0 {
            return err("capacity, rpm and heads must be positive");
        }
        if !self.block_size.is_power_of_two() || self.block_size < 512 {
            return err("block size must be a power of two of at least 512 bytes");
        }
        if !(self.od_rate.is_finite() && self.od_rate > 0.0) {
            return err("od_rate must be positive");
        }
        if !(self.id_od_ratio > 0.0 && self.id_od_ratio <= 1.0) {
            return err("id_od_ratio must be in (0, 1]");
        }
        if self.cylinders() < 2 {
            return err("fewer than two cylinders: capacity too small for the track size");
        }
        for s in [self.seek_read, self.seek_write] {
            let (a, b) = seek_terms(s);
            if !(s.track_to_track_ns <= s.average_ns && s.average_ns <= s.full_stroke_ns) {
                return err("seek figures must satisfy track-to-track <= average <= full stroke");
            }
            if a < 0.0 || b < 0.0 {
                return err("seek figures do not fit sqrt + linear: need t1 + 15/8 (avg - t1) <= full <= 3 avg - 2 t1");
            }
        }
        Ok(())
    }
}

/// (A, B) of `seek = t1 + A u + B sqrt(u)` from the datasheet figures (module docs).
fn seek_terms(s: SeekFigures) -> (f64, f64) {
    let t1 = s.track_to_track_ns as f64;
    let (avg, full) = (s.average_ns as f64 - t1, s.full_stroke_ns as f64 - t1);
    let b = 5.0 * avg - 5.0 / 3.0 * full;
    (full - b, b)
}

/// One command: `blocks` blocks of [`HddConfig::block_size`] from `lba`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HddCmd {
    /// First LBA, in blocks of [`HddConfig::block_size`].
    pub lba: u64,
    /// Length in blocks.
    pub blocks: u32,
    /// A write (false: a read).
    pub write: bool,
}

/// A fitted seek curve.
#[derive(Debug, Clone, Copy)]
struct SeekCurve {
    t1: f64,
    a: f64,
    b: f64,
}

impl SeekCurve {
    fn new(s: SeekFigures) -> SeekCurve {
        let (a, b) = seek_terms(s);
        SeekCurve { t1: s.track_to_track_ns as f64, a, b }
    }
}

/// The disk: figures, derived geometry, and where the head is.
#[derive(Debug, Clone)]
pub struct Hdd {
    cfg: HddConfig,
    rev_ns: f64,
    /// Cylinders (real-valued) and cylinders x heads (tracks).
    cyl: f64,
    tracks: f64,
    /// 1 - id_od_ratio: how much of the OD track capacity is lost at the ID.
    k: f64,
    read: SeekCurve,
    write: SeekCurve,
    /// Track under the head (index from the OD, cylinder-major).
    head_track: u64,
    /// LBA just past the last transfer, and when that transfer ended.
    stream_lba: u64,
    free_ns: u64,
}

impl Hdd {
    /// Head on track 0 (OD), idle at time 0.
    pub fn new(cfg: HddConfig) -> Result<Hdd, HddConfigError> {
        cfg.validate()?;
        let cyl = cfg.cylinders_f64();
        Ok(Hdd {
            rev_ns: cfg.revolution_ns(),
            tracks: cyl * cfg.heads as f64,
            cyl,
            k: 1.0 - cfg.id_od_ratio,
            read: SeekCurve::new(cfg.seek_read),
            write: SeekCurve::new(cfg.seek_write),
            head_track: 0,
            stream_lba: u64::MAX,
            free_ns: 0,
            cfg,
        })
    }

    /// The figures the disk was built from.
    pub fn config(&self) -> &HddConfig {
        &self.cfg
    }

    /// Capacity in LBAs.
    pub fn lbas(&self) -> u64 {
        self.cfg.capacity / self.cfg.block_size as u64
    }

    /// Cylinder fraction of `lba` (0 at the OD, 1 at the ID): inverts the cumulative capacity
    /// `C(x) = (x - k x^2 / 2) / (1 - k / 2)` of a linearly shrinking track.
    pub fn fraction_of(&self, lba: u64) -> f64 {
        let c = (lba as f64 * self.cfg.block_size as f64 / self.cfg.capacity as f64).min(1.0) * (1.0 - self.k / 2.0);
        if self.k < 1e-12 {
            c
        } else {
            // (1 - sqrt(1 - 2kc)) / k, written to avoid cancellation near the OD.
            2.0 * c / (1.0 + (1.0 - 2.0 * self.k * c).max(0.0).sqrt())
        }
    }

    /// First LBA at cylinder fraction `x` in [0, 1] (inverse of [`Hdd::fraction_of`]).
    pub fn lba_at(&self, x: f64) -> u64 {
        let x = x.clamp(0.0, 1.0);
        let c = (x - self.k * x * x / 2.0) / (1.0 - self.k / 2.0);
        ((c * self.cfg.capacity as f64 / self.cfg.block_size as f64) as u64).min(self.lbas() - 1)
    }

    /// Sustained media rate at `lba`, bytes per second.
    pub fn media_rate_at(&self, lba: u64) -> f64 {
        self.cfg.od_rate * (1.0 - self.k * self.fraction_of(lba))
    }

    /// Track (cylinder-major index from the OD) holding `lba`.
    pub fn track_of(&self, lba: u64) -> u64 {
        self.revs(lba) as u64
    }

    /// Cylinder holding `lba`.
    pub fn cylinder_of(&self, lba: u64) -> u64 {
        self.track_of(lba) / self.cfg.heads as u64
    }

    /// Seek time in ns for a seek of `d` cylinders (0 for `d = 0`).
    pub fn seek_ns(&self, d: u64, write: bool) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let c = if write { self.write } else { self.read };
        let u = ((d - 1) as f64 / (self.cyl - 1.0)).min(1.0);
        c.t1 + c.a * u + c.b * u.sqrt()
    }

    /// Revolutions a stream from LBA 0 takes to reach `lba` (one per track).
    fn revs(&self, lba: u64) -> f64 {
        self.fraction_of(lba) * self.tracks
    }

    /// Time from `now_ns` until the media transfer of `cmd` could start if it were served next
    /// (overhead + seek + rotational latency; waiting for the drive to be free included; 0 for
    /// a streaming command). No state change.
    pub fn positioning_time(&self, now_ns: u64, cmd: &HddCmd) -> u64 {
        (self.transfer_start(now_ns, cmd) - now_ns as f64).max(0.0).round() as u64
    }

    /// Absolute time (ns, real-valued) at which `cmd`'s transfer starts if served at `now_ns`.
    fn transfer_start(&self, now_ns: u64, cmd: &HddCmd) -> f64 {
        if cmd.lba == self.stream_lba && now_ns <= self.free_ns {
            return self.free_ns as f64;
        }
        let start = now_ns.max(self.free_ns) as f64 + self.cfg.command_overhead_ns as f64;
        let revs = self.revs(cmd.lba);
        let track = revs as u64;
        let heads = self.cfg.heads as u64;
        let d = (track / heads).abs_diff(self.head_track / heads);
        let seek = if d == 0 && track != self.head_track {
            // Head switch within the cylinder: as a single-track seek.
            (if cmd.write { self.write } else { self.read }).t1
        } else {
            self.seek_ns(d, cmd.write)
        };
        let arrive = start + seek;
        let head_angle = (arrive / self.rev_ns).fract();
        let wait = (revs.fract() - head_angle).rem_euclid(1.0);
        arrive + wait * self.rev_ns
    }

    /// Serve `cmd` starting at `now_ns` (the drive takes it at `max(now_ns, end of the previous
    /// command)`): position, transfer at the media rate of its tracks, move the head. Returns
    /// the completion time in ns.
    pub fn service(&mut self, now_ns: u64, cmd: &HddCmd) -> u64 {
        let start = self.transfer_start(now_ns, cmd);
        let end_lba = (cmd.lba + cmd.blocks as u64).min(self.lbas());
        let transfer = (self.revs(end_lba) - self.revs(cmd.lba)) * self.rev_ns;
        let done = (start + transfer).round() as u64;
        self.head_track = if end_lba > cmd.lba { self.track_of(end_lba - 1) } else { self.track_of(cmd.lba) };
        self.stream_lba = end_lba;
        self.free_ns = done;
        done
    }

    /// Index in `queue` of the command to serve next at `now_ns` under the configured
    /// scheduling (0 for an empty queue).
    pub fn pick(&self, now_ns: u64, queue: &[HddCmd]) -> usize {
        match self.cfg.scheduling {
            Scheduling::Fifo => 0,
            Scheduling::Sptf => {
                let mut best = (f64::INFINITY, 0);
                for (i, c) in queue.iter().enumerate() {
                    let t = self.transfer_start(now_ns, c);
                    if t < best.0 {
                        best = (t, i);
                    }
                }
                best.1
            }
        }
    }

    /// When the drive finishes its last command.
    pub fn free_at(&self) -> u64 {
        self.free_ns
    }
}

/// One command waiting at the drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    /// The caller's identifier.
    pub tag: u64,
    /// The command.
    pub cmd: HddCmd,
    /// A write already acknowledged from the write cache.
    pub acked: bool,
}

/// What [`HddQueue::serve_next`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The command served, the positioning it needed (overhead + seek + rotation; 0 when it
    /// streamed), and when its media transfer ended.
    pub tag: u64,
    /// The command served.
    pub cmd: HddCmd,
    /// Positioning it needed, ns: overhead + seek + rotation (0 when it streamed).
    pub positioning_ns: u64,
    /// Model time (ns) at which its media transfer ended.
    pub done_ns: u64,
    /// The served command completes to the host now (false: a cached write acknowledged
    /// earlier).
    pub completes: bool,
    /// Writes acknowledged at `done_ns` because the served one freed a cache slot.
    pub acked: Vec<u64>,
}

/// The drive's command queue (NCQ/TCQ) and write-back cache around an [`Hdd`]: commands wait
/// here; the drive serves one at a time, chosen by [`Hdd::pick`] among all waiting commands
/// (acknowledged writes included: destaging the cache is scheduled like any command). A write
/// is acknowledged when it arrives if fewer than `write_cache_cmds` acknowledged writes wait
/// for the media, otherwise when a slot frees (oldest first); reads and writes that were never
/// acknowledged complete when their transfer ends.
#[derive(Debug, Clone)]
pub struct HddQueue {
    hdd: Hdd,
    queue: Vec<Queued>,
    cmds: Vec<HddCmd>,
    dirty: u32,
}

impl HddQueue {
    /// An empty queue and write cache in front of `hdd`.
    pub fn new(hdd: Hdd) -> HddQueue {
        HddQueue { hdd, queue: Vec::new(), cmds: Vec::new(), dirty: 0 }
    }

    /// The disk: its figures, geometry and head position.
    pub fn hdd(&self) -> &Hdd {
        &self.hdd
    }

    /// Commands waiting (acknowledged writes included).
    pub fn queued(&self) -> &[Queued] {
        &self.queue
    }

    /// Acknowledged writes not yet on the media.
    pub fn dirty(&self) -> u32 {
        self.dirty
    }

    /// A command arrives; `true` if it is a write the cache acknowledges at once.
    pub fn submit(&mut self, tag: u64, cmd: HddCmd) -> bool {
        let acked = cmd.write && self.dirty < self.hdd.cfg.write_cache_cmds;
        self.dirty += acked as u32;
        self.queue.push(Queued { tag, cmd, acked });
        self.cmds.push(cmd);
        acked
    }

    /// Serve the next command, the drive being free at `now_ns` (or when its last command ends,
    /// if later). `None` if nothing waits.
    pub fn serve_next(&mut self, now_ns: u64) -> Option<Served> {
        if self.queue.is_empty() {
            return None;
        }
        let i = self.hdd.pick(now_ns, &self.cmds);
        let q = self.queue.remove(i);
        self.cmds.remove(i);
        let positioning_ns = self.hdd.positioning_time(now_ns.max(self.hdd.free_at()), &q.cmd);
        let done_ns = self.hdd.service(now_ns, &q.cmd);
        let mut acked = Vec::new();
        if q.acked {
            self.dirty -= 1;
            if let Some(w) = self.queue.iter_mut().find(|w| w.cmd.write && !w.acked) {
                w.acked = true;
                self.dirty += 1;
                acked.push(w.tag);
            }
        }
        Some(Served { tag: q.tag, cmd: q.cmd, positioning_ns, done_ns, completes: !q.acked, acked })
    }
}
