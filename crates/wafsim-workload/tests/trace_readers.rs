//! Trace readers and merge, checked against the expectations written by
//! scripts/gen_trace_fixtures.py (tests/fixtures/summary.txt).

use std::collections::HashMap;
use std::path::PathBuf;

use wafsim_core::{Io, Op, Pid};
use wafsim_workload::trace::{
    blkparse::BlkparseReader, iolog::IologReader, msr::MsrReader, open_trace, reader_for, OffsetPolicy, TraceError,
    TraceFormat, TraceInput, TraceMerge, TraceRecord,
};
use wafsim_workload::IoSource;

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

fn drain(m: &mut TraceMerge) -> Vec<Io> {
    let mut v = Vec::new();
    while m.fill(&mut v, 7) > 0 {}
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
fn format_detection() {
    assert_eq!(TraceFormat::detect("fio version 2 iolog"), TraceFormat::FioIolog);
    assert_eq!(TraceFormat::detect("128166372003061629,hm,1,Read,3154152448,4096,62766"), TraceFormat::MsrCsv);
    assert_eq!(TraceFormat::detect("  8,0    3        1     0.000000000  1234  Q  WS 1000 + 8 [fio]"), TraceFormat::Blkparse);
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
