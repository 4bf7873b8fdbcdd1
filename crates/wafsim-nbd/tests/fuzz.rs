//! Property-based fuzzing of the codec and of a whole server connection.
//!
//! * Every decoder gets arbitrary bytes and must return `Ok` or `Err`, never panic.
//! * Valid messages round-trip: `decode(encode(m)) == m`.
//! * `Server::serve_connection` is fed arbitrary byte streams (raw, after a valid greeting, and
//!   after a valid `NBD_OPT_GO` as sequences of half-valid requests) through in-memory buffers and
//!   must finish without panicking.
//!
//! The default run uses [`QUICK_CASES`] cases per property so `cargo test` stays fast. The
//! `#[ignore]`d `fuzz_1m_*` tests run [`LONG_CASES`] (1,000,000) cases per property:
//!
//! ```text
//! cargo test -p wafsim-nbd --release --test fuzz -- --ignored fuzz
//! ```

use std::io::Cursor;
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use proptest::test_runner::Config as PtConfig;
use wafsim_nbd::proto::*;
use wafsim_nbd::{Config, ExportMap, MemExport, Server};

const QUICK_CASES: u32 = 10_000;
const LONG_CASES: u32 = 1_000_000;

fn cfg(cases: u32) -> PtConfig {
    // No regression files: a failure prints its minimal input, and the crate directory stays
    // clean of generated files.
    PtConfig { cases, failure_persistence: None, max_shrink_iters: 10_000, ..PtConfig::default() }
}

// ---------- decoders on arbitrary bytes ----------

fn decode_everything(bytes: &[u8], sel: u32) {
    let _ = ServerGreeting::decode(bytes);
    let _ = ClientFlags::decode(bytes, sel as u16);
    let _ = OptionHeader::decode(bytes);
    let _ = ClientOption::decode(sel % 16, bytes);
    let _ = ClientOption::decode(sel, bytes);
    let _ = OptionReplyHeader::decode(bytes);
    let _ = OptionReply::decode(bytes);
    if let Ok(h) = OptionReplyHeader::decode(bytes) {
        let _ = OptionReply::decode_body(&h, &bytes[bytes.len().min(OptionReplyHeader::SIZE)..]);
    }
    let h = OptionReplyHeader { option: sel, reply_type: [1, 2, 3, sel][(sel % 4) as usize], length: bytes.len() as u32 };
    let _ = OptionReply::decode_body(&h, bytes);
    let _ = ExportNameReply::decode(bytes);
    let _ = Request::decode(bytes);
    let _ = SimpleReply::decode(bytes);
    let _ = ChunkHeader::decode(bytes);
    let _ = ChunkPayload::decode((sel % 8) as u16, bytes);
    let _ = ChunkPayload::decode(NBD_REPLY_TYPE_ERROR, bytes);
    let _ = ChunkPayload::decode(NBD_REPLY_TYPE_ERROR_OFFSET, bytes);
    let _ = decode_string(bytes);
}

/// Arbitrary bytes, often starting with a real magic so decoding gets past the first check.
fn bytes_with_magic() -> impl Strategy<Value = Vec<u8>> {
    let magics: Vec<Vec<u8>> = vec![
        vec![],
        NBDMAGIC.to_be_bytes().to_vec(),
        IHAVEOPT.to_be_bytes().to_vec(),
        OPTION_REPLY_MAGIC.to_be_bytes().to_vec(),
        NBD_REQUEST_MAGIC.to_be_bytes().to_vec(),
        NBD_SIMPLE_REPLY_MAGIC.to_be_bytes().to_vec(),
        NBD_STRUCTURED_REPLY_MAGIC.to_be_bytes().to_vec(),
    ];
    (prop::sample::select(magics), prop::collection::vec(any::<u8>(), 0..64)).prop_map(|(mut m, rest)| {
        m.extend(rest);
        m
    })
}

// ---------- valid messages ----------

fn wire_string() -> impl Strategy<Value = String> + Clone {
    "[^\u{0}]{0,24}"
}

fn client_option() -> impl Strategy<Value = ClientOption> {
    let info = || {
        (wire_string(), prop::collection::vec(any::<u16>(), 0..6))
            .prop_map(|(name, requests)| InfoRequest { name, requests })
    };
    prop_oneof![
        wire_string().prop_map(ClientOption::ExportName),
        Just(ClientOption::Abort),
        Just(ClientOption::List),
        info().prop_map(ClientOption::Info),
        info().prop_map(ClientOption::Go),
        Just(ClientOption::StructuredReply),
        (12u32.., prop::collection::vec(any::<u8>(), 0..32))
            .prop_map(|(option, data)| ClientOption::Other { option, data }),
    ]
}

fn option_reply() -> impl Strategy<Value = OptionReply> {
    let info = prop_oneof![
        (any::<u64>(), any::<u16>()).prop_map(|(size, flags)| InfoReply::Export { size, flags }),
        wire_string().prop_map(InfoReply::Name),
        wire_string().prop_map(InfoReply::Description),
        (any::<u32>(), any::<u32>(), any::<u32>())
            .prop_map(|(min, preferred, max)| InfoReply::BlockSize(BlockSizes { min, preferred, max })),
        (4u16.., prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(info_type, data)| InfoReply::Unknown { info_type, data }),
    ];
    let body = prop_oneof![
        Just(ReplyBody::Ack),
        (wire_string(), wire_string()).prop_map(|(name, description)| ReplyBody::Server { name, description }),
        info.prop_map(ReplyBody::Info),
        (1u32..=0x7fff_ffff, wire_string())
            .prop_map(|(c, message)| ReplyBody::Error { code: c | NBD_REP_FLAG_ERROR, message }),
        (5u32..0x8000_0000, prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(reply_type, data)| ReplyBody::Other { reply_type, data }),
    ];
    (any::<u32>(), body).prop_map(|(option, body)| OptionReply { option, body })
}

fn request() -> impl Strategy<Value = Request> {
    (any::<u16>(), any::<u16>(), any::<u64>(), any::<u64>(), any::<u32>()).prop_map(
        |(flags, c, cookie, offset, length)| Request { flags, command: Command::from_code(c), cookie, offset, length },
    )
}

fn chunk_payload() -> impl Strategy<Value = ChunkPayload> {
    prop_oneof![
        Just(ChunkPayload::None),
        (any::<u64>(), prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(offset, data)| ChunkPayload::OffsetData { offset, data }),
        (any::<u64>(), 1u32..).prop_map(|(offset, length)| ChunkPayload::OffsetHole { offset, length }),
        (1u32.., wire_string()).prop_map(|(error, message)| ChunkPayload::Error { error, message }),
        (1u32.., wire_string(), any::<u64>())
            .prop_map(|(error, message, offset)| ChunkPayload::ErrorOffset { error, message, offset }),
        (prop::sample::select(vec![3u16, 4, 5, 6, 100, 0x7fff]), prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(reply_type, data)| ChunkPayload::Other { reply_type, data }),
    ]
}

fn check_roundtrips(
    opt: &ClientOption,
    rep: &OptionReply,
    req: &Request,
    chunk: &ChunkPayload,
    cookie: u64,
    flags: u16,
) -> Result<(), TestCaseError> {
    let mut b = Vec::new();
    opt.encode(&mut b);
    let h = OptionHeader::decode(&b).unwrap();
    prop_assert_eq!(h.length as usize, b.len() - OptionHeader::SIZE);
    prop_assert_eq!(&ClientOption::decode(h.option, &b[OptionHeader::SIZE..]).unwrap(), opt);

    let mut b = Vec::new();
    rep.encode(&mut b);
    let (back, used) = OptionReply::decode(&b).unwrap();
    prop_assert_eq!(used, b.len());
    prop_assert_eq!(&back, rep);

    prop_assert_eq!(&Request::decode(&req.encode()).unwrap(), req);

    let mut p = Vec::new();
    chunk.encode(&mut p);
    let h = ChunkHeader { flags, reply_type: chunk.reply_type(), cookie, length: p.len() as u32 };
    prop_assert_eq!(ChunkHeader::decode(&h.encode()).unwrap(), h);
    prop_assert_eq!(&ChunkPayload::decode(h.reply_type, &p).unwrap(), chunk);

    let s = SimpleReply { error: flags.into(), cookie };
    prop_assert_eq!(SimpleReply::decode(&s.encode()).unwrap(), s);
    let g = ServerGreeting { flags };
    prop_assert_eq!(ServerGreeting::decode(&g.encode()).unwrap(), g);
    let cf = ClientFlags { fixed_newstyle: flags & 1 != 0, no_zeroes: flags & 2 != 0 };
    prop_assert_eq!(ClientFlags::decode(&cf.encode(), NBD_FLAG_NO_ZEROES).unwrap(), cf);
    Ok(())
}

// ---------- whole connections ----------

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| {
        let exports = ExportMap::new()
            .with("a", "first", Arc::new(MemExport::new(1 << 20)))
            .with("b", "", Arc::new(MemExport::new(1 << 16).with_read_only(true)));
        // Small payload cap so fuzzed lengths hit every branch without big allocations.
        Server::new(exports, Config { max_request: 64 * 1024, ..Config::default() })
    })
}

fn serve(input: &[u8]) -> wafsim_nbd::ConnStats {
    let mut out = Vec::new();
    server().serve_connection(Cursor::new(input), &mut out, "fuzz")
}

/// Client flags plus a sequence of options with mostly-valid framing.
fn handshake_stream() -> impl Strategy<Value = Vec<u8>> {
    let opt = (
        prop::sample::select(vec![1u32, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 0xffff_ffff]),
        prop::collection::vec(any::<u8>(), 0..40),
        any::<bool>(),
        prop::option::of(client_option()),
    );
    (any::<u8>(), prop::collection::vec(opt, 0..6)).prop_map(|(cf, opts)| {
        let mut b = u32::from(cf & 3).to_be_bytes().to_vec();
        for (code, data, bad_len, valid) in opts {
            match valid {
                Some(o) if !matches!(o, ClientOption::Go(_) | ClientOption::ExportName(_)) => o.encode(&mut b),
                _ => {
                    let len = if bad_len { data.len() as u32 + 3 } else { data.len() as u32 };
                    b.extend_from_slice(&OptionHeader { option: code, length: len }.encode());
                    b.extend_from_slice(&data);
                }
            }
        }
        b
    })
}

/// A valid entry into transmission, then half-valid requests (random fields, usually the right
/// magic, write payloads of the announced length or cut short).
fn transmission_stream() -> impl Strategy<Value = Vec<u8>> {
    let req = (
        any::<u16>(),
        0u16..10,
        prop_oneof![0u64..(1 << 21), any::<u64>()],
        prop_oneof![0u32..(1 << 17), any::<u32>()],
        0u8..20,
    );
    (any::<bool>(), any::<bool>(), prop::sample::select(vec!["", "a", "b"]), prop::collection::vec(req, 0..10))
        .prop_map(|(structured, export_name, name, reqs)| {
            let mut b = (NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES).to_be_bytes().to_vec();
            if structured {
                ClientOption::StructuredReply.encode(&mut b);
            }
            if export_name {
                ClientOption::ExportName(name.into()).encode(&mut b);
            } else {
                ClientOption::Go(InfoRequest { name: name.into(), requests: vec![NBD_INFO_BLOCK_SIZE] })
                    .encode(&mut b);
            }
            for (flags, c, offset, length, mode) in reqs {
                let r = Request { flags: flags & 0x3f, command: Command::from_code(c), cookie: 7, offset, length };
                let mut h = r.encode();
                if mode == 0 {
                    h[1] ^= 0x40; // bad magic
                }
                b.extend_from_slice(&h);
                if r.command == Command::Write && length <= 1 << 17 {
                    let n = if mode == 1 { length / 2 } else { length };
                    b.extend(std::iter::repeat_n(0xa5u8, n as usize));
                }
            }
            b
        })
}

macro_rules! properties {
    ($cases:expr, $($attr:meta)?; $decode:ident, $roundtrip:ident, $conn:ident) => {
        proptest! {
            #![proptest_config(cfg($cases))]
            $(#[$attr])?
            #[test]
            fn $decode(bytes in bytes_with_magic(), sel in any::<u32>()) {
                decode_everything(&bytes, sel);
            }

            $(#[$attr])?
            #[test]
            fn $roundtrip(
                opt in client_option(), rep in option_reply(), req in request(),
                chunk in chunk_payload(), cookie in any::<u64>(), flags in any::<u16>(),
            ) {
                check_roundtrips(&opt, &rep, &req, &chunk, cookie, flags)?;
            }

            $(#[$attr])?
            #[test]
            fn $conn(
                raw in prop::collection::vec(any::<u8>(), 0..96),
                hs in handshake_stream(),
                tx in transmission_stream(),
            ) {
                serve(&raw);
                let mut greeted = (NBD_FLAG_C_FIXED_NEWSTYLE).to_be_bytes().to_vec();
                greeted.extend_from_slice(&IHAVEOPT.to_be_bytes());
                greeted.extend_from_slice(&raw);
                serve(&greeted);
                serve(&hs);
                // The prefix is a valid handshake, so the fuzzed part really is the request path.
                let stats = serve(&tx);
                prop_assert!(stats.export.is_some(), "{:?}", stats.end);
            }
        }
    };
}

properties!(QUICK_CASES, ; fuzz_decoders_never_panic, fuzz_valid_messages_roundtrip, fuzz_server_connection);
properties!(
    LONG_CASES, ignore = "1,000,000 cases per property; run with --release -- --ignored fuzz";
    fuzz_1m_decoders_never_panic, fuzz_1m_valid_messages_roundtrip, fuzz_1m_server_connection
);
