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

/// The `CONF` section: the configuration a drive was built from, as text (its `Debug` form).
pub(crate) fn write_config<W: Write>(w: &mut ImageWriter<W>, conf: &str) -> io::Result<()> {
    w.section(b"CONF", 4 + conf.len() as u64)?;
    w.str(conf)
}

/// Read the `CONF` section and refuse an image of another configuration than `conf`, naming
/// the first setting that differs.
pub(crate) fn check_config<R: Read>(r: &mut ImageReader<R>, conf: &str) -> Result<(), ImageError> {
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
pub(crate) fn write_counters<W: Write>(w: &mut ImageWriter<W>, c: &Counters) -> io::Result<()> {
    let words = counters_words(c);
    w.section(b"CTRS", 8 * words.len() as u64)?;
    w.u64s(&words)
}

/// Counters back from the `CTRS` section.
pub(crate) fn read_counters<R: Read>(r: &mut ImageReader<R>) -> Result<Counters, ImageError> {
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
        let NsCounters { host_write_bytes, host_units, gc_units, pad_units, host_read_bytes, trim_bytes } = n;
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
        c.namespaces.push(NsCounters { host_write_bytes: next()?, host_units: next()?, gc_units: next()?, pad_units: next()?, host_read_bytes: next()?, trim_bytes: next()? });
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

    #[test]
    fn round_trip_and_damage_is_named() {
        let mut w = ImageWriter::new(Vec::new(), "test").unwrap();
        let words: Vec<u32> = (0..1_000_000).map(|i: u32| i.wrapping_mul(2_654_435_761)).collect();
        w.section(b"WRDS", words.len() as u64 * 4).unwrap();
        w.u32s(&words).unwrap();
        let img = w.finish().unwrap();
        let read = |img: &[u8]| -> Result<Vec<u32>, ImageError> {
            let mut r = ImageReader::new(img, "test")?;
            r.section(b"WRDS", 4_000_000)?;
            let mut back = vec![0u32; 1_000_000];
            r.u32s(&mut back)?;
            r.finish()?;
            Ok(back)
        };
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
}
