//! fio job-file parsing: option families, include/env, numjobs, phases, diagnostics.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use wafsim_workload::fio::{
    parse_job_file, parse_job_str, BlockSize, DataPlacement, Distribution, FioError, JobFile, PlidSelect, RwMode,
    RwSequencer, SizeSpec,
};

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse(text: &str) -> Result<JobFile, FioError> {
    parse_job_str(text, "t.fio", Path::new("."), &no_env)
}

fn one(text: &str) -> wafsim_workload::fio::FioJob {
    let jf = parse(text).unwrap();
    assert_eq!(jf.jobs().count(), 1);
    jf.phases[0][0].clone()
}

#[test]
fn calibration_precondition_parses() {
    let jf = parse("[global]\nioengine=io_uring\ndirect=1\niodepth=256\n[precondition]\nrw=write\nbs=128k\nsize=98%\nloops=2\n").unwrap();
    assert!(jf.warnings.is_empty(), "{:?}", jf.warnings);
    let j = &jf.phases[0][0];
    assert_eq!(j.name, "precondition");
    assert_eq!(j.rw, RwMode::Write);
    assert_eq!(j.bs, [Some(131072); 3]);
    assert_eq!(j.size, Some(SizeSpec::Percent(98.0)));
    assert_eq!(j.loops, 2);
    assert_eq!(j.timing.iodepth, 256);
    assert!(j.timing.direct);
    assert_eq!(j.timing.ioengine.as_deref(), Some("io_uring"));
}

#[test]
fn calibration_steady_state_parses() {
    let jf = parse(
        "[global]\nioengine=io_uring\ndirect=1\niodepth=256\ntime_based\nruntime=21600\n[read]\nrw=randread\nbs=4k\n[write]\nrw=write\nbs=16k\n",
    )
    .unwrap();
    assert!(jf.warnings.is_empty());
    assert_eq!(jf.phases.len(), 1);
    let jobs: Vec<_> = jf.jobs().collect();
    assert_eq!(jobs.len(), 2);
    assert_eq!((jobs[0].name.as_str(), jobs[0].rw, jobs[0].bs[0]), ("read", RwMode::RandRead, Some(4096)));
    assert_eq!((jobs[1].name.as_str(), jobs[1].rw, jobs[1].bs[1]), ("write", RwMode::Write, Some(16384)));
    for j in jobs {
        assert!(j.timing.time_based);
        assert_eq!(j.timing.runtime_ns, Some(21_600 * 1_000_000_000));
    }
}

#[test]
fn size_rules() {
    let j = one("[a]\nsize=1g\noffset=4KB\nio_size=3mi\noffset_increment=10%\n");
    assert_eq!(j.size, Some(SizeSpec::Bytes(1 << 30)));
    assert_eq!(j.offset, Some(SizeSpec::Bytes(4096)));
    // kb_base=1024 (default): the "i" forms are decimal (fio compatibility mode)
    assert_eq!(j.io_size, Some(SizeSpec::Bytes(3_000_000)));
    assert_eq!(j.offset_increment, Some(SizeSpec::Percent(10.0)));
    // kb_base=1000 flips the meaning, wherever it appears in the section
    let j = one("[a]\nsize=4KiB\nbs=4k\nkb_base=1000\n");
    assert_eq!(j.size, Some(SizeSpec::Bytes(4096)));
    assert_eq!(j.bs, [Some(4000); 3]);
    let j = one("[a]\nio_limit=2M\n");
    assert_eq!(j.io_size, Some(SizeSpec::Bytes(2 << 20)));
}

#[test]
fn block_size_families() {
    let j = one("[a]\nbs=4k,16k\n");
    assert_eq!(j.bs, [Some(4096), Some(16384), Some(16384)]);
    let j = one("[a]\nblocksize=8k,32k,\n");
    assert_eq!(j.bs, [Some(8192), Some(32768), None]);
    let j = one("[a]\nbsrange=4k-64k\n");
    assert_eq!(j.block_sizes()[1], BlockSize::Range(4096, 65536));
    let j = one("[a]\nbssplit=4k/50:64k/50\nbs=8k\n");
    assert_eq!(j.block_sizes()[0], BlockSize::Split(vec![(4096, 50), (65536, 50)]));
    let j = one("[a]\nbssplit=2k/50:4k/50,4k/90:8k/10\n");
    assert_eq!(j.bssplit[1], Some(vec![(4096, 90), (8192, 10)]));
    assert_eq!(j.bssplit[2], Some(vec![(4096, 90), (8192, 10)]));
}

#[test]
fn rw_and_mix_options() {
    for (v, m) in [
        ("read", RwMode::Read),
        ("write", RwMode::Write),
        ("trim", RwMode::Trim),
        ("randread", RwMode::RandRead),
        ("randwrite", RwMode::RandWrite),
        ("randtrim", RwMode::RandTrim),
        ("rw", RwMode::ReadWrite),
        ("readwrite", RwMode::ReadWrite),
        ("randrw", RwMode::RandRw),
        ("trimwrite", RwMode::TrimWrite),
    ] {
        assert_eq!(one(&format!("[a]\nrw={v}\n")).rw, m, "{v}");
    }
    let j = one("[a]\nrw=randread:8\nrw_sequencer=identical\n");
    assert_eq!((j.rw, j.rw_modifier, j.rw_sequencer), (RwMode::RandRead, Some(8), RwSequencer::Identical));
    assert_eq!(one("[a]\nrw=write:4k\n").rw_modifier, Some(4096));
    assert_eq!(one("[a]\nrwmixread=70\n").rwmixread, 70);
    assert_eq!(one("[a]\nrwmixwrite=30\n").rwmixread, 70);
    assert_eq!(one("[a]\nrwmixread=10\nrwmixwrite=40\n").rwmixread, 60, "latter wins");
    let j = one("[a]\nloops=3\nnumber_ios=1k\npercentage_random=50,100\nrandseed=42\nrandrepeat=0\nnorandommap\nfilename=/dev/nvme0n1\n");
    assert_eq!(j.loops, 3);
    assert_eq!(j.number_ios, Some(1024));
    assert_eq!(j.percentage_random, [50, 100, 100]);
    assert_eq!(j.randseed, Some(42));
    assert!(!j.randrepeat);
    assert!(j.norandommap);
    assert_eq!(j.filename.as_deref(), Some("/dev/nvme0n1"));
}

#[test]
fn distributions() {
    let d = |s: &str| one(&format!("[a]\nrandom_distribution={s}\n")).random_distribution[0].clone();
    assert_eq!(d("random"), Distribution::Uniform);
    assert_eq!(d("zipf:1.2"), Distribution::Zipf { theta: 1.2, center: None });
    assert_eq!(d("zipf:0.8:0.25"), Distribution::Zipf { theta: 0.8, center: Some(0.25) });
    assert_eq!(d("pareto:0.9"), Distribution::Pareto { h: 0.9, center: None });
    assert_eq!(d("normal:5"), Distribution::Normal { dev_pct: 5.0, center: 0.5 });
    assert_eq!(
        d("zoned:60/10:30/20:8/30:2/40"),
        Distribution::Zoned(vec![
            (60.0, SizeSpec::Percent(10.0)),
            (30.0, SizeSpec::Percent(20.0)),
            (8.0, SizeSpec::Percent(30.0)),
            (2.0, SizeSpec::Percent(40.0))
        ])
    );
    assert_eq!(
        d("zoned_abs=60/20G:30/100G:10/500g"),
        Distribution::Zoned(vec![
            (60.0, SizeSpec::Bytes(20 << 30)),
            (30.0, SizeSpec::Bytes(100 << 30)),
            (10.0, SizeSpec::Bytes(500 << 30))
        ])
    );
    assert!(parse("[a]\nrandom_distribution=zoned:60/10:30/20\n").is_err(), "must add to 100");
    assert!(parse("[a]\nrandom_distribution=zipf\n").is_err());
}

#[test]
fn placement_options() {
    let j = one("[a]\nioengine=io_uring_cmd\nfdp=1\nfdp_pli=0,2,5\nfdp_pli_select=random\ndp_scheme=/tmp/scheme\n");
    assert!(j.fdp);
    assert_eq!(j.plids, Some(vec![0, 2, 5]));
    assert_eq!(j.plid_select, PlidSelect::Random);
    assert_eq!(j.dp_scheme.as_deref(), Some("/tmp/scheme"));
    let j = one("[a]\nioengine=xnvme\ndataplacement=streams\nplids=1-3\nplid_select=roundrobin\n");
    assert_eq!(j.dataplacement, DataPlacement::Streams);
    assert_eq!(j.plids, Some(vec![1, 2, 3]));
    assert_eq!(one("[a]\n").plid_select, PlidSelect::RoundRobin, "default");
}

#[test]
fn timing_options_are_kept() {
    let j = one("[a]\nrate=1m,500k\nrate_iops=,100\nramp_time=10s\nstartdelay=2\nthinktime=50\niodepth=64\nbuffered=1\n");
    assert_eq!(j.timing.rate, [Some(1 << 20), Some(500 << 10), Some(500 << 10)]);
    assert_eq!(j.timing.rate_iops, [None, Some(100), Some(100)]);
    assert_eq!(j.timing.ramp_time_ns, Some(10_000_000_000));
    assert_eq!(j.timing.startdelay_ns, Some(2_000_000_000));
    assert_eq!(j.timing.thinktime_ns, Some(50_000));
    assert_eq!(j.timing.iodepth, 64);
    assert!(!j.timing.direct);
}

#[test]
fn include_and_env() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio");
    let env = |k: &str| match k {
        "WAFSIM_BS" => Some("16k".to_string()),
        "WAFSIM_SIZE" => Some("1g".to_string()),
        _ => None,
    };
    let jf = parse_job_file(&dir.join("main.fio"), &env).unwrap();
    let j = &jf.phases[0][0];
    assert_eq!(j.bs, [Some(16384); 3]);
    assert_eq!(j.size, Some(SizeSpec::Bytes(1 << 30)));
    assert_eq!(j.timing.iodepth, 32);
    assert_eq!(j.timing.ioengine.as_deref(), Some("io_uring"));
    // Unset variable: error naming the including file and line.
    let err = parse_job_file(&dir.join("main.fio"), &no_env).unwrap_err().to_string();
    assert!(err.contains("main.fio:4:") && err.contains("WAFSIM_BS"), "{err}");
}

#[test]
fn numjobs_clones_and_offset_increment() {
    let jf = parse("[global]\nsize=25%\noffset_increment=25%\n[w]\nrw=write\nnumjobs=4\n").unwrap();
    let jobs: Vec<_> = jf.jobs().collect();
    assert_eq!(jobs.len(), 4);
    assert_eq!(jf.phases.len(), 1);
    for (i, j) in jobs.iter().enumerate() {
        assert_eq!(j.name, "w");
        assert_eq!(j.clone_index, i as u32);
        assert_eq!(j.job_index, i as u32);
    }
    // Each clone writes its own quarter.
    let ns = 1u64 << 24;
    for (i, j) in jobs.iter().enumerate() {
        let mut src = j.source(0, ns, 1).unwrap();
        let mut v = Vec::new();
        while src.fill(&mut v, 1024).unwrap() > 0 {}
        let lo = v.iter().map(|io| io.offset).min().unwrap();
        let hi = v.iter().map(|io| io.offset + io.len as u64).max().unwrap();
        assert_eq!((lo, hi), (i as u64 * ns / 4, (i as u64 + 1) * ns / 4));
    }
}

#[test]
fn stonewall_phases_and_late_global() {
    let jf = parse(
        "[global]\nbs=4k\n[a]\nrw=write\n[b]\nrw=read\n[c]\nstonewall\nrw=randwrite\nnumjobs=2\n[global]\nbs=8k\n[d]\nwait_for_previous\n[e]\nnew_group\n",
    )
    .unwrap();
    let names: Vec<Vec<(String, u32)>> =
        jf.phases.iter().map(|p| p.iter().map(|j| (j.name.clone(), j.clone_index)).collect()).collect();
    let s = |n: &str, c: u32| (n.to_string(), c);
    assert_eq!(names, vec![vec![s("a", 0), s("b", 0)], vec![s("c", 0), s("c", 1)], vec![s("d", 0), s("e", 0)]]);
    // The later [global] applies to later jobs only.
    let bs: Vec<_> = jf.jobs().map(|j| j.bs[0]).collect();
    assert_eq!(bs, [Some(4096), Some(4096), Some(4096), Some(4096), Some(8192), Some(8192)]);
    assert!(jf.phases[2][1].new_group);
}

#[test]
fn diagnostics_carry_location() {
    let err = parse_job_str("[global]\nrw=write\n\n[vm]\nsize=1g\n\nbs=4q\n", "jobs/vm.fio", Path::new("."), &no_env)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("jobs/vm.fio:7: option bs: value \"4q\" is not a size (expected e.g. 4k, 128KiB"), "{err}");
    let err = parse("[a]\nrw=sideways\n").unwrap_err().to_string();
    assert!(err.starts_with("t.fio:2: option rw: value \"sideways\" is not an I/O pattern"), "{err}");
    let err = parse("[a]\nrwmixread=170\n").unwrap_err().to_string();
    assert!(err.contains("t.fio:2:") && err.contains("percentage"), "{err}");
    let err = parse("bs=4k\n").unwrap_err().to_string();
    assert!(err.starts_with("t.fio:1:") && err.contains("outside"), "{err}");
    let err = parse("[a\n").unwrap_err().to_string();
    assert!(err.starts_with("t.fio:1:"), "{err}");
    let jf = parse("[a]\nfrobnicate=3\nverify=crc32c\ngroup_reporting\n").unwrap();
    assert_eq!(jf.warnings.len(), 2);
    assert_eq!((jf.warnings[0].line, jf.warnings[0].file.as_str()), (2, "t.fio"));
    assert!(jf.warnings[0].to_string().contains("unknown option \"frobnicate\""));
    assert!(jf.warnings[1].message.contains("not modelled"));
    // A bad value in [global] is reported at its own line.
    let err = parse("[global]\nloops=x\n[a]\n").unwrap_err().to_string();
    assert!(err.starts_with("t.fio:2: option loops"), "{err}");
}

#[test]
fn include_cycle_is_an_error() {
    let dir = std::env::temp_dir().join(format!("wafsim-fio-cycle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.fio"), "[x]\ninclude a.fio\n").unwrap();
    let err = parse_job_file(&dir.join("a.fio"), &no_env).unwrap_err().to_string();
    assert!(err.contains("include"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn parser_never_panics_on_random_text(text in "\\PC{0,200}") {
        let _ = parse(&text);
    }

    #[test]
    fn parser_never_panics_on_plausible_lines(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("[global]".to_string()),
                "\\[[a-z]{0,4}\\]?",
                ("(rw|bs|bsrange|bssplit|size|offset|offset_increment|io_size|loops|number_ios|numjobs|rwmixread|random_distribution|percentage_random|randseed|fdp|fdp_pli|plid_select|dataplacement|runtime|rate|kb_base|norandommap|stonewall|time_based|nrfiles|filesize|file_service_type|zonesize|ioengine|rw_sequencer)",
                 "[-0-9a-zA-Z:/,.%=_]{0,12}").prop_map(|(k, v)| format!("{k}={v}")),
                "[ -~]{0,30}",
            ],
            0..12)
    ) {
        let text = lines.join("\n");
        if let Ok(jf) = parse(&text) {
            for j in jf.jobs() {
                let _ = j.write_bytes_hint(1 << 30);
                if let Ok(mut s) = j.source(0, 1 << 30, 7) {
                    let mut v = Vec::new();
                    s.fill(&mut v, 64).unwrap();
                    for io in &v {
                        prop_assert!(io.offset + io.len as u64 <= 1 << 30);
                    }
                }
            }
        }
    }
}

// ---- fio fidelity: each test below failed before the corresponding change ----

/// Item 1: fio refuses a job file without a job ("No job(s) defined"); so must wafsim, naming
/// the file (a caller used to index phases[0] of an empty result and panic).
#[test]
fn no_job_section_is_an_error() {
    for text in ["", "; only a comment\n# and another\n", "[global]\nbs=4k\nrw=write\n"] {
        let err = parse_job_str(text, "jobs/empty.fio", Path::new("."), &no_env).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("jobs/empty.fio:") && msg.contains("No job(s) defined"), "{msg}");
        assert!(matches!(err, FioError::Syntax { line, .. } if line == text.lines().count()));
    }
}

/// Item 2: percentages from 0 to 100 are fio's; 0% is "unset" for size and io_size, 0 for
/// offset and offset_increment (fio 3.33 on a 16 MiB device: size=0% writes it all).
#[test]
fn zero_percent_is_accepted_like_fio() {
    let j = one("[a]\noffset=0%\nsize=30%\n");
    assert_eq!(j.offset, Some(SizeSpec::Percent(0.0)));
    assert_eq!(one("[a]\noffset_increment=0%\n").offset_increment, Some(SizeSpec::Percent(0.0)));
    assert_eq!(one("[a]\nsize=0%\n").size, None, "size=0% means the whole target in fio");
    assert_eq!(one("[a]\nsize=0\n").size, None);
    assert_eq!(one("[a]\nio_size=0%\n").io_size, None);
    assert_eq!(one("[a]\nnumber_ios=0\n").number_ios, None);
    for bad in ["size=101%", "offset=150%", "io_size=200%", "offset_increment=-1%"] {
        let e = parse(&format!("[a]\n{bad}\n")).unwrap_err().to_string();
        assert!(e.starts_with("t.fio:2:") && e.contains("between 0 and 100"), "{e}");
    }
}

/// Item 3: engines whose I/O does not reach a block device are refused where ioengine is set
/// (often in [global]), block engines are accepted.
#[test]
fn non_block_engines_are_refused() {
    let e = parse("[global]\nioengine=net\nhostname=x\n[a]\nrw=write\n").unwrap_err().to_string();
    assert!(e.starts_with("t.fio:2: job \"a\": ioengine=net sends I/O over the network"), "{e}");
    assert!(e.contains("wafsim simulates a drive"), "{e}");
    for engine in ["cpuio", "null", "http", "rados", "filecreate", "dirdelete", "exec", "rdma", "nfs", "dev-dax", "falloc", "ftruncate", "e4defrag", "mtd", "libpmem", "gfapi"] {
        assert!(parse(&format!("[a]\nioengine={engine}\n")).is_err(), "{engine} must be refused");
    }
    for engine in ["sync", "psync", "pvsync2", "libaio", "io_uring", "io_uring_cmd", "posixaio", "mmap", "splice", "sg", "xnvme", "libzbc", "nbd", "libiscsi", "rbd", "windowsaio"] {
        let jf = parse(&format!("[a]\nioengine={engine}\n")).unwrap_or_else(|e| panic!("{engine}: {e}"));
        assert!(jf.warnings.is_empty(), "{engine}: {:?}", jf.warnings);
    }
    // a job may override the [global] engine
    assert!(parse("[global]\nioengine=null\n[a]\nioengine=libaio\n").is_ok());
    // unknown engines may be plugins: a warning, as fio would try to load them
    let jf = parse("[a]\nioengine=spdk_nvme_custom\n").unwrap();
    assert!(jf.warnings[0].message.contains("not an engine wafsim knows"), "{:?}", jf.warnings);
    // external engines: refused where the plugin is missing (fio cannot load it either), else
    // a warning saying what wafsim assumes
    let e = parse("[a]\nioengine=external:/opt/spdk-missing/fio_plugin\n").unwrap_err().to_string();
    assert!(e.contains("does not exist") && e.contains(":2:"), "{e}");
    let here = std::env::current_exe().unwrap();
    let jf = parse(&format!("[a]\nioengine={}\n", here.display())).unwrap();
    assert!(jf.warnings[0].message.contains("external engine"), "{:?}", jf.warnings);
}

/// Item 5: every alias fio defines is handled exactly as its option; write_iolog is typed.
#[test]
fn aliases_behave_as_their_options() {
    use wafsim_workload::fio::options::ALIASES;
    let values = ["1", "4k", "write", "0,1", "50", "fdp", "roundrobin", "/tmp/x", "0"];
    for (alias, option) in ALIASES {
        for v in values {
            let a = parse(&format!("[a]\n{alias}={v}\n"));
            let o = parse(&format!("[a]\n{option}={v}\n"));
            match (a, o) {
                (Ok(a), Ok(o)) => {
                    assert_eq!(a.phases, o.phases, "{alias}={v} vs {option}={v}");
                    assert_eq!(a.warnings.len(), o.warnings.len(), "{alias}={v}: {:?}", a.warnings);
                }
                (Err(_), Err(_)) => {}
                (a, o) => panic!("{alias}={v}: {a:?} but {option}={v}: {o:?}"),
            }
        }
    }
    // The ones 1mbs_clients.fio and friends use, spelled out:
    assert!(parse("[a]\nratemin=1m\n").unwrap().warnings.is_empty(), "ratemin is fio's alias of rate_min");
    assert_eq!(one("[a]\nnr_files=4\n").nrfiles, 4);
    assert_eq!(one("[a]\nfileoffset=8k\n").offset, Some(SizeSpec::Bytes(8192)));
    assert_eq!(one("[a]\ntimeout=10\n").timing.runtime_ns, Some(10_000_000_000));
    assert_eq!(one("[a]\nfdp_pli=1,2\n").plids, Some(vec![1, 2]));
    assert_eq!(one("[a]\nwrite_iolog=/tmp/w.log\n").write_iolog.as_deref(), Some("/tmp/w.log"));
    assert!(one("[a]\nwrite_iolog=/tmp/w.log\n").other.is_empty(), "write_iolog is typed, not kept verbatim");
    // options fio removed fail as in fio
    let e = parse("[a]\nrwmixcycle=50\n").unwrap_err().to_string();
    assert!(e.contains("deprecated"), "{e}");
}

/// Item 6: fio value syntax that used to be refused.
#[test]
fn fio_value_syntax() {
    // backwards and forward skips
    assert_eq!(one("[a]\nrw=read:-8k\n").rw_modifier, Some(-8192));
    assert_eq!(one("[a]\nrw=write:4k\n").rw_modifier, Some(4096));
    assert!(parse("[a]\nrw=randread:-8\n").is_err(), "a count of random I/Os cannot be negative");
    // zone counts, resolved with zonesize wherever it is set
    let j = one("[a]\nsize=4z\noffset=1z\nzonesize=256m\n");
    assert_eq!((j.size, j.offset), (Some(SizeSpec::Bytes(1 << 30)), Some(SizeSpec::Bytes(256 << 20))));
    let e = parse("[a]\nrw=write\nsize=4z\n").unwrap_err().to_string();
    assert!(e.starts_with("t.fio:3: job \"a\": size=4z counts zones") && e.contains("zonesize"), "{e}");
    // zoned with fio's trailing '/': the remaining size (rand-zones.fio)
    let d = one("[a]\nrandom_distribution=zoned:50/5:30/15:20/\n").random_distribution[0].clone();
    assert_eq!(
        d,
        Distribution::Zoned(vec![(50.0, SizeSpec::Percent(5.0)), (30.0, SizeSpec::Percent(15.0)), (20.0, SizeSpec::Percent(80.0))])
    );
    let d = one("[a]\nrandom_distribution=zoned:50/5:30/15:20\n").random_distribution[0].clone();
    assert_eq!(d, Distribution::Zoned(vec![(50.0, SizeSpec::Percent(5.0)), (30.0, SizeSpec::Percent(15.0)), (20.0, SizeSpec::Percent(80.0))]));
    // random_distribution=sequence: not in fio 3.33 (only fio's development tree, after 3.42)
    let e = parse("[a]\nrandom_distribution=sequence:2,0,1\n").unwrap_err().to_string();
    assert!(e.contains("sequence") && e.contains("3.42"), "{e}");
    // fio's keywords with bc arithmetic (page_fault.fio), with wafsim's fixed values
    let j = one("[a]\nsize=5*1024*1024*$mb_memory/8 # 5/8 of the memory\nbs=$pagesize\n");
    assert_eq!(j.size, Some(SizeSpec::Bytes(5 * 1024 * 1024 * 16384 / 8)));
    assert_eq!(j.bs, [Some(4096); 3]);
    let jf = parse("[a]\nnumjobs=$ncpus\n").unwrap();
    assert_eq!(jf.jobs().count(), 8);
    // parenthesised arithmetic (fio's expression parser)
    assert_eq!(one("[a]\nbs=(4k*2)\niodepth=(8*4)\n").bs, [Some(8192); 3]);
    assert_eq!(one("[a]\nsize=(2^10)m\n").size, Some(SizeSpec::Bytes(1 << 30)));
    let e = parse("[a]\nsize=5*1024\n").unwrap_err().to_string();
    assert!(e.contains("parentheses"), "{e}");
}

/// Item 4 (parsing): nrfiles, filesize and file_service_type are typed, not ignored.
#[test]
fn file_options_are_typed() {
    use wafsim_workload::fio::FileService;
    let jf = parse("[a]\nnrfiles=4\nfilesize=1m\nfile_service_type=random:8\n").unwrap();
    assert!(jf.warnings.is_empty(), "{:?}", jf.warnings);
    let j = &jf.phases[0][0];
    assert_eq!((j.nrfiles, j.filesize, j.file_service.clone()), (4, Some((1 << 20, 1 << 20)), FileService::Random(8)));
    assert_eq!(one("[a]\nfilesize=1m-4m\n").filesize, Some((1 << 20, 4 << 20)));
    assert_eq!(one("[a]\nfile_service_type=sequential\n").file_service, FileService::Sequential);
    // filename= names the one file: nrfiles is ignored, as in fio
    let jf = parse("[a]\nfilename=/dev/nvme0n1\nnrfiles=4\n").unwrap();
    assert_eq!(jf.phases[0][0].nrfiles, 1);
    assert!(jf.warnings[0].message.contains("nrfiles=4 is ignored"), "{:?}", jf.warnings);
    // several files in filename=: refused (escaped colons are part of a name)
    let e = parse("[a]\nfilename=/dev/sda:/dev/sdb\n").unwrap_err().to_string();
    assert!(e.starts_with("t.fio:2: job \"a\": filename=/dev/sda:/dev/sdb names 2 files"), "{e}");
    assert!(parse("[a]\nfilename=/dev/disk/by-path/pci-0000\\:01\\:00.0-nvme-1\n").is_ok());
}

/// Item 7 (parsing): fio sends placement only through io_uring_cmd and xnvme.
#[test]
fn placement_needs_a_passthrough_engine() {
    let e = parse("[global]\nioengine=io_uring\n[a]\nrw=write\nfdp=1\n").unwrap_err().to_string();
    assert!(e.starts_with("t.fio:5: job \"a\": fdp=1 needs ioengine=io_uring_cmd or xnvme") && e.contains("lacks fetch ruhs"), "{e}");
    let e = parse("[a]\nrw=write\ndataplacement=fdp\n").unwrap_err().to_string();
    assert!(e.contains("psync (fio's default)"), "{e}");
    let e = parse("[a]\nioengine=io_uring_cmd\ndataplacement=streams\n").unwrap_err().to_string();
    assert!(e.contains("stream IDs must be provided"), "{e}");
    let jf = parse("[a]\nioengine=libaio\ndataplacement=streams\nplids=1\n").unwrap();
    assert_eq!(jf.phases[0][0].dataplacement, DataPlacement::None, "fio's libaio never sends the directive");
    assert!(jf.warnings[0].message.contains("no effect"), "{:?}", jf.warnings);
}

/// `filename=` (and the other file options) are modelled, not warned about.
#[test]
fn filename_is_not_warned_about() {
    let jf = parse("[global]\nfilename=/dev/nvme0n1\n[a]\nfilename=/dev/nvme1n1\ndirectory=/mnt\nrw=write\n").unwrap();
    assert!(jf.warnings.is_empty(), "{:?}", jf.warnings);
    assert_eq!(jf.phases[0][0].filename.as_deref(), Some("/dev/nvme1n1"));
}
