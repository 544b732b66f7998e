#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recorder.py LOG SOCKET...: listens on every SOCKET (made once it
listens) and, for each connection it accepts, appends two lines to LOG:
`SOCKET accepted' when it accepts it, and `SOCKET BYTES', the bytes the
peer sent before it closed (read for at most 2 s), when it closes.  The
accepted lines of one pass of its loop are written together, after every
listener that was ready in that pass was accepted from: once a line names
a connection, every connection made before it is named too.  A test that
must see no connection to a socket counts its accepted lines.  Runs until
killed."""
import os
import select
import socket
import sys

log, paths = sys.argv[1], sys.argv[2:]
listeners = {}
for p in paths:
    os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(p)
    s.listen(64)
    listeners[s.fileno()] = (s, p)
conns = {}  # fd -> [sock, path, bytes, deadline]
while True:
    fds = list(listeners) + list(conns)
    r, _, _ = select.select(fds, [], [], 0.2)
    now = __import__("time").monotonic()
    accepted = []
    for fd in r:
        if fd in listeners:
            s, p = listeners[fd]
            c, _ = s.accept()
            conns[c.fileno()] = [c, p, 0, now + 2]
            accepted.append(p)
            continue
        c = conns[fd]
        try:
            data = c[0].recv(65536)
        except OSError:
            data = b""
        if data:
            c[2] += len(data)
            continue
        c[3] = 0
    if accepted:
        with open(log, "a") as f:
            f.write("".join("%s accepted\n" % p for p in accepted))
    for fd in [f for f, c in conns.items() if c[3] <= now]:
        c = conns.pop(fd)
        with open(log, "a") as f:
            f.write("%s %d\n" % (c[1], c[2]))
        c[0].close()
