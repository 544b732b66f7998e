#!/usr/bin/env python3
"""hang_many.py PATH: a plugin that is stuck, for many registrations at once.
Listens on PATH (backlog 4096), accepts every connection at once and never
answers: what a client sends is read and dropped, and a connection is closed
only when the client closes it (so the probes of thousands of registrations
that share PATH never fill a backlog nor this process's descriptors).
Raises its RLIMIT_NOFILE to the hard limit.  Writes PATH only once it
listens; runs until killed."""
import os
import resource
import selectors
import socket
import sys

path = sys.argv[1]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if os.path.exists(path):
    os.unlink(path)
tmp = path + ".tmp"
if os.path.exists(tmp):
    os.unlink(tmp)
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(tmp)
ls.listen(4096)
ls.setblocking(False)
os.rename(tmp, path)
sel = selectors.DefaultSelector()
sel.register(ls, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if s is ls:
            while True:
                try:
                    c, _ = ls.accept()
                except (BlockingIOError, InterruptedError):
                    break
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ)
            continue
        try:
            data = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            data = b""
        if not data:
            sel.unregister(s)
            s.close()
