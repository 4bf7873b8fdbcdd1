#!/usr/bin/env python3
"""How much of what a program writes the page cache merges before it reaches the device.

Reads an strace log of the program's writes and syncs,
    strace -f -qq -e trace=openat,pwrite64,write,fsync,fdatasync,unlink -o TRACE PROGRAM ...
and counts, per file, the 4 KiB blocks each pwrite64/write touches and how many of them were
already written since that file's last fsync/fdatasync: a block written again while still
dirty is sent to the device once (unless writeback ran in between, which a run shorter than
the kernel's dirty_expire_centisecs, 30 s, between syncs rarely sees). Deleted files' dirty
blocks are dropped too (counted apart).

    python3 experiments/real/rewrites-before-sync.py TRACE
"""
import collections
import re
import sys

BLOCK = 4096


def main(path):
    fd_path = {}
    pending_open = {}
    dirty = collections.defaultdict(set)
    written = collections.Counter()
    again = collections.Counter()
    dropped = 0
    offsets = collections.defaultdict(int)  # write(2) appends at the fd's position
    for line in open(path, errors="replace"):
        pid, _, rest = line.partition(" ")
        rest = rest.lstrip()
        m = re.match(r'openat\(AT_FDCWD, "([^"]+)".*?(?:\) += (\d+)|<unfinished \.\.\.>)', rest)
        if m:
            if m.group(2):
                fd_path[int(m.group(2))] = m.group(1)
            else:
                pending_open[pid] = m.group(1)
            continue
        m = re.match(r"<\.\.\. openat resumed>.*\) += (\d+)", rest)
        if m and pid in pending_open:
            fd_path[int(m.group(1))] = pending_open.pop(pid)
            continue
        m = re.match(r'(pwrite64|write)\((\d+), ".*?"(?:\.\.\.)?, (\d+)(?:, (\d+))?', rest)
        if m:
            fd, n = int(m.group(2)), int(m.group(3))
            name = fd_path.get(fd)
            if name is None or fd <= 2:
                continue
            off = int(m.group(4)) if m.group(4) is not None else offsets[fd]
            offsets[fd] = off + n
            blocks = range(off // BLOCK, (off + n + BLOCK - 1) // BLOCK)
            kind = kind_of(name)
            written[kind] += len(blocks) * BLOCK
            again[kind] += sum(BLOCK for b in blocks if b in dirty[name])
            dirty[name].update(blocks)
            continue
        m = re.match(r"f(?:data)?sync\((\d+)", rest)
        if m and int(m.group(1)) in fd_path:
            dirty[fd_path[int(m.group(1))]].clear()
            continue
        m = re.match(r'unlink\("([^"]+)"', rest)
        if m:
            dropped += len(dirty.pop(m.group(1), ())) * BLOCK
    total, merged = sum(written.values()), sum(again.values())
    print(f"blocks written {total} B; into blocks still dirty since their file's last sync {merged} B "
          f"({merged / max(total, 1):.1%}); dirty blocks of deleted files {dropped} B")
    for kind, b in written.most_common():
        print(f"  {kind}: {b} B written, {again[kind]} B into dirty blocks ({again[kind] / max(b, 1):.1%})")


def kind_of(name):
    """A file's kind: its name without the numbers that count files of one kind."""
    base = name.rsplit("/", 1)[-1]
    return re.sub(r"\d+", "N", base)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
