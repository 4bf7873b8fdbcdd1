"""examples/python runs as README says and draws its chart."""

import csv
import subprocess
import sys


def test_waf_vs_op_example(root, tmp_path):
    r = subprocess.run([sys.executable, str(root / "examples/python/waf_vs_op.py"), "--out-dir", str(tmp_path)], capture_output=True, text=True, check=True)
    png = (tmp_path / "waf_vs_op.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    rows = list(csv.DictReader(open(tmp_path / "waf_vs_op.csv")))
    waf = [float(r["waf"]) for r in rows]
    assert len(waf) == 5 and waf == sorted(waf, reverse=True)
    # Greedy GC under uniform random writes at 7% OP (docs/validation.md: about 8.1).
    assert 7.5 < waf[1] < 8.7
    assert "OP 7%: WAF" in r.stdout
