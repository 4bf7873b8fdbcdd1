//! `wafsim nvme ...`: a simulated drive's log pages printed exactly as nvme-cli prints a real
//! drive's, and `wafsim waf`: write amplification between two captures of either.
//!
//! The drive comes from a saved [`DriveState`] (`--state FILE`) or from a running
//! `wafsim serve` (`--server ADDR`), so the same scripts that read a real drive with nvme-cli
//! can read a simulated one by swapping the command name. Flags are nvme-cli's own
//! (`-o/--output-format`, `-n/--namespace-id`, `-e/--endgrp-id`, `-H/--human-readable`,
//! `-E/--host-events`).

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use wafsim_report::nvme::drive::{
    fdp_configs, fdp_events, fdp_stats, fdp_status, fdp_usage, ocp_smart_add_log, smart_log,
    DriveState, ENDURANCE_GROUP_ID,
};
use wafsim_report::nvme::{
    fdp_configs_json, fdp_events_json, fdp_stats_json, fdp_status_json, fdp_usage_json,
    ocp_smart_add_log_json, parse_snapshot, print_fdp_configs, print_fdp_events, print_fdp_stats,
    print_fdp_status, print_fdp_usage, print_ocp_smart_add_log, print_smart_log, smart_log_json,
    waf, Locale, OcpJsonVersion, ParseError, Side, Snapshot, TextOptions, WafMethod, WafResult,
    DATA_UNIT_BYTES,
};

/// How long `--server` waits for the connection, and then for each read of the reply. A
/// server answers from memory; minutes of silence mean it is stuck, not busy.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Arguments of `wafsim nvme`: one nvme-cli command against a simulated drive.
#[derive(Args, Debug)]
pub struct NvmeArgs {
    /// The nvme-cli command to imitate.
    #[command(subcommand)]
    pub cmd: NvmeCmd,
}

/// The nvme-cli commands `wafsim nvme` imitates.
#[derive(Subcommand, Debug)]
pub enum NvmeCmd {
    /// SMART / Health Information log, as `nvme smart-log`.
    ///
    /// Example: wafsim nvme smart-log --state drive.json -o json
    SmartLog(SmartLogArgs),
    /// OCP plugin commands, as `nvme ocp ...`.
    Ocp {
        /// The OCP command.
        #[command(subcommand)]
        cmd: OcpCmd,
    },
    /// Flexible Data Placement commands, as `nvme fdp ...` (FDP drives only).
    Fdp {
        /// The FDP command.
        #[command(subcommand)]
        cmd: FdpCmd,
    },
}

/// `wafsim nvme ocp ...`.
#[derive(Subcommand, Debug)]
pub enum OcpCmd {
    /// OCP SMART / Health Information Extended log (C0h), as `nvme ocp smart-add-log`.
    ///
    /// Example: wafsim nvme ocp smart-add-log --server 127.0.0.1:10810
    SmartAddLog(OcpArgs),
}

/// `wafsim nvme fdp ...`.
#[derive(Subcommand, Debug)]
pub enum FdpCmd {
    /// FDP Configurations log, as `nvme fdp configs`.
    ///
    /// Example: wafsim nvme fdp configs --state drive.json -H
    Configs(FdpConfigsArgs),
    /// Reclaim Unit Handle Usage log, as `nvme fdp usage`.
    ///
    /// Example: wafsim nvme fdp usage --state drive.json
    Usage(FdpArgs),
    /// FDP Statistics log (HBMW, MBMW, MBE), as `nvme fdp stats`.
    ///
    /// Example: wafsim nvme fdp stats --server unix:/run/wafsim.sock -o json
    Stats(FdpArgs),
    /// FDP Events log, as `nvme fdp events` (controller events; -E for host events).
    ///
    /// Example: wafsim nvme fdp events --state drive.json -E
    Events(FdpEventsArgs),
    /// Reclaim Unit Handle Status of a namespace, as `nvme fdp status`.
    ///
    /// Example: wafsim nvme fdp status --state drive.json -n 2
    Status(FdpStatusArgs),
}

/// Where the drive's state comes from: exactly one of a file or a server.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct SourceArgs {
    /// A wafsim drive state (JSON, as a run or `wafsim serve` saves it); `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// A running `wafsim serve`: HOST:PORT, or unix:PATH for its Unix socket.
    #[arg(long, value_name = "ADDR")]
    pub server: Option<String>,
}

/// nvme-cli's `-o/--output-format` (nvme-cli's third format, binary, is not offered: there
/// are no raw log page bytes to dump).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// nvme-cli's text.
    Normal,
    /// nvme-cli's JSON (json-c pretty printing).
    Json,
}

/// `-o/--output-format`, as every nvme-cli log command takes it.
#[derive(Args, Debug)]
pub struct FormatArgs {
    /// Output format.
    #[arg(short = 'o', long = "output-format", value_enum, default_value = "normal")]
    pub output_format: OutputFormat,
}

/// Arguments of `wafsim nvme smart-log`.
#[derive(Args, Debug)]
pub struct SmartLogArgs {
    /// The drive.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Namespace (1-based; 0xffffffff, the default, for the whole controller).
    #[arg(short = 'n', long = "namespace-id", default_value = "0xffffffff", value_parser = parse_u32)]
    pub namespace_id: u32,
    /// Output format.
    #[command(flatten)]
    pub format: FormatArgs,
    /// Decode the critical warning bits.
    #[arg(short = 'H', long = "human-readable")]
    pub human_readable: bool,
}

/// Arguments of `wafsim nvme ocp smart-add-log`.
#[derive(Args, Debug)]
pub struct OcpArgs {
    /// The drive.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format.
    #[command(flatten)]
    pub format: FormatArgs,
    /// JSON layout: 1 (labels, nvme-cli up to 2.16) or 2 (snake_case keys, nvme-cli 3.0).
    #[arg(long = "output-format-version", default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub output_format_version: u8,
}

/// Arguments of `wafsim nvme fdp usage` and `fdp stats`.
#[derive(Args, Debug)]
pub struct FdpArgs {
    /// The drive.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Endurance group (a simulated drive has one, id 1).
    #[arg(short = 'e', long = "endgrp-id", default_value_t = ENDURANCE_GROUP_ID)]
    pub endgrp_id: u16,
    /// Output format.
    #[command(flatten)]
    pub format: FormatArgs,
}

/// Arguments of `wafsim nvme fdp configs`.
#[derive(Args, Debug)]
pub struct FdpConfigsArgs {
    /// Common FDP arguments.
    #[command(flatten)]
    pub fdp: FdpArgs,
    /// Decode the FDP attributes bits.
    #[arg(short = 'H', long = "human-readable")]
    pub human_readable: bool,
}

/// Arguments of `wafsim nvme fdp events`.
#[derive(Args, Debug)]
pub struct FdpEventsArgs {
    /// Common FDP arguments.
    #[command(flatten)]
    pub fdp: FdpArgs,
    /// Host events (RU not fully written, invalid PID) instead of controller events (media
    /// reallocated).
    #[arg(short = 'E', long = "host-events")]
    pub host_events: bool,
}

/// Arguments of `wafsim nvme fdp status`.
#[derive(Args, Debug)]
pub struct FdpStatusArgs {
    /// The drive.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Namespace (1-based). nvme-cli takes it from the device node; there is none here, so it
    /// defaults to 1.
    #[arg(short = 'n', long = "namespace-id", default_value = "1", value_parser = parse_u32)]
    pub namespace_id: u32,
    /// Output format.
    #[command(flatten)]
    pub format: FormatArgs,
}

/// Arguments of `wafsim waf`: write amplification between two captures.
///
/// Example: wafsim waf before.json after.txt --json
#[derive(Args, Debug)]
pub struct WafArgs {
    /// The earlier capture: a wafsim drive state, or nvme-cli output (smart-log + ocp
    /// smart-add-log, or fdp stats; text or JSON, concatenated); `-` reads stdin.
    pub before: PathBuf,
    /// The later capture, in any of the same forms.
    pub after: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Decimal or 0x-prefixed hexadecimal, as nvme-cli's option parser (strtoul base 0) takes
/// `-n 0xffffffff`.
fn parse_u32(s: &str) -> Result<u32, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("'{s}' is not a 32-bit number (decimal or 0x hex)"))
}

/// Runs `wafsim nvme ...`: fetches the drive state and prints what nvme-cli would print.
///
/// Example: wafsim nvme fdp stats --state drive.json
pub fn run_nvme(args: NvmeArgs) -> Result<()> {
    let source = match &args.cmd {
        NvmeCmd::SmartLog(a) => &a.source,
        NvmeCmd::Ocp {
            cmd: OcpCmd::SmartAddLog(a),
        } => &a.source,
        NvmeCmd::Fdp { cmd } => match cmd {
            FdpCmd::Configs(a) => &a.fdp.source,
            FdpCmd::Usage(a) | FdpCmd::Stats(a) => &a.source,
            FdpCmd::Events(a) => &a.fdp.source,
            FdpCmd::Status(a) => &a.source,
        },
    };
    let state = load_state(source)?;
    let out = render(&args.cmd, &state, &env_locale())?;
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

/// The drive state named by `--state` or `--server`.
fn load_state(src: &SourceArgs) -> Result<DriveState> {
    match (&src.state, &src.server) {
        (Some(path), _) => {
            let text = read_input(path)?;
            DriveState::from_json(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
        }
        (None, Some(addr)) => fetch_state(addr),
        (None, None) => bail!("give --state FILE or --server ADDR"),
    }
}

/// A file's text, or stdin's for `-`.
fn read_input(path: &Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading stdin")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

/// What nvme-cli's `setlocale(LC_ALL, "")` would pick for numbers and dates: LC_ALL, else
/// LC_NUMERIC, else LANG. en_* locales group thousands with ","; C, POSIX and unknown ones
/// print plain digits (the nvme module knows only these two glibc layouts exactly).
fn env_locale() -> Locale {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let name = var("LC_ALL")
        .or_else(|| var("LC_NUMERIC"))
        .or_else(|| var("LANG"));
    match name {
        Some(n) if n.starts_with("en_") => Locale::EnUs,
        _ => Locale::C,
    }
}

/// The exact text `cmd` prints for `st`: the nvme module's printers, fed by the drive views.
fn render(cmd: &NvmeCmd, st: &DriveState, locale: &Locale) -> Result<String> {
    let opts = |verbose: bool| TextOptions {
        locale: locale.clone(),
        verbose,
    };
    let check_egid = |a: &FdpArgs| -> Result<()> {
        if a.endgrp_id != ENDURANCE_GROUP_ID {
            // A real drive answers Invalid Field for an endurance group it does not have.
            bail!(
                "endurance group {} does not exist: a simulated drive has one, id {ENDURANCE_GROUP_ID}",
                a.endgrp_id
            );
        }
        Ok(())
    };
    let json = |f: OutputFormat| f == OutputFormat::Json;
    Ok(match cmd {
        NvmeCmd::SmartLog(a) => {
            let log = smart_log(st, Some(a.namespace_id))?;
            if json(a.format.output_format) {
                smart_log_json(&log, a.human_readable)
            } else {
                print_smart_log(&log, a.namespace_id, &st.name, &opts(a.human_readable))
            }
        }
        NvmeCmd::Ocp {
            cmd: OcpCmd::SmartAddLog(a),
        } => {
            let log = ocp_smart_add_log(st);
            if json(a.format.output_format) {
                let v = if a.output_format_version == 1 {
                    OcpJsonVersion::V1
                } else {
                    OcpJsonVersion::V2
                };
                ocp_smart_add_log_json(&log, v)
            } else {
                print_ocp_smart_add_log(&log)
            }
        }
        NvmeCmd::Fdp { cmd } => match cmd {
            FdpCmd::Configs(a) => {
                check_egid(&a.fdp)?;
                let log = fdp_configs(st)?;
                if json(a.fdp.format.output_format) {
                    fdp_configs_json(&log)
                } else {
                    print_fdp_configs(&log, &opts(a.human_readable))
                }
            }
            FdpCmd::Usage(a) => {
                check_egid(a)?;
                let log = fdp_usage(st)?;
                if json(a.format.output_format) {
                    fdp_usage_json(&log)
                } else {
                    print_fdp_usage(&log)
                }
            }
            FdpCmd::Stats(a) => {
                check_egid(a)?;
                let log = fdp_stats(st)?;
                if json(a.format.output_format) {
                    fdp_stats_json(&log)
                } else {
                    print_fdp_stats(&log, &opts(false))
                }
            }
            FdpCmd::Events(a) => {
                check_egid(&a.fdp)?;
                let log = fdp_events(st, a.host_events)?;
                if json(a.fdp.format.output_format) {
                    fdp_events_json(&log)
                } else {
                    print_fdp_events(&log, &opts(false))
                }
            }
            FdpCmd::Status(a) => {
                let log = fdp_status(st, a.namespace_id)?;
                if json(a.format.output_format) {
                    fdp_status_json(&log)
                } else {
                    print_fdp_status(&log)
                }
            }
        },
    })
}

/// Asks a running `wafsim serve` for its drive state: connects to `addr` (`HOST:PORT`, or
/// `unix:PATH` for a Unix socket), sends the line `STATE`, and reads the reply to EOF: one
/// drive state JSON document, or a line `ERR <message>`.
pub fn fetch_state(addr: &str) -> Result<DriveState> {
    let reply = control_request(addr, "STATE")?;
    DriveState::from_json(&reply).map_err(|e| anyhow!("reply of the wafsim server at {addr}: {e}"))
}

/// One request to a running `wafsim serve`'s control socket (`HOST:PORT` or `unix:PATH`): sends
/// `request` as a line and reads the reply until the server closes the connection. A reply
/// `ERR <message>` and an empty reply are errors.
pub fn control_request(addr: &str, request: &str) -> Result<String> {
    let reply = if let Some(path) = addr.strip_prefix("unix:") {
        #[cfg(unix)]
        {
            let s = std::os::unix::net::UnixStream::connect(path)
                .with_context(|| format!("connecting to the wafsim server at unix:{path}"))?;
            s.set_read_timeout(Some(READ_TIMEOUT))?;
            exchange(s, addr, request)?
        }
        #[cfg(not(unix))]
        {
            bail!("--server unix:{path}: Unix sockets are not available on this platform")
        }
    } else {
        use std::net::ToSocketAddrs;
        let addrs: Vec<_> = addr
            .to_socket_addrs()
            .with_context(|| format!("--server {addr}: expected HOST:PORT or unix:PATH"))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in &addrs {
            match std::net::TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let s = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => {
                return Err(e).with_context(|| format!("connecting to the wafsim server at {addr}"))
            }
            (None, None) => bail!("--server {addr}: the name resolves to no address"),
        };
        s.set_read_timeout(Some(READ_TIMEOUT))?;
        exchange(s, addr, request)?
    };
    if let Some(msg) = reply.strip_prefix("ERR ") {
        bail!("the wafsim server at {addr} refused: {}", msg.trim_end());
    }
    if reply.trim().is_empty() {
        bail!("the wafsim server at {addr} closed the connection without a reply");
    }
    Ok(reply)
}

/// Sends `request` as a line and reads the reply until the server closes the connection.
fn exchange<S: Read + Write>(mut s: S, addr: &str, request: &str) -> Result<String> {
    s.write_all(format!("{request}\n").as_bytes())
        .and_then(|_| s.flush())
        .with_context(|| format!("sending to {addr}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)
        .with_context(|| format!("reading the reply of {addr}"))?;
    String::from_utf8(buf).map_err(|_| anyhow!("the reply of {addr} is not UTF-8 text"))
}

/// One input of `wafsim waf`, read and understood.
#[derive(Debug)]
struct Capture {
    name: String,
    snap: Snapshot,
}

/// Reads a capture: a drive state (recognised by its marker) or nvme-cli output. Errors name
/// the file and, for nvme-cli output, the line.
fn load_capture(path: &Path) -> Result<Capture> {
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let text = read_input(path)?;
    let snap = if DriveState::is_drive_state(&text) {
        DriveState::from_json(&text)
            .map_err(|e| anyhow!("{name}: {e}"))?
            .snapshot()
    } else {
        // ParseError's Display already says "line N: " when a line is to blame.
        parse_snapshot(&text).map_err(|e| anyhow!("{name}: {e}"))?
    };
    Ok(Capture { name, snap })
}

/// Runs `wafsim waf BEFORE AFTER`: the WAF between two captures, the method used and the
/// deltas; FDP statistics when both captures have them (exact), else OCP physical media units
/// written over SMART data units written.
///
/// Example: wafsim waf before.txt after.txt --json
pub fn run_waf(args: WafArgs) -> Result<()> {
    if args.before.as_os_str() == "-" && args.after.as_os_str() == "-" {
        bail!("only one of BEFORE and AFTER can be read from stdin (-)");
    }
    let before = load_capture(&args.before)?;
    let after = load_capture(&args.after)?;
    let r = waf(&before.snap, &after.snap).map_err(|e| waf_error(e, &before, &after))?;
    if let Some(w) = r.below_one() {
        // Also in the output (text and JSON), so a script keeping only stdout keeps it.
        eprintln!("wafsim: warning: {w}");
    }
    let out = if args.json {
        waf_json(&r, &before, &after)
    } else {
        waf_text(&r, &before, &after)
    };
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

/// A WAF error with the side replaced by the file it is about.
fn waf_error(e: ParseError, before: &Capture, after: &Capture) -> anyhow::Error {
    let line = e.line.map(|l| format!("line {l}: ")).unwrap_or_default();
    match e.side {
        Some(Side::Before) => anyhow!("BEFORE ({}): {line}{}", before.name, e.message),
        Some(Side::After) => anyhow!("AFTER ({}): {line}{}", after.name, e.message),
        None => anyhow!("{line}{}", e.message),
    }
}

fn waf_text(r: &WafResult, before: &Capture, after: &Capture) -> String {
    let mut o = format!("WAF {:.4}\n", r.waf);
    match r.method {
        WafMethod::FdpStats => {
            o += "method: fdp stats, delta MBMW / delta HBMW (exact)\n";
            o += &format!("host bytes written:  {} (delta HBMW)\n", r.host_bytes);
            o += &format!("media bytes written: {} (delta MBMW)\n", r.media_bytes);
            if let (Some(b), Some(a)) = (before.snap.mbe, after.snap.mbe) {
                if a >= b {
                    o += &format!("media bytes erased:  {} (delta MBE)\n", a - b);
                }
            }
        }
        WafMethod::SmartAndOcp => {
            o += "method: ocp smart-add-log physical media units written / (smart-log data units \
                  written x 512,000)\n";
            o += &format!(
                "host bytes written:  {} (delta Data Units Written {} x {DATA_UNIT_BYTES}; the \
                 drive rounds each capture up, so within {DATA_UNIT_BYTES} bytes)\n",
                r.host_bytes, r.host_delta
            );
            o += &format!(
                "media bytes written: {} (delta Physical media units written)\n",
                r.media_bytes
            );
        }
    }
    o += &format!("before: {}\nafter:  {}\n", before.name, after.name);
    if let Some(w) = r.below_one() {
        o += &format!("warning: {w}\n");
    }
    o
}

fn waf_json(r: &WafResult, before: &Capture, after: &Capture) -> String {
    let s = |v: &str| serde_json::to_string(v).expect("strings serialize");
    let (method, host_unit) = match r.method {
        WafMethod::FdpStats => ("fdp-stats", "bytes"),
        WafMethod::SmartAndOcp => ("smart-ocp", "data units of 512,000 bytes"),
    };
    let mbe = match (before.snap.mbe, after.snap.mbe, r.method) {
        (Some(b), Some(a), WafMethod::FdpStats) if a >= b => {
            format!(",\n  \"mbe_delta\": {}", a - b)
        }
        _ => String::new(),
    };
    let warning = r.below_one().map(|w| format!(",\n  \"warning\": {}", s(&w))).unwrap_or_default();
    // Written by hand: the 128-bit counters must stay exact integers, which serde_json's Value
    // cannot hold.
    format!(
        "{{\n  \"waf\": {},\n  \"method\": {},\n  \"host_delta\": {},\n  \"host_delta_unit\": {},\n  \
         \"media_delta\": {},\n  \"host_bytes\": {},\n  \"media_bytes\": {}{mbe},\n  \"before\": {},\n  \
         \"after\": {}{warning}\n}}\n",
        r.waf,
        s(method),
        r.host_delta,
        s(host_unit),
        r.media_delta,
        r.host_bytes,
        r.media_bytes,
        s(&before.name),
        s(&after.name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::io::{BufRead, BufReader};
    use wafsim_core::RuhType;
    use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement};
    use wafsim_report::nvme::drive::DriveEvent;

    /// A parser with `wafsim nvme` and `wafsim waf` as subcommands, as main.rs wires them.
    #[derive(Parser, Debug)]
    struct T {
        #[command(subcommand)]
        cmd: Top,
    }

    #[derive(Subcommand, Debug)]
    enum Top {
        Nvme(NvmeArgs),
        Waf(WafArgs),
    }

    fn nvme(args: &[&str]) -> NvmeArgs {
        let mut v = vec!["wafsim", "nvme"];
        v.extend_from_slice(args);
        match T::try_parse_from(v)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .cmd
        {
            Top::Nvme(a) => a,
            Top::Waf(_) => unreachable!(),
        }
    }

    fn fdp_state(writes: u64) -> DriveState {
        let mu = 4096u64;
        let cfg = DeviceConfig {
            logical_bytes: 48 * 64 * mu,
            physical_bytes: 64 * 64 * mu,
            mapping_unit: mu as u32,
            erase_unit_bytes: 64 * mu,
            gc_policy: GcPolicy::Greedy,
            gc_free_min: 2,
            gc_free_target: 2,
            gc_age_classes: 1,
            fdp_idle_handles_hold_units: false,
            placement: Placement::Fdp {
                reclaim_groups: 1,
                ruh_types: vec![RuhType::InitiallyIsolated, RuhType::PersistentlyIsolated],
            },
            namespaces: vec![NamespaceConfig {
                name: "ns1".into(),
                size_bytes: 48 * 64 * mu,
                placement_handles: vec![0, 1],
            }],
            seed: 1,
            slc_cache: None,
        };
        let mut dev = Device::new(cfg).unwrap();
        let units = 48 * 64;
        let mut rng = wafsim_core::Rng::new(5);
        for i in 0..writes {
            // Sequential fill through handle 1, then random overwrites through handle 0: GC
            // runs and copies data.
            let (u, ph) = if i < units {
                (i, 1)
            } else {
                (rng.below(units), 0)
            };
            let io = Io {
                op: Op::Write,
                ns: 0,
                offset: u * mu,
                len: mu as u32,
                pid: Pid::new(0, ph),
            };
            dev.submit(&io).unwrap();
        }
        dev.submit(&Io {
            op: Op::Write,
            ns: 0,
            offset: 0,
            len: 4096,
            pid: Pid::new(0, 7),
        })
        .unwrap();
        let mut st = DriveState::from_device(&dev, (writes + 1, 0), 3600);
        st.events = dev
            .fdp_events()
            .map(|e| DriveEvent::from_core(e, 1, 1_700_000_000_000))
            .collect();
        st
    }

    #[test]
    fn every_command_prints_what_the_nvme_module_prints() {
        let st = fdp_state(10_000);
        let c = Locale::C;
        let to = TextOptions {
            locale: Locale::C,
            verbose: false,
        };
        let r = |args: &[&str]| render(&nvme(args).cmd, &st, &c).unwrap();
        let src = ["--state", "x.json"];
        let with =
            |a: &[&'static str]| -> Vec<&'static str> { a.iter().copied().chain(src).collect() };
        let smart = smart_log(&st, None).unwrap();
        assert_eq!(
            r(&with(&["smart-log"])),
            print_smart_log(&smart, 0xffff_ffff, "wafsim", &to)
        );
        assert_eq!(
            r(&with(&["smart-log", "-o", "json", "-H"])),
            smart_log_json(&smart, true)
        );
        let ns1 = smart_log(&st, Some(1)).unwrap();
        assert_eq!(
            r(&with(&["smart-log", "-n", "1"])),
            print_smart_log(&ns1, 1, "wafsim", &to)
        );
        let ocp = ocp_smart_add_log(&st);
        assert_eq!(
            r(&with(&["ocp", "smart-add-log"])),
            print_ocp_smart_add_log(&ocp)
        );
        assert_eq!(
            r(&with(&[
                "ocp",
                "smart-add-log",
                "-o",
                "json",
                "--output-format-version",
                "1"
            ])),
            ocp_smart_add_log_json(&ocp, OcpJsonVersion::V1)
        );
        let stats = fdp_stats(&st).unwrap();
        assert_eq!(
            r(&with(&["fdp", "stats", "-e", "1"])),
            print_fdp_stats(&stats, &to)
        );
        assert_eq!(
            r(&with(&["fdp", "stats", "--output-format", "json"])),
            fdp_stats_json(&stats)
        );
        let verbose = TextOptions {
            locale: Locale::C,
            verbose: true,
        };
        let cfgs = fdp_configs(&st).unwrap();
        assert_eq!(
            r(&with(&["fdp", "configs", "-H"])),
            print_fdp_configs(&cfgs, &verbose)
        );
        assert_eq!(
            r(&with(&["fdp", "usage", "-o", "json"])),
            fdp_usage_json(&fdp_usage(&st).unwrap())
        );
        let host = fdp_events(&st, true).unwrap();
        assert!(!host.events.is_empty());
        assert_eq!(
            r(&with(&["fdp", "events", "-E"])),
            print_fdp_events(&host, &to)
        );
        let ctrl = fdp_events(&st, false).unwrap();
        assert_eq!(r(&with(&["fdp", "events"])), print_fdp_events(&ctrl, &to));
        let status = fdp_status(&st, 1).unwrap();
        assert_eq!(status.descriptors.len(), 2);
        assert_eq!(
            r(&with(&["fdp", "status", "-n", "1"])),
            print_fdp_status(&status)
        );
        assert_eq!(
            r(&with(&["fdp", "status", "-o", "json"])),
            fdp_status_json(&status)
        );

        // Errors a real drive would give as status codes.
        let e = render(&nvme(&with(&["fdp", "stats", "-e", "2"])).cmd, &st, &c).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("endurance group 2 does not exist"),
            "{e}"
        );
        let e = render(&nvme(&with(&["smart-log", "-n", "0x2"])).cmd, &st, &c).unwrap_err();
        assert!(
            e.to_string().starts_with("namespace 2 does not exist"),
            "{e}"
        );
        let mut conv = st.clone();
        conv.placement.kind = wafsim_report::nvme::drive::PlacementKind::Conventional;
        let e = render(&nvme(&with(&["fdp", "usage"])).cmd, &conv, &c).unwrap_err();
        assert_eq!(
            e.to_string(),
            "drive has no FDP configuration (placement: conventional)"
        );
    }

    #[test]
    fn flags_are_checked() {
        let bad = |args: &[&str]| {
            let mut v = vec!["wafsim", "nvme"];
            v.extend_from_slice(args);
            T::try_parse_from(v).unwrap_err().to_string()
        };
        // Exactly one source.
        assert!(bad(&["smart-log"]).contains("--state"));
        assert!(
            bad(&["smart-log", "--state", "a", "--server", "b:1"]).contains("cannot be used with")
        );
        assert!(bad(&["smart-log", "--state", "a", "-o", "binary"]).contains("binary"));
        assert!(bad(&[
            "ocp",
            "smart-add-log",
            "--state",
            "a",
            "--output-format-version",
            "3"
        ])
        .contains("3"));
        assert_eq!(parse_u32("0xffffffff"), Ok(u32::MAX));
        assert_eq!(parse_u32("17"), Ok(17));
        assert!(parse_u32("-1").is_err());
    }

    /// A one-shot fake `wafsim serve` on TCP: checks the request line, sends `reply`, closes.
    fn fake_tcp_server(reply: String) -> (String, std::thread::JoinHandle<String>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let h = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            (&s).write_all(reply.as_bytes()).unwrap();
            line
        });
        (addr, h)
    }

    #[test]
    fn fetch_state_over_tcp() {
        let st = fdp_state(4000);
        let (addr, h) = fake_tcp_server(st.to_json());
        assert_eq!(fetch_state(&addr).unwrap(), st);
        assert_eq!(h.join().unwrap(), "STATE\n");

        let (addr, h) = fake_tcp_server("ERR no drive is being served\n".into());
        let e = fetch_state(&addr).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("the wafsim server at {addr} refused: no drive is being served")
        );
        h.join().unwrap();

        let (addr, h) = fake_tcp_server(String::new());
        let e = fetch_state(&addr).unwrap_err().to_string();
        assert!(e.contains("closed the connection without a reply"), "{e}");
        h.join().unwrap();

        let (addr, h) = fake_tcp_server("{\"hbmw\": 1}".into());
        let e = fetch_state(&addr).unwrap_err().to_string();
        assert!(e.contains("not a wafsim drive state"), "{e}");
        h.join().unwrap();

        // Nobody listening: the error names the address.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = format!("{:#}", fetch_state(&port.to_string()).unwrap_err());
        assert!(e.contains(&port.to_string()), "{e}");
        assert!(fetch_state("no-port-here").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn fetch_state_over_a_unix_socket() {
        let st = fdp_state(4000);
        let path =
            std::env::temp_dir().join(format!("wafsim-nvme-test-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let json = st.to_json();
        let h = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&s).read_line(&mut line).unwrap();
            (&s).write_all(json.as_bytes()).unwrap();
            line
        });
        let got = fetch_state(&format!("unix:{}", path.display())).unwrap();
        assert_eq!(h.join().unwrap(), "STATE\n");
        assert_eq!(got, st);
        std::fs::remove_file(&path).unwrap();
        let e = fetch_state(&format!("unix:{}", path.display()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unix:"), "{e}");
    }

    fn write_tmp(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("wafsim-nvme-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    fn capture_pair(a: &str, b: &str) -> Result<(WafResult, Capture, Capture)> {
        let (pa, pb) = (write_tmp("a", a), write_tmp("b", b));
        let (ca, cb) = (load_capture(&pa), load_capture(&pb));
        let _ = (std::fs::remove_file(&pa), std::fs::remove_file(&pb));
        let (ca, cb) = (ca?, cb?);
        let r = waf(&ca.snap, &cb.snap).map_err(|e| waf_error(e, &ca, &cb))?;
        Ok((r, ca, cb))
    }

    #[test]
    fn waf_of_states_and_nvme_cli_text() {
        let (b, a) = (fdp_state(4000), fdp_state(9000));
        let truth = (a.media_bytes() - b.media_bytes()) as f64
            / (a.counters.host_write_bytes - b.counters.host_write_bytes) as f64;
        assert!(truth > 1.0);
        // Two drive states: FDP, exact.
        let (r, cb, ca) = capture_pair(&b.to_json(), &a.to_json()).unwrap();
        assert_eq!((r.method, r.waf), (WafMethod::FdpStats, truth));
        let j = waf_json(&r, &cb, &ca);
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["method"], "fdp-stats");
        assert_eq!(v["waf"].as_f64().unwrap(), truth);
        assert_eq!(
            v["host_bytes"].as_u64().unwrap(),
            a.counters.host_write_bytes - b.counters.host_write_bytes
        );
        assert!(v["mbe_delta"].as_u64().unwrap() > 0);
        let t = waf_text(&r, &cb, &ca);
        assert!(
            t.starts_with(&format!("WAF {truth:.4}\nmethod: fdp stats")),
            "{t}"
        );

        // A state against nvme-cli text of the later state (smart + ocp only): SMART method.
        let to = TextOptions::default();
        let text = print_smart_log(&smart_log(&a, None).unwrap(), 0xffff_ffff, "nvme0", &to)
            + &print_ocp_smart_add_log(&ocp_smart_add_log(&a));
        let (r, _, _) = capture_pair(&b.to_json(), &text).unwrap();
        assert_eq!(r.method, WafMethod::SmartAndOcp);
        assert!((r.waf - truth).abs() < 0.01, "{} vs {truth}", r.waf);

        // Errors name the file (and the line).
        let e = capture_pair(&b.to_json(), "Data Units Written : 12x\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("wafsim-nvme-") && e.contains("-b: line 1: 'Data Units Written'"),
            "{e}"
        );
        let e = capture_pair(&a.to_json(), &b.to_json())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("AFTER (") && e.contains("went backwards"),
            "{e}"
        );
        let bad = b
            .to_json()
            .replace("\"wafsim_drive_state\": 1", "\"wafsim_drive_state\": 9");
        let e = capture_pair(&bad, &a.to_json()).unwrap_err().to_string();
        assert!(
            e.contains("-a: wafsim drive state format 9 is not supported"),
            "{e}"
        );
        let e = capture_pair("hello\n", &a.to_json())
            .unwrap_err()
            .to_string();
        assert!(e.contains("-a: no nvme-cli smart-log"), "{e}");
    }
}
