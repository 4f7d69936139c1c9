#!/usr/bin/env python3
"""socket_bytes.py PORT COMMAND... - run COMMAND (its output passes through) and print
after it the bytes sent and received (one line: "SENT RECEIVED") over the TCP connections that processes of this machine
opened to 127.0.0.1:PORT while it ran: for connections still open at the end, what
they carried since the start (ss -ti before and after); for connections closed
meanwhile, their totals as the kernel reported them when they went (ss -tiE, socket
destruction events).  Used by bench/s3.sh, where nothing but PostgreSQL's processes
talks to the S3 server during an assembly."""
import re
import subprocess
import sys
import tempfile
import time

COUNTER = re.compile(r"\bbytes_(sent|received):(\d+)")


def parse(text, port):
    """{local address: (sent, received)} of the client side of connections to port"""
    sockets = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        fields = line.split()
        if len(fields) < 5 or i + 1 >= len(lines):
            continue
        local, peer = fields[-2], fields[-1]
        if not peer.endswith(":%d" % port) or local.endswith(":%d" % port):
            continue
        counts = dict(COUNTER.findall(lines[i + 1]))
        sockets[local] = (int(counts.get("sent", 0)), int(counts.get("received", 0)))
    return sockets


def snapshot(port):
    return parse(subprocess.run(["ss", "-tinH", "state", "established",
                                 "( dport = :%d )" % port],
                                capture_output=True, text=True, check=True).stdout, port)


def main():
    port = int(sys.argv[1])
    before = snapshot(port)
    # the monitor writes line-buffered into a file, so nothing is lost when it is stopped
    with tempfile.TemporaryFile(mode="w+") as log:
        events = subprocess.Popen(["stdbuf", "-oL", "ss", "-tinEH"], stdout=log)
        time.sleep(0.5)  # listening before the command starts
        sys.stdout.flush()
        status = subprocess.run(sys.argv[2:]).returncode
        time.sleep(0.5)
        events.terminate()
        events.wait()
        log.seek(0)
        closed = parse(log.read(), port)
    after = snapshot(port)
    sent = received = 0
    for local, (s, r) in list(closed.items()) + list(after.items()):
        s0, r0 = before.get(local, (0, 0))
        sent += s - s0
        received += r - r0
    print(sent, received)
    sys.exit(status)


if __name__ == "__main__":
    main()
