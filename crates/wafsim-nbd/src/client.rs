//! A blocking NBD client (fixed newstyle, `NBD_OPT_GO`, simple replies): what `wafsim feed`
//! uses to send a model's block I/O to a served namespace, on the same codec the server uses.
//!
//! One request at a time per connection: every command waits for its reply before the next is
//! sent, so a caller that alternates between connections decides the order in which the
//! server sees their commands.
//!
//! ```no_run
//! use wafsim_nbd::client::{Client, ServerAddr};
//!
//! let server = ServerAddr::parse("nbd://127.0.0.1:10809").unwrap();
//! let mut ns1 = Client::connect(&server, "ns1").unwrap();
//! ns1.write(0, &[0u8; 4096], false).unwrap();
//! assert_eq!(ns1.read(0, 4096).unwrap(), vec![0u8; 4096]);
//! ```

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use crate::proto::*;

/// Where an NBD server listens: `nbd://HOST[:PORT]` (port 10809 when not given) or
/// `nbd+unix:///?socket=PATH`. An export name in the URI (`nbd://h:p/NAME`) is ignored here:
/// the caller names the export of each connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddr {
    /// TCP, as `host:port`.
    Tcp(String),
    /// A Unix socket.
    Unix(PathBuf),
}

impl ServerAddr {
    /// Parse an NBD URI (or a bare `HOST:PORT`).
    pub fn parse(uri: &str) -> Result<ServerAddr, String> {
        if let Some(rest) = uri.strip_prefix("nbd+unix://") {
            let query = rest.split_once('?').map(|(_, q)| q).unwrap_or("");
            let socket = query.split('&').find_map(|kv| kv.strip_prefix("socket="));
            return match socket {
                Some(p) if !p.is_empty() => Ok(ServerAddr::Unix(PathBuf::from(p))),
                _ => Err(format!("{uri:?}: an nbd+unix URI needs ?socket=PATH (e.g. nbd+unix:///?socket=/tmp/nbd.sock)")),
            };
        }
        let rest = match uri.strip_prefix("nbd://") {
            Some(r) => r,
            None if uri.contains("://") => return Err(format!("{uri:?}: expected nbd://HOST[:PORT] or nbd+unix:///?socket=PATH")),
            None => uri,
        };
        let host_port = rest.split('/').next().unwrap_or("");
        if host_port.is_empty() {
            return Err(format!("{uri:?}: no host (expected nbd://HOST[:PORT])"));
        }
        // A bracketed IPv6 address keeps its colons.
        let has_port = match host_port.rfind(']') {
            Some(end) => host_port[end..].contains(':'),
            None => host_port.contains(':'),
        };
        Ok(ServerAddr::Tcp(if has_port { host_port.to_string() } else { format!("{host_port}:10809") }))
    }
}

impl std::fmt::Display for ServerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerAddr::Tcp(a) => write!(f, "nbd://{a}"),
            ServerAddr::Unix(p) => write!(f, "nbd+unix:///?socket={}", p.display()),
        }
    }
}

/// The byte stream under a connection.
enum Stream {
    Tcp(TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// How long a reply may take before the client gives up (a paced server's GC stall is far
/// shorter; a dead server is not).
const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// One connection to one export, in the transmission phase.
pub struct Client {
    r: BufReader<Stream>,
    w: Stream,
    export: String,
    size: u64,
    flags: u16,
    cookie: u64,
    /// The request being encoded (header and payload sent in one write).
    out: Vec<u8>,
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn proto(e: ProtoError) -> io::Error {
    bad(e.to_string())
}

impl Client {
    /// Connect to `server`, negotiate (fixed newstyle, no zeroes) and enter transmission on
    /// `export` with `NBD_OPT_GO`. A refused export is an error that lists the server's exports.
    pub fn connect(server: &ServerAddr, export: &str) -> io::Result<Client> {
        let stream = match server {
            ServerAddr::Tcp(a) => {
                let s = TcpStream::connect(a).map_err(|e| io::Error::new(e.kind(), format!("connecting to {server}: {e}")))?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(REPLY_TIMEOUT))?;
                Stream::Tcp(s)
            }
            ServerAddr::Unix(p) => {
                let s = std::os::unix::net::UnixStream::connect(p).map_err(|e| io::Error::new(e.kind(), format!("connecting to {server}: {e}")))?;
                s.set_read_timeout(Some(REPLY_TIMEOUT))?;
                Stream::Unix(s)
            }
        };
        let mut c = Client { r: BufReader::new(stream.try_clone()?), w: stream, export: export.to_string(), size: 0, flags: 0, cookie: 0, out: Vec::new() };
        let mut g = [0u8; ServerGreeting::SIZE];
        c.r.read_exact(&mut g).map_err(|e| io::Error::new(e.kind(), format!("{server}: no NBD greeting ({e})")))?;
        let g = ServerGreeting::decode(&g).map_err(|e| bad(format!("{server}: not an NBD newstyle server: {e}")))?;
        if g.flags & NBD_FLAG_FIXED_NEWSTYLE == 0 {
            return Err(bad(format!("{server}: the server does not speak fixed newstyle")));
        }
        let no_zeroes = g.flags & NBD_FLAG_NO_ZEROES != 0;
        c.w.write_all(&ClientFlags { fixed_newstyle: true, no_zeroes }.encode())?;
        c.go(server)?;
        Ok(c)
    }

    fn option(&mut self, opt: &ClientOption) -> io::Result<()> {
        let mut out = Vec::new();
        opt.encode(&mut out);
        self.w.write_all(&out)
    }

    fn option_reply(&mut self) -> io::Result<OptionReply> {
        let mut h = [0u8; OptionReplyHeader::SIZE];
        self.r.read_exact(&mut h)?;
        let h = OptionReplyHeader::decode(&h).map_err(proto)?;
        let mut data = vec![0u8; h.length as usize];
        self.r.read_exact(&mut data)?;
        OptionReply::decode_body(&h, &data).map_err(proto)
    }

    /// The server's export names (`NBD_OPT_LIST`), for an error message.
    fn list(&mut self) -> io::Result<Vec<String>> {
        self.option(&ClientOption::List)?;
        let mut names = Vec::new();
        loop {
            match self.option_reply()?.body {
                ReplyBody::Server { name, .. } => names.push(name),
                _ => return Ok(names),
            }
        }
    }

    fn go(&mut self, server: &ServerAddr) -> io::Result<()> {
        let req = InfoRequest { name: self.export.clone(), requests: vec![NBD_INFO_BLOCK_SIZE] };
        self.option(&ClientOption::Go(req))?;
        let mut export = None;
        loop {
            match self.option_reply()?.body {
                ReplyBody::Info(InfoReply::Export { size, flags }) => export = Some((size, flags)),
                ReplyBody::Info(_) | ReplyBody::Other { .. } => {}
                ReplyBody::Ack => break,
                ReplyBody::Error { code, message } => {
                    let names = self.list().unwrap_or_default();
                    let known = if names.is_empty() { String::new() } else { format!(" (its exports: {})", names.join(", ")) };
                    let why = if message.is_empty() { format!("error {code:#x}") } else { message };
                    return Err(io::Error::new(io::ErrorKind::NotFound, format!("{server} refused export {:?}: {why}{known}", self.export)));
                }
                ReplyBody::Server { .. } => return Err(bad(format!("{server}: a list entry in answer to NBD_OPT_GO"))),
            }
        }
        let (size, flags) = export.ok_or_else(|| bad(format!("{server}: NBD_OPT_GO for {:?} ended without the export's size", self.export)))?;
        (self.size, self.flags) = (size, flags);
        Ok(())
    }

    /// The export's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The export's transmission flags (`NBD_FLAG_*`).
    pub fn flags(&self) -> u16 {
        self.flags
    }

    /// Send one request and wait for its simple reply; a read's data goes to `into`.
    fn command(&mut self, command: Command, flags: u16, offset: u64, length: u32, payload: &[u8], into: Option<&mut Vec<u8>>) -> io::Result<()> {
        self.cookie += 1;
        let req = Request { flags, command, cookie: self.cookie, offset, length };
        self.out.clear();
        self.out.extend_from_slice(&req.encode());
        self.out.extend_from_slice(payload);
        self.w.write_all(&self.out)?;
        let mut rep = [0u8; SimpleReply::SIZE];
        self.r.read_exact(&mut rep)?;
        if u32::from_be_bytes(rep[..4].try_into().expect("4 bytes")) != NBD_SIMPLE_REPLY_MAGIC {
            return Err(bad(format!("export {:?}: a reply that is not a simple reply (structured replies were not negotiated)", self.export)));
        }
        let rep = SimpleReply::decode(&rep).map_err(proto)?;
        if rep.cookie != self.cookie {
            return Err(bad(format!("export {:?}: reply to request {} while waiting for {}", self.export, rep.cookie, self.cookie)));
        }
        if rep.error != 0 {
            let name = Errno::from_code(rep.error).map_or_else(|| format!("error {}", rep.error), |e| format!("{e:?}"));
            return Err(io::Error::other(format!("export {:?}: {command:?} of {length} B at {offset} failed: {name}", self.export)));
        }
        if let Some(buf) = into {
            buf.resize(length as usize, 0);
            self.r.read_exact(buf)?;
        }
        Ok(())
    }

    /// Read `len` bytes at `offset`.
    pub fn read(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.command(Command::Read, 0, offset, len, &[], Some(&mut buf))?;
        Ok(buf)
    }

    /// Read `len` bytes at `offset` into `buf` (reused across calls).
    pub fn read_into(&mut self, offset: u64, len: u32, buf: &mut Vec<u8>) -> io::Result<()> {
        self.command(Command::Read, 0, offset, len, &[], Some(buf))
    }

    /// Write `data` at `offset` (with FUA when `fua`).
    pub fn write(&mut self, offset: u64, data: &[u8], fua: bool) -> io::Result<()> {
        self.command(Command::Write, if fua { NBD_CMD_FLAG_FUA } else { 0 }, offset, data.len() as u32, data, None)
    }

    /// Deallocate `len` bytes at `offset` (`NBD_CMD_TRIM`).
    pub fn trim(&mut self, offset: u64, len: u32) -> io::Result<()> {
        if self.flags & NBD_FLAG_SEND_TRIM == 0 {
            return Err(io::Error::new(io::ErrorKind::Unsupported, format!("export {:?} does not accept trim", self.export)));
        }
        self.command(Command::Trim, 0, offset, len, &[], None)
    }

    /// Flush (`NBD_CMD_FLUSH`); a no-op when the export does not offer it.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.flags & NBD_FLAG_SEND_FLUSH == 0 {
            return Ok(());
        }
        self.command(Command::Flush, 0, 0, 0, &[], None)
    }

    /// End the session politely (`NBD_CMD_DISC`: no reply comes).
    pub fn disconnect(mut self) -> io::Result<()> {
        self.cookie += 1;
        let req = Request { flags: 0, command: Command::Disc, cookie: self.cookie, offset: 0, length: 0 };
        self.w.write_all(&req.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse_as_fio_and_qemu_write_them() {
        assert_eq!(ServerAddr::parse("nbd://127.0.0.1:10809/ns1").unwrap(), ServerAddr::Tcp("127.0.0.1:10809".into()));
        assert_eq!(ServerAddr::parse("nbd://localhost").unwrap(), ServerAddr::Tcp("localhost:10809".into()));
        assert_eq!(ServerAddr::parse("127.0.0.1:7000").unwrap(), ServerAddr::Tcp("127.0.0.1:7000".into()));
        assert_eq!(ServerAddr::parse("nbd://[::1]/x").unwrap(), ServerAddr::Tcp("[::1]:10809".into()));
        assert_eq!(ServerAddr::parse("nbd://[::1]:9/x").unwrap(), ServerAddr::Tcp("[::1]:9".into()));
        assert_eq!(ServerAddr::parse("nbd+unix:///ns1?socket=/tmp/s").unwrap(), ServerAddr::Unix("/tmp/s".into()));
        assert!(ServerAddr::parse("nbd+unix:///ns1").unwrap_err().contains("socket=PATH"));
        assert!(ServerAddr::parse("http://x").unwrap_err().contains("expected nbd://"));
        assert!(ServerAddr::parse("nbd:///x").unwrap_err().contains("no host"));
    }
}
