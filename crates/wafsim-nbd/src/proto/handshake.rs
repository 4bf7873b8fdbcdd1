//! Handshake-phase messages: proto.md "Fixed newstyle negotiation", "Option types", "Option reply
//! types" and the `NBD_INFO_*` types listed under `NBD_REP_INFO`.
//!
//! Oldstyle negotiation and non-fixed newstyle are not produced (proto.md says the reference
//! server dropped oldstyle in 3.10; fixed newstyle is the baseline of "Compatibility and
//! interoperability").

use super::{clamp_string, decode_string, ProtoError, Reader};

/// ASCII `NBDMAGIC`, the first 8 bytes a server sends (`INIT_PASSWD`).
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// ASCII `IHAVEOPT`: sent by the server after `NBDMAGIC` and by the client before every option.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Magic that starts every fixed-newstyle option reply.
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;

/// Handshake flag: the server speaks fixed newstyle.
pub const NBD_FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// Handshake flag: the server can omit the 124 zero bytes after `NBD_OPT_EXPORT_NAME`.
pub const NBD_FLAG_NO_ZEROES: u16 = 1 << 1;

/// Client flag: the client speaks fixed newstyle.
pub const NBD_FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// Client flag: the client wants no zero padding after `NBD_OPT_EXPORT_NAME`.
pub const NBD_FLAG_C_NO_ZEROES: u32 = 1 << 1;

/// Option: choose an export and enter transmission without a way to report errors.
pub const NBD_OPT_EXPORT_NAME: u32 = 1;
/// Option: the client ends the session (soft disconnect).
pub const NBD_OPT_ABORT: u32 = 2;
/// Option: list exports.
pub const NBD_OPT_LIST: u32 = 3;
/// Option: withdrawn `PEEK_EXPORT` extension; never implemented.
pub const NBD_OPT_PEEK_EXPORT: u32 = 4;
/// Option: upgrade to TLS (this server runs in NOTLS mode and refuses it).
pub const NBD_OPT_STARTTLS: u32 = 5;
/// Option: describe an export without entering transmission.
pub const NBD_OPT_INFO: u32 = 6;
/// Option: describe an export and enter transmission.
pub const NBD_OPT_GO: u32 = 7;
/// Option: use structured replies during transmission.
pub const NBD_OPT_STRUCTURED_REPLY: u32 = 8;
/// Option: list metadata contexts (not supported here).
pub const NBD_OPT_LIST_META_CONTEXT: u32 = 9;
/// Option: select metadata contexts (not supported here).
pub const NBD_OPT_SET_META_CONTEXT: u32 = 10;
/// Option: experimental extended headers (not supported here).
pub const NBD_OPT_EXTENDED_HEADERS: u32 = 11;

/// Reply: option accepted / list finished.
pub const NBD_REP_ACK: u32 = 1;
/// Reply: one export in an `NBD_OPT_LIST` answer.
pub const NBD_REP_SERVER: u32 = 2;
/// Reply: one piece of information in an `NBD_OPT_INFO`/`NBD_OPT_GO` answer.
pub const NBD_REP_INFO: u32 = 3;
/// Reply: a metadata context (never sent by this server).
pub const NBD_REP_META_CONTEXT: u32 = 4;

/// Bit 31 marks every option error reply.
pub const NBD_REP_FLAG_ERROR: u32 = 1 << 31;
/// Error: option unknown to this server.
pub const NBD_REP_ERR_UNSUP: u32 = NBD_REP_FLAG_ERROR | 1;
/// Error: option known but forbidden by policy.
pub const NBD_REP_ERR_POLICY: u32 = NBD_REP_FLAG_ERROR | 2;
/// Error: option known but syntactically or semantically invalid.
pub const NBD_REP_ERR_INVALID: u32 = NBD_REP_FLAG_ERROR | 3;
/// Error: option not supported on this platform.
pub const NBD_REP_ERR_PLATFORM: u32 = NBD_REP_FLAG_ERROR | 4;
/// Error: TLS required first (never sent by a NOTLS server).
pub const NBD_REP_ERR_TLS_REQD: u32 = NBD_REP_FLAG_ERROR | 5;
/// Error: the requested export does not exist.
pub const NBD_REP_ERR_UNKNOWN: u32 = NBD_REP_FLAG_ERROR | 6;
/// Error: the server is shutting down.
pub const NBD_REP_ERR_SHUTDOWN: u32 = NBD_REP_FLAG_ERROR | 7;
/// Error: the client must request `NBD_INFO_BLOCK_SIZE` first.
pub const NBD_REP_ERR_BLOCK_SIZE_REQD: u32 = NBD_REP_FLAG_ERROR | 8;
/// Error: request or reply too large.
pub const NBD_REP_ERR_TOO_BIG: u32 = NBD_REP_FLAG_ERROR | 9;
/// Error: experimental extended headers required.
pub const NBD_REP_ERR_EXT_HEADER_REQD: u32 = NBD_REP_FLAG_ERROR | 10;

/// Information type: export size and transmission flags (mandatory before a successful GO).
pub const NBD_INFO_EXPORT: u16 = 0;
/// Information type: canonical export name.
pub const NBD_INFO_NAME: u16 = 1;
/// Information type: human-readable description.
pub const NBD_INFO_DESCRIPTION: u16 = 2;
/// Information type: minimum / preferred / maximum block sizes.
pub const NBD_INFO_BLOCK_SIZE: u16 = 3;

/// Zero bytes that follow the `NBD_OPT_EXPORT_NAME` answer unless `NO_ZEROES` was negotiated.
pub const EXPORT_NAME_PADDING: usize = 124;

/// The server's first message: `NBDMAGIC`, `IHAVEOPT`, 16 bits of handshake flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerGreeting {
    /// Handshake flags (`NBD_FLAG_FIXED_NEWSTYLE`, `NBD_FLAG_NO_ZEROES`).
    pub flags: u16,
}

impl ServerGreeting {
    /// Encoded size in bytes.
    pub const SIZE: usize = 18;

    /// Serialises the greeting.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
        b[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
        b[16..18].copy_from_slice(&self.flags.to_be_bytes());
        b
    }

    /// Parses a greeting from the first [`Self::SIZE`] bytes of `buf` (used by clients and tests).
    pub fn decode(buf: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(buf);
        expect_magic(&mut r, NBDMAGIC)?;
        // A server sending the oldstyle cliserv magic here is not speaking newstyle at all.
        expect_magic(&mut r, IHAVEOPT)?;
        Ok(ServerGreeting { flags: r.u16()? })
    }
}

/// The client's 32-bit answer to the greeting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientFlags {
    /// `NBD_FLAG_C_FIXED_NEWSTYLE`.
    pub fixed_newstyle: bool,
    /// `NBD_FLAG_C_NO_ZEROES`.
    pub no_zeroes: bool,
}

impl ClientFlags {
    /// Encoded size in bytes.
    pub const SIZE: usize = 4;

    /// Serialises the flags.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut v = 0u32;
        if self.fixed_newstyle {
            v |= NBD_FLAG_C_FIXED_NEWSTYLE;
        }
        if self.no_zeroes {
            v |= NBD_FLAG_C_NO_ZEROES;
        }
        v.to_be_bytes()
    }

    /// Parses client flags, rejecting bits that are unknown or that answer a handshake flag the
    /// server (`offered`) did not set: proto.md "Client flags" requires the server to drop the
    /// connection in both cases, so the caller treats any error here as fatal.
    pub fn decode(buf: &[u8], offered: u16) -> Result<Self, ProtoError> {
        let v = Reader::new(buf).u32()?;
        let mut allowed = NBD_FLAG_C_FIXED_NEWSTYLE;
        if offered & NBD_FLAG_NO_ZEROES != 0 {
            allowed |= NBD_FLAG_C_NO_ZEROES;
        }
        if v & !allowed != 0 {
            return Err(ProtoError::UnknownFlags { what: "client flags", bits: v & !allowed });
        }
        Ok(ClientFlags {
            fixed_newstyle: v & NBD_FLAG_C_FIXED_NEWSTYLE != 0,
            no_zeroes: v & NBD_FLAG_C_NO_ZEROES != 0,
        })
    }
}

/// The fixed 16-byte header of a client option: `IHAVEOPT`, option, data length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionHeader {
    /// Option code (`NBD_OPT_*`), possibly one this server does not know.
    pub option: u32,
    /// Length of the option data that follows.
    pub length: u32,
}

impl OptionHeader {
    /// Encoded size in bytes.
    pub const SIZE: usize = 16;

    /// Serialises the header.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&IHAVEOPT.to_be_bytes());
        b[8..12].copy_from_slice(&self.option.to_be_bytes());
        b[12..16].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// Parses the header; a wrong magic means the stream is out of sync and must be closed.
    pub fn decode(buf: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(buf);
        expect_magic(&mut r, IHAVEOPT)?;
        Ok(OptionHeader { option: r.u32()?, length: r.u32()? })
    }
}

/// The data of `NBD_OPT_INFO` and `NBD_OPT_GO` (both share one layout).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InfoRequest {
    /// Export name; empty selects the default export.
    pub name: String,
    /// Requested `NBD_INFO_*` types, in the client's order (unknown ones are kept so the server
    /// can ignore them as the spec demands, rather than failing the parse).
    pub requests: Vec<u16>,
}

impl InfoRequest {
    fn decode(data: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(data);
        let name_len = r.u32()? as usize;
        // The name must leave room for the 16-bit request count.
        if name_len > data.len().saturating_sub(6) {
            return Err(ProtoError::BadLength { what: "NBD_OPT_INFO/GO name length" });
        }
        let name = decode_string(r.bytes(name_len)?)?.to_owned();
        let count = r.u16()? as usize;
        if r.remaining() != count * 2 {
            return Err(ProtoError::BadLength { what: "NBD_OPT_INFO/GO request count" });
        }
        let mut requests = Vec::with_capacity(count);
        for _ in 0..count {
            requests.push(r.u16()?);
        }
        Ok(InfoRequest { name, requests })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let name = clamp_string(&self.name);
        out.extend_from_slice(&(name.len() as u32).to_be_bytes());
        out.extend_from_slice(name.as_bytes());
        // The count field is 16 bits; more requests than that cannot be expressed.
        let n = self.requests.len().min(u16::MAX as usize);
        out.extend_from_slice(&(n as u16).to_be_bytes());
        for r in &self.requests[..n] {
            out.extend_from_slice(&r.to_be_bytes());
        }
    }
}

/// A client option with its data decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOption {
    /// `NBD_OPT_EXPORT_NAME` with the export name.
    ExportName(String),
    /// `NBD_OPT_ABORT` (any data is ignored, as the spec asks servers to do).
    Abort,
    /// `NBD_OPT_LIST`.
    List,
    /// `NBD_OPT_INFO`.
    Info(InfoRequest),
    /// `NBD_OPT_GO`.
    Go(InfoRequest),
    /// `NBD_OPT_STRUCTURED_REPLY`.
    StructuredReply,
    /// Any other option code, known to the spec or not; this server answers `NBD_REP_ERR_UNSUP`.
    Other {
        /// Option code.
        option: u32,
        /// Raw option data.
        data: Vec<u8>,
    },
}

impl ClientOption {
    /// Decodes the data of option `option`. An error means the option is known but malformed, to
    /// be answered with `NBD_REP_ERR_INVALID` (or, for `NBD_OPT_EXPORT_NAME`, which cannot be
    /// answered with an error, by ending the session).
    pub fn decode(option: u32, data: &[u8]) -> Result<Self, ProtoError> {
        Ok(match option {
            NBD_OPT_EXPORT_NAME => ClientOption::ExportName(decode_string(data)?.to_owned()),
            NBD_OPT_ABORT => ClientOption::Abort,
            NBD_OPT_LIST | NBD_OPT_STRUCTURED_REPLY => {
                if !data.is_empty() {
                    return Err(ProtoError::BadLength { what: "option that takes no data" });
                }
                if option == NBD_OPT_LIST {
                    ClientOption::List
                } else {
                    ClientOption::StructuredReply
                }
            }
            NBD_OPT_INFO => ClientOption::Info(InfoRequest::decode(data)?),
            NBD_OPT_GO => ClientOption::Go(InfoRequest::decode(data)?),
            _ => ClientOption::Other { option, data: data.to_vec() },
        })
    }

    /// The option code.
    pub fn code(&self) -> u32 {
        match self {
            ClientOption::ExportName(_) => NBD_OPT_EXPORT_NAME,
            ClientOption::Abort => NBD_OPT_ABORT,
            ClientOption::List => NBD_OPT_LIST,
            ClientOption::Info(_) => NBD_OPT_INFO,
            ClientOption::Go(_) => NBD_OPT_GO,
            ClientOption::StructuredReply => NBD_OPT_STRUCTURED_REPLY,
            ClientOption::Other { option, .. } => *option,
        }
    }

    /// Appends the whole option (header and data) to `out`, as a client sends it.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&OptionHeader { option: self.code(), length: 0 }.encode());
        match self {
            ClientOption::ExportName(name) => out.extend_from_slice(clamp_string(name).as_bytes()),
            ClientOption::Abort | ClientOption::List | ClientOption::StructuredReply => {}
            ClientOption::Info(req) | ClientOption::Go(req) => req.encode(out),
            ClientOption::Other { data, .. } => out.extend_from_slice(data),
        }
        let len = (out.len() - start - OptionHeader::SIZE) as u32;
        out[start + 12..start + 16].copy_from_slice(&len.to_be_bytes());
    }
}

/// The fixed 20-byte header of an option reply: magic, option, reply type, data length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionReplyHeader {
    /// The option being answered.
    pub option: u32,
    /// `NBD_REP_*`.
    pub reply_type: u32,
    /// Length of the reply data that follows.
    pub length: u32,
}

impl OptionReplyHeader {
    /// Encoded size in bytes.
    pub const SIZE: usize = 20;

    /// Serialises the header.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
        b[8..12].copy_from_slice(&self.option.to_be_bytes());
        b[12..16].copy_from_slice(&self.reply_type.to_be_bytes());
        b[16..20].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// Parses the header.
    pub fn decode(buf: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(buf);
        expect_magic(&mut r, OPTION_REPLY_MAGIC)?;
        Ok(OptionReplyHeader { option: r.u32()?, reply_type: r.u32()?, length: r.u32()? })
    }
}

/// Size constraints as carried by `NBD_INFO_BLOCK_SIZE` (proto.md "Size constraints").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSizes {
    /// Smallest addressable length and alignment; a power of two, at most 64 KiB.
    pub min: u32,
    /// Size at which aligned I/O is efficient; a power of two, at least `max(min, 512)`.
    pub preferred: u32,
    /// Largest payload the server accepts in one request; at least `preferred`.
    pub max: u32,
}

impl BlockSizes {
    /// 512-byte sectors, 4 KiB preferred, 32 MiB payloads: the spec's interoperable defaults for
    /// clients, and what most block-device-backed servers advertise.
    pub const DEFAULT: BlockSizes = BlockSizes { min: 512, preferred: 4096, max: 32 * 1024 * 1024 };

    /// Whether the values obey the rules of proto.md "Size constraints".
    pub fn is_valid(&self) -> bool {
        self.min.is_power_of_two()
            && self.min <= 65536
            && self.preferred.is_power_of_two()
            && self.preferred >= self.min.max(512)
            && self.max >= self.preferred
    }
}

/// One `NBD_REP_INFO` item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InfoReply {
    /// `NBD_INFO_EXPORT`: size and transmission flags.
    Export {
        /// Export size in bytes.
        size: u64,
        /// Transmission flags (`NBD_FLAG_*`).
        flags: u16,
    },
    /// `NBD_INFO_NAME`: canonical export name.
    Name(String),
    /// `NBD_INFO_DESCRIPTION`: human-readable description.
    Description(String),
    /// `NBD_INFO_BLOCK_SIZE`.
    BlockSize(BlockSizes),
    /// An information type this codec does not know (clients must ignore these).
    Unknown {
        /// Information type.
        info_type: u16,
        /// Raw payload after the type.
        data: Vec<u8>,
    },
}

impl InfoReply {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            InfoReply::Export { size, flags } => {
                out.extend_from_slice(&NBD_INFO_EXPORT.to_be_bytes());
                out.extend_from_slice(&size.to_be_bytes());
                out.extend_from_slice(&flags.to_be_bytes());
            }
            InfoReply::Name(s) | InfoReply::Description(s) => {
                let t = if matches!(self, InfoReply::Name(_)) { NBD_INFO_NAME } else { NBD_INFO_DESCRIPTION };
                out.extend_from_slice(&t.to_be_bytes());
                out.extend_from_slice(clamp_string(s).as_bytes());
            }
            InfoReply::BlockSize(b) => {
                out.extend_from_slice(&NBD_INFO_BLOCK_SIZE.to_be_bytes());
                out.extend_from_slice(&b.min.to_be_bytes());
                out.extend_from_slice(&b.preferred.to_be_bytes());
                out.extend_from_slice(&b.max.to_be_bytes());
            }
            InfoReply::Unknown { info_type, data } => {
                out.extend_from_slice(&info_type.to_be_bytes());
                out.extend_from_slice(data);
            }
        }
    }

    fn decode(data: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(data);
        let t = r.u16()?;
        let v = match t {
            NBD_INFO_EXPORT => InfoReply::Export { size: r.u64()?, flags: r.u16()? },
            NBD_INFO_NAME => InfoReply::Name(decode_string(r.rest())?.to_owned()),
            NBD_INFO_DESCRIPTION => InfoReply::Description(decode_string(r.rest())?.to_owned()),
            NBD_INFO_BLOCK_SIZE => {
                InfoReply::BlockSize(BlockSizes { min: r.u32()?, preferred: r.u32()?, max: r.u32()? })
            }
            _ => InfoReply::Unknown { info_type: t, data: r.rest().to_vec() },
        };
        r.finish("NBD_REP_INFO")?;
        Ok(v)
    }
}

/// The body of an option reply, by reply type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyBody {
    /// `NBD_REP_ACK`.
    Ack,
    /// `NBD_REP_SERVER`: one export of a list.
    Server {
        /// Export name as usable in `NBD_OPT_GO`.
        name: String,
        /// Free-form description (may be empty).
        description: String,
    },
    /// `NBD_REP_INFO`.
    Info(InfoReply),
    /// Any reply type with bit 31 set (`NBD_REP_ERR_*`), with its optional message.
    Error {
        /// The reply type, bit 31 included.
        code: u32,
        /// Human-readable message (may be empty).
        message: String,
    },
    /// A non-error reply type this codec does not know.
    Other {
        /// Reply type.
        reply_type: u32,
        /// Raw data.
        data: Vec<u8>,
    },
}

/// A complete option reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionReply {
    /// The option being answered.
    pub option: u32,
    /// The reply.
    pub body: ReplyBody,
}

impl OptionReply {
    /// Shorthand for an error reply.
    pub fn error(option: u32, code: u32, message: impl Into<String>) -> Self {
        OptionReply { option, body: ReplyBody::Error { code, message: message.into() } }
    }

    /// The `NBD_REP_*` type this reply is sent as.
    pub fn reply_type(&self) -> u32 {
        match &self.body {
            ReplyBody::Ack => NBD_REP_ACK,
            ReplyBody::Server { .. } => NBD_REP_SERVER,
            ReplyBody::Info(_) => NBD_REP_INFO,
            ReplyBody::Error { code, .. } => *code,
            ReplyBody::Other { reply_type, .. } => *reply_type,
        }
    }

    /// Appends header and data to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(
            &OptionReplyHeader { option: self.option, reply_type: self.reply_type(), length: 0 }.encode(),
        );
        match &self.body {
            ReplyBody::Ack => {}
            ReplyBody::Server { name, description } => {
                let name = clamp_string(name);
                out.extend_from_slice(&(name.len() as u32).to_be_bytes());
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(clamp_string(description).as_bytes());
            }
            ReplyBody::Info(info) => info.encode(out),
            ReplyBody::Error { message, .. } => out.extend_from_slice(clamp_string(message).as_bytes()),
            ReplyBody::Other { data, .. } => out.extend_from_slice(data),
        }
        let len = (out.len() - start - OptionReplyHeader::SIZE) as u32;
        out[start + 16..start + 20].copy_from_slice(&len.to_be_bytes());
    }

    /// Decodes the data of a reply whose header was already parsed.
    pub fn decode_body(header: &OptionReplyHeader, data: &[u8]) -> Result<Self, ProtoError> {
        if data.len() != header.length as usize {
            return Err(ProtoError::BadLength { what: "option reply" });
        }
        let body = match header.reply_type {
            NBD_REP_ACK => {
                if !data.is_empty() {
                    return Err(ProtoError::BadLength { what: "NBD_REP_ACK" });
                }
                ReplyBody::Ack
            }
            NBD_REP_SERVER => {
                let mut r = Reader::new(data);
                let n = r.u32()? as usize;
                if n > data.len() - 4 {
                    return Err(ProtoError::BadLength { what: "NBD_REP_SERVER name length" });
                }
                let name = decode_string(r.bytes(n)?)?.to_owned();
                let description = decode_string(r.rest())?.to_owned();
                ReplyBody::Server { name, description }
            }
            NBD_REP_INFO => ReplyBody::Info(InfoReply::decode(data)?),
            t if t & NBD_REP_FLAG_ERROR != 0 => {
                ReplyBody::Error { code: t, message: decode_string(data)?.to_owned() }
            }
            t => ReplyBody::Other { reply_type: t, data: data.to_vec() },
        };
        Ok(OptionReply { option: header.option, body })
    }

    /// Decodes one whole reply from the front of `buf`, returning it and the bytes consumed.
    pub fn decode(buf: &[u8]) -> Result<(Self, usize), ProtoError> {
        let header = OptionReplyHeader::decode(buf)?;
        let end = OptionReplyHeader::SIZE.saturating_add(header.length as usize);
        if buf.len() < end {
            return Err(ProtoError::Truncated { need: end, have: buf.len() });
        }
        Ok((Self::decode_body(&header, &buf[OptionReplyHeader::SIZE..end])?, end))
    }
}

/// The server's answer to `NBD_OPT_EXPORT_NAME`: size, transmission flags, and 124 zero bytes
/// unless both sides agreed on `NO_ZEROES`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportNameReply {
    /// Export size in bytes.
    pub size: u64,
    /// Transmission flags.
    pub flags: u16,
}

impl ExportNameReply {
    /// Size without padding.
    pub const SIZE: usize = 10;

    /// Appends the reply, padded unless `no_zeroes`.
    pub fn encode(&self, no_zeroes: bool, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.size.to_be_bytes());
        out.extend_from_slice(&self.flags.to_be_bytes());
        if !no_zeroes {
            out.extend_from_slice(&[0u8; EXPORT_NAME_PADDING]);
        }
    }

    /// Parses the first [`Self::SIZE`] bytes (the caller skips any padding).
    pub fn decode(buf: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(buf);
        Ok(ExportNameReply { size: r.u64()?, flags: r.u16()? })
    }
}

fn expect_magic(r: &mut Reader<'_>, expected: u64) -> Result<(), ProtoError> {
    let found = r.u64()?;
    if found != expected {
        return Err(ProtoError::BadMagic { expected, found });
    }
    Ok(())
}
