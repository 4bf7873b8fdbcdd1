"""The table every pair script of experiments/real prints: a title, then right-aligned numbers."""


def print_table(title, rows, out=""):
    """Print `rows` (the first is the header) under `# title`; write them as TSV to `out` too."""
    print(f"# {title}")
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(str(c).rjust(widths[i]) if i >= 2 else str(c).ljust(widths[i]) for i, c in enumerate(r)))
    if out:
        with open(out, "w") as fh:
            for r in rows:
                fh.write("\t".join(map(str, r)) + "\n")
