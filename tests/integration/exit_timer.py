#!/usr/bin/env python3
"""exit_timer.py PID [LOAD_PID...]: times a process's exit from its SIGKILL,
as the kernel reports it.

Opens a pidfd for PID and prints "ready".  On the first line read from
standard input it sends SIGKILL through the pidfd, stops each LOAD_PID's
process group (SIGSTOP: the load a test puts on the machine, children
included, so that what is timed is the exit, not a CPU taken by the load;
a LOAD_PID in this process's own group is stopped alone), and waits up to
5 s for the pidfd to become readable, which it does once every thread of
PID has exited (a thread stuck inside the kernel keeps it unreadable).
Prints the milliseconds from the kill to that moment, or "hung"; exits 0.

Started before the kill, its own start-up is not in the figure (python's
start on a loaded 2-core machine can take seconds), and a test shell
polling /proc at 10 ms steps, forking a sed per thread, is not either."""
import os
import select
import signal
import sys
import time

pid = int(sys.argv[1])
loads = [int(p) for p in sys.argv[2:]]
try:
    fd = os.pidfd_open(pid)
except ProcessLookupError:
    print("gone", flush=True)
    sys.exit(0)
own_group = os.getpgid(0)
print("ready", flush=True)
sys.stdin.readline()

t0 = time.monotonic()
try:
    signal.pidfd_send_signal(fd, signal.SIGKILL)
except ProcessLookupError:
    pass  # already exited (a zombie): the pidfd is readable at once
for p in loads:
    try:
        g = os.getpgid(p)
        if g == own_group:
            os.kill(p, signal.SIGSTOP)
        else:
            os.killpg(g, signal.SIGSTOP)
    except ProcessLookupError:
        pass
poller = select.poll()
poller.register(fd, select.POLLIN)
deadline = t0 + 5.0
while True:
    left = deadline - time.monotonic()
    if left <= 0 or poller.poll(int(left * 1000) + 1):
        break
el = time.monotonic() - t0
readable = bool(poller.poll(0))
print(str(int(el * 1000)) if readable else "hung", flush=True)
