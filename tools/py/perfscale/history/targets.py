"""What a history target names, read from its text alone: no database driver is imported.

The engine is chosen from the target's form, as rustc-perf's Pool::open picks its backend
from the URL's prefix: a postgresql:// (or postgres://) URL or a libpq key=value string
(service=NAME, host=... dbname=...) is a PostgreSQL server, anything else an SQLite file.
So a machine that keeps its history in SQLite never needs psycopg, which is imported only
when a server is opened (perfscale.history.postgres_engine).
"""

import re

SQLITE = "sqlite"
POSTGRESQL = "postgresql"

_URL_PASSWORD = re.compile(r"(?P<head>postgres(?:ql)?://[^:/@?#\s]*:)[^@/?#\s]*(?=@)")
_KEY_PASSWORD = re.compile(r"(?P<head>(?:^|[\s?&])password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)")


def is_server(target):
    """A PostgreSQL URL or a libpq key=value string (service=NAME, host=... dbname=...)."""
    text = str(target)
    return (text.startswith(("postgresql://", "postgres://"))
            or re.match(r"^\s*[a-z_]+\s*=", text) is not None)


def engine_of(target):
    """SQLITE or POSTGRESQL: the engine that opens `target`."""
    return POSTGRESQL if is_server(target) else SQLITE


def redact(text):
    """`text` with the passwords written in it (a URL's, a key=value string's) replaced by
    ***. A server's own password quoted elsewhere in a message is redacted by
    postgres_engine.redact, which parses the target with the driver."""
    text = _URL_PASSWORD.sub(r"\g<head>***", str(text))
    return _KEY_PASSWORD.sub(r"\g<head>***", text)
