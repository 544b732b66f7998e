#!/usr/bin/env python3
"""inflight.py SOCKET DIR PLUGIN_SOCKET: three raw clients of the control
socket around a handover, each registering alloc b1, b2 or b3 of plugin
csi-node/inflight (socket PLUGIN_SOCKET), steered by files in DIR:

  connects the three, waits 0.5 s (the daemon accepts them), writes
  DIR/connected; once DIR/go1 exists, b1 sends its whole request line and
  b3 the first half of its own, and DIR/sent1 is written; once DIR/go2
  exists, b2 sends its whole line and b3 the rest.  Then each reads one
  answer (10 s at most) and DIR/out gets one line per client:

    NAME sent=ok|epipe|reset result=ok|error:CODE|closed|reset|timeout

sent: how the last send went; result: the answer, or how the connection
ended without one (closed: EOF; reset: ECONNRESET)."""
import json
import os
import socket
import sys
import time

path, d, plugin_sock = sys.argv[1], sys.argv[2], sys.argv[3]


def line(alloc):
    return (json.dumps({"op": "register", "types": ["csi-node"], "name": "inflight",
                        "alloc": alloc, "socket": plugin_sock}) + "\n").encode()


def wait_file(name, secs=60):
    end = time.monotonic() + secs
    while not os.path.exists(os.path.join(d, name)):
        if time.monotonic() > end:
            sys.exit("inflight.py: no %s within %d s" % (name, secs))
        time.sleep(0.01)


def touch(name):
    with open(os.path.join(d, name), "w"):
        pass


def send(s, data):
    try:
        s.sendall(data)
        return "ok"
    except BrokenPipeError:
        return "epipe"
    except ConnectionResetError:
        return "reset"


def answer(s):
    s.settimeout(10)
    buf = b""
    try:
        while b"\n" not in buf:
            b = s.recv(65536)
            if not b:
                return "closed"
            buf += b
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        return "timeout"
    o = json.loads(buf.split(b"\n", 1)[0])
    if o.get("ok") is True:
        return "ok"
    return "error:" + o.get("error", {}).get("code", "?")


conns = {}
for name in ("b1", "b2", "b3"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    conns[name] = s
time.sleep(0.5)
touch("connected")
sent = {}
wait_file("go1")
sent["b1"] = send(conns["b1"], line("b1"))
half = line("b3")
sent["b3"] = send(conns["b3"], half[: len(half) // 2])
touch("sent1")
wait_file("go2")
sent["b2"] = send(conns["b2"], line("b2"))
sent["b3"] = send(conns["b3"], half[len(half) // 2:])
with open(os.path.join(d, "out.tmp"), "w") as f:
    for name in ("b1", "b2", "b3"):
        f.write("%s sent=%s result=%s\n" % (name, sent[name], answer(conns[name])))
os.rename(os.path.join(d, "out.tmp"), os.path.join(d, "out"))
