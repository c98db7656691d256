"""An HTTP request to a server (LAVA, KCIDB, the dashboard) answered within a deadline,
all told, and never sent on to another host.

urllib's timeout bounds each wait on the socket, not the answer: a server that sends a
byte every few seconds holds the caller for as long as it likes (measured: `history
import --lava` and `kcidb --submit` still waiting after 150 s on one that sent a space
every 5 s). Here a timer cuts the connection once `seconds` have passed, and what was cut
is a TimeoutError, never a partial answer taken for a whole one.

    body = deadline.read(urllib.request.Request(url), 60)

A redirect is followed only to the same scheme, host and port: urllib's own handler sends
every header of the request on to wherever the server points, the token too (measured:
`alerts set --dashboard`, `kcidb --submit` and `lava submit` each sent theirs to a second
server that a 307 named). A redirect elsewhere is a URLError that says where it led.
"""

import http.client
import io
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request


def shown_url(url):
    """`url` without a user or password, as it may be printed."""
    try:
        parts = urllib.parse.urlsplit(url)
        netloc = parts.hostname or ""
        if parts.port:
            netloc += ":%d" % parts.port
    except ValueError:  # an unclosed [IPv6, a port that is no number: the scheme alone
        return "%s://..." % url.partition("://")[0][:20]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def origin(url):
    """(scheme, host, port) of `url`: what a redirect must keep for the token to go along."""
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def check_url(url):
    """ValueError (saying why, without credentials) unless `url` is an http(s) URL with a
    host and, if any, a numeric port: what urllib would otherwise refuse deep inside a
    request (an unclosed [IPv6, no scheme), or open as a file (file://)."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # ValueError for a port that is not a number
    except ValueError as err:
        raise ValueError("%s is not a URL (%s)" % (shown_url(url), err)) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("%s is not an http(s) URL of a server" % shown_url(url))


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if origin(newurl) != origin(req.full_url):
            fp.close()
            raise urllib.error.URLError(
                "it redirected to %s, another host: not followed, so the token was not "
                "sent there" % shown_url(newurl))
        return super().redirect_request(req, fp, code, msg, headers, newurl)


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
    opener = urllib.request.build_opener(_Http(watch), _Https(watch), _SameOrigin())
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
