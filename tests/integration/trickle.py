#!/usr/bin/env python3
"""trickle.py SOCKET SECONDS: connects to the control socket and sends one
space every 0.5 s, never a newline, for at most SECONDS.  Prints
`closed_after_ms=N' when the daemon closed the connection (`open' when it
never did) and then every line the daemon sent."""
import socket
import sys
import time

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(0.5)
start, got, closed = time.monotonic(), b"", None
while time.monotonic() - start < float(sys.argv[2]):
    try:
        s.send(b" ")
    except OSError:
        pass
    try:
        data = s.recv(65536)
        if not data:
            closed = time.monotonic()
            break
        got += data
    except socket.timeout:
        pass
    except OSError:
        closed = time.monotonic()
        break
print("closed_after_ms=%d" % ((closed - start) * 1000) if closed else "open")
sys.stdout.write(got.decode(errors="replace"))
