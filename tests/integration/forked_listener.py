#!/usr/bin/env python3
# A listener handed to a child: binds and listens on SOCKET, forks, and the
# child serves (answering every connection with ALLOC and a newline, as the
# demo plugin does) until killed; the parent, the process that called
# listen(), writes the child's pid to PIDFILE and exits once a line can be
# read from the FIFO RELEASE.
#
#   forked_listener.py SOCKET ALLOC PIDFILE RELEASE
import os
import socket
import sys

path, alloc, pidfile, release = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(16)
child = os.fork()
if child == 0:
    while True:
        c, _ = s.accept()
        try:
            c.sendall((alloc + "\n").encode())
        except OSError:
            pass
        c.close()
with open(pidfile + ".tmp", "w") as f:
    f.write("%d\n" % child)
os.rename(pidfile + ".tmp", pidfile)
with open(release) as f:
    f.readline()
os._exit(0)
