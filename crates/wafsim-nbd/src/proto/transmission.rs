//! Transmission-phase messages: proto.md "Request message", "Simple reply message", "Structured
//! reply chunk message", and the values of "Transmission phase" (flags, request types,
//! structured reply types, error values).
//!
//! Only compact (non-extended) headers exist here; `EXTENDED_HEADERS` is an experimental
//! extension the server does not negotiate.

use super::{clamp_string, decode_string, ProtoError, Reader};

/// Magic of every client request.
pub const NBD_REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const NBD_SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Magic of a structured reply chunk.
pub const NBD_STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Transmission flag: always set; tells the client the other bits mean something.
pub const NBD_FLAG_HAS_FLAGS: u16 = 1 << 0;
/// Transmission flag: writes will fail.
pub const NBD_FLAG_READ_ONLY: u16 = 1 << 1;
/// Transmission flag: `NBD_CMD_FLUSH` is supported.
pub const NBD_FLAG_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: `NBD_CMD_FLAG_FUA` is supported.
pub const NBD_FLAG_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: the medium behaves like a rotating disk.
pub const NBD_FLAG_ROTATIONAL: u16 = 1 << 4;
/// Transmission flag: `NBD_CMD_TRIM` is supported.
pub const NBD_FLAG_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: `NBD_CMD_WRITE_ZEROES` and `NBD_CMD_FLAG_NO_HOLE` are supported.
pub const NBD_FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// Transmission flag: `NBD_CMD_FLAG_DF` is supported (only with structured replies).
pub const NBD_FLAG_SEND_DF: u16 = 1 << 7;
/// Transmission flag: flush/FUA effects are visible across all connections to the export.
pub const NBD_FLAG_CAN_MULTI_CONN: u16 = 1 << 8;
/// Transmission flag: experimental `RESIZE` extension (never set here).
pub const NBD_FLAG_SEND_RESIZE: u16 = 1 << 9;
/// Transmission flag: `NBD_CMD_CACHE` is understood.
pub const NBD_FLAG_SEND_CACHE: u16 = 1 << 10;
/// Transmission flag: `NBD_CMD_FLAG_FAST_ZERO` is supported (never set here).
pub const NBD_FLAG_SEND_FAST_ZERO: u16 = 1 << 11;

/// Command flag: force unit access; reply only once the data is durable.
pub const NBD_CMD_FLAG_FUA: u16 = 1 << 0;
/// Command flag (`WRITE_ZEROES`): do not leave a hole.
pub const NBD_CMD_FLAG_NO_HOLE: u16 = 1 << 1;
/// Command flag (`READ`): answer with a single content chunk.
pub const NBD_CMD_FLAG_DF: u16 = 1 << 2;
/// Command flag (`BLOCK_STATUS`): one extent only.
pub const NBD_CMD_FLAG_REQ_ONE: u16 = 1 << 3;
/// Command flag (`WRITE_ZEROES`): fail unless zeroing is fast.
pub const NBD_CMD_FLAG_FAST_ZERO: u16 = 1 << 4;

/// Structured reply flag: last chunk of this reply.
pub const NBD_REPLY_FLAG_DONE: u16 = 1 << 0;

/// Structured reply type: no payload; ends a reply.
pub const NBD_REPLY_TYPE_NONE: u16 = 0;
/// Structured reply type: offset + data.
pub const NBD_REPLY_TYPE_OFFSET_DATA: u16 = 1;
/// Structured reply type: offset + length of a zero region.
pub const NBD_REPLY_TYPE_OFFSET_HOLE: u16 = 2;
/// Structured reply type: block status descriptors.
pub const NBD_REPLY_TYPE_BLOCK_STATUS: u16 = 5;
/// Bit 15 marks error chunk types.
pub const NBD_REPLY_TYPE_ERROR_BIT: u16 = 1 << 15;
/// Structured reply type: error for the whole request.
pub const NBD_REPLY_TYPE_ERROR: u16 = NBD_REPLY_TYPE_ERROR_BIT | 1;
/// Structured reply type: error at an offset.
pub const NBD_REPLY_TYPE_ERROR_OFFSET: u16 = NBD_REPLY_TYPE_ERROR_BIT | 2;

/// A request type (proto.md "Request types").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// `NBD_CMD_READ` (0).
    Read,
    /// `NBD_CMD_WRITE` (1); `length` bytes of payload follow the header.
    Write,
    /// `NBD_CMD_DISC` (2); no reply.
    Disc,
    /// `NBD_CMD_FLUSH` (3).
    Flush,
    /// `NBD_CMD_TRIM` (4).
    Trim,
    /// `NBD_CMD_CACHE` (5).
    Cache,
    /// `NBD_CMD_WRITE_ZEROES` (6).
    WriteZeroes,
    /// `NBD_CMD_BLOCK_STATUS` (7).
    BlockStatus,
    /// Any other type; kept so the server can answer `NBD_EINVAL` instead of dropping the link.
    Other(u16),
}

impl Command {
    /// The wire value.
    pub fn code(self) -> u16 {
        match self {
            Command::Read => 0,
            Command::Write => 1,
            Command::Disc => 2,
            Command::Flush => 3,
            Command::Trim => 4,
            Command::Cache => 5,
            Command::WriteZeroes => 6,
            Command::BlockStatus => 7,
            Command::Other(c) => c,
        }
    }

    /// Maps a wire value to a command.
    pub fn from_code(c: u16) -> Self {
        match c {
            0 => Command::Read,
            1 => Command::Write,
            2 => Command::Disc,
            3 => Command::Flush,
            4 => Command::Trim,
            5 => Command::Cache,
            6 => Command::WriteZeroes,
            7 => Command::BlockStatus,
            c => Command::Other(c),
        }
    }
}

/// A request header (proto.md "Request message"). The write payload is not part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Command flags (`NBD_CMD_FLAG_*`), unvalidated: which flags are legal depends on the
    /// command and on negotiation, so the server checks them per request.
    pub flags: u16,
    /// Request type.
    pub command: Command,
    /// Opaque value echoed in the reply (called "handle" in older spec versions).
    pub cookie: u64,
    /// Byte offset into the export.
    pub offset: u64,
    /// Byte length of the operation (and of the payload, for writes).
    pub length: u32,
}

impl Request {
    /// Encoded header size in bytes.
    pub const SIZE: usize = 28;

    /// Serialises the header.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&NBD_REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.command.code().to_be_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// Parses a header from the first [`Self::SIZE`] bytes of `buf`. A bad magic is fatal for the
    /// connection: without it there is no way to find where the next request starts.
    pub fn decode(buf: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(buf);
        let magic = r.u32()?;
        if magic != NBD_REQUEST_MAGIC {
            return Err(ProtoError::BadMagic { expected: NBD_REQUEST_MAGIC.into(), found: magic.into() });
        }
        Ok(Request {
            flags: r.u16()?,
            command: Command::from_code(r.u16()?),
            cookie: r.u64()?,
            offset: r.u64()?,
            length: r.u32()?,
        })
    }
}

/// Error values for replies (proto.md "Error values"). The numbers match Linux errno values, as
/// the spec chose them for compatibility with old clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Errno {
    /// `NBD_EPERM`: e.g. a write to a read-only export.
    Perm = 1,
    /// `NBD_EIO`: the backing store failed.
    Io = 5,
    /// `NBD_ENOMEM`.
    NoMem = 12,
    /// `NBD_EINVAL`: bad range, alignment, flag or command.
    Inval = 22,
    /// `NBD_ENOSPC`: a write beyond the end of the export, or the store is full.
    NoSpc = 28,
    /// `NBD_EOVERFLOW`: a payload-free request or unfragmented read too large to serve.
    Overflow = 75,
    /// `NBD_ENOTSUP`: only for fast-zero requests.
    NotSup = 95,
    /// `NBD_ESHUTDOWN`: the server is going away.
    Shutdown = 108,
}

impl Errno {
    /// The wire value.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Maps a wire value back; `None` for values the spec does not define (clients treat those as
    /// `EINVAL`).
    pub fn from_code(c: u32) -> Option<Self> {
        Some(match c {
            1 => Errno::Perm,
            5 => Errno::Io,
            12 => Errno::NoMem,
            22 => Errno::Inval,
            28 => Errno::NoSpc,
            75 => Errno::Overflow,
            95 => Errno::NotSup,
            108 => Errno::Shutdown,
            _ => return None,
        })
    }
}

/// A simple reply header; for a successful read, `length` bytes of data follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimpleReply {
    /// 0 on success, else an [`Errno`] value.
    pub error: u32,
    /// The request's cookie.
    pub cookie: u64,
}

impl SimpleReply {
    /// Encoded size in bytes.
    pub const SIZE: usize = 16;

    /// Serialises the header.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&NBD_SIMPLE_REPLY_MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&self.error.to_be_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_be_bytes());
        b
    }

    /// Parses the header.
    pub fn decode(buf: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(buf);
        let magic = r.u32()?;
        if magic != NBD_SIMPLE_REPLY_MAGIC {
            return Err(ProtoError::BadMagic { expected: NBD_SIMPLE_REPLY_MAGIC.into(), found: magic.into() });
        }
        Ok(SimpleReply { error: r.u32()?, cookie: r.u64()? })
    }
}

/// A structured reply chunk header; `length` bytes of payload follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// `NBD_REPLY_FLAG_*`.
    pub flags: u16,
    /// `NBD_REPLY_TYPE_*`.
    pub reply_type: u16,
    /// The request's cookie.
    pub cookie: u64,
    /// Payload length.
    pub length: u32,
}

impl ChunkHeader {
    /// Encoded size in bytes.
    pub const SIZE: usize = 20;

    /// Serialises the header.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&NBD_STRUCTURED_REPLY_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.reply_type.to_be_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_be_bytes());
        b[16..20].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// Parses the header.
    pub fn decode(buf: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(buf);
        let magic = r.u32()?;
        if magic != NBD_STRUCTURED_REPLY_MAGIC {
            return Err(ProtoError::BadMagic {
                expected: NBD_STRUCTURED_REPLY_MAGIC.into(),
                found: magic.into(),
            });
        }
        Ok(ChunkHeader { flags: r.u16()?, reply_type: r.u16()?, cookie: r.u64()?, length: r.u32()? })
    }
}

/// The decoded payload of a structured reply chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkPayload {
    /// `NBD_REPLY_TYPE_NONE`.
    None,
    /// `NBD_REPLY_TYPE_OFFSET_DATA`.
    OffsetData {
        /// Absolute export offset of `data`.
        offset: u64,
        /// At least one byte of export content.
        data: Vec<u8>,
    },
    /// `NBD_REPLY_TYPE_OFFSET_HOLE`.
    OffsetHole {
        /// Absolute export offset.
        offset: u64,
        /// Nonzero length of the zero region.
        length: u32,
    },
    /// `NBD_REPLY_TYPE_ERROR`.
    Error {
        /// Nonzero error value.
        error: u32,
        /// Optional human-readable message.
        message: String,
    },
    /// `NBD_REPLY_TYPE_ERROR_OFFSET`.
    ErrorOffset {
        /// Nonzero error value.
        error: u32,
        /// Optional human-readable message.
        message: String,
        /// Where the error happened.
        offset: u64,
    },
    /// Any other type (including block status, which this server never sends).
    Other {
        /// Chunk type.
        reply_type: u16,
        /// Raw payload.
        data: Vec<u8>,
    },
}

impl ChunkPayload {
    /// The chunk type this payload is sent as.
    pub fn reply_type(&self) -> u16 {
        match self {
            ChunkPayload::None => NBD_REPLY_TYPE_NONE,
            ChunkPayload::OffsetData { .. } => NBD_REPLY_TYPE_OFFSET_DATA,
            ChunkPayload::OffsetHole { .. } => NBD_REPLY_TYPE_OFFSET_HOLE,
            ChunkPayload::Error { .. } => NBD_REPLY_TYPE_ERROR,
            ChunkPayload::ErrorOffset { .. } => NBD_REPLY_TYPE_ERROR_OFFSET,
            ChunkPayload::Other { reply_type, .. } => *reply_type,
        }
    }

    /// Appends the payload (without header) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ChunkPayload::None => {}
            ChunkPayload::OffsetData { offset, data } => {
                out.extend_from_slice(&offset.to_be_bytes());
                out.extend_from_slice(data);
            }
            ChunkPayload::OffsetHole { offset, length } => {
                out.extend_from_slice(&offset.to_be_bytes());
                out.extend_from_slice(&length.to_be_bytes());
            }
            ChunkPayload::Error { error, message } => encode_error_payload(*error, message, out),
            ChunkPayload::ErrorOffset { error, message, offset } => {
                encode_error_payload(*error, message, out);
                out.extend_from_slice(&offset.to_be_bytes());
            }
            ChunkPayload::Other { data, .. } => out.extend_from_slice(data),
        }
    }

    /// Decodes a payload of chunk type `reply_type`, enforcing the per-type length rules of
    /// proto.md "Structured reply types".
    pub fn decode(reply_type: u16, data: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(data);
        let v = match reply_type {
            NBD_REPLY_TYPE_NONE => ChunkPayload::None,
            NBD_REPLY_TYPE_OFFSET_DATA => {
                let offset = r.u64()?;
                let data = r.rest();
                if data.is_empty() {
                    return Err(ProtoError::BadLength { what: "NBD_REPLY_TYPE_OFFSET_DATA" });
                }
                ChunkPayload::OffsetData { offset, data: data.to_vec() }
            }
            NBD_REPLY_TYPE_OFFSET_HOLE => {
                let offset = r.u64()?;
                let length = r.u32()?;
                if length == 0 {
                    return Err(ProtoError::BadValue { what: "hole size" });
                }
                ChunkPayload::OffsetHole { offset, length }
            }
            NBD_REPLY_TYPE_ERROR | NBD_REPLY_TYPE_ERROR_OFFSET => {
                let error = r.u32()?;
                if error == 0 {
                    return Err(ProtoError::BadValue { what: "error chunk error value" });
                }
                let n = r.u16()? as usize;
                let message = decode_string(r.bytes(n)?)?.to_owned();
                if reply_type == NBD_REPLY_TYPE_ERROR {
                    ChunkPayload::Error { error, message }
                } else {
                    ChunkPayload::ErrorOffset { error, message, offset: r.u64()? }
                }
            }
            t => ChunkPayload::Other { reply_type: t, data: r.rest().to_vec() },
        };
        r.finish("structured reply payload")?;
        Ok(v)
    }
}

/// Appends the common prefix of error chunks: error, message length, message.
pub fn encode_error_payload(error: u32, message: &str, out: &mut Vec<u8>) {
    let m = clamp_string(message);
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(&(m.len() as u16).to_be_bytes());
    out.extend_from_slice(m.as_bytes());
}
