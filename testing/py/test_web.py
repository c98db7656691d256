"""The dashboard (`tools/perfscale serve`) in a real browser: headless Chromium driven by
Selenium against a server started on a free loopback port over a history built here.

Screenshots of every page go to $PERFSCALE_WEB_ARTEFACTS (default: the test's temporary
folder); the user guide's pictures (docs/images/dashboard-*.png) are copies of them.
Skips when Chromium, its driver or Selenium is missing (tools/setup test installs them).
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import REPO_ROOT, Server, pg_history
import synthetic_history
from perfscale.history import cluster as db, store as history, transfer, views

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TOKEN = "triage-token-for-the-browser-test"
NIGHTS, STEP_AT = 30, 18

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="needs chromium and chromium-driver (tools/setup test)")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def built(tmp_path_factory, request):
    """The synthetic history, in an SQLite file or, imported from one, in a PostgreSQL
    database (the dashboard's queries run on both engines); "path" is what serve gets."""
    path = tmp_path_factory.mktemp("web") / "history.sqlite"
    built = synthetic_history.build(str(path), machines=4, nights=NIGHTS, benchmarks=3,
                                    step_at=STEP_AT)
    built["path"] = str(path)
    if request.param == "postgresql":
        server = request.getfixturevalue("pg_server")
        urls = pg_history(server, "t_web")
        with history.open_history(str(path), read_only=True) as source, \
                history.open_history(urls[db.OWNER]) as dest:
            transfer.copy_history(source, dest)
        # The roles a lab gives them: triage needs only the writer's grants.
        built["path"], built["reader"] = urls[db.WRITER], urls[db.READER]
    return built


@pytest.fixture(scope="module")
def server(built):
    srv = Server(built["path"], TOKEN)
    yield srv
    srv.stop()
    assert srv.proc.returncode == 0


@pytest.fixture(scope="module")
def readonly(built):
    srv = Server(built.get("reader", built["path"]))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory):
    path = os.environ.get("PERFSCALE_WEB_ARTEFACTS") or str(tmp_path_factory.mktemp("shots"))
    os.makedirs(path, exist_ok=True)
    return path


def _chromium_dirs(folder):
    return {n for n in os.listdir(folder) if n.startswith("org.chromium.Chromium.")}


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service
    # Chromium leaves its singleton socket folder (org.chromium.Chromium.XXXXXX) in TMPDIR
    # when its driver ends it: 25 of them had piled up in this machine's /tmp. It and its
    # driver get a TMPDIR of their own, removed with them; the system's must gain none.
    system_tmp = tempfile.gettempdir()
    before = _chromium_dirs(system_tmp)
    own_tmp = tempfile.mkdtemp(prefix="perfscale-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(CHROMEDRIVER, env=dict(os.environ, TMPDIR=own_tmp))
    try:
        driver = webdriver.Chrome(service=service, options=options)
        driver_pid = service.process.pid
        try:
            yield driver
        finally:
            driver.quit()  # ends chromium, then its driver
            if service.process is not None and service.process.poll() is None:
                os.kill(driver_pid, signal.SIGTERM)
    finally:
        shutil.rmtree(own_tmp, ignore_errors=True)
    leaked = _chromium_dirs(system_tmp) - before
    assert not leaked, "the browser left %s in %s" % (sorted(leaked), system_tmp)


def _console_errors(driver):
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def _until(driver, condition, seconds=20):
    """Waits for `condition` across a navigation. While one is under way, chromedriver
    answers a question about the old document with a stale element or with an "unhandled
    inspector error" (its execution context is gone); both mean "not yet", so neither ends
    the wait. A condition that never holds still fails, as a timeout."""
    WebDriverWait(driver, seconds, ignored_exceptions=(WebDriverException,)).until(condition)


def _open(driver, url):
    driver.get_log("browser")  # what an earlier page left
    driver.get(url)
    _until(driver, lambda d: d.execute_script("return document.readyState") == "complete")


def _chart(driver, canvas_id):
    """(datasets, points per dataset, lit pixels) of the chart drawn on `canvas_id`."""
    return driver.execute_script("""
        const canvas = document.getElementById(arguments[0]);
        const chart = Chart.getChart(canvas);
        if (!chart) return null;
        const ctx = canvas.getContext('2d');
        const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
        let lit = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) lit++;
        return [chart.data.datasets.length, chart.data.datasets.map(d => d.data.length), lit];
    """, canvas_id)


def _page_data(driver):
    return json.loads(driver.execute_script(
        "return document.getElementById('data').textContent"))


def _shoot(driver, artefacts, name):
    path = os.path.join(artefacts, "dashboard-%s.png" % name)
    driver.save_screenshot(path)
    assert os.path.getsize(path) > 10000
    return path


def _pages(built, srv):
    first = built["runs"][built["lineages"][0]]
    lineage_runs = [runs[-1] for runs in built["runs"].values()]
    name = built["step"][1]
    return {
        "fleet": srv.url + "/",
        "trend": srv.url + "/trend?" + urllib.parse.urlencode(
            [("name", name), ("run", lineage_runs[0]), ("run", lineage_runs[1])]),
        "run": "%s/run/%d" % (srv.url, first[STEP_AT]),
        "compare": "%s/compare?a=%d&b=%d" % (srv.url, first[STEP_AT - 1], first[STEP_AT]),
        "scaling": srv.url + "/scaling?" + urllib.parse.urlencode([("name", name)]),
        "releases": srv.url + "/releases?" + urllib.parse.urlencode([("name", name)]),
    }


def test_every_page_loads_without_a_console_error(built, server, browser, artefacts):
    for page, url in _pages(built, server).items():
        _open(browser, url)
        assert browser.find_element(By.TAG_NAME, "h1").text, page
        assert _console_errors(browser) == [], page
        _shoot(browser, artefacts, page)
        # Nothing is loaded from elsewhere: every script and stylesheet is the app's own.
        sources = browser.execute_script(
            "return Array.from(document.querySelectorAll('script[src],link[href]'))"
            ".map(e => e.getAttribute('src') || e.getAttribute('href'))")
        assert sources and all(s.startswith("/") and not s.startswith("//") for s in sources)


def test_the_trend_draws_each_lineage_its_band_change_points_and_counts(built, server,
                                                                         browser):
    _open(browser, _pages(built, server)["trend"])
    data = _page_data(browser)
    assert len(data["series"]) == 2
    expected = sum(1 + (2 if s["noise_floor"] is not None else 0) + (1 if s["changepoints"]
                                                                     else 0)
                   for s in data["series"])
    datasets, sizes, lit = _chart(browser, "trend-chart")
    assert datasets == expected and lit > 1000
    assert NIGHTS in sizes  # every night of a lineage, not downsampled at this length
    counts, _sizes, lit = _chart(browser, "counts-chart")
    assert counts == sum(len(s["counters"]) for s in data["series"]) >= 2 * 3 and lit > 1000
    stepped = data["series"][0]
    assert [abs(c["index"] - STEP_AT) <= 3 for c in stepped["changepoints"]] == [True]
    assert stepped["changepoints"][0]["change"] == pytest.approx(0.15, abs=0.05)
    assert data["series"][1]["changepoints"] == []  # the same benchmark, no step there
    assert [k["after"] for k in stepped["kernels"]] == ["6.1.0-28-amd64"]
    assert "not the nightly's verdict" in browser.find_element(By.TAG_NAME, "main").text


def test_clicking_a_point_opens_its_run(built, server, browser):
    _open(browser, _pages(built, server)["trend"])
    data = _page_data(browser)
    series = data["series"][0]
    index = next(i for i, d in enumerate(_chart_labels(browser))
                 if d == series["lineage"])
    k = 5
    x, y, width, height = browser.execute_script("""
        const canvas = document.getElementById('trend-chart');
        const el = Chart.getChart(canvas).getDatasetMeta(arguments[0]).data[arguments[1]];
        const box = canvas.getBoundingClientRect();
        return [el.x, el.y, box.width, box.height];""", index, k)
    ActionChains(browser).move_to_element_with_offset(
        browser.find_element(By.ID, "trend-chart"), int(x - width / 2),
        int(y - height / 2)).click().perform()
    run_id = series["points"][k]["run"]
    _until(browser, lambda d: d.current_url.endswith("/run/%d" % run_id), seconds=10)
    # The URL changes when the navigation starts; the run's page may not be there yet.
    _until(browser, lambda d: d.find_element(By.TAG_NAME, "h1").text == "Run %d" % run_id)
    assert _console_errors(browser) == []


def _chart_labels(driver):
    return driver.execute_script(
        "return Chart.getChart(document.getElementById('trend-chart'))"
        ".data.datasets.map(d => d.label)")


def test_the_scaling_page_has_a_point_per_lineage_labelled_with_its_machine(built, server,
                                                                            browser):
    _open(browser, _pages(built, server)["scaling"])
    data = _page_data(browser)
    assert len(data["points"]) == len(built["lineages"])
    datasets, sizes, lit = _chart(browser, "scaling-chart")
    assert datasets == len({(h, c) for h, _cpus, c in built["lineages"]})
    assert sum(sizes) == len(built["lineages"]) and lit > 1000


def test_the_releases_page_draws_each_lineage_against_the_kernel_release(built, server,
                                                                         browser):
    _open(browser, _pages(built, server)["releases"])
    data = _page_data(browser)
    # Every synthetic lineage changed kernel once (synthetic_history's kernel_change_at).
    assert data["releases"] == ["6.1.0-27-amd64", "6.1.0-28-amd64"]
    assert len(data["lines"]) == len(built["lineages"])
    datasets, sizes, lit = _chart(browser, "releases-chart")
    assert datasets == len(built["lineages"]) and set(sizes) == {2} and lit > 1000
    assert _console_errors(browser) == []


def _triage_rows(target):
    with history.open_history(target, read_only=True) as conn:
        return [tuple(r.values()) for r in views.rows(
            conn, "SELECT kind, name, run_id, state, who, why FROM triage ORDER BY changed_at")]


def _submit_triage(driver, state, token, heading, form="table.changepoints form",
                   why="known: <b>the</b> IPI batching"):
    """Fills the first triage form matching `form` (by default the first change point's),
    sends it, and waits for the answer's page: the page sent from must be gone first,
    since its heading may already read `heading`."""
    page = driver.find_element(By.TAG_NAME, "html")
    form = driver.find_element(By.CSS_SELECTOR, form)
    select = form.find_element(By.NAME, "state")
    for option in select.find_elements(By.TAG_NAME, "option"):
        if option.text == state:
            option.click()
    form.find_element(By.NAME, "who").send_keys("alice")
    form.find_element(By.NAME, "why").send_keys(why)
    form.find_element(By.NAME, "token").send_keys(token)
    form.find_element(By.TAG_NAME, "button").click()
    _until(driver, expected_conditions.staleness_of(page))
    _until(driver, lambda d: heading in d.find_element(By.TAG_NAME, "h1").text)


def test_triage_is_refused_without_the_token_and_stored_with_it(built, server, readonly,
                                                                browser):
    before = _triage_rows(built["path"])
    pages = _pages(built, server)
    _open(browser, pages["trend"])
    _submit_triage(browser, "acknowledged", "not-the-token-at-all", "403")
    assert _triage_rows(built["path"]) == before
    # The read-only server refuses even the right token, and shows no form.
    _open(browser, _pages(built, readonly)["trend"])
    assert browser.find_elements(By.CSS_SELECTOR, "form.triage-form") == []
    request = urllib.request.Request(readonly.url + "/triage", method="POST", data=(
        "kind=changepoint&host=x&cpus=1&config=c&name=n&run_id=1&state=fixed&who=a&why=b"
        "&token=" + TOKEN).encode())
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert _triage_rows(built["path"]) == before
    # With the token: stored, shown, and the change point's page says who and why.
    _open(browser, pages["trend"])
    _submit_triage(browser, "acknowledged", TOKEN, "Trend")
    rows = _triage_rows(built["path"])
    assert len(rows) == len(before) + 1
    kind, name, _run, state, who, why = rows[-1]
    assert (kind, name, state, who, why) == ("changepoint", built["step"][1], "acknowledged",
                                             "alice", "known: <b>the</b> IPI batching")
    text = browser.find_element(By.CSS_SELECTOR, "table.changepoints").text
    assert "acknowledged" in text and "known: <b>the</b> IPI batching" in text
    assert _console_errors(browser) == []


def test_a_hostile_benchmark_name_is_shown_as_text(built, server, browser, artefacts):
    hostile = synthetic_history.HOSTILE
    url = server.url + "/trend?" + urllib.parse.urlencode(
        [("name", hostile), ("run", built["runs"][built["lineages"][0]][-1])])
    for page in (url, "%s/run/%d" % (server.url, built["runs"][built["lineages"][0]][-1]),
                 server.url + "/scaling?" + urllib.parse.urlencode([("name", hostile)])):
        _open(browser, page)
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text
        assert hostile in browser.find_element(By.TAG_NAME, "main").text
        assert browser.execute_script("return document.querySelectorAll("
                                      "'main script:not([type=\"application/json\"])').length") == 0
        assert _console_errors(browser) == []
    _open(browser, url)
    assert browser.find_element(By.ID, "benchmark").text == hostile
    _shoot(browser, artefacts, "hostile")


def test_nothing_outside_the_application_is_served(server):
    for path in ("/static/../app.py", "/static/%2e%2e/app.py", "/vendor/../../etc/passwd",
                 "/static/../../history/store.py", "/etc/passwd"):
        try:
            with urllib.request.urlopen(server.url + path, timeout=10) as response:
                status = response.status
        except urllib.error.HTTPError as err:
            status = err.code
        assert status == 404, path
    # A redirect after triage never leaves the application.
    request = urllib.request.Request(server.url + "/triage", method="POST", data=(
        "kind=regression&host=machine-00&cpus=2&config=--quick&name=x&run_id=1&state=new"
        "&who=a&why=b&next=//elsewhere.invalid/&token=" + TOKEN).encode())

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *_args):
            return None
    with pytest.raises(urllib.error.HTTPError) as redirect:
        urllib.request.build_opener(NoRedirect).open(request, timeout=10)
    assert redirect.value.code == 303 and redirect.value.headers["Location"] == "/"


def _status(request):
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_a_number_too_large_for_the_history_is_404_or_400_never_500(built, server):
    """Ids past a history's 64-bit integers (1e20): pages answer 404, forms 400, on both
    engines (SQLite overflowed into a 500 and a traceback)."""
    huge = "100000000000000000000"
    for path in ("/run/" + huge, "/trend?run=" + huge, "/compare?a=1&b=" + huge,
                 "/compare.txt?a=%s&b=1" % huge, "/alert/" + huge,
                 "/compare?run=%s&kernel_a=6.1&kernel_b=6.12" % huge,
                 "/compare?run=-5&kernel_a=6.1&kernel_b=6.12"):
        assert _status(server.url + path) == 404, path
    for field in ("run_id", "cpus"):
        form = {"kind": "regression", "host": "machine-00", "machine": "", "cpus": "2",
                "config": "--quick", "name": "x", "run_id": "1", "state": "new",
                "who": "a", "why": "b", "token": TOKEN}
        form[field] = huge
        request = urllib.request.Request(server.url + "/triage", method="POST",
                                         data=urllib.parse.urlencode(form).encode())
        assert _status(request) == 400, field
    request = urllib.request.Request(server.url + "/alert/%s/state" % huge, method="POST",
                                     data=("state=fixed&who=a&why=b&token=" + TOKEN).encode())
    assert _status(request) == 404


def test_the_compare_page_exports_the_regression_mail(built, server):
    pages = _pages(built, server)
    url = pages["compare"].replace("/compare?", "/compare.txt?")
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    assert "%stddev" in text and "%change" in text
    assert "%s.real_time_ns" % built["step"][1] in text
    assert "%s.xcalls/op" % built["step"][1] in text  # the count that doubled
    assert "tools/perfscale nightly --history" in text


def test_serve_refuses_what_it_cannot_serve(tmp_path, cli):
    code, _out, err = cli("serve", "--history", tmp_path / "missing.sqlite")
    assert code == 2 and "no such history" in err
    not_history = tmp_path / "notes.sqlite"
    not_history.write_text("hello")
    code, _out, err = cli("serve", "--history", not_history)
    assert code == 2 and "not an SQLite file, so not a history" in err
    with pytest.raises(SystemExit) as usage:
        cli("serve", "--history", not_history, "--listen", "8080")
    assert usage.value.code == 2


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def alerted(tmp_path_factory, request):
    """A history whose step moved two machines at one kernel release, its nights judged
    into alerts as the nightly does, in SQLite or PostgreSQL; and a server on it."""
    target = str(tmp_path_factory.mktemp("alerts") / "history.sqlite")
    serve = target
    if request.param == "postgresql":
        urls = pg_history(request.getfixturevalue("pg_server"), "t_web_alerts")
        target, serve = urls[db.OWNER], urls[db.WRITER]
    built = synthetic_history.build(target, machines=4, nights=NIGHTS, benchmarks=3,
                                    step_at=STEP_AT, kernel_change_at=STEP_AT,
                                    step_lineages=2, alerts=True, judge=False)
    srv = Server(serve, TOKEN)
    yield dict(built, path=target, server=srv)
    srv.stop()
    assert srv.proc.returncode == 0


def _submit_alert(driver, state, token, heading):
    _submit_triage(driver, state, token, heading, "form.alert-form",
                   "the <b>new</b> level is the kernel's")


def test_an_alert_is_opened_grouped_acknowledged_and_fixed(alerted, browser, artefacts):
    from perfscale.history import alerts
    srv = alerted["server"]
    _open(browser, srv.url + "/")
    # One alert for twelve nights on two machines, not 24 open regressions.
    rows = browser.find_elements(By.CSS_SELECTOR, "table#alerts tr")[1:]
    assert len(rows) == 1
    cells = [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")]
    assert cells[:3] == ["#1", "new", "regression"]
    assert cells[3] == "6.1.0-27-amd64 → 6.1.0-28-amd64" and cells[4:7] == ["1", "2", "12"]
    assert browser.find_elements(By.CSS_SELECTOR, "table.open-regressions") == []
    _shoot(browser, artefacts, "fleet-alerts")
    browser.find_element(By.CSS_SELECTOR, "a.alert-link").click()
    _until(browser, lambda d: "Alert #1" in d.find_element(By.TAG_NAME, "h1").text)
    members = browser.find_elements(By.CSS_SELECTOR, "table#members tr")[1:]
    assert len(members) == 2 and all("+15.0%" in m.text and "+12.0%..+18.0%" in m.text
                                     for m in members)
    # The calibration synthetic_history stores: a 6% minimum detectable change.
    assert [m.find_element(By.CSS_SELECTOR, "td.mdc").text for m in members] == ["6.0%"] * 2
    # The synthetic step doubles its benchmark's xcalls/op: the count that moved with it.
    assert all(m.find_element(By.CSS_SELECTOR, "td.counts").text.startswith("xcalls/op 2")
               and "→ 4" in m.find_element(By.CSS_SELECTOR, "td.counts").text
               for m in members)
    bisect = browser.find_element(By.CSS_SELECTOR, "pre.bisect").text
    # Two Debian kernels of one series: the updates between them filled in, as vm names them.
    assert bisect.startswith("tools/perfscale bisect --good debian:6.1.0-27 --bad "
                             "debian:6.1.0-28 --kernels debian:6.1.0-27,debian:6.1.0-28 "
                             "--benchmark '^BM_BreakpointThread/breakpoints:0/")
    assert "--counter xcalls/op" in bisect
    assert len(browser.find_elements(By.CSS_SELECTOR, "a.trend-link")) == 2
    _shoot(browser, artefacts, "alert")
    alert_url = browser.current_url
    _submit_alert(browser, "acknowledged", "not-the-token-at-all", "403")
    _open(browser, alert_url)
    _submit_alert(browser, "acknowledged", TOKEN, "Alert #1: acknowledged")
    _submit_alert(browser, "fixed", TOKEN, "Alert #1: fixed")
    log = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table#alert-log tr")[1:]]
    assert len(log) == 3 and "alice" in log[2] and "the <b>new</b> level" in log[2]
    with history.open_history(alerted["path"], read_only=True) as conn:
        assert [r["state"] for r in alerts.log(conn, 1)] == ["new", "acknowledged", "fixed"]
    _open(browser, srv.url + "/")
    assert "No open alert." in browser.find_element(By.TAG_NAME, "main").text
    assert _console_errors(browser) == []


def test_alerts_set_goes_through_the_dashboard_with_its_token(alerted, cli, monkeypatch,
                                                              tmp_path):
    from perfscale.history import alerts
    srv = alerted["server"]
    argv = ("alerts", "set", "1", "--state", "invalid", "--who", "bob", "--why",
            "a throttled rack", "--dashboard", srv.url)
    monkeypatch.delenv("PERFSCALE_TRIAGE_TOKEN", raising=False)
    code, _, err = cli(*argv)
    assert code == 2 and "needs the triage token" in err
    monkeypatch.setenv("PERFSCALE_TRIAGE_TOKEN", "not-the-token-at-all")
    code, _, err = cli(*argv)
    assert code == 2 and "answered 403" in err
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    code, out, err = cli(*argv, "--token-file", token_file)
    assert code == 0 and "alert #1: invalid" in out, err
    with history.open_history(alerted["path"], read_only=True) as conn:
        last = alerts.log(conn, 1)[-1]
        assert (last["state"], last["who"], last["why"]) == ("invalid", "bob",
                                                             "a throttled rack")


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("workers", [2, 0])
def test_serve_runs_gunicorn_workers_and_stops_them_all(built, workers):
    """--workers N: gunicorn's master and N workers, every one gone after SIGTERM, exit 0;
    --workers 0: Werkzeug's server, one process."""
    from conftest import alive, wait_for
    proc = subprocess.Popen(
        [os.path.join(REPO_ROOT, "tools", "py", "python"), "-m", "perfscale.cli", "serve",
         "--history", built["path"], "--listen", "127.0.0.1:0", "--workers", str(workers)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert "http://" in line, line
        url = line.split()[2]
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert answer.status == 200
        assert wait_for(lambda: len(_children(proc.pid)) == workers, 20)
        children = _children(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == 0
    assert not any(alive(pid) for pid in children)
