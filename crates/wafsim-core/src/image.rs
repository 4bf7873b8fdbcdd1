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
/// Bytes moved per chunk (1 MiB): large enough to run at memory speed, small enough not to
/// double a large array's memory where words are converted.
const CHUNK_BYTES: usize = 1 << 20;

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
        self.crc.update(b);
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

    /// Words in 1 MiB chunks: on a little-endian machine straight from memory, else converted.
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
        self.crc.update(b);
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

    /// Words in 1 MiB chunks: on a little-endian machine straight into memory, else converted.
    fn words<T: Word>(&mut self, out: &mut [T]) -> Result<(), ImageError> {
        if cfg!(target_endian = "little") {
            // SAFETY: any bytes are a valid u32 or u64, and u8 has no alignment: the slice's
            // memory may be written as bytes; on a little-endian machine the format's bytes are
            // the words.
            let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(out)) };
            for c in bytes.chunks_mut(CHUNK_BYTES) {
                self.raw(c)?;
            }
            return Ok(());
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
        self.r.crc.update(&b[..got]);
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
