#!/usr/bin/env python3
"""A loopback proxy in front of the mirror server with faults it lacks:
robots.txt answering 503, or one path whose body stalls halfway.

Usage: fault_proxy.py UPSTREAM_URL [--robots-503] [--stall PATH_SUFFIX]
Prints `listening on http://127.0.0.1:PORT` first, like mirror_server.py.
Requests for /HOST/PATH are forwarded to UPSTREAM_URL/HOST/PATH.
Used by scripts/soak and tests/it/trust.rs.
"""
import argparse
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.request import urlopen


class FaultProxy:
    """Forwards /HOST/PATH to the mirror, with faults of its own: robots.txt
    answering 503, or one path whose body stalls halfway."""

    def __init__(self, upstream, robots_503=False, stall=None):
        up = upstream

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if robots_503 and self.path.endswith("/robots.txt"):
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                try:
                    with urlopen(up + self.path, timeout=30) as r:
                        status, body, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
                except Exception as e:  # the mirror's 404 and friends
                    status = getattr(e, "code", 502)
                    body, ctype = b"", "text/plain"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if stall and self.path.endswith(stall):
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    time.sleep(60)
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("upstream")
    ap.add_argument("--robots-503", action="store_true")
    ap.add_argument("--stall")
    a = ap.parse_args()
    p = FaultProxy(a.upstream, robots_503=a.robots_503, stall=a.stall)
    print(f"listening on {p.url}", flush=True)
    threading.Event().wait()
