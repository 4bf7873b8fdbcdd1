//! The tiering layer's whole state to and from a drive image (`wafsim_core::image`): each
//! extent's hot slot and write count, each slot's extent, dirty count, last-write sequence and
//! dirty bitmap, which cold blocks hold data, the free slots in their order, the write
//! sequence, absorbed and migrated totals, per-tier traffic and the counters. Then the hot and
//! cold devices' images, each whole in a section of its own (`HOT `, `COLD`; see
//! [`wafsim_core::image::ImageWriter::nested`]). The LRU order is not written: it is the slots
//! in use ordered by their last-write sequence, rebuilt on load. Sizes (slots, extents,
//! watermarks) follow from the configuration and the devices, which must be those the image
//! was saved from.

use super::{TierCounters, Tiering, TieringDevice, NONE};
use std::io::{self, Read, Write};
use wafsim_core::blockdev::BlockDevice;
use wafsim_core::image::{read_counters, write_counters, ImageError, ImageReader, ImageWriter, SavesImage};

/// The kind a tiering layer's image names.
pub const IMAGE_KIND: &str = "tiering";

fn damaged(what: &str) -> ImageError {
    ImageError::Damaged(format!("tiering: {what}"))
}

fn tier_words(c: &TierCounters) -> [u64; 5] {
    let TierCounters { user_write_bytes, migration_write_bytes, user_read_bytes, migration_read_bytes, trim_bytes } = *c;
    [user_write_bytes, migration_write_bytes, user_read_bytes, migration_read_bytes, trim_bytes]
}

fn tier_counters(w: &[u64]) -> TierCounters {
    TierCounters { user_write_bytes: w[0], migration_write_bytes: w[1], user_read_bytes: w[2], migration_read_bytes: w[3], trim_bytes: w[4] }
}

impl Tiering {
    /// The configuration an image must match: the layer's settings and the sizes the devices
    /// gave it.
    fn config_text(&self) -> String {
        format!("{:?}, {} slots, {} extents", self.cfg, self.slots, self.extents)
    }

    /// The layer's sections, in the order the module documentation lists them.
    fn save_sections<W: Write>(&self, w: &mut ImageWriter<W>) -> io::Result<()> {
        w.section(b"EXTS", 12 * self.extents as u64)?;
        w.u32s(&self.ext_slot)?;
        w.u64s(&self.ext_writes)?;
        w.section(b"SLOT", 16 * self.slots as u64)?;
        w.u32s(&self.slot_ext)?;
        w.u32s(&self.slot_dirty_count)?;
        w.u64s(&self.slot_seq)?;
        w.section(b"BITS", 8 * (self.dirty.len() + self.cold_valid.len()) as u64)?;
        w.u64s(&self.dirty)?;
        w.u64s(&self.cold_valid)?;
        w.section(b"FREE", 4 * self.free.len() as u64)?;
        w.u32s(&self.free)?;
        let mut misc = vec![self.seq, self.absorbed_bytes, self.migrated_extents];
        misc.extend(tier_words(&self.hot_c));
        misc.extend(tier_words(&self.cold_c));
        w.section(b"MISC", 8 * misc.len() as u64)?;
        w.u64s(&misc)?;
        write_counters(w, &self.counters)
    }

    /// Read what [`Tiering::save_sections`] wrote over this layer's state (of the same sizes).
    /// The LRU is rebuilt in [`Tiering::check_loaded`], once the checksum has vouched for the
    /// bytes.
    fn load_sections<R: Read>(&mut self, r: &mut ImageReader<R>) -> Result<(), ImageError> {
        r.section(b"EXTS", 12 * self.extents as u64)?;
        r.u32s(&mut self.ext_slot)?;
        r.u64s(&mut self.ext_writes)?;
        r.section(b"SLOT", 16 * self.slots as u64)?;
        r.u32s(&mut self.slot_ext)?;
        r.u32s(&mut self.slot_dirty_count)?;
        r.u64s(&mut self.slot_seq)?;
        r.section(b"BITS", 8 * (self.dirty.len() + self.cold_valid.len()) as u64)?;
        r.u64s(&mut self.dirty)?;
        r.u64s(&mut self.cold_valid)?;
        let len = r.any_section(b"FREE")?;
        if !len.is_multiple_of(4) || len / 4 > self.slots as u64 {
            return Err(damaged("free slots"));
        }
        self.free = vec![0; (len / 4) as usize];
        r.u32s(&mut self.free)?;
        let mut misc = [0u64; 13];
        r.section(b"MISC", 8 * misc.len() as u64)?;
        r.u64s(&mut misc)?;
        (self.seq, self.absorbed_bytes, self.migrated_extents) = (misc[0], misc[1], misc[2]);
        self.hot_c = tier_counters(&misc[3..8]);
        self.cold_c = tier_counters(&misc[8..13]);
        self.counters = read_counters(r)?;
        Ok(())
    }

    /// After a load: every reference points inside its table, each slot is either free or holds
    /// the extent that names it, and the LRU is the slots in use by last-write sequence.
    fn check_loaded(&mut self) -> Result<(), ImageError> {
        let (slots, extents) = (self.slots, self.extents);
        let ext_ok = self.ext_slot.iter().enumerate().all(|(e, &s)| s == NONE || (s < slots && self.slot_ext[s as usize] == e as u32));
        let slot_ok = self.slot_ext.iter().all(|&e| e == NONE || e < extents);
        let mut free = vec![false; slots as usize];
        let free_ok = self.free.iter().all(|&s| s < slots && self.slot_ext[s as usize] == NONE && !std::mem::replace(&mut free[s as usize], true));
        if !(ext_ok && slot_ok && free_ok) || self.counters.namespaces.len() != 1 {
            return Err(damaged("slot map"));
        }
        self.lru.clear();
        for (s, &e) in self.slot_ext.iter().enumerate() {
            let seq = self.slot_seq[s];
            // A slot in use was written (sequence from 1 on); a free one has sequence 0.
            if (e == NONE) != (seq == 0) || seq > self.seq || (e != NONE && self.lru.insert(seq, s as u32).is_some()) {
                return Err(damaged("last-write order"));
            }
        }
        if self.lru.len() + self.free.len() != slots as usize {
            return Err(damaged("slots neither free nor in use"));
        }
        Ok(())
    }
}

/// The layer's image holds its devices' images (see the module documentation).
impl<H: BlockDevice + SavesImage, C: BlockDevice + SavesImage> SavesImage for TieringDevice<H, C> {
    fn save_image_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut w = ImageWriter::with_config(out, IMAGE_KIND, &self.layer.config_text())?;
        self.layer.save_sections(&mut w)?;
        w.nested(b"HOT ", &|o| self.hot.save_image_to(o))?;
        w.nested(b"COLD", &|o| self.cold.save_image_to(o))?;
        w.finish().map(drop)
    }

    fn load_image_from(&mut self, input: &mut dyn Read) -> Result<(), ImageError> {
        let mut r = ImageReader::with_config(input, IMAGE_KIND, &self.layer.config_text())?;
        self.layer.load_sections(&mut r)?;
        r.nested(b"HOT ", |i| self.hot.load_image_from(i).map_err(|e| e.within("the hot device")))?;
        r.nested(b"COLD", |i| self.cold.load_image_from(i).map_err(|e| e.within("the cold device")))?;
        r.finish()?;
        self.layer.check_loaded()?;
        self.update_view();
        Ok(())
    }
}
