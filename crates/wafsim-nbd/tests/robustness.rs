//! Broken clients end only their own connection. Every test keeps a well-behaved "witness"
//! client connected across the misbehaviour and checks it still reads back what it wrote.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex};

use common::{pattern, Client, Reply, Running};
use wafsim_nbd::proto::*;
use wafsim_nbd::{Config, ConnEnd, ConnStats, ExportMap, MemExport};

const MIB: u64 = 1 << 20;

struct Fixture {
    srv: Running,
    witness: Client,
    round: u64,
    ends: Arc<Mutex<Vec<ConnStats>>>,
}

impl Fixture {
    fn new() -> Fixture {
        let ends: Arc<Mutex<Vec<ConnStats>>> = Arc::default();
        let e2 = ends.clone();
        let config = Config {
            max_request: MIB as u32,
            on_connection_end: Some(Arc::new(move |s: &ConnStats| e2.lock().unwrap().push(s.clone()))),
            ..Config::default()
        };
        let srv = Running::start(ExportMap::new().with("d", "", Arc::new(MemExport::new(8 * MIB))), config);
        let mut witness = Client::ready(srv.addr);
        witness.write(0, &pattern(0, 4096)).data();
        Fixture { srv, witness, round: 0, ends }
    }

    /// The witness still works, and a fresh client can still connect.
    #[track_caller]
    fn check(&mut self) {
        self.round += 1;
        let off = self.round * 4096;
        let data = pattern(self.round, 4096);
        assert_eq!(self.witness.write(off, &data), Reply::Ok(vec![]));
        assert_eq!(self.witness.read(off, 4096).data(), data);
        assert_eq!(self.witness.read(0, 4096).data(), pattern(0, 4096));
        let mut fresh = Client::ready(self.srv.addr);
        assert_eq!(fresh.read(off, 4096).data(), data);
        fresh.disc();
        fresh.expect_closed();
    }

    fn raw(&self) -> TcpStream {
        self.srv.connect()
    }

    /// A raw connection that has completed the greeting and GO to the export.
    fn raw_ready(&self) -> (Client, TcpStream) {
        let c = Client::ready(self.srv.addr);
        let s = c.w.try_clone().unwrap();
        (c, s)
    }

    /// Waits until the server has closed the connection and reports how it ended.
    fn last_end(&self, stream: &mut TcpStream) -> ConnEnd {
        let me = stream.local_addr().unwrap().to_string();
        let _ = stream.read_to_end(&mut Vec::new());
        // The hook runs just before the socket closes; give it a moment to be recorded.
        for _ in 0..400 {
            if let Some(s) = self.ends.lock().unwrap().iter().find(|s| s.peer == me) {
                return s.end.clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("end of connection {me} not recorded")
    }
}

fn is_protocol(e: &ConnEnd) -> bool {
    matches!(e, ConnEnd::Protocol(_))
}

#[test]
fn bad_client_flags_closes_connection() {
    let mut f = Fixture::new();
    let mut s = f.raw();
    let mut g = [0u8; ServerGreeting::SIZE];
    s.read_exact(&mut g).unwrap();
    s.write_all(&0x8000_0001u32.to_be_bytes()).unwrap();
    assert!(is_protocol(&f.last_end(&mut s)));
    f.check();
}

#[test]
fn bad_option_magic_closes_connection() {
    let mut f = Fixture::new();
    let mut c = Client::connect(f.srv.addr);
    c.w.write_all(b"NOTMAGIC\0\0\0\x07\0\0\0\0").unwrap();
    c.expect_closed();
    f.check();
}

#[test]
fn unknown_and_malformed_options_are_errors_not_disconnects() {
    let mut f = Fixture::new();
    let mut c = Client::connect(f.srv.addr);
    for opt in [0u32, 4, 9, 10, 11, 12, 0xffff_ffff] {
        c.send_option(&ClientOption::Other { option: opt, data: pattern(opt.into(), 37) });
        let rep = c.read_option_reply();
        assert_eq!(rep.option, opt);
        assert!(matches!(rep.body, ReplyBody::Error { code: NBD_REP_ERR_UNSUP, .. }), "{rep:?}");
    }
    // Malformed GO/INFO/LIST data: ERR_INVALID.
    let malformed: [(u32, Vec<u8>); 5] = [
        (NBD_OPT_GO, vec![0, 0, 0, 9, b'x']),                 // name longer than data
        (NBD_OPT_INFO, vec![0, 0, 0, 0, 0, 2, 0, 3]),         // count says 2, one present
        (NBD_OPT_GO, vec![0, 0, 0, 1, 0xff, 0, 0]),           // name not UTF-8
        (NBD_OPT_LIST, vec![1]),                              // LIST takes no data
        (NBD_OPT_STRUCTURED_REPLY, vec![0, 0]),               // nor does STRUCTURED_REPLY
    ];
    for (opt, data) in malformed {
        let mut out = OptionHeader { option: opt, length: data.len() as u32 }.encode().to_vec();
        out.extend_from_slice(&data);
        c.w.write_all(&out).unwrap();
        let rep = c.read_option_reply();
        assert!(matches!(rep.body, ReplyBody::Error { code: NBD_REP_ERR_INVALID, .. }), "{opt}: {rep:?}");
    }
    // A too-long export name: ERR_TOO_BIG.
    let mut data = 5000u32.to_be_bytes().to_vec();
    data.extend(std::iter::repeat_n(b'a', 5000));
    data.extend_from_slice(&[0, 0]);
    let mut out = OptionHeader { option: NBD_OPT_INFO, length: data.len() as u32 }.encode().to_vec();
    out.extend_from_slice(&data);
    c.w.write_all(&out).unwrap();
    assert!(matches!(c.read_option_reply().body, ReplyBody::Error { code: NBD_REP_ERR_TOO_BIG, .. }));
    // Option data over the buffer cap but under the skip cap: drained, ERR_TOO_BIG.
    let mut out = OptionHeader { option: 0x1234, length: 200_000 }.encode().to_vec();
    out.extend(vec![0u8; 200_000]);
    c.w.write_all(&out).unwrap();
    assert!(matches!(c.read_option_reply().body, ReplyBody::Error { code: NBD_REP_ERR_TOO_BIG, .. }));
    // After all that the session still negotiates and works.
    c.go("d");
    c.write(MIB, &[3u8; 512]).data();
    assert_eq!(c.read(MIB, 512).data(), vec![3u8; 512]);
    f.check();

    // Absurd option length: hard disconnect.
    let mut c = Client::connect(f.srv.addr);
    c.w.write_all(&OptionHeader { option: 0x1234, length: u32::MAX }.encode()).unwrap();
    c.expect_closed();
    // A malformed EXPORT_NAME cannot be answered with an error: hard disconnect.
    let mut c = Client::connect(f.srv.addr);
    c.w.write_all(&OptionHeader { option: NBD_OPT_EXPORT_NAME, length: 2 }.encode()).unwrap();
    c.w.write_all(&[b'a', 0]).unwrap();
    c.expect_closed();
    f.check();
}

#[test]
fn truncated_handshake_and_requests() {
    let mut f = Fixture::new();
    // Greeting read, then gone.
    let s = f.raw();
    drop(s);
    f.check();
    // Half the client flags.
    let mut s = f.raw();
    s.write_all(&[0, 0]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert!(is_protocol(&f.last_end(&mut s)));
    f.check();
    // Option header cut short.
    let mut c = Client::connect(f.srv.addr);
    c.w.write_all(&OptionHeader { option: NBD_OPT_GO, length: 40 }.encode()[..10]).unwrap();
    c.w.shutdown(Shutdown::Write).unwrap();
    c.expect_closed();
    f.check();
    // Option data cut short.
    let mut c = Client::connect(f.srv.addr);
    c.w.write_all(&OptionHeader { option: NBD_OPT_GO, length: 40 }.encode()).unwrap();
    c.w.write_all(&[0u8; 12]).unwrap();
    c.w.shutdown(Shutdown::Write).unwrap();
    c.expect_closed();
    f.check();
    // Request header cut short.
    let (mut c, mut s) = f.raw_ready();
    let req = Request { flags: 0, command: Command::Read, cookie: 1, offset: 0, length: 512 };
    s.write_all(&req.encode()[..13]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    c.expect_closed();
    assert!(is_protocol(&f.last_end(&mut s)));
    f.check();
}

#[test]
fn disconnect_mid_write_payload_stores_nothing() {
    let mut f = Fixture::new();
    let (mut c, mut s) = f.raw_ready();
    let req = Request { flags: 0, command: Command::Write, cookie: 1, offset: 2 * MIB, length: 65536 };
    s.write_all(&req.encode()).unwrap();
    s.write_all(&[0xAA; 30000]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    c.expect_closed();
    assert!(is_protocol(&f.last_end(&mut s)));
    // Nothing was applied: the write never completed.
    assert_eq!(f.witness.read(2 * MIB, 65536).data(), vec![0u8; 65536]);
    f.check();
    // And abruptly (RST) in the middle of the payload, with no shutdown.
    let (c, mut s) = f.raw_ready();
    s.write_all(&req.encode()).unwrap();
    s.write_all(&[0xAA; 1000]).unwrap();
    drop(c);
    drop(s);
    f.check();
}

#[test]
fn bad_request_magic_closes_connection() {
    let mut f = Fixture::new();
    let (mut c, mut s) = f.raw_ready();
    let mut b = Request { flags: 0, command: Command::Read, cookie: 1, offset: 0, length: 512 }.encode();
    b[0] ^= 0xff;
    s.write_all(&b).unwrap();
    c.expect_closed();
    assert!(is_protocol(&f.last_end(&mut s)));
    f.check();
}

#[test]
fn oversized_lengths() {
    let mut f = Fixture::new();
    let (mut c, _) = f.raw_ready();
    // Write just over the 1 MiB maximum: payload drained, EINVAL, stream still in sync.
    let big = vec![0x55u8; MIB as usize + 4096];
    assert_eq!(c.write(0, &big).errno(), Some(Errno::Inval.code()));
    assert_eq!(c.read(0, 4096).data(), pattern(0, 4096), "nothing written");
    // Read over the maximum: EINVAL with simple replies.
    assert_eq!(c.read(0, 2 * MIB as u32).errno(), Some(Errno::Inval.code()));
    // Trim / write-zeroes have no payload; lengths over the maximum are fine if in range.
    assert_eq!(c.cmd(Command::Trim, 0, 4 * MIB, 4 * MIB as u32, &[]), Reply::Ok(vec![]));
    assert_eq!(c.cmd(Command::WriteZeroes, 0, 4 * MIB, 4 * MIB as u32, &[]), Reply::Ok(vec![]));
    assert_eq!(c.cmd(Command::Trim, 0, 0, !511u32, &[]).errno(), Some(Errno::Inval.code()));
    c.disc();
    c.expect_closed();
    f.check();
    // A write header announcing ~4 GiB: the server will not drain that, it hangs up.
    let (mut c, mut s) = f.raw_ready();
    c.send_request(Command::Write, 0, 0, u32::MAX, &[1, 2, 3]);
    c.expect_closed();
    assert!(is_protocol(&f.last_end(&mut s)));
    f.check();
}

#[test]
fn out_of_range_offsets() {
    let mut f = Fixture::new();
    let (mut c, _) = f.raw_ready();
    let size = c.size;
    for off in [size, size + 512, u64::MAX - 511, !511u64, 1 << 63] {
        assert_eq!(c.read(off, 512).errno(), Some(Errno::Inval.code()), "read at {off}");
        assert_eq!(c.write(off, &[1u8; 512]).errno(), Some(Errno::NoSpc.code()), "write at {off}");
        assert_eq!(c.cmd(Command::Trim, 0, off, 512, &[]).errno(), Some(Errno::Inval.code()));
        assert_eq!(c.cmd(Command::WriteZeroes, 0, off, 512, &[]).errno(), Some(Errno::NoSpc.code()));
        assert_eq!(c.cmd(Command::Cache, 0, off, 512, &[]).errno(), Some(Errno::Inval.code()));
    }
    // Straddling the end.
    assert_eq!(c.read(size - 512, 1024).errno(), Some(Errno::Inval.code()));
    assert_eq!(c.read(size - 512, 512).data(), vec![0u8; 512]);
    f.check();
}

/// xorshift, so failures reproduce.
fn garbage(seed: u64, len: usize) -> Vec<u8> {
    pattern(seed ^ 0xdead_beef, len)
}

#[test]
fn garbage_streams() {
    let mut f = Fixture::new();
    for seed in 0..20u64 {
        // Instead of client flags.
        let mut s = f.raw();
        let _ = s.write_all(&garbage(seed, 4096));
        let _ = s.shutdown(Shutdown::Write);
        let _ = s.read_to_end(&mut Vec::new());
        // After a valid greeting, instead of options (IHAVEOPT prefix makes some parse further).
        let mut c = Client::connect(f.srv.addr);
        let mut g = if seed % 2 == 0 { IHAVEOPT.to_be_bytes().to_vec() } else { vec![] };
        g.extend(garbage(seed + 100, 2048));
        let _ = c.w.write_all(&g);
        let _ = c.w.shutdown(Shutdown::Write);
        let _ = c.r.read_to_end(&mut Vec::new());
        // In transmission, after some valid requests.
        let (mut c, _) = f.raw_ready();
        c.write(3 * MIB, &[1u8; 512]).data();
        let mut g = if seed % 2 == 0 { NBD_REQUEST_MAGIC.to_be_bytes().to_vec() } else { vec![] };
        g.extend(garbage(seed + 200, 8192));
        let _ = c.w.write_all(&g);
        let _ = c.w.shutdown(Shutdown::Write);
        let _ = c.r.read_to_end(&mut Vec::new());
    }
    f.check();
    // A well-formed-looking request stream with random fields (valid magic, random everything
    // else) exercises every validation branch; the server must answer or hang up, never stall.
    for seed in 0..20u64 {
        let (mut c, _) = f.raw_ready();
        let mut out = Vec::new();
        for i in 0..50u64 {
            let g = garbage(seed * 1000 + i, 24);
            let req = Request {
                flags: u16::from_be_bytes([g[0] & 0x1f, g[1] & 0x1f]),
                command: Command::from_code(u16::from(g[2] % 10)),
                cookie: i,
                offset: u64::from_be_bytes(g[3..11].try_into().unwrap()) % (16 * MIB),
                length: u32::from_be_bytes(g[11..15].try_into().unwrap()) % (2 * MIB as u32),
            };
            out.extend_from_slice(&req.encode());
            if req.command == Command::Write {
                out.extend(vec![0u8; req.length as usize]);
            }
        }
        let w = c.w.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            let mut w = w;
            let _ = w.write_all(&out);
            let _ = w.shutdown(Shutdown::Write);
        });
        let _ = c.r.read_to_end(&mut Vec::new());
        writer.join().unwrap();
    }
    f.check();
}

/// Beyond `max_connections` a client is told why during the handshake (NBD_REP_ERR_POLICY with
/// a message), and served again once a connection ends.
#[test]
fn connections_beyond_the_limit_are_refused_politely() {
    let config = Config { max_connections: 2, ..Config::default() };
    let srv = Running::start(ExportMap::new().with("d", "", Arc::new(MemExport::new(8 * MIB))), config);
    let mut a = Client::ready(srv.addr);
    let b = Client::ready(srv.addr);
    let mut c = Client::connect(srv.addr);
    c.send_option(&ClientOption::Go(InfoRequest { name: "".into(), requests: vec![] }));
    let rep = c.read_option_reply();
    match rep.body {
        ReplyBody::Error { code, message } => {
            assert_eq!(code, NBD_REP_ERR_POLICY);
            assert!(message.contains("too many connections") && message.contains("at most 2"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    drop(c);
    // The served ones still work; once one ends, a new client is served.
    assert_eq!(a.write(0, &pattern(1, 4096)), Reply::Ok(vec![]));
    drop(b);
    let mut ok = None;
    for _ in 0..200 {
        let mut d = Client::connect(srv.addr);
        if d.info_or_go(true, "", &[]).is_ok() {
            ok = Some(d);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut d = ok.expect("a client is served again after one left");
    assert_eq!(d.read(0, 4096).data(), pattern(1, 4096));
}

/// A client that connects and never completes the handshake is disconnected after the
/// handshake timeout; one in transmission may stay idle.
#[test]
fn a_silent_client_is_disconnected_after_the_handshake_timeout() {
    let config = Config { handshake_timeout: Some(std::time::Duration::from_millis(300)), ..Config::default() };
    let srv = Running::start(ExportMap::new().with("d", "", Arc::new(MemExport::new(8 * MIB))), config);
    let mut idle_ready = Client::ready(srv.addr);
    let mut silent = srv.connect();
    silent.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let t0 = std::time::Instant::now();
    let mut all = Vec::new();
    let _ = silent.read_to_end(&mut all);
    let took = t0.elapsed();
    assert!(took < std::time::Duration::from_secs(5), "the silent client was held {took:?}");
    // Only the greeting reached it.
    assert_eq!(all.len(), 18, "{all:?}");
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(idle_ready.write(0, &pattern(2, 4096)), Reply::Ok(vec![]));
}
