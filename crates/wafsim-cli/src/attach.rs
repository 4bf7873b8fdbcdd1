//! `wafsim attach`: a simulated drive's namespaces and placement handles as Linux block
//! devices (FUSE + loop, in this process), optionally with file systems made and mounted on
//! them, for real software; the drive's WAF over the window the software ran.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use wafsim_attach::{Attachment, BlockStat, FsKind, FsSpec, Spec};
use wafsim_nbd::sim::{Backing, LiveDrive};
use wafsim_nbd::Exports;
use wafsim_report::nvme::drive::DriveState;

use crate::serve::{build_drives, drive_exports, drive_state, load_variant, spawn_control, start_drive, ServedVariant};

/// Attach a simulated drive's namespaces (and `NAME@K` placement handles) as Linux block
/// devices (/dev/loopN over a FUSE file this process serves), optionally make and mount a file
/// system on each, run a command on them, and report the drive's WAF over the window the
/// command ran. Without a command, stays attached until Ctrl-C or SIGTERM. Everything is taken
/// down on exit; after a crash (kill -9) the next attach of the same --name cleans up first.
/// Needs root, /dev/fuse and loop devices.
///
/// Example: wafsim attach experiments/real/drive.toml --variant fdp --fs xfs -- \
///            db_bench --db=$WAFSIM_MNT_DATA --wal_dir=$WAFSIM_MNT_WAL --benchmarks=fillrandom
#[derive(clap::Args)]
pub struct AttachArgs {
    /// Experiment file, device file (devices/*.toml) or preset name.
    #[arg(required_unless_present = "cleanup")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub which: ServedVariant,
    /// An export to attach: NAME (a namespace; its writes use the namespace's first placement
    /// handle) or NAME@K (the namespace through its placement handle K). Repeat or separate
    /// with commas. Default: every namespace.
    #[arg(long = "export", value_name = "NAME[@K]", value_delimiter = ',')]
    pub exports: Vec<String>,
    /// Make a file system (ext4, xfs or btrfs) on every attached export, or with NAME=KIND on
    /// one of them; repeat or separate with commas. The mkfs tool's defaults apply (they
    /// discard the whole device first).
    #[arg(long = "fs", value_name = "[NAME=]KIND", value_delimiter = ',')]
    pub fs: Vec<String>,
    /// Options added to every mkfs, e.g. "-K" (mkfs.xfs/mkfs.btrfs: no discard first).
    #[arg(long, value_name = "OPTS", allow_hyphen_values = true)]
    pub mkfs_options: Option<String>,
    /// `mount -o` options for the file systems, e.g. "discard" or "discard=async".
    #[arg(long, value_name = "OPTS")]
    pub mount_options: Option<String>,
    /// Mount the file systems at DIR/EXPORT (default: the attachment's runtime directory,
    /// /run/wafsim/attach/NAME/mnt/EXPORT).
    #[arg(long, value_name = "DIR")]
    pub mount_root: Option<PathBuf>,
    /// The block devices' logical block size in bytes (512, 1024, 2048, 4096), as a drive's LBA
    /// format: file systems align their writes to it. Default: the drive's mapping unit (at
    /// most 4096), so every write covers whole mapping units, as on a drive formatted 4Kn; 512
    /// gives a 512e drive, where sub-4 KiB writes cost whole mapping units.
    #[arg(long, value_name = "BYTES")]
    pub sector_size: Option<u32>,
    /// The attachment's name: one attachment per name at a time; a crashed one's leftovers are
    /// cleaned by the next attach of the same name.
    #[arg(long, default_value = "wafsim")]
    pub name: String,
    /// Write every LBA once before attaching (the drive then starts full, as after the
    /// experiment's precondition).
    #[arg(long)]
    pub precondition: bool,
    /// Real-time emulation: requests complete at the timing model's completion times (see
    /// `wafsim serve --pace`).
    #[arg(long)]
    pub pace: bool,
    /// Control socket for `wafsim nvme ... --server ADDR` while attached (host:port or
    /// unix:PATH; default unix:RUNTIME_DIR/control; "none" for none).
    #[arg(long)]
    pub control: Option<String>,
    /// Write the window's result as JSON to FILE (WAF per drive, bytes per block device).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the drive states at the window's start and end to DIR (driveN-before.json,
    /// driveN-after.json) for `wafsim waf` and `wafsim nvme ... --state`.
    #[arg(long, value_name = "DIR")]
    pub states: Option<PathBuf>,
    /// Save the drive as a drive image to FILE once the file systems are unmounted (FILE for
    /// one drive, FILE's name with `.dN` before its extension per drive of a dedicated layout):
    /// a drive aged by real software, for a model run's `[history] kind = "image"` on the same
    /// experiment, variant and scale. Example: `--save-image aged.img`.
    #[arg(long, value_name = "FILE")]
    pub save_image: Option<PathBuf>,
    /// Only clean what a crashed attachment of --name left (loop devices, mounts) and exit.
    #[arg(long, conflicts_with_all = ["exports", "fs", "precondition", "pace", "command"])]
    pub cleanup: bool,
    /// The command to run once attached (after `--`). It sees WAFSIM_DEV_<EXPORT> (the block
    /// device), WAFSIM_MNT_<EXPORT> (the mount point, with --fs) and WAFSIM_CONTROL; EXPORT is
    /// the export's name in upper case with other characters than letters and digits as `_`
    /// (`data@1` -> WAFSIM_DEV_DATA_1).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The environment variable suffix of an export's name.
pub fn env_name(export: &str) -> String {
    export.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect()
}

/// `--fs` values resolved per export: KIND for all, NAME=KIND for one (later wins).
fn fs_per_export(values: &[String], exports: &[String]) -> Result<Vec<Option<FsKind>>> {
    let kinds = || FsKind::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    let mut out = vec![None; exports.len()];
    for v in values {
        let (who, kind) = match v.split_once('=') {
            Some((n, k)) => (Some(n), k),
            None => (None, v.as_str()),
        };
        let k = FsKind::parse(kind).ok_or_else(|| anyhow!("--fs {v:?}: unknown file system {kind:?} (expected one of {}; zoned and F2FS file systems need a zoned block device, which a loop device is not)", kinds()))?;
        match who {
            None => out.iter_mut().for_each(|o| *o = Some(k)),
            Some(n) => {
                let i = exports.iter().position(|e| e == n).ok_or_else(|| anyhow!("--fs {v:?}: {n:?} is not an attached export (attached: {})", exports.join(", ")))?;
                out[i] = Some(k);
            }
        }
    }
    Ok(out)
}

/// The drives' counters and the block devices' at one moment.
struct Mark {
    at: Instant,
    drives: Vec<DriveState>,
    devices: Vec<BlockStat>,
}

fn mark(drive: &LiveDrive, n_drives: usize, devices: &[PathBuf], started: Instant) -> Result<Mark> {
    let drives = (0..n_drives).map(|d| drive_state(drive, d, started)).collect::<Result<Vec<_>>>()?;
    let devices = devices.iter().map(|d| BlockStat::read(d).map_err(|e| anyhow!(e))).collect::<Result<Vec<_>>>()?;
    Ok(Mark { at: Instant::now(), drives, devices })
}

/// `wafsim attach`.
pub fn run_attach(args: AttachArgs) -> Result<()> {
    if args.cleanup {
        let done = wafsim_attach::clean_stale(&args.name).map_err(|e| anyhow!(e))?;
        if done.is_empty() {
            eprintln!("wafsim attach: nothing left by an attachment named {:?}", args.name);
        }
        for d in done {
            eprintln!("wafsim attach: {d}");
        }
        return Ok(());
    }
    let file = args.file.as_ref().expect("clap: a file unless --cleanup");
    let v = load_variant(file, &args.which)?;
    let (stack, timing) = build_drives(file, &v, args.pace)?;
    if let Some(i) = stack.target().zones.iter().position(Option::is_some) {
        bail!(
            "{}: namespace {:?} is zoned: a loop device is never a zoned block device, so attach cannot carry zones (real zoned file systems need a kernel with CONFIG_BLK_DEV_ZONED and a zoned device, e.g. a guest kernel under qemu); attach a conventional or FDP drive, or put dm-zoned in front ([host] layer = \"dm-zoned\")",
            file.display(),
            v.spec.namespace.get(i).map_or("?", |n| n.name.as_str())
        );
    }
    let n_drives = stack.devices.len();
    let drive = LiveDrive::new(stack).map_err(|e| anyhow!("{}: {e}", file.display()))?;

    // Which exports, checked before anything is set up.
    let names: Vec<String> = if args.exports.is_empty() { v.spec.namespace.iter().map(|n| n.name.clone()).collect() } else { args.exports.clone() };
    let fs = fs_per_export(&args.fs, &names)?;
    let mkfs_options: Vec<String> = args.mkfs_options.as_deref().unwrap_or("").split_whitespace().map(String::from).collect();
    if !args.command.is_empty() && which(&args.command[0]).is_none() {
        bail!("command {:?} not found on PATH", args.command[0]);
    }
    wafsim_attach::preflight(&fs.iter().flatten().copied().collect::<Vec<_>>()).map_err(|e| anyhow!(e))?;

    let history = start_drive(args.precondition, &v, &drive, None)?;
    let (pacer, map) = drive_exports(&drive, timing, &v.spec, Backing::Memory)?;
    let mut exports = Vec::new();
    for (name, fs) in names.iter().zip(&fs) {
        let e = map.resolve(name).ok_or_else(|| {
            let ns: Vec<String> = v.spec.namespace.iter().map(|n| format!("{} ({} handle(s))", n.name, n.placement_handles.len().max(1))).collect();
            anyhow!("--export {name:?}: no such export (namespaces: {}; NAME@K takes handle K < the namespace's handle count)", ns.join(", "))
        })?;
        let spec = fs.map(|kind| FsSpec { kind, mkfs_options: mkfs_options.clone(), mount_options: args.mount_options.clone().unwrap_or_default() });
        exports.push((name.clone(), e, spec));
    }

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone()).context("installing the signal handlers")?;
    }
    let mut note = |s: &str| eprintln!("wafsim attach: {s}");
    let t0 = Instant::now();
    let sector_size = args.sector_size.unwrap_or_else(|| drive.lock().stack.cfg.mapping_unit.clamp(512, 4096));
    let mut att = Attachment::start(Spec { name: args.name.clone(), exports, mount_root: args.mount_root.clone(), sector_size }, &mut note).map_err(|e| anyhow!(e))?;
    let setup = t0.elapsed();
    let ctl = match args.control.as_deref() {
        Some("none") => None,
        Some(a) => Some(a.to_string()),
        None => Some(format!("unix:{}", att.dir().join("control").display())),
    };
    if let Some(addr) = &ctl {
        spawn_control(addr, &drive, started, &stop)?;
    }

    eprintln!("wafsim attach: variant {:?} at scale {} ({})", v.name, v.spec.scale, drive_summary(&drive));
    eprintln!("  drive: {history}");
    for a in att.attached() {
        match (&a.mount, a.fs) {
            (Some(m), Some(k)) => eprintln!("  {} -> {} ({} mounted at {})", a.export, a.device.display(), k.name(), m.display()),
            _ => eprintln!("  {} -> {}", a.export, a.device.display()),
        }
    }
    if let Some(c) = &ctl {
        eprintln!("  control: {c} (wafsim nvme smart-log --server {c})");
    }
    eprintln!("  set up in {:.2} s", setup.as_secs_f64());

    let devices: Vec<PathBuf> = att.attached().iter().map(|a| a.device.clone()).collect();
    let before = mark(&drive, n_drives, &devices, started)?;
    let (window, status) = if args.command.is_empty() {
        eprintln!("wafsim attach: attached; Ctrl-C or SIGTERM detaches");
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(200));
        }
        ("attached", None)
    } else {
        let mut cmd = std::process::Command::new(&args.command[0]);
        cmd.args(&args.command[1..]);
        for a in att.attached() {
            cmd.env(format!("WAFSIM_DEV_{}", env_name(&a.export)), &a.device);
            if let Some(m) = &a.mount {
                cmd.env(format!("WAFSIM_MNT_{}", env_name(&a.export)), m);
            }
        }
        if let Some(c) = &ctl {
            cmd.env("WAFSIM_CONTROL", c);
        }
        let status = wait_child(cmd.spawn().with_context(|| format!("cannot run {:?}", args.command[0]))?, &stop)?;
        ("command", Some(status))
    };
    // The file systems' last writes (dirty data, unmount records) belong to the window.
    let unmounted = att.unmount();
    let after = mark(&drive, n_drives, &devices, started)?;
    let teardown = att.teardown();
    report(&args, window, &before, &after, &devices, &names)?;
    if let Some(p) = &args.save_image {
        wafsim_experiment::drives::save_images(&drive.lock().stack, p)?;
        eprintln!("wafsim attach: drive image saved to {} (history.kind = \"image\" of {} --variant {} at scale {} reads it)", p.display(), file.display(), v.name, v.spec.scale);
    }
    if let Some(p) = &pacer {
        let s = p.stats();
        if s.late > 0 {
            eprintln!("wafsim attach: paced: {} of {} completions more than 200 us late (the host could not keep up with the model)", s.late, s.completions);
        }
    }
    unmounted.map_err(|e| anyhow!("unmounting: {e}"))?;
    teardown.map_err(|e| anyhow!("taking the devices down: {e}"))?;
    eprintln!("wafsim attach: detached; no loop device or mount left");
    match status {
        Some(s) if !s.success() => bail!("the command {}", describe_status(s)),
        _ => Ok(()),
    }
}

/// Wait for the command; a signal to wafsim is passed on to it (SIGTERM), so the devices are
/// taken down after it has ended.
fn wait_child(mut child: std::process::Child, stop: &AtomicBool) -> Result<std::process::ExitStatus> {
    let mut told = false;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(s);
        }
        if stop.load(Ordering::SeqCst) && !told {
            // SAFETY: kill with a pid we spawned and a valid signal number.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            told = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn describe_status(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "failed".into(),
    }
}

/// An executable on PATH (or a path that exists).
fn which(cmd: &str) -> Option<PathBuf> {
    if cmd.contains('/') {
        return Path::new(cmd).exists().then(|| PathBuf::from(cmd));
    }
    wafsim_attach::system::find_tool(cmd)
}

/// The drive's erase unit and capacity, for the banner: what decides how fast real software
/// ages it.
fn drive_summary(drive: &LiveDrive) -> String {
    let live = drive.lock();
    let c = &live.stack.cfg;
    format!("{} logical bytes, {} physical, erase unit {} bytes, mapping unit {} bytes", c.logical_bytes, c.physical_bytes, c.erase_unit_bytes, c.mapping_unit)
}

/// Print the window (and write it as JSON and drive states where asked).
fn report(args: &AttachArgs, window: &str, before: &Mark, after: &Mark, devices: &[PathBuf], names: &[String]) -> Result<()> {
    let secs = after.at.duration_since(before.at).as_secs_f64();
    eprintln!("wafsim attach: window {window:?} ({secs:.1} s: from after setup to after the file systems were unmounted):");
    let mut drives_json = Vec::new();
    for (d, (b, a)) in before.drives.iter().zip(&after.drives).enumerate() {
        let c = a.counters.delta(&b.counters);
        let mu = a.mapping_unit as u64;
        // Bytes over bytes, as `wafsim waf` computes it from nvme-cli's counters (HBMW/MBMW).
        let waf = (c.host_write_bytes > 0).then(|| (c.media_units() * mu) as f64 / c.host_write_bytes as f64);
        let w = waf.map_or("n/a (no host writes)".to_string(), |w| format!("{w:.4}"));
        eprintln!("  drive {d}: WAF {w} (media bytes / host bytes): host {} bytes written, media {} bytes ({} host + {} GC + {} padding units of {mu} bytes), {} bytes trimmed, {} erases", c.host_write_bytes, c.media_units() * mu, c.host_units, c.gc_units, c.pad_units, c.trim_bytes, c.erases);
        drives_json.push(serde_json::json!({
            "drive": d, "waf": waf, "host_write_bytes": c.host_write_bytes, "host_units": c.host_units,
            "gc_units": c.gc_units, "pad_units": c.pad_units, "media_bytes": c.media_units() * mu,
            "mapping_unit": mu, "trim_bytes": c.trim_bytes, "erases": c.erases, "host_read_bytes": c.host_read_bytes,
        }));
    }
    let mut dev_json = Vec::new();
    for ((dev, name), (b, a)) in devices.iter().zip(names).zip(before.devices.iter().zip(&after.devices)) {
        let s = a.since(b);
        eprintln!("  {} ({name}): {} bytes written in {} requests, {} bytes discarded, {} bytes read, {} flushes", dev.display(), s.write_bytes, s.writes, s.discard_bytes, s.read_bytes, s.flushes);
        dev_json.push(serde_json::json!({
            "export": name, "device": dev, "write_bytes": s.write_bytes, "writes": s.writes,
            "discard_bytes": s.discard_bytes, "read_bytes": s.read_bytes, "flushes": s.flushes,
        }));
    }
    if let Some(p) = &args.json {
        let j = serde_json::json!({ "window": window, "seconds": secs, "drives": drives_json, "devices": dev_json });
        std::fs::write(p, serde_json::to_string_pretty(&j)? + "\n").with_context(|| format!("--json {}", p.display()))?;
    }
    if let Some(dir) = &args.states {
        std::fs::create_dir_all(dir).with_context(|| format!("--states {}", dir.display()))?;
        for (d, (b, a)) in before.drives.iter().zip(&after.drives).enumerate() {
            for (side, s) in [("before", b), ("after", a)] {
                let p = dir.join(format!("drive{d}-{side}.json"));
                std::fs::write(&p, s.to_json()).with_context(|| format!("--states: {}", p.display()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_names_become_environment_variable_suffixes() {
        assert_eq!(env_name("wal"), "WAL");
        assert_eq!(env_name("data@1"), "DATA_1");
        assert_eq!(env_name("vm-2.x"), "VM_2_X");
    }

    #[test]
    fn fs_applies_to_all_exports_or_to_the_one_named() {
        let e = vec!["wal".to_string(), "data".to_string()];
        assert_eq!(fs_per_export(&["xfs".into()], &e).unwrap(), vec![Some(FsKind::Xfs), Some(FsKind::Xfs)]);
        assert_eq!(fs_per_export(&["xfs".into(), "wal=ext4".into()], &e).unwrap(), vec![Some(FsKind::Ext4), Some(FsKind::Xfs)]);
        assert_eq!(fs_per_export(&["data=btrfs".into()], &e).unwrap(), vec![None, Some(FsKind::Btrfs)]);
        let err = fs_per_export(&["f2fs".into()], &e).unwrap_err().to_string();
        assert!(err.contains("unknown file system \"f2fs\"") && err.contains("zoned"), "{err}");
        let err = fs_per_export(&["log=xfs".into()], &e).unwrap_err().to_string();
        assert!(err.contains("not an attached export (attached: wal, data)"), "{err}");
    }
}
