//! `wafsim bench --drive`: a drive at its full size (a 7.68 TB preset holds 15 GiB of maps),
//! built and preconditioned the way `[history] kind = "sequential"` does it (every LBA written
//! once, sequentially); the wall time of each step, the process's peak memory and how much of it
//! the kernel backed with huge pages; optionally the drive saved to an image and loaded back.

use anyhow::Context;
use std::time::Instant;
use wafsim_core::image::{FileReader, SavesImage};
use wafsim_core::{Counters, Device, DeviceConfig, Rng};

/// Figures measured by [`run_drive_bench`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct DriveBenchResult {
    /// Logical bytes of the drive's namespaces.
    pub logical_bytes: u64,
    /// Mapping units the namespaces export (written once each by the precondition).
    pub mapping_units: u64,
    /// Memory of the maps and per-unit tables, from the geometry (`wafsim device show`).
    pub table_bytes: u64,
    /// Seconds to build the empty drive (allocate and initialise its tables).
    pub build_seconds: f64,
    /// Seconds of the sequential fill of every LBA.
    pub precondition_seconds: f64,
    /// WAF of the fill (1 unless GC ran: a drive with too little spare space).
    pub precondition_waf: f64,
    /// Peak resident memory of the process (VmHWM), bytes; None where /proc is missing.
    pub peak_rss_bytes: Option<u64>,
    /// Anonymous memory backed by transparent huge pages after the fill, bytes.
    pub huge_page_bytes: Option<u64>,
    /// The kernel's transparent huge page setting (`always`, `madvise` or `never`).
    pub thp_mode: Option<String>,
    /// The image saved and loaded back, when asked for.
    pub image: Option<DriveImageTimes>,
}

/// Saving and loading the full-size drive.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DriveImageTimes {
    /// Bytes of the image file.
    pub image_bytes: u64,
    /// Seconds to write it (buffered writes, flushed, not yet synced).
    pub save_seconds: f64,
    /// Seconds of the fsync that follows.
    pub sync_seconds: f64,
    /// Seconds to build the empty drive the image is loaded into, after the saved drive is
    /// released.
    pub build_seconds: f64,
    /// Seconds to load the image into that drive, in place, as `[history] image` and a
    /// restarted `wafsim serve` do (the file is read from the page cache only as far as memory
    /// left room for it).
    pub load_seconds: f64,
    /// The loaded drive's counters and 4,096 sampled mappings equal the saved drive's.
    pub identical: bool,
    /// The limit a load from the page cache runs against (itself a copy): bytes per second
    /// this machine copies between two buffers already in memory, with as many threads as a
    /// load uses, measured after the load.
    pub copy_limit_bytes_per_sec: f64,
    /// The load's speed as a share of that copy speed.
    pub load_ratio_to_limit: f64,
}

/// Build the drive of `cfg`, precondition it, and with `image_dir` save it there and load it
/// back (the file is removed). `progress` gets each step's name.
pub fn run_drive_bench(cfg: DeviceConfig, image_dir: Option<&std::path::Path>, mut progress: impl FnMut(&str)) -> anyhow::Result<DriveBenchResult> {
    let geo = cfg.geometry()?;
    // Refused before allocating: a failed allocation of the maps would abort the process.
    if let Some((have, of)) = crate::run::memory_available() {
        let need = geo.memory_bytes() + (64 << 20);
        if need > have {
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            anyhow::bail!("bench --drive: the drive needs at least {:.1} GiB of memory for its mapping tables, this machine has {:.1} GiB ({of})", gib(need), gib(have));
        }
    }
    progress(&format!("build ({:.2} GiB of tables)", geo.memory_bytes() as f64 / (1u64 << 30) as f64));
    let t0 = Instant::now();
    let mut dev = Device::new(cfg)?;
    let build_seconds = t0.elapsed().as_secs_f64();
    progress("precondition (sequential fill of every LBA)");
    let t1 = Instant::now();
    crate::drives::precondition(&mut dev)?;
    let precondition_seconds = t1.elapsed().as_secs_f64();
    let c = dev.counters();
    let precondition_waf = c.media_units() as f64 / c.host_units.max(1) as f64;
    let logical_bytes = (0..dev.namespace_count()).map(|ns| dev.namespace_bytes(ns)).sum();
    let huge_page_bytes = proc_kib("/proc/self/smaps_rollup", "AnonHugePages:");
    let image = match image_dir {
        None => None,
        Some(dir) => Some(save_and_load(dev, dir, "bench --drive", &mut progress)?),
    };
    Ok(DriveBenchResult {
        logical_bytes,
        mapping_units: geo.namespace_units,
        table_bytes: geo.memory_bytes(),
        build_seconds,
        precondition_seconds,
        precondition_waf,
        peak_rss_bytes: proc_kib("/proc/self/status", "VmHWM:"),
        huge_page_bytes,
        thp_mode: thp_mode(),
        image,
    })
}

/// Save `dev` to a file in `dir`, release it, load the file into a new drive and compare;
/// then measure the machine's copy speed. Only one drive is in memory at a time: a full-size
/// one would not fit twice. `what` names the bench in errors and the file.
pub(crate) fn save_and_load(dev: Device, dir: &std::path::Path, what: &str, progress: &mut impl FnMut(&str)) -> anyhow::Result<DriveImageTimes> {
    let path = dir.join(format!("wafsim-{}-{}.img", what.replace(['-', ' '], ""), std::process::id()));
    progress(&format!("save {}", path.display()));
    let (image_bytes, save_seconds, sync_seconds) = save_timed(&dev, &path, what)?;
    let saved = fingerprint(&dev);
    let cfg = dev.config().clone();
    drop(dev);
    progress("load");
    let (loaded, build_seconds, load_seconds) = load_timed(cfg, &path, what)?;
    let identical = fingerprint(&loaded) == saved;
    drop(loaded);
    progress("copy speed (the limit of a load)");
    let copy_limit_bytes_per_sec = copy_limit((image_bytes as usize).min(COPY_BYTES));
    let load_ratio_to_limit = image_bytes as f64 / load_seconds / copy_limit_bytes_per_sec;
    Ok(DriveImageTimes { image_bytes, save_seconds, sync_seconds, build_seconds, load_seconds, identical, copy_limit_bytes_per_sec, load_ratio_to_limit })
}

/// Bytes each buffer of the copy reference holds at most (far beyond the caches).
const COPY_BYTES: usize = 512 << 20;

/// Bytes per second copied from one buffer to another, both in memory already and on huge
/// pages like the maps, split among the threads a load uses; the best of three copies.
fn copy_limit(bytes: usize) -> f64 {
    let from = wafsim_core::hugepage::table(bytes.max(1), 1u8);
    let mut to = wafsim_core::hugepage::table(bytes.max(1), 0u8);
    let step = from.len().div_ceil(wafsim_core::hugepage::workers());
    (0..3)
        .map(|_| {
            let t = Instant::now();
            std::thread::scope(|s| {
                for (d, f) in to.chunks_mut(step).zip(from.chunks(step)) {
                    s.spawn(move || d.copy_from_slice(f));
                }
            });
            from.len() as f64 / t.elapsed().as_secs_f64()
        })
        .fold(0.0, f64::max)
}

/// Save `dev` as an image at `path`: its bytes, the seconds of the buffered writes and of the
/// fsync after them. The file is removed if saving fails.
pub(crate) fn save_timed(dev: &Device, path: &std::path::Path, what: &str) -> anyhow::Result<(u64, f64, f64)> {
    let t0 = Instant::now();
    let saved = std::fs::File::create(path)
        .with_context(|| format!("{what}: cannot create {}", path.display()))
        .and_then(|file| dev.save_image(std::io::BufWriter::with_capacity(1 << 20, file)).with_context(|| format!("{what}: writing {}", path.display())))
        .and_then(|w| w.into_inner().map_err(|e| e.into_error().into()));
    let file = saved.inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })?;
    let save_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    file.sync_all()?;
    Ok((file.metadata()?.len(), save_seconds, t1.elapsed().as_secs_f64()))
}

/// Build an empty drive of `cfg`, then load the image at `path` into it in place (as
/// `[history] image` and a restarted `wafsim serve` do): the drive and the seconds of each step.
/// The file is removed either way.
pub(crate) fn load_timed(cfg: DeviceConfig, path: &std::path::Path, what: &str) -> anyhow::Result<(Device, f64, f64)> {
    let t0 = Instant::now();
    let built = Device::new(cfg);
    let build_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let loaded = built.map_err(anyhow::Error::from).and_then(|mut dev| {
        let file = std::fs::File::open(path)?;
        dev.load_image_from(&mut FileReader::new(file))?;
        Ok(dev)
    });
    let load_seconds = t1.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(path);
    Ok((loaded.with_context(|| format!("{what}: loading {}", path.display()))?, build_seconds, load_seconds))
}

/// The drive's counters and where 4,096 random LBAs (a fixed sample) live: a saved drive and
/// the drive loaded from its image must agree on it.
pub(crate) fn fingerprint(dev: &Device) -> (Counters, Vec<Option<u32>>) {
    let mut rng = Rng::new(0x1A6E);
    let mu = dev.config().mapping_unit as u64;
    let samples = (0..4096)
        .map(|_| {
            let ns = rng.below(dev.namespace_count() as u64) as u32;
            let units = dev.namespace_bytes(ns) / mu;
            dev.lookup(ns, rng.below(units.max(1)) * mu)
        })
        .collect();
    (dev.counters().clone(), samples)
}

/// A `Key:   N kB` line of a /proc file, in bytes.
fn proc_kib(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// The bracketed choice of /sys/kernel/mm/transparent_hugepage/enabled.
fn thp_mode() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafsim_core::{GcPolicy, NamespaceConfig, Placement};

    #[test]
    fn a_small_drive_is_filled_once_and_its_image_loads_identical() {
        let mut cfg = DeviceConfig::single_namespace(64, 256, 4096, 0.1, GcPolicy::Greedy, 3);
        cfg.namespaces = vec![
            NamespaceConfig { name: "a".into(), size_bytes: cfg.logical_bytes / 2, placement_handles: vec![0] },
            NamespaceConfig { name: "b".into(), size_bytes: cfg.logical_bytes / 2, placement_handles: vec![0] },
        ];
        cfg.placement = Placement::Conventional;
        let dir = std::env::temp_dir();
        let r = run_drive_bench(cfg.clone(), Some(&dir), |_| {}).unwrap();
        let geo = cfg.geometry().unwrap();
        assert_eq!(r.mapping_units, geo.namespace_units);
        assert_eq!(r.logical_bytes, geo.namespace_units * 4096);
        assert_eq!(r.precondition_waf, 1.0, "a fill of a drive with spare space copies nothing");
        let image = r.image.unwrap();
        assert!(image.identical);
        assert!(image.image_bytes > 4 * geo.physical_units());
        if cfg!(target_os = "linux") {
            assert!(r.peak_rss_bytes.unwrap() > 0);
        }
    }
}
