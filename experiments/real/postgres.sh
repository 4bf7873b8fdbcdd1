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
. experiments/real/lib.sh
while [ $# -gt 0 ]; do
    common_option "$1" "${2:-}" && { shift 2; continue; }
    case "$1" in
        --pgbench-scale) PGSCALE="$2"; shift 2 ;;
        --seconds) SECONDS_RUN="$2"; shift 2 ;;
        *) echo "postgres.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
WAFSIM="$(real_wafsim "$WAFSIM")"
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$PGBIN/postgres" ] || { echo "postgres.sh: PostgreSQL's server not found (apt-get install postgresql)" >&2; exit 2; }
id postgres >/dev/null 2>&1 || { echo "postgres.sh: no postgres user (apt-get install postgresql creates it)" >&2; exit 2; }
work="$(mktemp -d)"
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

header="history	layout	pgbench_scale	seconds_run	transactions	$(window_header wal_device_bytes,db_device_bytes txn)"
emit "$header" new

for layout in $LAYOUTS; do
    log_layout "$layout"; waldir="$LOG_MNT/pg_wal"
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
    attach_run "$work" experiments/real/drive.toml --variant "$layout" "${HIST_ARGS[@]}" --export "$EXPORTS" --fs xfs --name postgres-sh --json "$work/window.json" -- sh "$work/run.sh"
    txns="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench.txt")"
    row="$HISTORY	$layout	$PGSCALE	$SECONDS_RUN	${txns:-?}	$(window_columns "$work" wal,db)"
    emit "$row"
done
