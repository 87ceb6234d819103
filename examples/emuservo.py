#!/usr/bin/python3
"""emuservo.py: an emulated servo/motor controller on a pseudo-terminal, the serial peer of
examples/harness_physical{.c,.py} --actuator serial:PATH.

It opens a pty pair, says the slave's path (/dev/pts/N: on stdout, one line, or in the file
--path-file names, written whole once the controller is ready), and answers each command line
the client writes with one reply line:

    move FRAME CELL   ->  ok FRAME CELL
    anything else     ->  err unknown command

It runs until the client closes the port (after it had opened it), until --count commands
were answered, or until --timeout seconds pass with no client; then it says on stdout how many
commands it answered. With --log FILE, each command goes to FILE as "MONOTONIC_NS COMMAND" when
it arrives (CLOCK_MONOTONIC, the clock the harness and the trace use).

    python3 examples/emuservo.py --path-file servo.path &
    build/harness_physical --camera v4l2:/dev/video0 --actuator serial:$(cat servo.path)
"""
import argparse
import os
import select
import sys
import termios
import time
import tty

PROG = "emuservo.py"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description="An emulated servo controller on a pty.")
    parser.add_argument("--path-file", help="write the pty's path here instead of on stdout")
    parser.add_argument("--count", type=int, default=0,
                        help="stop after answering this many commands (default 0: no limit)")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="the servo's response time before each reply (default 0)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="give up after this many seconds without a client (default 60)")
    parser.add_argument("--log", help="append each command, with its arrival time, to this file")
    args = parser.parse_args(argv)
    if args.count < 0 or args.delay_ms < 0 or args.timeout <= 0:
        parser.error("--count, --delay-ms and --timeout must not be negative")
    return args


def reply_to(command):
    words = command.split()
    if len(words) == 3 and words[0] == "move" and all(w.lstrip("-").isdigit() for w in words[1:]):
        return "ok %s %s" % (words[1], words[2])
    return "err unknown command"


def say_path(path, path_file):
    if not path_file:
        print(path, flush=True)
        return
    partial = path_file + ".partial"
    with open(partial, "w") as out:
        out.write(path + "\n")
    os.rename(partial, path_file)


def serve(master, args, log):
    """Answers commands until the client closes, COUNT is reached, or no client came in time.
    Returns the number answered."""
    answered, pending, connected = 0, b"", False
    deadline = time.monotonic() + args.timeout
    poller = select.poll()
    poller.register(master, select.POLLIN)
    while not args.count or answered < args.count:
        events = poller.poll(100)
        if not events:
            if not connected and time.monotonic() > deadline:
                print("%s: no client in %g s" % (PROG, args.timeout), file=sys.stderr)
                break
            continue
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: no one has the slave open
            data = b""
        if not data:
            if connected:
                break  # the client closed the port
            if time.monotonic() > deadline:
                print("%s: no client in %g s" % (PROG, args.timeout), file=sys.stderr)
                break
            time.sleep(0.01)  # not opened yet: the master hangs up until it is
            continue
        connected = True
        pending += data
        while b"\n" in pending and (not args.count or answered < args.count):
            line, pending = pending.split(b"\n", 1)
            command = line.decode("ascii", "replace").strip("\r")
            if log:
                log.write("%d %s\n" % (time.clock_gettime_ns(time.CLOCK_MONOTONIC), command))
                log.flush()
            if args.delay_ms:
                time.sleep(args.delay_ms / 1000.0)
            os.write(master, (reply_to(command) + "\n").encode("ascii"))
            answered += 1
    return answered


def main(argv):
    args = parse_args(argv)
    master, slave = os.openpty()
    # Raw: no echo of the commands back to the client, no line editing, no CR/LF translation.
    tty.setraw(slave, termios.TCSANOW)
    path = os.ttyname(slave)
    # The master hangs up (POLLHUP, EIO) while no one has the slave open: close ours, so that
    # the client's close is seen. The settings stay with the pair while the master is open.
    os.close(slave)
    log = open(args.log, "a") if args.log else None
    say_path(path, args.path_file)
    try:
        answered = serve(master, args, log)
    except KeyboardInterrupt:
        answered = None
    finally:
        if log:
            log.close()
        os.close(master)
    if answered is not None:
        print("%s: answered %d command%s" % (PROG, answered, "" if answered == 1 else "s"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
