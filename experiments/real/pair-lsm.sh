#!/usr/bin/env bash
# The LSM model against RocksDB's own db_bench (Debian rocksdb-tools 7.8.3), one pair: the same
# request stream, store sizes, drive, scale and history through the model (`wafsim run
# experiments/real/pairs/lsm-dbbench.toml`) and through the real engine on a real file system
# on the attached drive (`wafsim attach experiments/real/drive.toml --variant one-namespace`).
# Prints, per window, each level for both and the ratio model / real:
#   application  bytes the clients sent: keys and values (model: 23 + 393 bytes a put; real:
#                16 + 400; both 416);
#   store        bytes the engine wrote to its files (model: the store's file writes; real:
#                RocksDB's statistics: WAL bytes with their 7-byte record headers, flush and
#                compaction output);
#   file system  bytes the file system sent to the device (the drive's host bytes written);
#   media        bytes the drive programmed (its media bytes), and the drive's WAF.
# Windows: "run" (both db_bench runs, from after mkfs and mount) and "overwrite" (the second,
# the store already loaded: measure_from = "run" in the model, the drive's states around it).
#
# Usage (as root): experiments/real/pair-lsm.sh [--num N] [--compaction leveled|universal] [--fs xfs] [--scale S] [--history fresh|filled] [--out FILE]
#   --num N      keys loaded, then updates (default 1000000: 416 MB a run)
#   --compaction C  leveled (default) or universal (RocksDB's universal compaction with its
#                defaults on both sides: size ratio 1, min merge width 2, size amplification
#                200%, no trivial move; the level options below do not apply)
#   --fs FS      the real side's file system (default xfs)
#   --model-fs M the model's: conventional (default; ext4/XFS-like) or btrfs (Btrfs-like)
#   --scale S    the drive and the store's sizes at scale S of the full-size ones (default 0.002)
#   --history H  fresh (mkfs discards a fresh drive) or filled (every LBA written once first)
#   --out FILE   the table as TSV too
#   --bandwidth B, --client-rate C  the model's background bandwidth and client speed, bytes/s
#                (default: measured from the real half's own statistics, see below)
#
# Configuration on both sides (leveled): leveled compaction with dynamic level bytes, min-overlapping-
# ratio picking, level-0 trigger 4, multiplier 10, 2 write buffers, 2 background jobs, no
# compression, seed 1; memtable, target file and level-base sizes are RocksDB's defaults times
# the scale, rounded down to 4 KiB blocks and at least 64 KiB (as the model scales them).
set -euo pipefail
cd "$(dirname "$0")/../.."

NUM=1000000; COMPACTION="leveled"; BANDWIDTH=""; CLIENT_RATE=""; FS="xfs"; MODEL_FS="conventional"; SCALE="0.002"; HISTORY="fresh"; OUT=""; WAFSIM="target/release/wafsim"; LAYOUTS=""
. experiments/real/lib.sh
while [ $# -gt 0 ]; do
    common_option "$1" "${2:-}" && { shift 2; continue; }
    case "$1" in
        --num) NUM="$2"; shift 2 ;;
        --compaction) COMPACTION="$2"; shift 2 ;;
        --fs) FS="$2"; shift 2 ;;
        --model-fs) MODEL_FS="$2"; shift 2 ;;
        --scale) SCALE="$2"; shift 2 ;;
        --bandwidth) BANDWIDTH="$2"; shift 2 ;;
        --client-rate) CLIENT_RATE="$2"; shift 2 ;;
        *) echo "pair-lsm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
WAFSIM="$(real_wafsim "$WAFSIM")"
command -v db_bench >/dev/null || { echo "pair-lsm.sh: db_bench not found (apt-get install rocksdb-tools)" >&2; exit 2; }
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# The store's sizes as the model scales them (parts/lsm.rs scale_sizes).
size() { python3 -c "import sys; b, s = int(sys.argv[1]), float(sys.argv[2]); print(b if s >= 1 else max(int(b * s) // 4096 * 4096, 16 * 4096))" "$1" "$SCALE"; }
MEMTABLE=$(size 67108864); TARGET=$(size 67108864); BASE=$(size 268435456)

case "$COMPACTION" in
    leveled) STYLE="--compaction_style=0 --level_compaction_dynamic_level_bytes=true --compaction_pri=3"; DUMP="" ;;
    universal) STYLE="--compaction_style=1 --level_compaction_dynamic_level_bytes=false"; DUMP="--stats_dump_period_sec=1" ;;
    *) echo "pair-lsm.sh: --compaction $COMPACTION: leveled or universal" >&2; exit 2 ;;
esac
case "$MODEL_FS" in conventional|btrfs) ;; *) echo "pair-lsm.sh: --model-fs $MODEL_FS: conventional or btrfs" >&2; exit 2 ;; esac
# The write controller's byte limits as the model scales them (RocksDB's defaults: 64 GiB soft,
# 256 GiB hard); db_bench gets the same, and its own default delayed_write_rate (8 MiB/s).
SOFT=$(size 68719476736); HARD=$(size 274877906944)

# The real half.
C="--num=$NUM --key_size=16 --value_size=400 --compression_type=none --seed=1 --statistics=1 --db=\$WAFSIM_MNT_DB/db --wal_dir=\$WAFSIM_MNT_DB/wal"
C="$C --write_buffer_size=$MEMTABLE --max_write_buffer_number=2 --min_write_buffer_number_to_merge=1 --level0_file_num_compaction_trigger=4"
C="$C --max_bytes_for_level_base=$BASE --max_bytes_for_level_multiplier=10 --target_file_size_base=$TARGET --target_file_size_multiplier=1"
C="$C --num_levels=7 --max_background_jobs=2 --subcompactions=1 $STYLE"
C="$C --soft_pending_compaction_bytes_limit=$SOFT --hard_pending_compaction_bytes_limit=$HARD --delayed_write_rate=8388608"
# db_bench's waitforcompaction waits while rocksdb.compaction-pending is set, which under
# universal compaction stays set when the sorted runs are exactly at the trigger and none can
# be merged (the L0 score is runs / trigger = 1, NeedsCompaction is true, the picker finds
# nothing: "Compaction nothing to do"), so it never returns. bench() runs one db_bench (under
# universal compaction with a statistics dump into its LOG every second); when
# it has waited twice on compaction-pending alone while every flush and compaction it started
# has finished and the picker's last word is "nothing to do", it is stopped and the
# statistics RocksDB dumps into its LOG every second stand for the `stats` benchmark's.
cat > "$work/run.sh" <<EOF
set -e
$(cap_function 0)
bench() {
    local out="\$1"; shift
    local log="\$WAFSIM_MNT_DB/db/LOG"
    # Line-buffered, so waitforcompaction's lines are seen as they come.
    stdbuf -oL db_bench "\$@" $C $DUMP > "\$out" &
    local pid=\$!
    while kill -0 \$pid 2>/dev/null; do
        sleep 1
        [ "\$(grep -c 'waitforcompaction(.*): active(rocksdb.compaction-pending)' "\$out")" -ge 2 ] || continue
        tail -1 "\$out" | grep -q 'active(rocksdb.compaction-pending)' || continue
        python3 - "\$log" <<'QUIET' || continue
import sys
t = open(sys.argv[1], errors="replace").read()
started = t.count('"event": "compaction_started"') + t.count('"event": "flush_started"')
finished = t.count('"event": "compaction_finished"') + t.count('"event": "flush_finished"')
last_pick = max(t.rfind("Compaction nothing to do"), t.rfind('"event": "compaction_started"'))
sys.exit(0 if started == finished and t.rfind("Compaction nothing to do") == last_pick > 0 else 1)
QUIET
        sleep 2
        kill \$pid; wait \$pid || true
        echo "pair-lsm.sh: compaction quiet with compaction-pending set (universal at its trigger); stopped db_bench, statistics from its LOG" >&2
        python3 "$PWD/experiments/real/rocksdb_log_stats.py" "\$log" >> "\$out"
        return 0
    done
    wait \$pid
}
bench "$work/fill.txt" --benchmarks=filluniquerandom,waitforcompaction,stats
sync; cap "$work/before.json"
bench "$work/overwrite.txt" --benchmarks=overwrite,waitforcompaction,stats --use_existing_db=1
sync; cap "$work/after.json"
EOF
echo "pair-lsm.sh: db_bench on $FS ..." >&2
# One attachment per run of the script (the suite runs two pairs at once).
pair_attach "$work" "pair-lsm-$$"

# The model's two speeds are the machine's, read from the real half's own statistics (not fitted
# to any of its byte counts): a flush or compaction job's read + write bytes per second of its
# run time (the Sum row of RocksDB's compaction stats), and the clients' speed while not
# stalled (log bytes over the benchmark's time less its stall time). --bandwidth/--client-rate
# set them instead.
read -r BW_MEASURED CLIENT_MEASURED < <(python3 experiments/real/rocksdb_speeds.py "$work/fill.txt" "$work/overwrite.txt")
BW="${BANDWIDTH:-$BW_MEASURED}"; CLIENT="${CLIENT_RATE:-$CLIENT_MEASURED}"
echo "pair-lsm.sh: background bandwidth $BW B/s, client rate $CLIENT B/s (measured: $BW_MEASURED, $CLIENT_MEASURED)" >&2

# The model's half: the pair's experiment with this N and these speeds.
echo "pair-lsm.sh: model ..." >&2
pair_model "$work" experiments/real/pairs/lsm-dbbench.toml lsm "s/recordcount = 1000000, operationcount = 1000000/recordcount = $NUM, operationcount = $NUM/; s/^filesystem = \"conventional\"/filesystem = \"$MODEL_FS\"/; s/^compaction = \"leveled\"/compaction = \"$COMPACTION\"/; s|^background_bandwidth = .*|background_bandwidth = \"${BW}B/s\"\nclient_rate = \"${CLIENT}B/s\"|"

# The drive's bytes over both windows, as every script of experiments/real reads them.
drive="$(window_columns "$work" db)"
python3 - "$work" "$NUM" "$FS" "$SCALE" "$HISTORY" "$OUT" "$MODEL_FS" "$drive" "$COMPACTION" <<'PY'
import json, re, sys
sys.path.insert(0, "experiments/real")
from pair_table import print_table
work, num, fs, scale, history, out, model_fs, drive, compaction = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
# window_columns: device bytes, run host/media/WAF, phase (overwrite) host/media/WAF, seconds.
_, run_host, run_media, _, over_host, over_media, _, _ = drive.split("\t")

def tickers(path):
    t = {}
    for line in open(path):
        m = re.match(r"^(rocksdb\.[a-z0-9.]+) COUNT : (\d+)$", line.strip())
        if m:
            t[m.group(1)] = int(m.group(2))
    return t

def store_bytes(t):
    # The WAL file holds each write batch (wal.bytes) behind a 7-byte record header.
    return t["rocksdb.wal.bytes"] + 7 * t["rocksdb.write.wal"] + t["rocksdb.flush.write.bytes"] + t["rocksdb.compact.write.bytes"]

fill, over = tickers(f"{work}/fill.txt"), tickers(f"{work}/overwrite.txt")
real = {
    "run": {"application": 2 * num * 416, "store": store_bytes(fill) + store_bytes(over), "file system": int(run_host), "media": int(run_media)},
    "overwrite": {"application": num * 416, "store": store_bytes(over), "file system": int(over_host), "media": int(over_media)},
}
m = json.load(open(f"{work}/model.json"))
model = {}
for v in m["variants"]:
    window = "run" if v["name"] == "whole" else "overwrite"
    f, p = v["filesystems"][0], v["phases"][0]
    model[window] = {"application": f["file_write_bytes"], "store": f["store_write_bytes"], "file system": p["hbmw"], "media": p["mbmw"]}

rows = [["window", "level", "model_bytes", "real_bytes", "model_per_app", "real_per_app", "model/real"]]
for window in ("run", "overwrite"):
    for level in ("application", "store", "file system", "media"):
        a, b = model[window][level], real[window][level]
        rows.append([window, level, a, b, f"{a / model[window]['application']:.3f}", f"{b / real[window]['application']:.3f}", f"{a / b:.3f}" if b else "n/a"])
    if window == "run":
        # What the store wrote, by kind: the model's own counters against RocksDB's statistics.
        mm = {k: v for k, v in m["variants"][0]["filesystems"][0]["metrics"].items()}
        t = {k: fill.get(k, 0) + over.get(k, 0) for k in set(fill) | set(over)}
        for kind, a, b in [("store: log", mm["store log bytes"], t["rocksdb.wal.bytes"] + 7 * t["rocksdb.write.wal"]),
                           ("store: flush", mm["store flush bytes"], t["rocksdb.flush.write.bytes"]),
                           ("store: compaction", mm["store compaction write bytes"], t["rocksdb.compact.write.bytes"])]:
            rows.append([window, kind, int(a), b, f"{a / model[window]['application']:.3f}", f"{b / real[window]['application']:.3f}", f"{a / b:.3f}" if b else "n/a"])
    a = model[window]["media"] / model[window]["file system"]
    b = real[window]["media"] / real[window]["file system"]
    rows.append([window, "drive WAF", "", "", f"{a:.3f}", f"{b:.3f}", f"{a / b:.3f}"])
print_table(f"LSM {compaction} on the {model_fs} model vs RocksDB 7.8.3 db_bench on {fs}: {num} keys filluniquerandom + {num} overwrite; scale {scale}; history {history}", rows, out)
PY
