#!/usr/bin/env python3
"""Write drive N's state document (what `wafsim waf` and `wafsim nvme --state` read) from the
control socket of a running `wafsim attach` or `wafsim serve`.

Usage: drive-state.py CONTROL N OUT   (CONTROL as in $WAFSIM_CONTROL: unix:PATH or HOST:PORT)
"""
import socket
import sys

control, drive, out = sys.argv[1], sys.argv[2], sys.argv[3]
if control.startswith("unix:"):
    s = socket.socket(socket.AF_UNIX)
    s.connect(control[len("unix:"):])
else:
    host, port = control.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
s.sendall(f"STATE {drive}\n".encode())
reply = b""
while chunk := s.recv(1 << 16):
    reply += chunk
text = reply.decode()
if text.startswith("ERR"):
    sys.exit(f"drive-state.py: {control}: {text.strip()}")
with open(out, "w") as f:
    f.write(text)
