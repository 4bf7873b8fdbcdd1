//! The NBD server: accepts TCP or Unix-socket connections and serves each on its own thread.
//!
//! A connection runs the fixed newstyle handshake (`handshake.rs`, proto.md "Fixed newstyle
//! negotiation" and "Option types") and then the transmission loop (`transmission.rs`, proto.md
//! "Transmission" and "Request types"). Each connection has exactly one thread, which reads a
//! request, executes it and writes the whole reply before reading the next, so replies can never
//! interleave on the wire. Anything a client does wrong ends only that client's connection.
//!
//! Not implemented: TLS (the server runs in proto.md's NOTLS mode and answers `NBD_OPT_STARTTLS`
//! with `NBD_REP_ERR_UNSUP`), metadata contexts / `NBD_CMD_BLOCK_STATUS`, fast zero, oldstyle
//! negotiation and the experimental extensions.

mod handshake;
mod transmission;

use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::export::Exports;

/// Socket buffer size on each side of a connection: large enough that a burst of small pipelined
/// requests is parsed from one `read` and their replies leave in one `write`.
const IO_BUFFER: usize = 128 * 1024;

/// Callback receiving a connection's statistics when it ends.
pub type StatsHook = dyn Fn(&ConnStats) + Send + Sync;

/// Server settings.
#[derive(Clone)]
pub struct Config {
    /// Serve every export read-only (`NBD_FLAG_READ_ONLY`; writes, trims and write-zeroes fail
    /// with `NBD_EPERM`), whatever the export itself says.
    pub read_only: bool,
    /// Upper bound on the read/write payload of one request, applied on top of each export's
    /// [`crate::BlockSizes::max`]. It also bounds the per-connection buffer. Values below the
    /// export's preferred block size are raised to it (the spec requires max >= preferred), and
    /// values above 1 GiB are lowered to 1 GiB.
    pub max_request: u32,
    /// Called once per connection, on its thread, when it ends. Counting is done with plain
    /// per-connection integers, so it costs nothing when unset.
    pub on_connection_end: Option<Arc<StatsHook>>,
    /// Most connections served at once. A client beyond it is answered during the handshake:
    /// every option but `NBD_OPT_ABORT` fails with `NBD_REP_ERR_POLICY` and a message saying
    /// why (one thread each for at most as many again; beyond that it is closed unanswered).
    pub max_connections: usize,
    /// How long a client may take over the whole handshake (None: no limit); a client that is
    /// slower is disconnected, so idle connections cannot hold threads for ever. Transmission
    /// has no timeout: an idle client with an export open is normal.
    pub handshake_timeout: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            read_only: false,
            max_request: 32 * 1024 * 1024,
            on_connection_end: None,
            max_connections: 64,
            handshake_timeout: Some(Duration::from_secs(10)),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("read_only", &self.read_only)
            .field("max_request", &self.max_request)
            .field("on_connection_end", &self.on_connection_end.is_some())
            .field("max_connections", &self.max_connections)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish()
    }
}

/// How a connection ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ConnEnd {
    /// The client ended it properly (`NBD_OPT_ABORT` or `NBD_CMD_DISC`).
    SoftDisconnect,
    /// The client closed the socket between messages (or the server shut the connection down).
    #[default]
    PeerClosed,
    /// The client broke the protocol (bad magic, truncated message, bad flags, refused export...)
    /// and the server hung up.
    Protocol(String),
    /// A socket error.
    Io(String),
}

/// Per-connection counters, handed to [`Config::on_connection_end`].
#[derive(Debug, Clone, Default)]
pub struct ConnStats {
    /// Peer address as text (empty for unnamed Unix sockets).
    pub peer: String,
    /// Name the client asked for, once it entered transmission.
    pub export: Option<String>,
    /// Whether structured replies were negotiated.
    pub structured_replies: bool,
    /// Options received during the handshake.
    pub options: u64,
    /// Successful reads.
    pub reads: u64,
    /// Successful writes.
    pub writes: u64,
    /// Successful trims.
    pub trims: u64,
    /// Successful write-zeroes.
    pub write_zeroes: u64,
    /// Successful flushes.
    pub flushes: u64,
    /// Bytes returned by successful reads.
    pub bytes_read: u64,
    /// Bytes stored by successful writes.
    pub bytes_written: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// Why the connection ended.
    pub end: ConnEnd,
}

/// An NBD server over a set of [`Exports`]. Cheap to clone; clones share exports, configuration
/// and shutdown state, so one clone can serve TCP and another a Unix socket.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) exports: Box<dyn Exports>,
    pub(crate) config: Config,
    pub(crate) shutdown: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
    conns: Mutex<HashMap<u64, Arc<dyn Sock>>>,
    next_id: AtomicU64,
    /// Connections being served, and connections being refused (over the limit).
    served: AtomicUsize,
    refusing: AtomicUsize,
}

/// Stops a running server (see [`Server::shutdown_handle`]).
#[derive(Clone)]
pub struct ShutdownHandle {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShutdownHandle").field("shut_down", &self.is_shut_down()).finish()
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl ShutdownHandle {
    /// Stops accepting, wakes every `serve_*` call blocked in `accept`, and shuts the read side
    /// of every open connection: a request already being served still gets its reply (proto.md
    /// asks servers to finish in-flight requests on shutdown), then the connection sees end of
    /// input and closes. The `serve_*` calls return once their connections are gone.
    pub fn shutdown(&self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        // `accept` has no timeout, so connect to ourselves to make it return; a wake-up that
        // arrives before `accept` is called simply waits in the backlog.
        for w in lock(&self.inner.wakers).iter() {
            match w {
                Waker::Tcp(addr) => {
                    let _ = TcpStream::connect_timeout(addr, Duration::from_secs(1));
                }
                Waker::Unix(path) => {
                    let _ = UnixStream::connect(path);
                }
            }
        }
        for c in lock(&self.inner.conns).values() {
            c.shutdown_read();
        }
    }

    /// Whether [`ShutdownHandle::shutdown`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.shutdown.load(Ordering::SeqCst)
    }
}

impl Server {
    /// A server for `exports`.
    pub fn new(exports: impl Exports + 'static, config: Config) -> Self {
        Server {
            inner: Arc::new(Inner {
                exports: Box::new(exports),
                config,
                shutdown: AtomicBool::new(false),
                wakers: Mutex::new(Vec::new()),
                conns: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(0),
                served: AtomicUsize::new(0),
                refusing: AtomicUsize::new(0),
            }),
        }
    }

    /// A handle that stops this server (and all its clones) from any thread.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle { inner: self.inner.clone() }
    }

    /// Accepts TCP connections until shut down, one thread each (with `TCP_NODELAY`, as
    /// proto.md recommends, so small replies are not held back by Nagle's algorithm). Returns
    /// after shutdown once every connection it accepted has closed.
    pub fn serve_tcp(&self, listener: TcpListener) -> io::Result<()> {
        let mut addr = listener.local_addr()?;
        // Waking a wildcard listener: connect via loopback of the same family.
        if addr.ip().is_unspecified() {
            addr = match addr {
                SocketAddr::V4(a) => SocketAddr::from(([127, 0, 0, 1], a.port())),
                SocketAddr::V6(a) => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port())),
            };
        }
        self.accept_loop(Waker::Tcp(addr), || {
            let (s, peer) = listener.accept()?;
            // Only a latency optimisation; a socket refusing it still works.
            let _ = s.set_nodelay(true);
            Ok((Arc::new(s) as Arc<dyn Sock>, peer.to_string()))
        })
    }

    /// Accepts Unix-socket connections until shut down (see [`Server::serve_tcp`]). The socket
    /// must be bound to a path so the shutdown handle can wake the accept call; the socket file
    /// is left in place for the caller to remove.
    pub fn serve_unix(&self, listener: UnixListener) -> io::Result<()> {
        let path = listener.local_addr()?.as_pathname().map(PathBuf::from).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "unix listener must be bound to a path")
        })?;
        self.accept_loop(Waker::Unix(path), || {
            let (s, peer) = listener.accept()?;
            let peer = peer.as_pathname().map(|p| p.display().to_string()).unwrap_or_default();
            Ok((Arc::new(s) as Arc<dyn Sock>, peer))
        })
    }

    /// Serves one already-connected client on the calling thread (handshake and transmission)
    /// and returns its statistics. `reader` and `writer` are the two directions of one stream;
    /// any byte transport works (a socket, a pipe pair, an in-memory buffer in tests).
    pub fn serve_connection<R: Read, W: Write>(&self, reader: R, writer: W, peer: &str) -> ConnStats {
        self.serve_connection_with(reader, writer, peer, None, || {})
    }

    /// [`Server::serve_connection`], refusing every export with `refusal` (over the connection
    /// limit), and calling `negotiated` between the handshake and transmission.
    fn serve_connection_with<R: Read, W: Write>(&self, reader: R, writer: W, peer: &str, refusal: Option<&str>, negotiated: impl FnOnce()) -> ConnStats {
        let mut r = BufReader::with_capacity(IO_BUFFER, reader);
        let mut w = BufWriter::with_capacity(IO_BUFFER, writer);
        let mut stats = ConnStats { peer: peer.to_owned(), ..ConnStats::default() };
        let end = match handshake::negotiate(&mut r, &mut w, &self.inner, &mut stats, refusal) {
            Ok(session) => {
                negotiated();
                transmission::run(&mut r, &mut w, &session, &mut stats)
            }
            Err(end) => end,
        };
        // Replies to requests handled just before the end must still reach the client.
        let _ = w.flush();
        stats.end = end;
        if let Some(hook) = &self.inner.config.on_connection_end {
            hook(&stats);
        }
        stats
    }

    fn accept_loop(
        &self,
        waker: Waker,
        mut accept: impl FnMut() -> io::Result<(Arc<dyn Sock>, String)>,
    ) -> io::Result<()> {
        lock(&self.inner.wakers).push(waker.clone());
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        while !self.inner.shutdown.load(Ordering::SeqCst) {
            match accept() {
                Ok((sock, peer)) => {
                    if self.inner.shutdown.load(Ordering::SeqCst) {
                        break; // most likely our own wake-up connection
                    }
                    if let Some(t) = self.spawn_connection(sock, peer) {
                        threads.push(t);
                    }
                }
                Err(e) => match e.kind() {
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted => {}
                    // EMFILE and friends: back off instead of spinning; existing connections
                    // finishing will free resources.
                    _ => std::thread::sleep(Duration::from_millis(10)),
                },
            }
            threads.retain(|t| !t.is_finished());
        }
        lock(&self.inner.wakers).retain(|w| *w != waker);
        for t in threads {
            let _ = t.join();
        }
        Ok(())
    }

    fn spawn_connection(&self, sock: Arc<dyn Sock>, peer: String) -> Option<JoinHandle<()>> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let limit = self.inner.config.max_connections;
        // Counted here, on the accepting thread, so a burst of connections cannot all pass the
        // check before any of them is counted.
        let over = self.inner.served.load(Ordering::SeqCst) >= limit;
        let counter = if over { &self.inner.refusing } else { &self.inner.served };
        if over && counter.load(Ordering::SeqCst) >= limit {
            // Refusing politely costs a thread too: beyond as many again, just close.
            sock.shutdown_both();
            return None;
        }
        counter.fetch_add(1, Ordering::SeqCst);
        let server = self.clone();
        let spawned = std::thread::Builder::new().name(format!("nbd-conn-{id}")).spawn(move || {
            let _count = Counted(if over { &server.inner.refusing } else { &server.inner.served });
            let _reg = Registration::new(&server.inner, id, sock.clone());
            let s: &dyn Sock = &*sock;
            s.set_read_timeout(server.inner.config.handshake_timeout);
            let refusal = over.then(|| format!("too many connections: this server serves at most {limit} at once (wafsim serve --max-connections)"));
            server.serve_connection_with(SockIo(s), SockIo(s), &peer, refusal.as_deref(), || s.set_read_timeout(None));
            sock.shutdown_both();
        });
        match spawned {
            Ok(t) => Some(t),
            Err(_) => {
                // No thread: the socket is dropped (closed) and the server carries on.
                counter.fetch_sub(1, Ordering::SeqCst);
                None
            }
        }
    }
}

/// Gives a connection's place in its count back when its thread ends (also by a panic).
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Keeps a connection in the shutdown registry for as long as its thread runs (even if the
/// export panics, since `Drop` runs during unwinding).
struct Registration<'a> {
    inner: &'a Inner,
    id: u64,
}

impl<'a> Registration<'a> {
    fn new(inner: &'a Inner, id: u64, sock: Arc<dyn Sock>) -> Self {
        let mut conns = lock(&inner.conns);
        conns.insert(id, sock.clone());
        // Checked under the registry lock: either shutdown() saw this entry, or we see its flag.
        if inner.shutdown.load(Ordering::SeqCst) {
            sock.shutdown_read();
        }
        Registration { inner, id }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        lock(&self.inner.conns).remove(&self.id);
    }
}

#[derive(Clone, PartialEq, Eq)]
enum Waker {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// What the server needs from a connected socket beyond reading and writing it.
trait Sock: Send + Sync {
    fn read(&self, buf: &mut [u8]) -> io::Result<usize>;
    fn write(&self, buf: &[u8]) -> io::Result<usize>;
    fn flush(&self) -> io::Result<()>;
    fn shutdown_read(&self);
    fn shutdown_both(&self);
    fn set_read_timeout(&self, t: Option<Duration>);
}

macro_rules! impl_sock {
    ($t:ty) => {
        impl Sock for $t {
            fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
                Read::read(&mut &*self, buf)
            }
            fn write(&self, buf: &[u8]) -> io::Result<usize> {
                Write::write(&mut &*self, buf)
            }
            fn flush(&self) -> io::Result<()> {
                Write::flush(&mut &*self)
            }
            fn shutdown_read(&self) {
                let _ = <$t>::shutdown(self, Shutdown::Read);
            }
            fn shutdown_both(&self) {
                let _ = <$t>::shutdown(self, Shutdown::Both);
            }
            fn set_read_timeout(&self, t: Option<Duration>) {
                let _ = <$t>::set_read_timeout(self, t);
            }
        }
    };
}
impl_sock!(TcpStream);
impl_sock!(UnixStream);

/// `Read`/`Write` over a shared socket reference, so one connection thread can hold a reader
/// and a writer for the same descriptor without duplicating it.
struct SockIo<'a>(&'a dyn Sock);

impl Read for SockIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for SockIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Registry and waker lists hold no invariants a panicking thread could break mid-update.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads exactly `buf.len()` bytes of one message. End of input before the first byte is a
/// clean close ([`ConnEnd::PeerClosed`]); after it, a truncated message ([`ConnEnd::Protocol`]).
pub(crate) fn read_message<R: Read>(r: &mut BufReader<R>, buf: &mut [u8], what: &str) -> Result<(), ConnEnd> {
    use std::io::BufRead;
    loop {
        match r.fill_buf() {
            Ok([]) => return Err(ConnEnd::PeerClosed),
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_end(e)),
        }
    }
    r.read_exact(buf).map_err(|e| truncated(e, what))
}

/// Maps an error while in the middle of a message.
pub(crate) fn truncated(e: io::Error, what: &str) -> ConnEnd {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        ConnEnd::Protocol(format!("connection closed in the middle of {what}"))
    } else {
        io_end(e)
    }
}

/// Maps a socket error to a connection end; a reset counts as the peer closing.
pub(crate) fn io_end(e: io::Error) -> ConnEnd {
    match e.kind() {
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof => {
            ConnEnd::PeerClosed
        }
        _ => ConnEnd::Io(e.to_string()),
    }
}

/// Reads and drops `n` bytes (an option or payload the server will not use), so the stream stays
/// in sync for the next message.
pub(crate) fn skip<R: Read>(r: &mut BufReader<R>, n: u64, what: &str) -> Result<(), ConnEnd> {
    let copied = io::copy(&mut r.by_ref().take(n), &mut io::sink()).map_err(|e| truncated(e, what))?;
    if copied < n {
        return Err(ConnEnd::Protocol(format!("connection closed in the middle of {what}")));
    }
    Ok(())
}
