//! A simulated FDP drive read as nvme-cli reads a real one: DriveState before and after a run
//! that forces GC, printed as `fdp stats`, `smart-log` and `ocp smart-add-log`, parsed back,
//! and the WAF compared with the simulator's own counters.

use wafsim_core::device::FrontierKind;
use wafsim_core::{
    Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng, RuhType,
};
use wafsim_report::nvme::drive::*;
use wafsim_report::nvme::*;

const MU: u32 = 4096;
/// Mapping units per reclaim unit.
const NP: u64 = 64;
const EUS: u64 = 128;

/// Two reclaim groups, handles [II, II, PI, II]; ns1 uses RUHs 0 and 1, ns2 RUH 2; RUH 3 is
/// unused. 25 % of the flash is spare.
fn fdp_config() -> DeviceConfig {
    let ns_bytes = 40 * NP * MU as u64;
    DeviceConfig {
        logical_bytes: 2 * ns_bytes,
        physical_bytes: EUS * NP * MU as u64,
        mapping_unit: MU,
        erase_unit_bytes: NP * MU as u64,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Fdp {
            reclaim_groups: 2,
            ruh_types: vec![
                RuhType::InitiallyIsolated,
                RuhType::InitiallyIsolated,
                RuhType::PersistentlyIsolated,
                RuhType::InitiallyIsolated,
            ],
        },
        namespaces: vec![
            NamespaceConfig {
                name: "hot".into(),
                size_bytes: ns_bytes,
                placement_handles: vec![0, 1],
            },
            NamespaceConfig {
                name: "cold".into(),
                size_bytes: ns_bytes,
                placement_handles: vec![2],
            },
        ],
        seed: 7,
        slc_cache: None,
    }
}

fn write(dev: &mut Device, ns: u32, unit: u64, pid: Pid) {
    let io = Io {
        op: Op::Write,
        ns,
        offset: unit * MU as u64,
        len: MU,
        pid,
    };
    dev.submit(&io).unwrap();
}

/// Fills both namespaces, then overwrites them at random (through every placement handle and
/// both reclaim groups) until GC has run a good while. Returns (write commands, read commands).
fn run(dev: &mut Device, overwrites: u64, rng: &mut Rng) -> (u64, u64) {
    let units = dev.namespace_bytes(0) / MU as u64;
    let mut cmds = 0;
    for ns in 0..2u32 {
        for u in 0..units {
            write(dev, ns, u, Pid::new((u % 2) as u16, 0));
            cmds += 1;
        }
    }
    for _ in 0..overwrites {
        let ns = rng.below(2) as u32;
        let ph = if ns == 0 { rng.below(2) as u16 } else { 0 };
        // ns1: a hot tenth of the space, so the handles see different invalidation patterns.
        let u = if ns == 0 && rng.below(4) > 0 {
            rng.below(units / 10)
        } else {
            rng.below(units)
        };
        write(dev, ns, u, Pid::new(rng.below(2) as u16, ph));
        cmds += 1;
    }
    let mut reads = 0;
    for u in 0..100 {
        dev.submit(&Io {
            op: Op::Read,
            ns: 1,
            offset: u * MU as u64,
            len: MU,
            pid: Pid::NONE,
        })
        .unwrap();
        reads += 1;
    }
    (cmds, reads)
}

fn text_opts() -> TextOptions {
    TextOptions::default()
}

/// All three outputs of a state, as a user would paste them one after another.
fn nvme_cli_texts(st: &DriveState) -> (String, String) {
    let fdp = print_fdp_stats(&fdp_stats(st).unwrap(), &text_opts());
    let smart = print_smart_log(
        &smart_log(st, None).unwrap(),
        0xffff_ffff,
        &st.name,
        &text_opts(),
    ) + &print_ocp_smart_add_log(&ocp_smart_add_log(st));
    (fdp, smart)
}

#[test]
fn waf_from_printed_logs_matches_the_counters() {
    let cfg = fdp_config();
    let mut dev = Device::new(cfg.clone()).unwrap();
    let mut rng = Rng::new(11);
    // A first stretch so BEFORE is not all zeros (SMART rounding then matters on both sides).
    let (w0, r0) = run(&mut dev, 20_000, &mut rng);
    let before = DriveState::new(&cfg, dev.counters(), (w0, r0), 3600);
    let c0 = dev.counters().clone();
    let mut w1 = 0;
    for _ in 0..30_000 {
        let u = rng.below(dev.namespace_bytes(0) / MU as u64 / 10);
        write(
            &mut dev,
            0,
            u,
            Pid::new(rng.below(2) as u16, rng.below(2) as u16),
        );
        w1 += 1;
    }
    // A partial write (half a mapping unit) so host bytes are not a multiple of anything.
    dev.submit(&Io {
        op: Op::Write,
        ns: 1,
        offset: 0,
        len: 1000,
        pid: Pid::NONE,
    })
    .unwrap();
    w1 += 1;
    let after = DriveState::new(&cfg, dev.counters(), (w0 + w1, r0), 7200);
    let c1 = dev.counters().clone();
    let d = c1.delta(&c0);
    assert!(d.gc_units > 0, "the run must force GC");
    let host = d.host_write_bytes as f64;
    let media = (d.media_units() * MU as u64) as f64;
    let truth = media / host;
    assert!(truth > 1.2, "a WAF worth measuring: {truth}");

    let (fdp_b, smart_b) = nvme_cli_texts(&before);
    let (fdp_a, smart_a) = nvme_cli_texts(&after);
    println!("--- fdp stats (after)\n{fdp_a}--- smart-log + ocp smart-add-log (after)\n{smart_a}");

    // FDP statistics: exact.
    let r = waf_from_texts(&fdp_b, &fdp_a).unwrap();
    assert_eq!(r.method, WafMethod::FdpStats);
    assert_eq!(r.host_bytes, d.host_write_bytes as u128);
    assert_eq!(r.media_bytes, (d.media_units() * MU as u64) as u128);
    assert_eq!(r.waf, truth);

    // SMART + OCP: media exact, host within the rounding of each capture (< 512,000 bytes).
    let r = waf_from_texts(&smart_b, &smart_a).unwrap();
    assert_eq!(r.method, WafMethod::SmartAndOcp);
    assert_eq!(r.media_bytes, (d.media_units() * MU as u64) as u128);
    let err = (r.host_bytes as i128 - d.host_write_bytes as i128).abs();
    assert!(err < DATA_UNIT_BYTES as i128, "host bytes off by {err}");
    let bound = truth * DATA_UNIT_BYTES as f64 / host;
    assert!((r.waf - truth).abs() <= bound, "{} vs {truth}", r.waf);

    // Both printed together: FDP is preferred.
    let r = waf_from_texts(&(smart_b.clone() + &fdp_b), &(fdp_a.clone() + &smart_a)).unwrap();
    assert_eq!(r.method, WafMethod::FdpStats);

    // The state's own snapshot gives what parsing its printed logs gives.
    let parsed = parse_snapshot(&(smart_a.clone() + &fdp_a)).unwrap();
    let own = after.snapshot();
    assert_eq!(own.data_units_written, parsed.data_units_written);
    assert_eq!(
        own.physical_media_units_written,
        parsed.physical_media_units_written
    );
    assert_eq!(own.hbmw, parsed.hbmw);
    assert_eq!(own.mbmw, parsed.mbmw);
    assert_eq!(own.mbe, parsed.mbe);
    assert_eq!(waf(&before.snapshot(), &own).unwrap().waf, truth);

    // Counter-level checks of the SMART view.
    let s = smart_log(&after, None).unwrap();
    assert_eq!(
        s.data_units_written,
        (c1.host_write_bytes as u128).div_ceil(512_000)
    );
    assert_eq!(s.host_write_commands, (w0 + w1) as u128);
    assert_eq!(s.host_read_commands, r0 as u128);
    assert_eq!(s.power_on_hours, 2);
    let pct = c1.erases as u128 * 100 / (EUS as u128 * DEFAULT_RATED_PE_CYCLES as u128);
    assert_eq!(s.percentage_used as u128, pct);
    let f = fdp_stats(&after).unwrap();
    assert_eq!(f.mbe, c1.erases as u128 * NP as u128 * MU as u128);
}

#[test]
fn json_round_trip_and_errors() {
    let cfg = fdp_config();
    let mut dev = Device::new(cfg.clone()).unwrap();
    let cmds = run(&mut dev, 5_000, &mut Rng::new(3));
    dev.ruh_update(1, 0).unwrap();
    let mut st = DriveState::from_device(&dev, cmds, 42);
    st.events = dev
        .fdp_events()
        .map(|e| DriveEvent::from_core(e, 2, 1_700_000_000_000))
        .collect();
    let json = st.to_json();
    assert!(
        json.trim_start()
            .starts_with("{\n  \"wafsim_drive_state\": 1,"),
        "{json}"
    );
    assert!(DriveState::is_drive_state(&json));
    let back = DriveState::from_json(&json).unwrap();
    assert_eq!(back, st);
    assert_eq!(back.counters, *dev.counters());
    assert!(st.erase_count_range.is_some() && st.free_erase_units.is_some());

    let e = DriveState::from_json("{\"hbmw\": 1, \"mbmw\": 2}")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("not a wafsim drive state: no \"wafsim_drive_state\" marker"),
        "{e}"
    );
    let e = DriveState::from_json("Host Bytes with Metadata Written (HBMW): 1").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("not a wafsim drive state: not JSON"),
        "{e}"
    );
    let e = DriveState::from_json("[1]").unwrap_err().to_string();
    assert_eq!(
        e,
        "not a wafsim drive state: expected a JSON object, found an array"
    );
    let e = DriveState::from_json(&json.replacen(": 1,", ": 2,", 1)).unwrap_err();
    assert_eq!(e, DriveError::UnsupportedFormat(2));
    let e = DriveState::from_json(&json.replace("\"serial\"", "\"serial_number\"")).unwrap_err();
    assert!(e.to_string().contains("missing field `serial`"), "{e}");
    assert!(e.to_string().contains("line"), "{e}");
    // Optional fields may be left out by a producer.
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in [
        "events",
        "erase_count_range",
        "free_erase_units",
        "rated_pe_cycles",
    ] {
        o.remove(k);
    }
    let slim = DriveState::from_json(&v.to_string()).unwrap();
    assert_eq!(slim.rated_pe_cycles, DEFAULT_RATED_PE_CYCLES);
    assert!(slim.events.is_empty());
}

#[test]
fn frontier_layout_matches_the_device() {
    let mut placements = vec![
        Placement::Conventional,
        Placement::Streams { streams: 3 },
        fdp_config().placement,
        Placement::Fdp {
            reclaim_groups: 2,
            ruh_types: vec![RuhType::PersistentlyIsolated; 2],
        },
    ];
    placements.push(Placement::Fdp {
        reclaim_groups: 1,
        ruh_types: vec![RuhType::InitiallyIsolated; 3],
    });
    for p in placements {
        let mut cfg = fdp_config();
        cfg.placement = p.clone();
        if !matches!(p, Placement::Fdp { .. }) {
            for ns in &mut cfg.namespaces {
                ns.placement_handles = vec![0];
            }
        } else if let Placement::Fdp { ruh_types, .. } = &p {
            for ns in &mut cfg.namespaces {
                ns.placement_handles
                    .retain(|&h| (h as usize) < ruh_types.len());
                if ns.placement_handles.is_empty() {
                    ns.placement_handles.push(0);
                }
            }
        }
        let dev = Device::new(cfg.clone()).unwrap();
        let st = DriveState::new(&cfg, dev.counters(), (0, 0), 0);
        let ours = frontier_layout(&st.placement);
        let theirs: Vec<FrontierRole> = dev
            .frontiers()
            .iter()
            .map(|f| match f.kind {
                FrontierKind::Host => FrontierRole::Host {
                    rg: f.rg,
                    ruh: f.ruh,
                },
                FrontierKind::Gc { shared: true } => FrontierRole::Gc {
                    rg: f.rg,
                    ruh: None,
                },
                FrontierKind::Gc { shared: false } => FrontierRole::Gc {
                    rg: f.rg,
                    ruh: Some(f.ruh),
                },
            })
            .collect();
        assert_eq!(ours, theirs, "{p}");
        assert_eq!(ours.len(), dev.counters().frontiers.len());
    }
}

/// Writing exactly RUAMW logical blocks through a placement identifier fills the handle's
/// reclaim unit, and one more write opens a new one: RUAMW is exact, also after RUH updates.
#[test]
fn fdp_status_ruamw_is_what_the_handle_can_still_take() {
    let cfg = fdp_config();
    let mut dev = Device::new(cfg.clone()).unwrap();
    let mut rng = Rng::new(5);
    run(&mut dev, 7_000, &mut rng);
    // Reset two handles mid-unit (RU not fully written events).
    for _ in 0..5 {
        write(&mut dev, 0, rng.below(100), Pid::new(1, 1));
    }
    dev.ruh_update(1, 1).unwrap();
    for _ in 0..3 {
        write(&mut dev, 1, rng.below(100), Pid::new(0, 0));
    }
    dev.ruh_update(0, 2).unwrap();
    let layout_host = |dev: &Device, rg: u32, ruh: u32| {
        dev.frontiers()
            .iter()
            .position(|f| f.kind == FrontierKind::Host && f.rg == rg && f.ruh == ruh)
            .unwrap()
    };
    for round in 0..3 {
        let mut st = DriveState::new(&cfg, dev.counters(), (0, 0), 0);
        st.events = dev
            .fdp_events()
            .map(|e| DriveEvent::from_core(e, 2, 0))
            .collect();
        assert_eq!(
            st.events
                .iter()
                .filter(|e| e.event_type == EVENT_RUNFW)
                .count() as u64,
            st.counters.fdp_events.ru_not_fully_written
        );
        if round == 0 {
            // The RU-not-fully-written events matter: without them two handles read wrong.
            let mut bare = st.clone();
            bare.events.clear();
            let differ = (1..=2)
                .map(|n| {
                    let (a, b) = (fdp_status(&st, n).unwrap(), fdp_status(&bare, n).unwrap());
                    a.descriptors
                        .iter()
                        .zip(&b.descriptors)
                        .filter(|(x, y)| x != y)
                        .count()
                })
                .sum::<usize>();
            assert_eq!(differ, 2);
        }
        for nsid in 1..=2u32 {
            let status = fdp_status(&st, nsid).unwrap();
            let handles = &cfg.namespaces[nsid as usize - 1].placement_handles;
            assert_eq!(status.descriptors.len(), 2 * handles.len());
            for d in &status.descriptors {
                // Two reclaim groups: RGIF = 1, the group in the PID's top bit.
                let (rg, ph) = ((d.pid >> 15) as u32, d.pid & 0x7fff);
                assert_eq!(d.ruhid, handles[ph as usize]);
                assert!(d.ruamw >= 1 && d.ruamw <= NP, "{d:?}");
                let f = layout_host(&dev, rg, d.ruhid as u32);
                let pid = Pid::new(rg as u16, ph);
                let ns = nsid - 1;
                for _ in 0..d.ruamw - 1 {
                    write(&mut dev, ns, rng.below(100), pid);
                }
                let unit = dev.frontiers()[f].unit;
                write(&mut dev, ns, rng.below(100), pid);
                assert_eq!(
                    dev.frontiers()[f].unit,
                    unit,
                    "round {round} {d:?}: RU full too early"
                );
                write(&mut dev, ns, rng.below(100), pid);
                assert_ne!(
                    dev.frontiers()[f].unit,
                    unit,
                    "round {round} {d:?}: RU not full"
                );
                // Leave the handle somewhere mid-unit for the next descriptor and round.
                for _ in 0..rng.below(NP) {
                    write(&mut dev, ns, rng.below(100), pid);
                }
            }
        }
    }
}

#[test]
fn fdp_views() {
    let cfg = fdp_config();
    let mut dev = Device::new(cfg.clone()).unwrap();
    let cmds = run(&mut dev, 8_000, &mut Rng::new(9));
    // One invalid PID (placement handle 5 of ns2 does not exist) and one RUH update.
    write(&mut dev, 1, 0, Pid::new(0, 5));
    write(&mut dev, 0, 0, Pid::new(0, 1));
    dev.ruh_update(0, 1).unwrap();
    let mut st = DriveState::new(&cfg, dev.counters(), cmds, 0);
    st.events = dev
        .fdp_events()
        .map(|e| DriveEvent::from_core(e, 2, 1_700_000_000_000))
        .collect();

    let c = fdp_configs(&st).unwrap();
    let text = print_fdp_configs(&c, &text_opts());
    assert_eq!(
        text,
        "FDP Attributes: 0x81\nVendor Specific Size: 0\nNumber of Reclaim Groups: 2\n\
         Number of Reclaim Unit Handles: 4\nNumber of Namespaces Supported: 2\n\
         Reclaim Unit Nominal Size: 262144\nEstimated Reclaim Unit Time Limit: 0\n\
         Reclaim Unit Handle List:\n  [0]: Initially Isolated\n  [1]: Initially Isolated\n  \
         [2]: Persistently Isolated\n  [3]: Initially Isolated\n"
    );
    assert_eq!(c.configs[0].maxpids, 1);

    let u = fdp_usage(&st).unwrap();
    assert_eq!(u.ruha, vec![1, 1, 1, 0]);
    assert!(print_fdp_usage(&u).ends_with("Reclaim Unit Handle 3 Attributes: 0 (Unused)\n"));

    let host = fdp_events(&st, true).unwrap();
    let ctrl = fdp_events(&st, false).unwrap();
    assert!(host.events.iter().all(|e| e.event_type < 0x80));
    assert!(ctrl.events.iter().all(|e| e.event_type == EVENT_REALLOC));
    assert!(
        !ctrl.events.is_empty(),
        "GC of initially isolated handles reallocates media"
    );
    let pid_ev = host
        .events
        .iter()
        .find(|e| e.event_type == EVENT_PID)
        .unwrap();
    assert_eq!(
        (pid_ev.flags, pid_ev.pid, pid_ev.nsid),
        (EVENT_F_PIV | EVENT_F_NSIDV, 5, 2)
    );
    let runfw = host
        .events
        .iter()
        .find(|e| e.event_type == EVENT_RUNFW)
        .unwrap();
    assert_eq!((runfw.flags, runfw.rgid, runfw.ruhid), (EVENT_F_LV, 0, 1));
    let text = print_fdp_events(&host, &TextOptions::c_locale());
    assert!(
        text.contains("  Event Type: 0x3 (Invalid Placement Identifier)\n"),
        "{text}"
    );
    assert!(
        text.contains("  Reclaim Unit Handle Identifier 1\n"),
        "{text}"
    );
    assert!(ctrl
        .events
        .iter()
        .all(|e| e.nlbam > 0 && e.flags == EVENT_F_LV));
    // Without a list: no events, even though the counters say some happened.
    let mut bare = st.clone();
    bare.events.clear();
    assert!(fdp_events(&bare, false).unwrap().events.is_empty());
    assert!(bare.counters.fdp_events.media_reallocated > 0);

    // Status of a namespace that does not exist; per-namespace smart-log.
    assert_eq!(
        fdp_status(&st, 3).unwrap_err().to_string(),
        "namespace 3 does not exist: the drive has 2 namespace(s), ids 1..=2 (0xffffffff for the whole controller)"
    );
    let s2 = smart_log(&st, Some(2)).unwrap();
    assert_eq!(
        s2.data_units_written,
        (dev.counters().namespaces[1].host_write_bytes as u128).div_ceil(512_000)
    );
    assert_eq!(
        s2.host_write_commands, 0,
        "two namespaces: no per-namespace command counts"
    );
    assert_eq!(
        smart_log(&st, Some(0xffff_ffff)).unwrap(),
        smart_log(&st, None).unwrap()
    );
    assert!(smart_log(&st, Some(0)).is_err());
}

#[test]
fn conventional_drive_has_no_fdp() {
    let cfg = DeviceConfig::single_namespace(64, 64, MU, 0.25, GcPolicy::Greedy, 1);
    let mut dev = Device::new(cfg.clone()).unwrap();
    // 1001 x 4 KiB = 8.008 data units: rounded up to 9.
    for u in 0..1001 {
        write(&mut dev, 0, u, Pid::NONE);
    }
    let st = DriveState::new(&cfg, dev.counters(), (1001, 0), 0);
    let want = "drive has no FDP configuration (placement: conventional)";
    assert_eq!(fdp_configs(&st).unwrap_err().to_string(), want);
    assert_eq!(fdp_usage(&st).unwrap_err().to_string(), want);
    assert_eq!(fdp_stats(&st).unwrap_err().to_string(), want);
    assert_eq!(fdp_events(&st, false).unwrap_err().to_string(), want);
    assert_eq!(fdp_status(&st, 1).unwrap_err().to_string(), want);
    // SMART works, and with one namespace its commands are the controller's.
    let s = smart_log(&st, Some(1)).unwrap();
    assert_eq!(s.host_write_commands, 1001);
    assert_eq!(s.data_units_written, 9);
    assert_eq!(s.temperature, TEMPERATURE_KELVIN);
    let snap = st.snapshot();
    assert!(snap.hbmw.is_none() && snap.physical_media_units_written == Some(4096 * 1001));
    let json = smart_log_json(&s, false);
    assert!(json.contains("\"data_units_written\":9,"), "{json}");
}
