#!/usr/bin/env python3
"""echo_conn.py serve SOCKET | hold PATH STATUS_FILE

serve: a stand-in plugin that echoes every line it gets, on each connection
(a thread each), until SIGTERM.

hold: connects once to PATH (e.g. a plugin's csi.sock under plugfs) and
then, every 50 ms on that one connection, sends a numbered line and reads
it back, until SIGTERM.  STATUS_FILE is rewritten (atomically) after every
exchange with one line `ok=N broken=B peer=P': N exchanges answered, B 1
once the connection failed (then it stops trying), P the path the socket is
connected to (getpeername: the allocation's socket, not csi.sock)."""
import os
import signal
import socket
import sys
import threading
import time

stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def serve(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(16)
    srv.settimeout(0.1)

    def echo(c):
        with c:
            f = c.makefile("rwb", buffering=0)
            for line in f:
                f.write(line)

    while not stop:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=echo, args=(c,), daemon=True).start()
    srv.close()
    os.unlink(path)


def hold(path, status):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.settimeout(5)
    peer = c.getpeername()
    f = c.makefile("rwb", buffering=0)
    ok = broken = 0

    def report():
        tmp = status + ".tmp"
        with open(tmp, "w") as out:
            out.write("ok=%d broken=%d peer=%s\n" % (ok, broken, peer))
        os.rename(tmp, status)

    report()
    while not stop:
        if not broken:
            msg = b"ping %d\n" % ok
            try:
                f.write(msg)
                broken = 0 if f.readline() == msg else 1
            except OSError:
                broken = 1
            if not broken:
                ok += 1
            report()
        time.sleep(0.05)


if sys.argv[1] == "serve":
    serve(sys.argv[2])
else:
    hold(sys.argv[2], sys.argv[3])
