"""The dashboard's gunicorn worker (`tools/perfscale serve`, perfscale.commands.serve):
gunicorn's gthread, with each request read whole in the worker's event loop before a
thread sees it, as a buffering proxy (nginx) does in front of a server.

gthread gives a thread to a connection as soon as it is readable, and the thread then
waits for the rest of the request as long as bytes trickle in: headers sent a line every
2 s, or a body declared long and sent a byte at a time, held every thread of `serve` and
no other client was answered. Here no thread waits for a client:

- the event loop (one per worker process, no thread) reads each connection's bytes as
  they come, until it holds the request line, the headers and the whole body;
- a request not whole REQUEST_SECONDS after its first byte (or its connection's accept)
  is answered 408 and its connection closed; headers over MAX_HEAD bytes 431;
- a body is taken only with a Content-Length, and of at most MAX_BODY bytes (the
  application's limit, a triage form being a few hundred bytes): a larger declared body
  is answered 413 at once, before a byte of it is read; a chunked one 411;
- only a whole request goes to a thread, which parses it from memory; its answer is
  written with a deadline of SEND_SECONDS, so a client that stops reading frees it.

A client that opens connections faster than REQUEST_SECONDS frees them holds at most
connection slots (gunicorn's worker_connections per worker), never a thread.
"""

import errno
import functools
import selectors
import socket
import time

from gunicorn import http
from gunicorn.workers.gthread import TConn, ThreadWorker

REQUEST_SECONDS = 10
SEND_SECONDS = 10
MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024  # perfscale.web.app.MAX_BODY
_READ = 64 * 1024


class _Request:
    """The bytes of whole requests, read by the event loop, for gunicorn's parser of the
    connection (it reads from anything with recv): never waits, so a parser that wanted
    more than a whole request (impossible) would see the connection end."""

    def __init__(self):
        self.data = bytearray()

    def feed(self, data):
        self.data += data

    def recv(self, size):
        chunk = bytes(self.data[:size])
        del self.data[:size]
        return chunk


def request_length(buffer):
    """How many of `buffer`'s first bytes make one whole request; None while more are
    to come; (status, reason) for a request that will not be taken."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return (431, "Request Header Fields Too Large") if len(buffer) > MAX_HEAD else None
    if end > MAX_HEAD:
        return 431, "Request Header Fields Too Large"
    lengths = set()
    for line in bytes(buffer[:end]).split(b"\r\n")[1:]:
        name, _sep, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip()
        if name == b"transfer-encoding":
            return 411, "Length Required"
        if name == b"content-length":
            if not value.isdigit():  # bytes: ASCII digits only
                return 400, "Bad Request"
            lengths.add(int(value))
    if len(lengths) > 1:
        return 400, "Bad Request"
    length = lengths.pop() if lengths else 0
    if length > MAX_BODY:
        return 413, "Request Entity Too Large"
    whole = end + 4 + length
    return whole if len(buffer) >= whole else None


class Worker(ThreadWorker):
    """gthread whose event loop reads each request whole before a thread takes it (the
    module's comment says why and how)."""

    def init_process(self):
        self._reading = set()
        super().init_process()

    def accept(self, server, listener):
        try:
            sock, client = listener.accept()
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK,
                                 errno.EMFILE, errno.ENFILE):
                raise
            return
        conn = TConn(self.cfg, sock, client, server)  # non-blocking
        conn.pending, conn.request = bytearray(), None
        self.nr_conns += 1
        self._read_request(conn)

    def _read_request(self, conn):
        """From now on the event loop reads `conn` until a request is whole."""
        conn.deadline = time.monotonic() + REQUEST_SECONDS
        with self._lock:
            self._reading.add(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 functools.partial(self._readable, conn))
        if conn.pending:  # a request sent behind the last one (pipelined) may be whole
            self._judge(conn)

    def _readable(self, conn, _sock):
        try:
            data = conn.sock.recv(_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client went away
            self._drop(conn)
            return
        conn.pending += data
        self._judge(conn)

    def _judge(self, conn):
        length = request_length(conn.pending)
        if length is None:
            if len(conn.pending) > MAX_HEAD + MAX_BODY:  # cannot happen; bounded anyway
                self._refuse(conn, 413, "Request Entity Too Large")
            return
        if isinstance(length, tuple):
            self._refuse(conn, *length)
            return
        with self._lock:
            self._reading.discard(conn)
            self.poller.unregister(conn.sock)
        request = bytes(conn.pending[:length])
        del conn.pending[:length]
        self._hand_over(conn, request)

    def _hand_over(self, conn, request):
        conn.sock.settimeout(SEND_SECONDS)  # blocking, but never past the deadline
        if conn.parser is None:
            conn.request = _Request()
            conn.parser = http.RequestParser(self.cfg, conn.request, conn.client)
        conn.request.feed(request)
        self._wrap_future(self.tpool.submit(self.handle, conn), conn)

    def _refuse(self, conn, status, reason):
        body = ("%d %s\n" % (status, reason)).encode()
        try:
            conn.sock.send(b"HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: text/plain"
                           b"\r\nContent-Length: %d\r\n\r\n%s" % (
                               status, reason.encode(), len(body), body))
        except OSError:
            pass  # a client that does not read its refusal loses it
        # Closed with bytes of the client's unread, the socket would answer with a reset that
        # can reach the client before it reads the refusal: send FIN first, then discard what
        # has arrived (without waiting for more: this is the event loop's thread).
        try:
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.setblocking(False)
            while conn.sock.recv(65536):
                pass
        except OSError:
            pass
        self._drop(conn)

    def _drop(self, conn):
        with self._lock:
            self._reading.discard(conn)
            try:
                self.poller.unregister(conn.sock)
            except (KeyError, ValueError, OSError):
                pass
        self.nr_conns -= 1
        conn.close()

    def reuse_connection(self, conn, client):
        """A kept-alive connection's next request: read whole by the event loop too."""
        with self._lock:
            self.poller.unregister(client)
            try:
                self._keep.remove(conn)
            except ValueError:
                return  # its keep-alive time ran out meanwhile: closed
        self._read_request(conn)

    def finish_request(self, fs):
        conn = fs.conn
        super().finish_request(fs)
        if conn.pending and conn in self._keep:  # already here: no byte will wake the loop
            self.reuse_connection(conn, conn.sock)

    def murder_keepalived(self):
        super().murder_keepalived()
        now = time.monotonic()
        with self._lock:
            late = [conn for conn in self._reading if conn.deadline <= now]
        for conn in late:
            self._refuse(conn, 408, "Request Timeout")
