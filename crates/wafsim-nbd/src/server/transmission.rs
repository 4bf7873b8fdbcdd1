//! Server side of the transmission phase (proto.md "Transmission", "Request types", "Error
//! values", "Size constraints").
//!
//! Requests are served strictly in order on the connection's thread. Checks, in the order the
//! client would want them reported: command flags, payload size, read-only, range, alignment.
//! Error choices follow proto.md "Error values": `NBD_ENOSPC` for writes and write-zeroes past the
//! end, `NBD_EINVAL` for reads, trims and caches past the end, for misalignment, unknown commands
//! and flags; `NBD_EPERM` for writes to a read-only export; `NBD_EOVERFLOW` only for a
//! structured-reply read longer than the maximum payload (the spec reserves it for such cases).
//! A write whose payload exceeds the maximum is still read and discarded (up to 32 MiB, which the
//! spec says must not be treated as an attack) so the next request header is found; beyond that
//! the connection is dropped.

use std::io::{BufReader, Read, Write};

use super::handshake::Session;
use super::{io_end, read_message, skip, truncated, ConnEnd, ConnStats};
use crate::proto::*;

/// Payloads up to this size are never treated as denial of service (proto.md "Size
/// constraints"), so an oversized write this big is drained and failed rather than disconnected.
const DOS_PAYLOAD_LIMIT: u64 = 1 << 25;

/// A request failure: error value and a message for structured error chunks.
type Fail = (Errno, String);

/// Serves requests until the client disconnects or breaks the protocol.
pub(crate) fn run<R: Read, W: Write>(
    r: &mut BufReader<R>,
    w: &mut W,
    s: &Session,
    stats: &mut ConnStats,
) -> ConnEnd {
    let mut conn = Conn { s, w, payload: Vec::new(), scratch: Vec::new() };
    let mut hdr = [0u8; Request::SIZE];
    loop {
        if let Err(end) = read_message(r, &mut hdr, "a request header") {
            return end;
        }
        let req = match Request::decode(&hdr) {
            Ok(req) => req,
            // Without the magic there is no telling where the next request starts.
            Err(e) => return ConnEnd::Protocol(e.to_string()),
        };
        match conn.handle(r, &req, stats) {
            Ok(true) => {}
            Ok(false) => return ConnEnd::SoftDisconnect,
            Err(end) => return end,
        }
        // Hold replies back only while a whole next request header is already buffered, so a
        // pipelined burst is answered in one write but a reply never waits for the client.
        if r.buffer().len() < Request::SIZE {
            if let Err(e) = conn.w.flush() {
                return io_end(e);
            }
        }
    }
}

struct Conn<'a, W> {
    s: &'a Session,
    w: &'a mut W,
    /// Read and write payloads; grows to the largest request and is then reused.
    payload: Vec<u8>,
    /// Structured error chunk payloads.
    scratch: Vec<u8>,
}

impl<W: Write> Conn<'_, W> {
    /// Serves one request; `Ok(false)` after `NBD_CMD_DISC`.
    fn handle<R: Read>(&mut self, r: &mut BufReader<R>, req: &Request, stats: &mut ConnStats) -> Result<bool, ConnEnd> {
        let s = self.s;
        let len = u64::from(req.length);
        let fua = req.flags & NBD_CMD_FLAG_FUA != 0;
        let result: Result<(), Fail> = match req.command {
            // No reply; the spec's "handle outstanding requests" is already true since every
            // earlier request was answered before this one was read.
            Command::Disc => return Ok(false),
            Command::Write => {
                if req.length > s.sizes.max {
                    if len > DOS_PAYLOAD_LIMIT.max(s.sizes.max.into()) {
                        return Err(ConnEnd::Protocol(format!("write payload of {len} bytes")));
                    }
                    skip(r, len, "a write payload")?;
                    Err((Errno::Inval, format!("write of {len} bytes exceeds the maximum payload {}", s.sizes.max)))
                } else {
                    let buf = grow(&mut self.payload, req.length as usize);
                    r.read_exact(buf).map_err(|e| truncated(e, "a write payload"))?;
                    check_flags(req, NBD_CMD_FLAG_FUA)
                        .and_then(|_| writable(s))
                        .and_then(|_| range(s, req, Errno::NoSpc))
                        .and_then(|_| s.export.write(req.offset, buf, fua).map_err(export_fail))
                        .map(|_| {
                            stats.writes += 1;
                            stats.bytes_written += len;
                        })
                }
            }
            Command::Read => {
                let allowed = if s.structured { NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_DF } else { NBD_CMD_FLAG_FUA };
                let res = check_flags(req, allowed)
                    .and_then(|_| {
                        if req.length > s.sizes.max {
                            let e = if s.structured { Errno::Overflow } else { Errno::Inval };
                            Err((e, format!("read of {len} bytes exceeds the maximum payload {}", s.sizes.max)))
                        } else {
                            Ok(())
                        }
                    })
                    .and_then(|_| range(s, req, Errno::Inval))
                    .and_then(|_| {
                        let buf = grow(&mut self.payload, req.length as usize);
                        s.export.read(req.offset, buf).map_err(export_fail)
                    });
                if res.is_ok() {
                    stats.reads += 1;
                    stats.bytes_read += len;
                    return self.read_reply(req).map(|_| true);
                }
                res
            }
            Command::Flush => check_flags(req, NBD_CMD_FLAG_FUA)
                .and_then(|_| s.export.flush().map_err(export_fail))
                .map(|_| stats.flushes += 1),
            Command::Trim => check_flags(req, NBD_CMD_FLAG_FUA)
                .and_then(|_| writable(s))
                .and_then(|_| range(s, req, Errno::Inval))
                .and_then(|_| s.export.trim(req.offset, len).map_err(export_fail))
                .and_then(|_| flush_if_fua(s, fua))
                .map(|_| stats.trims += 1),
            Command::WriteZeroes => check_flags(req, NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE)
                .and_then(|_| writable(s))
                .and_then(|_| range(s, req, Errno::NoSpc))
                .and_then(|_| {
                    let no_hole = req.flags & NBD_CMD_FLAG_NO_HOLE != 0;
                    s.export.write_zeroes(req.offset, len, no_hole).map_err(export_fail)
                })
                .and_then(|_| flush_if_fua(s, fua))
                .map(|_| stats.write_zeroes += 1),
            // Advisory only; validating keeps error behaviour the same as for a read.
            Command::Cache => check_flags(req, NBD_CMD_FLAG_FUA).and_then(|_| range(s, req, Errno::Inval)),
            Command::BlockStatus => Err((Errno::Inval, "no metadata context was negotiated".into())),
            Command::Other(c) => Err((Errno::Inval, format!("unknown command {c}"))),
        };
        match result {
            Ok(()) => self.send(&SimpleReply { error: 0, cookie: req.cookie }.encode())?,
            Err((errno, msg)) => {
                stats.errors += 1;
                self.error_reply(req, errno, &msg)?;
            }
        }
        Ok(true)
    }

    /// Sends the data of a successful read: a simple reply plus data, or one OFFSET_DATA chunk
    /// (which also satisfies `NBD_CMD_FLAG_DF`). A zero-length read gets an empty reply, since
    /// OFFSET_DATA must carry at least one byte.
    fn read_reply(&mut self, req: &Request) -> Result<(), ConnEnd> {
        let n = req.length as usize;
        if self.s.structured {
            let (reply_type, length) =
                if n == 0 { (NBD_REPLY_TYPE_NONE, 0) } else { (NBD_REPLY_TYPE_OFFSET_DATA, req.length + 8) };
            let h = ChunkHeader { flags: NBD_REPLY_FLAG_DONE, reply_type, cookie: req.cookie, length };
            self.send(&h.encode())?;
            if n > 0 {
                self.send(&req.offset.to_be_bytes())?;
            }
        } else {
            self.send(&SimpleReply { error: 0, cookie: req.cookie }.encode())?;
        }
        let Conn { w, payload, .. } = self;
        w.write_all(&payload[..n]).map_err(io_end)
    }

    /// Simple replies carry only the error value; with structured replies the spec prefers an
    /// error chunk, whose message tells a human what was wrong.
    fn error_reply(&mut self, req: &Request, errno: Errno, msg: &str) -> Result<(), ConnEnd> {
        if !self.s.structured {
            return self.send(&SimpleReply { error: errno.code(), cookie: req.cookie }.encode());
        }
        self.scratch.clear();
        encode_error_payload(errno.code(), msg, &mut self.scratch);
        let h = ChunkHeader {
            flags: NBD_REPLY_FLAG_DONE,
            reply_type: NBD_REPLY_TYPE_ERROR,
            cookie: req.cookie,
            length: self.scratch.len() as u32,
        };
        self.send(&h.encode())?;
        let Conn { w, scratch, .. } = self;
        w.write_all(scratch).map_err(io_end)
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), ConnEnd> {
        self.w.write_all(bytes).map_err(io_end)
    }
}

fn writable(s: &Session) -> Result<(), Fail> {
    if s.read_only {
        Err((Errno::Perm, "export is read-only".into()))
    } else {
        Ok(())
    }
}

/// Range and alignment check; `past_end` is the error for a range beyond the export.
fn range(s: &Session, req: &Request, past_end: Errno) -> Result<(), Fail> {
    let len = u64::from(req.length);
    match req.offset.checked_add(len) {
        Some(end) if end <= s.size => {}
        _ => return Err((past_end, format!("range {}+{len} beyond export size {}", req.offset, s.size))),
    }
    let min = u64::from(s.sizes.min);
    if !req.offset.is_multiple_of(min) || !len.is_multiple_of(min) {
        return Err((Errno::Inval, format!("range {}+{len} not aligned to {min} bytes", req.offset)));
    }
    Ok(())
}

/// Trim and write-zeroes have no FUA parameter in [`crate::Export`]; a flush after them gives the
/// durability FUA promises.
fn flush_if_fua(s: &Session, fua: bool) -> Result<(), Fail> {
    if fua {
        s.export.flush().map_err(export_fail)
    } else {
        Ok(())
    }
}

/// Unknown flags and flags documented for other commands are `NBD_EINVAL` (proto.md "Error
/// values"). FUA is accepted everywhere since `NBD_FLAG_SEND_FUA` is always advertised.
fn check_flags(req: &Request, allowed: u16) -> Result<(), Fail> {
    let bad = req.flags & !allowed;
    if bad != 0 {
        return Err((Errno::Inval, format!("flags {bad:#x} not valid for {:?}", req.command)));
    }
    Ok(())
}

fn export_fail(e: crate::export::ExportError) -> Fail {
    (e.errno(), e.to_string())
}

/// Returns the first `n` bytes of `buf`, growing it if needed. Contents are stale on purpose:
/// every caller fills the slice completely before it is sent anywhere.
fn grow(buf: &mut Vec<u8>, n: usize) -> &mut [u8] {
    if buf.len() < n {
        buf.resize(n, 0);
    }
    &mut buf[..n]
}
