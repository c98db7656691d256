"""The dashboard's gunicorn worker (`tools/perfscale serve`, perfscale.commands.serve):
gunicorn's gthread, with a deadline on each request's headers.

gthread gives a thread to a connection once it is readable and lets the thread wait for the
rest of the request as long as bytes trickle in: 40 connections sending a header line every
2 s held every thread of `serve` (measured: a page timed out after 30 s). Here the socket is
shut down when the headers have not come HEADER_SECONDS after the request began, and the
thread is free. Only a buffering proxy in front stops a client that opens connections
faster than that (docs/dashboard.md).
"""

import socket
import threading
import time

from gunicorn.workers.gthread import ThreadWorker

HEADER_SECONDS = 10
GRACE = 1.0


def _shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)  # the thread's blocked recv returns at once
    except OSError:
        pass


class _Headers:
    """gunicorn's requests of a connection (its RequestParser, an iterator), the next of
    which, once parsed, stops `timer`."""

    def __init__(self, requests, timer):
        self.requests, self.timer = requests, timer

    def __iter__(self):
        return self

    def __next__(self):
        request = next(self.requests)
        self.timer.cancel()
        return request


class Worker(ThreadWorker):
    """gthread, with HEADER_SECONDS for a request's headers, counted from when the
    connection was queued for a thread (gunicorn 20.1 queues each one as it is accepted,
    before a byte has come), so that a queue of stalled connections drains in
    HEADER_SECONDS, not HEADER_SECONDS for each round of threads."""

    def enqueue_req(self, conn):
        conn.perfscale_queued = time.monotonic()
        super().enqueue_req(conn)

    def handle(self, conn):
        waited = time.monotonic() - getattr(conn, "perfscale_queued", time.monotonic())
        # A request that waited its time in the queue still gets GRACE: whole headers
        # that came meanwhile are parsed in no time, a stalled client's are not there.
        timer = threading.Timer(max(HEADER_SECONDS - waited, GRACE), _shut, [conn.sock])
        timer.daemon = True
        requests = conn.parser
        conn.parser = _Headers(requests, timer)
        timer.start()
        try:
            return super().handle(conn)
        finally:
            timer.cancel()
            conn.parser = requests
