#!/usr/bin/env python3
"""s3_fault_proxy.py - an HTTP proxy on loopback between lance_parts and an S3
server that injects faults at chosen requests, for the fault tests
(test/reference/s3_faults.test.cjs).  Python 3 standard library only.

    s3_fault_proxy.py --upstream 127.0.0.1:PORT --rules FILE --log FILE --port-file FILE

Listens on a free loopback port, writes its number to --port-file once it
listens, and forwards every request to --upstream unchanged (the Host header
too, so signatures stay valid), one request per connection: the request goes
upstream with "Connection: close" and the answer comes back until upstream
closes, then the client's connection is closed.

--rules is a JSON list read again whenever the file changes (write it to a
temporary name and rename it); the counts of a rule start at 0 at each read.
A rule is {"method": "PUT", "path": REGEX, "skip": N, "faults": [F, ...],
"then": F}: of the requests whose method is method and whose path with its
query matches REGEX (re.search), the first N pass, the following ones get the
faults of the list in turn, and those after them get "then" (default "pass").
The first rule whose method and path match decides; faults:

    drop      close the connection once the request is read, answer nothing
    lose      forward the request, let the server act on it, and close the
              connection without passing the answer back (a lost answer)
    500       answer 500 InternalError with an S3 XML error body
    503       answer 503 SlowDown with an S3 XML error body
    412       answer 412 PreconditionFailed (another writer's object won a
              conditional write) with an S3 XML error body
    409       answer 409 ConditionalRequestConflict (a conditional write of
              the key in progress) with an S3 XML error body
    hang      read the request and answer nothing until the client leaves
    delay-MS  wait MS milliseconds, then pass the request on (a slow server)
    late-MS   forward the request, let the server act on it, and pass its
              answer back MS milliseconds after it came (an answer on its way)

--log gets a line per request, "METHOD PATH-AND-QUERY ACTION DELAYED"
(ACTION is "pass" or the fault; DELAYED, for a delay, the requests in their
delay then, this one included, so more than 1 means the client had requests
in flight together; 0 otherwise), flushed as it is written.  The proxy runs until it
gets SIGTERM or SIGINT.
"""
import argparse
import json
import os
import re
import signal
import socket
import socketserver
import sys
import threading
import time

ERROR_BODIES = {
    '500': (500, 'Internal Server Error', 'InternalError', 'We encountered an internal error. Please try again.'),
    '503': (503, 'Slow Down', 'SlowDown', 'Please reduce your request rate.'),
    '412': (412, 'Precondition Failed', 'PreconditionFailed',
            'At least one of the pre-conditions you specified did not hold.'),
    '409': (409, 'Conflict', 'ConditionalRequestConflict',
            'A conflicting conditional operation is currently in progress against this resource.'),
}
MAX_HEAD = 64 * 1024


class Rules:
    """The rules of the control file, with the counts of the current reading."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.stamp = None
        self.rules = []

    def _reload(self):
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self.stamp, self.rules = None, []
            return
        stamp = (stat.st_mtime_ns, stat.st_ino, stat.st_size)
        if stamp == self.stamp:
            return
        with open(self.path, encoding='utf-8') as f:
            rules = json.load(f)
        for rule in rules:
            rule['pattern'] = re.compile(rule['path'])
            rule['seen'] = 0
        self.stamp, self.rules = stamp, rules

    def action(self, method, target):
        with self.lock:
            self._reload()
            for rule in self.rules:
                if rule['method'] != method or not rule['pattern'].search(target):
                    continue
                rule['seen'] += 1
                index = rule['seen'] - rule.get('skip', 0)
                if index < 1:
                    return 'pass'
                if index <= len(rule['faults']):
                    return rule['faults'][index - 1]
                return rule.get('then', 'pass')
        return 'pass'


def read_request(sock):
    """The head (bytes) and body of one request, or None when the client left."""
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > MAX_HEAD and b'\r\n\r\n' not in data:
            return None
    head, body = data.split(b'\r\n\r\n', 1)
    length = 0
    for line in head.split(b'\r\n')[1:]:
        name, _, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(min(1 << 20, length - len(body)))
        if not chunk:
            return None
        body += chunk
    return head, body


def close_upstream_after(head):
    """The head with "Connection: close" in place of any Connection header."""
    lines = [line for line in head.split(b'\r\n')
             if line.partition(b':')[0].strip().lower() not in (b'connection', b'keep-alive')]
    return b'\r\n'.join(lines + [b'Connection: close']) + b'\r\n\r\n'


def error_answer(fault, target):
    status, reason, code, message = ERROR_BODIES[fault]
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>'
            '<Resource>%s</Resource><RequestId>fault-proxy</RequestId></Error>'
            % (code, message, target.split('?', 1)[0])).encode()
    return (b'HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n'
            b'Connection: close\r\n\r\n' % (status, reason.encode(), len(body))) + body


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        request = read_request(self.request)
        if request is None:
            return
        head, body = request
        method, target = head.split(b'\r\n', 1)[0].decode('latin-1').split(' ')[:2]
        action = self.server.rules.action(method, target)
        if action.startswith('delay-'):
            with self.server.delayed_lock:
                self.server.delayed += 1
                delayed = self.server.delayed
            self.server.log('%s %s %s %d' % (method, target, action, delayed))
            time.sleep(int(action[6:]) / 1000.0)
            with self.server.delayed_lock:
                self.server.delayed -= 1
            action = 'pass'
        else:
            self.server.log('%s %s %s 0' % (method, target, action))
        if action == 'drop':
            return
        if action == 'hang':
            while self.request.recv(65536):
                pass
            return
        if action in ERROR_BODIES:
            self.request.sendall(error_answer(action, target))
            return
        answer = b''
        with socket.create_connection(self.server.upstream) as upstream:
            upstream.sendall(close_upstream_after(head) + body)
            while True:
                chunk = upstream.recv(1 << 20)
                if not chunk:
                    break
                if action == 'pass':
                    self.request.sendall(chunk)
                elif action.startswith('late-'):
                    answer += chunk
        if action.startswith('late-'):
            time.sleep(int(action[5:]) / 1000.0)
            self.request.sendall(answer)


class Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream, rules, log_path):
        super().__init__(('127.0.0.1', 0), Handler)
        self.upstream = upstream
        self.rules = rules
        self.log_lock = threading.Lock()
        self.delayed_lock = threading.Lock()
        self.delayed = 0
        self.log_file = open(log_path, 'a', encoding='utf-8')

    def log(self, line):
        with self.log_lock:
            self.log_file.write(line + '\n')
            self.log_file.flush()


def main():
    parser = argparse.ArgumentParser(description='S3 fault-injecting proxy for tests')
    parser.add_argument('--upstream', required=True, help='HOST:PORT of the S3 server')
    parser.add_argument('--rules', required=True)
    parser.add_argument('--log', required=True)
    parser.add_argument('--port-file', required=True)
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(':')
    proxy = Proxy((host, int(port)), Rules(args.rules), args.log)

    def stop(signum, frame):
        threading.Thread(target=proxy.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    temporary = args.port_file + '.tmp'
    with open(temporary, 'w', encoding='utf-8') as f:
        f.write('%d\n' % proxy.server_address[1])
    os.rename(temporary, args.port_file)
    proxy.serve_forever()
    proxy.server_close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
