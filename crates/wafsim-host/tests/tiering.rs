//! Tiering layer: data placement against a reference model (property test following every
//! device command, migrations included), hot/cold versus uniform write traffic against
//! LRU-derived figures, the block-device surface, and configuration errors.

use proptest::prelude::*;
use std::collections::HashMap;
use wafsim_core::blockdev::{BlockDevice, ZoneAction};
use wafsim_core::{Device, DeviceConfig, DeviceError, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng};
use wafsim_host::tiering::{TieringConfigError, TieringError};
use wafsim_host::{Tier, TierIo, Tiering, TieringConfig, TieringDevice};

const KIB: u64 = 1024;
const MIB: u64 = 1 << 20;
const BS: u64 = 4096;

type Tiered = TieringDevice<Device, Device>;

fn io(op: Op, offset: u64, len: u64) -> Io {
    Io {
        op,
        ns: 0,
        offset,
        len: len as u32,
        pid: Pid::NONE,
    }
}

/// A flash device of exactly `bytes` logical bytes with `unit`-byte mapping units.
fn flash_unit(bytes: u64, unit: u32) -> Device {
    let eu = 64 * KIB;
    let eus = (bytes * 3 / 2).div_ceil(eu) + 4;
    Device::new(DeviceConfig {
        logical_bytes: bytes,
        physical_bytes: eus * eu,
        mapping_unit: unit,
        erase_unit_bytes: eu,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig {
            name: "ns".into(),
            size_bytes: bytes,
            placement_handles: vec![0],
        }],
        seed: 1,
        slc_cache: None,
    })
    .unwrap()
}

fn flash(bytes: u64) -> Device {
    flash_unit(bytes, 4096)
}

fn cfg(extent: u64) -> TieringConfig {
    TieringConfig {
        extent_bytes: extent,
        ..TieringConfig::default()
    }
}

/// What a tier's device holds per 4 KiB block: (sequence number of the user write, user block).
type Contents = HashMap<u64, (u64, u64)>;

/// Apply the commands of one user command to the modelled devices. `user` = (op, first user
/// block, sequence number). Returns what the user read, block by block, for a read.
fn apply(devs: &mut [Contents; 2], cmds: &[TierIo], user: (Op, u64, u64)) -> Vec<Option<(u64, u64)>> {
    let t = |tier: Tier| if tier == Tier::Hot { 0 } else { 1 };
    let (op, first, seq) = user;
    let mut k = 0; // user blocks covered so far by user commands
    let mut read = Vec::new();
    let mut pending: Option<Vec<Option<(u64, u64)>>> = None; // migration read awaiting its write
    for c in cmds {
        let blocks = c.io.len as u64 / BS;
        assert_eq!(c.io.offset % BS, 0);
        assert_eq!(c.io.ns, 0);
        let dev = &mut devs[t(c.tier)];
        let range = (0..blocks).map(|i| c.io.offset / BS + i);
        if c.migration {
            match c.io.op {
                Op::Read => {
                    assert_eq!(c.tier, Tier::Hot, "migration reads from hot");
                    assert!(pending.is_none());
                    pending = Some(range.map(|b| dev.get(&b).copied()).collect());
                }
                Op::Write => {
                    assert_eq!(c.tier, Tier::Cold, "migration writes to cold");
                    let data = pending.take().expect("migration write follows its read");
                    assert_eq!(data.len() as u64, blocks);
                    for (b, d) in range.zip(data) {
                        let d = d.expect("only written (dirty) blocks migrate");
                        dev.insert(b, d);
                    }
                }
                Op::Trim => {
                    assert_eq!(c.tier, Tier::Hot);
                    range.for_each(|b| {
                        dev.remove(&b);
                    });
                }
                other => panic!("unexpected migration op {other:?}"),
            }
            continue;
        }
        assert_eq!(c.io.op, op, "user command emits its own op");
        match op {
            Op::Write => {
                assert_eq!(c.tier, Tier::Hot, "writes go to the hot tier");
                for b in range {
                    dev.insert(b, (seq, first + k));
                    k += 1;
                }
            }
            Op::Read => {
                for b in range {
                    read.push(dev.get(&b).copied());
                    k += 1;
                }
            }
            Op::Trim => range.for_each(|b| {
                dev.remove(&b);
            }),
            _ => unreachable!(),
        }
    }
    assert!(pending.is_none());
    read
}

#[derive(Debug, Clone)]
enum Cmd {
    Write(u64, u64),
    Read(u64, u64),
    Trim(u64, u64),
    MigrateAll,
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        10 => (0u64..512, 1u64..40).prop_map(|(b, n)| Cmd::Write(b, n)),
        5 => (0u64..512, 1u64..40).prop_map(|(b, n)| Cmd::Read(b, n)),
        3 => (0u64..512, 1u64..40).prop_map(|(b, n)| Cmd::Trim(b, n)),
        1 => Just(Cmd::MigrateAll),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// 64 KiB extents, 8 hot slots (512 KiB), 32 extents on cold (2 MiB): random commands. The
    /// reference (last write per block) agrees with `locate`, with the modelled device contents
    /// built from the command lists, and with what reads return; the driver over real flash
    /// devices accepts every command and counts the same traffic.
    #[test]
    fn placement_matches_reference(cmds in prop::collection::vec(cmd(), 1..120)) {
        let c = cfg(64 * KIB);
        let mut layer = Tiering::new(512 * KIB, 2 * MIB, &c).unwrap();
        let mut dev: Tiered = TieringDevice::new(flash(512 * KIB), flash(2 * MIB), &c).unwrap();
        dev.set_io_log(true);
        prop_assert_eq!(layer.capacity(), 2 * MIB);
        prop_assert_eq!((layer.slots(), layer.low_slots(), layer.high_slots()), (8, 1, 2));
        let mut devs: [Contents; 2] = [HashMap::new(), HashMap::new()];
        let mut reference: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut out = Vec::new();
        for (seq, c) in cmds.iter().enumerate() {
            let seq = seq as u64 + 1;
            out.clear();
            let (op, b, n) = match *c {
                Cmd::Write(b, n) => (Op::Write, b, n.min(512 - b)),
                Cmd::Read(b, n) => (Op::Read, b, n.min(512 - b)),
                Cmd::Trim(b, n) => (Op::Trim, b, n.min(512 - b)),
                Cmd::MigrateAll => {
                    layer.migrate_all(&mut out);
                    prop_assert_eq!(layer.free_slots(), 8);
                    apply(&mut devs, &out, (Op::Flush, 0, seq));
                    dev.migrate_all().unwrap();
                    prop_assert_eq!(dev.take_io_log(), out.clone());
                    continue;
                }
            };
            let user = io(op, b * BS, n * BS);
            match op {
                Op::Write => layer.map_write(&user, &mut out).unwrap(),
                Op::Read => layer.map_read(&user, &mut out).unwrap(),
                _ => layer.map_trim(&user, &mut out).unwrap(),
            }
            let n_user = out.len();
            layer.migrate_to_watermark(&mut out);
            prop_assert!(out[n_user..].iter().all(|t| t.migration));
            prop_assert!(!layer.migration_needed());
            let read = apply(&mut devs, &out, (op, b, seq));
            match op {
                Op::Write => (b..b + n).for_each(|k| { reference.insert(k, (seq, k)); }),
                Op::Trim => (b..b + n).for_each(|k| { reference.remove(&k); }),
                _ => {
                    let want: Vec<_> = (b..b + n).map(|k| reference.get(&k).copied()).collect();
                    prop_assert_eq!(read, want);
                }
            }
            dev.submit(&user).unwrap();
            prop_assert_eq!(dev.take_io_log(), out.clone());
            for k in 0..512u64 {
                let at = layer.locate(k * BS);
                match reference.get(&k) {
                    None => prop_assert_eq!(at, None, "block {}", k),
                    Some(v) => {
                        let (tier, off) = at.expect("written block is located");
                        let i = if tier == Tier::Hot { 0 } else { 1 };
                        prop_assert_eq!(devs[i].get(&(off / BS)), Some(v), "block {}", k);
                        if tier == Tier::Cold {
                            prop_assert_eq!(off, k * BS, "cold is direct-mapped");
                        }
                    }
                }
            }
        }
        // Counters: host level and per tier agree with the commands.
        let lc = layer.counters();
        prop_assert_eq!(lc, dev.user_counters());
        // As a device: the user's bytes as host units, both drives' programs and erases as the
        // media's.
        let c = dev.counters();
        let (h, k) = (dev.hot().counters(), dev.cold().counters());
        prop_assert_eq!((c.host_write_bytes, c.host_read_bytes, c.trim_bytes), (lc.host_write_bytes, lc.host_read_bytes, lc.trim_bytes));
        prop_assert_eq!(c.host_units, lc.host_write_bytes / BS);
        prop_assert_eq!(c.media_units(), h.media_units() + k.media_units());
        prop_assert_eq!(c.erases, h.erases + k.erases);
        let dirty = layer.dirty_blocks() * BS;
        let hot = layer.tier_counters(Tier::Hot);
        let cold = layer.tier_counters(Tier::Cold);
        prop_assert_eq!(hot.user_write_bytes, lc.host_write_bytes);
        prop_assert_eq!(cold.user_write_bytes, 0);
        prop_assert_eq!(hot.migration_read_bytes, cold.migration_write_bytes);
        prop_assert_eq!(hot.user_read_bytes + cold.user_read_bytes, lc.host_read_bytes);
        prop_assert!(cold.migration_write_bytes + dirty + layer.absorbed_bytes() <= lc.host_write_bytes);
        prop_assert_eq!(layer.dirty_blocks() as usize, devs[0].len());
        prop_assert_eq!(dev.hot().counters().host_write_bytes, hot.write_bytes());
        prop_assert_eq!(dev.cold().counters().host_write_bytes, cold.write_bytes());
    }
}

/// Run `n` 4 KiB writes over a 64 MiB cold tier (1024 extents of 64 KiB) behind a 12 MiB hot
/// tier (192 slots, watermarks 20 / 39 free slots); `pick` chooses the block.
fn run(n: u64, mut pick: impl FnMut(&mut Rng) -> u64) -> Tiered {
    let mut dev: Tiered = TieringDevice::new(flash(12 * MIB), flash(64 * MIB), &cfg(64 * KIB)).unwrap();
    assert_eq!(
        (dev.layer().slots(), dev.layer().low_slots(), dev.layer().high_slots()),
        (192, 20, 39)
    );
    let mut rng = Rng::new(7);
    for _ in 0..n {
        let b = pick(&mut rng);
        dev.submit(&io(Op::Write, b * BS, BS)).unwrap();
    }
    dev
}

/// Every user byte is either migrated, still dirty in hot, or absorbed by an overwrite in hot
/// (no trims here).
fn conservation(d: &Tiered) {
    let l = d.layer();
    let user = l.counters().host_write_bytes;
    let mig = l.tier_counters(Tier::Cold).migration_write_bytes;
    assert_eq!(mig + l.dirty_blocks() * BS + l.absorbed_bytes(), user);
    assert_eq!(l.tier_counters(Tier::Hot).user_write_bytes, user);
    assert_eq!(l.tier_counters(Tier::Cold).user_write_bytes, 0);
}

/// 90 % of writes go to the first 10 % of the space (1638 blocks, 102.4 extents), 10 % to the
/// rest. LRU with between 153 and 172 resident slots has a characteristic time T (writes
/// between an extent's last write and its eviction) given by
/// `102 (1 - e^{-0.9 T / 102}) + 922 (1 - e^{-0.1 T / 922}) = C`: T ~ 600 for C ~ 160, so a hot
/// extent is evicted with probability e^{-5.3} ~ 0.5 % per write to it, and a cold-region write
/// is a miss ~ 94 % of the time. A cold-region miss migrates about one block (such extents are
/// seldom written twice while resident); an evicted hot extent is fully dirty and migrates 16.
/// Migration / user ~ 0.1 * 0.94 * 1 + 0.9 * 0.005 * 16 ~ 0.094 + 0.072 ~ 0.17. T enters through
/// an exponential, so allow 0.10-0.25. Uniform writes over all 1024 extents: T ~ 174 writes, an
/// extent collects 1 + 174/1024 ~ 1.17 writes per residency, almost all to distinct blocks, so
/// migration is about all user bytes minus what is still dirty in hot at the end (at most 192
/// slots x ~1.2 blocks ~ 230 of 20 000 blocks) and the few absorbed overwrites: assert 95-100 %.
#[test]
fn hot_cold_versus_uniform() {
    let n = 20_000;
    let total = 64 * MIB / BS;
    let hot_blocks = total / 10; // 1638 blocks
    let skewed = run(n, |r| {
        if r.below(10) < 9 {
            r.below(hot_blocks)
        } else {
            hot_blocks + r.below(total - hot_blocks)
        }
    });
    let uniform = run(n, |r| r.below(total));
    for d in [&skewed, &uniform] {
        conservation(d);
    }
    let ratio = |d: &Tiered| {
        let l = d.layer();
        l.tier_counters(Tier::Cold).migration_write_bytes as f64 / l.counters().host_write_bytes as f64
    };
    let (rs, ru) = (ratio(&skewed), ratio(&uniform));
    eprintln!(
        "skewed: migration/user = {rs:.4} ({} slots migrated, {} dirty blocks left, {} absorbed bytes); \
         uniform: migration/user = {ru:.4} ({} slots migrated, {} dirty blocks left, {} absorbed bytes)",
        skewed.layer().migrated_extents(),
        skewed.layer().dirty_blocks(),
        skewed.layer().absorbed_bytes(),
        uniform.layer().migrated_extents(),
        uniform.layer().dirty_blocks(),
        uniform.layer().absorbed_bytes(),
    );
    assert!(rs > 0.10 && rs < 0.25, "skewed migration ratio {rs}");
    assert!(ru > 0.95 && ru <= 1.0, "uniform migration ratio {ru}");
    // The cold device saw only migration writes; the hot device all user writes.
    assert_eq!(
        skewed.cold().counters().host_write_bytes,
        skewed.layer().tier_counters(Tier::Cold).migration_write_bytes
    );
    assert_eq!(skewed.hot().counters().host_write_bytes, n * BS);
    // The hot set stays resident: every extent of the first 10 % (but the one straddling the
    // boundary) has a hot slot and was written far more often than the others.
    let l = skewed.layer();
    assert!((0..102).all(|e| l.extent_slot(e).is_some()));
    assert!((0..102).map(|e| l.extent_writes(e)).min().unwrap() > 100);
    // Drain: afterwards everything is on cold and migration equals user bytes minus absorbed.
    let mut uniform = uniform;
    uniform.migrate_all().unwrap();
    let l = uniform.layer();
    assert_eq!(l.free_slots(), 192);
    assert_eq!(
        l.tier_counters(Tier::Cold).migration_write_bytes + l.absorbed_bytes(),
        n * BS
    );
}

#[test]
fn block_device_surface() {
    let mut d: Tiered = TieringDevice::new(flash(512 * KIB), flash(2 * MIB), &cfg(64 * KIB)).unwrap();
    assert_eq!(d.namespace_count(), 1);
    assert_eq!(d.namespace_bytes(0), 2 * MIB);
    assert_eq!(d.namespace_bytes(1), 0);
    assert_eq!(d.block_size(), 4096);
    assert!(matches!(
        d.submit(&Io {
            ns: 1,
            ..io(Op::Write, 0, BS)
        }),
        Err(DeviceError::NoSuchNamespace(1))
    ));
    assert!(matches!(d.submit(&io(Op::Write, 0, 0)), Err(DeviceError::ZeroLength)));
    assert!(matches!(
        d.submit(&io(Op::Write, 512, BS)),
        Err(DeviceError::Zone { .. })
    ));
    assert!(matches!(
        d.submit(&io(Op::Read, 2 * MIB - BS, 2 * BS)),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert!(matches!(
        d.submit(&io(Op::Append, 0, BS)),
        Err(DeviceError::NotZoned { ns: 0 })
    ));
    assert!(matches!(
        d.zone_mgmt(0, 0, ZoneAction::Reset),
        Err(DeviceError::NotZoned { ns: 0 })
    ));
    d.submit(&io(Op::Write, 60 * KIB, 8 * KIB)).unwrap(); // straddles two extents
    d.submit(&io(Op::Flush, 0, 0)).unwrap();
    assert_eq!(d.layer().free_slots(), 6);
    assert_eq!(d.layer().locate(60 * KIB), Some((Tier::Hot, 60 * KIB))); // extent 0 in slot 0
    d.submit(&io(Op::Trim, 0, 128 * KIB)).unwrap();
    assert_eq!(d.layer().free_slots(), 8, "slots left clean are freed");
    assert_eq!(d.layer().locate(60 * KIB), None);
    let mut l = Tiering::new(512 * KIB, 2 * MIB, &cfg(64 * KIB)).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        l.map_read(&io(Op::Read, 4095, BS), &mut out),
        Err(TieringError::Misaligned {
            offset: 4095,
            len: 4096
        })
    );
    assert!(out.is_empty());
}

#[test]
fn config_errors() {
    let new = |hot, cold, c: TieringConfig| Tiering::new(hot, cold, &c).map(|_| ());
    assert_eq!(new(MIB, 8 * MIB, cfg(0)), Err(TieringConfigError::BadExtent(0)));
    assert_eq!(new(MIB, 8 * MIB, cfg(5000)), Err(TieringConfigError::BadExtent(5000)));
    let wm = |low, high| TieringConfig {
        extent_bytes: 64 * KIB,
        low_free_pct: low,
        high_free_pct: high,
    };
    assert_eq!(
        new(MIB, 8 * MIB, wm(20, 10)),
        Err(TieringConfigError::BadWatermarks { low: 20, high: 10 })
    );
    assert_eq!(
        new(MIB, 8 * MIB, wm(10, 10)),
        Err(TieringConfigError::BadWatermarks { low: 10, high: 10 })
    );
    assert_eq!(
        new(MIB, 8 * MIB, wm(10, 101)),
        Err(TieringConfigError::BadWatermarks { low: 10, high: 101 })
    );
    // One slot, or a high watermark that leaves no slot in use.
    assert_eq!(
        new(64 * KIB, 8 * MIB, cfg(64 * KIB)),
        Err(TieringConfigError::HotTooSmall { slots: 1, high: 2 })
    );
    assert_eq!(
        new(128 * KIB, 8 * MIB, cfg(64 * KIB)),
        Err(TieringConfigError::HotTooSmall { slots: 2, high: 2 })
    );
    assert_eq!(
        new(MIB, 8 * MIB, wm(10, 100)),
        Err(TieringConfigError::HotTooSmall { slots: 16, high: 16 })
    );
    assert_eq!(
        new(MIB, 60 * KIB, cfg(64 * KIB)),
        Err(TieringConfigError::ColdTooSmall(60 * KIB))
    );
    assert!(new(192 * KIB, 8 * MIB, cfg(64 * KIB)).is_ok());
    // Default: 1 MiB extents; the exposed size rounds the cold device down to whole extents.
    let l = Tiering::new(64 * MIB, 1000 * MIB + 5 * KIB, &TieringConfig::default()).unwrap();
    assert_eq!(
        (l.capacity(), l.slots(), l.low_slots(), l.high_slots()),
        (1000 * MIB, 64, 7, 13)
    );
    let r = TieringDevice::new(flash_unit(MIB, 8192), flash(8 * MIB), &cfg(64 * KIB)).map(|_| ());
    assert_eq!(
        r.err(),
        Some(TieringConfigError::BadBlockSize {
            tier: Tier::Hot,
            block: 8192
        })
    );
}
