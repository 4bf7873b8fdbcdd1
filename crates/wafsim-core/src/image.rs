//! Drive images: a simulated drive's whole state in a file, so an aged drive is paid for once
//! and started from by many runs (and by a restarted `wafsim serve`).
//!
//! The format is little-endian and sectioned:
//!
//! ```text
//! "WAFSIMG\0"  format version (u32)  kind (u32 length + UTF-8, e.g. "ftl")
//! section*     tag (4 ASCII bytes)  payload length (u64)  payload
//! "END\0"      CRC-32 of every byte before it (u32)
//! ```
//!
//! Arrays are written as raw little-endian words in large chunks, so saving and loading run at
//! memory and disk speed, not at parsing speed. A reader checks the magic, the version, the
//! kind, each section's tag and length against what it expects, and the checksum at the end,
//! and says which of them failed.
//!
//! Every device saves and loads its image in place through [`SavesImage`]. A host layer's image
//! holds the images of the devices under it, each whole in a section of its own
//! ([`ImageWriter::nested`], [`ImageReader::nested`]): every device keeps its own format and
//! checks, and the layer's checksum covers its devices' bytes too.

use crate::counters::{Counters, FdpEventCounts, FrontierCounters, NsCounters};
use std::io::{self, Read, Write};

/// The first bytes of every drive image.
pub const MAGIC: [u8; 8] = *b"WAFSIMG\0";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
const END: [u8; 4] = *b"END\0";
/// Bytes converted per chunk on a big-endian machine (1 MiB): small enough not to double a
/// large array's memory; also a [`FileReader`]'s buffer for small reads.
const CHUNK_BYTES: usize = 1 << 20;

/// Add `b` to the checksum `h`; a large `b` is split among threads whose checksums are
/// combined in order (CRC-32 of a concatenation from its parts'), so a whole drive's map is
/// checked at the speed of every core, not one.
fn checksum(h: &mut crc32fast::Hasher, b: &[u8]) {
    let threads = crate::hugepage::workers();
    if b.len() < crate::hugepage::MIN_PARALLEL_BYTES || threads < 2 {
        h.update(b);
        return;
    }
    let parts: Vec<crc32fast::Hasher> = std::thread::scope(|s| {
        let handles: Vec<_> = b
            .chunks(b.len().div_ceil(threads))
            .map(|part| {
                s.spawn(move || {
                    let mut p = crc32fast::Hasher::new();
                    p.update(part);
                    p
                })
            })
            .collect();
        handles.into_iter().map(|t| t.join().expect("a checksum thread panicked")).collect()
    });
    for p in &parts {
        h.combine(p);
    }
}

/// Reads a drive image from a file the caller opened: small reads through a 1 MiB buffer, and
/// a large array (a drive's maps) by several threads at once, each reading its part of the
/// file into its part of the destination (positional reads). The destination's first touch
/// (the kernel zeroing fresh pages) and the copy out of the page cache then run on every core.
/// A file that cannot be read at positions (a pipe, a FIFO, `/dev/stdin`) is read in order.
///
/// ```
/// use wafsim_core::{config::DeviceConfig, image::FileReader, Device, GcPolicy};
/// let cfg = DeviceConfig::single_namespace(256, 256, 4096, 0.07, GcPolicy::Greedy, 1);
/// let path = std::env::temp_dir().join(format!("doc-{}.img", std::process::id()));
/// Device::new(cfg.clone())?.save_image(std::fs::File::create(&path)?)?;
/// let dev = Device::load_image(cfg, FileReader::new(std::fs::File::open(&path)?))?;
/// std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(unix)]
pub struct FileReader {
    file: std::fs::File,
    /// File offset of the next byte not yet in the buffer.
    pos: u64,
    buf: Vec<u8>,
    /// The buffer's unread bytes are `buf[at..end]`.
    at: usize,
    end: usize,
    /// A regular file: read at positions, large arrays by several threads.
    positional: bool,
}

#[cfg(unix)]
impl FileReader {
    /// Read `file` from its start.
    pub fn new(file: std::fs::File) -> FileReader {
        let positional = file.metadata().is_ok_and(|m| m.is_file());
        FileReader { file, pos: 0, buf: vec![0; CHUNK_BYTES], at: 0, end: 0, positional }
    }

    /// `out.len()` bytes at `pos`, or an error (an unexpected end when the file is shorter).
    fn read_exact_at(&self, out: &mut [u8], pos: u64) -> io::Result<()> {
        let threads = crate::hugepage::workers();
        if out.len() < crate::hugepage::MIN_PARALLEL_BYTES || threads < 2 {
            return read_chunks_at(&self.file, out, pos);
        }
        // Parts end on huge-page boundaries of the destination, so no page is faulted in by
        // two threads.
        let base = out.as_ptr() as usize;
        let step = out.len().div_ceil(threads);
        let file = &self.file;
        std::thread::scope(|s| {
            let (mut rest, mut off) = (out, 0usize);
            let mut handles = Vec::new();
            while !rest.is_empty() {
                let end = ((base + off + step).next_multiple_of(crate::hugepage::HUGE_PAGE) - base).min(off + rest.len());
                let (part, tail) = rest.split_at_mut(end - off);
                let at = pos + off as u64;
                handles.push(s.spawn(move || read_chunks_at(file, part, at)));
                (rest, off) = (tail, end);
            }
            handles.into_iter().try_for_each(|t| t.join().expect("a reading thread panicked"))
        })
    }
}

/// `out.len()` bytes of `file` at `pos`, 1 MiB at a time, as images are written (one read of a
/// whole part measured no faster: 0.43 s against 0.40 s for a 268 MB map).
#[cfg(unix)]
fn read_chunks_at(file: &std::fs::File, out: &mut [u8], pos: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut at = pos;
    for c in out.chunks_mut(CHUNK_BYTES) {
        file.read_exact_at(c, at)?;
        at += c.len() as u64;
    }
    Ok(())
}

#[cfg(unix)]
impl Read for FileReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        if self.at == self.end && out.len() >= self.buf.len() {
            if !self.positional {
                return (&self.file).read(out);
            }
            // Large: straight into `out`, whole; near the end of the file, what there is.
            let n = (out.len() as u64).min(self.file.metadata()?.len().saturating_sub(self.pos)) as usize;
            self.read_exact_at(&mut out[..n], self.pos)?;
            self.pos += n as u64;
            return Ok(n);
        }
        if self.at == self.end {
            let got = if self.positional { self.file.read_at(&mut self.buf, self.pos)? } else { (&self.file).read(&mut self.buf)? };
            (self.at, self.end, self.pos) = (0, got, self.pos + got as u64);
        }
        let n = out.len().min(self.end - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The word types an image stores, little-endian (only u32 and u64: plain integers, so their
/// memory may be read and written as bytes).
trait Word: Copy {
    /// Bytes per word.
    const BYTES: usize;
    /// Append the word's little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
    /// The word of `BYTES` little-endian bytes.
    fn from_le(b: &[u8]) -> Self;
}

impl Word for u32 {
    const BYTES: usize = 4;
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn from_le(b: &[u8]) -> u32 {
        u32::from_le_bytes(b.try_into().expect("4 bytes"))
    }
}

impl Word for u64 {
    const BYTES: usize = 8;
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn from_le(b: &[u8]) -> u64 {
        u64::from_le_bytes(b.try_into().expect("8 bytes"))
    }
}

/// Why an image could not be read (or written).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Reading or writing the file failed (a truncated file reads as an unexpected end).
    #[error("drive image: {0}")]
    Io(#[from] io::Error),
    /// The file ends before the image does (a copy or a save cut short).
    #[error("drive image truncated: the file ends before the image does")]
    Truncated,
    /// The file does not start with the image magic.
    #[error("not a wafsim drive image (it does not start with \"WAFSIMG\")")]
    NotAnImage,
    /// Written by another format version.
    #[error("drive image format version {found}; this wafsim reads version {VERSION} (save the image again with this version)")]
    Version {
        /// The file's version.
        found: u32,
    },
    /// An image of another kind of drive.
    #[error("drive image of a {found:?} drive; expected a {expected:?} drive")]
    Kind {
        /// What the caller wanted.
        expected: String,
        /// What the file holds.
        found: String,
    },
    /// The file's structure is not what this version writes (a damaged or truncated file).
    #[error("drive image damaged: {0}")]
    Damaged(String),
    /// The image was made from another drive configuration.
    #[error("drive image of another configuration: {0}")]
    Config(String),
    /// The checksum at the end does not match the contents.
    #[error("drive image damaged: checksum {found:08x} at the end, contents give {computed:08x}")]
    Checksum {
        /// Stored in the file.
        found: u32,
        /// Computed over what was read.
        computed: u32,
    },
}

impl ImageError {
    /// The same error, naming the device under a host layer whose image it concerns (a
    /// configuration mismatch says which device differs; other errors speak for themselves).
    pub fn within(self, device: &str) -> ImageError {
        match self {
            ImageError::Config(c) => ImageError::Config(format!("{device}: {c}")),
            e => e,
        }
    }
}

/// A read that ran out of file is a truncated image.
fn eof(e: io::Error) -> ImageError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        ImageError::Truncated
    } else {
        ImageError::Io(e)
    }
}

/// Writes an image: the header, then sections, then [`ImageWriter::finish`].
pub struct ImageWriter<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    buf: Vec<u8>,
}

impl<W: Write> ImageWriter<W> {
    /// Start an image of a drive of `kind` ("ftl", "zns", ...).
    pub fn new(out: W, kind: &str) -> io::Result<ImageWriter<W>> {
        let mut w = ImageWriter { out, crc: crc32fast::Hasher::new(), buf: Vec::new() };
        w.raw(&MAGIC)?;
        w.raw(&VERSION.to_le_bytes())?;
        w.str(kind)?;
        Ok(w)
    }

    /// Start an image of a drive of `kind` built from the configuration `conf` (its `Debug`
    /// text, which a reader must match: [`ImageReader::with_config`]).
    pub fn with_config(out: W, kind: &str, conf: &str) -> io::Result<ImageWriter<W>> {
        let mut w = ImageWriter::new(out, kind)?;
        write_config(&mut w, conf)?;
        Ok(w)
    }

    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        checksum(&mut self.crc, b);
        self.out.write_all(b)
    }

    /// Start section `tag` of `len` payload bytes (the caller writes exactly that many).
    pub fn section(&mut self, tag: &[u8; 4], len: u64) -> io::Result<()> {
        self.raw(tag)?;
        self.raw(&len.to_le_bytes())
    }

    /// A 64-bit value.
    pub fn u64(&mut self, v: u64) -> io::Result<()> {
        self.raw(&v.to_le_bytes())
    }

    /// A string (u32 length, UTF-8).
    pub fn str(&mut self, s: &str) -> io::Result<()> {
        self.raw(&(s.len() as u32).to_le_bytes())?;
        self.raw(s.as_bytes())
    }

    /// Bytes, as they are.
    pub fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.raw(b)
    }

    /// 32-bit words.
    pub fn u32s(&mut self, v: &[u32]) -> io::Result<()> {
        self.words(v)
    }

    /// 64-bit words.
    pub fn u64s(&mut self, v: &[u64]) -> io::Result<()> {
        self.words(v)
    }

    /// Words in 1 MiB chunks (writing a whole map at once, its checksum in parallel, measured
    /// 3-4 times slower into the page cache): on a little-endian machine straight from memory,
    /// else converted.
    fn words<T: Word>(&mut self, v: &[T]) -> io::Result<()> {
        if cfg!(target_endian = "little") {
            // SAFETY: a slice of u32 or u64 is readable as its bytes (u8 has no alignment and
            // every byte is initialized); on a little-endian machine they are the format's bytes.
            let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) };
            for c in bytes.chunks(CHUNK_BYTES) {
                self.raw(c)?;
            }
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.buf);
        for c in v.chunks(CHUNK_BYTES / T::BYTES) {
            buf.clear();
            c.iter().for_each(|x| x.put_le(&mut buf));
            self.raw(&buf)?;
        }
        self.buf = buf;
        Ok(())
    }

    /// Section `tag` holding a whole image that `save` writes (a device under a host layer).
    /// `save` runs twice, first only to measure the section's length, so a large device's
    /// image streams into this one instead of being held in memory.
    pub fn nested(&mut self, tag: &[u8; 4], save: &dyn Fn(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        let mut measure = NestedWriter::<W> { into: None, written: 0, limit: u64::MAX };
        save(&mut measure)?;
        let len = measure.written;
        self.section(tag, len)?;
        let mut part = NestedWriter { into: Some(self), written: 0, limit: len };
        save(&mut part)?;
        if part.written != len {
            return Err(io::Error::other("a nested image came out shorter the second time"));
        }
        Ok(())
    }

    /// End the image (trailer and checksum) and hand the output back, flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.raw(&END)?;
        let crc = self.crc.clone().finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads an image written by [`ImageWriter`], checking as it goes.
pub struct ImageReader<R: Read> {
    input: R,
    crc: crc32fast::Hasher,
    buf: Vec<u8>,
}

impl<R: Read> ImageReader<R> {
    /// Open an image and check that it holds a drive of `kind`.
    pub fn new(input: R, kind: &str) -> Result<ImageReader<R>, ImageError> {
        let mut r = ImageReader { input, crc: crc32fast::Hasher::new(), buf: Vec::new() };
        let mut magic = [0u8; 8];
        r.raw(&mut magic).map_err(|e| if matches!(e, ImageError::Truncated) { ImageError::NotAnImage } else { e })?;
        if magic != MAGIC {
            return Err(ImageError::NotAnImage);
        }
        let mut v = [0u8; 4];
        r.raw(&mut v)?;
        let found = u32::from_le_bytes(v);
        if found != VERSION {
            return Err(ImageError::Version { found });
        }
        let k = r.str()?;
        if k != kind {
            return Err(ImageError::Kind { expected: kind.into(), found: k });
        }
        Ok(r)
    }

    /// Open an image of a drive of `kind` and refuse one saved from another configuration than
    /// `conf` (see [`ImageWriter::with_config`]), naming the first setting that differs.
    pub fn with_config(input: R, kind: &str, conf: &str) -> Result<ImageReader<R>, ImageError> {
        let mut r = ImageReader::new(input, kind)?;
        check_config(&mut r, conf)?;
        Ok(r)
    }

    fn raw(&mut self, b: &mut [u8]) -> Result<(), ImageError> {
        self.input.read_exact(b).map_err(eof)?;
        checksum(&mut self.crc, b);
        Ok(())
    }

    /// Enter section `tag`, which must hold `len` payload bytes.
    pub fn section(&mut self, tag: &[u8; 4], len: u64) -> Result<(), ImageError> {
        let mut t = [0u8; 4];
        self.raw(&mut t)?;
        if &t != tag {
            return Err(ImageError::Damaged(format!("expected section {:?}, found {:?}", String::from_utf8_lossy(tag), String::from_utf8_lossy(&t))));
        }
        let found = self.u64()?;
        if found != len {
            return Err(ImageError::Damaged(format!("section {:?} holds {found} bytes; this configuration needs {len}", String::from_utf8_lossy(tag))));
        }
        Ok(())
    }

    /// Enter section `tag` of any length; its length.
    pub fn any_section(&mut self, tag: &[u8; 4]) -> Result<u64, ImageError> {
        let mut t = [0u8; 4];
        self.raw(&mut t)?;
        if &t != tag {
            return Err(ImageError::Damaged(format!("expected section {:?}, found {:?}", String::from_utf8_lossy(tag), String::from_utf8_lossy(&t))));
        }
        self.u64()
    }

    /// A 64-bit value.
    pub fn u64(&mut self) -> Result<u64, ImageError> {
        let mut b = [0u8; 8];
        self.raw(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// A string.
    pub fn str(&mut self) -> Result<String, ImageError> {
        let mut b = [0u8; 4];
        self.raw(&mut b)?;
        let n = u32::from_le_bytes(b) as usize;
        if n > 1 << 20 {
            return Err(ImageError::Damaged(format!("a string of {n} bytes")));
        }
        let mut s = vec![0u8; n];
        self.raw(&mut s)?;
        String::from_utf8(s).map_err(|_| ImageError::Damaged("a string that is not UTF-8".into()))
    }

    /// `out.len()` bytes.
    pub fn bytes(&mut self, out: &mut [u8]) -> Result<(), ImageError> {
        self.raw(out)
    }

    /// `out.len()` 32-bit words.
    pub fn u32s(&mut self, out: &mut [u32]) -> Result<(), ImageError> {
        self.words(out)
    }

    /// `out.len()` 64-bit words.
    pub fn u64s(&mut self, out: &mut [u64]) -> Result<(), ImageError> {
        self.words(out)
    }

    /// Words: on a little-endian machine straight into memory in one piece (a [`FileReader`]
    /// reads a large one from several threads), else converted in 1 MiB chunks.
    fn words<T: Word>(&mut self, out: &mut [T]) -> Result<(), ImageError> {
        if cfg!(target_endian = "little") {
            // SAFETY: any bytes are a valid u32 or u64, and u8 has no alignment: the slice's
            // memory may be written as bytes; on a little-endian machine the format's bytes are
            // the words.
            let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(out)) };
            return self.raw(bytes);
        }
        let mut buf = std::mem::take(&mut self.buf);
        for c in out.chunks_mut(CHUNK_BYTES / T::BYTES) {
            buf.resize(c.len() * T::BYTES, 0);
            self.raw(&mut buf)?;
            for (x, b) in c.iter_mut().zip(buf.chunks_exact(T::BYTES)) {
                *x = T::from_le(b);
            }
        }
        self.buf = buf;
        Ok(())
    }

    /// Section `tag` holding a whole image (one [`ImageWriter::nested`] wrote), read by `load`
    /// from the section's bytes alone; `load` must read the nested image to its end.
    pub fn nested<T>(&mut self, tag: &[u8; 4], load: impl FnOnce(&mut dyn Read) -> Result<T, ImageError>) -> Result<T, ImageError> {
        let name = String::from_utf8_lossy(tag).into_owned();
        let len = self.any_section(tag)?;
        let mut part = SectionReader { r: self, left: len, end_of_file: false };
        let t = match load(&mut part) {
            // The section ended, not the file: its length is wrong.
            Err(ImageError::Truncated) if !part.end_of_file => return Err(ImageError::Damaged(format!("section {name:?} ends inside its image"))),
            r => r?,
        };
        if part.left != 0 {
            return Err(ImageError::Damaged(format!("section {name:?}: {} bytes after its image", part.left)));
        }
        Ok(t)
    }

    /// The trailer: the checksum must match, and nothing may follow.
    pub fn finish(mut self) -> Result<(), ImageError> {
        let mut end = [0u8; 4];
        self.raw(&mut end)?;
        if end != END {
            return Err(ImageError::Damaged("expected the end of the image, found more sections".into()));
        }
        let computed = self.crc.clone().finalize();
        let mut c = [0u8; 4];
        self.input.read_exact(&mut c).map_err(eof)?;
        let found = u32::from_le_bytes(c);
        if found != computed {
            return Err(ImageError::Checksum { found, computed });
        }
        let mut extra = [0u8; 1];
        if self.input.read(&mut extra)? != 0 {
            return Err(ImageError::Damaged("bytes after the checksum".into()));
        }
        Ok(())
    }
}

/// A nested image on its way: only counted (the first pass of [`ImageWriter::nested`]), or
/// written into the enclosing image, no more than its section announced.
struct NestedWriter<'a, W: Write> {
    into: Option<&'a mut ImageWriter<W>>,
    written: u64,
    limit: u64,
}

impl<W: Write> Write for NestedWriter<'_, W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.written += b.len() as u64;
        if let Some(w) = self.into.as_mut() {
            if self.written > self.limit {
                return Err(io::Error::other("a nested image came out longer the second time"));
            }
            w.raw(b)?;
        }
        Ok(b.len())
    }
    // The enclosing image flushes once, at its end.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A nested image's section of the enclosing image: it ends where the section does (so the
/// nested reader sees its own end of file), and its bytes count in the enclosing checksum.
struct SectionReader<'a, R: Read> {
    r: &'a mut ImageReader<R>,
    left: u64,
    /// The file ended before the section did.
    end_of_file: bool,
}

impl<R: Read> Read for SectionReader<'_, R> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let n = (b.len() as u64).min(self.left) as usize;
        if n == 0 {
            return Ok(0);
        }
        let got = self.r.input.read(&mut b[..n])?;
        self.end_of_file |= got == 0;
        checksum(&mut self.r.crc, &b[..got]);
        self.left -= got as u64;
        Ok(got)
    }
}

/// A device whose whole state goes into a drive image and comes back from one, in place: what
/// a host layer needs of the devices under it, and what runs save and load whatever the kind
/// of drive. The device keeps its configuration; an image saved from another is refused.
pub trait SavesImage {
    /// Write the device's state as a drive image.
    fn save_image_to(&self, out: &mut dyn Write) -> io::Result<()>;
    /// Continue from the image `input` (saved from a device of the same configuration): the
    /// device then behaves exactly as the saved one would have. On an error the device may be
    /// left part loaded (a layer loads its devices one after the other): build it anew.
    fn load_image_from(&mut self, input: &mut dyn Read) -> Result<(), ImageError>;
}

/// [`SavesImage`] of a device whose `load_image` builds a new device from a configuration;
/// invoked next to each such device, so this file depends on none of them.
macro_rules! saves_image_by_config {
    ($t:ty) => {
        impl $crate::image::SavesImage for $t {
            fn save_image_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
                self.save_image(out).map(drop)
            }
            fn load_image_from(&mut self, input: &mut dyn std::io::Read) -> Result<(), $crate::image::ImageError> {
                *self = <$t>::load_image(self.config().clone(), input)?;
                Ok(())
            }
        }
    };
}
pub(crate) use saves_image_by_config;

/// The `CONF` section: the configuration a drive was built from, as text (its `Debug` form).
fn write_config<W: Write>(w: &mut ImageWriter<W>, conf: &str) -> io::Result<()> {
    w.section(b"CONF", 4 + conf.len() as u64)?;
    w.str(conf)
}

/// Read the `CONF` section and refuse an image of another configuration than `conf`, naming
/// the first setting that differs.
fn check_config<R: Read>(r: &mut ImageReader<R>, conf: &str) -> Result<(), ImageError> {
    let len = r.any_section(b"CONF")?;
    if len > 1 << 20 {
        return Err(ImageError::Damaged("configuration section".into()));
    }
    let saved = r.str()?;
    if saved != conf {
        return Err(ImageError::Config(format!("saved from {}; this drive is {}", first_difference(&saved, conf), first_difference(conf, &saved))));
    }
    Ok(())
}

/// Where `a` first differs from `b`, with a little context (configurations are long).
fn first_difference(a: &str, b: &str) -> String {
    let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let start = a[..at].rfind([',', '{', '(']).map_or(0, |i| i + 1);
    let end = a[at..].find([',', '}', ')']).map_or(a.len(), |i| at + i);
    format!("\"{}\"", a[start..end].trim())
}

/// The `CTRS` section: a drive's counters.
pub fn write_counters<W: Write>(w: &mut ImageWriter<W>, c: &Counters) -> io::Result<()> {
    let words = counters_words(c);
    w.section(b"CTRS", 8 * words.len() as u64)?;
    w.u64s(&words)
}

/// Counters back from the `CTRS` section.
pub fn read_counters<R: Read>(r: &mut ImageReader<R>) -> Result<Counters, ImageError> {
    let n = r.any_section(b"CTRS")?;
    if !n.is_multiple_of(8) || n > 8 << 20 {
        return Err(ImageError::Damaged("counters".into()));
    }
    let mut words = vec![0u64; (n / 8) as usize];
    r.u64s(&mut words)?;
    counters_from_words(&words)
}

/// Counters as 64-bit words, in a fixed order (every field named, so a new counter does not
/// compile until the image carries it).
pub(crate) fn counters_words(c: &Counters) -> Vec<u64> {
    // The pSLC cache's counters travel in the FTL image's SLC section (only a drive with a
    // cache has one), so the images of every other drive keep their bytes.
    let Counters { host_write_bytes, host_units, gc_units, pad_units, erases, host_read_bytes, read_units, unmapped_read_units, trim_bytes, trimmed_units, background_victims, slc_units: _, fold_units: _, uncounted_slc_units: _, namespaces, frontiers, fdp_events } = c;
    let FdpEventCounts { ru_not_fully_written, invalid_pid, media_reallocated, media_reallocated_units } = fdp_events;
    let mut v = vec![*host_write_bytes, *host_units, *gc_units, *pad_units, *erases, *host_read_bytes, *read_units, *unmapped_read_units, *trim_bytes, *trimmed_units, *background_victims];
    v.extend([*ru_not_fully_written, *invalid_pid, *media_reallocated, *media_reallocated_units]);
    v.push(namespaces.len() as u64);
    for n in namespaces {
        // pSLC folds and uncounted programs per namespace travel in the SLC section.
        let NsCounters { host_write_bytes, host_units, gc_units, pad_units, host_read_bytes, trim_bytes, fold_units: _, uncounted_slc_units: _ } = n;
        v.extend([*host_write_bytes, *host_units, *gc_units, *pad_units, *host_read_bytes, *trim_bytes]);
    }
    v.push(frontiers.len() as u64);
    for f in frontiers {
        let FrontierCounters { host_units, gc_units, erases } = f;
        v.extend([*host_units, *gc_units, *erases]);
    }
    v
}

/// Counters back from [`counters_words`].
pub(crate) fn counters_from_words(w: &[u64]) -> Result<Counters, ImageError> {
    let bad = || ImageError::Damaged("counters".into());
    let mut it = w.iter().copied();
    let mut next = || it.next().ok_or_else(bad);
    let mut c = Counters {
        host_write_bytes: next()?,
        host_units: next()?,
        gc_units: next()?,
        pad_units: next()?,
        erases: next()?,
        host_read_bytes: next()?,
        read_units: next()?,
        unmapped_read_units: next()?,
        trim_bytes: next()?,
        trimmed_units: next()?,
        background_victims: next()?,
        fdp_events: FdpEventCounts { ru_not_fully_written: next()?, invalid_pid: next()?, media_reallocated: next()?, media_reallocated_units: next()? },
        ..Counters::default()
    };
    for _ in 0..next()? {
        c.namespaces.push(NsCounters { host_write_bytes: next()?, host_units: next()?, gc_units: next()?, pad_units: next()?, host_read_bytes: next()?, trim_bytes: next()?, ..NsCounters::default() });
    }
    for _ in 0..next()? {
        c.frontiers.push(FrontierCounters { host_units: next()?, gc_units: next()?, erases: next()? });
    }
    if next().is_ok() {
        return Err(bad());
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Section `tag` of `n` u32 words, then the end of the image.
    fn words_to_end<R: Read>(mut r: ImageReader<R>, tag: &[u8; 4], n: usize) -> Result<Vec<u32>, ImageError> {
        r.section(tag, 4 * n as u64)?;
        let mut v = vec![0u32; n];
        r.u32s(&mut v)?;
        r.finish()?;
        Ok(v)
    }

    #[test]
    fn round_trip_and_damage_is_named() {
        let mut w = ImageWriter::new(Vec::new(), "test").unwrap();
        let words: Vec<u32> = (0..1_000_000).map(|i: u32| i.wrapping_mul(2_654_435_761)).collect();
        w.section(b"WRDS", words.len() as u64 * 4).unwrap();
        w.u32s(&words).unwrap();
        let img = w.finish().unwrap();
        let read = |img: &[u8]| words_to_end(ImageReader::new(img, "test")?, b"WRDS", 1_000_000);
        assert_eq!(read(&img).unwrap(), words);
        let mut flipped = img.clone();
        flipped[500_000] ^= 0x10;
        assert!(matches!(read(&flipped), Err(ImageError::Checksum { .. })));
        assert!(matches!(read(&img[..img.len() - 100]), Err(ImageError::Truncated)));
        assert!(matches!(read(b"hello world, not an image"), Err(ImageError::NotAnImage)));
        assert!(matches!(ImageReader::new(&img[..], "ftl"), Err(ImageError::Kind { .. })));
        let mut v2 = img.clone();
        v2[8] = 2;
        assert!(matches!(read(&v2), Err(ImageError::Version { found: 2 })));
    }

    /// A nested image round-trips inside its section; a wrong section length or a cut file is
    /// told apart, and the enclosing checksum covers the nested bytes.
    /// The arrays and the value of an image `a_file_reader_...` wrote, read back from `input`.
    fn small_big_seven(input: impl Read, small: usize, big: usize) -> Result<(Vec<u64>, Vec<u32>, u64), ImageError> {
        let mut r = ImageReader::new(input, "test")?;
        let (mut s, mut b) = (vec![0u64; small], crate::hugepage::untouched(big));
        r.section(b"SMAL", 8 * small as u64)?;
        r.u64s(&mut s)?;
        r.section(b"BIG ", 4 * big as u64)?;
        r.u32s(&mut b)?;
        let x = r.u64()?;
        r.finish()?;
        Ok((s, b, x))
    }

    #[test]
    fn a_file_reader_reads_large_arrays_in_parts_and_small_ones_buffered() {
        // Large enough to be read and checked by several threads (on a machine with more than
        // one core) after the buffer's first 1 MiB, odd-sized so no part ends where a chunk does.
        let big: Vec<u32> = (0..((crate::hugepage::MIN_PARALLEL_BYTES + 2 * CHUNK_BYTES) / 4 + 12_345) as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let small: Vec<u64> = (0..1000).collect();
        let mut w = ImageWriter::new(Vec::new(), "test").unwrap();
        w.section(b"SMAL", 8 * small.len() as u64).unwrap();
        w.u64s(&small).unwrap();
        w.section(b"BIG ", 4 * big.len() as u64).unwrap();
        w.u32s(&big).unwrap();
        w.u64(7).unwrap();
        let image = w.finish().unwrap();
        let path = std::env::temp_dir().join(format!("wafsim-filereader-{}.img", std::process::id()));
        let from_file = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            small_big_seven(FileReader::new(std::fs::File::open(&path).unwrap()), small.len(), big.len())
        };
        let (s, b, x) = from_file(&image).unwrap();
        assert!(s == small && b == big && x == 7, "the bytes written come back");
        // Cut inside the large array and inside the trailer: both are a truncated image.
        assert!(matches!(from_file(&image[..image.len() / 2]), Err(ImageError::Truncated)));
        assert!(matches!(from_file(&image[..image.len() - 3]), Err(ImageError::Truncated)));
        let mut bad = image.clone();
        bad[image.len() / 2] ^= 1;
        assert!(matches!(from_file(&bad), Err(ImageError::Checksum { .. })), "a flipped bit in the large array is caught");
        std::fs::remove_file(&path).unwrap();
        // A pipe cannot be read at positions: the same image comes through it in order.
        let (from, mut to) = std::io::pipe().unwrap();
        let writer = std::thread::spawn(move || to.write_all(&image));
        let (s, b, x) = small_big_seven(FileReader::new(std::fs::File::from(std::os::fd::OwnedFd::from(from))), small.len(), big.len()).unwrap();
        writer.join().unwrap().unwrap();
        assert!(s == small && b == big && x == 7, "the bytes written come back through a pipe");
    }

    #[test]
    fn nested_images_stream_through_their_section() {
        let inner = |o: &mut dyn Write| -> io::Result<()> {
            let mut w = ImageWriter::new(o, "inner")?;
            w.section(b"DATA", 4 * 1000)?;
            w.u32s(&(0..1000).collect::<Vec<u32>>())?;
            w.finish().map(drop)
        };
        let mut w = ImageWriter::new(Vec::new(), "outer").unwrap();
        w.nested(b"NEST", &inner).unwrap();
        let img = w.finish().unwrap();
        let read = |img: &[u8]| -> Result<Vec<u32>, ImageError> {
            let mut r = ImageReader::new(img, "outer")?;
            let v = r.nested(b"NEST", |i| words_to_end(ImageReader::new(i, "inner")?, b"DATA", 1000))?;
            r.finish()?;
            Ok(v)
        };
        assert_eq!(read(&img).unwrap(), (0..1000).collect::<Vec<u32>>());
        assert!(matches!(read(&img[..img.len() - 20]), Err(ImageError::Truncated)));
        assert!(matches!(read(&img[..2000]), Err(ImageError::Truncated)));
        // The section's length (after the 8 + 4 + 4 + 5 header bytes and the tag) one short.
        let mut short = img.clone();
        short[25] -= 1;
        assert!(matches!(read(&short), Err(ImageError::Damaged(_))), "{:?}", read(&short));
        let mut flipped = img.clone();
        flipped[1000] ^= 1;
        assert!(matches!(read(&flipped), Err(ImageError::Checksum { .. })));
    }
}
