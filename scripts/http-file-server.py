#!/usr/bin/env python3
"""Serves the files under a folder over HTTP (or HTTPS) on 127.0.0.1, on a port of its own, for
the tests and the benchmarks (a local stand-in for the Apple Music API and its preview servers).

usage: http-file-server.py FOLDER PORT_FILE [--delay-ms N] [--header NAME:VALUE]... [--tls CERT KEY]

Writes the port it listens on to PORT_FILE once it listens (atomically). A request's query is
ignored. --delay-ms waits that long before answering each request (network latency);
--header adds a header field to every answer.
"""
import http.server
import os
import ssl
import sys
import time


def main(arguments):
    if len(arguments) < 2 or arguments[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder, port_file = arguments[0], arguments[1]
    delay, headers, tls = 0.0, [], None
    rest = arguments[2:]
    while rest:
        option = rest.pop(0)
        if option == "--delay-ms":
            delay = float(rest.pop(0)) / 1000
        elif option == "--header":
            name, _, value = rest.pop(0).partition(":")
            headers.append((name.strip(), value.strip()))
        elif option == "--tls":
            tls = (rest.pop(0), rest.pop(0))
        else:
            print(f"unknown option {option}", file=sys.stderr)
            return 2

    class Files(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *a, **k):
            super().__init__(*a, directory=folder, **k)

        def log_message(self, *a):
            pass

        def send_head(self):
            if delay:
                time.sleep(delay)
            return super().send_head()

        def end_headers(self):
            for name, value in headers:
                self.send_header(name, value)
            super().end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
