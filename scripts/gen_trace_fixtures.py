#!/usr/bin/env python3
"""Generate small deterministic sample traces for wafsim-workload's trace readers.

Writes into crates/wafsim-workload/tests/fixtures/:
  iolog_v2.log    fio iolog version 2 (file actions, waits, sync, read/write/trim)
  iolog_v3.log    fio iolog version 3 (microsecond timestamps)
  blkparse.txt    blkparse default text output (Q/G/I/D/C events, messages, flushes,
                  two devices, trailing summary section)
  msr.csv         MSR-Cambridge CSV (two disks of one host)
  summary.txt     independent expectations computed here from the generated records
                  (count, first/last record, bytes per op, records per key), so the Rust
                  tests do not compare a parser against itself. Flat "name.field value"
                  lines, so the tests need no JSON dependency.

Usage: python3 scripts/gen_trace_fixtures.py [--seed N]   (default seed 20240601)
The output depends only on the seed.
"""
import argparse
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "wafsim-workload", "tests", "fixtures")
GIB = 1 << 30


def summarize(records):
    """records: list of dicts with ts_ns, op, offset, len, key (only data I/O records)."""
    by_op = {"read": 0, "write": 0, "trim": 0}
    keys = {}
    for r in records:
        by_op[r["op"]] += r["len"]
        keys[r["key"]] = keys.get(r["key"], 0) + 1
    return {
        "records": len(records),
        "first": records[0],
        "last": records[-1],
        "bytes": by_op,
        "keys": keys,
    }


def flatten(d, prefix=""):
    out = []
    for k in sorted(d):
        v = d[k]
        name = prefix + str(k)
        if isinstance(v, dict):
            out.extend(flatten(v, name + "."))
        else:
            out.append("%s %s" % (name, v))
    return out


def rec(ts_ns, op, offset, length, key):
    return {"ts_ns": ts_ns, "op": op, "offset": offset, "len": length, "key": key}


def gen_iolog(rng, version, n=300):
    dev = "/dev/nvme0n1"
    other = "/tmp/fio.file"
    lines = ["fio version %d iolog" % version]
    records = []
    t_us = 0
    first_us = None

    def emit(parts):
        if version == 3:
            lines.append("%d %s" % (t_us, " ".join(parts)))
        else:
            lines.append(" ".join(parts))

    emit([dev, "add"])
    emit([other, "add"])
    emit([dev, "open"])
    emit([other, "open"])
    for i in range(n):
        step = rng.choice([0, 0, 50, 120, 1000, 2500])
        if version == 2:
            if step >= 100:
                lines.append("%s wait %d 0" % (dev, step))
                t_us += step
        else:
            t_us += step
        f = dev if rng.random() < 0.9 else other
        op = rng.choices(["write", "read", "trim"], weights=[6, 3, 1])[0]
        bs = rng.choice([4096, 8192, 16384, 131072])
        off = rng.randrange(0, 4 * GIB // 4096) * 4096
        emit([f, op, str(off), str(bs)])
        if first_us is None:
            first_us = t_us
        records.append(rec((t_us - first_us) * 1000, op, off, bs, f))
        if i % 97 == 50:
            emit([dev, "sync", "0", "0"])
        if i % 131 == 70:
            emit([dev, "datasync", "0", "0"])
    emit([dev, "close"])
    emit([other, "close"])
    return "\n".join(lines) + "\n", records


def gen_blkparse(rng, n=100):
    lines = []
    records = []
    seq = {}
    t_ns = 1_000_000  # traces rarely start at exactly 0
    first = None
    counts = {}

    def ev(dev, cpu, ts, pid, act, rwbs, tail):
        s = seq.get((dev, cpu), 0) + 1
        seq[(dev, cpu)] = s
        maj, mn = dev
        lines.append("%3d,%-3d %2d %8d %5d.%09d %5d  %s %3s %s" % (maj, mn, cpu, s, ts // 1_000_000_000, ts % 1_000_000_000, pid, act, rwbs, tail))

    for i in range(n):
        t_ns += rng.choice([0, 1_500, 20_000, 300_000, 2_000_000])
        dev = (8, 0) if rng.random() < 0.85 else (8, 16)
        cpu = rng.randrange(4)
        pid = rng.choice([1234, 4321, 999])
        kind = rng.choices(["W", "WS", "R", "RA", "DS", "D"], weights=[4, 3, 3, 1, 1, 1])[0]
        sectors = rng.choice([8, 16, 32, 256])
        sector = rng.randrange(0, 8 * GIB // 512 // 8) * 8
        op = "trim" if "D" in kind else ("write" if "W" in kind else "read")
        ev(dev, cpu, t_ns, pid, "Q", kind, "%d + %d [fio]" % (sector, sectors))
        if first is None:
            first = t_ns
        key = "%d,%d" % dev
        records.append(rec(t_ns - first, op, sector * 512, sectors * 512, key))
        counts[key] = counts.get(key, 0) + 1
        ev(dev, cpu, t_ns + 200, pid, "G", kind, "%d + %d [fio]" % (sector, sectors))
        ev(dev, cpu, t_ns + 400, pid, "I", kind, "%d + %d [fio]" % (sector, sectors))
        if i % 17 == 3:
            lines.append("%3d,%-3d %2d %8d %5d.%09d %5d  m   N cfq%dS insert_request" % (dev[0], dev[1], cpu, 0, t_ns // 1_000_000_000, (t_ns + 450) % 1_000_000_000, 0, pid))
        ev(dev, cpu, t_ns + 600, pid, "D", kind, "%d + %d [fio]" % (sector, sectors))
        ev(dev, cpu, t_ns + 90_000, 0, "C", kind, "%d + %d [0]" % (sector, sectors))
        if i % 41 == 7:
            # a pure flush: queued, no sectors; and an unplug event
            ev(dev, cpu, t_ns + 700, pid, "Q", "FWS", "[fio]")
            ev(dev, cpu, t_ns + 800, pid, "U", "N", "[fio] 1")
    lines.append("CPU0 (8,0):")
    lines.append(" Reads Queued:          10,       40KiB\t Writes Queued:          20,       80KiB")
    lines.append(" Read Dispatches:       10,       40KiB\t Write Dispatches:       20,       80KiB")
    lines.append("Total (8,0):")
    lines.append(" Reads Queued:          10,       40KiB\t Writes Queued:          20,       80KiB")
    lines.append("")
    lines.append("Throughput (R/W): 123KiB/s / 456KiB/s")
    lines.append("Events (8,0): %d entries" % (len(records) * 5))
    lines.append("Skips: 0 forward (0 -   0.0%)")
    return "\n".join(lines) + "\n", records


def gen_msr(rng, n=300):
    lines = []
    records = []
    ticks = 128166372003061629
    first = None
    for _ in range(n):
        ticks += rng.choice([0, 1, 250, 10_000, 1_000_000])
        disk = 0 if rng.random() < 0.8 else 1
        op = "Write" if rng.random() < 0.7 else "Read"
        size = rng.choice([512, 4096, 8192, 65536])
        off = rng.randrange(0, 2 * GIB // 512) * 512
        resp = rng.randrange(100, 200_000)
        lines.append("%d,hm,%d,%s,%d,%d,%d" % (ticks, disk, op, off, size, resp))
        if first is None:
            first = ticks
        records.append(rec((ticks - first) * 100, op.lower(), off, size, "hm_%d" % disk))
    return "\n".join(lines) + "\n", records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    summary = {"seed": args.seed}
    gens = [
        ("iolog_v2", "iolog_v2.log", lambda r: gen_iolog(r, 2)),
        ("iolog_v3", "iolog_v3.log", lambda r: gen_iolog(r, 3)),
        ("blkparse", "blkparse.txt", gen_blkparse),
        ("msr", "msr.csv", gen_msr),
    ]
    for i, (name, fname, gen) in enumerate(gens):
        rng = random.Random(args.seed * 31 + i)
        text, records = gen(rng)
        with open(os.path.join(OUT, fname), "w", newline="\n") as f:
            f.write(text)
        s = summarize(records)
        s["file"] = fname
        summary[name] = s
    with open(os.path.join(OUT, "summary.txt"), "w", newline="\n") as f:
        f.write("# generated by scripts/gen_trace_fixtures.py; do not edit\n")
        for line in flatten(summary):
            f.write(line + "\n")


if __name__ == "__main__":
    main()
