#!/usr/bin/env python3
# An unrelated process takes a pid number that has just been freed, as the
# kernel may give it to any new process: sets /proc/sys/kernel/ns_last_pid
# (root) to PID - 1 and forks, again while the child gets another number
# (a process elsewhere forked in between), at most 200 times.  The child
# that got PID sleeps until killed; its number goes to PIDFILE ("none"
# when PID could not be had).
#
#   take_pid.py PID PIDFILE
import os
import signal
import sys

want, pidfile = int(sys.argv[1]), sys.argv[2]
got = None
for _ in range(200):
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write("%d" % (want - 1))
    except OSError as e:
        print("take_pid.py: ns_last_pid: %s" % e, file=sys.stderr)
        break
    pid = os.fork()
    if pid == 0:
        if os.getpid() != want:
            os._exit(0)
        signal.pause()
        os._exit(0)
    if pid == want:
        got = pid
        break
    os.waitpid(pid, 0)
with open(pidfile + ".tmp", "w") as f:
    f.write("%s\n" % (got if got else "none"))
os.rename(pidfile + ".tmp", pidfile)
if got:
    os.waitpid(got, 0)
