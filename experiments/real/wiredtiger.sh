#!/usr/bin/env bash
# WiredTiger 11.3.1, MongoDB's storage engine built from its source
# (experiments/real/build-wiredtiger.sh), under its own benchmark wtperf, on a simulated drive
# through XFS: the journal and the collections on one namespace, on two namespaces without
# placement, with one FDP reclaim unit handle each, and on two dedicated drives
# (experiments/real/drive.toml; the journal on "wal", the tables on "db", as MongoDB puts its
# journal in its own directory, which can be its own file system).
#
# The load is YCSB-like, as wtperf's MongoDB runners shape it (bench/wtperf/runners/
# 500m-btree-populate.wtperf then 500m-btree-50r50u.wtperf: two tables for a collection and an
# index, MongoDB's connection settings: journal on, checkpoints every 60 s): a populate of
# --records records of 40-byte keys and --value-size values, then --seconds of 50% reads and 50%
# updates (pareto skew 20) by 2 + 2 threads. What differs from the runners, and why: the cache
# is 256 MiB (theirs is 16 GB for 500 M records: a small cache-to-data ratio here too); no
# compression (wtperf's values compress to nothing, which would leave the drive idle); a
# checkpoint also after 256 MB of journal instead of 2 GB (the journal's namespace is 640 MB
# at this scale: a 2 GB trigger fills it, and WiredTiger panics on ENOSPC). 1,500,000 records
# in each of the two tables are about 1.3 GB, 40% of the tables' namespace.
# The drive's WAF is reported over "run" (populate and updates, from after mkfs and mount to
# after unmount) and "updates" (the update phase alone; sync before and after).
#
# Usage (as root): experiments/real/wiredtiger.sh [--layouts "one-namespace no-fdp fdp dedicated"]
#                  [--history fresh|filled] [--records N] [--value-size B] [--seconds S] [--out FILE] [--wafsim PATH]
#   --history   fresh (default): mkfs discards the fresh drive; filled: every LBA written once
#               first and mkfs told not to discard
set -euo pipefail
cd "$(dirname "$0")/../.."

LAYOUTS="one-namespace no-fdp fdp dedicated"; RECORDS=1500000; VALUE=400; SECONDS_RUN=120
OUT=""; WAFSIM="target/release/wafsim"; HISTORY=fresh
. experiments/real/lib.sh
while [ $# -gt 0 ]; do
    common_option "$1" "${2:-}" && { shift 2; continue; }
    case "$1" in
        --records) RECORDS="$2"; shift 2 ;;
        --value-size) VALUE="$2"; shift 2 ;;
        --seconds) SECONDS_RUN="$2"; shift 2 ;;
        *) echo "wiredtiger.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
WAFSIM="$(real_wafsim "$WAFSIM")"
WTPERF="$(experiments/real/build-wiredtiger.sh)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

header="history	layout	records	value_size	update_seconds	$(window_header wal_device_bytes,db_device_bytes update)"
emit "$header" new

for layout in $LAYOUTS; do
    log_layout "$layout"; journal="$LOG_MNT/journal"
    drives="$(layout_drives "$layout" 2)"
    conn="cache_size=256MB,checkpoint=(wait=60,log_size=256MB),session_max=20000,log=(enabled=true,path=\$J),eviction=(threads_max=2)"
    # Quotes escaped: the options are pasted into a double-quoted argument of the inner script.
    common='table_config=\"type=file\",table_count=2,key_sz=40,compression=\"none\",sess_config=\"isolation=snapshot\"'",value_sz=$VALUE"
    cat > "$work/run.sh" <<EOF
set -e
$(cap_function "$drives")
J="$journal"; mkdir -p "\$J"
H="\$WAFSIM_MNT_DB/home"; mkdir -p "\$H"
"$WTPERF" -h "\$H" -o "conn_config=\"$conn\",$common,create=true,icount=$RECORDS,populate_threads=1,run_time=0,report_interval=0" > "$work/populate.txt" 2>&1
sync; cap "$work/before.json"
"$WTPERF" -h "\$H" -o "conn_config=\"$conn\",$common,create=false,pareto=20,run_time=$SECONDS_RUN,report_interval=0,threads=((count=2,reads=1),(count=2,updates=1))" > "$work/run.txt" 2>&1
sync; cap "$work/after.json"
EOF
    rm -f "$work"/*.json
    echo "wiredtiger.sh: $layout ..." >&2
    history_args "$HISTORY" xfs
    attach_run "$work" experiments/real/drive.toml --variant "$layout" "${HIST_ARGS[@]}" --export "$EXPORTS" --fs xfs --name wiredtiger-sh --json "$work/window.json" -- sh "$work/run.sh"
    row="$HISTORY	$layout	$RECORDS	$VALUE	$SECONDS_RUN	$(window_columns "$work" wal,db)"
    emit "$row"
done
