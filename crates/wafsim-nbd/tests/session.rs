//! End-to-end sessions with the raw test client: handshake options, every command, error values.

mod common;

use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{pattern, Client, Reply, Running};
use wafsim_nbd::proto::*;
use wafsim_nbd::{Config, ConnEnd, ConnStats, Export, ExportMap, FileExport, MemExport, Server};

const MIB: u64 = 1 << 20;

fn two_exports() -> ExportMap {
    ExportMap::new()
        .with("disk", "the main disk", Arc::new(MemExport::new(16 * MIB)))
        .with("small", "", Arc::new(MemExport::new(MIB)))
}

#[test]
fn full_session_simple_replies() {
    let srv = Running::start(two_exports(), Config::default());
    let mut c = Client::connect(srv.addr);

    assert_eq!(c.list(), vec![("disk".into(), "the main disk".into()), ("small".into(), String::new())]);

    // An option this server does not know: ERR_UNSUP, and negotiation continues.
    c.send_option(&ClientOption::Other { option: 0xdead, data: vec![1, 2, 3] });
    let rep = c.read_option_reply();
    assert_eq!(rep.option, 0xdead);
    assert!(matches!(rep.body, ReplyBody::Error { code: NBD_REP_ERR_UNSUP, .. }));

    // STARTTLS in NOTLS mode: refused, not fatal.
    c.send_option(&ClientOption::Other { option: NBD_OPT_STARTTLS, data: vec![] });
    assert!(matches!(c.read_option_reply().body, ReplyBody::Error { code: NBD_REP_ERR_UNSUP, .. }));

    assert_eq!(c.info_or_go(false, "nope", &[]), Err(NBD_REP_ERR_UNKNOWN));

    // INFO on the default export with name, description and block size.
    let infos = c
        .info_or_go(false, "", &[NBD_INFO_NAME, NBD_INFO_DESCRIPTION, NBD_INFO_BLOCK_SIZE, 77])
        .unwrap();
    let flags = NBD_FLAG_HAS_FLAGS
        | NBD_FLAG_SEND_FLUSH
        | NBD_FLAG_SEND_FUA
        | NBD_FLAG_SEND_TRIM
        | NBD_FLAG_SEND_WRITE_ZEROES
        | NBD_FLAG_SEND_CACHE
        | NBD_FLAG_CAN_MULTI_CONN;
    assert!(infos.contains(&InfoReply::Export { size: 16 * MIB, flags }));
    assert!(infos.contains(&InfoReply::Name("disk".into())));
    assert!(infos.contains(&InfoReply::Description("the main disk".into())));
    assert!(infos.contains(&InfoReply::BlockSize(BlockSizes::DEFAULT)));
    assert_eq!(infos.len(), 4);

    let infos = c.go("small");
    assert!(infos.contains(&InfoReply::Export { size: MIB, flags }));
    assert_eq!((c.size, c.flags), (MIB, flags));

    // Write, read back, unwritten reads as zero.
    let data = pattern(1, 64 * 1024);
    assert_eq!(c.write(4096, &data), Reply::Ok(vec![]));
    assert_eq!(c.read(4096, 64 * 1024).data(), data);
    assert_eq!(c.read(128 * 1024, 8192).data(), vec![0u8; 8192]);
    // FUA write, then an unaligned-in-page overwrite (512-byte granularity).
    assert_eq!(c.cmd(Command::Write, NBD_CMD_FLAG_FUA, 512, 512, &[7u8; 512]), Reply::Ok(vec![]));
    assert_eq!(c.read(0, 1024).data(), [vec![0u8; 512], vec![7u8; 512]].concat());

    // Trim and write-zeroes leave zeroes on a MemExport.
    assert_eq!(c.cmd(Command::Trim, 0, 4096, 8192, &[]), Reply::Ok(vec![]));
    assert_eq!(c.read(4096, 8192).data(), vec![0u8; 8192]);
    assert_eq!(c.cmd(Command::WriteZeroes, NBD_CMD_FLAG_NO_HOLE, 12288 + 512, 1024, &[]), Reply::Ok(vec![]));
    let mut expect = data[8192..16384].to_vec();
    expect[512..1536].fill(0);
    assert_eq!(c.read(12288, 8192).data(), expect);
    assert_eq!(c.cmd(Command::WriteZeroes, NBD_CMD_FLAG_FUA, 0, MIB as u32, &[]), Reply::Ok(vec![]));
    assert_eq!(c.read(0, 65536).data(), vec![0u8; 65536]);
    assert_eq!(c.cmd(Command::Flush, 0, 0, 0, &[]), Reply::Ok(vec![]));
    assert_eq!(c.cmd(Command::Cache, 0, 0, 4096, &[]), Reply::Ok(vec![]));

    // Error values per proto.md "Error values".
    let einval = Errno::Inval.code();
    assert_eq!(c.read(MIB - 512, 1024).errno(), Some(einval), "read past end");
    assert_eq!(c.cmd(Command::Trim, 0, MIB, 512, &[]).errno(), Some(einval), "trim past end");
    assert_eq!(c.write(MIB - 512, &[1u8; 1024]).errno(), Some(Errno::NoSpc.code()), "write past end");
    assert_eq!(c.cmd(Command::WriteZeroes, 0, MIB, 512, &[]).errno(), Some(Errno::NoSpc.code()));
    assert_eq!(c.read(u64::MAX - 511, 512).errno(), Some(einval), "offset overflow");
    assert_eq!(c.read(100, 512).errno(), Some(einval), "unaligned offset");
    assert_eq!(c.write(0, &[1u8; 100]).errno(), Some(einval), "unaligned length");
    assert_eq!(c.cmd(Command::Other(42), 0, 0, 0, &[]).errno(), Some(einval), "unknown command");
    assert_eq!(c.cmd(Command::BlockStatus, 0, 0, 4096, &[]).errno(), Some(einval));
    assert_eq!(c.cmd(Command::Read, NBD_CMD_FLAG_NO_HOLE, 0, 512, &[]).errno(), Some(einval), "bad flag");
    assert_eq!(c.cmd(Command::Read, NBD_CMD_FLAG_DF, 0, 512, &[]).errno(), Some(einval), "DF without SR");
    assert_eq!(c.cmd(Command::Write, 1 << 9, 0, 512, &[0u8; 512]).errno(), Some(einval), "unknown flag");
    assert_eq!(c.read(0, 33 * MIB as u32).errno(), Some(einval), "read over max payload");
    // Zero-length requests are harmless.
    assert_eq!(c.read(0, 0), Reply::Ok(vec![]));
    assert_eq!(c.write(0, &[]), Reply::Ok(vec![]));

    // Failed writes must not have stored anything, and the stream is still in sync.
    assert_eq!(c.read(0, 1024).data(), vec![0u8; 1024]);

    c.disc();
    c.expect_closed();
    srv.stop();
}

#[test]
fn structured_replies() {
    let srv = Running::start(two_exports(), Config::default());
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.structured_reply(), ReplyBody::Ack);
    // A second request is refused but harmless.
    assert!(matches!(c.structured_reply(), ReplyBody::Error { code: NBD_REP_ERR_INVALID, .. }));
    c.go("disk");
    assert_ne!(c.flags & NBD_FLAG_SEND_DF, 0);

    let data = pattern(2, 1 << 20);
    assert_eq!(c.write(MIB, &data), Reply::Ok(vec![]));
    assert_eq!(c.read(MIB, 1 << 20).data(), data);
    assert_eq!(c.cmd(Command::Read, NBD_CMD_FLAG_DF, MIB, 4096, &[]).data(), data[..4096].to_vec());
    assert_eq!(c.read(0, 0), Reply::Ok(vec![]));
    match c.read(16 * MIB, 512) {
        Reply::Err(e, msg) => {
            assert_eq!(e, Errno::Inval.code());
            assert!(msg.contains("beyond export size"), "{msg}");
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(c.read(0, 64 * MIB as u32).errno(), Some(Errno::Overflow.code()));
    assert_eq!(c.write(16 * MIB, &[0u8; 512]).errno(), Some(Errno::NoSpc.code()));
    c.disc();
    c.expect_closed();
}

#[test]
fn export_name_option_with_and_without_zero_padding() {
    let srv = Running::start(two_exports(), Config::default());
    for no_zeroes in [false, true] {
        let mut c = Client::connect_with_flags(srv.addr, ClientFlags { fixed_newstyle: true, no_zeroes });
        c.send_option(&ClientOption::ExportName("small".into()));
        let mut b = vec![0u8; ExportNameReply::SIZE + if no_zeroes { 0 } else { EXPORT_NAME_PADDING }];
        c.r.read_exact(&mut b).unwrap();
        let rep = ExportNameReply::decode(&b).unwrap();
        assert_eq!(rep.size, MIB);
        assert!(b[ExportNameReply::SIZE..].iter().all(|&x| x == 0));
        c.size = rep.size;
        assert_eq!(c.write(0, &[9u8; 4096]), Reply::Ok(vec![]));
        assert_eq!(c.read(0, 4096).data(), vec![9u8; 4096]);
        c.disc();
        c.expect_closed();
    }
    // Unknown export: EXPORT_NAME cannot report errors, so the session ends.
    let mut c = Client::connect(srv.addr);
    c.send_option(&ClientOption::ExportName("nope".into()));
    c.expect_closed();
}

#[test]
fn abort_gets_ack_and_close() {
    let srv = Running::start(two_exports(), Config::default());
    let mut c = Client::connect(srv.addr);
    c.send_option(&ClientOption::Abort);
    assert_eq!(c.read_option_reply().body, ReplyBody::Ack);
    c.expect_closed();
}

#[test]
fn read_only_config() {
    let srv = Running::start(two_exports(), Config { read_only: true, ..Config::default() });
    let mut c = Client::ready(srv.addr);
    assert_ne!(c.flags & NBD_FLAG_READ_ONLY, 0);
    assert_eq!(c.flags & (NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES), 0);
    let eperm = Some(Errno::Perm.code());
    assert_eq!(c.write(0, &[1u8; 512]).errno(), eperm);
    assert_eq!(c.cmd(Command::Trim, 0, 0, 512, &[]).errno(), eperm);
    assert_eq!(c.cmd(Command::WriteZeroes, 0, 0, 512, &[]).errno(), eperm);
    assert_eq!(c.read(0, 512).data(), vec![0u8; 512]);
    assert_eq!(c.cmd(Command::Flush, 0, 0, 0, &[]), Reply::Ok(vec![]));
}

#[test]
fn resolver_names_and_block_sizes() {
    let made = Arc::new(AtomicU64::new(0));
    let made2 = made.clone();
    let base: Arc<dyn Export> =
        Arc::new(MemExport::new(8 * MIB).with_block_sizes(BlockSizes { min: 4096, preferred: 4096, max: MIB as u32 }));
    let exports = ExportMap::new().with("base", "", base).with_resolver(move |name| {
        // "ns@N": an N-MiB namespace, made on demand.
        let n: u64 = name.strip_prefix("ns@")?.parse().ok().filter(|&n| n > 0 && n < 64)?;
        made2.fetch_add(1, Ordering::SeqCst);
        Some(Arc::new(MemExport::new(n * MIB)) as Arc<dyn Export>)
    });
    let srv = Running::start(exports, Config { max_request: 256 * 1024, ..Config::default() });

    let mut c = Client::connect(srv.addr);
    assert_eq!(c.list(), vec![("base".into(), String::new())], "resolved names are not listed");
    assert_eq!(c.info_or_go(false, "ns@x", &[]), Err(NBD_REP_ERR_UNKNOWN));
    let infos = c.info_or_go(false, "ns@3", &[NBD_INFO_NAME]).unwrap();
    assert!(infos.contains(&InfoReply::Name("ns@3".into())));
    let infos = c.go("");
    assert!(infos.contains(&InfoReply::BlockSize(BlockSizes { min: 4096, preferred: 4096, max: 256 * 1024 })));
    assert_eq!(c.size, 8 * MIB);
    assert_eq!(c.write(512, &[1u8; 512]).errno(), Some(Errno::Inval.code()), "4 KiB minimum enforced");
    assert_eq!(c.write(0, &vec![1u8; 512 * 1024]).errno(), Some(Errno::Inval.code()), "config max enforced");
    assert_eq!(c.write(4096, &[1u8; 4096]), Reply::Ok(vec![]));

    let mut c = Client::connect(srv.addr);
    c.go("ns@2");
    assert_eq!(c.size, 2 * MIB);
    assert_eq!(made.load(Ordering::SeqCst), 2);
}

#[test]
fn stats_hook_counts() {
    let seen: Arc<Mutex<Vec<ConnStats>>> = Arc::default();
    let seen2 = seen.clone();
    let config = Config {
        on_connection_end: Some(Arc::new(move |s: &ConnStats| seen2.lock().unwrap().push(s.clone()))),
        ..Config::default()
    };
    let srv = Running::start(two_exports(), config);
    let mut c = Client::ready(srv.addr);
    c.write(0, &[1u8; 4096]).data();
    c.write(4096, &[1u8; 8192]).data();
    c.read(0, 4096).data();
    c.read(c.size, 4096).errno().unwrap();
    c.cmd(Command::Flush, 0, 0, 0, &[]).data();
    c.disc();
    c.expect_closed();
    srv.stop();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!((s.writes, s.bytes_written, s.reads, s.bytes_read), (2, 12288, 1, 4096));
    assert_eq!((s.flushes, s.errors, s.options), (1, 1, 1));
    assert_eq!(s.export.as_deref(), Some(""));
    assert_eq!(s.end, ConnEnd::SoftDisconnect);
}

#[test]
fn unix_socket_session() {
    let dir = std::env::temp_dir().join(format!("wafsim-nbd-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("nbd.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let server = Server::new(two_exports(), Config::default());
    let handle = server.shutdown_handle();
    let t = std::thread::spawn(move || server.serve_unix(listener));

    // Same protocol, so drive it through the codec directly.
    let mut s = UnixStream::connect(&path).unwrap();
    let mut g = [0u8; ServerGreeting::SIZE];
    s.read_exact(&mut g).unwrap();
    ServerGreeting::decode(&g).unwrap();
    let mut out = ClientFlags { fixed_newstyle: true, no_zeroes: true }.encode().to_vec();
    ClientOption::Go(InfoRequest { name: "small".into(), requests: vec![] }).encode(&mut out);
    let data = pattern(3, 4096);
    out.extend_from_slice(&Request { flags: 0, command: Command::Write, cookie: 1, offset: 8192, length: 4096 }.encode());
    out.extend_from_slice(&data);
    out.extend_from_slice(&Request { flags: 0, command: Command::Read, cookie: 2, offset: 8192, length: 4096 }.encode());
    out.extend_from_slice(&Request { flags: 0, command: Command::Disc, cookie: 3, offset: 0, length: 0 }.encode());
    std::io::Write::write_all(&mut s, &out).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    // INFO_EXPORT, INFO_BLOCK_SIZE, ACK, then two simple replies.
    let mut pos = 0;
    for _ in 0..3 {
        let (rep, n) = OptionReply::decode(&all[pos..]).unwrap();
        assert_eq!(rep.option, NBD_OPT_GO);
        pos += n;
    }
    assert_eq!(SimpleReply::decode(&all[pos..]).unwrap(), SimpleReply { error: 0, cookie: 1 });
    pos += SimpleReply::SIZE;
    assert_eq!(SimpleReply::decode(&all[pos..]).unwrap(), SimpleReply { error: 0, cookie: 2 });
    pos += SimpleReply::SIZE;
    assert_eq!(&all[pos..], &data[..]);

    handle.shutdown();
    t.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shutdown_closes_idle_connections() {
    let srv = Running::start(two_exports(), Config::default());
    let mut in_handshake = Client::connect(srv.addr);
    let mut in_transmission = Client::ready(srv.addr);
    in_transmission.write(0, &[5u8; 512]).data();
    srv.stop(); // returns only after both connections are gone
    in_handshake.expect_closed();
    in_transmission.expect_closed();
}

#[test]
fn concurrent_clients_on_one_export() {
    let srv = Running::start(two_exports(), Config::default());
    let addr = srv.addr;
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Client::ready(addr);
                for round in 0..50u64 {
                    let off = i * 2 * MIB + (round % 16) * 65536;
                    let data = pattern(i * 1000 + round, 65536);
                    c.write(off, &data).data();
                    assert_eq!(c.read(off, 65536).data(), data);
                }
                c.disc();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let srv = Running::start(two_exports(), Config::default());
    let mut c = Client::ready(srv.addr);
    let cookies: Vec<u64> =
        (0..64u64).map(|i| c.send_request(Command::Write, 0, i * 4096, 4096, &pattern(i, 4096))).collect();
    for ck in cookies {
        assert_eq!(c.read_reply(ck, 0), Reply::Ok(vec![]));
    }
    let cookies: Vec<u64> = (0..64u64).map(|i| c.send_request(Command::Read, 0, i * 4096, 4096, &[])).collect();
    for (i, ck) in cookies.into_iter().enumerate() {
        assert_eq!(c.read_reply(ck, 4096).data(), pattern(i as u64, 4096));
    }
}

#[test]
fn file_export_round_trip() {
    let path = std::env::temp_dir().join(format!("wafsim-nbd-file-{}.img", std::process::id()));
    let export = Arc::new(FileExport::create(&path, 4 * MIB).unwrap());
    let srv = Running::start(ExportMap::new().with("file", "", export), Config::default());
    let mut c = Client::ready(srv.addr);
    assert_eq!(c.size, 4 * MIB);
    let data = pattern(9, 128 * 1024);
    c.cmd(Command::Write, NBD_CMD_FLAG_FUA, 65536, data.len() as u32, &data).data();
    assert_eq!(c.read(65536, data.len() as u32).data(), data);
    c.cmd(Command::WriteZeroes, 0, 65536, 4096, &[]).data();
    c.cmd(Command::Trim, 0, 0, 4096, &[]).data();
    c.cmd(Command::Flush, 0, 0, 0, &[]).data();
    let mut expect = data.clone();
    expect[..4096].fill(0);
    assert_eq!(c.read(65536, data.len() as u32).data(), expect);
    c.disc();
    c.expect_closed();
    srv.stop();
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(&on_disk[65536..65536 + data.len()], &expect[..]);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn mem_export_sparse_semantics() {
    let m = MemExport::new(64 * MIB);
    assert_eq!(m.allocated_bytes(), 0);
    m.write(4096 * 3 + 100, &[1u8; 9000], false).unwrap();
    assert_eq!(m.allocated_bytes(), 3 * 4096);
    // Trim drops whole pages inside the range and zeroes partial ones at its edges.
    m.trim(4096 * 3 + 200, 4096 * 2).unwrap();
    let mut b = vec![0u8; 4096 * 5];
    m.read(4096 * 3, &mut b).unwrap();
    assert!(b[100..200].iter().all(|&x| x == 1));
    assert!(b[200..200 + 8192].iter().all(|&x| x == 0));
    assert!(b[200 + 8192..9100].iter().all(|&x| x == 1));
    assert!(b[9100..].iter().all(|&x| x == 0));
    assert_eq!(m.allocated_bytes(), 2 * 4096, "the one fully covered page is freed");
    // A huge write-zeroes takes the scan path instead of probing every page.
    m.write_zeroes(0, 64 * MIB, false).unwrap();
    assert_eq!(m.allocated_bytes(), 0);
    assert!(m.read(64 * MIB - 512, &mut [0u8; 1024]).is_err());
}

/// The smallest possible export: only size, read and write. Trim, write-zeroes and flush use
/// the trait's defaults, and without `multi_conn` the server must not advertise CAN_MULTI_CONN.
struct VecExport(Mutex<Vec<u8>>);

impl Export for VecExport {
    fn size(&self) -> u64 {
        self.0.lock().unwrap().len() as u64
    }
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), wafsim_nbd::ExportError> {
        let v = self.0.lock().unwrap();
        buf.copy_from_slice(&v[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }
    fn write(&self, offset: u64, data: &[u8], _fua: bool) -> Result<(), wafsim_nbd::ExportError> {
        self.0.lock().unwrap()[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        Ok(())
    }
}

#[test]
fn minimal_export_uses_trait_defaults() {
    let export = Arc::new(VecExport(Mutex::new(vec![0xffu8; 512 * 1024])));
    let srv = Running::start(ExportMap::new().with("v", "", export.clone()), Config::default());
    let mut c = Client::ready(srv.addr);
    assert_eq!(c.flags & NBD_FLAG_CAN_MULTI_CONN, 0);
    c.cmd(Command::WriteZeroes, NBD_CMD_FLAG_FUA, 4096, 200 * 1024, &[]).data();
    c.cmd(Command::Trim, 0, 0, 4096, &[]).data();
    c.cmd(Command::Flush, 0, 0, 0, &[]).data();
    let v = export.0.lock().unwrap();
    assert!(v[..4096].iter().all(|&b| b == 0xff), "default trim leaves data alone");
    assert!(v[4096..4096 + 200 * 1024].iter().all(|&b| b == 0));
    assert!(v[4096 + 200 * 1024..].iter().all(|&b| b == 0xff));
}
