#!/usr/bin/env python3
"""http_test_server.py - a loopback HTTP/1.1 server for the tests of the
libcurl transport (test_curl_http.c).  Prints its port on standard output,
then serves until killed.  Connections are kept alive, each in its thread.

  /echo...        200; the body lists the request as received: the request
                  line, every header, the client's port and the body length
  /status/N       status N with an S3 Error document
  /bytes/N        200 with N bytes (HEAD: the same headers, no body)
  /range          206 with 10 bytes and a Content-Range
  /slow/MS        waits MS milliseconds, then 200
  /drop           promises 100 bytes, sends 10, closes the connection
  /long-etag      an ETag of 300 characters
"""
import http.server
import socketserver
import os
import sys
import time

LAST_MODIFIED = "Tue, 01 Dec 2026 10:00:00 GMT"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=(), send_body=True):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"etag-1"')
        self.send_header("x-amz-request-id", "request-1")
        self.send_header("Last-Modified", LAST_MODIFIED)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        path = self.path
        if path.startswith("/echo"):
            lines = [self.requestline]
            lines += ["%s: %s" % (name.lower(), value) for name, value in self.headers.items()]
            lines.append("client-port: %d" % self.client_address[1])
            lines.append("body-length: %d" % len(body))
            self.reply(200, ("\n".join(lines) + "\n").encode() + body)
        elif path.startswith("/status/"):
            self.reply(int(path[8:]), b"<Error><Code>Test</Code><RequestId>request-1</RequestId></Error>")
        elif path.startswith("/bytes/"):
            self.reply(200, b"b" * int(path[7:]), send_body=self.command != "HEAD")
        elif path == "/range":
            self.reply(206, b"0123456789", [("Content-Range", "bytes 0-9/100")])
        elif path.startswith("/slow/"):
            time.sleep(int(path[6:]) / 1000.0)
            self.reply(200, b"done")
        elif path == "/drop":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
        elif path == "/long-etag":
            self.reply(200, b"", [("ETag", "e" * 300)])
        else:
            self.reply(404)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # clients that hang up (the timeout and cancel tests) are expected
        pass


def main():
    server = Server(("127.0.0.1", 0), Handler)
    # one write: the test reads the port once and closes the pipe (with
    # PYTHONUNBUFFERED, print would write the newline separately, after it)
    os.write(1, b"%d\n" % server.server_address[1])
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
