#!/usr/bin/env python3
"""reg_stream.py SOCKET PREFIX ACKED [BIG]: registers PREFIXa0, PREFIXa1, ...
(plugin PREFIXp<i % 8>, type csi-node, probe none) one request at a time on
one control connection, until the connection breaks or the daemon answers an
error.  After each `ok' answer (the registration is committed) the alloc id
is appended to ACKED, unbuffered, so that a kill -9 of the daemon leaves in
ACKED exactly the registrations it acknowledged.  BIG: each carries 8
options of 1000 bytes (the WAL grows fast).  Exits 0 when the daemon went
away (an answer cut short included: not acknowledged), 1 on an error answer
(printed)."""
import json
import os
import socket
import sys

path, prefix, acked = sys.argv[1], sys.argv[2], sys.argv[3]
big = len(sys.argv) > 4 and sys.argv[4] == "BIG"
fd = os.open(acked, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(path)
except OSError as e:
    print(f"reg_stream: connect {path}: {e}", file=sys.stderr)
    sys.exit(0)
f = s.makefile("rb")
i = 0
while True:
    alloc = f"{prefix}a{i}"
    req = {"op": "register", "types": ["csi-node"], "name": f"{prefix}p{i % 8}",
           "alloc": alloc, "socket": f"/run/csi/{alloc}/csi.sock", "probe": "none"}
    if big:
        req["options"] = {f"k{j}": (alloc + "-") * (1000 // (len(alloc) + 1)) for j in range(8)}
    try:
        s.sendall(json.dumps(req).encode() + b"\n")
        line = f.readline()
    except OSError:
        sys.exit(0)
    if not line.endswith(b"\n"):
        # The daemon went away before the end of the answer (a kill in the
        # middle of a big one): not acknowledged.
        sys.exit(0)
    answer = json.loads(line)
    if not answer.get("ok"):
        print(f"reg_stream: {alloc}: {line.decode().strip()}", file=sys.stderr)
        sys.exit(1)
    os.write(fd, (alloc + "\n").encode())
    i += 1
