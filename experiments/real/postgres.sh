#!/usr/bin/env bash
# PostgreSQL 15 (Debian's postgresql-15) under its own pgbench (TPC-B-like), on a simulated
# drive through XFS: the write-ahead log (pg_wal) and the data on one namespace, on two
# namespaces without placement, with one FDP reclaim unit handle each, and on two dedicated
# drives (experiments/real/drive.toml: pg_wal on "wal" by `initdb --waldir`, the data on "db").
#
# PostgreSQL's defaults (shared_buffers 128 MB, 16 MB WAL segments, full_page_writes on,
# checkpoint_timeout 5 min), except max_wal_size 256 MB instead of 1 GB: the WAL's namespace is
# 640 MB at this scale and PostgreSQL stops on a full pg_wal. pgbench -i at --pgbench-scale (80:
# 8 M accounts, about 1.2 GB with indexes), then --seconds of the TPC-B-like transactions by 4
# clients. The drive's WAF over "run" (initdb to shutdown) and "transactions" (the pgbench run
# alone; CHECKPOINT and sync before and after).
#
# Usage (as root): experiments/real/postgres.sh [--layouts "one-namespace no-fdp fdp dedicated"]
#                  [--history fresh|filled] [--pgbench-scale N] [--seconds S] [--out FILE] [--wafsim PATH]
#   --history   fresh (default): mkfs discards the fresh drive; filled: every LBA written once
#               first and mkfs told not to discard
set -euo pipefail
cd "$(dirname "$0")/../.."

LAYOUTS="one-namespace no-fdp fdp dedicated"; PGSCALE=80; SECONDS_RUN=120; OUT=""; WAFSIM="target/release/wafsim"; HISTORY=fresh
while [ $# -gt 0 ]; do
    case "$1" in
        --layouts) LAYOUTS="$2"; shift 2 ;;
        --pgbench-scale) PGSCALE="$2"; shift 2 ;;
        --seconds) SECONDS_RUN="$2"; shift 2 ;;
        --history) HISTORY="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --wafsim) WAFSIM="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "postgres.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
. experiments/real/lib.sh
WAFSIM="$(real_wafsim "$WAFSIM")"
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$PGBIN/postgres" ] || { echo "postgres.sh: PostgreSQL's server not found (apt-get install postgresql)" >&2; exit 2; }
id postgres >/dev/null 2>&1 || { echo "postgres.sh: no postgres user (apt-get install postgresql creates it)" >&2; exit 2; }
work="$(mktemp -d)"
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

header="history	layout	pgbench_scale	seconds_run	transactions	$(window_header wal_device_bytes,db_device_bytes txn)"
echo "$header"
if [ -n "$OUT" ]; then echo "$header" > "$OUT"; fi

for layout in $LAYOUTS; do
    if [ "$layout" = one-namespace ]; then
        exports="db"; waldir='$WAFSIM_MNT_DB/pg_wal'
    else
        exports="wal,db"; waldir='$WAFSIM_MNT_WAL/pg_wal'
    fi
    drives="$(layout_drives "$layout" 2)"
    cat > "$work/run.sh" <<EOF
set -e
$(cap_function "$drives")
D="\$WAFSIM_MNT_DB/pgdata"; W="$waldir"; S="\$WAFSIM_MNT_DB/sock"
mkdir -p "\$D" "\$W" "\$S"; chown postgres: "\$D" "\$W" "\$S"; chmod 700 "\$D"
pg() { runuser -u postgres -- "\$@"; }
pg "$PGBIN/initdb" -D "\$D" --waldir="\$W" > "$work/initdb.txt"
touch "$work/postgres.log"; chown postgres: "$work/postgres.log"
pg "$PGBIN/pg_ctl" -D "\$D" -l "$work/postgres.log" -w start -o "-c listen_addresses='' -c unix_socket_directories='\$S' -c max_wal_size=256MB" > /dev/null
trap 'pg "$PGBIN/pg_ctl" -D "\$D" -m fast -w stop > /dev/null 2>&1 || true' EXIT
pg "$PGBIN/pgbench" -h "\$S" -i -s $PGSCALE postgres > "$work/init.txt" 2>&1
pg "$PGBIN/psql" -h "\$S" -q -c CHECKPOINT postgres; sync; cap "$work/before.json"
pg "$PGBIN/pgbench" -h "\$S" -c 4 -j 2 -T $SECONDS_RUN postgres > "$work/pgbench.txt" 2>&1
pg "$PGBIN/psql" -h "\$S" -q -c CHECKPOINT postgres; sync; cap "$work/after.json"
pg "$PGBIN/pg_ctl" -D "\$D" -m fast -w stop > /dev/null
trap - EXIT
EOF
    rm -f "$work"/*.json
    echo "postgres.sh: $layout ..." >&2
    history_args "$HISTORY" xfs
    "$WAFSIM" attach experiments/real/drive.toml --variant "$layout" "${HIST_ARGS[@]}" --export "$exports" --fs xfs --name postgres-sh --json "$work/window.json" -- sh "$work/run.sh" 2> "$work/attach.err" || { cat "$work/attach.err" >&2; tail -20 "$work"/*.txt "$work/postgres.log" >&2 || true; exit 1; }
    txns="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench.txt")"
    row="$HISTORY	$layout	$PGSCALE	$SECONDS_RUN	${txns:-?}	$(window_columns "$work" wal,db)"
    echo "$row"
    if [ -n "$OUT" ]; then echo "$row" >> "$OUT"; fi
done
