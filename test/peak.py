"""python3 -S test/peak.py FD ARGV...: runs ARGV as a child of this small process, waits for
it, writes "STATUS PEAK_KB CPU_SECONDS" to FD and exits with the child's status.

Why not wait4 on a child of pytest itself: a process keeps the high-water mark of its
resident set across exec, and a child spawned by a process that has grown to hundreds of
megabytes (pytest, late in a whole make test) starts with that process's set counted in
its ru_maxrss. Spawned from here, what it carries is this interpreter's few megabytes."""
import os
import sys

fd = int(sys.argv[1])
os.set_inheritable(fd, False)
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
os.write(fd, b"%d %d %.6f\n" % (code, usage.ru_maxrss, usage.ru_utime + usage.ru_stime))
sys.exit(code if code >= 0 else 128 - code)
