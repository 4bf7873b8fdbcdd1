//! The `wafsim` command line: argument parsing and wiring only.

mod advise;
mod bench_nbd;
mod nvme;
mod progress;
mod serve;
mod sweep;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use wafsim_core::GcPolicy;
use wafsim_experiment::studies::bench::{run_bench, BenchConfig};
use wafsim_core::units::parse_bytes;
use wafsim_experiment::plan::DriveConfig;
use wafsim_experiment::RunOptions;

/// wafsim: how much would data placement help my workload? Simulates SSD garbage collection,
/// write amplification and data placement (FDP, streams) for your workloads.
#[derive(Parser)]
#[command(name = "wafsim", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an experiment: every [[variant]] side by side, a table per variant and namespace.
    ///
    /// Example: wafsim run experiments/quickstart.toml --json
    Run {
        /// Experiment TOML (device + namespaces + workloads or phases + variants).
        experiment: PathBuf,
        /// Print JSON instead of tables (same as --output-format json).
        #[arg(long)]
        json: bool,
        /// "normal" (tables) or "json" (fio-like layout: "jobs" per variant and tenant, plus
        /// "variants" with device counters).
        #[arg(long, default_value = "normal")]
        output_format: String,
        /// Run only the named variant(s); repeatable.
        #[arg(long = "variant")]
        variants: Vec<String>,
        /// Run variants one after another instead of in parallel.
        #[arg(long)]
        serial: bool,
        /// Capacity scale, 0 < F <= 1 (default: the power of ten that brings the drive to at
        /// most 10 GB). Erase units and namespaces scale with it; OP and block sizes do not.
        #[arg(long, conflicts_with = "full_scale")]
        scale: Option<f64>,
        /// Run at the experiment's real capacities.
        #[arg(long)]
        full_scale: bool,
        /// Write WAF and counters sampled along the run to this CSV file.
        #[arg(long)]
        timeseries: Option<PathBuf>,
        /// Host bytes between time-series samples (default: 2% of the logical capacity).
        #[arg(long)]
        sample_every: Option<String>,
        /// Write charts to this directory: WAF over time, host vs media writes, per-tenant WAF,
        /// and where the run has them cumulative WAF per drive, zone maps, traffic per tier,
        /// bandwidth, dm-zoned cache zones and reclaim.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Write one row per (variant, namespace) to this Parquet file: the device's WAF, HBMW,
        /// MBMW, MBE and GC bytes beside the namespace's host and media bytes and WAF (the
        /// columns of `wafsim sweep --out F.parquet`, with point 1 and no axes).
        #[arg(long, value_name = "FILE")]
        parquet: Option<PathBuf>,
        /// Image format of the --plot charts.
        #[arg(long, default_value = "both", value_parser = ["svg", "png", "both"])]
        plot_format: String,
    },
    /// Run a base experiment at every point of a sweep (axes of experiment keys, as a product,
    /// zipped, or explicit points) on all cores; a row per point and variant, resumable with
    /// --out.
    ///
    /// Example: wafsim sweep experiments/sweeps/op.toml --out op.csv
    Sweep(sweep::SweepArgs),
    /// Placement advisor: the assignment of streams to N reclaim unit handles with the lowest WAF, by simulation.
    Advise(advise::AdviseArgs),
    /// Zoned drives: reports of their zones after a run.
    Zone {
        #[command(subcommand)]
        cmd: ZoneCmd,
    },
    /// Inspect device descriptions.
    Device {
        #[command(subcommand)]
        cmd: DeviceCmd,
    },
    /// Run every experiment of the catalog (experiments/ files with a [published] table) at its
    /// default scale and write the results next to the published figures.
    ///
    /// Example: wafsim catalog --out docs/experiments.md
    Catalog {
        /// Directory to search for experiment files.
        #[arg(long, default_value = "experiments")]
        dir: PathBuf,
        /// Write the markdown to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Machine description for the run-time column (default: read from /proc/cpuinfo, e.g.
        /// "a 2-core Intel(R) Xeon(R) Processor virtual machine").
        #[arg(long)]
        machine: Option<String>,
        /// Write the charts of entries with a bandwidth log (timed runs with `[timing]
        /// log_interval`) under this directory, one subdirectory per entry, and show them in the
        /// markdown (paths relative to --out's directory). Example: --plots docs/plots
        #[arg(long)]
        plots: Option<PathBuf>,
    },
    /// Compare the simulator with closed-form WAF (docs/validation.md) and print the markdown;
    /// then check the timing model against the datasheet figures of each device preset.
    ///
    /// Example: wafsim validate --out docs/validation.md
    Validate {
        /// Write the markdown to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Larger devices (16,384 erase units) and longer runs.
        #[arg(long)]
        full: bool,
        /// Skip the datasheet check of the timing model (per device preset).
        #[arg(long, conflicts_with = "datasheet_only")]
        no_datasheet: bool,
        /// Run and print only the datasheet check of the timing model.
        #[arg(long)]
        datasheet_only: bool,
    },
    /// Serve a simulated drive's namespaces over NBD for real clients (fio's nbd engine,
    /// nbd-client, qemu), every request through the drive's simulation.
    ///
    /// Example: wafsim serve experiments/live/eight-tenants.toml --variant fdp
    Serve(serve::ServeArgs),
    /// A simulated drive's log pages as nvme-cli prints them (smart-log, ocp smart-add-log,
    /// fdp configs|usage|stats|events|status), from a running `wafsim serve` or a saved state.
    ///
    /// Example: wafsim nvme fdp stats --server 127.0.0.1:10810
    Nvme(nvme::NvmeArgs),
    /// Write amplification between two captures: wafsim drive states, or real nvme-cli
    /// output (smart-log + ocp smart-add-log, or fdp stats; text or JSON).
    ///
    /// Example: wafsim waf before.txt after.txt
    Waf(nvme::WafArgs),
    /// Steady-state uniform random 4 KiB writes on a large device: simulator speed and memory.
    ///
    /// Example: wafsim bench --json
    Bench {
        /// Print JSON (keys media_writes_per_sec, host_writes_per_sec, waf, bytes_per_mapping_unit).
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
        /// --nbd: seconds per round and server.
        #[arg(long, default_value_t = 10, requires = "nbd")]
        seconds: u32,
        /// --host, --apps, --nbd: measured rounds (per case).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// --apps: application operations per round.
        #[arg(long, default_value_t = 5_000_000, requires = "apps")]
        ops_per_round: u64,
        /// --host: user 4 KiB writes per case per round.
        #[arg(long, default_value_t = 1 << 25, requires = "host")]
        writes_per_round: u64,
    },
}

#[derive(Subcommand)]
enum ZoneCmd {
    /// Run an experiment and print the zones of every zoned namespace at the end (or at the
    /// end of a phase), as util-linux `blkzone report` or nvme-cli `nvme zns report-zones`
    /// prints them.
    ///
    /// Example: wafsim zone report experiments/zoned-fio/zns.toml --format nvme --at-phase fill
    Report {
        /// Experiment TOML with a zoned drive (device.kind = "zns").
        experiment: PathBuf,
        /// "blkzone" (util-linux 2.42+, 512-byte sectors), "nvme" (nvme-cli text, LBAs),
        /// "nvme-verbose" (nvme-cli -V) or "nvme-json" (nvme-cli -o json).
        #[arg(long, default_value = "blkzone")]
        format: String,
        /// Run only the named variant(s); repeatable.
        #[arg(long = "variant")]
        variants: Vec<String>,
        /// Capacity scale, 0 < F <= 1 (default as for `wafsim run`).
        #[arg(long, conflicts_with = "full_scale")]
        scale: Option<f64>,
        /// Run at the experiment's real capacities.
        #[arg(long)]
        full_scale: bool,
        /// Stop after this phase and report the zones as it left them (later phases do not
        /// run).
        #[arg(long, value_name = "PHASE")]
        at_phase: Option<String>,
    },
}

#[derive(Subcommand)]
enum DeviceCmd {
    /// Print the figures derived from a device: erase units, Np, OP in both conventions,
    /// spare erase units, memory the simulation needs.
    ///
    /// Example: wafsim device show devices/enterprise-tlc-7.68tb.toml
    Show {
        /// A TOML file with a [device] table (a device file or an experiment), or the name of a
        /// built-in preset (see `wafsim device presets`).
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// List the built-in device presets (use one with `[device] preset = "NAME"`).
    Presets,
}

/// Load an experiment, keep the named variants (all if none), and scale each.
fn load_variants(experiment: &Path, variants: &[String], scale: Option<f64>, full_scale: bool) -> Result<Vec<wafsim_experiment::Variant>> {
    let all = wafsim_experiment::load_experiment(experiment)?;
    wafsim_experiment::plan::scale::select_and_scale(all, variants, scale, full_scale, &experiment.display().to_string())
}

/// "a N-core MODEL machine" from /proc/cpuinfo ("virtual machine" when the CPU reports a
/// hypervisor), for the catalog's run-time column; "this machine" where there is no cpuinfo.
fn describe_machine() -> String {
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else { return "this machine".into() };
    let field = |k: &str| info.lines().find(|l| l.starts_with(k)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = field("model name").unwrap_or_else(|| "CPU".into());
    let virt = field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
    format!("a {cores}-core {model} {}", if virt { "virtual machine" } else { "machine" })
}

/// `path` relative to `base` when it lies under it (charts next to the markdown), else as is.
fn pathdiff(path: &std::path::Path, base: &std::path::Path) -> String {
    path.strip_prefix(base).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("wafsim: error: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Zone { cmd: ZoneCmd::Report { experiment, format, variants, scale, full_scale, at_phase } } => {
            use wafsim_report::zones;
            let print: fn(&zones::ZoneReport) -> String = match format.as_str() {
                "blkzone" => zones::blkzone,
                "nvme" => |r| zones::nvme_report_zones(r, false),
                "nvme-verbose" => |r| zones::nvme_report_zones(r, true),
                "nvme-json" => zones::nvme_report_zones_json,
                f => bail!("--format {f:?}: expected blkzone, nvme, nvme-verbose or nvme-json"),
            };
            let mut all = load_variants(&experiment, &variants, scale, full_scale)?;
            if let Some(want) = &at_phase {
                for v in &mut all {
                    let phases = v.spec.phases();
                    let Some(i) = phases.iter().position(|p| &p.name == want) else {
                        let names: Vec<_> = phases.iter().map(|p| p.name.as_str()).collect();
                        bail!("--at-phase {want:?}: variant {:?} of {} has no such phase (phases: {})", v.name, experiment.display(), names.join(", "));
                    };
                    // Phases run in order and a later one cannot change an earlier one's end.
                    let mut kept = phases;
                    kept.truncate(i + 1);
                    v.spec.phase = kept;
                }
            }
            let bar = progress::Bar::new(all.iter().map(|v| v.name.clone()).collect());
            let results = wafsim_experiment::run_variants(&all, RunOptions::default(), &|name: &str, p| bar.update(name, p));
            bar.finish();
            let results: Vec<_> = results.into_iter().collect::<Result<_>>()?;
            if results.iter().all(|r| r.zone_reports.is_empty()) {
                bail!("{}: no zoned namespace (a zone report needs device.kind = \"zns\" or \"smr\")", experiment.display());
            }
            let several = results.len() > 1 || results.iter().any(|r| r.zone_reports.len() > 1);
            for r in &results {
                for (ns, rep) in &r.zone_reports {
                    // Headers go to stderr, so stdout stays exactly the tool's output.
                    if several {
                        eprintln!("== variant {:?}, namespace {ns:?}", r.name);
                    }
                    print!("{}", print(rep));
                }
            }
        }
        Cmd::Run { experiment, json, output_format, variants, serial, scale, full_scale, timeseries, sample_every, plot, plot_format, parquet } => {
            let json = json || output_format == "json";
            if output_format != "normal" && output_format != "json" {
                bail!("--output-format {output_format:?}: expected \"normal\" or \"json\"");
            }
            let all = load_variants(&experiment, &variants, scale, full_scale)?;
            let sample_every_bytes = if timeseries.is_some() || plot.is_some() {
                Some(match &sample_every {
                    Some(s) => parse_bytes(s).map_err(anyhow::Error::msg)?,
                    None => {
                        (all[0].spec.device_config()?.logical_bytes / 50).max(1 << 20)
                    }
                })
            } else {
                None
            };
            let opts = RunOptions { sample_every_bytes };
            let bar = progress::Bar::new(all.iter().map(|v| v.name.clone()).collect());
            let report = |name: &str, p| bar.update(name, p);
            let results = if serial {
                all.iter().map(|v| wafsim_experiment::run_variant(v, opts, &|p| report(&v.name, p))).collect()
            } else {
                wafsim_experiment::run_variants(&all, opts, &report)
            };
            bar.finish();
            let results: Vec<_> = results.into_iter().collect::<Result<_>>()?;
            let mut seen = Vec::new();
            for w in results.iter().flat_map(|r| r.warnings.iter()) {
                if !seen.contains(w) {
                    // Job-file diagnostics carry "file:line: warning:" already.
                    if w.contains(": warning: ") {
                        eprintln!("{w}");
                    } else {
                        eprintln!("wafsim: warning: {w}");
                    }
                    seen.push(w.clone());
                }
            }
            if let Some(path) = &parquet {
                let rows = wafsim_experiment::studies::sweep::run_rows(&results);
                let bytes = wafsim_experiment::studies::sweep::to_parquet(&[], &rows).with_context(|| format!("cannot write {} as Parquet", path.display()))?;
                std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
            }
            if let Some(path) = &timeseries {
                std::fs::write(path, wafsim_report::csv::timeseries(&results)).with_context(|| format!("cannot write {}", path.display()))?;
            }
            if let Some(dir) = &plot {
                let formats = wafsim_report::chart::Format::parse_list(&plot_format).map_err(anyhow::Error::msg)?;
                let charts = wafsim_report::plots::charts(&results);
                wafsim_report::chart::write_all(dir, &charts, &formats).with_context(|| format!("cannot write charts to {}", dir.display()))?;
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&wafsim_report::json::fio_like(&results))?);
            } else {
                print!("{}", wafsim_report::table::variants(&results));
            }
        }
        Cmd::Device { cmd: DeviceCmd::Presets } => {
            for (name, text) in wafsim_experiment::load::presets::PRESETS {
                let first = text.lines().next().unwrap_or("").trim_start_matches('#').trim();
                println!("{name:<24} {first}");
            }
        }
        Cmd::Device { cmd: DeviceCmd::Show { file, json } } => {
            let (text, origin) = if !file.exists() && wafsim_experiment::load::presets::PRESETS.iter().any(|(n, _)| Path::new(n) == file) {
                (format!("[device]\npreset = {:?}\n", file.display().to_string()), format!("preset {}", file.display()))
            } else {
                (std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?, file.display().to_string())
            };
            let spec = wafsim_experiment::parse_experiment(&text, &origin)?.remove(0).spec;
            let ns = spec.namespace.first().map_or("ns1", |n| n.name.as_str());
            match spec.device.zoned_config(&spec.namespace).with_context(|| origin.clone())? {
                Some(DriveConfig::Zns(z)) if json => println!("{}", serde_json::to_string_pretty(&wafsim_report::json::zns_device(&z, ns))?),
                Some(DriveConfig::Zns(z)) => print!("{}", wafsim_report::table::zns_device(&z, ns)),
                Some(DriveConfig::Smr(z)) if json => println!("{}", serde_json::to_string_pretty(&wafsim_report::json::smr_device(&z, ns))?),
                Some(DriveConfig::Smr(z)) => print!("{}", wafsim_report::table::smr_device(&z, ns)),
                _ => {}
            }
            if spec.device.is_zoned()? {
                return Ok(());
            }
            let cfg = spec.device.to_config(&spec.namespace, spec.seed).with_context(|| origin.clone())?;
            let geo = cfg.geometry()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&wafsim_report::json::device(&cfg, &geo))?);
            } else {
                print!("{}", wafsim_report::table::device(&cfg, &geo));
            }
        }
        Cmd::Serve(a) => serve::run_serve(a)?,
        Cmd::Sweep(a) => sweep::run_sweep(a)?,
        Cmd::Advise(a) => advise::run_advise(a)?,
        Cmd::Nvme(a) => nvme::run_nvme(a)?,
        Cmd::Waf(a) => nvme::run_waf(a)?,
        Cmd::Catalog { dir, out, machine, plots } => {
            use wafsim_experiment::studies::catalog::{catalog_files, markdown, run_entry};
            let mut entries = Vec::new();
            for f in catalog_files(&dir)? {
                eprintln!("catalog: {}", f.display());
                entries.push(run_entry(&f).with_context(|| f.display().to_string())?);
            }
            let mut charts = vec![Vec::new(); entries.len()];
            if let Some(plots) = &plots {
                let base = out.as_ref().and_then(|o| o.parent()).unwrap_or(std::path::Path::new("."));
                for (i, e) in entries.iter().enumerate() {
                    let apps = e.results.iter().any(|r| !r.filesystems.is_empty() && !r.timeseries.is_empty());
                    if e.results.iter().all(|r| r.bandwidth.is_empty()) && !apps {
                        continue;
                    }
                    let stem = e.path.strip_prefix(&dir).unwrap_or(&e.path).with_extension("");
                    let sub = plots.join(stem.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "-"));
                    std::fs::create_dir_all(&sub).with_context(|| format!("cannot create {}", sub.display()))?;
                    // Bandwidth and cache charts over all variants; reclaim per disk of the first.
                    let first_reclaim = format!("reclaim_{}", wafsim_report::plots::file_safe(&e.results[0].name));
                    for chart in wafsim_report::plots::charts(&e.results) {
                        // Application experiments: WAF over time, each variant's application /
                        // host / NAND writes, and the zone maps of zoned drives.
                        let name = chart.name.as_str();
                        let app_chart = apps && (name == "waf_over_time" || name.starts_with("host_vs_media_") || name.starts_with("zone_map_"));
                        if name == "bandwidth" || name == "cache_zones" || name == first_reclaim || app_chart {
                            // SVG only: the markdown shows them, and SVG stays small in git.
                            let path = sub.join(chart.file_name(wafsim_report::chart::Format::Svg));
                            std::fs::write(&path, chart.svg()?).with_context(|| format!("cannot write {}", path.display()))?;
                            let rel = pathdiff(&path, base);
                            charts[i].push(rel);
                        }
                    }
                    charts[i].sort_by_key(|c| (!c.ends_with("bandwidth.svg"), !c.ends_with("cache_zones.svg"), !c.ends_with("waf_over_time.svg"), c.clone()));
                }
            }
            let command = if plots.is_some() { "wafsim catalog --out docs/experiments.md --plots docs/plots" } else { "wafsim catalog --out docs/experiments.md" };
            let machine = machine.unwrap_or_else(describe_machine);
            let md = markdown(&entries, &charts, command, &machine);
            match out {
                Some(p) => std::fs::write(&p, md).with_context(|| format!("cannot write {}", p.display()))?,
                None => print!("{md}"),
            }
        }
        Cmd::Validate { out, full, no_datasheet, datasheet_only } => {
            use wafsim_experiment::studies::validate::{all_cases, markdown, Scale};
            let scale = if full { Scale::FULL } else { Scale::TEST };
            let cmd = match (datasheet_only, full) {
                (true, _) => "wafsim validate --datasheet-only",
                (false, true) => "wafsim validate --full --out docs/validation.md",
                (false, false) => "wafsim validate --out docs/validation.md",
            };
            let cases = if datasheet_only { Vec::new() } else { all_cases(scale, 1, |name| eprintln!("validate: {name}")) };
            let mut md = if datasheet_only { String::new() } else { markdown(&cases, scale, cmd) };
            if !no_datasheet {
                use wafsim_experiment::studies::datasheet;
                let settings = datasheet::Settings::DEFAULT;
                let t0 = std::time::Instant::now();
                let results = datasheet::run_all(&settings, &|line| eprintln!("validate: datasheet {line}"))?;
                eprintln!("validate: datasheet check took {:.1} s (wall clock)", t0.elapsed().as_secs_f64());
                for (preset, fig) in datasheet::outside(&results) {
                    eprintln!("validate: datasheet {preset}: {} outside its class range (reported, not a failure)", fig.label());
                }
                if !md.is_empty() {
                    md.push('\n');
                }
                md += &datasheet::markdown(&results, &settings, cmd);
            }
            match out {
                Some(p) => std::fs::write(&p, md).with_context(|| format!("cannot write {}", p.display()))?,
                None => print!("{md}"),
            }
            let failed: Vec<_> = cases.iter().filter(|c| !c.passed() && !c.expected.is_infinite()).map(|c| c.name.as_str()).collect();
            if !failed.is_empty() {
                bail!("validation failed: {}", failed.join("; "));
            }
        }
        Cmd::Bench { json, apps: true, rounds, ops_per_round, case, .. } => {
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
        }
        Cmd::Bench { json, nbd: true, rounds, seconds, .. } => {
            let r = bench_nbd::run(rounds, seconds, |line| {
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
        }
        Cmd::Bench { json, host: true, rounds, writes_per_round, .. } => {
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
        }
        Cmd::Bench { json, units_log2, fills, timed: true, .. } => {
            let log2 = if units_log2 == 26 { 24 } else { units_log2 };
            let r = wafsim_experiment::studies::bench::run_timed_bench(log2, fills, |phase| {
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
                    }))?
                );
            } else {
                println!("timed: {} simulated 4 KiB random writes with GC (2^{log2} mapping units, TLC, 16 dies, QD 64)", r.ios);
                println!("simulated I/Os per second   {:.2} M (wall clock, one thread)", r.ios_per_sec / 1e6);
                println!("simulated time              {:.3} s ({:.0} write IOPS in the simulated device)", r.simulated_seconds, r.write_iops_simulated);
                println!("WAF                         {:.3}", r.waf);
            }
        }
        Cmd::Bench { json, units_log2, op, gc_policy, fills, timed: false, .. } => {
            let gc_policy: GcPolicy = gc_policy.parse().map_err(anyhow::Error::msg)?;
            if !(10..=31).contains(&units_log2) {
                bail!("--units-log2 {units_log2}: expected 10..=31");
            }
            let cfg = BenchConfig { mapping_units_log2: units_log2, over_provisioning: op, gc_policy, measure_fills: fills, ..Default::default() };
            let r = run_bench(&cfg, |phase| {
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
            }
        }
    }
    Ok(())
}
