//! The controller's datapath as a shared resource (docs/model.md, "Timing model"): every byte
//! that crosses the NAND interface crosses it once, so a GC copy (read out, programmed back)
//! costs it twice what a host write does. Checked on the media alone, where the datapath is the
//! only binding resource: 16 dies programming 3.36 GB/s and reading 5.2 GB/s of pages over
//! 16 channels of 1.6 GB/s, behind a 1 GB/s datapath.
use wafsim_time::media::Media;
use wafsim_time::TimingConfig;

const DATAPATH: f64 = 1e9;

fn cfg() -> TimingConfig {
    TimingConfig { datapath_bytes_per_sec: DATAPATH, ..TimingConfig::plain_tlc(16, 16) }
}

/// Run every media event; the time of the last one.
fn drain(m: &mut Media) -> u64 {
    let mut last = 0;
    while let Some(t) = m.next_event() {
        last = t;
        m.step();
    }
    last
}

/// Log `programs` GC copies (each a program unit of page reads, then the copy program), spread
/// over the dies, as the FTL logs a victim's relocation.
fn log_copies(m: &mut Media, t: &TimingConfig, programs: u32) {
    let pages = t.units_per_program() / t.units_per_page();
    for p in 0..programs {
        for i in 0..pages {
            m.queue_gc_read((p * pages + i) % t.dies, t.units_per_page());
        }
        m.queue_gc_program((p + 7) % t.dies);
    }
    m.end_command();
}

#[test]
fn gc_copies_alone_move_half_the_bytes_of_host_writes_alone() {
    let t = cfg();
    let programs = 2_000u32;
    let bytes = programs as f64 * t.program_bytes() as f64;

    let mut host = Media::new(&t);
    for p in 0..programs {
        host.queue_host_program(0, p % t.dies);
    }
    host.end_command();
    let host_bw = bytes / (drain(&mut host) as f64 * 1e-9);
    assert_eq!(host.take_released(), bytes as u64, "every host program finished");

    let mut gc = Media::new(&t);
    log_copies(&mut gc, &t, programs);
    let gc_bw = bytes / (drain(&mut gc) as f64 * 1e-9);
    assert!(gc.gc_idle());
    assert_eq!(gc.busy.gc_program_ns, programs as u64 * t.nand.t_prog_ns);

    eprintln!("host writes {host_bw:.4e} B/s, GC copies {gc_bw:.4e} B/s, datapath {DATAPATH:.4e}");
    // Without the datapath the dies would program 3.36 GB/s: the datapath binds both.
    assert!(t.dies as f64 * t.program_bytes() as f64 / (t.nand.t_prog_ns as f64 * 1e-9) > 3.0 * DATAPATH);
    assert!((host_bw - DATAPATH).abs() / DATAPATH < 0.02, "host writes: {host_bw:.4e} B/s");
    assert!((gc_bw - DATAPATH / 2.0).abs() / (DATAPATH / 2.0) < 0.02, "GC copies: {gc_bw:.4e} B/s");
}

/// 4 KiB host reads every 10 us (409.6 MB/s) beside a backlog of 1,000 GC copies on 64 dies,
/// with the datapath's reads first or not: the copies' bandwidth and the worst read's latency.
fn reads_beside_copies(host_reads_first: bool) -> (f64, u64) {
    let t = TimingConfig { datapath_bytes_per_sec: DATAPATH, datapath_host_reads_first: host_reads_first, ..TimingConfig::plain_tlc(64, 16) };
    let programs = 1_000u32;
    let bytes = programs as f64 * t.program_bytes() as f64;
    let (gap, read) = (10_000u64, 4096u64);
    let mut m = Media::new(&t);
    log_copies(&mut m, &t, programs);
    let (mut at, mut reads, mut worst) = (0u64, 0u64, 0u64);
    while !m.gc_idle() || m.next_event().is_some() {
        while m.next_event().is_some_and(|e| e <= at) {
            m.step();
        }
        if m.gc_idle() && m.next_event().is_none() {
            break;
        }
        m.advance(at);
        let done = m.host_read(at, (reads % t.dies as u64) as u32, read, 0);
        worst = worst.max(done - at);
        reads += 1;
        at += gap;
    }
    // The copies ended between the last read's arrival and the one before.
    let copy_bw = bytes / (at as f64 * 1e-9);
    eprintln!("reads first {host_reads_first}: GC copies {copy_bw:.4e} B/s beside {reads} reads (worst read {worst} ns); datapath busy {:.3}", m.busy.datapath_ns as f64 / at as f64);
    // The datapath never idles while work is booked.
    assert!(m.busy.datapath_ns as f64 > 0.97 * at as f64, "the datapath idled: busy {} of {at} ns", m.busy.datapath_ns);
    (copy_bw, worst)
}

#[test]
fn host_reads_during_gc_take_their_bytes_and_gc_gets_the_rest() {
    // The reads get all their bytes whatever the order, and the copies the rest, two crossings
    // per byte: (1 GB/s - 409.6 MB/s) / 2 = 295.2 MB/s. 64 dies, so that the reads' die time
    // (a third of 16 dies' time) does not bind the copies too.
    let want = (DATAPATH - 4096.0 / 10e-6) / 2.0;
    let (first, first_worst) = reads_beside_copies(true);
    let (fcfs, fcfs_worst) = reads_beside_copies(false);
    for bw in [first, fcfs] {
        assert!((bw - want).abs() / want < 0.03, "GC copies {bw:.4e} B/s, expected {want:.4e}");
    }
    // First come, first served, the GC backlog, released at once (no host program waits),
    // books the datapath ahead of later reads and a read waits for much of it (tens of ms).
    // Reads first, a read waits only for its die (at worst a copy program in progress: this
    // configuration has no suspends), its page read, its channel transfer behind at most a
    // program's data and its own crossing (4 us): about a millisecond.
    let t = TimingConfig::plain_tlc(64, 16);
    let program_xfer = (t.program_bytes() as f64 / t.channel_bytes_per_sec * 1e9) as u64;
    let bound = t.nand.t_prog_ns + t.nand.t_read_ns + program_xfer + 10_000;
    assert!(fcfs_worst > 10_000_000, "FCFS: worst read {fcfs_worst} ns");
    assert!(first_worst < bound, "reads first: worst read {first_worst} ns, bound {bound} ns");
}

#[test]
fn without_a_datapath_nothing_changes_and_a_fast_one_binds_nothing() {
    // The die-bound host write bandwidth is the same with no datapath and with one faster than
    // the dies (the program bandwidth says which binds).
    let bw = |t: &TimingConfig| {
        let mut m = Media::new(t);
        for p in 0..2_000u32 {
            m.queue_host_program(0, p % t.dies);
        }
        m.end_command();
        2_000.0 * t.program_bytes() as f64 / (drain(&mut m) as f64 * 1e-9)
    };
    let none = TimingConfig::plain_tlc(16, 16);
    let fast = TimingConfig { datapath_bytes_per_sec: 20e9, ..none.clone() };
    let (a, b) = (bw(&none), bw(&fast));
    eprintln!("no datapath {a:.4e} B/s, 20 GB/s datapath {b:.4e} B/s, program bandwidth {:.4e}", none.program_bandwidth());
    assert!((a - none.program_bandwidth()).abs() / a < 0.02);
    assert!((a - b).abs() / a < 0.005);
    assert_eq!(fast.program_bandwidth(), none.program_bandwidth());
    assert_eq!(cfg().program_bandwidth(), DATAPATH);
}

#[test]
fn a_read_goes_ahead_of_a_program_whose_data_has_not_reached_the_die() {
    // 16 host programs, one per die, all ready at 0: their data crosses the 1 GB/s datapath one
    // after another, so the last die's program cannot start before 16 transfers (about 3.1 ms).
    // That die's array is idle meanwhile: a read arriving then runs at once and does not wait
    // for the program (0.94 ms; nor, with host reads first on the datapath, for the programs'
    // data there). The program starts once the read's array time ends.
    let t = cfg();
    let mut m = Media::new(&t);
    for d in 0..t.dies {
        m.queue_host_program(0, d);
    }
    m.end_command();
    while m.next_event().is_some_and(|e| e == 0) {
        m.step();
    }
    let dpx = t.program_bytes() as f64 / DATAPATH * 1e9;
    let last_data = (t.dies as f64 * dpx) as u64; // the last program's data through the datapath
    let at = 1_000;
    m.advance(at);
    let done = m.host_read(at, t.dies - 1, 4096, 0);
    let read_dp = (4096.0 / DATAPATH * 1e9) as u64;
    eprintln!("read done at {done} ns; programs' data through the datapath by {last_data} ns, tPROG {} ns", t.nand.t_prog_ns);
    assert!(done <= last_data + read_dp + 20_000, "the read waited for more than the datapath: done at {done} ns");
    assert!(done < last_data + t.nand.t_prog_ns / 2, "the read waited for the program");
    // Every program finishes, the last one no later than it would have without the read plus
    // the read's array time.
    let end = drain(&mut m);
    assert_eq!(m.take_released(), t.dies as u64 * t.program_bytes() as u64);
    let xfer = (t.program_bytes() as f64 / t.channel_bytes_per_sec * 1e9) as u64;
    assert!(end <= last_data + xfer + t.nand.t_read_ns + t.nand.t_prog_ns + 1_000, "programs ended at {end} ns");
}
