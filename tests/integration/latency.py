#!/usr/bin/env python3
"""latency.py SOCKET FILE SECONDS [STOPFILE]: for SECONDS, or until STOPFILE
exists, every 20 ms, times one
`status' request on a fresh connection to the control socket (connect, send,
read the answer line, 5 s deadline) and one read of FILE through the mount
(a plugin's `info': the kernel keeps no cache of it across opens, so the
daemon serves every open and read).  Prints, for each, one line
    NAME n=N p50_ms=X p99_ms=Y max_ms=Z failed=F
where failed counts requests with no good answer (refused, closed, timed out,
or an answer that is not ok) and reads that failed or read nothing."""
import json
import os
import socket
import sys
import time

path, info, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
stopfile = sys.argv[4] if len(sys.argv) > 4 else None


def status_ms():
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
        s.sendall(b'{"op":"status"}\n')
        buf = b""
        while b"\n" not in buf:
            data = s.recv(65536)
            if not data:
                return None
            buf += data
        if not json.loads(buf.split(b"\n", 1)[0]).get("ok"):
            return None
    except (OSError, ValueError):
        return None
    finally:
        s.close()
    return (time.monotonic() - t0) * 1000


def read_ms():
    t0 = time.monotonic()
    try:
        with open(info, "rb") as f:
            if not f.read():
                return None
    except OSError:
        return None
    return (time.monotonic() - t0) * 1000


def summary(name, samples, failed):
    samples.sort()
    n = len(samples)
    if n == 0:
        print(f"{name} n=0 p50_ms=0 p99_ms=0 max_ms=0 failed={failed}")
        return
    p50 = samples[n // 2]
    p99 = samples[min(n - 1, (n * 99) // 100)]
    print(f"{name} n={n} p50_ms={p50:.1f} p99_ms={p99:.1f} max_ms={samples[-1]:.1f} "
          f"failed={failed}")


st, rl = [], []
st_failed = rl_failed = 0
end = time.monotonic() + secs
while time.monotonic() < end and not (stopfile and os.path.exists(stopfile)):
    ms = status_ms()
    if ms is None:
        st_failed += 1
    else:
        st.append(ms)
    ms = read_ms()
    if ms is None:
        rl_failed += 1
    else:
        rl.append(ms)
    time.sleep(0.02)
summary("status", st, st_failed)
summary("info_read", rl, rl_failed)
