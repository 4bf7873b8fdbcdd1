//! `wafsim bench`: how fast the simulator runs. One function per mode, chosen by flag: the FTL
//! alone (the default), the timing model (--timed), the host layers (--host), the application
//! models (--apps), the NBD server under fio (--nbd), drive images (--image) and a full-size drive
//! (--drive). Each prints a text report, or JSON with
//! --json (progress lines go to stderr only without --json).

use anyhow::{bail, Result};
use clap::Args;
use wafsim_core::GcPolicy;
use wafsim_experiment::studies::bench::BenchConfig;

/// The flags of `wafsim bench`; --timed, --host, --apps, --nbd, --image and --drive pick the mode (at
/// most one).
#[derive(Args)]
pub struct BenchArgs {
    /// Print JSON (keys media_writes_per_sec, host_writes_per_sec, waf, bytes_per_mapping_unit,
    /// and the machine's limit: limit_updates_per_sec, ratio_to_limit, cpu).
    #[arg(long)]
    json: bool,
    /// log2 of the number of 4 KiB mapping units (26 = 256 GiB logical).
    #[arg(long, default_value_t = 26)]
    units_log2: u32,
    /// Over-provisioning, (physical - logical) / logical.
    #[arg(long, default_value_t = 0.07)]
    op: f64,
    /// GC victim policy: greedy, cost-benefit, fifo, d-choices:N.
    #[arg(long, default_value = "greedy")]
    gc_policy: String,
    /// Random writes measured, in multiples of the logical capacity (after one of warm-up).
    #[arg(long, default_value_t = 1.0)]
    fills: f64,
    /// Timed mode: simulated I/Os per second of the timing model (TLC, 16 dies, QD 64);
    /// --units-log2 defaults to 24 here.
    #[arg(long, conflicts_with = "host")]
    timed: bool,
    /// --timed: give the drive a controller datapath of this rate (e.g. "2GB/s"; its 16 dies
    /// program 3.4 GB/s, so below about 3 GB/s it binds the GC-heavy writes); default none.
    #[arg(long, value_name = "RATE", requires = "timed")]
    datapath: Option<String>,
    /// Host layers, untimed: user 4 KiB writes per second through dm-zoned (2 SMR disks
    /// behind a cache device, 8 sequential overwriters) and through the zone-aware file
    /// system (LSM files on a ZNS drive, host GC), medians of alternating rounds.
    #[arg(long)]
    host: bool,
    /// Application models, untimed: operations per second of each application model
    /// (log-structured KV, LSM size-tiered and leveled, flash cache), medians of rounds.
    #[arg(long, conflicts_with_all = ["host", "timed"])]
    apps: bool,
    /// --apps: only the cases whose name contains this text (e.g. "size-tiered", "cache").
    #[arg(long, requires = "apps", value_name = "TEXT")]
    case: Option<String>,
    /// `wafsim serve`'s IOPS under the real fio (nbd engine, 4 KiB random writes, iodepth
    /// 16, loopback; GC active) beside `nbdkit memory` under the same job, alternating rounds.
    /// Needs fio (and nbdkit for the comparison) installed.
    #[arg(long, conflicts_with_all = ["host", "timed", "apps"])]
    nbd: bool,
    /// The real-stack path: fio on XFS on a loop device (direct I/O; 4 KiB random writes at
    /// iodepth 16, 128 KiB sequential writes at iodepth 4) through `wafsim attach`'s
    /// in-process FUSE file, through `wafsim serve` + nbdfuse, and through `nbdkit memory` +
    /// nbdfuse, alternating rounds; GC active on the simulated drives. Needs root, fio,
    /// nbdfuse (libnbd-bin), xfsprogs, and nbdkit for the reference.
    #[arg(long, conflicts_with_all = ["host", "timed", "apps", "nbd"])]
    attach: bool,
    /// Drive images: the FTL bench's drive (--units-log2, --op, --gc-policy) filled and aged
    /// by one drive write of random 4 KiB writes, saved to a file in DIR and loaded back; save,
    /// fsync and load times, bytes per second, and whether the loaded drive matches. E.g.
    /// `wafsim bench --image /tmp --units-log2 28`.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["host", "timed", "apps", "nbd"])]
    image: Option<std::path::PathBuf>,
    /// A drive at its full size: a preset's name, a device file or an experiment's [device],
    /// built and preconditioned (every LBA written once, sequentially: `[history] kind =
    /// "sequential"`); wall time of each step, peak memory and huge-page backing. With --image
    /// DIR also saved there and loaded back. E.g. `wafsim bench --drive enterprise-tlc-7.68tb`
    /// (15 GiB of memory).
    #[arg(long, value_name = "PRESET|FILE", conflicts_with_all = ["host", "timed", "apps", "nbd"])]
    drive: Option<std::path::PathBuf>,
    /// Ask the kernel for transparent huge pages for the maps (on by default; "off" to
    /// compare). A hint: results are the same either way.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    huge_pages: String,
    /// --nbd, --attach: seconds per round and server (and job).
    #[arg(long, default_value_t = 10)]
    seconds: u32,
    /// --host, --apps, --nbd, --attach: measured rounds (per case).
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// --apps: application operations per round.
    #[arg(long, default_value_t = 5_000_000, requires = "apps")]
    ops_per_round: u64,
    /// --host: user 4 KiB writes per case per round.
    #[arg(long, default_value_t = 1 << 25, requires = "host")]
    writes_per_round: u64,
}

/// Run the mode the flags pick.
pub fn run_bench(a: BenchArgs) -> Result<()> {
    wafsim_core::hugepage::set_enabled(a.huge_pages == "on");
    if a.apps {
        apps(a.json, a.rounds, a.ops_per_round, a.case)
    } else if a.nbd {
        nbd(a.json, a.rounds, a.seconds)
    } else if a.attach {
        attach(a.json, a.rounds, a.seconds)
    } else if a.host {
        host(a.json, a.rounds, a.writes_per_round)
    } else if a.timed {
        let datapath = a.datapath.as_deref().map_or(Ok(0.0), |v| v.parse::<wafsim_experiment::schema::Rate>().map(|r| r.bytes_per_s()).map_err(|e| anyhow::anyhow!("--datapath = {e}")))?;
        timed(a.json, a.units_log2, a.fills, datapath)
    } else if let Some(drive) = a.drive {
        full_drive(a.json, &drive, a.image.as_deref())
    } else if let Some(dir) = a.image {
        image(a.json, &dir, a.units_log2, a.op, a.gc_policy)
    } else {
        ftl(a.json, a.units_log2, a.op, a.gc_policy, a.fills)
    }
}

/// --apps: operations per second of each application model, medians of rounds.
fn apps(json: bool, rounds: u32, ops_per_round: u64, case: Option<String>) -> Result<()> {
    let r = wafsim_experiment::studies::bench::run_apps_bench(rounds, ops_per_round, case.as_deref(), |line| {
        if !json {
            eprintln!("bench --apps: {line}");
        }
    })?;
    if json {
        let cases: Vec<_> = r
            .cases
            .iter()
            .map(|c| serde_json::json!({ "name": c.name, "median_ops_per_sec": c.median_ops_per_sec, "rounds_ops_per_sec": c.rounds, "app_waf": c.app_waf, "detail": c.detail }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "cases": cases, "ops_per_round": ops_per_round }))?);
    } else {
        println!("application models, untimed, one thread; {rounds} rounds of {ops_per_round} operations each");
        for c in &r.cases {
            println!(
                "{:<45} median {:.2} M ops/s (rounds {}), model WAF {:.3}, {}",
                c.name,
                c.median_ops_per_sec / 1e6,
                c.rounds.iter().map(|x| format!("{:.2}", x / 1e6)).collect::<Vec<_>>().join(" "),
                c.app_waf,
                c.detail
            );
        }
    }
    Ok(())
}

/// --attach: the real-stack path through three chains, medians and ratios to nbdkit's.
fn attach(json: bool, rounds: u32, seconds: u32) -> Result<()> {
    use crate::bench_attach::JOBS;
    let r = crate::bench_attach::run(rounds, seconds, |line| {
        if !json {
            eprintln!("bench --attach: {line}");
        }
    })?;
    let reference = r.chains.iter().position(|c| c.name.starts_with("nbdkit"));
    if json {
        let chains: Vec<serde_json::Value> = r
            .chains
            .iter()
            .map(|c| {
                let jobs: Vec<serde_json::Value> = JOBS
                    .iter()
                    .enumerate()
                    .map(|(j, job)| {
                        let (iops, bw) = c.median(j);
                        let ratio = reference.map(|k| iops / r.chains[k].median(j).0);
                        serde_json::json!({ "job": job.name, "median_iops": iops, "median_bytes_per_sec": bw, "ratio_to_nbdkit": ratio, "rounds_iops": c.rounds[j].iter().map(|x| x.0).collect::<Vec<_>>() })
                    })
                    .collect();
                serde_json::json!({ "chain": c.name, "jobs": jobs })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "seconds_per_round": r.seconds, "rounds": rounds, "attach_drive_waf": r.waf, "chains": chains, "cpu": cpu_model() }))?);
        return Ok(());
    }
    println!("Real-stack path: fio on XFS on a loop device, direct I/O; {rounds} alternating rounds of {seconds} s per chain and job; medians");
    for (j, job) in JOBS.iter().enumerate() {
        println!("  {}:", job.name);
        for c in &r.chains {
            let (iops, bw) = c.median(j);
            let ratio = reference.map_or(String::new(), |k| format!(", {:.2} of nbdkit's chain", iops / r.chains[k].median(j).0));
            println!("    {:<36} {iops:>9.0} IOPS {:>8.1} MB/s{ratio}", c.name, bw / 1e6);
        }
    }
    println!("  the attached drive's WAF over the rounds: {:.3} (GC active)", r.waf);
    println!("  cpu: {}", cpu_model());
    Ok(())
}

/// --nbd: `wafsim serve`'s IOPS under the real fio beside `nbdkit memory`.
fn nbd(json: bool, rounds: u32, seconds: u32) -> Result<()> {
    let r = crate::bench_nbd::run(rounds, seconds, |line| {
        if !json {
            eprintln!("bench --nbd: {line}");
        }
    })?;
    if json {
        let cases: Vec<_> = r.cases.iter().map(|c| serde_json::json!({ "name": c.name, "median_iops": c.median, "rounds_iops": c.rounds })).collect();
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "cases": cases, "seconds_per_round": r.seconds_per_round, "drive_waf": r.waf }))?);
    } else {
        println!("NBD servers under fio (ioengine=nbd, 4 KiB random writes, iodepth 16, loopback); {rounds} alternating rounds of {seconds} s");
        for c in &r.cases {
            let rs: Vec<String> = c.rounds.iter().map(|x| format!("{:.0}", x / 1e3)).collect();
            println!("{:<72} median {:>7.1} k IOPS (rounds {} k)", c.name, c.median / 1e3, rs.join(" "));
        }
        println!("simulated drive's WAF over the measured rounds: {:.3}", r.waf);
    }
    Ok(())
}

/// --host: user writes per second through dm-zoned and through the zone-aware file system.
fn host(json: bool, rounds: u32, writes_per_round: u64) -> Result<()> {
    use wafsim_experiment::studies::bench::{run_host_bench, HostBenchConfig};
    let cfg = HostBenchConfig { rounds, writes_per_round, ..HostBenchConfig::default() };
    let r = run_host_bench(&cfg, |line| {
        if !json {
            eprintln!("bench --host: {line}");
        }
    })?;
    let case = |c: &wafsim_experiment::studies::bench::HostCaseResult| {
        serde_json::json!({
            "median_user_writes_per_sec": c.median_writes_per_sec,
            "rounds_user_writes_per_sec": c.rounds,
            "user_bytes": c.user_bytes,
            "device_bytes": c.device_bytes,
            "layer_waf": c.waf(),
            "measured_seconds": c.seconds,
        })
    };
    if json {
        let mut d = case(&r.dm_zoned);
        d["exposed_bytes"] = r.dmz_capacity.into();
        d["data_chunks"] = r.dmz_data_chunks.into();
        d["reclaimed_zones"] = serde_json::json!({
            "empty": r.dmz_reclaim_cases[0], "rnd_data": r.dmz_reclaim_cases[1],
            "buf": r.dmz_reclaim_cases[2], "seq_data": r.dmz_reclaim_cases[3],
        });
        let mut f = case(&r.fs);
        f["zone_capacity_bytes"] = r.fs_capacity.into();
        f["compaction_files"] = r.fs_compaction_files.into();
        f["zone_erases"] = r.fs_zone_erases.into();
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "dm_zoned": d, "zoned_fs": f, "rounds": rounds, "writes_per_round": writes_per_round }))?);
    } else {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        println!("host layers, untimed, one thread; {rounds} alternating rounds of {writes_per_round} user 4 KiB writes per case");
        println!("{:<10} {:>14} {:>30} {:>12} {:>12} {:>9}", "case", "median M/s", "rounds M/s", "user GiB", "device GiB", "layer WAF");
        for c in [&r.dm_zoned, &r.fs] {
            let rs: Vec<String> = c.rounds.iter().map(|x| format!("{:.1}", x / 1e6)).collect();
            println!("{:<10} {:>14.2} {:>30} {:>12.1} {:>12.1} {:>9.3}", c.name, c.median_writes_per_sec / 1e6, rs.join(" "), gib(c.user_bytes), gib(c.device_bytes), c.waf());
        }
        let k = r.dmz_reclaim_cases;
        println!(
            "dm-zoned: {:.0} GiB exposed, {} data chunks of 256 MiB rewritten by 8 sequential writers; zones reclaimed: {} seq-data merges, {} rnd-data moves, {} buf, {} empty",
            gib(r.dmz_capacity), r.dmz_data_chunks, k[3], k[1], k[2], k[0]
        );
        println!(
            "zoned fs: {:.0} GiB of zone capacity, {} compaction files kept; {} zones erased; GC copies = device - user bytes",
            gib(r.fs_capacity), r.fs_compaction_files, r.fs_zone_erases
        );
    }
    Ok(())
}

/// --timed: simulated I/Os per second of the timing model (--units-log2 defaults to 24 here).
fn timed(json: bool, units_log2: u32, fills: f64, datapath: f64) -> Result<()> {
    let log2 = if units_log2 == 26 { 24 } else { units_log2 };
    let r = wafsim_experiment::studies::bench::run_timed_bench(log2, fills, datapath, |phase| {
        if !json {
            eprintln!("bench --timed: {phase}");
        }
    })?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "simulated_ios_per_sec": r.ios_per_sec,
                "ios": r.ios,
                "wall_seconds": r.wall_seconds,
                "simulated_seconds": r.simulated_seconds,
                "simulated_write_iops": r.write_iops_simulated,
                "waf": r.waf,
                "mapping_units": 1u64 << log2,
                "datapath_bytes_per_sec": datapath,
            }))?
        );
    } else {
        let dp = if datapath > 0.0 { format!(", datapath {:.2} GB/s", datapath / 1e9) } else { String::new() };
        println!("timed: {} simulated 4 KiB random writes with GC (2^{log2} mapping units, TLC, 16 dies, QD 64{dp})", r.ios);
        println!("simulated I/Os per second   {:.2} M (wall clock, one thread)", r.ios_per_sec / 1e6);
        println!("simulated time              {:.3} s ({:.0} write IOPS in the simulated device)", r.simulated_seconds, r.write_iops_simulated);
        println!("WAF                         {:.3}", r.waf);
    }
    Ok(())
}

/// --image: saving and loading a drive image of an aged FTL drive.
fn image(json: bool, dir: &std::path::Path, units_log2: u32, op: f64, gc_policy: String) -> Result<()> {
    let gc_policy: GcPolicy = gc_policy.parse().map_err(anyhow::Error::msg)?;
    if !(10..=31).contains(&units_log2) {
        bail!("--units-log2 {units_log2}: expected 10..=31");
    }
    let cfg = BenchConfig { mapping_units_log2: units_log2, over_provisioning: op, gc_policy, ..Default::default() };
    let r = wafsim_experiment::studies::bench::run_image_bench(&cfg, dir, |phase| {
        if !json {
            eprintln!("bench --image: {phase}");
        }
    })?;
    if !r.times.identical {
        bail!("bench --image: the loaded drive differs from the saved one");
    }
    if json {
        let mut v = serde_json::to_value(&r)?;
        v["cpu"] = cpu_model().into();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("drive image of {} mapping units of 4 KiB, aged by one drive write of random writes: {:.2} GB ({})", r.mapping_units, r.times.image_bytes as f64 / 1e9, cpu_model());
        print_image_times(&r.times);
    }
    Ok(())
}

/// The save and load lines of `--image` and `--drive --image`.
fn print_image_times(i: &wafsim_experiment::studies::bench_drive::DriveImageTimes) {
    let gbs = |s: f64| i.image_bytes as f64 / s / 1e9;
    println!("save           {:.2} s ({:.2} GB/s), then fsync {:.2} s", i.save_seconds, gbs(i.save_seconds), i.sync_seconds);
    println!("build          {:.2} s (the empty drive the image is loaded into, after the saved one is released)", i.build_seconds);
    println!("load           {:.2} s ({:.2} GB/s, in place); the loaded drive matches", i.load_seconds, gbs(i.load_seconds));
    println!(
        "limit          {:.2} GB/s (this machine's memory copy, {} threads): ratio {:.2}",
        i.copy_limit_bytes_per_sec / 1e9,
        wafsim_core::hugepage::workers(),
        i.load_ratio_to_limit
    );
}

/// --drive: a full-size drive built, preconditioned and (with --image) saved and loaded.
fn full_drive(json: bool, file: &std::path::Path, image_dir: Option<&std::path::Path>) -> Result<()> {
    let (spec, origin) = crate::device_spec(file)?;
    if spec.device.is_zoned() {
        bail!("bench --drive {origin}: a zoned drive (the bench preconditions a flash drive's conventional namespaces)");
    }
    let cfg = spec.device.to_config(&spec.namespace, spec.seed).map_err(|e| anyhow::anyhow!("bench --drive {origin}: {e:#}"))?;
    let r = wafsim_experiment::studies::bench_drive::run_drive_bench(cfg, image_dir, |step| {
        if !json {
            eprintln!("bench --drive: {step}");
        }
    })?;
    if r.image.as_ref().is_some_and(|i| !i.identical) {
        bail!("bench --drive: the loaded drive differs from the saved one");
    }
    if json {
        let mut v = serde_json::to_value(&r)?;
        v["drive"] = origin.into();
        v["cpu"] = cpu_model().into();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let opt_gib = |b: Option<u64>| b.map_or("unknown".to_string(), |b| format!("{:.2} GiB", gib(b)));
    println!("{origin}: {:.3} TB logical, {} mapping units, {:.2} GiB of tables ({})", r.logical_bytes as f64 / 1e12, r.mapping_units, gib(r.table_bytes), cpu_model());
    println!("build          {:.2} s", r.build_seconds);
    println!("precondition   {:.2} s (sequential fill of every LBA, {:.1} M units/s, WAF {:.3})", r.precondition_seconds, r.mapping_units as f64 / r.precondition_seconds / 1e6, r.precondition_waf);
    println!("total          {:.2} s", r.build_seconds + r.precondition_seconds);
    println!("peak memory    {} (VmHWM)", opt_gib(r.peak_rss_bytes));
    println!("huge pages     {} of the process's memory (transparent huge pages: {})", opt_gib(r.huge_page_bytes), r.thp_mode.as_deref().unwrap_or("unknown"));
    if let Some(i) = &r.image {
        println!("image          {:.2} GB", i.image_bytes as f64 / 1e9);
        print_image_times(i);
    }
    Ok(())
}

/// The default: media writes per second of the FTL under steady-state random 4 KiB writes, and
/// its memory per mapping unit.
fn ftl(json: bool, units_log2: u32, op: f64, gc_policy: String, fills: f64) -> Result<()> {
    let gc_policy: GcPolicy = gc_policy.parse().map_err(anyhow::Error::msg)?;
    if !(10..=31).contains(&units_log2) {
        bail!("--units-log2 {units_log2}: expected 10..=31");
    }
    let cfg = BenchConfig { mapping_units_log2: units_log2, over_provisioning: op, gc_policy, measure_fills: fills, ..Default::default() };
    let r = wafsim_experiment::studies::bench::run_bench(&cfg, |phase| {
        if !json {
            eprintln!("bench: {phase}");
        }
    })?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "media_writes_per_sec": r.media_writes_per_sec,
                "host_writes_per_sec": r.host_writes_per_sec,
                "waf": r.waf,
                "bytes_per_mapping_unit": r.bytes_per_mapping_unit,
                "mapping_units": r.mapping_units,
                "erase_units": r.erase_units,
                "gc_policy": gc_policy.to_string(),
                "over_provisioning": op,
                "measured_seconds": r.seconds,
                "limit_updates_per_sec": r.limit.updates_per_sec,
                "limit_prefetch_distance": r.limit.prefetch_distance,
                "probe_bytes_per_mapping_unit": r.limit.bytes as f64 / r.mapping_units as f64,
                "probe_runs_updates_per_sec": r.probe_runs,
                "ratio_to_limit": r.ratio_to_limit(),
                "cpu": cpu_model(),
            }))?
        );
    } else {
        println!(
            "{} mapping units of 4 KiB ({} erase units), OP {}, GC {}",
            r.mapping_units,
            r.erase_units,
            wafsim_report::table::fmt_op(op),
            gc_policy
        );
        println!("media writes/s        {:.1} M", r.media_writes_per_sec / 1e6);
        println!("host writes/s         {:.2} M", r.host_writes_per_sec / 1e6);
        println!("WAF                   {:.3}", r.waf);
        println!("memory per mapping unit {:.2} B", r.bytes_per_mapping_unit);
        println!("measured over         {:.1} s on one thread", r.seconds);
        println!(
            "machine limit         {:.1} M random updates/s over the same {:.2} B per unit (best prefetch distance {}; runs before / after {:.1} / {:.1} M)",
            r.limit.updates_per_sec / 1e6,
            r.limit.bytes as f64 / r.mapping_units as f64,
            r.limit.prefetch_distance,
            r.probe_runs[0] / 1e6,
            r.probe_runs[1] / 1e6
        );
        println!("ratio to the limit    {:.2} ({})", r.ratio_to_limit(), cpu_model());
    }
    Ok(())
}

/// The CPU's model name as the kernel reports it ("unknown" where it does not).
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "unknown".into())
}
