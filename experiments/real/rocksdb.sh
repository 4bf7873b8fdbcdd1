#!/usr/bin/env bash
# RocksDB's own db_bench (Debian rocksdb-tools 7.8.3) on a simulated drive, through real Linux
# file systems: the WAL and the tables on one namespace, on two namespaces without placement, on
# two namespaces with one FDP reclaim unit handle each, and on two dedicated drives
# (experiments/real/drive.toml). Each run reports the drive's WAF over two named windows, from
# the drive's own counters:
#   "run"       from after mkfs and mount until the file systems are unmounted (fill + overwrite);
#   "overwrite" the overwrite phase alone, the database already full (sync before and after;
#               `wafsim waf` over the drive states read from the control socket).
#
# Usage (as root): experiments/real/rocksdb.sh [options]
#   --fs "xfs ext4 btrfs"              file systems (default: xfs)
#   --layouts "one-namespace no-fdp fdp dedicated"   (default: all four)
#   --compaction "leveled universal"   db_bench --compaction_style 0 / 1 (default: leveled)
#   --discard "none mount fstrim"      no discard (the mount default), -o discard, or fstrim
#                                      every 10 s during the run (default: none)
#   --history "fresh filled"           the drive's history before mkfs: fresh, and mkfs discards
#                                      it (the tools' default); or filled, every LBA written once
#                                      (--precondition) and mkfs told not to discard, so the
#                                      drive holds it all valid until overwritten (default: fresh)
#   --num N                            keys (default 3000000; values of 400 bytes, so about
#                                      1.2 GB of user data on a 3.5 GiB namespace)
#   --scale S                          the drive at scale S of the 1.92 TB preset (default the
#                                      experiment's 0.002; XFS needs 300 MB per namespace, so
#                                      below 0.001 use ext4 or Btrfs)
#   --out FILE                         results as TSV (default: stdout only)
#   --wafsim PATH                      the wafsim binary (default: target/release/wafsim)
#
# Configuration: db_bench's defaults (RocksDB 7.8.3: 64 MiB write buffers, level-0 trigger 4,
# 10x level multiplier, buffered I/O) with compression off (the values are random bytes) and
# seed 1; the mkfs tools' defaults (they discard the whole device first) unless --history filled.
set -euo pipefail
cd "$(dirname "$0")/../.."

HISTORY="fresh"; FS="xfs"; LAYOUTS="one-namespace no-fdp fdp dedicated"; COMPACTION="leveled"; DISCARD="none"
NUM=3000000; OUT=""; WAFSIM="target/release/wafsim"; SCALE=""
. experiments/real/lib.sh
while [ $# -gt 0 ]; do
    common_option "$1" "${2:-}" && { shift 2; continue; }
    case "$1" in
        --fs) FS="$2"; shift 2 ;;
        --compaction) COMPACTION="$2"; shift 2 ;;
        --discard) DISCARD="$2"; shift 2 ;;
        --num) NUM="$2"; shift 2 ;;
        --scale) SCALE="$2"; shift 2 ;;
        *) echo "rocksdb.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
WAFSIM="$(real_wafsim "$WAFSIM")"
command -v db_bench >/dev/null || { echo "rocksdb.sh: db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

header="scale	history	fs	layout	compaction	discard	keys	user_bytes	$(window_header wal_device_bytes,db_device_bytes overwrite)"
emit "$header" new

for hist in $HISTORY; do for fs in $FS; do for layout in $LAYOUTS; do for comp in $COMPACTION; do for disc in $DISCARD; do
    case "$comp" in leveled) style=0 ;; universal) style=1 ;; *) echo "unknown compaction $comp" >&2; exit 2 ;; esac
    mount_opts=""; [ "$disc" = mount ] && mount_opts="discard"
    log_layout "$layout"; wal="$LOG_MNT/wal"
    drives="$(layout_drives "$layout" 2)"
    common="--num=$NUM --value_size=400 --compression_type=none --seed=1 --compaction_style=$style --db=\$WAFSIM_MNT_DB/db --wal_dir=$wal --statistics=0"
    # The inner script: fill, sync, capture, overwrite, sync, capture; fstrim every 10 s when asked.
    cat > "$work/run.sh" <<EOF
set -e
$(cap_function "$drives")
if [ "$disc" = fstrim ]; then
    ( while sleep 10; do for m in \$(env | sed -n 's/^WAFSIM_MNT_[A-Z0-9_]*=//p'); do fstrim "\$m" || true; done; done ) &
    trimmer=\$!
fi
db_bench --benchmarks=fillrandom $common > "$work/fill.txt"
sync; cap "$work/before.json"
db_bench --benchmarks=overwrite --use_existing_db=1 $common > "$work/overwrite.txt"
sync; cap "$work/after.json"
if [ -n "\${trimmer:-}" ]; then kill \$trimmer; fi
EOF
    rm -f "$work"/*.json
    args=(experiments/real/drive.toml --variant "$layout" --export "$EXPORTS" --fs "$fs" --name rocksdb-sh --json "$work/window.json")
    [ -n "$mount_opts" ] && args+=(--mount-options "$mount_opts")
    [ -n "$SCALE" ] && args+=(--scale "$SCALE")
    history_args "$hist" "$fs"; args+=("${HIST_ARGS[@]}")
    echo "rocksdb.sh: $hist $fs $layout $comp discard=$disc ..." >&2
    attach_run "$work" "${args[@]}" -- sh "$work/run.sh"
    # User bytes: fill and overwrite, each key (16 bytes) with its value (400 bytes) once.
    row="${SCALE:-0.002}	$hist	$fs	$layout	$comp	$disc	$NUM	$((2 * NUM * 416))	$(window_columns "$work" wal,db)"
    emit "$row"
done; done; done; done; done
