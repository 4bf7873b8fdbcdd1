//! Trace readers and merge, checked against the expectations written by
//! scripts/gen_trace_fixtures.py (tests/fixtures/summary.txt).

use std::collections::HashMap;
use std::path::PathBuf;

use wafsim_core::{Io, Op, Pid};
use wafsim_workload::synthetic::{Distribution, Pattern, Synthetic, SyntheticSpec};
use wafsim_workload::trace::{
    blkparse::BlkparseReader, iolog::IologReader, msr::MsrReader, open_trace, open_trace_detected, reader_for, IologTee,
    IologWriter, OffsetPolicy, TraceError, TraceFormat, TraceInput, TraceMerge, TraceRecord,
};
use wafsim_workload::IoSource;
use wafsim_core::pipeline::SourceError;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn summary() -> HashMap<String, String> {
    let text = std::fs::read_to_string(fixture("summary.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Trim => "trim",
        Op::Append | Op::Flush | Op::Zone(_) => unreachable!("trace readers produce reads, writes and trims"),
    }
}

fn check_against_summary(name: &str, format: Option<TraceFormat>) {
    let s = summary();
    let get = |k: &str| s.get(&format!("{name}.{k}")).unwrap_or_else(|| panic!("{name}.{k} missing")).clone();
    let recs: Vec<TraceRecord> = open_trace(&fixture(&get("file")), format).unwrap().map(Result::unwrap).collect();
    assert_eq!(recs.len().to_string(), get("records"), "{name}");
    for (which, r) in [("first", &recs[0]), ("last", recs.last().unwrap())] {
        assert_eq!(r.timestamp_ns.to_string(), get(&format!("{which}.ts_ns")), "{name} {which}");
        assert_eq!(op_name(r.op), get(&format!("{which}.op")), "{name} {which}");
        assert_eq!(r.offset.to_string(), get(&format!("{which}.offset")), "{name} {which}");
        assert_eq!(r.len.to_string(), get(&format!("{which}.len")), "{name} {which}");
        assert_eq!(&*r.key, get(&format!("{which}.key")), "{name} {which}");
    }
    for op in [Op::Read, Op::Write, Op::Trim] {
        let bytes: u64 = recs.iter().filter(|r| r.op == op).map(|r| r.len).sum();
        assert_eq!(bytes.to_string(), get(&format!("bytes.{}", op_name(op))), "{name} {op:?}");
    }
    let mut keys: HashMap<String, usize> = HashMap::new();
    for r in &recs {
        *keys.entry(r.key.to_string()).or_default() += 1;
    }
    for (k, n) in keys {
        assert_eq!(n.to_string(), get(&format!("keys.{k}")), "{name} key {k}");
    }
    assert!(recs.windows(2).all(|w| w[0].timestamp_ns <= w[1].timestamp_ns), "{name}: time goes backwards");
}

#[test]
fn iolog_v2_matches_summary() {
    check_against_summary("iolog_v2", None);
}

#[test]
fn iolog_v3_matches_summary() {
    check_against_summary("iolog_v3", Some(TraceFormat::FioIolog));
}

#[test]
fn blkparse_matches_summary() {
    check_against_summary("blkparse", None);
}

#[test]
fn msr_matches_summary() {
    check_against_summary("msr", None);
}

fn read_all<I: Iterator<Item = Result<TraceRecord, TraceError>>>(it: I) -> Result<Vec<TraceRecord>, TraceError> {
    it.collect()
}

#[test]
fn iolog_errors_have_locations() {
    let e = read_all(IologReader::new("fio version 1 iolog\n".as_bytes(), "x.log")).unwrap_err().to_string();
    assert!(e.starts_with("x.log:1:") && e.contains("fio version 2 iolog"), "{e}");
    let e = read_all(IologReader::new("fio version 3 iolog\n0 /d add\nabc /d write 0 4096\n".as_bytes(), "x.log"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("x.log:3:") && e.contains("timestamp"), "{e}");
    let e = read_all(IologReader::new("fio version 2 iolog\n/d write 0 4096\n".as_bytes(), "x.log")).unwrap_err().to_string();
    assert!(e.starts_with("x.log:2:") && e.contains("before \"add\""), "{e}");
    let e = read_all(IologReader::new("fio version 2 iolog\n/d add\n/d write 0 4k\n".as_bytes(), "x.log")).unwrap_err().to_string();
    assert!(e.starts_with("x.log:3:") && e.contains("length"), "{e}");
    let e = read_all(IologReader::new("fio version 3 iolog\n0 /d add\n5 /d wait 10 0\n".as_bytes(), "x.log")).unwrap_err().to_string();
    assert!(e.starts_with("x.log:3:") && e.contains("unknown action"), "{e}");
    // v2 waits accumulate into timestamps (microseconds)
    let r = read_all(IologReader::new("fio version 2 iolog\n/d add\n/d write 0 512\n/d wait 250 0\n/d read 512 512\n".as_bytes(), "x")).unwrap();
    assert_eq!(r.iter().map(|r| r.timestamp_ns).collect::<Vec<_>>(), [0, 250_000]);
}

#[test]
fn blkparse_details() {
    let text = "\
  8,0    3        1     0.000000000  1234  Q  WS 1000 + 8 [fio]
  8,0    3        2     0.000001000  1234  C  WS 1000 + 8 [0]
  8,0    3        3     0.000002000  1234  Q FWS [fio]
  8,0    3        4     0.000003500  1234  Q   D 2048 + 16 [fio]
  8,0    3        5     0.000004000  1234  Q   R 10 + 1 [fio]
CPU3 (8,0):
 Reads Queued:           1,        0KiB\t Writes Queued:           1,        4KiB
";
    let r = read_all(BlkparseReader::new(text.as_bytes(), "b.txt")).unwrap();
    let got: Vec<(u64, Op, u64, u64)> = r.iter().map(|r| (r.timestamp_ns, r.op, r.offset, r.len)).collect();
    assert_eq!(got, [(0, Op::Write, 512_000, 4096), (3500, Op::Trim, 1_048_576, 8192), (4000, Op::Read, 5120, 512)]);
    let c = read_all(BlkparseReader::with_action(text.as_bytes(), "b.txt", "C")).unwrap();
    assert_eq!(c.len(), 1);
    let e = read_all(BlkparseReader::new("  8,0 1 1 0.5 1 Q W x + 8 [a]\n".as_bytes(), "b.txt")).unwrap_err().to_string();
    assert!(e.starts_with("b.txt:1:") && e.contains("sector"), "{e}");
}

#[test]
fn msr_errors() {
    let e = read_all(MsrReader::new("1,hm,0,Write,0,4096,1\n2,hm,0,Erase,0,4096,1\n".as_bytes(), "m.csv")).unwrap_err().to_string();
    assert!(e.starts_with("m.csv:2:") && e.contains("Read or Write"), "{e}");
    let e = read_all(MsrReader::new("1,hm,0,Write,0\n".as_bytes(), "m.csv")).unwrap_err().to_string();
    assert!(e.starts_with("m.csv:1:") && e.contains("7 comma-separated"), "{e}");
    let r = read_all(MsrReader::new("10,hm,0,Write,0,4096,1\n35,hm,0,read,4096,512,1\n".as_bytes(), "m.csv")).unwrap();
    assert_eq!((r[1].timestamp_ns, r[1].op, &*r[1].key), (2500, Op::Read, "hm_0"));
}

/// Everything the merge emits; an error from `fill` must be the one the merge keeps.
fn drain(m: &mut TraceMerge) -> Vec<Io> {
    let mut v = Vec::new();
    loop {
        match m.fill(&mut v, 7) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e.to_string(), m.error().expect("kept").to_string());
                assert_eq!(m.fill(&mut v, 7).unwrap(), 0, "exhausted after its error");
                break;
            }
        }
    }
    v
}

#[test]
fn merge_interleaves_by_time_with_stable_ties() {
    let a = "fio version 3 iolog\n0 /a add\n0 /a write 0 4096\n10 /a write 4096 4096\n30 /a write 8192 4096\n";
    let b = "fio version 3 iolog\n0 /b add\n0 /b read 0 512\n10 /b read 512 512\n20 /b read 1024 512\n";
    let mk = |t: &'static str, ns| TraceInput::new(reader_for(t.as_bytes(), "x", TraceFormat::FioIolog), "x", ns, 1 << 20);
    let mut m = TraceMerge::new(vec![mk(a, 0).with_write_pid(Pid::new(0, 2)), mk(b, 1)]);
    let v = drain(&mut m);
    let got: Vec<(u32, u64)> = v.iter().map(|io| (io.ns, io.offset)).collect();
    assert_eq!(got, [(0, 0), (1, 0), (0, 4096), (1, 512), (1, 1024), (0, 8192)]);
    assert!(v.iter().filter(|io| io.ns == 0).all(|io| io.pid == Pid::new(0, 2)));
    assert!(v.iter().filter(|io| io.ns == 1).all(|io| io.pid == Pid::NONE));
    assert!(m.error().is_none());
    assert_eq!(m.emitted(), 6);
}

#[test]
fn merge_fixtures_with_filters_and_wrap() {
    let s = summary();
    let n_dev: usize = s["blkparse.keys.8,0"].parse().unwrap();
    let n_hm1: usize = s["msr.keys.hm_1"].parse().unwrap();
    let n_v3: usize = s["iolog_v3.records"].parse().unwrap();
    let small = 1u64 << 30; // smaller than the blkparse offsets: needs wrapping
    let inputs = vec![
        TraceInput::open(&fixture("blkparse.txt"), None, 0, small)
            .unwrap()
            .with_filter("8,0")
            .with_policy(OffsetPolicy::Wrap { align: 4096 }),
        TraceInput::open(&fixture("msr.csv"), None, 1, 4 << 30).unwrap().with_filter("hm_1"),
        TraceInput::open(&fixture("iolog_v3.log"), None, 2, 8 << 30).unwrap(),
    ];
    let mut m = TraceMerge::new(inputs);
    let v = drain(&mut m);
    assert!(m.error().is_none(), "{:?}", m.error());
    let count = |ns| v.iter().filter(|io| io.ns == ns).count();
    assert_eq!((count(0), count(1), count(2)), (n_dev, n_hm1, n_v3));
    assert!(v.iter().filter(|io| io.ns == 0).all(|io| io.offset % 4096 == 0 && io.offset + io.len as u64 <= small));
    // Same inputs, same order: deterministic.
    let again = drain(&mut TraceMerge::new(vec![
        TraceInput::open(&fixture("blkparse.txt"), None, 0, small)
            .unwrap()
            .with_filter("8,0")
            .with_policy(OffsetPolicy::Wrap { align: 4096 }),
        TraceInput::open(&fixture("msr.csv"), None, 1, 4 << 30).unwrap().with_filter("hm_1"),
        TraceInput::open(&fixture("iolog_v3.log"), None, 2, 8 << 30).unwrap(),
    ]));
    assert_eq!(v, again);

    // Without wrapping, the out-of-range I/O stops the merge with a located error.
    let mut m = TraceMerge::new(vec![TraceInput::open(&fixture("blkparse.txt"), None, 0, small).unwrap()]);
    drain(&mut m);
    let e = m.error().expect("offsets beyond 1 GiB must be rejected").to_string();
    assert!(e.contains("blkparse.txt:") && e.contains("beyond namespace"), "{e}");
}

#[test]
fn out_of_range_error_names_the_toml_key() {
    let t = "fio version 3 iolog\n0 /d add\n0 /d write 1048576 4096\n";
    let mut m = TraceMerge::new(vec![TraceInput::new(reader_for(t.as_bytes(), "t.log", TraceFormat::FioIolog), "t.log", 0, 1 << 20)]);
    drain(&mut m);
    let e = m.error().expect("out of range").to_string();
    assert!(e.starts_with("t.log:3:") && e.contains("offsets = \"wrap\"") && e.contains("[[phase.trace]]"), "{e}");
    assert!(e.contains("--full-scale") && !e.contains("OffsetPolicy"), "{e}");
}

#[test]
fn format_detection() {
    assert_eq!(TraceFormat::detect("fio version 2 iolog"), TraceFormat::FioIolog);
    assert_eq!(TraceFormat::detect("128166372003061629,hm,1,Read,3154152448,4096,62766"), TraceFormat::MsrCsv);
    assert_eq!(TraceFormat::detect("  8,0    3        1     0.000000000  1234  Q  WS 1000 + 8 [fio]"), TraceFormat::Blkparse);
}

/// A file under the system temp directory, unique to this test process and `name`.
fn temp_file(name: &str, text: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("wafsim-trace-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

fn records(path: &std::path::Path) -> Vec<TraceRecord> {
    open_trace(path, None).unwrap().map(Result::unwrap).collect()
}

#[test]
fn msr_header_line_is_detected_and_skipped() {
    let body = std::fs::read_to_string(fixture("msr.csv")).unwrap();
    let plain = records(&fixture("msr.csv"));
    for header in [
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n",
        "\u{feff}timestamp, hostname, disknumber, type, offset, size, responsetime\r\n",
        "\n# MSR Cambridge hm_0\nTimestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n",
    ] {
        let p = temp_file("msr-header.csv", format!("{header}{body}").as_bytes());
        let (it, format) = open_trace_detected(&p, None).unwrap();
        assert_eq!(format, TraceFormat::MsrCsv, "{header:?}");
        let with_header: Vec<TraceRecord> = it.map(Result::unwrap).collect();
        assert_eq!(with_header.len(), plain.len(), "{header:?}");
        assert!(with_header.iter().zip(&plain).all(|(a, b)| TraceRecord { line: b.line, ..a.clone() } == *b));
        // An explicit format skips the header too.
        assert_eq!(open_trace(&p, Some(TraceFormat::MsrCsv)).unwrap().count(), plain.len());
    }
    assert_eq!(TraceFormat::detect("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"), TraceFormat::MsrCsv);
    // A header further down is data, and wrong.
    let e = read_all(MsrReader::new("1,hm,0,Write,0,4096,1\nTimestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n".as_bytes(), "m.csv"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("m.csv:2:") && e.contains("Timestamp"), "{e}");
}

#[test]
fn detection_looks_past_blank_and_comment_lines() {
    let lead = "\n  \n# captured on host A\n";
    for (file, format) in [("iolog_v3.log", TraceFormat::FioIolog), ("blkparse.txt", TraceFormat::Blkparse), ("msr.csv", TraceFormat::MsrCsv)] {
        let body = std::fs::read_to_string(fixture(file)).unwrap();
        let p = temp_file(&format!("lead-{file}"), format!("{lead}{body}").as_bytes());
        let (it, got) = open_trace_detected(&p, None).unwrap();
        assert_eq!(got, format, "{file}");
        let n = it.map(Result::unwrap).count();
        assert_eq!(n, records(&fixture(file)).len(), "{file}");
    }
    // Comment lines between records are skipped as well.
    let r = read_all(IologReader::new("fio version 2 iolog\n# c\n/d add\n\n# c\n/d write 0 512\n".as_bytes(), "x")).unwrap();
    assert_eq!(r.len(), 1);
    let r = read_all(MsrReader::new("# c\n1,hm,0,Write,0,4096,1\n# c\n".as_bytes(), "m")).unwrap();
    assert_eq!(r.len(), 1);
}

#[test]
fn unrecognised_first_line_is_an_error() {
    let p = temp_file("garbage.txt", b"\nhello world\n8,0 0 1 0.0 1 Q W 0 + 8 [x]\n");
    let e = open_trace(&p, None).err().expect("must not guess").to_string();
    // The line is not quoted: a file that is no trace may be any file (issue 25, untrusted inputs).
    assert!(e.contains(":2:") && !e.contains("hello world") && e.contains("not shown") && e.contains("format = "), "{e}");
    // With the format given there is nothing to guess.
    assert_eq!(open_trace(&p, Some(TraceFormat::Blkparse)).unwrap().count(), 1);
}

fn merge_error(input: TraceInput) -> String {
    let mut m = TraceMerge::new(vec![input]);
    assert!(drain(&mut m).is_empty());
    m.error().expect("a trace with no I/O must be an error").to_string()
}

#[test]
fn traces_without_records_are_errors() {
    // Empty, or nothing but blank and comment lines: refused when opened.
    for (name, text, why) in [("empty.log", "", "the file is empty"), ("blank.csv", "\n# nothing\n\n", "only blank or comment lines")] {
        let p = temp_file(name, text.as_bytes());
        let e = TraceInput::open(&p, None, 0, 1 << 30).err().expect("empty").to_string();
        assert!(e.starts_with("trace ") && e.contains(name) && e.contains("no I/O records") && e.contains(why), "{e}");
        assert!(matches!(open_trace(&p, Some(TraceFormat::MsrCsv)), Err(TraceError::NoRecords { .. })));
    }
    // Only a header: found when the merge runs dry.
    let p = temp_file("header-only.csv", b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n");
    let e = merge_error(TraceInput::open(&p, None, 0, 1 << 30).unwrap());
    assert!(e.contains("header-only.csv: no I/O records") && e.contains("no data rows"), "{e}");
    let p = temp_file("header-only.log", b"fio version 3 iolog\n0 /d add\n0 /d open\n0 /d close\n");
    let e = merge_error(TraceInput::open(&p, None, 0, 1 << 30).unwrap());
    assert!(e.contains("header-only.log: no I/O records") && e.contains("after the header"), "{e}");
    // A filter that matches nothing names what there is.
    let e = merge_error(TraceInput::open(&fixture("msr.csv"), None, 0, 4 << 30).unwrap().with_filter("hm_9"));
    assert!(e.starts_with("trace ") && e.contains("msr.csv: no I/O records"), "{e}");
    assert!(e.contains("filter \"hm_9\" matched none of 300 records; hosts/disks seen: hm_1, hm_0"), "{e}");
    let e = merge_error(TraceInput::open(&fixture("blkparse.txt"), None, 0, 1 << 40).unwrap().with_filter("8,32"));
    assert!(e.contains("matched none of 100 records; devices (major,minor) seen: 8,0, 8,16"), "{e}");
    // One empty trace among good ones still fails the merge.
    let good = TraceInput::open(&fixture("iolog_v3.log"), None, 0, 8 << 30).unwrap();
    let mut m = TraceMerge::new(vec![good, TraceInput::open(&fixture("msr.csv"), None, 1, 4 << 30).unwrap().with_filter("x")]);
    drain(&mut m);
    assert!(matches!(m.error(), Some(TraceError::NoRecords { .. })), "{:?}", m.error());
}

/// A fixed list of I/Os.
struct ListSource(std::vec::IntoIter<Io>);

impl IoSource for ListSource {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        let before = out.len();
        out.extend(self.0.by_ref().take(max));
        Ok(out.len() - before)
    }
}

fn io(op: Op, offset: u64, len: u32) -> Io {
    Io { op, ns: 0, offset, len, pid: Pid::NONE }
}

#[test]
fn iolog_writer_writes_fio_v3_lines() {
    let mut w = IologWriter::new(Vec::new(), "/dev/nvme0n1").unwrap();
    w.record(999, &io(Op::Write, 0, 4096)).unwrap();
    w.record(3_107_000, &io(Op::Read, 749_568, 4096)).unwrap();
    w.record(3_200_000, &io(Op::Write, 4096, 0)).unwrap(); // zero length: dropped
    w.record(4_000_500, &io(Op::Trim, 1 << 40, u32::MAX)).unwrap();
    let text = String::from_utf8(w.finish().unwrap()).unwrap();
    // The layout of `fio --write_iolog` (fio 3.33, iolog.c log_io_u / log_file): microseconds.
    assert_eq!(
        text,
        "fio version 3 iolog\n0 /dev/nvme0n1 add\n0 /dev/nvme0n1 open\n0 /dev/nvme0n1 write 0 4096\n\
         3107 /dev/nvme0n1 read 749568 4096\n4000 /dev/nvme0n1 trim 1099511627776 4294967295\n4000 /dev/nvme0n1 close\n"
    );
    for bad in ["", "my file", &"x".repeat(257)] {
        assert_eq!(IologWriter::new(Vec::new(), bad).err().map(|e| e.kind()), Some(std::io::ErrorKind::InvalidInput), "{bad:?}");
    }
}

#[test]
fn iolog_writer_round_trips_through_the_reader() {
    let ios: Vec<(u64, Io)> = (0..500u64)
        .map(|i| {
            let op = [Op::Write, Op::Read, Op::Write, Op::Trim][(i % 4) as usize];
            (i * i * 1000, io(op, (i * 7919 % 1000) * 4096, 4096 * (1 + (i % 3) as u32)))
        })
        .collect();
    let mut w = IologWriter::new(Vec::new(), "/tmp/wafsim.file").unwrap();
    for (t, x) in &ios {
        w.record(*t, x).unwrap();
    }
    let text = w.finish().unwrap();
    let back = read_all(IologReader::new(text.as_slice(), "rt.log")).unwrap();
    let got: Vec<(u64, Io)> = back.iter().map(|r| (r.timestamp_ns, io(r.op, r.offset, r.len as u32))).collect();
    assert_eq!(got, ios);
    assert!(back.iter().all(|r| &*r.key == "/tmp/wafsim.file"));
}

#[test]
fn iolog_tee_records_what_the_source_emits() {
    let spec = SyntheticSpec {
        ns: 0,
        ns_bytes: 64 << 20,
        pattern: Pattern::Random(Distribution::Uniform),
        block_size: 16384,
        amount: 16 << 20,
        trim_fraction: 0.1,
        pid: Pid::NONE,
        seed: 7,
    };
    let mut expected = Vec::new();
    let mut plain = Synthetic::new(spec.clone()).unwrap();
    while plain.fill(&mut expected, 100).unwrap() > 0 {}

    let path = std::env::temp_dir().join(format!("wafsim-trace-{}-tee.log", std::process::id()));
    let writer = IologWriter::new(std::fs::File::create(&path).unwrap(), "/dev/nvme0n1").unwrap();
    let mut tee = IologTee::new(Box::new(Synthetic::new(spec).unwrap()), writer);
    let mut passed = Vec::new();
    while tee.fill(&mut passed, 100).unwrap() > 0 {}
    assert!(tee.error().is_none());
    assert_eq!(passed, expected, "the tee must not change the stream");
    drop(tee); // finished when the source ran dry; dropping must not write more

    let back = records(&path);
    assert_eq!(back.len(), expected.len());
    assert!(back.iter().zip(&expected).all(|(r, e)| (r.op, r.offset, r.len, r.timestamp_ns) == (e.op, e.offset, e.len as u64, 0)));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with("0 /dev/nvme0n1 close\n") && text.matches("close").count() == 1, "{}", &text[text.len() - 60..]);

    // Stopped early (a time limit): finish still closes the log.
    let list = ListSource(vec![io(Op::Write, 0, 4096), io(Op::Write, 4096, 4096)].into_iter());
    let mut tee = IologTee::new(Box::new(list), IologWriter::new(Vec::new(), "f").unwrap());
    let mut out = Vec::new();
    assert_eq!(tee.fill(&mut out, 1).unwrap(), 1);
    let text = String::from_utf8(tee.finish().unwrap().expect("log still open")).unwrap();
    assert_eq!(text, "fio version 3 iolog\n0 f add\n0 f open\n0 f write 0 4096\n0 f close\n");

    // A write error stops the recording, not the I/O, and is the tee's error once the I/O
    // runs out.
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let list = ListSource((0..3000).map(|i| io(Op::Write, i * 4096, 4096)).collect::<Vec<_>>().into_iter());
    let mut tee = IologTee::new(Box::new(list), IologWriter::new(Full, "f").unwrap()).named("write_iolog x.log");
    let mut out = Vec::new();
    let err = loop {
        match tee.fill(&mut out, 256) {
            Ok(0) => panic!("the write error must come out of fill"),
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert_eq!(out.len(), 3000);
    assert!(tee.error().is_some());
    assert_eq!(err.to_string(), "write_iolog x.log: disk full");
    assert_eq!(tee.fill(&mut out, 256).unwrap(), 0, "once");

    // Stopped early (a time limit): the runner's finish reports the error the flush met.
    let list = ListSource((0..3000).map(|i| io(Op::Write, i * 4096, 4096)).collect::<Vec<_>>().into_iter());
    let mut tee = IologTee::new(Box::new(list), IologWriter::new(Full, "f").unwrap()).named("write_iolog y.log");
    assert_eq!(tee.fill(&mut out, 16).unwrap(), 16);
    assert_eq!(IoSource::finish(&mut tee).unwrap_err().to_string(), "write_iolog y.log: disk full");
}

/// fio itself accepts what the writer writes (skipped when fio is not installed).
#[test]
fn fio_replays_a_written_iolog() {
    let Ok(v) = std::process::Command::new("fio").arg("--version").output() else {
        eprintln!("fio not found; skipped");
        return;
    };
    assert!(v.status.success());
    let dir = std::env::temp_dir();
    let target = dir.join(format!("wafsim-trace-{}-fio-target", std::process::id()));
    let log = dir.join(format!("wafsim-trace-{}-fio.log", std::process::id()));
    let mut w = IologWriter::new(std::fs::File::create(&log).unwrap(), target.to_str().unwrap()).unwrap();
    for i in 0..64u64 {
        let op = if i % 3 == 0 { Op::Read } else { Op::Write };
        w.record(0, &io(op, (i * 37 % 64) * 4096, 4096)).unwrap();
    }
    w.finish().unwrap();
    let out = std::process::Command::new("fio")
        .args(["--name=replay", "--ioengine=null", "--size=256k", "--output-format=json"])
        .arg(format!("--read_iolog={}", log.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "fio failed: {stderr}");
    assert!(!stderr.contains("bad iolog") && !stderr.contains("bad ddir"), "{stderr}");
    // 64 I/Os of 4 KiB: 22 reads and 42 writes.
    let ios = |dir: &str| -> u64 {
        let at = stdout.find(&format!("\"{dir}\" : {{")).unwrap_or_else(|| panic!("{stdout}"));
        let rest = &stdout[at..];
        let k = rest.find("\"total_ios\" : ").unwrap() + "\"total_ios\" : ".len();
        rest[k..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    assert_eq!((ios("read"), ios("write")), (22, 42), "{stdout}");
    let _ = std::fs::remove_file(&log);
}

mod no_panic {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]
        #[test]
        fn readers_never_panic(text in "[ -~\\n]{0,300}") {
            for f in [TraceFormat::FioIolog, TraceFormat::Blkparse, TraceFormat::MsrCsv] {
                let owned = text.clone().into_bytes();
                for r in reader_for(std::io::Cursor::new(owned), "p", f) {
                    let _ = r;
                }
            }
        }
    }
}
