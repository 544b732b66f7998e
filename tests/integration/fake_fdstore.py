#!/usr/bin/env python3
# A stand-in for systemd's service manager, just what test_fs_fdstore.sh
# needs: runs CMD with $NOTIFY_SOCKET, keeps the fds it hands over with
# FDSTORE=1/FDNAME= (dropping them on FDSTOREREMOVE=1), and when CMD dies
# other than by a clean exit (Restart=on-failure), starts it again with the
# stored fds as $LISTEN_FDS/$LISTEN_FDNAMES/$LISTEN_PID from fd 3.  Writes
# the current pid to DIR/pid, the stored names to DIR/store (one a line) and
# each notify message to DIR/notify.log.  Exits with CMD's status after a
# clean exit, unless DIR/restart-on-exit exists (then it starts CMD again,
# as systemctl restart does); while DIR/hold exists it keeps the store
# after CMD exited (as systemd does until ExecStopPost= ran).  SIGTERM or
# SIGINT kills CMD and exits (a test's cleanup never orphans the daemon).
#
# usage: fake_fdstore.py DIR CMD...
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time

state, cmd = sys.argv[1], sys.argv[2:]
path = os.path.join(state, "notify.sock")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
sock.settimeout(0.05)
store = []  # (name, fd)


def write(name, text):
    tmp = os.path.join(state, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(state, name))


def start():
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for _, fd in store]

    def child():
        for i, fd in enumerate(high):
            os.dup2(fd, 3 + i)  # inheritable

    env = dict(os.environ, NOTIFY_SOCKET=path)
    argv = cmd
    if high:
        env["LISTEN_FDS"] = str(len(high))
        env["LISTEN_FDNAMES"] = ":".join(n for n, _ in store)
        # $LISTEN_PID is the pid that runs cmd: set by the shell it replaces.
        argv = ["/bin/sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh"] + cmd
    p = subprocess.Popen(argv, env=env, preexec_fn=child, close_fds=False)
    for fd in high:
        os.close(fd)
    write("pid", "%d\n" % p.pid)
    return p


def save_store():
    write("store", "".join(n + "\n" for n, _ in store))


def on_term(signum, frame):
    # The test stops the service: the daemon goes with it, never orphaned.
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    sys.exit(128 + signum)


proc = start()
signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)
save_store()
while True:
    try:
        msg, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(64 * 4))
    except socket.timeout:
        rc = proc.poll()
        if rc is None:
            continue
        if rc == 0:
            if os.path.exists(os.path.join(state, "restart-on-exit")):
                proc = start()  # systemctl restart
                continue
            # The store stays until the stop is over (ExecStopPost= runs
            # before systemd lets go of it): while DIR/hold exists.
            while os.path.exists(os.path.join(state, "hold")):
                time.sleep(0.05)
            sys.exit(0)
        proc = start()  # Restart=on-failure
        continue
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(memoryview(data).cast("i")[: len(data) // 4])
    fields = dict(l.split("=", 1) for l in msg.decode().split("\n") if "=" in l)
    with open(os.path.join(state, "notify.log"), "a") as f:
        f.write(msg.decode().replace("\n", " ") + (" +%d fds" % len(fds) if fds else "") + "\n")
    if fields.get("FDSTORE") == "1":
        store += [(fields.get("FDNAME", "stored"), fd) for fd in fds]
        fds = []
    elif fields.get("FDSTOREREMOVE") == "1":
        for n, fd in [e for e in store if e[0] == fields.get("FDNAME")]:
            os.close(fd)
        store = [e for e in store if e[0] != fields.get("FDNAME")]
    for fd in fds:
        os.close(fd)
    save_store()
