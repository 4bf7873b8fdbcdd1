//! The device's whole state to and from a drive image (`crate::image`): mapping, erase units,
//! GC queues, frontiers, the pSLC cache (an `SLC ` section, only for a drive with one),
//! counters, the FDP event log, the GC's random state and clock. What
//! the configuration determines (geometry, namespaces' bases, reclaim-group runs, the media
//! layout of the timing model) is rebuilt from the configuration, which must be the one the
//! image was saved from.

use super::{Device, FdpEvent, FdpEventKind, FrontierKind, Maps, ReclaimGroup, NIL};
use crate::config::DeviceConfig;
use crate::image::{counters_from_words, counters_words, ImageError, ImageReader, ImageWriter};
use crate::rng::Rng;
use std::collections::VecDeque;
use std::io::{Read, Write};

/// The kind an FTL device's image names.
pub const IMAGE_KIND: &str = "ftl";

fn frontier_kind(k: FrontierKind) -> u32 {
    match k {
        FrontierKind::Host => 0,
        FrontierKind::Gc { shared: false } => 1,
        FrontierKind::Gc { shared: true } => 2,
    }
}

fn event_kind(k: FdpEventKind) -> u64 {
    match k {
        FdpEventKind::RuNotFullyWritten => 0,
        FdpEventKind::InvalidPid => 1,
        FdpEventKind::MediaReallocated => 2,
    }
}

impl Device {
    /// Write the device's state as a drive image (see [`crate::image`]). Commands logged for
    /// the timing model and not yet taken are not part of it (take them first).
    pub fn save_image<W: Write>(&self, out: W) -> std::io::Result<W> {
        assert!(self.media_ops.is_empty(), "media operations not taken before saving an image");
        let mut w = ImageWriter::with_config(out, IMAGE_KIND, &config_text(&self.cfg))?;
        let l2p = self.l2p.len() as u64;
        let p2l = self.p2l.len() as u64;
        let e = self.valid.len() as u64;
        w.section(b"MAP ", 4 * (l2p + p2l))?;
        w.u32s(&self.l2p)?;
        w.u32s(&self.p2l)?;
        w.section(b"EUS ", e * (4 * 6 + 8 + 1))?;
        for v in [&self.valid, &self.wp, &self.owner, &self.erase_count, &self.bq_next, &self.bq_prev] {
            w.u32s(v)?;
        }
        w.u64s(&self.sealed_at)?;
        w.bytes(&self.state)?;
        w.section(b"BQH ", 4 * self.bq_heads.len() as u64)?;
        w.u32s(&self.bq_heads)?;
        // Reclaim groups: free and FIFO queues in order, bucket floor, sealed count.
        let mut rg = Vec::new();
        for g in &self.rgs {
            rg.extend([g.bq_min, g.sealed, g.free.len() as u32, g.fifo.len() as u32]);
            rg.extend(g.free.iter().copied());
            rg.extend(g.fifo.iter().copied());
        }
        w.section(b"RGS ", 4 * rg.len() as u64)?;
        w.u32s(&rg)?;
        let mut fr = Vec::new();
        for f in &self.frontiers {
            fr.extend([frontier_kind(f.kind), f.rg, f.ruh, f.gc_dest, f.unit]);
        }
        fr.extend(self.host_frontier.iter().copied());
        w.section(b"FRNT", 4 * fr.len() as u64)?;
        w.u32s(&fr)?;
        if self.slc.is_some() {
            let slc = self.slc_words();
            w.section(b"SLC ", 8 * slc.len() as u64)?;
            w.u64s(&slc)?;
        }
        let mut misc = counters_words(&self.counters);
        misc.extend(self.rng.state());
        misc.extend([self.clock, self.next_rg as u64, self.events.len() as u64]);
        for ev in &self.events {
            misc.extend([event_kind(ev.kind), ev.rg as u64, ev.ruh as u64, ev.ns as u64, ev.units]);
        }
        w.section(b"MISC", 8 * misc.len() as u64)?;
        w.u64s(&misc)?;
        w.finish()
    }

    /// A device built from `cfg` and continued from the image `input` (saved by
    /// [`Device::save_image`] from a device of the same configuration): it behaves exactly as
    /// the saved device would have from there on.
    pub fn load_image<R: Read>(cfg: DeviceConfig, input: R) -> Result<Device, ImageError> {
        Device::load_image_over(cfg, Maps::ForImage, input)
    }

    /// [`Device::load_image`] with the maps' memory given (`maps`).
    fn load_image_over<R: Read>(cfg: DeviceConfig, maps: Maps, input: R) -> Result<Device, ImageError> {
        let mut d = Device::build(cfg, maps).map_err(|e| ImageError::Config(e.to_string()))?;
        let conf = config_text(&d.cfg);
        let mut r = ImageReader::with_config(input, IMAGE_KIND, &conf).map_err(|e| match e {
            // The one setting whose default changed after images existed: say how to load one.
            ImageError::Config(why) if d.cfg.fdp_idle_handles_hold_units && d.is_fdp() => ImageError::Config(format!(
                "{why} (an FDP image saved before idle handles held reclaim units by default loads with [device.fdp] idle_handles_hold_units = false)"
            )),
            e => e,
        })?;
        let (l2p, p2l, e) = (d.l2p.len() as u64, d.p2l.len() as u64, d.valid.len() as u64);
        r.section(b"MAP ", 4 * (l2p + p2l))?;
        r.u32s(&mut d.l2p)?;
        r.u32s(&mut d.p2l)?;
        r.section(b"EUS ", e * (4 * 6 + 8 + 1))?;
        for v in [&mut d.valid, &mut d.wp, &mut d.owner, &mut d.erase_count, &mut d.bq_next, &mut d.bq_prev] {
            r.u32s(v)?;
        }
        r.u64s(&mut d.sealed_at)?;
        r.bytes(&mut d.state)?;
        r.section(b"BQH ", 4 * d.bq_heads.len() as u64)?;
        r.u32s(&mut d.bq_heads)?;
        let n = r.any_section(b"RGS ")?;
        let mut rg = vec![0u32; words(n, 4, e * 2 + 4 * d.rgs.len() as u64)?];
        r.u32s(&mut rg)?;
        let mut it = rg.into_iter();
        for g in &mut d.rgs {
            let mut take = |n: usize| -> Result<VecDeque<u32>, ImageError> {
                let q: VecDeque<u32> = it.by_ref().take(n).collect();
                if q.len() != n { Err(ImageError::Damaged("reclaim groups".into())) } else { Ok(q) }
            };
            let head = take(4)?;
            let (bq_min, sealed, free, fifo) = (head[0], head[1], head[2] as usize, head[3] as usize);
            *g = ReclaimGroup { free: take(free)?, fifo: take(fifo)?, bq_min, sealed, first_eu: g.first_eu };
        }
        if it.next().is_some() {
            return Err(ImageError::Damaged("reclaim groups".into()));
        }
        let nf = d.frontiers.len();
        r.section(b"FRNT", 4 * (5 * nf + d.host_frontier.len()) as u64)?;
        let mut fr = vec![0u32; 5 * nf + d.host_frontier.len()];
        r.u32s(&mut fr)?;
        for (f, w) in d.frontiers.iter_mut().zip(fr.chunks_exact(5)) {
            f.kind = match w[0] {
                0 => FrontierKind::Host,
                1 => FrontierKind::Gc { shared: false },
                2 => FrontierKind::Gc { shared: true },
                k => return Err(ImageError::Damaged(format!("frontier kind {k}"))),
            };
            (f.rg, f.ruh, f.gc_dest, f.unit) = (w[1], w[2], w[3], w[4]);
        }
        d.host_frontier.copy_from_slice(&fr[5 * nf..]);
        let mut slc = Vec::new();
        if d.slc.is_some() {
            let n = r.any_section(b"SLC ")?;
            slc = vec![0u64; words(n, 8, e + 6)?];
            r.u64s(&mut slc)?;
        }
        let n = r.any_section(b"MISC")?;
        let mut misc = vec![0u64; words(n, 8, 1 << 24)?];
        r.u64s(&mut misc)?;
        r.finish()?;
        // Counters, then the random state, clock, next reclaim group and event log.
        let ctr_len = 16 + 6 * d.counters.namespaces.len() + 1 + 3 * d.counters.frontiers.len();
        if misc.len() < ctr_len + 7 {
            return Err(ImageError::Damaged("counters".into()));
        }
        d.counters = counters_from_words(&misc[..ctr_len])?;
        let rest = &misc[ctr_len..];
        d.rng = Rng::from_state([rest[0], rest[1], rest[2], rest[3]]);
        d.clock = rest[4];
        d.next_rg = rest[5] as u32;
        let events = rest[6] as usize;
        if rest.len() != 7 + 5 * events {
            return Err(ImageError::Damaged("FDP event log".into()));
        }
        d.events = rest[7..]
            .chunks_exact(5)
            .map(|w| {
                let kind = match w[0] {
                    0 => FdpEventKind::RuNotFullyWritten,
                    1 => FdpEventKind::InvalidPid,
                    2 => FdpEventKind::MediaReallocated,
                    k => return Err(ImageError::Damaged(format!("FDP event kind {k}"))),
                };
                Ok(FdpEvent { kind, rg: w[1] as u32, ruh: w[2] as u32, ns: w[3] as u32, units: w[4] })
            })
            .collect::<Result<_, _>>()?;
        if d.counters.namespaces.len() != d.cfg.namespaces.len() || d.counters.frontiers.len() != nf {
            return Err(ImageError::Damaged("counters of another drive".into()));
        }
        if d.slc.is_some() {
            d.load_slc_words(&slc)?;
        }
        Ok(d)
    }
}

/// The configuration an image must match: everything but the seed, which only starts the GC's
/// random state (the image carries that state), so a run with another seed may start from it.
fn config_text(cfg: &DeviceConfig) -> String {
    let text = format!("{:?}", DeviceConfig { seed: 0, ..cfg.clone() });
    // Images saved before GC age classes and idle-handle units existed name neither field: their
    // defaults (one class, idle handles hold nothing) are left out so those images still load.
    text.replace("gc_age_classes: 1, fdp_idle_handles_hold_units: false, ", "")
}

impl Device {
    /// The pSLC cache's state as words: counters (SLC programs, folds, uncounted SLC
    /// programs), fresh writes, open unit, each namespace's folds and uncounted SLC programs,
    /// then the full units oldest first. Which erase units are in SLC mode is in the EUS
    /// section's states.
    fn slc_words(&self) -> Vec<u64> {
        let s = self.slc.as_deref().expect("cache on");
        let c = &self.counters;
        let mut v = vec![c.slc_units, c.fold_units, c.uncounted_slc_units, s.fresh, s.open as u64];
        v.extend(c.namespaces.iter().flat_map(|n| [n.fold_units, n.uncounted_slc_units]));
        v.extend(s.full.iter().map(|&u| u as u64));
        v
    }

    fn load_slc_words(&mut self, w: &[u64]) -> Result<(), ImageError> {
        let bad = || ImageError::Damaged("pSLC cache".into());
        let [slc, fold, uncounted, fresh, open, ref rest @ ..] = *w else { return Err(bad()) };
        let per_ns = 2 * self.counters.namespaces.len();
        if rest.len() < per_ns {
            return Err(bad());
        }
        let (ns_words, full) = rest.split_at(per_ns);
        for (n, pair) in self.counters.namespaces.iter_mut().zip(ns_words.chunks_exact(2)) {
            (n.fold_units, n.uncounted_slc_units) = (pair[0], pair[1]);
        }
        let e = self.valid.len() as u64;
        if (open != NIL as u64 && open >= e) || full.iter().any(|&u| u >= e) {
            return Err(bad());
        }
        (self.counters.slc_units, self.counters.fold_units, self.counters.uncounted_slc_units) = (slc, fold, uncounted);
        let s = self.slc.as_deref_mut().expect("cache on");
        s.fresh = fresh;
        s.open = open as u32;
        s.full = full.iter().map(|&u| u as u32).collect();
        Ok(())
    }
}

/// `bytes` of `width`-byte words, at most `max` of them.
fn words(bytes: u64, width: u64, max: u64) -> Result<usize, ImageError> {
    if !bytes.is_multiple_of(width) || bytes / width > max {
        return Err(ImageError::Damaged(format!("a section of {bytes} bytes")));
    }
    Ok((bytes / width) as usize)
}

impl crate::image::SavesImage for Device {
    fn save_image_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.save_image(out).map(drop)
    }
    /// The image is read into this device's own mapping tables, so a full-size drive (15 GiB
    /// of tables for 7.68 TB) never exists twice in memory, and the load faults in no memory.
    fn load_image_from(&mut self, input: &mut dyn std::io::Read) -> Result<(), ImageError> {
        let maps = Maps::Reused { l2p: std::mem::take(&mut self.l2p), p2l: std::mem::take(&mut self.p2l) };
        *self = Device::load_image_over(self.cfg.clone(), maps, input)?;
        Ok(())
    }
}
