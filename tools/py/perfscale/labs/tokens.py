"""The token a server (LAVA, KCIDB, the dashboard's triage) wants with a request: read
from a file or the environment, never from the command line (where ps and the shell's
history show it), checked once here, and never printed.

    token = tokens.read(args.token_file, "PERFSCALE_LAVA_TOKEN")

A token goes into an HTTP header, which carries one line of Latin-1: a second line in
the file, a control character or a letter outside ASCII made http.client raise with the
whole header, token and all, in its message (a traceback, or a one-line refusal that
quoted it). Such a token is refused here, and what is said about it never holds it.
"""

import os


class TokenError(ValueError):
    """A token that cannot be read or used; the text never holds the token."""


def read(path, env):
    """The token from the file `path`, else from the environment variable `env`; '' when
    neither gives one. TokenError when the file cannot be read, or the token is not one
    line of printable ASCII."""
    if path:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as err:
            raise TokenError("token file %s: %s" % (path, err.strerror or err)) from None
        where = "the token in %s" % path
    else:
        raw = os.environb.get(env.encode(), b"")
        where = "$%s" % env
    token = raw.strip()
    if token and not all(0x20 <= byte < 0x7f for byte in token):
        raise TokenError("%s is not one line of printable ASCII, which an HTTP header "
                         "cannot carry (a second line, a control character or a letter "
                         "outside ASCII?); it is not shown" % where)
    return token.decode("ascii")
