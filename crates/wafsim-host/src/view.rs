//! A host layer's counters as a device reports its own, so a layer can stand wherever a device
//! does (one drive of an experiment, under another layer): the host side is what the user wrote
//! to the layer, the media side every byte the layer's devices took, so the layer's WAF is
//! media units / host units like a device's.

use wafsim_core::counters::Counters;

/// A layer's user-level counters restated in a counting unit, kept by the layer's driver and
/// brought up to date after every command (or batch).
#[derive(Debug, Clone)]
pub(crate) struct DeviceView {
    /// Bytes per unit of `host_units` and `gc_units`.
    unit: u64,
    counters: Counters,
}

impl DeviceView {
    /// An empty view counting in `unit` bytes (panics on 0: no unit divides into it).
    pub(crate) fn new(unit: u64) -> DeviceView {
        assert!(unit > 0, "a counting unit of 0 bytes");
        DeviceView { unit, counters: Counters::default() }
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Restate `user` with `media_bytes` written to the layer's devices and `erases` on them.
    /// Host units come from the cumulative host bytes (a sum of per-command units would round
    /// each command up), GC units are the rest of the media units. Copied field by field into
    /// the counters already held, so a command costs no allocation.
    pub(crate) fn update(&mut self, user: &Counters, media_bytes: u64, erases: u64) {
        // Destructured in full so that a counter added to `Counters` has to be placed here.
        let Counters {
            host_write_bytes,
            host_units: _,
            gc_units: _,
            pad_units,
            erases: _,
            host_read_bytes,
            read_units,
            unmapped_read_units,
            trim_bytes,
            trimmed_units,
            background_victims,
            // A layer has no pSLC cache of its own; its drives' caches are in `media_bytes`.
            slc_units: _,
            fold_units: _,
            uncounted_slc_units: _,
            namespaces,
            frontiers,
            fdp_events,
        } = user;
        let c = &mut self.counters;
        c.host_write_bytes = *host_write_bytes;
        c.host_units = host_write_bytes.div_ceil(self.unit);
        c.gc_units = media_bytes.div_ceil(self.unit).saturating_sub(c.host_units);
        c.pad_units = *pad_units;
        c.erases = erases;
        c.host_read_bytes = *host_read_bytes;
        c.read_units = *read_units;
        c.unmapped_read_units = *unmapped_read_units;
        c.trim_bytes = *trim_bytes;
        c.trimmed_units = *trimmed_units;
        c.background_victims = *background_victims;
        c.namespaces.clone_from(namespaces);
        c.frontiers.clone_from(frontiers);
        c.fdp_events.clone_from(fdp_events);
        // A layer exposes one namespace: it took all of the traffic.
        if let Some(n) = c.namespaces.first_mut() {
            n.host_units = c.host_units;
            n.gc_units = c.gc_units;
        }
    }
}
