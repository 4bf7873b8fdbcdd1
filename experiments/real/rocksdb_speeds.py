#!/usr/bin/env python3
"""The two machine speeds of a db_bench run, from RocksDB's own statistics (db_bench run with
--statistics=1 and a final `stats` benchmark), for the LSM model's write controller:

  background bandwidth  read + write bytes per second of one flush or compaction job: the Sum
                        row of "** Compaction Stats **" (Rd(MB/s) + Wr(MB/s), RocksDB's MB being
                        MiB, over Comp(sec)), every job of the run;
  client rate           log bytes per second the clients wrote while not stalled:
                        rocksdb.wal.bytes over the benchmark's seconds less rocksdb.stall.micros.

Usage: rocksdb_speeds.py DB_BENCH_OUTPUT... ; prints "BANDWIDTH CLIENT_RATE" (bytes/s, whole
numbers) over all the files together (each file one db_bench process).
"""
import re
import sys

MIB = 1048576.0


def speeds(path):
    """(job bytes, job seconds, wal bytes, benchmark seconds, stall seconds) of one output."""
    text = open(path).read()
    header = None
    job_bytes = job_secs = None
    for line in text.splitlines():
        cols = line.split()
        if cols[:2] == ["Level", "Files"]:
            header = cols
        elif header and cols and cols[0] == "Sum":
            # The Sum row has the header's columns, its Size in two words ("40.84 MB").
            row = dict(zip(header, cols[:2] + [" ".join(cols[2:4])] + cols[4:]))
            secs = float(row["Comp(sec)"])
            job_bytes = (float(row["Rd(MB/s)"]) + float(row["Wr(MB/s)"])) * MIB * secs
            job_secs = secs
    if job_secs is None:
        sys.exit(f"rocksdb_speeds.py: {path}: no compaction stats (run db_bench with a final `stats` benchmark)")
    bench_secs = 0.0
    for m in re.finditer(r"^(fill\w*|overwrite)\s*:\s*[\d.]+ micros/op \d+ ops/sec ([\d.]+) seconds", text, re.M):
        bench_secs += float(m.group(2))
    ticker = lambda name: int(re.search(rf"^{re.escape(name)} COUNT : (\d+)$", text, re.M).group(1))
    return job_bytes, job_secs, ticker("rocksdb.wal.bytes"), bench_secs, ticker("rocksdb.stall.micros") / 1e6


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tot = [0.0] * 5
    for p in sys.argv[1:]:
        for i, v in enumerate(speeds(p)):
            tot[i] += v
    job_bytes, job_secs, wal, bench, stall = tot
    if job_secs <= 0 or bench - stall <= 0:
        sys.exit("rocksdb_speeds.py: no job or client time to divide by")
    print(f"{job_bytes / job_secs:.0f} {wal / (bench - stall):.0f}")


if __name__ == "__main__":
    main()
