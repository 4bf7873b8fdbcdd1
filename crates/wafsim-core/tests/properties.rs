//! Property tests on random operation sequences: the FTL's invariants hold whatever the host does.
mod common;
use common::MU;
use proptest::prelude::*;
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, RuhType};

#[derive(Debug, Clone)]
enum Cmd {
    Io { op: u8, ns: u32, unit: u64, units: u32, misalign: u32, pid: Option<(u16, u16)> },
    RuhUpdate { ruh: u32 },
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        20 => (0u8..10, 0u32..3, 0u64..400, 1u32..20, prop_oneof![Just(0u32), 0u32..4096], proptest::option::of((0u16..2, 0u16..3)))
            .prop_map(|(op, ns, unit, units, misalign, pid)| Cmd::Io { op, ns, unit, units, misalign, pid }),
        1 => (0u32..4).prop_map(|ruh| Cmd::RuhUpdate { ruh }),
    ]
}

fn device(policy: GcPolicy, placement: Placement) -> Device {
    // 3 namespaces of 400 units on 120 erase units of 16 units: OP ~60%, thousands of GC runs.
    let namespaces = (0..3)
        .map(|i| NamespaceConfig { name: format!("ns{i}"), size_bytes: 400 * MU as u64, placement_handles: vec![i as u16, 3] })
        .collect();
    Device::new(DeviceConfig {
        logical_bytes: 1200 * MU as u64,
        physical_bytes: 120 * 16 * MU as u64,
        mapping_unit: MU,
        erase_unit_bytes: 16 * MU as u64,
        gc_policy: policy,
        gc_free_min: 2,
        gc_free_target: 3,
        placement,
        namespaces,
        seed: 11,
    })
    .unwrap()
}

fn policies() -> impl Strategy<Value = GcPolicy> {
    prop_oneof![Just(GcPolicy::Greedy), Just(GcPolicy::Fifo), Just(GcPolicy::CostBenefit), Just(GcPolicy::DChoices(3))]
}

fn placements() -> impl Strategy<Value = Placement> {
    prop_oneof![
        Just(Placement::Conventional),
        Just(Placement::Streams { streams: 4 }),
        Just(Placement::Fdp {
            reclaim_groups: 2,
            ruh_types: vec![
                RuhType::InitiallyIsolated,
                RuhType::PersistentlyIsolated,
                RuhType::InitiallyIsolated,
                RuhType::PersistentlyIsolated
            ]
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold(policy in policies(), placement in placements(), cmds in proptest::collection::vec(cmd(), 1..3000)) {
        let mut dev = device(policy, placement);
        let mut host_bytes = 0u64;
        for c in &cmds {
            match *c {
                Cmd::Io { op, ns, unit, units, misalign, pid } => {
                    let op = match op { 0..=6 => Op::Write, 7..=8 => Op::Trim, _ => Op::Read };
                    let offset = unit * MU as u64 + misalign as u64 % MU as u64;
                    let len = units * MU - (misalign % MU);
                    let pid = pid.map(|(rg, ph)| Pid::new(rg, ph)).unwrap_or(Pid::NONE);
                    let io = Io { op, ns, offset, len, pid };
                    let res = dev.submit(&io);
                    if offset + len as u64 > dev.namespace_bytes(ns) {
                        prop_assert!(res.is_err());
                    } else {
                        prop_assert!(res.is_ok(), "{:?}: {:?}", io, res);
                        if op == Op::Write { host_bytes += len as u64; }
                    }
                }
                Cmd::RuhUpdate { ruh } => {
                    let _ = dev.ruh_update(0, ruh);
                }
            }
        }
        // Valid counts equal live P2L entries, L2P and P2L agree, free units hold no data,
        // media writes = host + GC copies, per-namespace/per-frontier sums match.
        if let Err(e) = dev.check_invariants() { prop_assert!(false, "{}", e); }
        let c = dev.counters();
        prop_assert_eq!(c.host_write_bytes, host_bytes);
        prop_assert_eq!(c.media_units(), c.host_units + c.gc_units);
        prop_assert!(c.host_units * MU as u64 >= c.host_write_bytes);
    }
}
