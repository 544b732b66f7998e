#!/usr/bin/env python3
# A plugin socket that flaps when told: listens (answering every connection
# with ALLOC and a newline, as the demo plugin does, then closing it); on
# SIGUSR1 it closes its listening socket (the file stays: connects are
# refused, as after a crash), on SIGUSR2 it listens again.  Prints "up" /
# "down" with a monotonic time in ms on each change, once it is done.  The
# test decides when, from the daemon's events: no outage has a length of
# its own.
#
#   flapper.py SOCKET ALLOC
import os
import select
import signal
import socket
import sys
import time

want_up = True


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
    return s


def on_signal(signum, _frame):
    global want_up
    want_up = signum == signal.SIGUSR2


def main():
    path, reply = sys.argv[1], (sys.argv[2] + "\n").encode()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    signal.signal(signal.SIGUSR1, on_signal)
    signal.signal(signal.SIGUSR2, on_signal)
    # Woken at once by a signal: select returns EINTR-free in python 3.5+
    # only after the handler ran, so a short timeout bounds the reaction.
    s = listen(path)
    print("up", now_ms(), flush=True)
    while True:
        if s is not None and not want_up:
            s.close()  # the socket file stays: connections are refused
            s = None
            print("down", now_ms(), flush=True)
        elif s is None and want_up:
            s = listen(path)
            print("up", now_ms(), flush=True)
        if s is None:
            time.sleep(0.005)
            continue
        r, _, _ = select.select([s], [], [], 0.005)
        if r:
            c, _ = s.accept()
            try:
                c.sendall(reply)
            except OSError:
                pass
            c.close()


main()
