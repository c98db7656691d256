"""An HTTP request to a lab's server (LAVA, KCIDB) answered within a deadline, all told.

urllib's timeout bounds each wait on the socket, not the answer: a server that sends a
byte every few seconds holds the caller for as long as it likes (measured: `history
import --lava` and `kcidb --submit` still waiting after 150 s on one that sent a space
every 5 s). Here a timer cuts the connection once `seconds` have passed, and what was cut
is a TimeoutError, never a partial answer taken for a whole one.

    body = deadline.read(urllib.request.Request(url), 60)
"""

import http.client
import io
import socket
import threading
import urllib.error
import urllib.request


class _Watch:
    """The sockets of one request, cut (shut down) when its time is up."""

    def __init__(self):
        self.socks, self.cut_off, self.lock = [], False, threading.Lock()

    def add(self, sock):
        with self.lock:
            self.socks.append(sock)
            if self.cut_off:
                self._shut(sock)

    def cut(self):
        with self.lock:
            self.cut_off = True
            for sock in self.socks:
                self._shut(sock)

    @staticmethod
    def _shut(sock):
        try:
            sock.shutdown(socket.SHUT_RDWR)  # a blocked recv returns at once
        except OSError:
            pass


def _watched(base, watch):
    class Connection(base):
        def connect(self):
            super().connect()
            watch.add(self.sock)
    return Connection


class _Http(urllib.request.HTTPHandler):
    def __init__(self, watch):
        super().__init__()
        self.watch = watch

    def http_open(self, req):
        return self.do_open(_watched(http.client.HTTPConnection, self.watch), req)


class _Https(urllib.request.HTTPSHandler):
    def __init__(self, watch):
        super().__init__()
        self.watch = watch

    def https_open(self, req):
        return self.do_open(_watched(http.client.HTTPSConnection, self.watch), req,
                            context=self._context)


def read(request, seconds):
    """The body (bytes) of the answer to `request` (a urllib Request), which must come
    whole within `seconds`. Raises urllib's HTTPError for an error status (its body still
    readable), TimeoutError when time is up, OSError (URLError) when the server cannot be
    reached."""
    watch = _Watch()
    opener = urllib.request.build_opener(_Http(watch), _Https(watch))
    timer = threading.Timer(seconds, watch.cut)
    timer.daemon = True
    timer.start()
    try:
        with opener.open(request, timeout=seconds) as reply:
            body = reply.read()
    except urllib.error.HTTPError as err:
        try:  # its body too within the time, for the caller's message
            text = err.read()
        except (OSError, http.client.HTTPException):
            text = b""
        raise urllib.error.HTTPError(err.url, err.code, err.msg, err.hdrs,
                                     io.BytesIO(text)) from None
    except (OSError, http.client.HTTPException) as err:
        if watch.cut_off:
            raise TimeoutError("no whole answer within %g s" % seconds) from None
        if isinstance(err, OSError):
            raise
        raise OSError("a broken answer: %s" % (err.__class__.__name__,)) from None
    finally:
        timer.cancel()
    if watch.cut_off:  # a server without Content-Length: the cut looked like the end
        raise TimeoutError("no whole answer within %g s" % seconds)
    return body
