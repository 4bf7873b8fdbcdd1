//! Metadata copy-on-write at commit: every tree node the transaction changed is written to a
//! new place, on both DUP copies (`fs/btrfs/ctree.c btrfs_cow_block`,
//! `fs/btrfs/transaction.c btrfs_commit_transaction`), the nodes of the previous commit are
//! freed (pinned like data, `btrfs_free_tree_block`), then the superblocks are written
//! (`fs/btrfs/disk-io.c write_all_supers`). The node count is an estimate (module doc of
//! [`super`]).

use super::{BtrfsFs, Kind, SB_BYTES};
use crate::fs::FsError;
use wafsim_core::{Io, Op, Pid};

/// A leaf's header (`struct btrfs_header`), bytes.
const HEADER_BYTES: u64 = 101;
/// Checksum bytes per data block (crc32c).
const CSUM_BYTES: u64 = 4;

impl BtrfsFs {
    /// Tree nodes the running transaction rewrites: extent-tree and fs-tree leaves for the
    /// items it changed, csum leaves for its new data, plus the fixed root/path nodes. In a
    /// scaled run, those of the full-scale transaction: its data and its writes' items / `scale`
    /// (writes keep their size, so a full-scale commit holds 1 / `scale` as many), its per-file
    /// items (creates, deletes, freed extents) as they are (files grow with the scale, so a
    /// commit sees as many at any scale); a commit writes `scale` times as many
    /// ([`BtrfsConfig::scale`]).
    pub fn meta_nodes_estimate(&self) -> u64 {
        let nb = self.cfg.node_bytes as u64;
        let per_leaf = ((nb - HEADER_BYTES) / self.cfg.meta_item_bytes as u64).max(1);
        let s = self.cfg.scale;
        let up = |x: u64| if s >= 1.0 { x } else { (x as f64 / s).round() as u64 };
        let t = &self.tx;
        let ext = up(t.extent_items_w) + (t.extent_items - t.extent_items_w);
        let fsi = up(t.fs_items_w) + (t.fs_items - t.fs_items_w);
        let csum = (up(t.new_data_bytes) / self.cfg.block_bytes as u64 * CSUM_BYTES).div_ceil(nb - HEADER_BYTES);
        ext.div_ceil(per_leaf) + fsi.div_ceil(per_leaf) + csum + self.cfg.meta_fixed_nodes as u64
    }

    /// Nodes this commit writes: the estimate, or in a scaled run its `scale` share with the
    /// fraction carried over.
    fn meta_nodes_to_write(&mut self) -> u64 {
        let full = self.meta_nodes_estimate();
        if self.cfg.scale >= 1.0 {
            return full;
        }
        self.meta_carry += full as f64 * self.cfg.scale;
        let n = self.meta_carry.floor();
        self.meta_carry -= n;
        n as u64
    }

    /// Allocate and write this commit's nodes (both copies), free the previous commit's.
    pub(super) fn write_meta(&mut self, out: &mut Vec<Io>) -> Result<(), FsError> {
        let nb = self.cfg.node_bytes as u64;
        let n = self.meta_nodes_to_write();
        if n == 0 {
            // A scaled commit below one node: the previous commit's nodes stay the live tree.
            return Ok(());
        }
        let mut runs: Vec<(u32, u64, u64)> = Vec::new();
        if self.z.is_some() {
            runs = self.alloc_zoned_meta(n * nb, out)?;
        } else {
            let k = Kind::Meta as usize;
            while self.sp_total[k] - self.sp_used[k] < n * nb {
                if self.alloc_chunk(Kind::Meta, out).is_none() {
                    return Err(FsError::NoSpace { need: n * nb, free: self.sp_total[k] - self.sp_used[k] });
                }
            }
            let mut hint = None;
            for _ in 0..n {
                for (b, off, l) in self.alloc_conv(Kind::Meta, nb, hint, out)? {
                    hint = Some((b, off + l));
                    match runs.last_mut() {
                        Some(r) if r.0 == b && r.1 + r.2 == off => r.2 += l,
                        _ => runs.push((b, off, l)),
                    }
                }
            }
        }
        for &(b, off, l) in &runs {
            let g = &self.bgs[b as usize];
            let (dev, copies) = (g.dev, g.copies as usize);
            for &d in dev.iter().take(copies) {
                self.emit_rw(Op::Write, d + off, l, out);
                self.counters.meta_write_bytes += l;
                self.counters.dev_write_bytes += l;
            }
        }
        let old = std::mem::replace(&mut self.meta_live, runs);
        for (b, off, l) in old {
            self.free_extent(b, off, l);
        }
        if self.z.is_none() {
            self.maybe_alloc_chunk(Kind::Meta, out);
        }
        Ok(())
    }

    /// One 4 KiB superblock per copy: in place at 64 KiB, 64 MiB and 256 GiB (those that fit)
    /// on a conventional device; appended to the superblock log zones on a zoned one.
    /// A scaled run writes them at `scale` of the commits (fraction carried).
    pub(super) fn write_superblocks(&mut self, out: &mut Vec<Io>) {
        if self.cfg.scale < 1.0 {
            self.sb_carry += self.cfg.scale;
            if self.sb_carry < 1.0 {
                return;
            }
            self.sb_carry -= 1.0;
        }
        if self.z.is_some() {
            self.write_sb_log(out);
            return;
        }
        for i in 0..self.sb_offsets.len() {
            out.push(Io { op: Op::Write, ns: self.cfg.ns, offset: self.sb_offsets[i], len: SB_BYTES as u32, pid: Pid::NONE });
            self.counters.sb_write_bytes += SB_BYTES;
            self.counters.dev_write_bytes += SB_BYTES;
        }
    }
}
