"""What the hostile sweep of issue 38 item 9 found (alerts, the dashboard's production
server, the LAVA import, the KCIDB submit, the browser tests), one test each. The cases
and what main at 1849e5c did: docs/measurements/2026-12-04-hostile-sweep.md.

Each failed on that main. Run:
    tools/py/python -m pytest -q testing/py/test_hostile_sweep_38.py
"""

import pytest

import synthetic_history

TOKEN = "a-triage-token-of-the-sweep"


@pytest.fixture(scope="module")
def alerted(tmp_path_factory):
    """A small history with one open alert (#1)."""
    path = str(tmp_path_factory.mktemp("alerts") / "history.sqlite")
    synthetic_history.build(path, machines=2, nights=12, benchmarks=1, step_at=8,
                            kernel_change_at=8, step_lineages=2, alerts=True, judge=False,
                            calibrate=False)
    return path


NOT_UTF8 = b"\xff\xfe".decode("utf-8", "surrogateescape")  # what argv holds for such bytes


@pytest.mark.parametrize("who, why, words", [
    ("ops", NOT_UTF8, "UTF-8"),
    (NOT_UTF8 + "<script>", "x", "UTF-8"),
    ("ops", "a\x00b", "NUL"),
])
def test_alerts_set_refuses_text_no_history_can_store(cli, alerted, who, why, words):
    """Before: UnicodeEncodeError from the driver, a traceback, exit 1 (a NUL: stored on
    SQLite, refused by PostgreSQL with its own error)."""
    code, out, err = cli("alerts", "set", "1", "--state", "acknowledged", "--who", who,
                         "--why", why, "--history", alerted)
    assert code == 2 and words in err and "Traceback" not in err, (out, err)


def test_alerts_set_of_an_id_past_64_bits_is_no_alert(cli, alerted):
    """Before: OverflowError, a traceback, exit 1."""
    code, _, err = cli("alerts", "set", str(10 ** 20), "--state", "acknowledged", "--who",
                       "a", "--why", "b", "--history", alerted)
    assert code == 2 and err.strip() == "alerts: no alert #%d" % 10 ** 20


@pytest.mark.parametrize("url", ["file:///etc/passwd", "notaurl", "http://[::1",
                                 "http://host:port", "ftp://host/"])
def test_alerts_set_dashboard_must_be_an_http_address(cli, monkeypatch, url):
    """Before: file:// was opened as a file; no scheme or an unclosed [ raised ValueError
    from urllib, a traceback, exit 1."""
    monkeypatch.setenv("PERFSCALE_TRIAGE_TOKEN", TOKEN)
    with pytest.raises(SystemExit) as stop:
        cli("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why", "b",
            "--dashboard", url)
    assert stop.value.code == 2


def test_alerts_set_through_the_dashboard_checks_the_text_first(cli, monkeypatch):
    """Before: UnicodeEncodeError in urlencode, a traceback, exit 1; now the dashboard's
    rules are said before anything is sent (nothing listens on this port)."""
    monkeypatch.setenv("PERFSCALE_TRIAGE_TOKEN", TOKEN)
    code, _, err = cli("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why",
                       NOT_UTF8, "--dashboard", "http://127.0.0.1:9")
    assert code == 2 and err.strip() == "alerts: who and why must be UTF-8 text"


def test_the_alert_form_refuses_a_nul_on_either_engine(alerted):
    """Before: SQLite stored the NUL in the log; the same form on PostgreSQL failed in the
    driver (a NUL is no text there)."""
    from perfscale.web import app as web_app
    client = web_app.create_app(alerted, TOKEN).test_client()
    page = client.post("/alert/1/state", data={"state": "acknowledged", "who": "a",
                                               "why": "x\x00y"},
                       headers={web_app.TOKEN_HEADER: TOKEN})
    assert page.status_code == 400
    assert "NUL" in page.get_data(as_text=True)
