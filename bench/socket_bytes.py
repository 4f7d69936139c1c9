#!/usr/bin/env python3
"""socket_bytes.py PORT COMMAND... - run COMMAND and print the bytes sent and received
(one line: "SENT RECEIVED") over the TCP connections that processes of this machine
opened to 127.0.0.1:PORT while it ran: for connections still open at the end, what
they carried since the start (ss -ti before and after); for connections closed
meanwhile, their totals as the kernel reported them when they went (ss -tiE, socket
destruction events).  Used by bench/s3.sh, where nothing but PostgreSQL's processes
talks to the S3 server during an assembly."""
import re
import subprocess
import sys
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
    events = subprocess.Popen(["ss", "-tinEH"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)  # the monitor is listening before the command starts
    status = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL).returncode
    time.sleep(0.2)
    events.terminate()
    closed = parse(events.communicate()[0], port)
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
