//! Server side of option haggling (proto.md "Fixed newstyle negotiation", "Termination of the
//! session during option haggling", "Option types").
//!
//! Known options are answered as the spec describes; every other option (including
//! `NBD_OPT_STARTTLS` and the metadata-context options) gets `NBD_REP_ERR_UNSUP` after its data is
//! skipped, which keeps the stream in sync so negotiation continues.

use std::io::{BufReader, BufWriter, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{io_end, read_message, skip, truncated, ConnEnd, ConnStats, Inner};
use crate::export::Export;
use crate::proto::*;

/// Largest option payload the server reads and throws away (answering `NBD_REP_ERR_TOO_BIG`)
/// rather than hanging up. Nothing legitimate comes close to [`MAX_OPTION_DATA`]; beyond this a
/// client is only making the server read junk, which the spec lets us treat as denial of service.
const MAX_OPTION_SKIP: u32 = 1024 * 1024;

/// Upper bound on a request payload whatever the configuration says: the per-connection buffer
/// grows to the largest request, and this keeps an OFFSET_DATA chunk length (payload + 8) well
/// inside 32 bits.
const MAX_PAYLOAD_CEILING: u32 = 1 << 30;

/// What transmission needs to know about the negotiated export.
pub(crate) struct Session {
    pub(crate) export: Arc<dyn Export>,
    pub(crate) size: u64,
    /// Effective constraints: the export's, with `max` limited by the configuration.
    pub(crate) sizes: BlockSizes,
    pub(crate) read_only: bool,
    pub(crate) structured: bool,
}

impl Session {
    fn new(export: Arc<dyn Export>, inner: &Inner, structured: bool) -> Result<Self, String> {
        let mut sizes = export.block_sizes();
        if !sizes.is_valid() {
            return Err(format!("export advertises invalid block sizes {sizes:?}"));
        }
        sizes.max = sizes.max.min(inner.config.max_request).min(MAX_PAYLOAD_CEILING).max(sizes.preferred);
        let read_only = inner.config.read_only || export.read_only();
        Ok(Session { size: export.size(), sizes, read_only, structured, export })
    }

    /// Transmission flags for this session. Trim and write-zeroes are not advertised on a
    /// read-only export (they could only fail); `SEND_DF` only with structured replies, as
    /// proto.md requires. Reads are always answered in one chunk, so DF costs nothing.
    pub(crate) fn flags(&self) -> u16 {
        let mut f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_CACHE;
        if self.read_only {
            f |= NBD_FLAG_READ_ONLY;
        } else {
            f |= NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES;
        }
        if self.structured {
            f |= NBD_FLAG_SEND_DF;
        }
        if self.export.multi_conn() {
            f |= NBD_FLAG_CAN_MULTI_CONN;
        }
        f
    }
}

/// The handshake flags this server offers.
const OFFERED: u16 = NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES;

/// Runs the handshake; `Ok` means transmission starts, `Err` how the connection ended.
pub(crate) fn negotiate<R: Read, W: Write>(
    r: &mut BufReader<R>,
    w: &mut BufWriter<W>,
    inner: &Inner,
    stats: &mut ConnStats,
    refusal: Option<&str>,
) -> Result<Session, ConnEnd> {
    send(w, &ServerGreeting { flags: OFFERED }.encode())?;
    flush(w)?;
    let mut cf = [0u8; ClientFlags::SIZE];
    read_message(r, &mut cf, "client flags")?;
    // Fixed newstyle is honoured even without NBD_FLAG_C_FIXED_NEWSTYLE (the spec allows it), so
    // only unknown or unoffered bits are fatal.
    let client = ClientFlags::decode(&cf, OFFERED).map_err(|e| ConnEnd::Protocol(e.to_string()))?;

    let mut structured = false;
    let mut hdr = [0u8; OptionHeader::SIZE];
    let mut data = Vec::new();
    let mut out = Vec::new();
    loop {
        read_message(r, &mut hdr, "an option header")?;
        let h = OptionHeader::decode(&hdr).map_err(|e| ConnEnd::Protocol(e.to_string()))?;
        stats.options += 1;
        out.clear();
        let step = if h.length > MAX_OPTION_DATA {
            if h.option == NBD_OPT_EXPORT_NAME || h.length > MAX_OPTION_SKIP {
                return Err(ConnEnd::Protocol(format!("option {} with {} bytes of data", h.option, h.length)));
            }
            skip(r, h.length.into(), "option data")?;
            OptionReply::error(h.option, NBD_REP_ERR_TOO_BIG, "option data too large").encode(&mut out);
            Step::Continue
        } else {
            data.resize(h.length as usize, 0);
            r.read_exact(&mut data).map_err(|e| truncated(e, "option data"))?;
            answer(inner, &h, &data, &mut structured, &mut out, refusal)
        };
        match step {
            Step::Continue => {
                send(w, &out)?;
                flush(w)?;
            }
            Step::Enter(session, name) => {
                if h.option == NBD_OPT_EXPORT_NAME {
                    ExportNameReply { size: session.size, flags: session.flags() }.encode(client.no_zeroes, &mut out);
                }
                send(w, &out)?;
                flush(w)?;
                stats.export = Some(name);
                stats.structured_replies = structured;
                return Ok(session);
            }
            Step::Abort => {
                // The client may already be gone; the reply is a courtesy.
                let _ = send(w, &out).and_then(|_| flush(w));
                return Err(ConnEnd::SoftDisconnect);
            }
            Step::Hangup(why) => return Err(ConnEnd::Protocol(why)),
        }
    }
}

/// What to do after answering one option.
enum Step {
    /// Send the reply and read the next option.
    Continue,
    /// Send the reply (if any) and enter transmission with the export requested under this name.
    Enter(Session, String),
    /// Send the reply and end the session (`NBD_OPT_ABORT`).
    Abort,
    /// End the session without a reply: `NBD_OPT_EXPORT_NAME` cannot report errors.
    Hangup(String),
}

/// Encodes the reply to one option into `out`.
fn answer(inner: &Inner, h: &OptionHeader, data: &[u8], structured: &mut bool, out: &mut Vec<u8>, refusal: Option<&str>) -> Step {
    let export_name = h.option == NBD_OPT_EXPORT_NAME;
    if let Some(why) = refusal.filter(|_| h.option != NBD_OPT_ABORT) {
        if export_name {
            return Step::Hangup(why.into());
        }
        OptionReply::error(h.option, NBD_REP_ERR_POLICY, why).encode(out);
        return Step::Continue;
    }
    if inner.shutdown.load(Ordering::SeqCst) && h.option != NBD_OPT_ABORT {
        if export_name {
            return Step::Hangup("server shutting down".into());
        }
        OptionReply::error(h.option, NBD_REP_ERR_SHUTDOWN, "server shutting down").encode(out);
        return Step::Continue;
    }
    let opt = match ClientOption::decode(h.option, data) {
        Ok(o) => o,
        Err(e) if export_name => return Step::Hangup(format!("NBD_OPT_EXPORT_NAME: {e}")),
        Err(e) => {
            let code = match e {
                ProtoError::StringTooLong { .. } => NBD_REP_ERR_TOO_BIG,
                _ => NBD_REP_ERR_INVALID,
            };
            OptionReply::error(h.option, code, e.to_string()).encode(out);
            return Step::Continue;
        }
    };
    let ack = |out: &mut Vec<u8>| OptionReply { option: h.option, body: ReplyBody::Ack }.encode(out);
    match opt {
        ClientOption::ExportName(name) => match inner.exports.resolve(&name) {
            None => Step::Hangup(format!("NBD_OPT_EXPORT_NAME: unknown export {name:?}")),
            Some(export) => match Session::new(export, inner, *structured) {
                Ok(session) => Step::Enter(session, name),
                Err(why) => Step::Hangup(why),
            },
        },
        ClientOption::Abort => {
            ack(out);
            Step::Abort
        }
        ClientOption::List => {
            for (name, description) in inner.exports.list() {
                OptionReply { option: h.option, body: ReplyBody::Server { name, description } }.encode(out);
            }
            ack(out);
            Step::Continue
        }
        ClientOption::StructuredReply => {
            if *structured {
                OptionReply::error(h.option, NBD_REP_ERR_INVALID, "structured replies already negotiated").encode(out);
            } else {
                *structured = true;
                ack(out);
            }
            Step::Continue
        }
        ClientOption::Info(req) | ClientOption::Go(req) => match info(inner, h.option, &req, *structured, out) {
            Some(session) if h.option == NBD_OPT_GO => Step::Enter(session, req.name),
            _ => Step::Continue,
        },
        ClientOption::Other { option, .. } => {
            OptionReply::error(option, NBD_REP_ERR_UNSUP, format!("option {option} not supported")).encode(out);
            Step::Continue
        }
    }
}

/// Encodes the answer to `NBD_OPT_INFO`/`NBD_OPT_GO` into `out`; returns the session when the
/// answer ends in `NBD_REP_ACK`.
fn info(inner: &Inner, option: u32, req: &InfoRequest, structured: bool, out: &mut Vec<u8>) -> Option<Session> {
    let Some(export) = inner.exports.resolve(&req.name) else {
        OptionReply::error(option, NBD_REP_ERR_UNKNOWN, format!("unknown export {:?}", req.name)).encode(out);
        return None;
    };
    let session = match Session::new(export, inner, structured) {
        Ok(s) => s,
        Err(msg) => {
            OptionReply::error(option, NBD_REP_ERR_PLATFORM, msg).encode(out);
            return None;
        }
    };
    let reply = |info: InfoReply, out: &mut Vec<u8>| OptionReply { option, body: ReplyBody::Info(info) }.encode(out);
    reply(InfoReply::Export { size: session.size, flags: session.flags() }, out);
    // Block sizes go out even unrequested: the server enforces them, and the spec says servers
    // with constraints SHOULD advertise them (clients ignore what they did not ask for).
    reply(InfoReply::BlockSize(session.sizes), out);
    // Export and block size were sent already; unknown types must be ignored; a type the client
    // (wrongly) lists twice is still answered once.
    let wants = |t: u16| req.requests.contains(&t);
    if wants(NBD_INFO_NAME) || wants(NBD_INFO_DESCRIPTION) {
        let (name, description) = inner.exports.describe(&req.name);
        if wants(NBD_INFO_NAME) {
            reply(InfoReply::Name(name), out);
        }
        if wants(NBD_INFO_DESCRIPTION) && !description.is_empty() {
            reply(InfoReply::Description(description), out);
        }
    }
    OptionReply { option, body: ReplyBody::Ack }.encode(out);
    Some(session)
}


fn send<W: Write>(w: &mut BufWriter<W>, bytes: &[u8]) -> Result<(), ConnEnd> {
    w.write_all(bytes).map_err(io_end)
}

fn flush<W: Write>(w: &mut BufWriter<W>) -> Result<(), ConnEnd> {
    w.flush().map_err(io_end)
}
