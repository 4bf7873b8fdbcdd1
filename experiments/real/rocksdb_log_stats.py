#!/usr/bin/env python3
"""The last statistics RocksDB dumped into its LOG (db_bench with --statistics=1 and
--stats_dump_period_sec), as db_bench's own `stats` benchmark prints them: the compaction
stats tables and the tickers ("rocksdb.x COUNT : n"), one per line, without the LOG's
timestamps. pair-lsm.sh appends this to a db_bench output it had to stop (see there).

Usage: rocksdb_log_stats.py LOG
"""
import re
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    starts = [i for i, l in enumerate(lines) if "------- DUMPING STATS -------" in l]
    stamp = re.compile(r"^\d{4}/\d\d/\d\d-\d\d:\d\d:\d\d\.\d+ \w+ (\[[^\]]*\] )?")
    # The last whole dump: its compaction stats and the tickers after them (a process stopped
    # while dumping leaves the last one cut short).
    for k in range(len(starts) - 1, -1, -1):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        block = [stamp.sub("", l).strip() for l in lines[starts[k]:end]]
        if any(l.startswith("Sum ") for l in block) and any(l.startswith("rocksdb.wal.bytes COUNT") for l in block):
            print("\n".join(block))
            return
    sys.exit(f"rocksdb_log_stats.py: {sys.argv[1]}: no whole statistics dump (run with --statistics=1 --stats_dump_period_sec=N)")

if __name__ == "__main__":
    main()
