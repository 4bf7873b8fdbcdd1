#!/usr/bin/env bash
# The WiredTiger-like model against WiredTiger 11.3.1 (built from source by
# experiments/real/build-wiredtiger.sh), one pair: the same documents, requests, clock, cache,
# drive, scale and history through the model (`wafsim run experiments/real/pairs/wt-ycsb.toml`)
# and through the real engine, driven by experiments/real/wt-ycsb.c over WiredTiger's C API as
# MongoDB 6.0 lays out a collection and its `_id` index, on a real file system on the attached
# drive (`wafsim attach experiments/real/drive.toml --variant one-namespace`).
# Prints, per window, each level for both and the ratio model / real:
#   application  document bytes the clients sent (457 bytes a document on both sides);
#   store        bytes the engine wrote to its files (model: its file writes; real: what the
#                process wrote with write(2)/pwrite(2), /proc/self/io wchar, the last
#                checkpoint of close included), split into journal and data files;
#   file system  bytes the file system sent to the device (the drive's host bytes written);
#   media        bytes the drive programmed (its media bytes), and the drive's WAF.
# Windows: "run" (load and updates, from after mkfs and mount) and "updates" (the second, the
# documents already loaded: measure_from = "run" in the model, the drive's states around it).
#
# Usage (as root): experiments/real/pair-wt.sh [--records N] [--fs xfs] [--scale S] [--cache BYTES]
#                  [--rate R] [--history fresh|filled] [--out FILE]
#   --records N  documents loaded, then updates (default 100000: 45.7 MB of documents)
#   --fs FS      the real side's file system (default xfs)
#   --scale S    the drive at scale S of the full-size one (default 0.002)
#   --cache B    WiredTiger's cache, bytes (default 67108864)
#   --rate R     requests per second at full scale (default 10000, the catalog's central rate);
#                the engine's clock runs at R x S requests/s and the journal syncs every
#                100 ms / S of it, as the model scales its clock
#   --history H  fresh (mkfs discards a fresh drive) or filled (every LBA written once first)
#   --out FILE   the table as TSV too
# KEEP=1 keeps the work directory (the driver's full statistics).
set -euo pipefail
cd "$(dirname "$0")/../.."

RECORDS=100000; FS="xfs"; SCALE="0.002"; CACHE=67108864; RATE=10000; HISTORY="fresh"; OUT=""; WAFSIM="target/release/wafsim"; LAYOUTS=""
. experiments/real/lib.sh
while [ $# -gt 0 ]; do
    common_option "$1" "${2:-}" && { shift 2; continue; }
    case "$1" in
        --records) RECORDS="$2"; shift 2 ;;
        --fs) FS="$2"; shift 2 ;;
        --scale) SCALE="$2"; shift 2 ;;
        --cache) CACHE="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        *) echo "pair-wt.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
WAFSIM="$(real_wafsim "$WAFSIM")"
DRIVER="$(experiments/real/build-wiredtiger.sh --driver)"
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# The clock as the model scales it (parts/wiredtiger.rs store_clock, wt_config).
read -r CLOCK FLUSH_MS LOG_MAX < <(python3 -c "import sys; r, s = float(sys.argv[1]), min(float(sys.argv[2]), 1.0); print(r * s, round(100 / s), max(int(100e6 * s), 4096))" "$RATE" "$SCALE")
# WiredTiger refuses journal files under 100 KB.
[ "$LOG_MAX" -ge 102400 ] || { echo "pair-wt.sh: --scale $SCALE makes the journal files $LOG_MAX bytes; WiredTiger needs 100 KB or more" >&2; exit 2; }

echo "pair-wt.sh: model ..." >&2
pair_model "$work" experiments/real/pairs/wt-ycsb.toml wiredtiger "s/recordcount = 100000, operationcount = 100000/recordcount = $RECORDS, operationcount = $RECORDS/; s/^rate = 10000\$/rate = $RATE/; s/^wt_cache = \"64MiB\"\$/wt_cache = \"$CACHE\"/"

C="--home \$WAFSIM_MNT_DB/db --journal \$WAFSIM_MNT_DB/db/journal --records $RECORDS --value-bytes 457 --cache-bytes $CACHE --rate $CLOCK --checkpoint-secs 60 --flush-ms $FLUSH_MS --log-file-max $LOG_MAX --seed 1"
cat > "$work/run.sh" <<EOF
set -e
$(cap_function 0)
mkdir -p "\$WAFSIM_MNT_DB/db/journal"
"$DRIVER" --phase load $C > "$work/load.txt"
sync; cap "$work/before.json"
"$DRIVER" --phase run --ops $RECORDS --first-op $RECORDS $C > "$work/updates.txt"
sync; cap "$work/after.json"
EOF
echo "pair-wt.sh: WiredTiger on $FS ..." >&2
pair_attach "$work" "pair-wt-$$"

drive="$(window_columns "$work" db)"
python3 - "$work" "$RECORDS" "$FS" "$SCALE" "$HISTORY" "$OUT" "$drive" <<'PY'
import json, sys
sys.path.insert(0, "experiments/real")
from pair_table import print_table
work, records, fs, scale, history, out, drive = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
_, run_host, run_media, _, up_host, up_media, _, _ = drive.split("\t")

def stats(path):
    s = {}
    for line in open(path):
        name, _, value = line.rstrip("\n").rpartition("\t")
        if name:
            s[name] = int(value)
    return s

def real_store(s):
    log = s["log: log bytes written"]
    return {"store": s["process: wchar after close"], "store: journal": log,
            "store: data": s["process: wchar after close"] - log,
            "store: last checkpoint (close)": s["process: wchar after close"] - s["process: wchar before close"]}

load, up = stats(f"{work}/load.txt"), stats(f"{work}/updates.txt")
rl, ru = real_store(load), real_store(up)
real = {
    "run": {"application": 2 * records * 457, **{k: rl[k] + ru[k] for k in rl}, "file system": int(run_host), "media": int(run_media)},
    "updates": {"application": records * 457, **ru, "file system": int(up_host), "media": int(up_media)},
}
m = json.load(open(f"{work}/model.json"))
model = {}
for v in m["variants"]:
    window = "run" if v["name"] == "whole" else "updates"
    f, p = v["filesystems"][0], v["phases"][0]
    model[window] = {"application": f["file_write_bytes"], "store": f["store_write_bytes"], "file system": p["hbmw"], "media": p["mbmw"]}
    if window == "run":
        # The engine's shares are over its whole life: the split is given for the whole run.
        journal = f["metrics"]["journal share of file writes"] * f["store_write_bytes"]
        model[window].update({"store: journal": journal, "store: data": f["store_write_bytes"] - journal})
rows = [["window", "level", "model_bytes", "real_bytes", "model_per_app", "real_per_app", "model/real"]]
for window in ("run", "updates"):
    for level in ("application", "store", "store: journal", "store: data", "file system", "media"):
        if level not in model[window]:
            continue
        a, b = model[window][level], real[window][level]
        rows.append([window, level, int(a), b, f"{a / model[window]['application']:.3f}", f"{b / real[window]['application']:.3f}", f"{a / b:.3f}" if b else "n/a"])
    b = real[window]["store: last checkpoint (close)"]
    rows.append([window, "real: close's checkpoint", "", b, "", f"{b / real[window]['application']:.3f}", ""])
    a = model[window]["media"] / model[window]["file system"]
    b = real[window]["media"] / real[window]["file system"]
    rows.append([window, "drive WAF", "", "", f"{a:.3f}", f"{b:.3f}", f"{a / b:.3f}"])
title = f"WiredTiger-like model vs WiredTiger 11.3.1 on {fs}: {records} documents loaded + {records} updates; scale {scale}; history {history}"
print_table(title, rows, out)
PY
