//! dm-zoned's whole state to and from a drive image (`wafsim_core::image`): per zone the write
//! pointer, weight, mapping links, flags, in-flight count and list links, the list heads, the
//! chunk map, the validity bitmaps of the zones that have one, the dirty metadata blocks (in
//! their order), super block generation and flush statistics, the reclaim jobs in progress and
//! reclaim statistics, the counters and per-device traffic, and the untimed driver's round
//! robin and periodic-flush progress. Then the image of every device under the layer, each
//! whole in a section of its own (`CACH` for the cache device, one `DISK` per disk; see
//! [`wafsim_core::image::ImageWriter::nested`]), so each device keeps its own format and checks
//! and the layer's checksum covers them too.
//!
//! What the format determines (the layout: each zone's kind, device and start, the metadata
//! sets) is rebuilt from the devices' geometry and the configuration, which must be those the
//! image was saved from. The timed driver's clock is not saved (as for every drive).

use super::metadata::MetadataStats;
use super::zones::ListHead;
use super::{DevTraffic, DmZoned, DmZonedDevice, NONE};
use std::io::{self, Read, Write};
use wafsim_core::blockdev::BlockDevice;
use wafsim_core::image::{read_counters, write_counters, ImageError, ImageReader, ImageWriter, SavesImage};

/// The kind a dm-zoned image names.
pub const IMAGE_KIND: &str = "dm-zoned";

/// u32 words per zone in the `ZONE` section (a flags byte follows them).
const ZONE_WORDS: u64 = 8;

fn damaged(what: &str) -> ImageError {
    ImageError::Damaged(format!("dm-zoned: {what}"))
}

impl DmZoned {
    /// The configuration an image must match: the whole format-time layout.
    fn config_text(&self) -> String {
        format!("{:?}", self.layout)
    }

    /// The layer's sections, in the order the module documentation lists them.
    fn save_sections<W: Write>(&self, w: &mut ImageWriter<W>) -> io::Result<()> {
        let z = &self.zones;
        let n = z.len() as u64;
        w.section(b"ZONE", n * (4 * ZONE_WORDS + 1))?;
        let list: Vec<u32> = z.list.iter().map(|&l| l as u32).collect();
        for v in [&z.wp, &z.weight, &z.chunk, &z.bzone, &z.active, &list, &z.prev, &z.next] {
            w.u32s(v)?;
        }
        w.bytes(&z.flags)?;
        let heads: Vec<u32> = z.heads.iter().flat_map(|h| [h.head, h.tail, h.len]).collect();
        w.section(b"LIST", 4 * heads.len() as u64)?;
        w.u32s(&heads)?;
        w.section(b"MAP ", 4 * self.map.len() as u64)?;
        w.u32s(&self.map)?;
        // Bitmaps are allocated on a zone's first write; which zones have one is kept too, so a
        // loaded layer saves the same image again.
        let maps = &self.bitmaps.maps;
        let has: Vec<u8> = maps.iter().map(|m| !m.is_empty() as u8).collect();
        let allocated = has.iter().filter(|&&h| h == 1).count() as u64;
        w.section(b"BITS", n + 8 * allocated * self.bitmaps.words as u64)?;
        w.bytes(&has)?;
        for m in maps.iter().filter(|m| !m.is_empty()) {
            w.u64s(m)?;
        }
        let m = &self.meta;
        let MetadataStats { flushes, empty_flushes, dirty_blocks, super_blocks, cache_flushes, bytes } = m.stats;
        let mut meta = vec![m.primary as u64, m.gen, flushes, empty_flushes, dirty_blocks, super_blocks, cache_flushes, bytes, m.dirty.len() as u64];
        meta.extend(m.dirty.iter().map(|&b| b as u64));
        w.section(b"META", 8 * meta.len() as u64)?;
        w.u64s(&meta)?;
        let rc = self.reclaim.image_words();
        w.section(b"RCLM", 8 * rc.len() as u64)?;
        w.u64s(&rc)?;
        write_counters(w, &self.counters)?;
        let traffic: Vec<u64> = self.traffic.iter().flat_map(traffic_words).collect();
        w.section(b"TRAF", 8 * traffic.len() as u64)?;
        w.u64s(&traffic)
    }

    /// Read the sections [`DmZoned::save_sections`] wrote over this layer's state (of the same
    /// layout). Values that index other tables are checked in [`DmZoned::check_loaded`], once
    /// the checksum has vouched for the bytes.
    fn load_sections<R: Read>(&mut self, r: &mut ImageReader<R>) -> Result<(), ImageError> {
        let z = &mut self.zones;
        let n = z.len() as u64;
        r.section(b"ZONE", n * (4 * ZONE_WORDS + 1))?;
        let mut list = vec![0u32; n as usize];
        for v in [&mut z.wp, &mut z.weight, &mut z.chunk, &mut z.bzone, &mut z.active, &mut list, &mut z.prev, &mut z.next] {
            r.u32s(v)?;
        }
        r.bytes(&mut z.flags)?;
        for (to, from) in z.list.iter_mut().zip(list) {
            *to = u16::try_from(from).map_err(|_| damaged("zone list id"))?;
        }
        let mut heads = vec![0u32; 3 * z.heads.len()];
        r.section(b"LIST", 4 * heads.len() as u64)?;
        r.u32s(&mut heads)?;
        for (h, w) in z.heads.iter_mut().zip(heads.chunks_exact(3)) {
            *h = ListHead { head: w[0], tail: w[1], len: w[2] };
        }
        r.section(b"MAP ", 4 * self.map.len() as u64)?;
        r.u32s(&mut self.map)?;
        let len = r.any_section(b"BITS")?;
        let mut has = vec![0u8; n as usize];
        r.bytes(&mut has)?;
        let words = self.bitmaps.words;
        let allocated = has.iter().filter(|&&h| h == 1).count() as u64;
        if has.iter().any(|&h| h > 1) || len != n + 8 * allocated * words as u64 {
            return Err(damaged("validity bitmaps"));
        }
        for (m, h) in self.bitmaps.maps.iter_mut().zip(has) {
            m.clear();
            if h == 1 {
                m.resize(words, 0);
                r.u64s(m)?;
            }
        }
        let len = r.any_section(b"META")?;
        let max = 9 + self.layout.nr_meta_blocks as u64;
        let meta = read_words(r, len, max, "metadata")?;
        let (head, dirty) = meta.split_at(9.min(meta.len()));
        if head.len() != 9 || head[8] != dirty.len() as u64 {
            return Err(damaged("metadata"));
        }
        let m = &mut self.meta;
        m.primary = head[0] as usize;
        m.gen = head[1];
        m.stats = MetadataStats { flushes: head[2], empty_flushes: head[3], dirty_blocks: head[4], super_blocks: head[5], cache_flushes: head[6], bytes: head[7] };
        m.dirty = dirty.iter().map(|&b| b as u32).collect();
        let mut rc = vec![0u64; self.reclaim.image_len()];
        r.section(b"RCLM", 8 * rc.len() as u64)?;
        r.u64s(&mut rc)?;
        self.reclaim.load_image_words(&rc).ok_or_else(|| damaged("reclaim state"))?;
        self.counters = read_counters(r)?;
        let mut traffic = vec![0u64; 8 * self.traffic.len()];
        r.section(b"TRAF", 8 * traffic.len() as u64)?;
        r.u64s(&mut traffic)?;
        for (t, w) in self.traffic.iter_mut().zip(traffic.chunks_exact(8)) {
            *t = DevTraffic {
                user_write_bytes: w[0],
                user_read_bytes: w[1],
                reclaim_read_bytes: w[2],
                reclaim_write_bytes: w[3],
                zero_fill_bytes: w[4],
                metadata_write_bytes: w[5],
                resets: w[6],
                flushes: w[7],
            };
        }
        Ok(())
    }

    /// After a load: the references between tables point inside them (so the layer cannot
    /// index out of bounds however the bytes were made), and the dirty-block set is rebuilt
    /// from the dirty list it mirrors.
    fn check_loaded(&mut self) -> Result<(), ImageError> {
        let z = &self.zones;
        let n = z.len() as u32;
        let zone_ref = |v: u32| v == NONE || v < n;
        let chunks = self.layout.nr_chunks;
        let zones_ok = z.bzone.iter().chain(&z.prev).chain(&z.next).all(|&v| zone_ref(v)) && z.chunk.iter().all(|&c| c == NONE || c < chunks);
        let lists_ok = z.list.iter().all(|&l| l == super::zones::L_NONE || (l as usize) < z.heads.len())
            && z.heads.iter().all(|h| zone_ref(h.head) && zone_ref(h.tail) && h.len <= n);
        let jobs_ok = self.reclaim.jobs_within(n, chunks);
        if !(zones_ok && lists_ok && jobs_ok && self.map.iter().all(|&v| zone_ref(v)) && self.meta.primary < 2) {
            return Err(damaged("zone references out of range"));
        }
        let m = &mut self.meta;
        m.dirty_bits.fill(0);
        for &b in &m.dirty {
            let (w, bit) = ((b >> 6) as usize, b & 63);
            match m.dirty_bits.get_mut(w) {
                Some(word) if *word >> bit & 1 == 0 => *word |= 1 << bit,
                _ => return Err(damaged("dirty metadata blocks")),
            }
        }
        Ok(())
    }
}

/// A section's `len` bytes of u64 words, at most `max` of them (more cannot be `what`).
fn read_words<R: Read>(r: &mut ImageReader<R>, len: u64, max: u64, what: &str) -> Result<Vec<u64>, ImageError> {
    if !len.is_multiple_of(8) || len / 8 > max {
        return Err(damaged(what));
    }
    let mut v = vec![0u64; (len / 8) as usize];
    r.u64s(&mut v)?;
    Ok(v)
}

fn traffic_words(t: &DevTraffic) -> [u64; 8] {
    let DevTraffic { user_write_bytes, user_read_bytes, reclaim_read_bytes, reclaim_write_bytes, zero_fill_bytes, metadata_write_bytes, resets, flushes } = *t;
    [user_write_bytes, user_read_bytes, reclaim_read_bytes, reclaim_write_bytes, zero_fill_bytes, metadata_write_bytes, resets, flushes]
}

/// The layer's image holds its devices' images (see the module documentation).
impl<C: BlockDevice + SavesImage, Z: BlockDevice + SavesImage> SavesImage for DmZonedDevice<C, Z> {
    fn save_image_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut w = ImageWriter::with_config(out, IMAGE_KIND, &self.layer.config_text())?;
        self.layer.save_sections(&mut w)?;
        w.section(b"DRVR", 16)?;
        w.u64s(&[self.since_flush, self.rr as u64])?;
        if let Some(c) = &self.cache {
            w.nested(b"CACH", &|o| c.save_image_to(o))?;
        }
        for d in &self.disks {
            w.nested(b"DISK", &|o| d.save_image_to(o))?;
        }
        w.finish().map(drop)
    }

    fn load_image_from(&mut self, input: &mut dyn Read) -> Result<(), ImageError> {
        let mut r = ImageReader::with_config(input, IMAGE_KIND, &self.layer.config_text())?;
        self.layer.load_sections(&mut r)?;
        let mut drv = [0u64; 2];
        r.section(b"DRVR", 16)?;
        r.u64s(&mut drv)?;
        if let Some(c) = self.cache.as_mut() {
            r.nested(b"CACH", |i| c.load_image_from(i).map_err(|e| e.within("the cache device")))?;
        }
        for (k, d) in self.disks.iter_mut().enumerate() {
            r.nested(b"DISK", |i| d.load_image_from(i).map_err(|e| e.within(&format!("disk {}", k + 1))))?;
        }
        r.finish()?;
        self.layer.check_loaded()?;
        self.since_flush = drv[0];
        self.rr = u32::try_from(drv[1]).ok().filter(|&rr| rr < self.layer.workers()).ok_or_else(|| damaged("reclaim round robin"))?;
        self.update_view();
        Ok(())
    }
}
