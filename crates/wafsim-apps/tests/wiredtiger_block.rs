//! WiredTiger's block manager against hand-computed cases: best fit, immediate reuse of a block
//! freed before any checkpoint saw it, reuse of a checkpointed block only after the next
//! checkpoint, growth at the end only when nothing fits, the checkpoint's own blocks, and the
//! tail cut.

use proptest::prelude::*;
use wafsim_apps::wiredtiger::BlockManager;

const K: u64 = 4096;

/// Best fit: the smallest free extent that holds the block, the lowest offset among equals,
/// carved from its low end; the file grows only when no extent fits.
#[test]
fn best_fit_carves_the_smallest_extent_that_fits() {
    let mut bm = BlockManager::new(K);
    assert_eq!(bm.file_size(), K, "the descriptor block comes first");
    let a = bm.alloc(2 * K);
    let b = bm.alloc(K);
    let c = bm.alloc(4 * K);
    let d = bm.alloc(K);
    assert_eq!((a, b, c, d), (K, 3 * K, 4 * K, 8 * K));
    assert_eq!(bm.file_size(), 9 * K);
    // Never checkpointed: freed blocks are free at once.
    bm.free(a, 2 * K);
    bm.free(c, 4 * K);
    assert_eq!(bm.avail(), vec![(K, 2 * K), (4 * K, 4 * K)]);
    // 2 units: the 2-unit extent at K fits exactly (best fit), not the first 4-unit one.
    assert_eq!(bm.alloc(2 * K), K);
    // 1 unit: only the 4-unit extent is left; its low end, the rest stays free.
    assert_eq!(bm.alloc(K), 4 * K);
    assert_eq!(bm.avail(), vec![(5 * K, 3 * K)]);
    // 4 units: nothing fits (3 units free in all): the file grows.
    assert_eq!(bm.alloc(4 * K), 9 * K);
    assert_eq!(bm.file_size(), 13 * K);
    // Among free extents of the same size the lowest offset wins.
    bm.free(b, K);
    bm.free(d, K);
    assert_eq!(bm.avail(), vec![(3 * K, K), (5 * K, 4 * K)], "3 units at 5K and d's unit at 8K merged");
    assert_eq!(bm.alloc(K), 3 * K);
    bm.check_invariants();
}

/// A block in the last checkpoint, freed afterwards, waits until the next checkpoint is
/// durable; a block allocated and freed between two checkpoints is free at once.
#[test]
fn a_checkpointed_block_is_reused_only_after_the_next_checkpoint() {
    let mut bm = BlockManager::new(K);
    let x = bm.alloc(2 * K); // at K
    assert_eq!(x, K);
    // Checkpoint 1: the root (1 unit, first fit: nothing is free, so at the end, 3K), then the
    // alloc list ({K..4K}: one extent after merging x and the root: 1 unit, at 4K); no discard
    // list (empty) and no avail list (empty).
    let c1 = bm.checkpoint(100);
    assert_eq!(c1.root, (3 * K, K));
    assert_eq!(c1.lists, vec![(4 * K, K)]);
    assert_eq!(c1.truncated_to, None);
    bm.resolve();
    assert_eq!(bm.file_size(), 5 * K);
    // x belongs to checkpoint 1: freeing it makes it wait, and a new block of its size grows the file.
    bm.free(x, 2 * K);
    assert_eq!(bm.avail_bytes(), 0);
    assert_eq!(bm.waiting_bytes(), 2 * K);
    let y = bm.alloc(2 * K);
    assert_eq!(y, 5 * K);
    // y was never checkpointed: freed, it is free at once, and taken again.
    bm.free(y, 2 * K);
    assert_eq!(bm.avail(), vec![(5 * K, 2 * K)]);
    assert_eq!(bm.alloc(2 * K), 5 * K);
    // Checkpoint 2 deletes checkpoint 1: x (K..3K), checkpoint 1's root (3K) and its list
    // block (4K) become free once checkpoint 2 is durable, not before. Nothing is free yet, so
    // the new root (first fit) goes to the end (7K), and so do the new alloc list ({5K..8K}: y
    // and the root, at 8K) and the avail list (the one waiting extent K..5K, at 9K); the discard
    // list is empty and not written.
    let c2 = bm.checkpoint(100);
    assert_eq!(c2.root, (7 * K, K));
    assert_eq!(c2.lists, vec![(8 * K, K), (9 * K, K)]);
    assert_eq!((bm.avail_bytes(), bm.waiting_bytes()), (0, 4 * K));
    bm.resolve();
    assert_eq!(bm.avail(), vec![(K, 4 * K)]);
    assert_eq!(bm.file_size(), 10 * K);
    // The next block of x's size goes where x was.
    assert_eq!(bm.alloc(2 * K), K);
    bm.check_invariants();
}

/// The file is cut back when its last free extent ends at its end, at a checkpoint, but not
/// for space that checkpoint itself frees.
#[test]
fn the_tail_is_cut_at_a_checkpoint_once_free() {
    let mut bm = BlockManager::new(K);
    let a = bm.alloc(K); // K
    let b = bm.alloc(8 * K); // 2K..10K
    assert_eq!((a, b), (K, 2 * K));
    // b freed before any checkpoint: free at once, at the end of the file: the checkpoint's root
    // goes first fit into it (2K), and then the rest of b (3K..10K) is cut off.
    bm.free(b, 8 * K);
    let c1 = bm.checkpoint(100);
    assert_eq!(c1.root, (2 * K, K));
    assert_eq!(c1.truncated_to, Some(3 * K));
    // The alloc list ({K..3K}) is written after the cut, at the new end.
    assert_eq!(c1.lists, vec![(3 * K, K)]);
    assert_eq!(bm.file_size(), 4 * K);
    bm.resolve();
    bm.check_invariants();
}

fn op() -> impl Strategy<Value = (u8, u64)> {
    (0u8..4, 1u64..6)
}

proptest! {
    /// Whatever the sequence of allocations, frees and checkpoints, free, waiting and used space
    /// never overlap and stay inside the file.
    #[test]
    fn lists_stay_disjoint(ops in proptest::collection::vec(op(), 1..200)) {
        let mut bm = BlockManager::new(K);
        let mut live: Vec<(u64, u64)> = Vec::new();
        for (kind, n) in ops {
            match kind {
                0 | 1 => live.push((bm.alloc(n * K), n * K)),
                2 if !live.is_empty() => {
                    let (o, s) = live.swap_remove((n as usize * 7) % live.len());
                    bm.free(o, s);
                }
                _ => {
                    bm.checkpoint(200);
                    bm.resolve();
                }
            }
            bm.check_invariants();
            for &(o, s) in &live {
                prop_assert!(bm.avail().iter().all(|&(fo, fs)| fo + fs <= o || o + s <= fo), "live block {o}+{s} is also free");
            }
        }
    }
}
