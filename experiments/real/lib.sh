# What the scripts of experiments/real share (sourced, not run). Each script attaches the drive,
# runs the software in an inner script that captures the drive's state around its measured
# phase, and prints one TSV row per run from `wafsim attach --json` and those captures.

# The options every script takes, into LAYOUTS, HISTORY, OUT and WAFSIM (-h prints the
# script's header comment). Fails when $1 is not one of them.
common_option() {
    case "$1" in
        --layouts) LAYOUTS="$2" ;;
        --history) HISTORY="$2" ;;
        --out) OUT="$2" ;;
        --wafsim) WAFSIM="$2" ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) return 1 ;;
    esac
}

# Print a TSV line and append it to OUT when one is given ("new" as $2: start OUT anew).
emit() {
    echo "$1"
    if [ -n "$OUT" ]; then
        if [ "${2:-}" = new ]; then echo "$1" > "$OUT"; else echo "$1" >> "$OUT"; fi
    fi
}

# Where a layout of experiments/real/drive.toml puts the log (WAL, journal, pg_wal) beside the
# data: EXPORTS to attach, and LOG_MNT, the log's mount point as the inner script names it.
log_layout() {
    if [ "$1" = one-namespace ]; then EXPORTS="db"; LOG_MNT='$WAFSIM_MNT_DB'; else EXPORTS="wal,db"; LOG_MNT='$WAFSIM_MNT_WAL'; fi
}

# `wafsim attach` with the given arguments (WORK first), its stderr kept in WORK/attach.err and
# shown, with the ends of the inner script's outputs (WORK/*.txt, WORK/*.log), when it fails.
attach_run() {
    local work="$1"; shift
    "$WAFSIM" attach "$@" 2> "$work/attach.err" || { cat "$work/attach.err" >&2; tail -n 20 "$work"/*.txt "$work"/*.log >&2 2>/dev/null || true; exit 1; }
}

# The wafsim binary, checked and made absolute (inner scripts run elsewhere).
real_wafsim() {
    [ -x "$1" ] || { echo "$(basename "$0"): $1 not found: cargo build --release first, or --wafsim PATH" >&2; exit 2; }
    realpath "$1"
}

# The drives of a layout of experiments/real/drive.toml or four-namespaces.toml ("0", or one
# per namespace when dedicated).
layout_drives() {
    local layout="$1" namespaces="$2"
    if [ "$layout" = dedicated ]; then seq -s ' ' 0 $((namespaces - 1)); else echo 0; fi
}

# The shell function an inner script uses to save each drive's state to PREFIX-driveN.json.
# Args: the drives (as layout_drives prints them).
cap_function() {
    echo "cap() { for d in $1; do python3 \"$PWD/experiments/real/drive-state.py\" \"\$WAFSIM_CONTROL\" \$d \"\$1-drive\$d.json\"; done; }"
}

# The measured columns of a run, tab-separated: bytes each block device wrote (in the order of
# EXPORTS, comma-separated), the drives' host and media bytes and WAF over the attachment's
# window, the same over the phase (summed over the drives), and the window's seconds.
# Args: work dir, exports. The phase's captures are WORK/before.json-driveN.json and
# WORK/after.json-driveN.json (cap_function).
window_columns() {
    python3 - "$1" "$2" <<'PY'
import glob, json, sys
work, exports = sys.argv[1], sys.argv[2].split(",")
w = json.load(open(f"{work}/window.json"))
# The phase from the drive states captured around it, exactly as the drive counts (`wafsim waf`
# on the same files agrees: exactly through FDP statistics, to 512,000 bytes per capture
# through SMART data units).
def media(c):
    return c["host_units"] + c["gc_units"] + c["pad_units"] + c.get("fold_units", 0) - c.get("uncounted_slc_units", 0)
oh = om = 0
for b in sorted(glob.glob(f"{work}/before.json-drive*.json")):
    before, after = json.load(open(b)), json.load(open(b.replace("before.json", "after.json")))
    h = after["counters"]["host_write_bytes"] - before["counters"]["host_write_bytes"]
    m = (media(after["counters"]) - media(before["counters"])) * after["mapping_unit"]
    oh, om = oh + h, om + m
    # Per drive on stderr (the row sums the drives of a dedicated layout).
    d = b.rsplit("drive", 1)[1].removesuffix(".json")
    run = w["drives"][int(d)]
    print(f"  drive {d}: run WAF {run['media_bytes'] / max(run['host_write_bytes'], 1):.4f}, phase WAF {m / max(h, 1):.4f} ({h} host bytes)", file=sys.stderr)
host = sum(d["host_write_bytes"] for d in w["drives"])
media = sum(d["media_bytes"] for d in w["drives"])
dev = {d["export"]: d["write_bytes"] for d in w["devices"]}
cols = [dev.get(e, 0) for e in exports]
cols += [host, media, f"{media / host:.4f}" if host else "n/a", oh, om, f"{om / oh:.4f}" if oh else "n/a", f"{w['seconds']:.0f}"]
print("\t".join(map(str, cols)))
PY
}

# The header of window_columns' columns. Args: device column names (comma-separated), phase name.
window_header() {
    local devs="${1//,/	}"
    echo "$devs	run_host_bytes	run_media_bytes	run_waf	${2}_host_bytes	${2}_media_bytes	${2}_waf	seconds"
}

# The attach options of a drive history, in HIST_ARGS: fresh (mkfs discards the fresh drive,
# the tools' default) or filled (every LBA written once, `--precondition`, and mkfs told not to
# discard, so the drive holds it all valid until the file system overwrites it).
# Args: history, file system.
history_args() {
    case "$1" in
        fresh) HIST_ARGS=() ;;
        filled) HIST_ARGS=(--precondition --mkfs-options "$([ "$2" = ext4 ] && echo "-E nodiscard" || echo "-K")") ;;
        *) echo "$(basename "$0"): unknown history $1 (fresh, filled)" >&2; exit 2 ;;
    esac
}

# A pair's model half (experiments/real/pair-*.sh): the pair's experiment TOML with the sed
# script EDITS applied, its history's counterpart when HISTORY is filled (every LBA written
# once, mkfs not discarding, under the store's `[phase.kv.STORE]` tables), run at SCALE into
# WORK/model.json. Args: work dir, experiment, store table name (lsm, wiredtiger), sed script.
pair_model() {
    local work="$1" toml="$2" store="$3" edits="$4"
    sed "$edits" "$toml" > "$work/model.toml"
    if [ "$HISTORY" = filled ]; then
        sed -i "s/^precondition = false/precondition = true/" "$work/model.toml"
        if grep -q '^\[phase.kv.fs\]$' "$work/model.toml"; then
            sed -i "s/^\[\(variant.\)\{0,1\}phase.kv.fs\]\$/&\nmkfs_trim = false/" "$work/model.toml"
        else
            sed -i "s/^\[phase.kv.$store\]\$/[phase.kv.fs]\nmkfs_trim = false\n[phase.kv.$store]/; s/^\[variant.phase.kv.$store\]\$/[variant.phase.kv.fs]\nmkfs_trim = false\n[variant.phase.kv.$store]/" "$work/model.toml"
        fi
    fi
    "$WAFSIM" run "$work/model.toml" --scale "$SCALE" --json > "$work/model.json" 2> "$work/model.err" || { cat "$work/model.err" >&2; exit 1; }
}

# A pair's real half: WORK/run.sh under `wafsim attach` of drive.toml's one-namespace variant
# (export db), FS on it, at SCALE, from HISTORY. Args: work dir, attachment name.
pair_attach() {
    local work="$1" name="$2" args
    args=(experiments/real/drive.toml --variant one-namespace --export db --fs "$FS" --name "$name" --scale "$SCALE" --json "$work/window.json")
    history_args "$HISTORY" "$FS"; args+=("${HIST_ARGS[@]}")
    attach_run "$work" "${args[@]}" -- sh "$work/run.sh"
}
