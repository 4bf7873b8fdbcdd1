//! Replay of a CacheBench key-value cache trace (Meta's kvcache traces, CSV), as a
//! [`KvSource`].
//!
//! The format is what CacheBench's `KVReplayGenerator` reads (facebook/CacheLib,
//! `cachelib/cachebench/workload/KVReplayGenerator.h`, `SampleFields` and `parseRequest`): a
//! header line naming the columns, then one request per line. Columns, by name in any order:
//! `op_time,key,key_size,op,op_count,size,cache_hits,ttl` and, in the 202401 files,
//! `usecase,sub_usecase`; `key`, `op` and `size` are required, the rest optional. `op` is GET,
//! GET_LEASE, SET, SET_LEASE or DELETE; `op_count` (default 1) repeats the request that many
//! times, as CacheBench does; `size` is the value size (0 for gets that missed in production).
//! `key` is an anonymised id (hex in Meta's traces); its size is `key_size` when the column is
//! there and larger than the key's text (CacheBench pads the key up to `key_size`), capped at
//! 255 bytes here (CacheBench caps at 256), else the text's length.
//!
//! Requests: a get is [`KvOp::Get`] (whether a miss inserts is the cache's `lookaside`
//! setting; CacheBench's `enableLookaside` is off by default), a set [`KvOp::Update`], a delete
//! [`KvOp::Delete`]. Keys are numbers: the id's hash in the low 56 bits and the key's size in
//! the top byte (the flash cache reads it with `key_size_in_key`). `op_time`, `cache_hits`,
//! `ttl` and the use cases are read past (CacheBench replays at its own rate, and this model has
//! no expiry).
//!
//! Reading: [`KvTrace::open`] reads the whole file once to check it (every bad line is an
//! error naming the file, the line and what was expected) and count its requests; the replay
//! then streams it again with the same bounded line reader as the block traces
//! ([`crate::input::read_line_bounded`]). A file that changes in between so that a line no
//! longer parses ends the replay there, with the reason in [`KvTrace::error`].

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::input::quote;
use crate::kv::{KvOp, KvSource};
use crate::trace::{Lines, TraceError};

/// What one pass over a trace found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvTraceStats {
    /// Data lines.
    pub rows: u64,
    /// Requests after expanding `op_count`.
    pub requests: u64,
    /// Of which gets (GET, GET_LEASE).
    pub gets: u64,
    /// Of which gets of size 0 (production misses).
    pub zero_size_gets: u64,
    /// Of which sets (SET, SET_LEASE).
    pub sets: u64,
    /// Of which deletes.
    pub deletes: u64,
    /// Value bytes of the sets.
    pub set_bytes: u64,
}

/// Column positions of the header.
#[derive(Debug, Clone, Copy)]
struct Columns {
    n: usize,
    key: usize,
    op: usize,
    size: usize,
    key_size: Option<usize>,
    op_count: Option<usize>,
}

const KNOWN: [&str; 10] = ["op_time", "key", "key_size", "op", "op_count", "size", "cache_hits", "ttl", "usecase", "sub_usecase"];

fn parse_header(line: &str, lines: &Lines<impl std::io::BufRead>) -> Result<Columns, TraceError> {
    let names: Vec<&str> = line.trim().split(',').map(str::trim).collect();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        if !KNOWN.contains(n) {
            return Err(lines.error(format!("header column {} is not one of {} (the first line must name the columns, e.g. op_time,key,key_size,op,op_count,size,cache_hits,ttl)", quote(n), KNOWN.join(","))));
        }
        if at.insert(n, i).is_some() {
            return Err(lines.error(format!("header names column {} twice", quote(n))));
        }
    }
    let need = |c: &str| at.get(c).copied().ok_or_else(|| lines.error(format!("header has no {c} column (required: key, op, size)")));
    Ok(Columns { n: names.len(), key: need("key")?, op: need("op")?, size: need("size")?, key_size: at.get("key_size").copied(), op_count: at.get("op_count").copied() })
}

/// The number of a key: a hex id of up to 16 digits read as a number, anything else hashed
/// (FNV-1a); then mixed, 56 bits kept, the key's size in the top byte.
fn key_number(text: &str, size: u32) -> u64 {
    let id = if !text.is_empty() && text.len() <= 16 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        u64::from_str_radix(text, 16).unwrap_or(0)
    } else {
        text.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01B3))
    };
    let mut z = id.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((size.clamp(1, 255) as u64) << 56) | (z & ((1 << 56) - 1))
}

/// One request and its repeat count.
fn parse_row(line: &str, cols: &Columns, lines: &Lines<impl std::io::BufRead>) -> Result<(KvOp, u64), TraceError> {
    let f: Vec<&str> = line.trim().split(',').map(str::trim).collect();
    if f.len() != cols.n {
        return Err(lines.error(format!("expected {} comma-separated fields as the header names, found {}", cols.n, f.len())));
    }
    let num = |i: usize, what: &str| -> Result<u64, TraceError> { f[i].parse::<u64>().map_err(|_| lines.error(format!("{what} {} is not an unsigned integer", quote(f[i])))) };
    let key = f[cols.key];
    if key.is_empty() {
        return Err(lines.error("key is empty".into()));
    }
    let mut key_bytes = key.len() as u64;
    if let Some(i) = cols.key_size {
        if !f[i].is_empty() {
            key_bytes = key_bytes.max(num(i, "key_size")?);
        }
    }
    let size = num(cols.size, "size")?;
    let bytes = u32::try_from(size).map_err(|_| lines.error(format!("size {size} is larger than 4 GiB")))?;
    let count = match cols.op_count {
        Some(i) if !f[i].is_empty() => match num(i, "op_count")? {
            0 => return Err(lines.error("op_count 0: expected a count of at least 1".into())),
            n => n,
        },
        _ => 1,
    };
    let key = key_number(key, key_bytes.min(255) as u32);
    let op = match f[cols.op] {
        "GET" | "GET_LEASE" => KvOp::Get { key, bytes },
        "SET" | "SET_LEASE" => KvOp::Update { key, bytes },
        "DELETE" => KvOp::Delete { key },
        other => return Err(lines.error(format!("op {} is not GET, GET_LEASE, SET, SET_LEASE or DELETE", quote(other)))),
    };
    Ok((op, count))
}

/// Streaming reader of one pass.
struct Pass {
    lines: Lines<BufReader<std::fs::File>>,
    cols: Option<Columns>,
}

impl Pass {
    fn open(path: &Path) -> Result<Pass, TraceError> {
        let name = path.display().to_string();
        let file = crate::input::open_regular(path).map_err(|e| TraceError::Io { file: name.clone(), message: e.to_string() })?;
        Ok(Pass { lines: Lines::new(BufReader::with_capacity(1 << 20, file), &name), cols: None })
    }

    /// The next request and its count; `None` at the end.
    fn next(&mut self) -> Result<Option<(KvOp, u64)>, TraceError> {
        loop {
            if !self.lines.advance()? {
                return Ok(None);
            }
            let line = self.lines.buf.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            match &self.cols {
                None => {
                    let cols = parse_header(line, &self.lines)?;
                    self.cols = Some(cols);
                }
                Some(cols) => return parse_row(line, cols, &self.lines).map(Some),
            }
        }
    }
}

/// A kvcache trace as requests.
pub struct KvTrace {
    path: PathBuf,
    pass: Option<Pass>,
    pending: Option<(KvOp, u64)>,
    stats: KvTraceStats,
    issued: u64,
    error: Option<TraceError>,
}

impl KvTrace {
    /// Check the trace at `path` (one full pass) and get ready to replay it.
    pub fn open(path: &Path) -> Result<KvTrace, TraceError> {
        let mut pass = Pass::open(path)?;
        let mut s = KvTraceStats::default();
        while let Some((op, n)) = pass.next()? {
            s.rows += 1;
            s.requests = s.requests.saturating_add(n);
            match op {
                KvOp::Get { bytes, .. } => {
                    s.gets += n;
                    if bytes == 0 {
                        s.zero_size_gets += n;
                    }
                }
                KvOp::Update { bytes, .. } => {
                    s.sets += n;
                    s.set_bytes = s.set_bytes.saturating_add(n.saturating_mul(bytes as u64));
                }
                _ => s.deletes += n,
            }
        }
        if pass.cols.is_none() {
            return Err(TraceError::NoRecords { file: path.display().to_string(), reason: "no header line (op_time,key,key_size,op,op_count,size,cache_hits,ttl)".into() });
        }
        if s.rows == 0 {
            return Err(TraceError::NoRecords { file: path.display().to_string(), reason: "a header but no requests".into() });
        }
        Ok(KvTrace { path: path.to_path_buf(), pass: None, pending: None, stats: s, issued: 0, error: None })
    }

    /// What the checking pass found.
    pub fn stats(&self) -> &KvTraceStats {
        &self.stats
    }

    /// Requests handed out so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// Why the replay ended early, if it did (the file changed after it was checked).
    pub fn error(&self) -> Option<&TraceError> {
        self.error.as_ref()
    }

    fn next_request(&mut self) -> Option<KvOp> {
        loop {
            if let Some((op, n)) = &mut self.pending {
                let op = *op;
                *n -= 1;
                if *n == 0 {
                    self.pending = None;
                }
                return Some(op);
            }
            if self.error.is_some() {
                return None;
            }
            if self.pass.is_none() {
                match Pass::open(&self.path) {
                    Ok(p) => self.pass = Some(p),
                    Err(e) => {
                        self.error = Some(e);
                        return None;
                    }
                }
            }
            match self.pass.as_mut().expect("opened").next() {
                Ok(Some(r)) => self.pending = Some(r),
                Ok(None) => return None,
                Err(e) => {
                    self.error = Some(e);
                    return None;
                }
            }
        }
    }
}

impl KvSource for KvTrace {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some(op) = self.next_request() else { break };
            out.push(op);
            n += 1;
        }
        self.issued += n as u64;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wafsim-kvtrace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn all(t: &mut KvTrace) -> Vec<KvOp> {
        let mut v = Vec::new();
        while t.fill(&mut v, 3) > 0 {}
        v
    }

    #[test]
    fn replays_requests_with_their_counts_and_key_sizes() {
        // The first rows of CacheLib's sample trace (kv_traces_1.csv), shortened.
        let p = write(
            "ok.csv",
            "op_time,key,key_size,op,op_count,size,cache_hits,ttl,usecase,sub_usecase\n\
             604038471,82131353f9ddc8c6,48,GET,1,87,1,0,366387042,3003229276\n\
             604038471,a54f88ab02ece24d,24,GET,3,0,0,0,699950563,699950563\n\
             \n\
             604038473,828769c1e1ce3a29,67,SET,1,65,0,7200,2777918327,655456894\n\
             604038476,db993c1d94a28a9b,65,DELETE,2,0,0,0,2777918327,2497741817\n\
             604038474,749ab7237b8d0372,47,GET_LEASE,1,10,1,0,176962275,176962275\n",
        );
        let mut t = KvTrace::open(&p).unwrap();
        assert_eq!(t.stats(), &KvTraceStats { rows: 5, requests: 8, gets: 5, zero_size_gets: 3, sets: 1, deletes: 2, set_bytes: 65 });
        let ops = all(&mut t);
        assert_eq!(ops.len(), 8);
        let k = |text: &str, size: u32| key_number(text, size);
        assert_eq!(ops[0], KvOp::Get { key: k("82131353f9ddc8c6", 48), bytes: 87 });
        assert_eq!(&ops[1..4], &[KvOp::Get { key: k("a54f88ab02ece24d", 24), bytes: 0 }; 3]);
        assert_eq!(ops[4], KvOp::Update { key: k("828769c1e1ce3a29", 67), bytes: 65 });
        assert_eq!(&ops[5..7], &[KvOp::Delete { key: k("db993c1d94a28a9b", 65) }; 2]);
        assert_eq!(ops[7], KvOp::Get { key: k("749ab7237b8d0372", 47), bytes: 10 });
        assert_eq!(ops[4], KvOp::Update { key: (67u64 << 56) | (k("828769c1e1ce3a29", 67) & ((1 << 56) - 1)), bytes: 65 });
        assert_eq!(t.issued(), 8);
        assert!(t.error().is_none());
        // The key's text is its size when there is no key_size column (16 hex digits).
        let p = write("min.csv", "key,op,size\nabc,SET,5\n");
        let ops = all(&mut KvTrace::open(&p).unwrap());
        assert_eq!(ops, vec![KvOp::Update { key: k("abc", 3), bytes: 5 }]);
    }

    #[test]
    fn bad_input_names_the_file_line_and_what_was_expected() {
        let err = |name: &str, text: &str| KvTrace::open(&write(name, text)).err().expect("an error").to_string();
        let h = "op_time,key,key_size,op,op_count,size,cache_hits,ttl\n";
        let e = err("op.csv", &format!("{h}1,aa,16,GET,1,5,0,0\n2,bb,16,PUT,1,5,0,0\n"));
        assert!(e.contains("op.csv:3:") && e.contains("op \"PUT\" is not GET, GET_LEASE, SET, SET_LEASE or DELETE"), "{e}");
        let e = err("fields.csv", &format!("{h}1,aa,16,GET,1,5\n"));
        assert!(e.contains("fields.csv:2:") && e.contains("expected 8 comma-separated fields"), "{e}");
        let e = err("size.csv", &format!("{h}1,aa,16,GET,1,-5,0,0\n"));
        assert!(e.contains("size.csv:2:") && e.contains("size \"-5\" is not an unsigned integer"), "{e}");
        let e = err("count.csv", &format!("{h}1,aa,16,GET,0,5,0,0\n"));
        assert!(e.contains("op_count 0"), "{e}");
        let e = err("header.csv", "1,aa,16,GET,1,5,0,0\n");
        assert!(e.contains("header.csv:1:") && e.contains("header column \"1\""), "{e}");
        let e = err("nokey.csv", "op_time,op,size\n1,GET,5\n");
        assert!(e.contains("no key column"), "{e}");
        let e = err("empty.csv", "\n\n");
        assert!(e.contains("no header line"), "{e}");
        let e = err("norows.csv", h);
        assert!(e.contains("no requests"), "{e}");
        let e = KvTrace::open(Path::new("/nonexistent/trace.csv")).err().unwrap().to_string();
        assert!(e.contains("/nonexistent/trace.csv"), "{e}");
    }
}
