//! I/O-free encoding and decoding of NBD protocol messages.
//!
//! Everything here works on byte slices: decoders take `&[u8]` and return a typed
//! [`ProtoError`] for any input they cannot accept (they never panic and never read past the
//! slice), encoders append to a `Vec<u8>` or return a fixed-size array. The server module does the
//! socket I/O; keeping the codec pure lets the proptest fuzzers drive it with arbitrary bytes.
//!
//! * [`handshake`] covers proto.md "Handshake" (sections "Newstyle negotiation" and "Fixed
//!   newstyle negotiation") and the "Handshake phase" values: flag fields, "Option types",
//!   "Option reply types" and the `NBD_INFO_*` information types.
//! * [`transmission`] covers proto.md "Transmission" ("Request message", "Simple reply message",
//!   "Structured reply chunk message") and the "Transmission phase" values: transmission and
//!   command flags, "Structured reply types", "Request types" and "Error values".
//!
//! All integers on the wire are big-endian (proto.md "Conventions").

pub mod handshake;
pub mod transmission;

pub use handshake::*;
pub use transmission::*;

/// The longest string (export name, description, error message) we accept or produce.
///
/// proto.md "Conventions" says strings MUST be no longer than 4096 bytes, so anything longer is a
/// protocol violation we can refuse without reading further into it.
pub const MAX_STRING_LEN: usize = 4096;

/// The largest option data the server buffers during option haggling.
///
/// The longest legitimate option we understand is `NBD_OPT_INFO`/`NBD_OPT_GO`: 4 bytes of name
/// length, a name of at most [`MAX_STRING_LEN`], 2 bytes of count and 2 bytes per information
/// request. Clients ask for a handful of information types, so 64 KiB leaves ample room while
/// bounding what one unauthenticated connection can make the server allocate.
pub const MAX_OPTION_DATA: u32 = 64 * 1024;

/// Why a byte slice could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The slice ended before the message did.
    #[error("truncated message: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes the message needs (at least).
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A magic number did not match; the stream cannot be resynchronised after this.
    #[error("bad magic {found:#x} (expected {expected:#x})")]
    BadMagic {
        /// The magic the message type requires.
        expected: u64,
        /// The value found on the wire.
        found: u64,
    },
    /// A length field disagrees with the data around it.
    #[error("inconsistent length in {what}")]
    BadLength {
        /// Which message or field.
        what: &'static str,
    },
    /// A string was longer than [`MAX_STRING_LEN`].
    #[error("string of {len} bytes exceeds the {MAX_STRING_LEN}-byte limit")]
    StringTooLong {
        /// Length on the wire.
        len: usize,
    },
    /// A string was not UTF-8 or contained a NUL byte (proto.md "Conventions").
    #[error("string is not valid UTF-8 without NUL bytes")]
    BadString,
    /// A flag field had bits the decoder does not accept.
    #[error("unknown flag bits {bits:#x} in {what}")]
    UnknownFlags {
        /// Which flag field.
        what: &'static str,
        /// The bits that were not understood.
        bits: u32,
    },
    /// A field held a value that the message type forbids (e.g. an error reply with error 0).
    #[error("invalid value in {what}")]
    BadValue {
        /// Which field.
        what: &'static str,
    },
}

/// A bounds-checked big-endian reader over a byte slice; every accessor fails instead of
/// panicking so decoders can be written as straight-line code with `?`.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        if self.remaining() < n {
            return Err(ProtoError::Truncated { need: self.pos.saturating_add(n), have: self.buf.len() });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    pub(crate) fn u16(&mut self) -> Result<u16, ProtoError> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, ProtoError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, ProtoError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    /// Fails unless the whole slice was consumed: trailing bytes mean the length field that framed
    /// this message disagrees with its contents.
    pub(crate) fn finish(&self, what: &'static str) -> Result<(), ProtoError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(ProtoError::BadLength { what })
        }
    }
}

/// Validates a wire string per proto.md "Conventions" (length cap, UTF-8, no NUL).
pub fn decode_string(bytes: &[u8]) -> Result<&str, ProtoError> {
    if bytes.len() > MAX_STRING_LEN {
        return Err(ProtoError::StringTooLong { len: bytes.len() });
    }
    let s = std::str::from_utf8(bytes).map_err(|_| ProtoError::BadString)?;
    if s.contains('\0') {
        return Err(ProtoError::BadString);
    }
    Ok(s)
}

/// Cuts `s` to at most [`MAX_STRING_LEN`] bytes on a character boundary, so encoders never emit a
/// string a conforming peer must reject.
pub(crate) fn clamp_string(s: &str) -> &str {
    if s.len() <= MAX_STRING_LEN {
        return s;
    }
    let mut end = MAX_STRING_LEN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
