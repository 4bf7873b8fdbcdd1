//! fio's `zonemode=zbd`: the zone state the generator keeps so that every write of a job lands
//! at a zone's write pointer, as fio's zbd.c does (read to learn the rules, fio 3.42-135:
//! `zbd_adjust_block`, `zbd_convert_to_write_zone`, `zbd_pick_write_zone`,
//! `__zbd_write_zone_get`, `zbd_end_zone_io`, `__zbd_reset_zone`, `zbd_finish_zone`,
//! `zbd_find_zone`, `zbd_adjust_ddir`, `setup_zbd_zone_mode`, `zbd_zone_align_file_sizes`,
//! `zbd_set_max_write_zones`, `zbd_setup_files`, `zbd_verify_bs`, `zbd_file_reset`,
//! `zbd_dec_and_reset_write_cnt`; HOWTO.rst "zonemode" to "zone_reset_frequency").
//!
//! # What a job does
//!
//! * Zones: on a zoned namespace, the drive's zones ([`SourceParams::zones`]: zone size,
//!   capacity, leading conventional zones, open and active limits). On a namespace that is not
//!   zoned, fio emulates zones of `zonesize` bytes (`zonecapacity` writable, default the zone
//!   size) and so does wafsim: the writes follow the emulated write pointers, resets and
//!   finishes change only the emulated state (fio issues no command for them either) and no
//!   zone command reaches the drive. Without `zonesize` that is an error, as in fio.
//! * Region: a job that writes (or trims) works on whole zones: its start is rounded up and
//!   its end down to zone boundaries; a read job's end is rounded down. `size`, `io_size`,
//!   `offset`, `offset_increment` and `zoneskip` accept `Nz` (N zones of the device).
//! * Writes: each write goes to the write pointer of a zone and is shortened to the zone's
//!   capacity end (in multiples of the smallest block size). The zone is the one of the
//!   generated offset (sequential jobs: the next offset; random jobs: the random offset) while
//!   it may be written; with a write-zone limit (`max_open_zones`, by default the drive's open
//!   limit; `job_max_open_zones` per job) the job writes only to the zones of the shared
//!   write-zone set and adds a zone to it while the set is below the limit; random jobs map
//!   the random offset onto the set. A zone leaves the set when a write reaches its capacity.
//!   A zone that is full when it is picked is reset first: an `Op::Zone(ZoneAction::Reset)` of
//!   the zone precedes the write. A zone whose unwritten rest is smaller than the smallest
//!   block is finished (`ZoneAction::Finish`). Random jobs that find no zone end their pass,
//!   as fio's `zbd_adjust_block` returns end-of-file.
//! * `zone_reset_threshold` / `zone_reset_frequency`: once the data in the job's write-pointer
//!   zones is at least threshold x the region size, every 1/frequency-th write resets the zone
//!   it goes to before writing it (fio's write counter is per drive and restarts each pass).
//! * Writes in conventional zones go where the job puts them, but not into a sequential zone:
//!   a write that would run into the first sequential zone after them ends at its start
//!   (fio's `zbd_adjust_block`), so a sequential job writes the conventional zones once, in
//!   order, and then the sequential zones at their write pointers. A random job's write there
//!   is shortened in multiples of the smallest block size, or, when less than one block is
//!   left, moved back into its zone (fio's rule).
//! * Reads: below the write pointer only (fio `read_beyond_wp=0`): a read that would start at
//!   or past it moves to the next zone with data (sequential) or the nearest one (random) and
//!   is shortened to end at the write pointer; a random read's offset is folded into the
//!   zone's written part. When no zone has data the pass ends. `read_beyond_wp=1` reads
//!   anywhere. A mixed job's first I/O is a write when nothing has been written yet.
//! * An I/O that would span two zones of a zoned drive (reads with `read_beyond_wp`, reads and
//!   writes in conventional zones) is issued as one command per zone, as Linux splits it.
//! * Trims: a trim of a sequential zone is a zone reset (fio requires `bs` for trims to be the
//!   zone size); a random trim picks a zone with data. Empty zones are not reset.
//! * `verify`: zones of a write job are reset at the start of each pass and full zones are not
//!   reused (fio, to keep the data it verifies); verification reads themselves are not
//!   generated (wafsim does not model verify).
//! * `zonemode=zbd` with `zoneskip` (a multiple of the zone size): a sequential job moves on by
//!   `zonesize + zoneskip` after a zone, as fio's `setup_zbd_zone_mode`.
//!
//! # Zone state shared by the jobs of a namespace
//!
//! fio keeps one zone table per device, shared by all jobs, and sizes it from the drive's zone
//! report at start-up. wafsim's generator cannot ask the drive, so jobs share a [`ZbdZones`]:
//! [`super::FioJob::source_zbd`] takes one explicitly (a runner that knows the drive's state
//! builds it with [`ZbdZones::from_report`]); [`super::FioJob::source_with`] uses one per
//! thread and namespace (namespace index, size and zone geometry) that lives as long as a
//! source using it, so the jobs of one job file built together share it and a new set of
//! sources starts from Empty zones (a new wafsim drive's state). Jobs of later `stonewall`
//! phases see the write pointers the earlier phases left.
//!
//! # Where wafsim differs from fio, and why
//!
//! * Jobs are generated independently and interleaved afterwards (each hands out a batch of
//!   I/Os at a time), so two jobs cannot write the same zone at the same time, which fio allows
//!   under its zone locks. On a zoned namespace, write jobs that run at the same time (same
//!   phase of a file, or different files) must write disjoint zone ranges (e.g.
//!   `offset_increment=Nz` with `size=Nz`); overlapping ones are refused with an error. A zone
//!   freed by one job (or a finished/reset one) counts against the open-zone limits of the
//!   other jobs until that job's earlier I/O has been handed out, so the drive's open and
//!   active limits hold in every interleaving. Readers see another job's writes once that
//!   job's batch has been handed out. On an emulated (non-zoned) namespace overlapping writers
//!   are allowed.
//! * Write jobs that run at the same time share the write-zone limit evenly (each may hold
//!   `max_open_zones / writers` zones, at least one, while the others have I/O left); in fio
//!   whoever asks first gets a zone, and jobs start together, so each gets some. Without this
//!   the job generated first would take every zone and the others would end at once.
//! * A drive with an active-zone limit but no open limit: fio writes to any number of zones
//!   (and fails with "Exceeded max_active_zones limit"); wafsim limits the write zones to the
//!   active limit. `max_open_zones` above the drive's active limit is refused even with
//!   `ignore_zone_limits` (the drive would fail writes with Too Many Active Zones). Zones
//!   already open or closed when the zone state is built from a report join the write-zone
//!   set, whatever the job ranges (fio adds only those in a job's range).
//! * A sequential job whose write would run from a conventional zone into a sequential zone
//!   with less than the smallest block size left before it: fio moves the write back into the
//!   conventional zone (`offset = zone start + next zone start - offset`, a rule for random
//!   I/O) and its next sequential offset follows the moved write, so the job cycles over the
//!   last few blocks before the sequential zone until its size is written and never reaches
//!   the sequential zones (e.g. `bs=1m` on a disk whose conventional area is not a multiple of
//!   1 MiB). wafsim ends that write at the sequential zone's start, shorter than the smallest
//!   block if need be, and the job goes on there. Likewise a write that fio would shorten to
//!   a multiple of the smallest block (`bsrange`) ends at the zone start.
//! * Zones in wafsim never go offline or read-only; a report's read-only zones are read up to
//!   their capacity and never written.
//! * fio's `write_zone_remainder` and `recover_zbd_write_error` are not modelled (warned);
//!   `rw=trimwrite`/`randtrimwrite` are refused in zbd mode.
//!
//! [`SourceParams::zones`]: super::SourceParams::zones

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use wafsim_core::blockdev::{ZoneAction, ZoneGeometry};
use wafsim_core::zone::{ZoneDescriptor, ZoneState, ZoneType};
use wafsim_core::{Io, Op, Pid};

/// Zones as the generator sees them, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub zone_size: u64,
    pub capacity: u64,
    pub zones: u32,
    pub conventional: u32,
    pub max_open: u32,
    pub max_active: u32,
    /// Zones emulated on a namespace that is not zoned (fio's `ZBD_NONE` model): no zone
    /// command reaches the drive.
    pub emulated: bool,
    pub ns_bytes: u64,
}

impl Layout {
    /// The drive's zones.
    pub fn device(g: &ZoneGeometry, ns_bytes: u64) -> Layout {
        Layout {
            zone_size: g.zone_size,
            capacity: g.zone_capacity,
            zones: g.zones,
            conventional: g.conventional_zones,
            max_open: g.max_open,
            max_active: g.max_active,
            emulated: false,
            ns_bytes,
        }
    }

    /// Zones emulated on a regular namespace (fio's `init_zone_info`).
    pub fn emulated(zone_size: u64, capacity: u64, ns_bytes: u64) -> Layout {
        Layout {
            zone_size,
            capacity,
            zones: ns_bytes.div_ceil(zone_size) as u32,
            conventional: 0,
            max_open: 0,
            max_active: 0,
            emulated: true,
            ns_bytes,
        }
    }

    fn start(&self, z: u32) -> u64 {
        z as u64 * self.zone_size
    }
    /// End of the zone (the next zone's start; the namespace end for a last partial zone).
    fn end(&self, z: u32) -> u64 {
        (self.start(z) + self.zone_size).min(self.ns_bytes)
    }
    fn cap_end(&self, z: u32) -> u64 {
        if self.has_wp(z) {
            (self.start(z) + self.capacity).min(self.ns_bytes)
        } else {
            self.end(z)
        }
    }
    fn has_wp(&self, z: u32) -> bool {
        z >= self.conventional && z < self.zones
    }
    /// Zone index of a byte offset (the zone count past the end, as fio's sentinel).
    pub fn zone_of(&self, offset: u64) -> u32 {
        (offset / self.zone_size).min(self.zones as u64) as u32
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cond {
    Normal,
    ReadOnly,
    Offline,
}

#[derive(Debug, Clone)]
struct Zone {
    /// Write pointer as the generated I/O leaves it (conventional zones: the zone end).
    wp: u64,
    /// What other jobs may read: the write pointer once the writer's I/O was handed out.
    committed: u64,
    /// In the write-zone set (fio's `z->write`).
    write: bool,
    /// The job that added it to the set.
    adder: usize,
    /// The job that last moved the write pointer (it reads its own writes at once).
    writer: usize,
    cond: Cond,
}

#[derive(Debug)]
struct JobEntry {
    alive: bool,
    /// The job has no more I/O.
    done: bool,
    name: String,
    clone: u32,
    file: String,
    instance: u32,
    phase: u32,
    range: (u32, u32),
    writes: bool,
    /// fio's `td->num_write_zones`.
    write_zones: u32,
    /// Zones whose write pointer this job moved since its last batch.
    touched: Vec<u32>,
    /// Most write zones the job held since its last batch began: what it may hold open on the
    /// drive while that batch is handed out.
    peak: u32,
    /// Zones added by other (earlier) jobs that this job took out of the set since its last
    /// batch: open on the drive until the write that filled them is handed out.
    foreign: u32,
}

/// The shared zone table (fio's `zoned_block_device_info`).
#[derive(Debug, Default)]
pub(crate) struct Book {
    layout: Option<Layout>,
    zones: Vec<Zone>,
    /// fio's `write_zones[]`, in insertion order.
    write_zones: Vec<u32>,
    /// fio's `max_write_zones` (0 = no limit); set by the first job.
    max_write: Option<u32>,
    jobs: Vec<JobEntry>,
    /// Per job file: the last job index registered and its instance number.
    files: Vec<(String, u32, u32)>,
    /// fio's valid-data accounting for `zone_reset_threshold`: zone range and bytes.
    vdb: Option<(u32, u32, u64)>,
    /// fio's `write_cnt`: writes until the next threshold reset.
    write_cnt: u32,
    /// Resets of zones that held data (fio's `nr_zone_resets`).
    resets: u64,
}

/// The zone state of one namespace, shared by the `zonemode=zbd` jobs that run on it (see the
/// [module docs](self)). Cloning gives another handle to the same state.
#[derive(Debug, Clone, Default)]
pub struct ZbdZones(Arc<Mutex<Book>>);

impl ZbdZones {
    /// A zone state that the first job using it sets up: from the namespace's zone geometry
    /// (every zone Empty, as on a new wafsim drive) or, on a namespace that is not zoned, from
    /// the job's `zonesize`.
    pub fn new() -> ZbdZones {
        ZbdZones::default()
    }

    /// The state of a zoned namespace from its Report Zones (`zones`, in logical blocks of
    /// `block_size` bytes, every zone in order), so that jobs continue where earlier I/O left
    /// the write pointers, as fio does at start-up.
    pub fn from_report(geometry: &ZoneGeometry, ns_bytes: u64, block_size: u32, zones: &[ZoneDescriptor]) -> Result<ZbdZones, String> {
        let layout = Layout::device(geometry, ns_bytes);
        if zones.len() != layout.zones as usize {
            return Err(format!("the report has {} zones, the geometry {}", zones.len(), layout.zones));
        }
        let mut book = Book::fresh(layout);
        let bs = block_size as u64;
        for (i, d) in zones.iter().enumerate() {
            let z = i as u32;
            if d.start * bs != layout.start(z) {
                return Err(format!("zone {i} starts at byte {}, expected {}", d.start * bs, layout.start(z)));
            }
            let zone = &mut book.zones[i];
            if d.zone_type == ZoneType::Conventional || !layout.has_wp(z) {
                continue;
            }
            let (wp, cond) = match d.state {
                ZoneState::Full => (layout.cap_end(z), Cond::Normal),
                ZoneState::ReadOnly => (layout.cap_end(z), Cond::ReadOnly),
                ZoneState::Offline => (layout.start(z), Cond::Offline),
                _ => (d.write_pointer.map_or(layout.start(z), |w| w * bs), Cond::Normal),
            };
            zone.wp = wp.clamp(layout.start(z), layout.cap_end(z));
            zone.committed = zone.wp;
            zone.cond = cond;
            // Open and closed zones hold the drive's open/active resources: they are write zones.
            if matches!(d.state, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed) {
                zone.write = true;
                zone.adder = usize::MAX;
                book.write_zones.push(z);
            }
        }
        Ok(ZbdZones(Arc::new(Mutex::new(book))))
    }

    /// Write pointer of zone `zone` (byte offset) as the generated I/O leaves it; `None` before
    /// a job has set the state up or past the last zone.
    pub fn write_pointer(&self, zone: u32) -> Option<u64> {
        self.lock().zones.get(zone as usize).map(|z| z.wp)
    }

    /// Resets of zones that held data so far (fio's "zone resets"; emulated zones included).
    pub fn zone_resets(&self) -> u64 {
        self.lock().resets
    }

    fn lock(&self) -> MutexGuard<'_, Book> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A zone state shared per (namespace, size, geometry).
type SharedEntry = (u32, u64, Option<ZoneGeometry>, Weak<Mutex<Book>>);

thread_local! {
    /// The zone states [`super::FioJob::source_with`] shares.
    static SHARED: RefCell<Vec<SharedEntry>> = const { RefCell::new(Vec::new()) };
}

/// The zone state shared by the sources of this thread on namespace `ns` (see the module docs).
pub(crate) fn shared(ns: u32, ns_bytes: u64, zones: Option<ZoneGeometry>) -> ZbdZones {
    SHARED.with(|s| {
        let mut s = s.borrow_mut();
        s.retain(|e| e.3.strong_count() > 0);
        if let Some(a) = s.iter().find(|e| e.0 == ns && e.1 == ns_bytes && e.2 == zones).and_then(|e| e.3.upgrade()) {
            return ZbdZones(a);
        }
        let z = ZbdZones::new();
        s.push((ns, ns_bytes, zones, Arc::downgrade(&z.0)));
        z
    })
}

impl Book {
    fn fresh(layout: Layout) -> Book {
        let zones = (0..layout.zones)
            .map(|z| {
                let wp = if layout.has_wp(z) { layout.start(z) } else { layout.end(z) };
                Zone { wp, committed: wp, write: false, adder: usize::MAX, writer: usize::MAX, cond: Cond::Normal }
            })
            .collect();
        Book { layout: Some(layout), zones, ..Book::default() }
    }

    fn layout(&self) -> Layout {
        self.layout.expect("set up before use")
    }

    fn remainder(&self, z: u32) -> u64 {
        self.layout().cap_end(z).saturating_sub(self.zones[z as usize].wp)
    }

    /// fio's `zbd_zone_full`: fewer than `min_bs` bytes left.
    fn full(&self, z: u32, min_bs: u64) -> bool {
        self.layout().has_wp(z) && min_bs > self.remainder(z)
    }

    /// End of the data job `job` may read in zone `z`: its own writes at once, another job's
    /// once they were handed out.
    fn readable_end(&self, z: u32, job: usize) -> u64 {
        let zone = &self.zones[z as usize];
        if zone.cond == Cond::Offline {
            return self.layout().start(z);
        }
        let end = if zone.writer == job { zone.wp } else { zone.committed };
        end.min(self.layout().cap_end(z))
    }

    /// Jobs `a` and `b` may run at the same time (not two phases of one job file).
    fn concurrent(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.jobs[a], &self.jobs[b]);
        !(a.file == b.file && a.instance == b.instance && a.phase != b.phase)
    }

    /// How many write zones job `job` may hold while other writers run with it: an even share
    /// of the limit (fio hands zones to whoever asks first, and its jobs start together).
    fn share(&self, job: usize, max: u32) -> u32 {
        let n = (0..self.jobs.len())
            .filter(|&j| {
                let e = &self.jobs[j];
                e.alive && !e.done && e.writes && self.concurrent(j, job)
            })
            .count()
            .max(1) as u32;
        (max / n).max(1)
    }

    /// Zones job `j` may still hold open on the drive beyond its write zones (see `peak`).
    fn excess(&self, j: usize) -> u32 {
        let e = &self.jobs[j];
        e.peak - e.write_zones + e.foreign
    }

    fn set_wp(&mut self, job: usize, z: u32, wp: u64, accounting: bool) {
        let zone = &mut self.zones[z as usize];
        let old = zone.wp;
        zone.wp = wp;
        zone.writer = job;
        if wp < zone.committed {
            zone.committed = wp;
        }
        if accounting {
            if let Some((lo, hi, vdb)) = &mut self.vdb {
                if (*lo..*hi).contains(&z) {
                    *vdb = (*vdb + wp).saturating_sub(old);
                }
            }
        }
        self.jobs[job].touched.push(z);
    }
}

/// What a job needs from the zone state, fixed when its source is built.
#[derive(Debug, Clone)]
pub(crate) struct JobZones {
    pub ns: u32,
    /// Zone range `[min_zone, max_zone)` of the job's region.
    pub min_zone: u32,
    pub max_zone: u32,
    /// The job's region (fio's `file_offset` and `io_size` after zone alignment).
    pub region_start: u64,
    pub region_len: u64,
    /// Smallest block size per direction.
    pub min_bs: [u64; 3],
    pub random: bool,
    pub read_beyond_wp: bool,
    pub job_max_open: u32,
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    pub verify: bool,
    /// fio's `td_write`: the job writes.
    pub writes: bool,
    /// The job writes or trims (resets) zones.
    pub modifies: bool,
}

/// Where the adjusted I/O goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adjusted {
    /// Issue it at this offset and length.
    Accept(u64, u64),
    /// No I/O for it (a trim of an empty zone); it counts as done.
    Done,
    /// No I/O possible: the pass ends (fio's `io_u_eof`).
    Eof,
}

const READ: usize = 0;
const WRITE: usize = 1;
const TRIM: usize = 2;

/// One job's handle on the shared zone state.
#[derive(Debug)]
pub(crate) struct ZbdJob {
    book: ZbdZones,
    id: usize,
    pub z: JobZones,
    layout: Layout,
}

/// Who a job is, for the concurrency check.
pub(crate) struct JobIdent<'a> {
    pub name: &'a str,
    pub clone: u32,
    pub file: &'a str,
    pub job_index: u32,
    pub phase: u32,
}

impl ZbdZones {
    /// The layout, setting the state up with `layout` if no job has yet; an error if the state
    /// has another zone size (fio: "zonesize ... does not match the device zone size").
    pub(crate) fn layout_for(&self, layout: Layout) -> Result<Layout, String> {
        let mut b = self.lock();
        match b.layout {
            None => {
                *b = Book::fresh(layout);
                Ok(layout)
            }
            Some(have) if have.zone_size != layout.zone_size || have.ns_bytes != layout.ns_bytes => Err(format!(
                "zonesize {} does not match the zone size {} the namespace's zones already have (set up by an earlier job)",
                layout.zone_size, have.zone_size
            )),
            Some(have) => Ok(have),
        }
    }

    /// Register a job (fio's `zbd_set_max_write_zones` for the first one, then the checks of
    /// `zbd_setup_files`).
    pub(crate) fn attach(&self, who: JobIdent, max_open_zones: u32, ignore_limits: bool, z: JobZones) -> Result<ZbdJob, String> {
        let mut b = self.lock();
        let layout = b.layout();
        // The write-zone limit: the first job sets it for the namespace.
        let max_write = match b.max_write {
            Some(m) => {
                if max_open_zones > 0 && m != max_open_zones {
                    return Err(format!(
                        "max_open_zones={max_open_zones} differs from the {m} an earlier job of this namespace set (fio: \"Different 'max_open_zones' values\")"
                    ));
                }
                m
            }
            None => {
                let m = write_zone_limit(&layout, max_open_zones, ignore_limits)?;
                if m > 0 && b.write_zones.len() as u32 > m {
                    return Err(format!(
                        "{} zones are open or closed on the drive, more than the write-zone limit {m} (fio: \"Number of open zones exceeds max_open_zones limit\")",
                        b.write_zones.len()
                    ));
                }
                b.max_write = Some(m);
                m
            }
        };
        if z.writes && z.job_max_open > 0 && max_write == 0 {
            return Err("job_max_open_zones needs a limit on the open zones of all jobs: set max_open_zones (fio: \"'job_max_open_zones' cannot be used without a global open zones limit\")".into());
        }
        // Instances of one job file (the same file may be run twice): job indexes restart.
        let instance = match b.files.iter_mut().find(|f| f.0 == who.file) {
            Some(f) => {
                if who.job_index <= f.1 {
                    f.2 += 1;
                }
                f.1 = who.job_index;
                f.2
            }
            None => {
                b.files.push((who.file.to_string(), who.job_index, 0));
                0
            }
        };
        let range = (z.min_zone, z.max_zone);
        if z.modifies && !layout.emulated {
            let clash = b.jobs.iter().find(|j| {
                j.alive
                    && j.writes
                    && j.range.0 < range.1
                    && range.0 < j.range.1
                    && !(j.file == who.file && j.instance == instance && j.phase != who.phase)
            });
            if let Some(j) = clash {
                let lo = range.0.max(j.range.0);
                let hi = range.1.min(j.range.1);
                let other = if j.file == who.file && j.instance == instance {
                    format!("job \"{}\"{}", j.name, clone_note(j.clone))
                } else {
                    format!("job \"{}\"{} of {}", j.name, clone_note(j.clone), j.file)
                };
                return Err(format!(
                    "this job{} and {other} both write zones {lo}..{hi} at the same time: fio lets them share zones under its zone locks, but wafsim generates each job's I/O on its own and interleaves it afterwards, so two writers cannot share a zone of a zoned drive; give each job its own zones (e.g. size=Nz with offset_increment=Nz) or run them one after the other (stonewall)",
                    clone_note(who.clone)
                ));
            }
        }
        if z.writes && z.reset_frequency > 0.0 {
            match b.vdb {
                Some((lo, hi, _)) if (lo, hi) != range => {
                    return Err("jobs writing different zone ranges cannot use zone_reset_threshold (fio: \"multi-jobs with different write ranges are not supported with zone_reset_threshold\")".into())
                }
                Some(_) => {}
                None => {
                    let vdb = (range.0..range.1).filter(|&i| layout.has_wp(i)).map(|i| b.zones[i as usize].wp - layout.start(i)).sum();
                    b.vdb = Some((range.0, range.1, vdb));
                }
            }
        }
        let id = b.jobs.len();
        b.jobs.push(JobEntry {
            alive: true,
            done: false,
            name: who.name.to_string(),
            clone: who.clone,
            file: who.file.to_string(),
            instance,
            phase: who.phase,
            range,
            writes: z.modifies,
            write_zones: 0,
            touched: Vec::new(),
            peak: 0,
            foreign: 0,
        });
        drop(b);
        Ok(ZbdJob { book: self.clone(), id, z, layout })
    }
}

fn clone_note(clone: u32) -> String {
    if clone > 0 {
        format!(" (clone {clone})")
    } else {
        String::new()
    }
}

/// fio's `zbd_set_max_write_zones`, plus what keeps the drive's active limit safe.
fn write_zone_limit(l: &Layout, user: u32, ignore_limits: bool) -> Result<u32, String> {
    // Emulated zones and drives without an open limit (or with it ignored): the job's value.
    let m = if l.emulated || ignore_limits || l.max_open == 0 {
        user
    } else if user == 0 {
        l.max_open
    } else if user <= l.max_open {
        user
    } else {
        return Err(format!(
            "max_open_zones={user} is more than the drive's {} open zones (fio: \"Specified --max_open_zones ({user}) is larger than max ({})\"); lower it, or set ignore_zone_limits=1",
            l.max_open, l.max_open
        ));
    };
    if !l.emulated && l.max_active > 0 {
        if m == 0 {
            // fio would write to any number of zones and fail on the active limit.
            return Ok(l.max_active);
        }
        if m > l.max_active {
            return Err(format!(
                "max_open_zones={m} is more than the drive's {} active zones: writes to more zones fail with Too Many Active Zones (fio: \"Exceeded max_active_zones limit\"), even with ignore_zone_limits",
                l.max_active
            ));
        }
    }
    Ok(m)
}

impl Drop for ZbdJob {
    fn drop(&mut self) {
        let mut b = self.book.lock();
        commit(&mut b, self.id);
        b.jobs[self.id].alive = false;
    }
}

/// The job's earlier I/O has been handed out: others may read what it wrote and use the zones
/// it freed.
fn commit(b: &mut Book, id: usize) {
    let mut touched = std::mem::take(&mut b.jobs[id].touched);
    for &z in &touched {
        let zone = &mut b.zones[z as usize];
        zone.committed = zone.wp;
    }
    touched.clear();
    let j = &mut b.jobs[id];
    j.touched = touched;
    j.peak = j.write_zones;
    j.foreign = 0;
}

impl ZbdJob {
    fn zone_io(&self, action: ZoneAction, z: u32) -> Io {
        Io { op: Op::Zone(action), ns: self.z.ns, offset: self.layout.start(z), len: 0, pid: Pid::NONE }
    }

    /// A new batch: everything handed out before has reached the drive's queue.
    pub fn begin_batch(&self) {
        commit(&mut self.book.lock(), self.id);
    }

    /// The job has no more I/O: its share of the write zones goes to the others.
    pub fn done(&self) {
        self.book.lock().jobs[self.id].done = true;
    }

    /// fio's `zbd_file_reset` at the start of a pass: with verify, reset the job's zones.
    pub fn pass_start(&self, pre: &mut Vec<Io>) {
        let mut b = self.book.lock();
        if self.z.writes && self.z.verify {
            for z in self.z.min_zone..self.z.max_zone {
                if self.layout.has_wp(z) && b.zones[z as usize].wp != self.layout.start(z) {
                    self.reset(&mut b, z, pre);
                    self.put(&mut b, z);
                }
            }
        }
        b.write_cnt = write_cnt(self.z.reset_frequency);
    }

    /// Zone and write-pointer facts for the sequential-position rules.
    pub fn zone_of(&self, offset: u64) -> u32 {
        self.layout.zone_of(offset)
    }
    pub fn zone_size(&self) -> u64 {
        self.layout.zone_size
    }
    /// `(capacity end, zone end)` of the zone holding `offset`, if it has a write pointer and a
    /// capacity below the zone size (fio's jump from the capacity end to the zone end).
    pub fn capacity_gap(&self, offset: u64) -> Option<(u64, u64)> {
        let z = self.layout.zone_of(offset);
        (self.layout.has_wp(z) && self.layout.capacity < self.layout.zone_size).then(|| (self.layout.cap_end(z), self.layout.end(z)))
    }
    /// End of zone `z` and where its readable data ends.
    pub fn zone_end_and_wp(&self, z: u32) -> (u64, u64) {
        if z >= self.layout.zones {
            return (self.layout.ns_bytes, self.layout.ns_bytes);
        }
        let b = self.book.lock();
        (self.layout.end(z), b.readable_end(z, self.id))
    }

    /// Where an I/O at `offset` of `len` bytes must be cut so that no command spans two zones
    /// of a zoned drive (Linux splits such bios at zone boundaries: `chunk_sectors` is the zone
    /// size; wafsim's drive refuses them). `None` if it stays in one zone or zones are emulated.
    pub fn split_at(&self, offset: u64, len: u64) -> Option<u64> {
        let end = (self.layout.zone_of(offset) as u64 + 1) * self.layout.zone_size;
        (!self.layout.emulated && offset + len > end).then_some(end)
    }

    /// fio's `zbd_adjust_ddir`: a mixed job's read before any write becomes a write.
    pub fn adjust_ddir(&self, read: bool, wrote: bool, rwmix_write: bool) -> bool {
        if !read || wrote || self.z.read_beyond_wp || !rwmix_write {
            return read;
        }
        false
    }

    /// fio's `zbd_adjust_block` for an I/O of direction `d` at `offset`, `len` bytes; zone
    /// commands to issue first go to `pre`.
    pub fn adjust(&self, d: usize, offset: u64, len: u64, pre: &mut Vec<Io>) -> Adjusted {
        if offset.wrapping_sub(self.z.region_start) >= self.z.region_len {
            // fio asserts the offset is in the job's region (is_valid_offset)
            return Adjusted::Eof;
        }
        let mut b = self.book.lock();
        match d {
            READ => self.adjust_read(&b, offset, len),
            WRITE => self.adjust_write(&mut b, offset, len, pre),
            _ => self.adjust_trim(&mut b, offset, pre),
        }
    }

    fn adjust_read(&self, b: &Book, offset: u64, len: u64) -> Adjusted {
        let l = &self.layout;
        let min_bs = self.z.min_bs[READ];
        let orig = l.zone_of(offset);
        if orig >= l.zones || !l.has_wp(orig) {
            return Adjusted::Accept(offset, len);
        }
        if self.z.read_beyond_wp && b.zones[orig as usize].cond != Cond::Offline {
            return Adjusted::Accept(offset, len);
        }
        let mut zb = orig;
        let mut off = offset;
        let id = self.id;
        let mut range = b.readable_end(zb, id) - l.start(zb);
        if range < min_bs || (!self.z.random && offset + min_bs > b.readable_end(zb, id)) {
            let Some(z) = self.find_zone(b, min_bs, zb) else { return Adjusted::Eof };
            zb = z;
            range = b.readable_end(zb, id) - l.start(zb);
            if !self.z.random {
                off = l.start(zb);
            }
        }
        if range <= len {
            off = l.start(zb);
        } else if self.z.random {
            off = l.start(zb) + (offset - l.start(orig)) % (range - len) / min_bs * min_bs;
        }
        if !l.has_wp(zb) {
            return Adjusted::Accept(off, len);
        }
        let new_len = len.min(b.readable_end(zb, id).saturating_sub(off)) / min_bs * min_bs;
        if new_len == 0 {
            return Adjusted::Eof;
        }
        Adjusted::Accept(off, new_len)
    }

    /// fio's `zbd_find_zone`: the next zone with `min` bytes of data (random jobs: the nearest,
    /// looking both ways).
    fn find_zone(&self, b: &Book, min: u64, zb: u32) -> Option<u32> {
        let l = &self.layout;
        let (zf, zl) = (self.z.min_zone as i64, self.z.max_zone as i64);
        let (mut z1, mut z2) = (zb as i64 + 1, zb as i64 - 1);
        let has = |z: i64| {
            let z = z as u32;
            b.zones[z as usize].cond != Cond::Offline && l.start(z) + min <= b.readable_end(z, self.id)
        };
        while z1 < zl || z2 >= zf {
            if z1 < zl && b.zones[z1 as usize].cond != Cond::Offline {
                if has(z1) {
                    return Some(z1 as u32);
                }
            } else if !self.z.random {
                break;
            }
            if self.z.random && z2 >= zf && has(z2) {
                return Some(z2 as u32);
            }
            z1 += 1;
            z2 -= 1;
        }
        None
    }

    fn adjust_trim(&self, b: &mut Book, offset: u64, pre: &mut Vec<Io>) -> Adjusted {
        let l = self.layout;
        let mut z = l.zone_of(offset);
        if z >= l.zones || !l.has_wp(z) {
            return Adjusted::Accept(offset, self.z.min_bs[TRIM]);
        }
        if self.z.random && b.zones[z as usize].wp == l.start(z) {
            // fio: a random trim looks for a zone with data
            let found = (1..=(l.zones as i64)).flat_map(|d| [z as i64 + d, z as i64 - d]).find(|&c| {
                c >= self.z.min_zone as i64 && c < self.z.max_zone as i64 && l.has_wp(c as u32) && b.zones[c as usize].wp > l.start(c as u32)
            });
            match found {
                Some(c) => z = c as u32,
                None => return Adjusted::Eof,
            }
        } else if offset != l.start(z) {
            // fio fails the trim ("Trim offset not at zone start")
            return Adjusted::Eof;
        }
        self.reset(b, z, pre);
        self.put(b, z);
        Adjusted::Done
    }

    fn adjust_write(&self, b: &mut Book, offset: u64, len: u64, pre: &mut Vec<Io>) -> Adjusted {
        let l = self.layout;
        let min_bs = self.z.min_bs[WRITE];
        let zb = l.zone_of(offset);
        if zb >= l.zones {
            return Adjusted::Eof;
        }
        if !l.has_wp(zb) {
            // A conventional zone: anywhere, but not into the next (sequential) zone.
            let next = zb + 1;
            if !l.has_wp(next) || offset + len <= l.start(next) {
                return Adjusted::Accept(offset, len);
            }
            let ns = l.start(next);
            if !self.z.random {
                // A sequential writer ends the write at the sequential zone's start, so that
                // its next offset is that zone (see the module docs: fio's rule below sends a
                // sequential job back into this zone for ever when less than `min_bs` is left).
                return Adjusted::Accept(offset, ns - offset);
            }
            let (off, new_len) = if offset + min_bs > ns {
                let o = l.start(zb) + ns - offset;
                (o, len.min(ns - o))
            } else {
                (offset, ns - offset)
            };
            let new_len = new_len / min_bs * min_bs;
            return if new_len == 0 { Adjusted::Eof } else { Adjusted::Accept(off, new_len) };
        }
        let mut zb = zb;
        let zb = loop {
            let Some(z) = self.convert_to_write_zone(b, offset, zb, pre) else { return Adjusted::Eof };
            let r = b.remainder(z);
            if r > 0 && r < min_bs {
                zb = z;
                continue;
            }
            break z;
        };
        let mut reset = false;
        if self.z.reset_frequency > 0.0 {
            if let Some((_, _, vdb)) = b.vdb {
                if vdb as f64 >= self.z.region_len as f64 * self.z.reset_threshold {
                    b.write_cnt = b.write_cnt.saturating_sub(1);
                    if b.write_cnt == 0 {
                        b.write_cnt = write_cnt(self.z.reset_frequency);
                        reset = true;
                    }
                }
            }
        }
        if reset || b.full(zb, min_bs) {
            self.reset(b, zb, pre);
            if l.cap_end(zb) - l.start(zb) < min_bs {
                return Adjusted::Eof;
            }
        }
        let off = b.zones[zb as usize].wp;
        if off.wrapping_sub(self.z.region_start) >= self.z.region_len {
            return Adjusted::Eof;
        }
        let new_len = len.min(l.cap_end(zb) - off) / min_bs * min_bs;
        if new_len == 0 {
            return Adjusted::Eof;
        }
        b.set_wp(self.id, zb, off + new_len, self.z.reset_frequency > 0.0);
        if off + new_len >= l.cap_end(zb) {
            self.put(b, zb);
        }
        Adjusted::Accept(off, new_len)
    }

    /// fio's `zbd_convert_to_write_zone`, without fio's waits for in-flight I/O.
    fn convert_to_write_zone(&self, b: &mut Book, offset: u64, zb: u32, pre: &mut Vec<Io>) -> Option<u32> {
        let l = self.layout;
        let min_bs = self.z.min_bs[WRITE];
        let (min_zone, max_zone) = (self.z.min_zone, self.z.max_zone);
        let mut zb = zb;
        // The chosen zone has a remainder too small for a block: finish it and move on.
        let r = b.remainder(zb);
        if r > 0 && r < min_bs {
            self.put(b, zb);
            self.finish(b, zb, pre);
            if zb + 1 >= max_zone && !self.z.random {
                return None;
            }
            loop {
                zb += 1;
                if zb >= max_zone {
                    zb = min_zone;
                }
                if l.has_wp(zb) {
                    break;
                }
            }
        }
        if self.write_zone_get(b, zb) {
            return Some(zb);
        }
        let max_write = b.max_write.unwrap_or(0);
        let limited = max_write > 0 || self.z.job_max_open > 0;
        let mut zone_idx = if limited && !b.write_zones.is_empty() {
            b.write_zones[self.pick_random_zone_idx(b, offset)]
        } else {
            l.zone_of(offset)
        };
        zone_idx = zone_idx.clamp(min_zone, max_zone - 1);
        let mut examine = true;
        loop {
            if l.has_wp(zone_idx) {
                if b.zones[zone_idx as usize].cond != Cond::Offline && !limited {
                    break;
                }
                if b.write_zones.is_empty() {
                    examine = false;
                    break;
                }
            }
            let new = self.pick_write_zone(b, offset)?;
            if new == zone_idx {
                break;
            }
            zone_idx = new;
        }
        if examine && b.remainder(zone_idx) >= min_bs {
            return Some(zone_idx);
        }
        // Choose another zone.
        let mut z = zone_idx;
        if self.z.random {
            if self.write_zone_get(b, zb) {
                return Some(zb);
            }
            z = zb;
        }
        // The scan can only add a zone to the set; when the limits allow no new zone it finds
        // nothing (write_zone_get refuses every zone outside the set), so skip it: on a drive
        // with tens of thousands of zones the scan would otherwise run on every full-set miss.
        let scan = if self.may_add(b) { self.z.region_len / l.zone_size } else { 0 };
        for _ in 0..scan {
            z += 1;
            if z >= max_zone {
                z = min_zone;
            }
            if !l.has_wp(z) || b.zones[z as usize].write {
                continue;
            }
            if self.write_zone_get(b, z) {
                return Some(z);
            }
        }
        let set: Vec<u32> = b.write_zones.iter().copied().filter(|&w| (min_zone..max_zone).contains(&w)).collect();
        for w in set {
            if b.remainder(w) >= min_bs && self.write_zone_get(b, w) {
                return Some(w);
            }
        }
        if self.z.random && !self.z.verify {
            // Every write zone has a remainder below the block size: finish one and use it.
            if let Some(w) = self.pick_write_zone(b, offset) {
                self.finish(b, w, pre);
                return Some(w);
            }
        }
        None
    }

    /// fio's `pick_random_zone_idx`: the offset's position in the region, scaled to the set.
    fn pick_random_zone_idx(&self, b: &Book, offset: u64) -> usize {
        let n = b.write_zones.len() as u128;
        let rel = offset.saturating_sub(self.z.region_start) as u128;
        ((rel * n / self.z.region_len.max(1) as u128) as usize).min(b.write_zones.len().saturating_sub(1))
    }

    /// fio's `zbd_pick_write_zone`: a write zone in the job's range, from the offset's position.
    fn pick_write_zone(&self, b: &Book, offset: u64) -> Option<u32> {
        let n = b.write_zones.len();
        if n == 0 {
            return None;
        }
        let mut i = self.pick_random_zone_idx(b, offset);
        for _ in 0..n {
            if i >= n {
                i = 0;
            }
            let z = b.write_zones[i];
            if (self.z.min_zone..self.z.max_zone).contains(&z) {
                return Some(z);
            }
            i += 1;
        }
        None
    }

    /// Do the open-zone limits let this job add a zone to the write set now?
    fn may_add(&self, b: &Book) -> bool {
        let max = b.max_write.unwrap_or(0);
        if max == 0 {
            return true;
        }
        if self.z.job_max_open > 0 && b.jobs[self.id].write_zones >= self.z.job_max_open {
            return false;
        }
        if b.jobs[self.id].write_zones >= b.share(self.id, max) {
            return false;
        }
        // Every zone that may be open on the drive in some interleaving of the jobs' batches:
        // the set, and what each job may still hold beyond it.
        let others: u32 = (0..b.jobs.len()).filter(|&j| j != self.id).map(|j| b.excess(j)).sum();
        let own = b.excess(self.id).saturating_sub(1);
        b.write_zones.len() as u32 + 1 + others + own <= max
    }

    /// fio's `zbd_write_zone_get`: may the job write zone `z` (adding it to the set)?
    fn write_zone_get(&self, b: &mut Book, z: u32) -> bool {
        let zone = &b.zones[z as usize];
        if zone.cond != Cond::Normal {
            return false;
        }
        if self.z.verify && b.full(z, self.z.min_bs[WRITE]) {
            return false;
        }
        let max = b.max_write.unwrap_or(0);
        if max == 0 {
            return true;
        }
        if zone.write {
            return b.remainder(z) != 0;
        }
        if !self.may_add(b) {
            return false;
        }
        b.write_zones.push(z);
        let zone = &mut b.zones[z as usize];
        zone.write = true;
        zone.adder = self.id;
        let j = &mut b.jobs[self.id];
        j.write_zones += 1;
        j.peak = j.peak.max(j.write_zones);
        true
    }

    /// fio's `zbd_write_zone_put`.
    fn put(&self, b: &mut Book, z: u32) {
        if !b.zones[z as usize].write {
            return;
        }
        if let Some(i) = b.write_zones.iter().position(|&w| w == z) {
            b.write_zones.remove(i);
        }
        let zone = &mut b.zones[z as usize];
        zone.write = false;
        let adder = std::mem::replace(&mut zone.adder, usize::MAX);
        match b.jobs.get_mut(adder) {
            // a running job's zone: its excess covers the zone until its next batch
            Some(j) if adder == self.id || (j.alive && !j.done) => j.write_zones -= 1,
            Some(j) => {
                j.write_zones -= 1;
                b.jobs[self.id].foreign += 1;
            }
            None => b.jobs[self.id].foreign += 1,
        }
    }

    /// fio's `__zbd_reset_zone`: only a zone with data is reset (and counted).
    fn reset(&self, b: &mut Book, z: u32, pre: &mut Vec<Io>) {
        let start = self.layout.start(z);
        if b.zones[z as usize].wp == start {
            return;
        }
        if !self.layout.emulated {
            pre.push(self.zone_io(ZoneAction::Reset, z));
        }
        b.set_wp(self.id, z, start, self.z.reset_frequency > 0.0);
        b.resets += 1;
    }

    /// fio's `zbd_finish_zone`: the write pointer goes to the zone end.
    fn finish(&self, b: &mut Book, z: u32, pre: &mut Vec<Io>) {
        if !self.layout.emulated {
            pre.push(self.zone_io(ZoneAction::Finish, z));
        }
        // fio does not count a finish in its valid-data accounting
        let end = self.layout.cap_end(z);
        b.set_wp(self.id, z, end, false);
    }
}

/// fio's `_zbd_reset_write_cnt`: writes between threshold resets.
fn write_cnt(frequency: f64) -> u32 {
    if frequency > 0.0 {
        (1.0 / frequency).min(u32::MAX as f64) as u32
    } else {
        u32::MAX
    }
}
