#!/usr/bin/env python3
"""hold_conns.py SOCKET N STATUS_FILE [SEND]: opens N connections to the
control socket (sending SEND, a request line, on each when given) and holds
them until SIGTERM, reading what the daemon says.  Every 0.1 s STATUS_FILE is
rewritten (atomically) with one line
    connected=C open=O closed=X answered=A refused=R
C: connects that succeeded; O: still open; X: closed by the daemon;
A: connections that got at least one line; R: those whose first line is an
`unavailable' error saying "too many clients".  The first lines go to
STATUS_FILE.lines, one per connection that got one."""
import json
import os
import select
import signal
import socket
import sys
import time

path, n, status = sys.argv[1], int(sys.argv[2]), sys.argv[3]
send = sys.argv[4].encode() + b"\n" if len(sys.argv) > 4 else b""
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
conns, bufs, first, closed = [], {}, {}, set()
for _ in range(n):
    # A full backlog (the daemon is busy draining it) answers EAGAIN at
    # once: retry for up to 20 s before counting the connect as failed.
    s, deadline = None, time.monotonic() + 20
    while s is None and time.monotonic() < deadline:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except (BlockingIOError, InterruptedError):
            s.close()
            s = None
            time.sleep(0.05)
        except OSError:
            s.close()
            s = None
            break
    if s is None:
        continue
    if send:
        try:
            s.sendall(send)
        except OSError:
            pass
    s.setblocking(False)
    conns.append(s)
    bufs[s.fileno()] = b""

poller = select.poll()
for s in conns:
    poller.register(s, select.POLLIN)
by_fd = {s.fileno(): s for s in conns}
while not stop:
    for fd, _ in poller.poll(100):
        s = by_fd[fd]
        try:
            data = s.recv(65536)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            closed.add(fd)
            poller.unregister(fd)
            continue
        bufs[fd] += data
        if fd not in first and b"\n" in bufs[fd]:
            first[fd] = bufs[fd].split(b"\n", 1)[0].decode(errors="replace")
    refused = 0
    for line in first.values():
        try:
            o = json.loads(line)
            if o.get("error", {}).get("code") == "unavailable" and \
                    "too many clients" in o["error"].get("message", ""):
                refused += 1
        except ValueError:
            pass
    tmp = status + ".tmp"
    with open(tmp, "w") as f:
        f.write("connected=%d open=%d closed=%d answered=%d refused=%d\n" %
                (len(conns), len(conns) - len(closed), len(closed), len(first), refused))
    os.replace(tmp, status)
    with open(tmp, "w") as f:
        f.write("".join(l + "\n" for l in first.values()))
    os.replace(tmp, status + ".lines")
for s in conns:
    s.close()
