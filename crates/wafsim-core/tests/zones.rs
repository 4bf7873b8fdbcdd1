//! The ZNS zone state machine (wafsim_core::zone) against the NVMe Zoned Namespace Command Set
//! 1.1 rules: every (state, action) pair, both resource limits, the write pointer rule, Zone
//! Append under interleaving, ZRWA, and a property test against an independent reference model.
use proptest::prelude::*;
use wafsim_core::zone::{ReportFilter, ZoneConfig, ZoneState, ZoneStatus, ZoneType, Zones, ZrwaConfig};
use wafsim_core::Rng;
use ZoneState::*;
use ZoneStatus::*;

const SIZE: u64 = 64;
const CAP: u64 = 48;

fn zones(n: u32) -> Zones {
    Zones::new(ZoneConfig::new(SIZE, CAP, n)).unwrap()
}

fn limited(n: u32, max_open: u32, max_active: u32) -> Zones {
    Zones::new(ZoneConfig { max_open, max_active, ..ZoneConfig::new(SIZE, CAP, n) }).unwrap()
}

fn start(z: u32) -> u64 {
    z as u64 * SIZE
}

fn wp(zs: &Zones, z: u32) -> u64 {
    zs.descriptor(z).write_pointer.expect("valid write pointer")
}

/// Put zone `z` (of an unlimited set) into `state` by commands, as a host or the controller would.
fn put(zs: &mut Zones, z: u32, state: ZoneState) {
    let s = start(z);
    match state {
        Empty => {}
        ImplicitlyOpened => {
            zs.write(s, 4).unwrap();
        }
        ExplicitlyOpened => {
            zs.write(s, 4).unwrap();
            zs.open(s).unwrap();
        }
        Closed => {
            zs.write(s, 4).unwrap();
            zs.close(s).unwrap();
        }
        Full => {
            zs.write(s, 4).unwrap();
            zs.finish(s).unwrap();
        }
        ReadOnly => {
            zs.write(s, 4).unwrap();
            zs.set_read_only(z).unwrap();
        }
        Offline => {
            zs.write(s, 4).unwrap();
            zs.set_read_only(z).unwrap();
            zs.offline(s).unwrap();
        }
        NotWritePointer => unreachable!(),
    }
    assert_eq!(zs.state(z), state);
    zs.check_invariants().unwrap();
}

#[test]
fn status_codes_are_the_linux_nvme_h_values() {
    // include/linux/nvme.h: NVME_SC_ZONE_BOUNDARY_ERROR 0x1b8 ... NVME_SC_ZONE_INVALID_TRANSITION 0x1bf.
    let expect = [
        (InvalidField, 0x002),
        (LbaOutOfRange, 0x080),
        (InvalidZoneOperation, 0x1b6),
        (ZrwaResourcesUnavailable, 0x1b7),
        (ZoneBoundaryError, 0x1b8),
        (ZoneIsFull, 0x1b9),
        (ZoneIsReadOnly, 0x1ba),
        (ZoneIsOffline, 0x1bb),
        (ZoneInvalidWrite, 0x1bc),
        (TooManyActiveZones, 0x1bd),
        (TooManyOpenZones, 0x1be),
        (InvalidZoneStateTransition, 0x1bf),
    ];
    for (s, code) in expect {
        assert_eq!(s.code(), code, "{s}");
        assert_eq!(((s.sct() as u16) << 8) | s.sc() as u16, code);
    }
    assert_eq!(ZoneIsFull.sct(), 1);
    assert_eq!(ZoneIsFull.sc(), 0xB9);
    assert_eq!(ZoneIsFull.to_string(), "Zone Is Full (1B9h)");
}

#[test]
fn state_and_type_codes_follow_the_zone_descriptor() {
    // ZNS 1.1 Figure 37: 1h Empty, 2h ZSIO, 3h ZSEO, 4h Closed, Dh Read Only, Eh Full, Fh Offline.
    let codes = [
        (Empty, 0x1),
        (ImplicitlyOpened, 0x2),
        (ExplicitlyOpened, 0x3),
        (Closed, 0x4),
        (Full, 0xE),
        (ReadOnly, 0xD),
        (Offline, 0xF),
    ];
    for (s, c) in codes {
        assert_eq!(s.code(), c);
    }
    assert_eq!(ZoneType::SequentialWriteRequired.code(), 0x2);
    assert_eq!(ZoneType::Conventional.code(), 0x1);
    let filters = [
        ReportFilter::All,
        ReportFilter::Empty,
        ReportFilter::ImplicitlyOpened,
        ReportFilter::ExplicitlyOpened,
        ReportFilter::Closed,
        ReportFilter::Full,
        ReportFilter::ReadOnly,
        ReportFilter::Offline,
    ];
    for (i, f) in filters.into_iter().enumerate() {
        assert_eq!(f.code(), i as u8);
    }
}

#[derive(Debug, Clone, Copy)]
enum Cmd {
    WriteAtWp,
    Append,
    Open,
    Close,
    Finish,
    Reset,
    Offline,
}

fn run(zs: &mut Zones, z: u32, cmd: Cmd) -> Result<(), ZoneStatus> {
    let s = start(z);
    // Full, Read Only and Offline zones have no valid write pointer; aim at the zone start.
    let at = zs.descriptor(z).write_pointer.unwrap_or(s);
    match cmd {
        Cmd::WriteAtWp => zs.write(at, 2).map(drop),
        Cmd::Append => zs.append(s, 2).map(drop),
        Cmd::Open => zs.open(s).map(drop),
        Cmd::Close => zs.close(s),
        Cmd::Finish => zs.finish(s).map(drop),
        Cmd::Reset => zs.reset(s).map(drop),
        Cmd::Offline => zs.offline(s),
    }
}

/// ZNS 1.1 2.1.1.3 (Figure 7) and 3.4.3.1: every state against every command.
#[test]
fn every_state_against_every_command() {
    let t = InvalidZoneStateTransition;
    #[rustfmt::skip]
    let table: [(ZoneState, [Result<ZoneState, ZoneStatus>; 7]); 7] = [
        //                 WriteAtWp             Append                Open                  Close       Finish    Reset      Offline
        (Empty,            [Ok(ImplicitlyOpened), Ok(ImplicitlyOpened), Ok(ExplicitlyOpened), Err(t),     Ok(Full), Ok(Empty), Err(t)]),
        (ImplicitlyOpened, [Ok(ImplicitlyOpened), Ok(ImplicitlyOpened), Ok(ExplicitlyOpened), Ok(Closed), Ok(Full), Ok(Empty), Err(t)]),
        (ExplicitlyOpened, [Ok(ExplicitlyOpened), Ok(ExplicitlyOpened), Ok(ExplicitlyOpened), Ok(Closed), Ok(Full), Ok(Empty), Err(t)]),
        (Closed,           [Ok(ImplicitlyOpened), Ok(ImplicitlyOpened), Ok(ExplicitlyOpened), Ok(Closed), Ok(Full), Ok(Empty), Err(t)]),
        (Full,             [Err(ZoneIsFull),      Err(ZoneIsFull),      Err(t),               Err(t),     Ok(Full), Ok(Empty), Err(t)]),
        (ReadOnly,         [Err(ZoneIsReadOnly),  Err(ZoneIsReadOnly),  Err(t),               Err(t),     Err(t),   Err(t),    Ok(Offline)]),
        (Offline,          [Err(ZoneIsOffline),   Err(ZoneIsOffline),   Err(t),               Err(t),     Err(t),   Err(t),    Ok(Offline)]),
    ];
    let cmds = [Cmd::WriteAtWp, Cmd::Append, Cmd::Open, Cmd::Close, Cmd::Finish, Cmd::Reset, Cmd::Offline];
    for (state, expected) in table {
        for (cmd, want) in cmds.into_iter().zip(expected) {
            let mut zs = zones(4);
            put(&mut zs, 1, state);
            let before = zs.descriptor(1);
            let (open, active) = (zs.open_zones(), zs.active_zones());
            let got = run(&mut zs, 1, cmd);
            zs.check_invariants().unwrap();
            match want {
                Ok(after) => {
                    assert_eq!(got, Ok(()), "{state:?} {cmd:?}");
                    assert_eq!(zs.state(1), after, "{state:?} {cmd:?}");
                    assert_eq!(zs.open_zones(), after.is_open() as u32, "{state:?} {cmd:?}");
                    assert_eq!(zs.active_zones(), after.is_active() as u32, "{state:?} {cmd:?}");
                }
                Err(e) => {
                    assert_eq!(got, Err(e), "{state:?} {cmd:?}");
                    assert_eq!(zs.descriptor(1), before, "a failed command changes nothing");
                    assert_eq!((zs.open_zones(), zs.active_zones()), (open, active));
                }
            }
            // No other zone moved.
            for z in [0, 2, 3] {
                assert_eq!(zs.state(z), Empty);
            }
        }
    }
}

#[test]
fn write_pointer_rule_boundary_and_capacity() {
    let mut zs = zones(3);
    let s = start(1);
    assert_eq!(zs.write(s + 1, 1), Err(ZoneInvalidWrite), "not at the write pointer");
    assert_eq!(zs.state(1), Empty);
    let r = zs.write(s, 10).unwrap();
    assert!(r.opened && !r.full && r.committed == 10 && r.lba == s);
    assert_eq!(wp(&zs, 1), s + 10);
    assert_eq!(zs.write(s, 1), Err(ZoneInvalidWrite), "behind the write pointer");
    assert_eq!(zs.write(s + 11, 1), Err(ZoneInvalidWrite), "ahead of the write pointer");
    // Past the capacity (CAP < SIZE): Zone Boundary Error, also for a write crossing into the next zone.
    assert_eq!(zs.write(s + 10, CAP - 10 + 1), Err(ZoneBoundaryError));
    assert_eq!(zs.write(s + 10, SIZE), Err(ZoneBoundaryError));
    assert_eq!(wp(&zs, 1), s + 10, "failed writes do not move the write pointer");
    // Exactly to the capacity: Full, resources released.
    let r = zs.write(s + 10, CAP - 10).unwrap();
    assert!(r.full && !r.opened);
    assert_eq!((zs.state(1), zs.open_zones(), zs.active_zones()), (Full, 0, 0));
    assert_eq!(zs.descriptor(1).write_pointer, None, "write pointer invalid when Full (ZNS 1.1 Figure 4)");
    // Blocks between the capacity and the zone size can never be written.
    assert_eq!(zs.write(s + CAP, 1), Err(ZoneIsFull));
    // Namespace bounds, zero length.
    assert_eq!(zs.write(start(2) + SIZE - 1, 2), Err(LbaOutOfRange));
    assert_eq!(zs.write(3 * SIZE, 1), Err(LbaOutOfRange));
    assert_eq!(zs.write(u64::MAX, 2), Err(LbaOutOfRange));
    assert_eq!(zs.write(start(2), 0), Err(InvalidField));
    // A zone that starts Empty but is written in one command to its capacity goes straight to Full.
    let r = zs.write(start(0), CAP).unwrap();
    assert!(r.opened && r.full);
    assert_eq!((zs.open_zones(), zs.active_zones()), (0, 0));
    zs.check_invariants().unwrap();
}

#[test]
fn reads_and_is_written() {
    let mut zs = zones(3);
    zs.write(start(0), 5).unwrap();
    for lba in 0..SIZE {
        assert_eq!(zs.is_written(lba), Some(lba < 5), "lba {lba}");
    }
    // Reads past the write pointer are legal (deallocated data), not across zones by default.
    assert_eq!(zs.read_check(10, 20), Ok(()));
    assert_eq!(zs.read_check(SIZE - 1, 2), Err(ZoneBoundaryError));
    assert_eq!(zs.read_check(3 * SIZE - 1, 2), Err(LbaOutOfRange));
    put(&mut zs, 1, Offline);
    assert_eq!(zs.read_check(start(1), 1), Err(ZoneIsOffline));
    assert_eq!(zs.is_written(start(1)), Some(false));
    assert_eq!(zs.is_written(3 * SIZE), None);
    put(&mut zs, 2, ReadOnly);
    assert_eq!(zs.read_check(start(2), 4), Ok(()), "Read Only zones stay readable");
    assert_eq!(zs.is_written(start(2) + 3), Some(true));

    let mut across = Zones::new(ZoneConfig { read_across_zones: true, ..ZoneConfig::new(SIZE, CAP, 3) }).unwrap();
    assert_eq!(across.read_check(SIZE - 1, 2), Ok(()));
    across.write(start(1), 1).unwrap();
    across.set_offline(1).unwrap();
    assert_eq!(across.read_check(SIZE - 1, 2), Err(ZoneIsOffline));
}

#[test]
fn finish_reports_padding_and_reset_reports_written() {
    let mut zs = zones(4);
    zs.write(start(0), 10).unwrap();
    assert_eq!(zs.finish(start(0)).unwrap().filled, CAP - 10);
    assert_eq!(zs.finish(start(0)).unwrap().filled, 0, "finishing a Full zone: no change");
    assert_eq!(zs.finish(start(1)).unwrap().filled, CAP, "Empty -> Full pads the whole capacity");
    // Blocks padded by Finish are not host data.
    assert_eq!(zs.is_written(start(0) + 9), Some(true));
    assert_eq!(zs.is_written(start(0) + 10), Some(false));
    let r = zs.reset(start(0)).unwrap();
    assert_eq!((r.written, r.filled), (10, CAP - 10));
    assert_eq!(zs.state(0), Empty);
    assert_eq!(wp(&zs, 0), start(0));
    assert_eq!(zs.is_written(start(0)), Some(false));
    let r = zs.reset(start(0)).unwrap();
    assert_eq!((r.written, r.filled), (0, 0), "resetting an Empty zone: no change");
    zs.write(start(2), 7).unwrap();
    zs.close(start(2)).unwrap();
    assert_eq!(zs.reset(start(2)).unwrap().written, 7);
    zs.write(start(3), CAP).unwrap();
    let r = zs.reset(start(3)).unwrap();
    assert_eq!((r.written, r.filled), (CAP, 0));
    zs.check_invariants().unwrap();
}

#[test]
fn zone_actions_need_a_zone_start() {
    let mut zs = zones(2);
    assert_eq!(zs.open(1), Err(InvalidField));
    assert_eq!(zs.close(SIZE + 3), Err(InvalidField));
    assert_eq!(zs.finish(5), Err(InvalidField));
    assert_eq!(zs.reset(7), Err(InvalidField));
    assert_eq!(zs.offline(9), Err(InvalidField));
    assert_eq!(zs.append(1, 1), Err(InvalidField), "Zone Append ZSLBA must be a zone start (3.4.1)");
    assert_eq!(zs.open(2 * SIZE), Err(LbaOutOfRange));
    assert_eq!(zs.append(2 * SIZE, 1), Err(LbaOutOfRange));
    assert_eq!(zs.set_read_only(2), Err(LbaOutOfRange));
    assert!((0..2).all(|z| zs.state(z) == Empty));
}

#[test]
fn select_all_actions_touch_only_the_states_the_spec_names() {
    // One zone per state; zones 7.. stay Empty.
    let order = [Empty, ImplicitlyOpened, ExplicitlyOpened, Closed, Full, ReadOnly, Offline];
    let fresh = || {
        let mut zs = zones(8);
        for (z, s) in order.into_iter().enumerate() {
            put(&mut zs, z as u32, s);
        }
        zs
    };
    let states = |zs: &Zones| (0..8).map(|z| zs.state(z)).collect::<Vec<_>>();

    // 3.4.3.1.1: Close all -> opened zones closed.
    let mut zs = fresh();
    assert_eq!(zs.close_all(), 2);
    assert_eq!(states(&zs), [Empty, Closed, Closed, Closed, Full, ReadOnly, Offline, Empty]);
    // 3.4.3.1.2: Finish all -> opened and closed zones Full (Empty untouched).
    let mut zs = fresh();
    let mut seen = vec![];
    let r = zs.finish_all_with(|z, f| seen.push((z, f.filled)));
    assert_eq!((r.zones, r.blocks), (3, 3 * (CAP - 4)));
    assert_eq!(seen, [(1, CAP - 4), (2, CAP - 4), (3, CAP - 4)]);
    assert_eq!(states(&zs), [Empty, Full, Full, Full, Full, ReadOnly, Offline, Empty]);
    // 3.4.3.1.3: Open all -> closed zones explicitly opened.
    let mut zs = fresh();
    assert_eq!(zs.open_all(), Ok(1));
    assert_eq!(
        states(&zs),
        [Empty, ImplicitlyOpened, ExplicitlyOpened, ExplicitlyOpened, Full, ReadOnly, Offline, Empty]
    );
    // 3.4.3.1.4: Reset all -> opened, closed and full zones Empty.
    let mut zs = fresh();
    let r = zs.reset_all();
    assert_eq!((r.zones, r.blocks), (4, 4 * 4));
    assert_eq!(states(&zs), [Empty, Empty, Empty, Empty, Empty, ReadOnly, Offline, Empty]);
    // 3.4.3.1.5: Offline all -> read-only zones offline.
    let mut zs = fresh();
    assert_eq!(zs.offline_all(), 1);
    assert_eq!(states(&zs), [Empty, ImplicitlyOpened, ExplicitlyOpened, Closed, Full, Offline, Offline, Empty]);
    zs.check_invariants().unwrap();
}

#[test]
fn open_all_is_all_or_nothing_under_the_open_limit() {
    let mut zs = limited(6, 2, 4);
    for z in 0..3 {
        zs.write(start(z), 1).unwrap();
        zs.close(start(z)).unwrap();
    }
    assert_eq!(zs.open_all(), Err(TooManyOpenZones));
    assert!((0..3).all(|z| zs.state(z) == Closed));
    zs.finish(start(0)).unwrap();
    assert_eq!(zs.open_all(), Ok(2));
    assert_eq!(zs.open_zones(), 2);
    zs.check_invariants().unwrap();
}

#[test]
fn open_limit_closes_the_oldest_implicitly_opened_zone() {
    let mut zs = limited(6, 2, 0);
    zs.write(start(0), 1).unwrap();
    zs.write(start(1), 1).unwrap();
    zs.write(start(0) + 1, 1).unwrap(); // writing again does not make zone 0 younger
    let r = zs.write(start(2), 1).unwrap();
    assert_eq!(r.closed_zone, Some(0), "zone 0 has been implicitly open longest");
    assert_eq!((zs.state(0), zs.state(1), zs.state(2)), (Closed, ImplicitlyOpened, ImplicitlyOpened));
    assert_eq!(zs.implicitly_opened().collect::<Vec<_>>(), [1, 2]);
    // A write to the closed zone reopens it, closing the next oldest.
    let r = zs.write(start(0) + 2, 1).unwrap();
    assert!(r.opened);
    assert_eq!(r.closed_zone, Some(1));
    // Explicit Open may also close an implicitly opened zone (QEMU nvme_zrm_open_flags).
    assert_eq!(zs.open(start(3)).unwrap().closed_zone, Some(2));
    assert_eq!(zs.state(3), ExplicitlyOpened);
    // Opening an implicitly opened zone needs no new resource.
    assert_eq!(zs.open(start(0)).unwrap().closed_zone, None);
    // Now both open zones are explicitly opened: nothing may be closed for a third.
    assert_eq!(zs.write(start(4), 1), Err(TooManyOpenZones));
    assert_eq!(zs.open(start(4)), Err(TooManyOpenZones));
    assert_eq!(zs.write(start(1) + 1, 1), Err(TooManyOpenZones), "a Closed zone needs an open resource too");
    assert_eq!((zs.state(4), zs.state(1)), (Empty, Closed));
    assert_eq!(zs.open_zones(), 2);
    // Closing one frees the resource.
    zs.close(start(3)).unwrap();
    zs.write(start(4), 1).unwrap();
    zs.check_invariants().unwrap();
}

#[test]
fn without_auto_close_the_open_limit_is_hard() {
    let cfg = ZoneConfig { max_open: 1, auto_close: false, ..ZoneConfig::new(SIZE, CAP, 3) };
    let mut zs = Zones::new(cfg).unwrap();
    zs.write(start(0), 1).unwrap();
    assert_eq!(zs.write(start(1), 1), Err(TooManyOpenZones));
    assert_eq!(zs.open(start(1)), Err(TooManyOpenZones));
    assert_eq!(zs.state(0), ImplicitlyOpened);
}

#[test]
fn active_limit_counts_closed_zones() {
    let mut zs = limited(6, 1, 2);
    zs.write(start(0), 1).unwrap();
    assert_eq!(zs.write(start(1), 1).unwrap().closed_zone, Some(0));
    assert_eq!((zs.open_zones(), zs.active_zones()), (1, 2));
    // Zone 0 is Closed but still active: a third zone cannot become active, by write or Open, and
    // the controller does not close anything for a command it then rejects.
    assert_eq!(zs.write(start(2), 1), Err(TooManyActiveZones));
    assert_eq!(zs.append(start(2), 1), Err(TooManyActiveZones));
    assert_eq!(zs.open(start(2)), Err(TooManyActiveZones));
    assert_eq!((zs.state(0), zs.state(1), zs.state(2)), (Closed, ImplicitlyOpened, Empty));
    zs.close(start(1)).unwrap();
    assert_eq!(zs.write(start(2), 1), Err(TooManyActiveZones), "closed zones still count");
    // A Closed zone may reopen: it already holds its active resource.
    zs.write(start(0) + 1, 1).unwrap();
    // Finish (or reset) releases the active resource.
    zs.finish(start(1)).unwrap();
    zs.write(start(2), 1).unwrap();
    assert_eq!(zs.active_zones(), 2);
    zs.check_invariants().unwrap();
}

#[test]
fn equal_limits_report_too_many_active_zones() {
    // ZNS 1.1 2.1.1.4.1 b): MAR = MOR and the missing resource is Active -> Too Many Active Zones.
    let mut zs = limited(4, 2, 2);
    zs.open(start(0)).unwrap();
    zs.open(start(1)).unwrap();
    assert_eq!(zs.write(start(2), 1), Err(TooManyActiveZones));
    assert_eq!(zs.open(start(2)), Err(TooManyActiveZones));
    // Also when an implicitly opened zone could be closed: closing frees no active resource.
    let mut zs = limited(4, 2, 2);
    zs.write(start(0), 1).unwrap();
    zs.write(start(1), 1).unwrap();
    assert_eq!(zs.write(start(2), 1), Err(TooManyActiveZones));
    assert_eq!((zs.state(0), zs.state(1)), (ImplicitlyOpened, ImplicitlyOpened));
}

#[test]
fn interleaved_appenders_get_disjoint_contiguous_ranges() {
    let mut zs = limited(4, 2, 2);
    let zslba = start(2);
    let mut rng = Rng::new(2024);
    let appenders = 5;
    let mut got: Vec<Vec<(u64, u64)>> = vec![vec![]; appenders];
    let mut done = vec![false; appenders];
    while done.iter().any(|d| !d) {
        let a = rng.below(appenders as u64) as usize;
        if done[a] {
            continue;
        }
        let want = 1 + rng.below(6);
        match zs.append(zslba, want) {
            Ok(r) => {
                assert_eq!((r.zone, r.blocks, r.committed), (2, want, want));
                got[a].push((r.lba, want));
            }
            // Too big for what is left: the appender retries smaller, then stops once Full.
            Err(ZoneBoundaryError) => {
                let left = CAP - (wp(&zs, 2) - zslba);
                assert!(want > left && left > 0);
                let r = zs.append(zslba, left).unwrap();
                assert!(r.full);
                got[a].push((r.lba, left));
            }
            Err(ZoneIsFull) => done[a] = true,
            Err(e) => panic!("{e}"),
        }
    }
    let mut all: Vec<(u64, u64)> = got.into_iter().flatten().collect();
    all.sort();
    let mut next = zslba;
    for (lba, n) in all {
        assert_eq!(lba, next, "ranges are disjoint and leave no gap");
        next += n;
    }
    assert_eq!(next, zslba + CAP, "the zone ends exactly at its capacity");
    assert_eq!(zs.state(2), Full);
    assert_eq!((zs.open_zones(), zs.active_zones()), (0, 0));
    assert_eq!(zs.append(start(0) + 1, 1), Err(InvalidField));
    zs.check_invariants().unwrap();
}

#[test]
fn report_zones_filters_and_start() {
    let cfg = ZoneConfig { conventional_zones: 1, ..ZoneConfig::new(SIZE, CAP, 9) };
    let mut zs = Zones::new(cfg).unwrap();
    let order = [Empty, ImplicitlyOpened, ExplicitlyOpened, Closed, Full, ReadOnly, Offline];
    for (i, s) in order.into_iter().enumerate() {
        put(&mut zs, i as u32 + 1, s);
    }
    let ids = |f, from| zs.report(from, f).unwrap().map(|d| d.zone).collect::<Vec<_>>();
    assert_eq!(ids(ReportFilter::All, 0), (0..9).collect::<Vec<_>>());
    assert_eq!(ids(ReportFilter::All, start(3) + 5), (3..9).collect::<Vec<_>>(), "from the zone holding SLBA");
    assert_eq!(ids(ReportFilter::Empty, 0), [1, 8]);
    assert_eq!(ids(ReportFilter::ImplicitlyOpened, 0), [2]);
    assert_eq!(ids(ReportFilter::ExplicitlyOpened, 0), [3]);
    assert_eq!(ids(ReportFilter::Closed, 0), [4]);
    assert_eq!(ids(ReportFilter::Full, 0), [5]);
    assert_eq!(ids(ReportFilter::ReadOnly, 0), [6]);
    assert_eq!(ids(ReportFilter::Offline, 0), [7]);
    assert_eq!(ids(ReportFilter::NotWritePointer, 0), [0]);
    assert_eq!(ids(ReportFilter::Closed, start(5)), Vec::<u32>::new());
    assert!(zs.report(9 * SIZE, ReportFilter::All).is_err());
    let d = zs.descriptor(4);
    assert_eq!(
        (d.zone_type, d.state, d.start, d.capacity, d.write_pointer, d.zrwa),
        (ZoneType::SequentialWriteRequired, Closed, start(4), CAP, Some(start(4) + 4), false)
    );
    let c = zs.descriptor(0);
    assert_eq!(
        (c.zone_type, c.state, c.capacity, c.write_pointer),
        (ZoneType::Conventional, NotWritePointer, SIZE, None)
    );
    for s in [Full, ReadOnly, Offline] {
        let z = order.iter().position(|&x| x == s).unwrap() as u32 + 1;
        assert_eq!(zs.descriptor(z).write_pointer, None, "{s:?}");
    }
}

#[test]
fn conventional_zones_take_writes_anywhere_but_no_zone_actions() {
    let cfg = ZoneConfig { conventional_zones: 2, max_open: 1, ..ZoneConfig::new(SIZE, CAP, 4) };
    let mut zs = Zones::new(cfg).unwrap();
    for lba in [40, 3, SIZE - 1, 0, SIZE + 10] {
        let r = zs.write(lba, 1).unwrap();
        assert!(!r.opened && r.committed == 1);
    }
    assert_eq!(zs.write(SIZE - 1, 2), Err(ZoneBoundaryError), "no write across a zone boundary");
    assert_eq!(zs.write(2 * SIZE - 1, 2), Err(ZoneBoundaryError));
    assert_eq!(zs.append(0, 1), Err(InvalidField), "Zone Append needs a sequential zone (3.4.1)");
    for r in [zs.open(0).map(drop), zs.close(0), zs.finish(0).map(drop), zs.reset(SIZE).map(drop), zs.offline(0)] {
        assert_eq!(r, Err(InvalidField));
    }
    assert_eq!(zs.set_read_only(0), Err(InvalidField));
    assert_eq!(zs.is_written(0), None);
    // Conventional zones hold no resources; select-all skips them.
    assert_eq!((zs.open_zones(), zs.active_zones()), (0, 0));
    zs.write(start(2), 1).unwrap();
    zs.write(start(3), 1).unwrap();
    assert_eq!(zs.reset_all().zones, 2);
    assert_eq!((zs.state(0), zs.state(1)), (NotWritePointer, NotWritePointer));
    zs.check_invariants().unwrap();
}

#[test]
fn controller_failures() {
    let mut zs = limited(4, 2, 3);
    zs.write(start(0), 3).unwrap();
    zs.open(start(1)).unwrap();
    zs.set_read_only(0).unwrap();
    zs.set_read_only(1).unwrap();
    assert_eq!((zs.open_zones(), zs.active_zones()), (0, 0), "failed zones release their resources");
    assert_eq!(zs.set_read_only(0), Ok(()));
    zs.set_offline(2).unwrap();
    assert_eq!(zs.set_read_only(2), Err(InvalidZoneStateTransition));
    assert_eq!(zs.offline(start(0)), Ok(()));
    assert_eq!(zs.state(0), Offline);
    zs.check_invariants().unwrap();
}

#[test]
fn config_validation() {
    let ok = ZoneConfig::new(SIZE, CAP, 4);
    assert!(Zones::new(ok.clone()).is_ok());
    let bad = [
        ZoneConfig { zone_capacity: SIZE + 1, ..ok.clone() },
        ZoneConfig { zone_capacity: 0, ..ok.clone() },
        ZoneConfig { zones: 0, ..ok.clone() },
        ZoneConfig { conventional_zones: 5, ..ok.clone() },
        ZoneConfig { max_open: 3, max_active: 2, ..ok.clone() },
        ZoneConfig { zrwa: Some(ZrwaConfig { size: 12, flush_granularity: 8, resources: 1 }), ..ok.clone() },
        ZoneConfig { zrwa: Some(ZrwaConfig { size: 8, flush_granularity: 5, resources: 1 }), ..ok.clone() },
        ZoneConfig { zrwa: Some(ZrwaConfig { size: 8, flush_granularity: 4, resources: 0 }), ..ok.clone() },
        ZoneConfig { zone_size: u64::MAX, zone_capacity: 1, ..ok.clone() },
    ];
    for cfg in bad {
        assert!(Zones::new(cfg.clone()).is_err(), "{cfg:?}");
    }
}

// ---- ZRWA ----

const ZRWAS: u64 = 8;
const FG: u64 = 4;

fn zrwa_zones(resources: u32) -> Zones {
    let cfg = ZoneConfig {
        max_open: 3,
        max_active: 4,
        zrwa: Some(ZrwaConfig { size: ZRWAS, flush_granularity: FG, resources }),
        ..ZoneConfig::new(SIZE, CAP, 6)
    };
    Zones::new(cfg).unwrap()
}

#[test]
fn zrwa_random_writes_in_the_window_and_implicit_flush() {
    let mut zs = zrwa_zones(2);
    let s = start(1);
    zs.open_with_zrwa(s).unwrap();
    assert!(zs.descriptor(1).zrwa);
    assert_eq!(zs.zrwa_zones(), 1);
    // Out of order inside [wp, wp + ZRWAS): accepted, write pointer unchanged, nothing committed.
    for (off, n) in [(4, 2), (0, 4), (6, 2), (2, 1), (2, 1)] {
        let r = zs.write(s + off, n).unwrap();
        assert_eq!(r.committed, 0);
    }
    assert_eq!(wp(&zs, 1), s);
    assert_eq!(zs.is_written(s), Some(false), "uncommitted ZRWA data is not counted");
    // Ending in the implicit flush area [wp + ZRWAS, wp + 2*ZRWAS): the pointer moves up in whole
    // granules until the window covers the write's end.
    let r = zs.write(s + 8, 1).unwrap(); // end 9, window end 8: flush ceil(1/4) granules = 4 blocks
    assert_eq!(r.committed, 4);
    assert_eq!(wp(&zs, 1), s + 4);
    assert_eq!(zs.is_written(s + 3), Some(true));
    // Outside [wp, wp + 2*ZRWAS): Zone Invalid Write.
    assert_eq!(zs.write(s + 3, 1), Err(ZoneInvalidWrite), "below the write pointer");
    assert_eq!(zs.write(s + 4 + 2 * ZRWAS - 1, 2), Err(ZoneInvalidWrite), "past the flush area");
    let r = zs.write(s + 4 + 2 * ZRWAS - 1, 1).unwrap(); // end = wp + 16 -> flush 8
    assert_eq!(r.committed, 8);
    assert_eq!(wp(&zs, 1), s + 12);
    // Zone Append is not allowed on a ZRWA zone.
    assert_eq!(zs.append(s, 1), Err(InvalidZoneOperation));
    zs.check_invariants().unwrap();
}

#[test]
fn zrwa_explicit_flush_and_full() {
    let mut zs = zrwa_zones(2);
    let s = start(2);
    zs.open_with_zrwa(s).unwrap();
    zs.write(s, 8).unwrap();
    assert_eq!(zs.zrwa_flush(s + 2), Err(InvalidField), "3 blocks: not a multiple of ZRWAFG");
    assert_eq!(zs.zrwa_flush(s + ZRWAS), Err(ZoneBoundaryError), "outside the window");
    let r = zs.zrwa_flush(s + 3).unwrap();
    assert_eq!((r.committed, r.full, r.opened), (4, false, false));
    assert_eq!(wp(&zs, 2), s + 4);
    assert_eq!(zs.zrwa_flush(s + 3), Err(ZoneBoundaryError), "below the write pointer");
    // A flush of a Closed ZRWA zone implicitly opens it, like a write (QEMU nvme_zrm_auto).
    zs.close(s).unwrap();
    let r = zs.zrwa_flush(s + 11).unwrap();
    assert!(r.opened);
    assert_eq!(zs.state(2), ImplicitlyOpened);
    // Walk to the end: near the capacity only explicit flushes move the pointer, and reaching the
    // capacity makes the zone Full and frees the ZRWA.
    while wp(&zs, 2) + ZRWAS < s + CAP {
        let w = wp(&zs, 2);
        zs.write(w, ZRWAS).unwrap();
        zs.zrwa_flush(w + ZRWAS - 1).unwrap();
    }
    let w = wp(&zs, 2);
    let left = s + CAP - w;
    zs.write(w, left).unwrap();
    assert_eq!(zs.write(w, left + 1), Err(ZoneBoundaryError));
    assert_eq!(zs.state(2), ImplicitlyOpened, "writes alone never reach the capacity with a ZRWA");
    let r = zs.zrwa_flush(s + CAP - 1).unwrap();
    assert!(r.full);
    assert_eq!((zs.state(2), zs.zrwa_zones(), zs.open_zones()), (Full, 0, 0));
    zs.check_invariants().unwrap();
}

#[test]
fn zrwa_allocation_rules() {
    let mut zs = zrwa_zones(1);
    assert_eq!(zs.zrwa_flush(start(0)), Err(InvalidField), "no ZRWA on this zone");
    zs.write(start(0), 1).unwrap();
    assert_eq!(zs.open_with_zrwa(start(0)), Err(InvalidZoneOperation), "only an Empty zone gets a ZRWA");
    zs.open_with_zrwa(start(1)).unwrap();
    assert_eq!(zs.open_with_zrwa(start(1)), Ok(Default::default()), "already allocated: no change");
    assert_eq!(zs.open_with_zrwa(start(2)), Err(ZrwaResourcesUnavailable));
    assert_eq!(zs.state(2), Empty);
    // Finish and reset return the resource; Finish commits the window's data.
    zs.write(start(1), 6).unwrap();
    assert_eq!(zs.finish(start(1)).unwrap().filled, CAP - 6);
    assert_eq!(zs.is_written(start(1) + 5), Some(true));
    assert_eq!(zs.zrwa_zones(), 0);
    zs.open_with_zrwa(start(2)).unwrap();
    zs.write(start(2) + 5, 2).unwrap();
    assert_eq!(zs.reset(start(2)).unwrap().written, 7, "up to the highest block written in the window");
    assert_eq!(zs.zrwa_zones(), 0);
    // Without ZRWA support.
    let mut plain = zones(2);
    assert_eq!(plain.open_with_zrwa(0), Err(InvalidZoneOperation));
    plain.write(0, 1).unwrap();
    assert_eq!(plain.zrwa_flush(0), Err(InvalidZoneOperation));
    zs.check_invariants().unwrap();
}

/// Random commands on a ZRWA namespace: invariants hold, the write pointer never moves back
/// except on Reset, and committed blocks account for it exactly.
#[test]
fn zrwa_random_commands_keep_invariants() {
    let mut rng = Rng::new(77);
    let mut zs = zrwa_zones(2);
    let n = zs.zone_count();
    let mut committed = vec![0u64; n as usize];
    for _ in 0..20_000 {
        let z = rng.below(n as u64) as u32;
        let s = start(z);
        let d = zs.descriptor(z);
        let w = d.write_pointer.unwrap_or(s);
        match rng.below(10) {
            0..=4 => {
                let lba = w.saturating_sub(2) + rng.below(2 * ZRWAS + 4);
                if let Ok(r) = zs.write(lba, 1 + rng.below(6)) {
                    committed[r.zone as usize] += r.committed;
                }
            }
            5 => {
                if let Ok(r) = zs.zrwa_flush(w + rng.below(ZRWAS + 2)) {
                    committed[z as usize] += r.committed;
                }
            }
            6 => {
                let _ = if rng.below(2) == 0 { zs.open_with_zrwa(s) } else { zs.open(s) };
            }
            7 => {
                let _ = zs.close(s);
            }
            8 => {
                if zs.finish(s).is_ok() {
                    committed[z as usize] = 0;
                }
            }
            _ => {
                if zs.reset(s).is_ok() {
                    committed[z as usize] = 0;
                }
            }
        }
        zs.check_invariants().unwrap();
        let d = zs.descriptor(z);
        if let Some(w2) = d.write_pointer {
            if d.state != Empty {
                assert_eq!(w2 - s, committed[z as usize], "zone {z}");
            }
            if d.zrwa {
                assert_eq!((w2 - s) % FG, 0);
            }
        }
    }
}

// ---- property test against an independent reference model ----

/// A second, deliberately plain implementation of the ZNS 1.1 rules (Vec-based FIFO, a data bitmap
/// per zone), predicting each command's status and the resulting zones.
#[derive(Debug, Clone)]
struct Model {
    conv: usize,
    max_open: usize,
    max_active: usize,
    state: Vec<ZoneState>,
    wp: Vec<u64>,
    data: Vec<Vec<bool>>,
    fifo: Vec<usize>,
}

impl Model {
    fn new(zones: usize, conv: usize, max_open: usize, max_active: usize) -> Self {
        Model {
            conv,
            max_open,
            max_active,
            state: (0..zones).map(|z| if z < conv { NotWritePointer } else { Empty }).collect(),
            wp: vec![0; zones],
            data: vec![vec![false; SIZE as usize]; zones],
            fifo: vec![],
        }
    }
    fn count(&self, f: impl Fn(ZoneState) -> bool) -> usize {
        self.state.iter().filter(|&&s| f(s)).count()
    }
    fn set(&mut self, z: usize, s: ZoneState) {
        self.fifo.retain(|&x| x != z);
        if s == ImplicitlyOpened {
            self.fifo.push(z);
        }
        self.state[z] = s;
    }
    /// Resources for zone `z` (Empty or Closed) to open; Err or the zone closed to make room.
    fn acquire(&mut self, z: usize) -> Result<(), ZoneStatus> {
        if self.state[z] == Empty && self.max_active > 0 && self.count(ZoneState::is_active) >= self.max_active {
            return Err(TooManyActiveZones);
        }
        if self.max_open > 0 && self.count(ZoneState::is_open) >= self.max_open {
            match self.fifo.first() {
                Some(&v) => self.set(v, Closed),
                None => return Err(TooManyOpenZones),
            }
        }
        Ok(())
    }
    fn write(&mut self, z: usize, off: u64, len: u64, append: bool) -> Result<(), ZoneStatus> {
        let zones = self.state.len() as u64;
        if z as u64 * SIZE + off + len > zones * SIZE {
            return Err(LbaOutOfRange);
        }
        if z < self.conv {
            if append {
                return Err(InvalidField);
            }
            if off + len > SIZE {
                return Err(ZoneBoundaryError);
            }
            return Ok(()); // conventional data is not tracked
        }
        match self.state[z] {
            Full => return Err(ZoneIsFull),
            ReadOnly => return Err(ZoneIsReadOnly),
            Offline => return Err(ZoneIsOffline),
            _ => {}
        }
        let off = if append { self.wp[z] } else { off };
        if off != self.wp[z] {
            return Err(ZoneInvalidWrite);
        }
        if off + len > CAP {
            return Err(ZoneBoundaryError);
        }
        if matches!(self.state[z], Empty | Closed) {
            self.acquire(z)?;
            self.set(z, ImplicitlyOpened);
        }
        for b in off..off + len {
            self.data[z][b as usize] = true;
        }
        self.wp[z] += len;
        if self.wp[z] == CAP {
            self.set(z, Full);
        }
        Ok(())
    }
    fn action(&mut self, z: usize, a: u8) -> Result<(), ZoneStatus> {
        if z < self.conv {
            return Err(InvalidField);
        }
        let s = self.state[z];
        match (a, s) {
            (0, Empty | Closed) => {
                self.acquire(z)?;
                self.set(z, ExplicitlyOpened);
            }
            (0, ImplicitlyOpened) => self.set(z, ExplicitlyOpened),
            (0, ExplicitlyOpened) => {}
            (1, ImplicitlyOpened | ExplicitlyOpened) => self.set(z, Closed),
            (1, Closed) => {}
            (2, Empty | ImplicitlyOpened | ExplicitlyOpened | Closed | Full) => self.set(z, Full),
            (3, ImplicitlyOpened | ExplicitlyOpened | Closed | Full | Empty) => {
                self.set(z, Empty);
                self.wp[z] = 0;
                self.data[z].fill(false);
            }
            (4, ReadOnly | Offline) => self.set(z, Offline),
            // controller: media failure
            (5, Offline) => return Err(InvalidZoneStateTransition),
            (5, _) => self.set(z, ReadOnly),
            _ => return Err(InvalidZoneStateTransition),
        }
        Ok(())
    }
    fn all(&mut self, a: u8) -> Result<(), ZoneStatus> {
        let pick = |s: ZoneState| match a {
            0 => s == Closed,
            1 => s.is_open(),
            2 => s.is_active(),
            _ => s.is_active() || s == Full,
        };
        let zs: Vec<usize> = (0..self.state.len()).filter(|&z| pick(self.state[z])).collect();
        if a == 0 && self.max_open > 0 && self.count(ZoneState::is_open) + zs.len() > self.max_open {
            return Err(TooManyOpenZones);
        }
        for z in zs {
            self.action(z, a).unwrap();
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Op {
    Write { zone: usize, off: u64, len: u64 },
    WriteAtWp { zone: usize, len: u64 },
    Append { zone: usize, len: u64 },
    Action { zone: usize, action: u8 },
    All { action: u8 },
}

fn op(zones: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..zones, 0..SIZE, 1..SIZE).prop_map(|(zone, off, len)| Op::Write { zone, off, len }),
        8 => (0..zones, 1..20u64).prop_map(|(zone, len)| Op::WriteAtWp { zone, len }),
        4 => (0..zones, 1..20u64).prop_map(|(zone, len)| Op::Append { zone, len }),
        6 => (0..zones, 0..6u8).prop_map(|(zone, action)| Op::Action { zone, action }),
        1 => (0..4u8).prop_map(|action| Op::All { action }),
    ]
}

fn check_against(zs: &Zones, m: &Model) -> Result<(), TestCaseError> {
    zs.check_invariants().map_err(TestCaseError::fail)?;
    for z in 0..m.state.len() {
        let d = zs.descriptor(z as u32);
        prop_assert_eq!(d.state, m.state[z], "zone {}", z);
        if z < m.conv {
            continue;
        }
        let expect_wp = d.state.has_valid_write_pointer().then_some(start(z as u32) + m.wp[z]);
        prop_assert_eq!(d.write_pointer, expect_wp, "zone {}", z);
        for b in 0..SIZE {
            let held = m.data[z][b as usize] && m.state[z] != Offline;
            prop_assert_eq!(zs.is_written(start(z as u32) + b), Some(held), "zone {} block {}", z, b);
            // Reads below a valid write pointer see written data, above it none.
            if let Some(w) = d.write_pointer {
                prop_assert_eq!(held, start(z as u32) + b < w);
            }
        }
    }
    let open = m.count(ZoneState::is_open) as u32;
    let active = m.count(ZoneState::is_active) as u32;
    prop_assert_eq!((zs.open_zones(), zs.active_zones()), (open, active));
    prop_assert_eq!(zs.implicitly_opened().map(|z| z as usize).collect::<Vec<_>>(), m.fifo.clone());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn zones_agree_with_a_reference_model(
        limits in prop_oneof![Just((0u32, 0u32)), Just((2, 3)), Just((2, 2)), Just((1, 4)), Just((3, 0))],
        ops in proptest::collection::vec(op(7), 1..120),
    ) {
        let (max_open, max_active) = limits;
        let cfg = ZoneConfig { conventional_zones: 1, max_open, max_active, ..ZoneConfig::new(SIZE, CAP, 7) };
        let mut zs = Zones::new(cfg).unwrap();
        let mut m = Model::new(7, 1, max_open as usize, max_active as usize);
        for o in ops {
            let (got, want) = match o {
                Op::Write { zone, off, len } => {
                    (zs.write(start(zone as u32) + off, len).map(drop), m.write(zone, off, len, false))
                }
                Op::WriteAtWp { zone, len } => {
                    let off = m.wp[zone];
                    (zs.write(start(zone as u32) + off, len).map(drop), m.write(zone, off, len, false))
                }
                Op::Append { zone, len } => {
                    let got = zs.append(start(zone as u32), len);
                    let before = m.wp[zone];
                    let want = m.write(zone, 0, len, true);
                    if let (Ok(r), Ok(())) = (&got, &want) {
                        prop_assert_eq!(r.lba, start(zone as u32) + before, "assigned LBA is the write pointer");
                    }
                    (got.map(drop), want)
                }
                Op::Action { zone, action } => {
                    let s = start(zone as u32);
                    let got = match action {
                        0 => zs.open(s).map(drop),
                        1 => zs.close(s),
                        2 => zs.finish(s).map(drop),
                        3 => zs.reset(s).map(drop),
                        4 => zs.offline(s),
                        _ => zs.set_read_only(zone as u32),
                    };
                    (got, m.action(zone, action))
                }
                Op::All { action } => {
                    let got = match action {
                        0 => zs.open_all().map(drop),
                        1 => { zs.close_all(); Ok(()) }
                        2 => { zs.finish_all(); Ok(()) }
                        _ => { zs.reset_all(); Ok(()) }
                    };
                    (got, m.all(action))
                }
            };
            prop_assert_eq!(got, want);
            check_against(&zs, &m)?;
        }
    }
}

/// `unwritten_blocks` counts what `is_written` calls unwritten, over zone boundaries, conventional
/// and offline zones.
#[test]
fn unwritten_blocks_agrees_with_is_written() {
    let mut cfg = ZoneConfig::new(16, 12, 6);
    cfg.conventional_zones = 1;
    let mut z = Zones::new(cfg).unwrap();
    z.write(16, 5).unwrap();
    z.write(32, 12).unwrap();
    z.write(48, 3).unwrap();
    z.set_offline(3).unwrap();
    z.finish(64).unwrap();
    for lba in 0..96 {
        for end in lba..=96 {
            let want = (lba..end).filter(|&b| z.is_written(b) == Some(false)).count() as u64;
            assert_eq!(z.unwritten_blocks(lba, end), want, "[{lba}, {end})");
        }
    }
}
