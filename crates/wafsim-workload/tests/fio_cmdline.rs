//! Item 8: fio's command-line form, read with the job-file interpreter and fio's getopt rules.

use std::path::Path;

use wafsim_workload::fio::{parse_job_args, parse_job_str, FioError, JobFile, RwMode, SizeSpec};

fn args(a: &str) -> Result<JobFile, FioError> {
    parse_job_args(a, "args", &|_| None)
}

#[test]
fn pasted_command_matches_the_job_file() {
    let cmd = "fio --name=test --filename=/dev/vdb --rw=randrw --rwmixread=70 --bs=4k --iodepth=256 \\\n  --runtime=600 --time_based --ioengine=libaio --direct=1 --group_reporting --output-format=json --eta=never";
    let jf = args(cmd).unwrap();
    assert!(jf.warnings.is_empty(), "{:?}", jf.warnings);
    let file = parse_job_str(
        "[test]\nfilename=/dev/vdb\nrw=randrw\nrwmixread=70\nbs=4k\niodepth=256\nruntime=600\ntime_based\nioengine=libaio\ndirect=1\ngroup_reporting\n",
        "args",
        Path::new("."),
        &|_| None,
    )
    .unwrap();
    let (a, f) = (&jf.phases[0][0], &file.phases[0][0]);
    assert_eq!((&a.name, &a.opts), (&f.name, &f.opts));
    assert_eq!((a.rw, a.rwmixread, a.timing.iodepth), (RwMode::RandRw, 70, 256));
}

#[test]
fn global_options_and_several_jobs() {
    // as fio 3.33: options before the first --name are global; --name=global edits the
    // defaults of the jobs that follow
    let jf = args("--bs=8k --size=16k --name=a --rw=write --name=global --rw=randwrite --name=b").unwrap();
    let jobs: Vec<_> = jf.jobs().collect();
    assert_eq!(jobs.len(), 2);
    assert_eq!((jobs[0].name.as_str(), jobs[0].rw, jobs[0].bs[0]), ("a", RwMode::Write, Some(8192)));
    assert_eq!((jobs[1].name.as_str(), jobs[1].rw, jobs[1].size), ("b", RwMode::RandWrite, Some(SizeSpec::Bytes(16384))));
    // separate values, single dashes, getopt prefixes, aliases
    let jf = args("-name a --bs 16k --runt=60 --readwrite=write --stonewall --numjobs 2").unwrap();
    let j = &jf.phases[0][0];
    assert_eq!((j.bs[1], j.timing.runtime_ns, j.rw, j.stonewall), (Some(16384), Some(60_000_000_000), RwMode::Write, true));
    assert_eq!(jf.jobs().count(), 2);
}

#[test]
fn errors_name_the_argument() {
    let e = args("fio --name=a --bs=4q").unwrap_err().to_string();
    assert!(e.starts_with("args:2: option bs: value \"4q\" is not a size"), "{e}");
    // getopt gives --direct the next argument as its value, as fio does
    let e = args("--name=a --direct --bs=4k").unwrap_err().to_string();
    assert!(e.starts_with("args:2: option direct: value \"--bs=4k\""), "{e}");
    let e = args("--name=a --rwmix=70").unwrap_err().to_string();
    assert!(e.starts_with("args:2: argument 2 \"--rwmix=70\" is ambiguous") && e.contains("--rwmixread"), "{e}");
    let e = args("--name=a --rw=write job.fio").unwrap_err().to_string();
    assert!(e.starts_with("args:3: argument 3 \"job.fio\" names a job file") && e.contains("file ="), "{e}");
    let e = args("--bs=4k --rw=write").unwrap_err().to_string();
    assert!(e.starts_with("args:2: No job(s) defined") && e.contains("--name"), "{e}");
    let e = args("--name=a --ioengine=net").unwrap_err().to_string();
    assert!(e.starts_with("args:2: job \"a\": ioengine=net"), "{e}");
    let e = args("--name=a --bs").unwrap_err().to_string();
    assert!(e.contains("requires a value"), "{e}");
    let e = args("--name='a").unwrap_err().to_string();
    assert!(e.starts_with("args:0:") && e.contains("quote"), "{e}");
    for refused in ["--client=host", "--showcmd", "--version", "--section=x", "--server"] {
        let e = args(&format!("--name=a {refused}")).unwrap_err().to_string();
        assert!(e.starts_with("args:2: argument 2 --"), "{refused}: {e}");
    }
    let e = args("--readonly --name=a --rw=randwrite").unwrap_err().to_string();
    assert!(e.starts_with("args:1:") && e.contains("readonly"), "{e}");
    assert!(args("--readonly --name=a --rw=randread").is_ok());
}

#[test]
fn own_options_are_ignored_and_unknown_ones_warned() {
    let jf = args("sudo /usr/bin/fio --output=/tmp/out.json --output-format=json+ --minimal --status-interval=10 --eta-newline 5 --name=a --frobnicate 3 --parse-only").unwrap();
    assert_eq!(jf.jobs().count(), 1);
    assert_eq!(jf.warnings.len(), 1);
    assert!(jf.warnings[0].to_string().starts_with("args:8: warning: argument 8: unknown option \"--frobnicate\" with its value \"3\""), "{}", jf.warnings[0]);
}

#[test]
fn shell_quoting_and_variables() {
    let env = |k: &str| match k {
        "DEV" => Some("/dev/nvme0n1".to_string()),
        "BS" => Some("128k".to_string()),
        _ => None,
    };
    let jf = parse_job_args("fio --name='seq write' --filename=$DEV --bs=\"${BS}\" --numjobs=$ncpus --size='$pagesize'", "cmd", &env).unwrap();
    let j = &jf.phases[0][0];
    assert_eq!((j.name.as_str(), j.filename.as_deref(), j.bs[0]), ("seq write", Some("/dev/nvme0n1"), Some(131072)));
    assert_eq!(j.size, Some(SizeSpec::Bytes(4096)));
    assert_eq!(jf.jobs().count(), 8, "$ncpus is fio's keyword");
    let e = parse_job_args("fio --name=a --filename=$NOPE", "cmd", &env).unwrap_err().to_string();
    assert!(e.contains("NOPE"), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, .. Default::default() })]

    #[test]
    fn command_parser_never_panics(text in "\\PC{0,120}") {
        let _ = args(&text);
    }

    #[test]
    fn plausible_commands_never_panic(
        words in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("--name=j".to_string()),
                "--(rw|bs|size|offset|io_size|nrfiles|filesize|file_service_type|loops|number_ios|rwmixread|time_based|direct|ioengine|zonesize|random_distribution)(=[-0-9a-z:/%]{0,8})?",
                "[-a-z0-9'\"$=]{0,10}",
            ],
            0..10)
    ) {
        if let Ok(jf) = args(&words.join(" ")) {
            for j in jf.jobs() {
                let _ = j.write_bytes_hint(1 << 24);
                if let Ok(mut s) = j.source(0, 1 << 24, 3) {
                    let mut v = Vec::new();
                    s.fill(&mut v, 256).unwrap();
                    proptest::prop_assert!(v.iter().all(|io| io.offset + io.len as u64 <= 1 << 24));
                }
            }
        }
    }
}
