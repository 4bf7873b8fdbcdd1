//! A served drive kept across restarts: `wafsim serve --backing DIR` keeps, beside the
//! namespaces' data files, the simulated drive itself, so a server stopped (cleanly or by
//! `kill -9`) and started again continues with the drive it had: its mapping, validity, GC
//! state, FDP and zone state and counters.
//!
//! What `DIR` holds:
//!
//! ```text
//! serve.lock      held (flock) by the running server: a second server on DIR is refused
//! drive.snap      the drives as of a checkpoint (a drive image container, "serve" kind):
//!                 META (who made it, command counts, power-on time, the journal it continues
//!                 with), then one DRIV section per drive holding that drive's own image
//! journal.G       every command the drives ran since checkpoint G, in order: a 16-byte header
//!                 ("WAFSJRN1", G) and 32-byte records, each with its own CRC-32
//! NAME.img        a namespace's data (see [`crate::sim::Backing`])
//! ```
//!
//! The simulation is deterministic, so a checkpoint plus the commands after it in order is the
//! drive: on restart the last checkpoint is loaded and its journals replayed (a record cut short
//! by a crash ends the replay). Every command is appended to the journal as it runs (before its
//! reply), so after `kill -9` nothing is lost; a flush (or FUA write) also `fdatasync`s the
//! journal, so after a power loss the drive is no older than the last flush. A checkpoint is
//! written aside, synced and renamed into place (then the directory is synced), so a crash while
//! writing one leaves the previous one and its journals, which still replay.
//!
//! Paced servers (`--pace`) keep checkpoints only: their drives also change with the timing
//! model's idle time, which a command journal does not replay. Their state after a crash is the
//! last checkpoint's.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wafsim_core::image::{ImageReader, ImageWriter};
use crate::journal::{decode, journal_path, Journal, JOURNAL_MAGIC, RECORD};
use crate::sim::LiveDrive;

const SNAPSHOT: &str = "drive.snap";

/// Who a kept drive belongs to: a restarted server must serve the same drive.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    /// The experiment (or device file, or preset) as given.
    pub experiment: String,
    /// The variant served.
    pub variant: String,
    /// The capacity scale.
    pub scale: f64,
}

impl Ident {
    fn describe(&self) -> String {
        format!("{} variant {:?} at scale {}", self.experiment, self.variant, self.scale)
    }
}

/// What a restart found and did.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// Commands replayed from the journals after the checkpoint.
    pub replayed: u64,
    /// A journal ended in a record cut short or damaged (a crash while appending): the commands
    /// before it were replayed.
    pub torn: bool,
}

/// The drive's directory, locked for this server.
pub struct Kept {
    dir: PathBuf,
    _lock: File,
    ident: Ident,
    /// The journal the next checkpoint starts.
    next_gen: u64,
    journaled: bool,
}

/// Write `bytes` to `path` so that a crash leaves either the old file or the new one: aside,
/// synced, renamed, and the directory synced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    let r = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

impl Kept {
    /// Lock `dir` for this server (refused while another server holds it). With `fresh`, the
    /// drive kept there is discarded (the data files are the caller's). `journaled`: whether
    /// commands are journaled between checkpoints (not for paced servers).
    pub fn open(dir: &Path, ident: Ident, fresh: bool, journaled: bool) -> Result<Kept, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("--backing {}: {e}", dir.display()))?;
        let lock_path = dir.join("serve.lock");
        let mut lock = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = lock.read_to_string(&mut pid);
                let who = if pid.trim().is_empty() { String::new() } else { format!(" (pid {})", pid.trim()) };
                return Err(format!(
                    "--backing {} is in use by another wafsim serve{who}: one server per directory (stop it with `wafsim serve --stop ADDR`, or give another --backing)",
                    dir.display()
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(format!("{}: cannot lock: {e}", lock_path.display())),
        }
        let _ = lock.set_len(0);
        let _ = writeln!(&lock, "{}", std::process::id());
        let mut kept = Kept { dir: dir.to_path_buf(), _lock: lock, ident, next_gen: 0, journaled };
        if fresh {
            for g in kept.journals().map_err(|e| format!("{}: {e}", dir.display()))? {
                std::fs::remove_file(journal_path(dir, g)).map_err(|e| format!("{}: {e}", journal_path(dir, g).display()))?;
            }
            match std::fs::remove_file(dir.join(SNAPSHOT)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: {e}", dir.join(SNAPSHOT).display())),
            }
        }
        // New journals are numbered past every one present, so none is ever reopened (and
        // truncated) while a checkpoint that needs it may still be the one on disk.
        kept.next_gen = kept.journals().map_err(|e| format!("{}: {e}", dir.display()))?.last().copied().unwrap_or(0);
        Ok(kept)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the directory holds a drive (a checkpoint) to continue.
    pub fn has_drive(&self) -> bool {
        self.dir.join(SNAPSHOT).exists()
    }

    /// Journal generations present, in order.
    fn journals(&self) -> io::Result<Vec<u64>> {
        let mut gens = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let name = e?.file_name();
            if let Some(g) = name.to_str().and_then(|n| n.strip_prefix("journal.")).and_then(|g| g.parse().ok()) {
                gens.push(g);
            }
        }
        gens.sort_unstable();
        Ok(gens)
    }

    /// Continue the drive kept here in `drive` (built from the same experiment, not yet
    /// used): load the checkpoint, replay the journals after it. Then a new checkpoint is
    /// taken, so the replayed journals are not replayed again.
    pub fn restore(&mut self, drive: &Arc<LiveDrive>) -> Result<Restored, String> {
        let path = self.dir.join(SNAPSHOT);
        let file = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut r = ImageReader::new(wafsim_core::image::FileReader::new(file), "serve").map_err(|e| format!("{}: {e}", path.display()))?;
        let meta = (|| {
            let len = r.any_section(b"META")?;
            if len > 1 << 16 {
                return Err(wafsim_core::image::ImageError::Damaged("META section".into()));
            }
            r.str()
        })()
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let meta = Meta::parse(&meta).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.ident != self.ident {
            return Err(format!(
                "--backing {} holds the drive of {}; this server is {}: serve that, give another --backing, or start over with --fresh",
                self.dir.display(),
                meta.ident.describe(),
                self.ident.describe()
            ));
        }
        {
            let mut live = drive.lock();
            if meta.drives != live.stack.devices.len() {
                return Err(format!("{}: {} drive(s) kept, the variant has {}", path.display(), meta.drives, live.stack.devices.len()));
            }
            for (d, dev) in live.stack.devices.iter_mut().enumerate() {
                r.nested(b"DRIV", |input| dev.model_mut().device_mut().load_image_from(input)).map_err(|e| format!("{}: drive {d}: {e}", path.display()))?;
            }
            r.finish().map_err(|e| format!("{}: {e}", path.display()))?;
            live.write_commands = meta.write_commands;
            live.read_commands = meta.read_commands;
            live.power_on_before = meta.power_on_secs;
        }
        let mut restored = Restored::default();
        for g in self.journals().map_err(|e| format!("{}: {e}", self.dir.display()))? {
            if g < meta.gen {
                // Replaced by the checkpoint (a crash came between its rename and the cleanup).
                let _ = std::fs::remove_file(journal_path(&self.dir, g));
                continue;
            }
            let (n, torn) = replay(&journal_path(&self.dir, g), g, drive)?;
            restored.replayed += n;
            restored.torn |= torn;
        }
        self.next_gen = self.next_gen.max(meta.gen);
        Ok(restored)
    }

    /// Write a checkpoint of `drive` and start a new journal: under the drive's lock (requests
    /// wait while the drives are saved), then synced and renamed into place, and the journals it
    /// covers removed. `power_on_secs`: the drive's power-on time now.
    pub fn checkpoint(&mut self, drive: &Arc<LiveDrive>, power_on_secs: u64) -> io::Result<()> {
        let gen = self.next_gen + 1;
        let path = self.dir.join(SNAPSHOT);
        let tmp = tmp_path(&path);
        let file = {
            let mut live = drive.lock();
            let meta = Meta {
                ident: self.ident.clone(),
                gen,
                drives: live.stack.devices.len(),
                write_commands: live.write_commands,
                read_commands: live.read_commands,
                power_on_secs,
            };
            let mut w = ImageWriter::new(BufWriter::with_capacity(1 << 20, File::create(&tmp)?), "serve")?;
            let text = meta.to_text();
            w.section(b"META", 4 + text.len() as u64)?;
            w.str(&text)?;
            for dev in &live.stack.devices {
                w.nested(b"DRIV", &|out| dev.model().device().save_image_to(out))?;
            }
            let file = w.finish()?.into_inner().map_err(|e| e.into_error())?;
            // Commands from here on belong to the new checkpoint.
            if self.journaled {
                live.journal = Some(Journal::create(&journal_path(&self.dir, gen), gen)?);
            }
            file
        };
        file.sync_all()?;
        let journal = drive.lock().journal.as_ref().map(Journal::file);
        if let Some(j) = journal {
            j.sync_all()?;
        }
        std::fs::rename(&tmp, &path)?;
        sync_dir(&path)?;
        for g in self.journals()? {
            if g < gen {
                std::fs::remove_file(journal_path(&self.dir, g))?;
            }
        }
        self.next_gen = gen;
        Ok(())
    }
}

/// Run the commands of journal `path` (generation `gen`) on `drive`: how many, and whether it
/// ended in a damaged record.
fn replay(path: &Path, gen: u64, drive: &Arc<LiveDrive>) -> Result<(u64, bool), String> {
    let ctx = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut r = BufReader::with_capacity(1 << 20, File::open(path).map_err(|e| ctx(&e))?);
    let mut head = [0u8; 16];
    if r.read_exact(&mut head).is_err() {
        // Created but its header never written: nothing ran after it.
        return Ok((0, true));
    }
    if head[..8] != JOURNAL_MAGIC || u64::from_le_bytes(head[8..].try_into().expect("8 bytes")) != gen {
        return Err(ctx(&"not a wafsim serve journal of this generation"));
    }
    let mut n = 0u64;
    let mut rec = [0u8; RECORD];
    loop {
        match read_full(&mut r, &mut rec).map_err(|e| ctx(&e))? {
            0 => return Ok((n, false)),
            RECORD => {}
            _ => return Ok((n, true)),
        }
        let Some(io) = decode(&rec) else { return Ok((n, true)) };
        drive.replay(io).map_err(|e| ctx(&format!("command {} of the journal: {e}", n + 1)))?;
        n += 1;
    }
}

/// Read until `buf` is full or the input ends: the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The META section: `key=value` lines.
struct Meta {
    ident: Ident,
    gen: u64,
    drives: usize,
    write_commands: u64,
    read_commands: u64,
    power_on_secs: u64,
}

impl Meta {
    fn to_text(&self) -> String {
        format!(
            "experiment={}\nvariant={}\nscale={}\njournal={}\ndrives={}\nwrite_commands={}\nread_commands={}\npower_on_secs={}\n",
            self.ident.experiment.replace('\n', " "),
            self.ident.variant.replace('\n', " "),
            self.ident.scale,
            self.gen,
            self.drives,
            self.write_commands,
            self.read_commands,
            self.power_on_secs
        )
    }

    fn parse(text: &str) -> Result<Meta, String> {
        let get = |k: &str| text.lines().find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix('='))).ok_or_else(|| format!("META: no {k}"));
        let num = |k: &str| get(k)?.parse::<u64>().map_err(|_| format!("META: {k} is not a number"));
        Ok(Meta {
            ident: Ident { experiment: get("experiment")?.into(), variant: get("variant")?.into(), scale: get("scale")?.parse().map_err(|_| "META: scale is not a number".to_string())? },
            gen: num("journal")?,
            drives: num("drives")? as usize,
            write_commands: num("write_commands")?,
            read_commands: num("read_commands")?,
            power_on_secs: num("power_on_secs")?,
        })
    }
}
