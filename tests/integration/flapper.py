#!/usr/bin/env python3
# A plugin socket that flaps: listens for UP ms (answering every connection
# with ALLOC and a newline, as the demo plugin does, then closing it), then closes its listening socket for DOWN ms (the file stays:
# connects are refused, as after a crash), CYCLES times, then listens until
# killed.  Prints "up" / "down" with a monotonic time in ms on each change.
# With GATE, the first cycle starts only once the file GATE exists (it
# listens until then), so a test can start watching first.
#
#   flapper.py SOCKET ALLOC UP_MS DOWN_MS CYCLES [GATE]
import os
import select
import socket
import sys
import time


def now_ms():
    return int(time.monotonic() * 1000)


def listen(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(128)
    print("up", now_ms(), flush=True)
    return s


def serve(s, ms, reply):
    end = time.monotonic() + ms / 1000.0 if ms >= 0 else None
    while True:
        left = None if end is None else max(0.0, end - time.monotonic())
        if left == 0.0:
            return
        r, _, _ = select.select([s], [], [], left)
        if r:
            c, _ = s.accept()
            try:
                c.sendall(reply)
            except OSError:
                pass
            c.close()


def main():
    path, reply = sys.argv[1], (sys.argv[2] + "\n").encode()
    up, down, cycles = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    s = listen(path)
    if len(sys.argv) > 6:
        while not os.path.exists(sys.argv[6]):
            serve(s, 20, reply)
    for _ in range(cycles):
        serve(s, up, reply)
        s.close()  # the socket file stays: connections are refused
        print("down", now_ms(), flush=True)
        time.sleep(down / 1000.0)
        s = listen(path)
    serve(s, -1, reply)


main()
