#!/usr/bin/env bash
# Four real RocksDB instances (Debian rocksdb-tools 7.8.3 db_bench), one per namespace, each on
# its own XFS, running at once on one simulated drive: without placement, with one FDP reclaim
# unit handle per namespace, and on four dedicated drives (experiments/real/four-namespaces.toml;
# reference section 4's shape with RocksDB as the database, since Aerospike does not run here).
# The instances differ as section 4's do, in how they write: values of 256, 512, 1024 and 2048
# bytes, the same user bytes each (about 40% of a namespace), so they write at different rates
# and their data ages differently. Each fills its database (fillrandom), then overwrites every
# key once (overwrite); the drive's WAF is reported over two named windows from its counters:
#   "run"        from after mkfs and mount until the file systems are unmounted;
#   "overwrite"  from when all four have filled (each waits for the others; sync) until all four
#                have overwritten (sync).
#
# Usage (as root): experiments/real/four-rocksdb.sh [--layouts "no-fdp fdp dedicated"]
#                  [--history fresh|filled] [--bytes B] [--out FILE] [--wafsim PATH]
#   --history   fresh: mkfs discards the fresh drive (the tools' default); filled: every LBA
#               written once first and mkfs told not to discard (default: fresh)
#   --bytes B   user bytes per instance (default 800000000)
set -euo pipefail
cd "$(dirname "$0")/../.."

LAYOUTS="no-fdp fdp dedicated"; HISTORY=fresh; BYTES=800000000; OUT=""; WAFSIM="target/release/wafsim"
. experiments/real/lib.sh
while [ $# -gt 0 ]; do
    common_option "$1" "${2:-}" && { shift 2; continue; }
    case "$1" in
        --bytes) BYTES="$2"; shift 2 ;;
        *) echo "four-rocksdb.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
WAFSIM="$(real_wafsim "$WAFSIM")"
command -v db_bench >/dev/null || { echo "four-rocksdb.sh: db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

header="history	layout	bytes_per_instance	$(window_header device_bytes_db1,device_bytes_db2,device_bytes_db3,device_bytes_db4 overwrite)"
emit "$header" new

for layout in $LAYOUTS; do
    drives="$(layout_drives "$layout" 4)"
    cat > "$work/run.sh" <<EOF
set -e
$(cap_function "$drives")
# One instance: fill, wait for all four to have filled, overwrite.
instance() {
    i=\$1; value=\$2; dir=\$3
    num=\$(( $BYTES / (value + 16) ))
    common="--num=\$num --value_size=\$value --compression_type=none --seed=\$i --db=\$dir/db --statistics=0"
    db_bench --benchmarks=fillrandom \$common > "$work/fill\$i.txt"
    touch "$work/filled\$i"
    while [ \$(ls "$work"/filled* | wc -l) -lt 4 ] || [ ! -e "$work/go" ]; do sleep 0.2; done
    db_bench --benchmarks=overwrite --use_existing_db=1 \$common > "$work/overwrite\$i.txt"
}
instance 1 256 "\$WAFSIM_MNT_DB1" & p1=\$!
instance 2 512 "\$WAFSIM_MNT_DB2" & p2=\$!
instance 3 1024 "\$WAFSIM_MNT_DB3" & p3=\$!
instance 4 2048 "\$WAFSIM_MNT_DB4" & p4=\$!
while [ \$(ls "$work"/filled* 2>/dev/null | wc -l) -lt 4 ]; do sleep 0.2; done
sync; cap "$work/before.json"; touch "$work/go"
wait \$p1 \$p2 \$p3 \$p4
sync; cap "$work/after.json"
EOF
    rm -f "$work"/*.json "$work"/filled* "$work"/go
    echo "four-rocksdb.sh: $layout ..." >&2
    history_args "$HISTORY" xfs
    attach_run "$work" experiments/real/four-namespaces.toml --variant "$layout" --fs xfs --name four-rocksdb "${HIST_ARGS[@]}" --json "$work/window.json" -- sh "$work/run.sh"
    row="$HISTORY	$layout	$BYTES	$(window_columns "$work" db1,db2,db3,db4)"
    emit "$row"
done
