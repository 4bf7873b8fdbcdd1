//! A simulated drive's namespaces as NBD exports: every request a client sends runs through the
//! drive's simulation (FTL, GC, placement) and through a data store, so reads return what was
//! written and the drive's counters say what the media did.
//!
//! * One export per namespace of the experiment, named as the experiment names it. A write
//!   carries no placement directive, so it goes to placement handle 0 of its namespace: a
//!   client needs no FDP awareness to get its namespace's isolation.
//! * `NAME@K` names the same namespace with placement handle `K` on every write, so one
//!   application can place two streams (a cache's small- and large-object engines) through two
//!   connections. Both names share one data store.
//! * Data lives in a sparse in-memory store ([`MemExport`]) or in one backing file per namespace
//!   ([`FileExport`]); precondition writes zeroes, which the stores already read back.
//!
//! Requests of all connections meet in one lock around the drive: the simulation is one
//! sequential state machine, as a drive's FTL is. The data store is outside that lock.
//!
//! Untimed, a reply leaves as soon as the simulation and the store are done;
//! [`crate::pace::paced_exports`] wraps the same exports so that replies wait for the timing
//! model. The two are separate types, so untimed requests pay nothing for pacing.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use wafsim_core::{Io, Op, Pid};
use wafsim_experiment::drives::Stack;

use crate::export::{Export, ExportError, ExportMap};
use crate::journal::Journal;
use crate::proto::BlockSizes;
use crate::{FileExport, MemExport};

/// The simulated drives of one experiment variant, shared by every export and connection.
pub struct LiveDrive {
    inner: Mutex<Live>,
}

/// What the lock guards: the drives and the command counts SMART reports.
pub struct Live {
    /// The drives (one, or one per namespace in a dedicated layout).
    pub stack: Stack,
    /// Write commands (writes and write-zeroes that program media) completed.
    pub write_commands: u64,
    /// Read commands completed.
    pub read_commands: u64,
    /// Power-on seconds of the drive before this server started it (a kept drive's).
    pub power_on_before: u64,
    /// Where commands are journaled (a kept drive, see [`crate::persist`]).
    pub journal: Option<Journal>,
}

impl LiveDrive {
    /// Serve `stack`. Zoned namespaces are refused: NBD has no zone commands, so a client could
    /// only fail on them (a zoned drive behind dm-zoned is a conventional block device and fine).
    pub fn new(stack: Stack) -> Result<Arc<LiveDrive>, String> {
        let t = stack.target();
        for (i, z) in t.zones.iter().enumerate() {
            if z.is_some() {
                return Err(format!(
                    "namespace {:?} is zoned: NBD has no zone commands (Zone Append, Report Zones, Reset); serve a conventional or FDP drive, or put dm-zoned in front ([host] layer = \"dm-zoned\")",
                    stack.cfg.namespaces[i].name
                ));
            }
        }
        Ok(Arc::new(LiveDrive { inner: Mutex::new(Live { stack, write_commands: 0, read_commands: 0, power_on_before: 0, journal: None }) }))
    }

    /// The drives, locked (for counters and state snapshots; hold it briefly: every request
    /// waits for it).
    pub fn lock(&self) -> MutexGuard<'_, Live> {
        // A panic inside the simulation poisons the lock; the state is still the best there is
        // to report, and the request that panicked already failed.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fill every namespace sequentially (the drive as the experiment's precondition leaves
    /// it: every LBA written once, with zeroes, which is what the data stores read back).
    pub fn precondition(&self) -> Result<(), String> {
        let mut live = self.lock();
        for d in &mut live.stack.devices {
            wafsim_experiment::drives::precondition(d).map_err(|e| format!("precondition: {e:#}"))?;
        }
        Ok(())
    }

    fn submit(&self, io: Io) -> Result<(), ExportError> {
        // NBD clients may send zero-length requests (the server answers them as done); an
        // NVMe command cannot carry zero blocks, so none reaches the drive.
        if io.len == 0 {
            return Ok(());
        }
        let mut live = self.lock();
        live.run(&io).map_err(|e| ExportError::Failed(format!("simulated drive: {e}")))?;
        // Journaled once it ran (a command the drive refused changed nothing), before the
        // reply: a server killed after replying has it on file.
        if let Some(j) = &mut live.journal {
            j.append(&io)?;
        }
        Ok(())
    }

    /// Run a journaled command again (a restarted server's replay; not journaled anew).
    pub(crate) fn replay(&self, io: Io) -> Result<(), String> {
        self.lock().run(&io).map_err(|e| format!("simulated drive: {e}"))
    }

    /// Make the journal durable (a flush, or a FUA write, asked for it). The sync runs outside
    /// the drive's lock: other connections' commands need not wait for the disk.
    pub fn sync_journal(&self) -> Result<(), ExportError> {
        let file = self.lock().journal.as_ref().map(Journal::file);
        if let Some(f) = file {
            f.sync_data()?;
        }
        Ok(())
    }
}

impl Live {
    /// One command on the drives, counted as SMART counts commands.
    fn run(&mut self, io: &Io) -> Result<(), wafsim_core::DeviceError> {
        self.stack.submit_batch(std::slice::from_ref(io))?;
        self.count(io.op);
        Ok(())
    }

    /// Count a command the drives took, as SMART counts commands (writes and reads).
    pub(crate) fn count(&mut self, op: Op) {
        match op {
            Op::Write => self.write_commands += 1,
            Op::Read => self.read_commands += 1,
            _ => {}
        }
    }

    /// The drive's power-on time in seconds: its time before this server, plus the time since
    /// `started`.
    pub fn power_on_secs(&self, started: std::time::Instant) -> u64 {
        self.power_on_before + started.elapsed().as_secs()
    }
}

/// One namespace through one placement handle.
pub struct NsExport {
    drive: Arc<LiveDrive>,
    ns: u32,
    pid: Pid,
    size: u64,
    sizes: BlockSizes,
    pub(crate) data: Arc<dyn Export>,
}

impl NsExport {
    pub(crate) fn io(&self, op: Op, offset: u64, len: u64) -> Io {
        Io { op, ns: self.ns, offset, len: len as u32, pid: self.pid }
    }
}

/// Longest command handed to the simulation at once (`Io::len` is 32 bits).
const MAX_IO: u64 = 1 << 30;

impl Export for NsExport {
    fn size(&self) -> u64 {
        self.size
    }

    fn block_sizes(&self) -> BlockSizes {
        self.sizes
    }

    /// Every connection sees the one store and the one drive: flush and FUA mean the same on
    /// all of them.
    fn multi_conn(&self) -> bool {
        true
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), ExportError> {
        self.drive.submit(self.io(Op::Read, offset, buf.len() as u64))?;
        self.data.read(offset, buf)
    }

    fn write(&self, offset: u64, data: &[u8], fua: bool) -> Result<(), ExportError> {
        self.drive.submit(self.io(Op::Write, offset, data.len() as u64))?;
        self.data.write(offset, data, fua)?;
        if fua {
            self.drive.sync_journal()?;
        }
        Ok(())
    }

    /// A deallocate (NVMe Dataset Management): the mapping units it covers whole stop being
    /// valid, so GC no longer copies them.
    fn trim(&self, offset: u64, len: u64) -> Result<(), ExportError> {
        for (o, l) in chunks(offset, len) {
            self.drive.submit(self.io(Op::Trim, o, l))?;
        }
        self.data.trim(offset, len)
    }

    /// Without `no_hole` a deallocate (as NVMe Write Zeroes with the Deallocate bit: the drive
    /// unmaps, reads return zeroes); with it, a write of zeroes the media programs.
    fn write_zeroes(&self, offset: u64, len: u64, no_hole: bool) -> Result<(), ExportError> {
        let op = if no_hole { Op::Write } else { Op::Trim };
        for (o, l) in chunks(offset, len) {
            self.drive.submit(self.io(op, o, l))?;
        }
        self.data.write_zeroes(offset, len, no_hole)
    }

    /// The data, then the drive's journal: after a flush both survive a power loss.
    fn flush(&self) -> Result<(), ExportError> {
        self.data.flush()?;
        self.drive.sync_journal()
    }
}

/// `[offset, offset + len)` in pieces of at most [`MAX_IO`] bytes.
pub(crate) fn chunks(offset: u64, len: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..len.div_ceil(MAX_IO)).map(move |i| (offset + i * MAX_IO, MAX_IO.min(len - i * MAX_IO)))
}

/// Where exports keep their data.
pub enum Backing<'a> {
    /// Sparse in memory (lost when the server stops).
    Memory,
    /// One file per namespace in this directory, `NAME.img`: reused with its data when it
    /// exists (it must have the namespace's size), else created sparse.
    Dir(&'a Path),
}

/// Where namespace `name` keeps its data in a [`Backing::Dir`].
pub fn data_file(dir: &Path, name: &str) -> std::path::PathBuf {
    dir.join(format!("{name}.img"))
}

/// The exports of `drive`: one per namespace by its name, and `NAME@K` for placement handle
/// `K` of that namespace (resolved on demand). The first namespace is the default export.
pub fn exports(drive: &Arc<LiveDrive>, backing: Backing<'_>) -> Result<ExportMap, String> {
    exports_with(drive, backing, |e| Arc::new(e))
}

/// The export map, each namespace export made by `wrap` (the untimed one as is, or wrapped by
/// [`crate::pace::paced_exports`]).
pub(crate) fn exports_with(drive: &Arc<LiveDrive>, backing: Backing<'_>, wrap: impl Fn(NsExport) -> Arc<dyn Export> + Send + Sync + 'static) -> Result<ExportMap, String> {
    let (names, sizes, handles, unit) = {
        let live = drive.lock();
        let t = live.stack.target();
        let names: Vec<String> = live.stack.cfg.namespaces.iter().map(|n| n.name.clone()).collect();
        let handles: Vec<Vec<u16>> = live.stack.cfg.namespaces.iter().map(|n| n.placement_handles.clone()).collect();
        (names, t.ns_bytes.clone(), handles, live.stack.cfg.mapping_unit)
    };
    // Any 512-byte multiple is accepted (a partial mapping unit costs a whole one, as on a
    // drive); the mapping unit is what clients should prefer.
    let block = BlockSizes { min: 512, preferred: unit.max(512), max: 32 << 20 };
    let mut data: Vec<Arc<dyn Export>> = Vec::new();
    for (name, &size) in names.iter().zip(&sizes) {
        data.push(match backing {
            Backing::Memory => Arc::new(MemExport::new(size)),
            Backing::Dir(dir) => {
                if name.contains('/') || name.starts_with('.') {
                    return Err(format!("namespace {name:?}: not usable as a file name in {}", dir.display()));
                }
                let path = data_file(dir, name);
                let f = FileExport::open_or_create(&path, size).map_err(|e| format!("{}: {e}", path.display()))?;
                Arc::new(f)
            }
        });
    }
    let make = {
        let drive = drive.clone();
        move |ns: usize, pid: Pid| -> Arc<dyn Export> { wrap(NsExport { drive: drive.clone(), ns: ns as u32, pid, size: sizes[ns], sizes: block, data: data[ns].clone() }) }
    };
    let mut map = ExportMap::new();
    for (i, name) in names.iter().enumerate() {
        let export = make(i, Pid::NONE);
        let desc = format!(
            "namespace {} (nsid {}), {} bytes, {} placement handle(s); NAME@K writes with handle K",
            name,
            i + 1,
            export.size(),
            handles[i].len().max(1)
        );
        map.insert(name.clone(), desc, export);
    }
    Ok(map.with_resolver(move |req: &str| {
        let (name, k) = req.rsplit_once('@')?;
        let k: u16 = k.parse().ok()?;
        let ns = names.iter().position(|n| n == name)?;
        // Handles beyond the namespace's list are refused here rather than sent as an
        // invalid placement identifier the drive would log and ignore.
        if (k as usize) >= handles[ns].len().max(1) {
            return None;
        }
        Some(make(ns, Pid::new(0, k)))
    }))
}
