//! Resource timelines: every die and channel is busy until some time; an operation reserves
//! them in the order the simulation issues it (first come, first served per resource).

use crate::config::TimingConfig;

/// Die-busy nanoseconds by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Busy {
    pub host_program_ns: u64,
    pub host_read_ns: u64,
    pub gc_program_ns: u64,
    pub gc_read_ns: u64,
    pub erase_ns: u64,
}

impl Busy {
    pub fn host_ns(&self) -> u64 {
        self.host_program_ns + self.host_read_ns
    }
    /// GC copies and erases (erases happen only to reclaim space).
    pub fn gc_ns(&self) -> u64 {
        self.gc_program_ns + self.gc_read_ns + self.erase_ns
    }
}

/// A channel's future busy intervals, so that a transfer can use a gap before a transfer
/// booked later in time (programs are booked when their data is buffered, possibly ahead of
/// when the die can take them).
#[derive(Debug, Clone, Default)]
struct Channel {
    /// Disjoint (start, end) intervals, sorted by start, from index `head` on (intervals before
    /// `head` have ended and are dropped in bulk now and then).
    busy: Vec<(u64, u64)>,
    head: usize,
}

/// Gaps shorter than this cannot hold any transfer worth booking (a 4 KiB transfer at
/// 1600 MT/s takes 2.56 us); closing them keeps the interval list short.
const MIN_GAP_NS: u64 = 2_000;
/// Gaps searched before a booking goes after the last interval (bounds the cost per booking).
const MAX_SCAN: usize = 256;

impl Channel {
    /// Book `dur` ns at the first gap starting at or after `t`; returns the start.
    fn book(&mut self, t: u64, dur: u64) -> u64 {
        // Fast path: at or after the last booking.
        match self.busy.last_mut() {
            None => {
                self.busy.push((t, t + dur));
                return t;
            }
            Some(last) if t >= last.1 => {
                if t <= last.1 + MIN_GAP_NS {
                    last.1 = t + dur;
                } else {
                    self.busy.push((t, t + dur));
                }
                return t;
            }
            _ => {}
        }
        let mut start = t;
        // Intervals are disjoint and sorted, so their ends are sorted too: skip those ending
        // before `t` by binary search.
        let mut i = self.head + self.busy[self.head..].partition_point(|&(_, e)| e <= t);
        let mut scanned = 0;
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if s >= start + dur {
                break;
            }
            start = start.max(e);
            i += 1;
            scanned += 1;
            if scanned == MAX_SCAN {
                let last = self.busy.len() - 1;
                start = start.max(self.busy[last].1);
                i = self.busy.len();
                break;
            }
        }
        // Insert at i (every interval before i starts before `start`); merge with neighbours
        // that touch or leave only a useless gap.
        let end = start + dur;
        let merge_prev = i > self.head && self.busy[i - 1].1 + MIN_GAP_NS >= start;
        let merge_next = i < self.busy.len() && self.busy[i].0 <= end + MIN_GAP_NS;
        match (merge_prev, merge_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = end,
            (false, true) => self.busy[i].0 = start,
            (false, false) => self.busy.insert(i, (start, end)),
        }
        start
    }

    /// Forget intervals that ended by `now` (no later request starts before `now`).
    fn prune(&mut self, now: u64) {
        while self.head < self.busy.len() && self.busy[self.head].1 <= now {
            self.head += 1;
        }
        if self.head > 64 && self.head * 2 > self.busy.len() {
            self.busy.drain(..self.head);
            self.head = 0;
        }
    }
}

pub struct Media {
    die_free: Vec<u64>,
    /// When each die's cache register is free for the next program's data (cache programming:
    /// data-in of the next program overlaps the current tPROG).
    cache_free: Vec<u64>,
    /// With program suspend: when each die's last host read is done with the array (reads
    /// still run one at a time).
    read_free: Vec<u64>,
    /// Total time suspending reads added to each die (pushes its booked programs back).
    suspended: Vec<u64>,
    ch: Vec<Channel>,
    channels: u32,
    dies_per_rg: u32,
    t_read: u64,
    t_prog: u64,
    t_erase: u64,
    program_xfer: u64,
    page_xfer: u64,
    ns_per_byte_channel: f64,
    suspend: bool,
    suspend_overhead: u64,
    pub busy: Busy,
}

impl Media {
    pub fn new(cfg: &TimingConfig) -> Media {
        let nspb = 1e9 / cfg.channel_bytes_per_sec;
        Media {
            die_free: vec![0; cfg.dies as usize],
            cache_free: vec![0; cfg.dies as usize],
            read_free: vec![0; cfg.dies as usize],
            suspended: vec![0; cfg.dies as usize],
            ch: vec![Channel::default(); cfg.channels as usize],
            channels: cfg.channels,
            dies_per_rg: cfg.dies_per_rg(),
            t_read: cfg.nand.t_read_ns,
            t_prog: cfg.nand.t_prog_ns,
            t_erase: cfg.nand.t_erase_ns,
            program_xfer: (cfg.program_bytes() as f64 * nspb).round() as u64,
            page_xfer: (cfg.page_bytes as f64 * nspb).round() as u64,
            ns_per_byte_channel: nspb,
            suspend: cfg.program_suspend,
            suspend_overhead: cfg.suspend_overhead_ns,
            busy: Busy::default(),
        }
    }

    fn channel_of(&self, die: u32) -> usize {
        (die % self.channels) as usize
    }

    /// The simulation clock advanced to `now`: no request will start earlier.
    pub fn advance(&mut self, now: u64) {
        for c in &mut self.ch {
            c.prune(now);
        }
    }

    /// Program one program unit on `die`, data available at `at`: the channel moves the data
    /// into the die's cache register (as soon as the register is free), then the array programs
    /// once the previous program is done. Returns the completion time.
    pub fn program(&mut self, at: u64, die: u32, host: bool) -> u64 {
        let ch = self.channel_of(die);
        let d = die as usize;
        let xfer_start = self.ch[ch].book(at.max(self.cache_free[d]), self.program_xfer);
        let xfer_done = xfer_start + self.program_xfer;
        let array_start = xfer_done.max(self.die_free[d]);
        self.cache_free[d] = array_start;
        let done = array_start + self.t_prog;
        self.die_free[d] = done;
        if host {
            self.busy.host_program_ns += self.t_prog;
        } else {
            self.busy.gc_program_ns += self.t_prog;
        }
        done
    }

    /// Read `bytes` from a page of `die` at `at` (array read, then transfer out over the
    /// channel). GC reads move a whole page. Returns when the data has left the channel.
    pub fn read(&mut self, at: u64, die: u32, bytes: u64, host: bool) -> u64 {
        let ch = self.channel_of(die);
        let d = die as usize;
        let xfer = if host { (bytes as f64 * self.ns_per_byte_channel).round() as u64 } else { self.page_xfer };
        let suspend = host && self.suspend && self.die_free[d] > at.max(self.read_free[d]);
        let array_start = if suspend {
            // Suspend the program/erase in progress: the read goes first, the suspended
            // operation resumes later.
            at.max(self.read_free[d]) + self.suspend_overhead
        } else {
            at.max(self.die_free[d]).max(self.read_free[d])
        };
        let ready = array_start + self.t_read;
        let xfer_start = self.ch[ch].book(ready, xfer);
        let done = xfer_start + xfer;
        if suspend {
            self.die_free[d] += self.suspend_overhead + self.t_read;
            self.suspended[d] += self.suspend_overhead + self.t_read;
            self.read_free[d] = ready;
        } else {
            self.die_free[d] = self.die_free[d].max(ready);
            self.read_free[d] = ready;
        }
        self.cache_free[d] = self.cache_free[d].max(done);
        if host {
            self.busy.host_read_ns += self.t_read + xfer;
        } else {
            self.busy.gc_read_ns += self.t_read + xfer;
        }
        done
    }

    /// Delay suspending reads have added to `die` so far.
    pub fn suspend_delay(&self, die: u32) -> u64 {
        self.suspended[die as usize]
    }

    /// Erase a superblock: one block erase on every die of reclaim group `rg`.
    pub fn erase(&mut self, at: u64, rg: u32) {
        let first = (rg * self.dies_per_rg) as usize;
        for d in first..first + self.dies_per_rg as usize {
            let start = at.max(self.die_free[d]);
            self.die_free[d] = start + self.t_erase;
            self.cache_free[d] = self.cache_free[d].max(start);
            self.busy.erase_ns += self.t_erase;
        }
    }

    /// Latest time any die is busy until.
    pub fn drained_at(&self) -> u64 {
        self.die_free.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::Channel;

    #[test]
    fn channel_books_gaps() {
        let mut c = Channel::default();
        assert_eq!(c.book(10_000, 100), 10_000);
        assert_eq!(c.book(0, 100), 0); // a 9.9 us gap stays open (below 2 us it would close)
        assert_eq!(c.busy, vec![(0, 100), (10_000, 10_100)]);
        assert_eq!(c.book(9_950, 100), 10_100); // overlaps: goes after, merged
        assert_eq!(c.book(100, 9_000), 100); // fills the gap; the rest (< 1 us) closes
        assert_eq!(c.busy, vec![(0, 10_200)]);
        assert_eq!(c.book(13_000, 10), 13_000);
        c.prune(11_000);
        assert_eq!(&c.busy[c.head..], &[(13_000, 13_010)]);
    }
}
