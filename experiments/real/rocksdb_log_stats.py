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
    if not starts:
        sys.exit(f"rocksdb_log_stats.py: {sys.argv[1]}: no statistics dump (run with --stats_dump_period_sec)")
    stamp = re.compile(r"^\d{4}/\d\d/\d\d-\d\d:\d\d:\d\d\.\d+ \w+ (\[[^\]]*\] )?")
    for line in lines[starts[-1]:]:
        print(stamp.sub("", line).strip())


if __name__ == "__main__":
    main()
