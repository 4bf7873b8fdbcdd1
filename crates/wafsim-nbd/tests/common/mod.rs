//! A small blocking NBD client over raw std sockets, built on the crate's codec, plus helpers to
//! run a server on an ephemeral loopback port.

#![allow(dead_code)]

use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use wafsim_nbd::proto::*;
use wafsim_nbd::{Config, Exports, Server, ShutdownHandle};

/// A server running on its own thread; shut down and joined on drop.
pub struct Running {
    pub addr: SocketAddr,
    pub handle: ShutdownHandle,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Running {
    pub fn start(exports: impl Exports + 'static, config: Config) -> Running {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Server::new(exports, config);
        let handle = server.shutdown_handle();
        let thread = std::thread::spawn(move || server.serve_tcp(listener));
        Running { addr, handle, thread: Some(thread) }
    }

    /// Shuts down and waits for the accept loop and all connections.
    pub fn stop(mut self) {
        self.handle.shutdown();
        self.thread.take().unwrap().join().unwrap().unwrap();
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.handle.shutdown();
            let _ = t.join();
        }
    }
}

/// A reply to one request: data on success, error value otherwise (plus the message of a
/// structured error chunk).
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Ok(Vec<u8>),
    Err(u32, String),
}

impl Reply {
    pub fn errno(&self) -> Option<u32> {
        match self {
            Reply::Ok(_) => None,
            Reply::Err(e, _) => Some(*e),
        }
    }
    #[track_caller]
    pub fn data(self) -> Vec<u8> {
        match self {
            Reply::Ok(d) => d,
            Reply::Err(e, m) => panic!("request failed with error {e}: {m}"),
        }
    }
}

pub struct Client {
    pub r: BufReader<TcpStream>,
    pub w: TcpStream,
    pub structured: bool,
    pub size: u64,
    pub flags: u16,
    cookie: u64,
}

impl Client {
    /// Connects and completes the greeting (fixed newstyle + no zeroes), ready for options.
    pub fn connect(addr: SocketAddr) -> Client {
        Self::connect_with_flags(addr, ClientFlags { fixed_newstyle: true, no_zeroes: true })
    }

    pub fn connect_with_flags(addr: SocketAddr, flags: ClientFlags) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.set_nodelay(true).unwrap();
        let mut c = Client { r: BufReader::new(s.try_clone().unwrap()), w: s, structured: false, size: 0, flags: 0, cookie: 0 };
        let mut g = [0u8; ServerGreeting::SIZE];
        c.r.read_exact(&mut g).unwrap();
        let g = ServerGreeting::decode(&g).unwrap();
        assert_eq!(g.flags, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
        c.w.write_all(&flags.encode()).unwrap();
        c
    }

    pub fn send_option(&mut self, opt: &ClientOption) {
        let mut out = Vec::new();
        opt.encode(&mut out);
        self.w.write_all(&out).unwrap();
    }

    pub fn read_option_reply(&mut self) -> OptionReply {
        let mut h = [0u8; OptionReplyHeader::SIZE];
        self.r.read_exact(&mut h).unwrap();
        let h = OptionReplyHeader::decode(&h).unwrap();
        let mut data = vec![0u8; h.length as usize];
        self.r.read_exact(&mut data).unwrap();
        OptionReply::decode_body(&h, &data).unwrap()
    }

    pub fn list(&mut self) -> Vec<(String, String)> {
        self.send_option(&ClientOption::List);
        let mut out = Vec::new();
        loop {
            let rep = self.read_option_reply();
            assert_eq!(rep.option, NBD_OPT_LIST);
            match rep.body {
                ReplyBody::Server { name, description } => out.push((name, description)),
                ReplyBody::Ack => return out,
                other => panic!("unexpected list reply {other:?}"),
            }
        }
    }

    pub fn structured_reply(&mut self) -> ReplyBody {
        self.send_option(&ClientOption::StructuredReply);
        let rep = self.read_option_reply();
        if rep.body == ReplyBody::Ack {
            self.structured = true;
        }
        rep.body
    }

    /// INFO or GO; `Ok(infos)` if the answer ended in ACK, else the error reply type.
    pub fn info_or_go(&mut self, go: bool, name: &str, requests: &[u16]) -> Result<Vec<InfoReply>, u32> {
        let req = InfoRequest { name: name.into(), requests: requests.to_vec() };
        let opt = if go { ClientOption::Go(req) } else { ClientOption::Info(req) };
        let code = opt.code();
        self.send_option(&opt);
        let mut infos = Vec::new();
        loop {
            let rep = self.read_option_reply();
            assert_eq!(rep.option, code);
            match rep.body {
                ReplyBody::Info(i) => infos.push(i),
                ReplyBody::Ack => break,
                ReplyBody::Error { code, .. } => return Err(code),
                other => panic!("unexpected info reply {other:?}"),
            }
        }
        if go {
            for i in &infos {
                if let InfoReply::Export { size, flags } = i {
                    self.size = *size;
                    self.flags = *flags;
                }
            }
        }
        Ok(infos)
    }

    /// GO to `name` asking for block sizes; panics on failure.
    pub fn go(&mut self, name: &str) -> Vec<InfoReply> {
        self.info_or_go(true, name, &[NBD_INFO_BLOCK_SIZE]).expect("NBD_OPT_GO failed")
    }

    /// Connect + GO to the default export.
    pub fn ready(addr: SocketAddr) -> Client {
        let mut c = Client::connect(addr);
        c.go("");
        c
    }

    pub fn send_request(&mut self, command: Command, flags: u16, offset: u64, length: u32, payload: &[u8]) -> u64 {
        self.cookie += 1;
        let req = Request { flags, command, cookie: self.cookie, offset, length };
        let mut out = req.encode().to_vec();
        out.extend_from_slice(payload);
        self.w.write_all(&out).unwrap();
        self.cookie
    }

    /// Reads the reply to request `cookie`; `read_len` is the data length a successful read
    /// carries (0 for other commands).
    pub fn read_reply(&mut self, cookie: u64, read_len: usize) -> Reply {
        let mut magic = [0u8; 4];
        self.r.read_exact(&mut magic).unwrap();
        match u32::from_be_bytes(magic) {
            NBD_SIMPLE_REPLY_MAGIC => {
                let mut rest = [0u8; SimpleReply::SIZE];
                rest[..4].copy_from_slice(&magic);
                self.r.read_exact(&mut rest[4..]).unwrap();
                let rep = SimpleReply::decode(&rest).unwrap();
                assert_eq!(rep.cookie, cookie);
                if rep.error != 0 {
                    return Reply::Err(rep.error, String::new());
                }
                let mut data = vec![0u8; read_len];
                self.r.read_exact(&mut data).unwrap();
                Reply::Ok(data)
            }
            NBD_STRUCTURED_REPLY_MAGIC => {
                assert!(self.structured, "structured reply without negotiation");
                let mut data = Vec::new();
                let mut error = None;
                let mut first = true;
                loop {
                    let mut h = [0u8; ChunkHeader::SIZE];
                    if first {
                        h[..4].copy_from_slice(&magic);
                        self.r.read_exact(&mut h[4..]).unwrap();
                        first = false;
                    } else {
                        self.r.read_exact(&mut h).unwrap();
                    }
                    let h = ChunkHeader::decode(&h).unwrap();
                    assert_eq!(h.cookie, cookie);
                    let mut p = vec![0u8; h.length as usize];
                    self.r.read_exact(&mut p).unwrap();
                    match ChunkPayload::decode(h.reply_type, &p).unwrap() {
                        ChunkPayload::None => {}
                        ChunkPayload::OffsetData { data: d, .. } => data.extend_from_slice(&d),
                        ChunkPayload::Error { error: e, message } => error = Some((e, message)),
                        other => panic!("unexpected chunk {other:?}"),
                    }
                    if h.flags & NBD_REPLY_FLAG_DONE != 0 {
                        break;
                    }
                }
                match error {
                    Some((e, m)) => Reply::Err(e, m),
                    None => {
                        assert_eq!(data.len(), read_len);
                        Reply::Ok(data)
                    }
                }
            }
            m => panic!("bad reply magic {m:#x}"),
        }
    }

    pub fn cmd(&mut self, command: Command, flags: u16, offset: u64, length: u32, payload: &[u8]) -> Reply {
        let cookie = self.send_request(command, flags, offset, length, payload);
        let read_len = if command == Command::Read { length as usize } else { 0 };
        self.read_reply(cookie, read_len)
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) -> Reply {
        self.cmd(Command::Write, 0, offset, data.len() as u32, data)
    }

    pub fn read(&mut self, offset: u64, len: u32) -> Reply {
        self.cmd(Command::Read, 0, offset, len, &[])
    }

    pub fn disc(&mut self) {
        self.send_request(Command::Disc, 0, 0, 0, &[]);
    }

    /// Asserts the server has closed the connection (next read sees EOF or a reset).
    #[track_caller]
    pub fn expect_closed(&mut self) {
        let mut b = [0u8; 1];
        match self.r.read(&mut b) {
            Ok(0) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            other => panic!("expected closed connection, got {other:?}"),
        }
    }
}

/// Deterministic pattern so read-back checks catch misplaced data.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Two namespaces of 8 MiB on a small FDP drive with two handles each for the first.
const DOC: &str = r#"
name = "sim exports"
seed = 1
precondition = false
[device]
capacity = "16MiB"
raw_capacity = "20MiB"
erase_unit = "256KiB"
[device.fdp]
enabled = true
ruhs = 4
[[namespace]]
name = "a"
size = "8MiB"
placement_handles = [0, 1]
[[namespace]]
name = "b"
size = "8MiB"
placement_handles = [2]
[[workload]]
namespace = "a"
pattern = "sequential"
bs = "4KiB"
amount = "1x"
"#;

pub fn drive() -> std::sync::Arc<wafsim_nbd::sim::LiveDrive> {
    let v = wafsim_experiment::parse_experiment(DOC, "test").unwrap().remove(0);
    wafsim_nbd::sim::LiveDrive::new(wafsim_experiment::run::build_stack(&v.spec).unwrap()).unwrap()
}
