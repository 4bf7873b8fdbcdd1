//! A simulated drive behind the server (`wafsim_nbd::sim`): every request reaches the drive's
//! counters as the command it is, data reads back, names resolve as documented, and requests the
//! simulation would refuse never reach it.

mod common;


use common::{pattern, Client, Running};
use wafsim_nbd::proto::transmission::{Command, NBD_CMD_FLAG_NO_HOLE};
use wafsim_nbd::sim::{self, Backing, LiveDrive};
use wafsim_nbd::Config;

use common::drive;

/// Host bytes, host mapping units, trimmed bytes, read bytes of namespace `ns`.
fn ns_counts(d: &LiveDrive, ns: usize) -> (u64, u64, u64, u64) {
    use wafsim_core::blockdev::BlockDevice;
    let live = d.lock();
    let n = &live.stack.devices[0].counters().namespaces[ns];
    (n.host_write_bytes, n.host_units, n.trim_bytes, n.host_read_bytes)
}

#[test]
fn requests_become_commands_and_data_reads_back() {
    let d = drive();
    let exports = sim::exports(&d, Backing::Memory).unwrap();
    let srv = Running::start(exports, Config::default());
    let mut a = Client::connect(srv.addr);
    a.go("a");
    let data = pattern(1, 64 << 10);
    assert_eq!(a.write(4096, &data).errno(), None);
    assert_eq!(a.read(4096, 64 << 10).data(), data);
    assert_eq!(ns_counts(&d, 0), (64 << 10, 16, 0, 64 << 10));
    // A 512-byte write costs its whole mapping unit (as partial-unit writes do on the drive).
    assert_eq!(a.write(0, &data[..512]).errno(), None);
    assert_eq!(ns_counts(&d, 0).1, 17);
    // Trim and write-zeroes without NO_HOLE deallocate; with NO_HOLE they program zeroes.
    assert_eq!(a.cmd(Command::Trim, 0, 4096, 8192, &[]).errno(), None);
    assert_eq!(a.read(4096, 8192).data(), vec![0u8; 8192]);
    assert_eq!(a.cmd(Command::WriteZeroes, 0, 16384, 4096, &[]).errno(), None);
    assert_eq!(ns_counts(&d, 0).2, 8192 + 4096);
    assert_eq!(a.cmd(Command::WriteZeroes, NBD_CMD_FLAG_NO_HOLE, 20480, 4096, &[]).errno(), None);
    assert_eq!(ns_counts(&d, 0).1, 18);
    assert_eq!(a.read(16384, 8192).data(), vec![0u8; 8192]);
    // Zero-length requests and a flush are answered without reaching the simulation's counts.
    let before = ns_counts(&d, 0);
    assert_eq!(a.cmd(Command::Write, 0, 0, 0, &[]).errno(), None);
    assert_eq!(a.cmd(Command::Read, 0, 0, 0, &[]).errno(), None);
    assert_eq!(a.cmd(Command::Trim, 0, 0, 0, &[]).errno(), None);
    assert_eq!(a.cmd(Command::WriteZeroes, 0, 0, 0, &[]).errno(), None);
    assert_eq!(a.cmd(Command::Flush, 0, 0, 0, &[]).errno(), None);
    assert_eq!(ns_counts(&d, 0).0, before.0);
    // Past the end: refused by the server, the drive never sees it.
    assert!(a.write(8 << 20, &data[..4096]).errno().is_some());
    assert_eq!(ns_counts(&d, 0).0, before.0);
    // The other namespace is untouched; its own export writes there.
    let mut b = Client::connect(srv.addr);
    b.go("b");
    assert_eq!(b.write(0, &data[..4096]).errno(), None);
    assert_eq!(ns_counts(&d, 1).0, 4096);
    assert_eq!(ns_counts(&d, 0).0, before.0);
    a.disc();
    b.disc();
    srv.stop();
}

#[test]
fn names_select_namespaces_and_placement_handles() {
    let d = drive();
    let exports = sim::exports(&d, Backing::Memory).unwrap();
    let srv = Running::start(exports, Config::default());
    // The default export is the first namespace; NAME@K is handle K of NAME.
    let mut c = Client::connect(srv.addr);
    let list: Vec<String> = c.list().into_iter().map(|(n, _)| n).collect();
    assert_eq!(list, ["a", "b"]);
    for (name, ok) in [("a@1", true), ("a@2", false), ("b@0", true), ("b@1", false), ("c", false), ("a@x", false)] {
        let mut c = Client::connect(srv.addr);
        assert_eq!(c.info_or_go(false, name, &[]).is_ok(), ok, "{name}");
    }
    // Writes through a@1 land in handle 1's reclaim unit: another frontier than a's handle 0,
    // and the same data store.
    let mut h0 = Client::connect(srv.addr);
    h0.go("a");
    let mut h1 = Client::connect(srv.addr);
    h1.go("a@1");
    let data = pattern(7, 8192);
    assert_eq!(h1.write(0, &data).errno(), None);
    assert_eq!(h0.read(0, 8192).data(), data);
    {
        use wafsim_core::blockdev::BlockDevice;
        use wafsim_core::device::FrontierKind;
        let live = d.lock();
        let dev = live.stack.devices[0].flash().expect("a flash drive");
        let c = live.stack.devices[0].counters();
        // Host units per RUH, from the device's own description of its frontiers.
        let mut per_ruh = [0u64; 4];
        for (f, n) in dev.frontiers().iter().zip(&c.frontiers) {
            if f.kind == FrontierKind::Host {
                per_ruh[f.ruh as usize] += n.host_units;
            }
        }
        // RUH 1 (a's handle 1) has the units, RUH 0 (a's handle 0) none.
        assert_eq!(per_ruh, [0, 2, 0, 0]);
    }
    srv.stop();
}

/// The paced exports answer zero-length requests too (no command for the model).
#[test]
fn paced_zero_length_requests_are_answered() {
    let mut v = wafsim_experiment::load_experiment(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/live/paced.toml")).unwrap().remove(0);
    v.spec.precondition = Some(false);
    let stack = wafsim_experiment::run::build_stack(&v.spec).unwrap();
    let configs = wafsim_nbd::pace::timing_configs(&v.spec, &stack).unwrap();
    let pacer = wafsim_nbd::pace::Pacer::new(LiveDrive::new(stack).unwrap(), configs, false).unwrap();
    let srv = Running::start(wafsim_nbd::pace::paced_exports(&pacer, Backing::Memory).unwrap(), Config::default());
    let mut c = Client::ready(srv.addr);
    for cmd in [Command::Write, Command::Read, Command::Trim, Command::WriteZeroes] {
        assert_eq!(c.cmd(cmd, 0, 4096, 0, &[]).errno(), None, "{cmd:?}");
    }
    let data = pattern(3, 4096);
    assert_eq!(c.write(0, &data).errno(), None);
    assert_eq!(c.read(0, 4096).data(), data);
    c.disc();
    srv.stop();
}

#[test]
fn zoned_namespaces_are_refused_with_the_reason() {
    let doc = "[device]\npreset = \"zns-zn540\"\n";
    let mut v = wafsim_experiment::parse_experiment(doc, "zns").unwrap().remove(0);
    wafsim_experiment::plan::scale::scale_spec(&mut v.spec, 0.001).unwrap();
    let stack = wafsim_experiment::run::build_stack(&v.spec).unwrap();
    let err = LiveDrive::new(stack).err().expect("refused");
    assert!(err.contains("zoned") && err.contains("dm-zoned"), "{err}");
}
