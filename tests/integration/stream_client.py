#!/usr/bin/env python3
"""stream_client.py MODE SOCKET [ARGS]: a client of the streamed `list'
(docs/protocol.md) for test_control_stream.sh.  Prints what it found as
`key=value' lines; exits 1 (with the reason on stderr) when the answer is
not what the protocol promises.

  lines N           {"op":"list","stream":true,"id":7}: a header, N plugin
                    lines in (type, name) order, an end line whose counts
                    match; then a status pipelined behind the list is
                    answered after it.
  oneline N         {"op":"list","id":8}: one line, {"ok":true,"id":8,
                    "plugins":[N plugins]}, sorted.
  slow SECONDS      a list read one byte per millisecond for SECONDS, then
                    closed: prints the bytes read.
  status SECONDS    status requests one after another for SECONDS on fresh
                    connections: prints n, p50_ms, p99_ms, max_ms.
  loop SECONDS      full lists one after another for SECONDS: prints n.
  watch_list        on one connection: watch, then a streamed list read
                    slowly while (on another connection) plugin `held-1' is
                    registered by the caller (after `ready' is printed and a
                    line is read from stdin); the event comes after the
                    list's end line, never inside it.
"""
import json
import socket
import sys
import time


def fail(msg):
    sys.stderr.write("stream_client: %s\n" % msg)
    sys.exit(1)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


class Lines:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def next(self, limit=1 << 30):
        while b"\n" not in self.buf:
            data = self.s.recv(1 << 20)
            if not data:
                fail("the daemon closed the connection (%d bytes pending)" % len(self.buf))
            self.buf += data
            if len(self.buf) > limit:
                fail("line longer than %d bytes" % limit)
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def check_sorted(plugins):
    keys = [(p["type"], p["name"]) for p in plugins]
    if keys != sorted(keys):
        fail("plugins not in (type, name) order")
    if len(set(keys)) != len(keys):
        fail("a plugin listed twice")


def mode_lines(path, n):
    s = connect(path)
    s.sendall(b'{"op":"list","stream":true,"id":7}\n{"op":"status","id":"after"}\n')
    rd = Lines(s)
    head = rd.next()
    if head != {"ok": True, "id": 7, "stream": True}:
        fail("header: %r" % head)
    plugins, regs = [], 0
    while True:
        o = rd.next()
        if "end" in o:
            break
        if list(o) != ["plugin"]:
            fail("not a plugin line: %r" % o)
        plugins.append(o["plugin"])
        regs += len(o["plugin"]["registrations"])
    if o != {"end": True, "ok": True, "id": 7, "plugins": len(plugins), "registrations": regs}:
        fail("end line: %r (%d plugins read)" % (o, len(plugins)))
    if len(plugins) != n:
        fail("%d plugins, expected %d" % (len(plugins), n))
    check_sorted(plugins)
    st = rd.next()
    if st.get("id") != "after" or st.get("ok") is not True:
        fail("the status behind the list: %r" % st)
    print("plugins=%d registrations=%d" % (len(plugins), regs))
    print("last=%s" % plugins[-1]["name"] if plugins else "last=")


def mode_oneline(path, n):
    s = connect(path)
    s.sendall(b'{"op":"list","id":8}\n')
    o = Lines(s).next()
    if o.get("ok") is not True or o.get("id") != 8 or set(o) != {"ok", "id", "plugins"}:
        fail("one-line answer: keys %r" % sorted(o))
    if len(o["plugins"]) != n:
        fail("%d plugins, expected %d" % (len(o["plugins"]), n))
    check_sorted(o["plugins"])
    print("plugins=%d" % len(o["plugins"]))


def mode_slow(path, seconds):
    s = connect(path)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b'{"op":"list","stream":true}\n')
    end, got = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        if not s.recv(1):
            fail("the daemon closed the slow reader's connection after %d bytes" % got)
        got += 1
        time.sleep(0.001)
    s.close()
    print("read=%d" % got)


def mode_status(path, seconds):
    lat, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        s = connect(path)
        s.sendall(b'{"op":"status"}\n')
        o = Lines(s).next()
        lat.append((time.monotonic() - t0) * 1000)
        s.close()
        if o.get("ok") is not True:
            fail("status: %r" % o)
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print("n=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f" % (len(lat), pick(0.5), pick(0.99), lat[-1]))


def mode_loop(path, seconds):
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        s = connect(path)
        s.sendall(b'{"op":"list","stream":true}\n')
        rd = Lines(s)
        while "end" not in rd.next():
            pass
        s.close()
        n += 1
    print("lists=%d" % n)


def mode_watch_list(path):
    s = connect(path)
    rd = Lines(s)
    s.sendall(b'{"op":"watch","types":["csi-node"],"id":"w"}\n')
    if rd.next().get("id") != "w":
        fail("watch answer")
    s.sendall(b'{"op":"list","stream":true,"id":"l"}\n')
    if rd.next() != {"ok": True, "id": "l", "stream": True}:
        fail("list header")
    print("ready", flush=True)
    sys.stdin.readline()  # the caller registered held-1 meanwhile
    names, event_at = [], None
    while True:
        o = rd.next()
        if "event" in o:
            fail("an event inside the list, after %d plugins" % len(names))
        if "end" in o:
            break
        names.append(o["plugin"]["name"])
    o = rd.next()
    if o.get("event") != "registered" or o.get("name") != "held-1":
        fail("after the end line: %r" % o)
    print("listed=%d held_in_list=%d event_after_end=1" % (len(names), "held-1" in names))


def main():
    mode, path = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    if mode == "lines":
        mode_lines(path, int(arg))
    elif mode == "oneline":
        mode_oneline(path, int(arg))
    elif mode == "slow":
        mode_slow(path, float(arg))
    elif mode == "status":
        mode_status(path, float(arg))
    elif mode == "loop":
        mode_loop(path, float(arg))
    elif mode == "watch_list":
        mode_watch_list(path)
    else:
        fail("unknown mode %s" % mode)


main()
