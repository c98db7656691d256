"""The dashboard: the nightly history in a browser (`tools/perfscale serve`).

Pages: Fleet (every lineage's last night, the open alerts), Alert (one change: what
moved, where, by how much, the kernel range and its bisect command; triage), Trend (one benchmark over time, noise band,
kernels, change points, counts below), Run (the report of one run), Compare (any two
runs: the gate's table, and the regression mail), Scaling (one benchmark against CPU
count across machines). Reading needs nothing; a triage change needs the token the
server was started with, and without one the server never writes.

Every figure comes from the store package's queries (history/views.py, history/triage.py);
this module only shapes them for templates and charts. Every string that came from a
result file reaches the browser as text: Jinja escapes it in the templates, and the
charts' data travels as JSON in a <script type="application/json"> block that the page's
own script reads with textContent and shows with textContent, never as markup.
"""

import collections
import datetime
import functools
import hashlib
import hmac
import json
import math
import os
import statistics
import threading

import flask
import markupsafe
from werkzeug import exceptions as werkzeug_exceptions

from perfscale.gate import changepoints, stats, steps
from perfscale.gate.floors import BASELINE_RUNS, for_lineage
from perfscale.history import alerts, store, triage, views
from perfscale.plots import alert_view, kernels
from perfscale.plots import mail
from perfscale.plots.page import Page
from perfscale.plots import report
from perfscale.results import io
from perfscale.results.names import display_name
from perfscale.web.cache import SharedCache

CHART_JS_DIR = "/usr/share/javascript/chart.js"  # Debian's libjs-chart.js (tools/setup)
DEFAULT_DAYS = 14   # the fleet page's window: passed / regressed / silent over it
MAX_POINTS = 800    # a trend series longer than this is downsampled (a screen's width)
TOTAL_POINTS = 2400  # over all of a trend page's lineages: its data stays under 1 MB
MAX_LINEAGES = 8    # on one trend page
TOKEN_HEADER = "X-Perfscale-Token"
POOL_SIZE = 8  # PostgreSQL connections per server process (serve's threads, and some)
MAX_BODY = 64 * 1024  # a triage form is a few hundred bytes (perfscale.web.worker too)
CLOCK_SECONDS = 60  # how long a page that reads the clock (the fleet's window) is kept
_HERE = os.path.dirname(os.path.abspath(__file__))


def create_app(history_path, token=None, cache=None):
    """The Flask application over `history_path`. token: the triage token (None: the
    application is read-only and opens the history read-only). cache: where pages are
    kept (perfscale.web.cache; None: a new private folder), made before gunicorn forks
    so that every worker shares it."""
    app = flask.Flask("perfscale.web", template_folder=os.path.join(_HERE, "templates"),
                      static_folder=os.path.join(_HERE, "static"), static_url_path="/static")
    target = history_path if store.is_server(history_path) else os.path.abspath(
        history_path)
    app.config.update(HISTORY=target, TOKEN=token or None, MAX_CONTENT_LENGTH=MAX_BODY,
                      CACHE=cache or SharedCache())
    # Refuses what is not a history; with a token, brings an older one to this schema
    # (the triage tables are in it) so that every request below only reads or triages.
    # Its pages are not all read first: 14.5 s for a fleet's 6.8 GB year before a server
    # answered. A damaged page fails the request that meets it, as the history's error
    # (503, naming the file and `.recover`); the nightly, which writes, checks them all.
    store.open_history(target, read_only=not token, check_pages=False).close()
    if store.is_server(target):
        # Each request's connection borrowed from a pool of its process (made in each
        # gunicorn worker on its first request, after the fork), not a new one each time.
        from perfscale.history import postgres_engine
        postgres_engine.use_pool(target, POOL_SIZE)
    _routes(app)
    # Compiled here, once, before gunicorn forks: a worker's first page of each kind paid
    # Jinja's compilation (a second of the first compare page on the loaded VM).
    for name in app.jinja_env.list_templates():
        app.jinja_env.get_template(name)
    return app


# Each request thread's SQLite connection, kept for its next request: a new connection
# parses the history's schema on its first statement, a quarter of a kept page's time.
# Each statement outside a transaction reads the file as last committed, so a kept
# connection sees every write; one of another file (moved, replaced) is not kept.
_threads = threading.local()


def _db():
    if "db" not in flask.g:
        config = flask.current_app.config
        target, read_only = config["HISTORY"], not config["TOKEN"]
        if store.is_server(target):  # borrowed from the process's pool
            flask.g.db = store.open_history(target, read_only=read_only, check_pages=False)
            return flask.g.db
        # A writer's open creates a missing SQLite file: a history moved or deleted under a
        # server with a token came back empty ('no alert #1', triage into a new file).
        try:
            found = os.stat(target)
        except FileNotFoundError:
            found = None
        if found is None or not os.path.isfile(target):
            raise store.HistoryError("%s: the history is gone (moved or deleted since the "
                                     "server started); nothing was made in its place"
                                     % target)
        which = (target, read_only, found.st_dev, found.st_ino)
        kept = getattr(_threads, "sqlite", None)
        if kept is None or kept[0] != which:
            if kept is not None:
                kept[1].close()
                _threads.sqlite = None
            # No token: opened read-only, so this server cannot write, whatever its code
            # does. Its pages are not read in full, at start or here (create_app says why).
            _threads.sqlite = (which, store.open_history(target, read_only=read_only,
                                                         check_pages=False))
        flask.g.db, flask.g.db_kept = _threads.sqlite[1], True
    return flask.g.db


def _stamp():
    """The history's change stamp, read once per request before anything else."""
    if "stamp" not in flask.g:
        flask.g.stamp = store.change_stamp(_db())
    return flask.g.stamp


def _shared():
    """The server's cache as of this request's stamp (what gate.floors learns goes there)."""
    return flask.current_app.config["CACHE"].at(_stamp())


def kept(clock=False):
    """A page computed once per change of the history and shared by every worker and
    client (perfscale.web.cache), with an ETag that answers 304 while it holds. clock: the
    page also reads the time (the fleet page's window and silent lineages): made again
    after CLOCK_SECONDS, by one request while the others take the one kept. Only a 200 is
    kept; an abort or an error goes as it came."""
    def wrap(view):
        @functools.wraps(view)
        def page(**kwargs):
            cache, request = flask.current_app.config["CACHE"], flask.request
            try:
                head, _sep, body = cache.get_or_make(
                    _stamp(), "%s %s" % (view.__name__, request.full_path),
                    lambda: _to_kept(view(**kwargs)),
                    CLOCK_SECONDS if clock else None).partition(b"\n")
            except _NotKept as other:
                return other.response
            head = json.loads(head)
            if head["etag"] in request.if_none_match:
                answer = flask.Response(status=304)
            else:
                answer = flask.Response(body, mimetype=head["mimetype"])
            answer.set_etag(head["etag"])
            answer.headers["Cache-Control"] = "no-cache"  # asked again each time: a 304
            return answer
        return page
    return wrap


class _NotKept(Exception):
    """A response that is not a page (a redirect, say): returned, not kept."""

    def __init__(self, response):
        super().__init__(response.status)
        self.response = response


def _to_kept(result):
    """A page as kept: a line of JSON (its type, its ETag: a digest of the page and the
    stamp it was made at), then the page."""
    response = flask.make_response(result)
    if response.status_code != 200 or response.direct_passthrough:
        raise _NotKept(response)
    body = response.get_data()
    tag = hashlib.sha256(_stamp().encode() + b"\n" + body).hexdigest()[:32]
    return json.dumps({"mimetype": response.mimetype, "etag": tag}).encode() + b"\n" + body


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _since(days):
    return (_now() - datetime.timedelta(days=days)).isoformat(timespec="seconds")


def _age_days(recorded_at):
    try:
        when = datetime.datetime.fromisoformat(recorded_at)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return (_now() - when).total_seconds() / 86400


def _states(conn, host, machine, cpus, config):
    return triage.states(conn, host, machine, cpus, config)


# Ids and counts a history can hold: SQLite's and PostgreSQL's integers are signed 64-bit,
# and a larger number from a URL or a form must be a 404 or 400, not an overflow (500).
_MAX_DB_INT = (1 << 63) - 1
_ID = "int(max=%d)" % _MAX_DB_INT


def db_int(text):
    """`text` as an integer a history can store (0..2^63-1); ValueError otherwise (Flask's
    args.get(type=int) then gives the default)."""
    value = int(text)
    if not 0 <= value <= _MAX_DB_INT:
        raise ValueError("%s is out of range" % text)
    return value


def _run_or_404(conn, run_id):
    run = store.get_run(conn, run_id) if 0 <= run_id <= _MAX_DB_INT else None
    if run is None:
        flask.abort(404, "no run %d in this history" % run_id)
    return run


def _lineage(run):
    """(host, machine, cpus, config): the store's lineage."""
    return run["host"], run["machine"], run["cpus"], run["config"]


def _label(lineage):
    host, machine, cpus, config = lineage
    return "%s, %d CPUs, %s%s" % (host, cpus, config or "default config",
                                  ", machine %s" % machine[:8] if machine else "")


@functools.lru_cache(maxsize=4096)
def _changepoints(values):
    """E-Divisive over a series (a tuple, so the answer is kept for the next request)."""
    return tuple(changepoints.detect(values))


def downsample(points, keep, limit=MAX_POINTS):
    """At most about `limit` of `points` (oldest first), every index in `keep` kept: per
    bucket of consecutive points, the one whose value is the bucket's median, so every
    point drawn is a real run with its link."""
    if len(points) <= limit:
        return list(points)
    size = math.ceil(len(points) / limit)
    out = []
    for start in range(0, len(points), size):
        bucket = list(range(start, min(start + size, len(points))))
        kept = [i for i in bucket if i in keep]
        valued = sorted((i for i in bucket if points[i]["y"] is not None),
                        key=lambda i: points[i]["y"])
        chosen = set(kept)
        if valued:
            chosen.add(valued[len(valued) // 2])
        out += [points[i] for i in sorted(chosen)]
    return out


def trend_data(conn, name, lineage_runs):
    """What the trend page draws: per lineage its points, noise band, kernel changes and
    change points, and the attributed counts, as one JSON-able dict."""
    series = []
    for run in lineage_runs:
        lineage = _lineage(run)
        rows = views.trend(conn, name, *lineage)
        host, machine, cpus, config = lineage
        calibration = store.load_calibration(conn, host, cpus, config, machine,
                                             name).get((name, stats.REAL_TIME))
        values = tuple(r["median_ns"] if r["median_ns"] is not None else math.nan
                       for r in rows)
        found = _changepoints(values)
        states = _states(conn, *lineage)
        points, kernels, keep = [], [], set()
        for i, row in enumerate(rows):
            if i and row["kernel"] != rows[i - 1]["kernel"]:
                kernels.append({"x": row["recorded_at"], "run": row["run_id"],
                                "before": rows[i - 1]["kernel"], "after": row["kernel"]})
                keep.add(i)
            if row["verdict"] in views.REGRESSION_VERDICTS:
                keep.add(i)
            band = None
            if calibration is not None:
                window = [v for v in values[max(0, i - BASELINE_RUNS):i]
                          if v == v]
                if window:
                    centre = statistics.median(window)
                    band = [centre * (1 - calibration.noise_floor),
                            centre * (1 + calibration.noise_floor)]
            points.append({"x": row["recorded_at"], "y": row["median_ns"],
                           "run": row["run_id"], "kernel": row["kernel"],
                           "verdict": row["verdict"], "band": band,
                           "counters": {k: v for k, v in row["counters"].items()
                                        if stats.counter_kind(k)}})
        steps = []
        for point in found:
            keep.add(point.index)
            row, before = rows[point.index], rows[point.index - 1]
            item = triage.Item("changepoint", *lineage, name, row["run_id"])
            state = states.get(item)
            steps.append({"x": row["recorded_at"], "run": row["run_id"], "index": point.index,
                          "kernel_before": before["kernel"], "kernel_after": row["kernel"],
                          "change": point.change, "pvalue": point.pvalue,
                          "before_ns": point.before, "after_ns": point.after,
                          "item": _item_dict(item),
                          "state": _state_dict(state)})
        counters = sorted({k for p in points for k in p["counters"]})
        series.append({"lineage": _label(lineage), "host": host, "machine": machine,
                       "cpus": cpus, "config": config, "runs": len(points),
                       "noise_floor": calibration.noise_floor if calibration else None,
                       "points": downsample(points, keep, min(
                           MAX_POINTS, TOTAL_POINTS // len(lineage_runs))),
                       "kernels": kernels,
                       "changepoints": steps, "counters": counters})
    return {"benchmark": name, "series": series}


def _item_dict(item):
    return {"kind": item.kind, "host": item.host, "machine": item.machine, "cpus": item.cpus,
            "config": item.config, "name": item.name, "run_id": item.run_id}


def _state_dict(row):
    if row is None:
        return {"state": "new", "who": "", "changed_at": "", "why": ""}
    return {k: row[k] for k in ("state", "who", "changed_at", "why")}


def _entries_runs(conn, run_ids):
    return [store.load_entries(conn, run_id) for run_id in run_ids]


# The verdicts of a pair of runs, kept in each server process for the next request of the
# same pair (the page, then its mail export, then a reload): the gate's bootstrap over 200
# benchmarks is most of a second. A run's figures never change once recorded, so the key
# is the two ids and every floor the verdicts were judged with: a new calibration or
# passing run of the lineage is another key.
_VERDICTS_KEPT = 64
_verdicts = collections.OrderedDict()
_verdicts_lock = threading.Lock()


def compare_runs(conn, base, head):
    """The gate's verdicts of run `head` against run `base` (one run each side), with the
    lineage's calibration when both are of one lineage. The list is shared: read it,
    never change it."""
    floors = {}
    if _lineage(base) == _lineage(head):
        host, machine, cpus, config = _lineage(head)
        floors, _source = for_lineage(conn, host, cpus, config, stats.DEFAULT_ALPHA,
                                      machine, _shared())
    key = (conn.name, tuple((r["id"], r["recorded_at"], r["complete"]) for r in (base, head)),
           tuple(sorted((k, c.noise_floor, c.mdc, c.sigma) for k, c in floors.items())))
    with _verdicts_lock:
        if key in _verdicts:
            _verdicts.move_to_end(key)
            return _verdicts[key]
    verdicts = stats.compare_runs(_entries_runs(conn, [base["id"]]),
                                  _entries_runs(conn, [head["id"]]), stats.Options(), floors)
    with _verdicts_lock:
        _verdicts[key] = verdicts
        while len(_verdicts) > _VERDICTS_KEPT:
            _verdicts.popitem(last=False)
    return verdicts


def compare_mail(conn, base, head, verdicts):
    names = [v.name for v in verdicts if v.regression]
    run_args = json.loads(head["run_args"])
    host, _machine, cpus, config = _lineage(head)
    return mail.regression_mail(
        (host, cpus, config), "run %d (kernel %s, %s)" % (base["id"], base["kernel_release"],
                                                    base["recorded_at"]),
        "run %d (kernel %s, %s)" % (head["id"], head["kernel_release"], head["recorded_at"]),
        _entries_runs(conn, [base["id"]]), _entries_runs(conn, [head["id"]]), verdicts,
        mail.reproduce_commands(names, head["repetitions"], base["id"], head["config"],
                                run_args, store.describe(flask.current_app.config["HISTORY"]),
                                base["results_path"] if base["results_path"] and
                                os.path.isfile(base["results_path"]) else None),
        base_profile=alert_view.profile_of(base["results_path"]),
        head_profile=alert_view.profile_of(head["results_path"]))


def _pct(value):
    return "%+.1f%%" % (100 * value) if value is not None and value == value else "-"


def _verdict_rows(verdicts):
    order = {stats.SLOWER: 0, stats.COUNTS: 1, stats.FASTER: 2}
    rows = []
    for v in sorted(verdicts, key=lambda v: (order.get(v.verdict, 3), v.name)):
        ci = ("[%+.1f%%, %+.1f%%]" % (100 * v.ci[0], 100 * v.ci[1])
              if all(c == c for c in v.ci) else "")
        rows.append({"name": display_name(v.name), "verdict": v.verdict,
                     "regression": v.regression, "change": _pct(v.change), "ci": ci,
                     "p": "%.4f" % v.p_adjusted if v.p_adjusted == v.p_adjusted else "-",
                     "noise_floor": _pct(v.noise_floor) if v.noise_floor == v.noise_floor
                     else "not calibrated",
                     "moved": v.moved(), "note": "; ".join(x for x in (v.note,) if x)})
    return rows


def _safe_next(target):
    """Only a path of this application: never a redirect elsewhere."""
    if (isinstance(target, str) and target.startswith("/") and not target.startswith("//")
            and "\\" not in target):
        return target
    return flask.url_for("fleet")


def _check_token(form):
    """Aborts 403 unless the server has a triage token and the request carries it."""
    expected = flask.current_app.config["TOKEN"]
    if not expected:
        flask.abort(403, "this server is read-only: start it with a triage token "
                    "(--token-file or PERFSCALE_TRIAGE_TOKEN) to change states")
    given = flask.request.headers.get(TOKEN_HEADER) or form.get("token", "")
    if not hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8")):
        flask.abort(403, "wrong or missing triage token")


def release_data(conn, name):
    """The Releases page's data: the benchmark against the kernel release, a line per
    lineage (a guest shape), the releases in version order, each step the series marked."""
    points = views.release_series(conn, name) if name else []
    releases = sorted({p["kernel"] for p in points if p["kernel"]}, key=kernels.release_key)
    lines = {}
    for point in points:
        label = _label((point["host"], point["machine"], point["cpus"], point["config"]))
        lines.setdefault(label, []).append(dict(point, step=point["verdict"] in steps.FLAGGED))
    return {"benchmark": name, "releases": releases,
            "lines": [{"lineage": label, "points": found}
                      for label, found in sorted(lines.items())]}


def _releases_page(conn, name):
    names = views.latest_names(conn)
    if not name and names:
        name = names[0]
    return flask.render_template("releases.html", name=name, names=names,
                                 data=release_data(conn, name))


def _routes(app):
    @app.teardown_appcontext
    def close_db(_exc):
        conn = flask.g.pop("db", None)
        if conn is not None and not flask.g.pop("db_kept", False):
            conn.close()

    @app.before_request
    def refuse_nul():
        # PostgreSQL's text holds no NUL: a parameter with one is the client's error (400),
        # never the history's (503), on either engine.
        request = flask.request
        fields = request.args.items(multi=True)
        if request.method == "POST":
            fields = list(fields) + list(request.form.items(multi=True))
        if any("\x00" in k or "\x00" in v for k, v in fields) or "\x00" in request.path:
            flask.abort(400, "a parameter holds a NUL character; none of this server's do")

    @app.after_request
    def headers(response):
        # Nothing but this application's own files, even if a string slipped through.
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @app.context_processor
    def common():
        return {"writable": bool(app.config["TOKEN"]), "states": triage.STATES}

    @app.route("/vendor/chart.js")
    def chart_js():
        return flask.send_from_directory(CHART_JS_DIR, "chart.min.js",
                                         mimetype="text/javascript")

    @app.route("/favicon.ico")
    def favicon():
        return flask.send_from_directory(app.static_folder, "favicon.svg",
                                         mimetype="image/svg+xml")

    @app.route("/")
    @kept(clock=True)
    def fleet():
        days = flask.request.args.get("days", DEFAULT_DAYS, type=int)
        days = min(max(days or DEFAULT_DAYS, 1), 3660)
        conn = _db()
        since = _since(days)
        machines = []
        for lineage in views.lineages(conn, since):
            key = (lineage["host"], lineage["machine"], lineage["cpus"], lineage["config"])
            states = _states(conn, *key)
            open_regressions = []
            in_alert = alerts.covered(conn, key)  # shown once, as its alert
            for row in views.flagged(conn, *key, since):
                if (row["name"], row["run_id"]) in in_alert:
                    continue
                item = triage.Item("regression", *key, row["name"], row["run_id"])
                state = states.get(item)
                if state is None or state["state"] in triage.OPEN_STATES:
                    open_regressions.append({"row": row, "item": item,
                                             "state": _state_dict(state)})
            age = _age_days(lineage["last"]["recorded_at"])
            machines.append({**lineage, "age_days": age,
                             "silent": age is not None and age > 1.5,
                             "open": open_regressions})
        return flask.render_template("fleet.html", machines=machines, days=days,
                                     alerts=alerts.listing(conn, alerts.OPEN_STATES))

    @app.route("/alert/<%s:alert_id>" % _ID)
    @kept()
    def alert(alert_id):
        found = alert_view.details(_db(), alert_id)  # the alert mail's data too
        if found is None:
            flask.abort(404, "no alert #%d" % alert_id)
        return flask.render_template("alert.html", **found)

    @app.route("/alert/<%s:alert_id>/state" % _ID, methods=["POST"])
    def set_alert_state(alert_id):
        form = flask.request.form
        _check_token(form)
        conn = _db()
        try:
            alerts.set_state(conn, alert_id, form.get("state", ""), form.get("who", ""),
                             form.get("why", ""))
        except triage.TriageError as err:
            flask.abort(404 if str(err).startswith("no alert") else 400, str(err))
        return flask.redirect(flask.url_for("alert", alert_id=alert_id), code=303)

    @app.route("/trend")
    @kept()
    def trend():
        conn = _db()
        run_ids = flask.request.args.getlist("run", type=int)
        name = flask.request.args.get("name", "")
        if not run_ids:
            flask.abort(400, "say which lineages: run=ID (any run of each lineage)")
        runs = []
        for run_id in run_ids[:MAX_LINEAGES]:
            run = _run_or_404(conn, run_id)
            if _lineage(run) not in [_lineage(r) for r in runs]:
                runs.append(run)
        names = views.benchmark_names(conn, runs[0]["id"])
        if not name:
            name = names[0] if names else ""
        data = trend_data(conn, name, runs)
        others = views.lineage_list(conn)
        return flask.render_template("trend.html", data=data, names=names, name=name,
                                     runs=runs, lineages=others,
                                     selected={_lineage(r) for r in runs})

    @app.route("/run/<%s:run_id>" % _ID)
    @kept()
    def run(run_id):
        conn = _db()
        row = _run_or_404(conn, run_id)
        entries = store.load_entries(conn, run_id)
        results = io.ResultSet(row["results_path"] or "", json.loads(row["context"]),
                                       entries)
        page = Page("run %d" % run_id)
        report.add_results_sections(page, results, "", plots=False)
        states = _states(conn, *_lineage(row))
        verdicts = []
        for v in views.verdicts(conn, run_id):
            item = triage.Item("regression", *_lineage(row), v["name"], run_id)
            verdicts.append({"row": v, "item": item, "state": _state_dict(states.get(item)),
                             "regression": v["verdict"] in views.REGRESSION_VERDICTS})
        # The page's sections are perfscale's own report, every text escaped by Page.
        return flask.render_template(
            "run.html", run=row, lineage=_label(_lineage(row)), verdicts=verdicts,
            report_html=markupsafe.Markup(page.body_html()),
            baseline=store.get_run(conn, row["baseline_id"]) if row["baseline_id"]
            else None)

    def _compare_pair():
        conn = _db()
        args = flask.request.args
        if args.get("kernel_a") is not None:
            lineage_run = _run_or_404(conn, args.get("run", type=int) or 0)
            ids = [views.latest_run_of_kernel(conn, *_lineage(lineage_run), args.get(k))
                   for k in ("kernel_a", "kernel_b")]
            if None in ids:
                flask.abort(404, "no complete run of that kernel in this lineage")
        else:
            ids = [args.get("a", type=int), args.get("b", type=int)]
            if None in ids:
                flask.abort(400, "say which runs: a=ID&b=ID, or run=ID&kernel_a=K&kernel_b=K")
        base, head = (_run_or_404(conn, i) for i in ids)
        return conn, base, head

    @app.route("/compare")
    @kept()
    def compare():
        conn, base, head = _compare_pair()
        verdicts = compare_runs(conn, base, head)
        kernels = sorted({r["kernel_release"] for r in views.runs_of(conn, *_lineage(head))
                          if r["kernel_release"]})
        return flask.render_template("compare.html", base=base, head=head,
                                     rows=_verdict_rows(verdicts),
                                     same_lineage=_lineage(base) == _lineage(head),
                                     base_label=_label(_lineage(base)),
                                     head_label=_label(_lineage(head)), kernels=kernels,
                                     regressions=sum(v.regression for v in verdicts))

    @app.route("/compare.txt")
    @kept()
    def compare_text():
        conn, base, head = _compare_pair()
        text = compare_mail(conn, base, head, compare_runs(conn, base, head))
        return flask.Response(text, mimetype="text/plain")

    @app.route("/scaling")
    @kept()
    def scaling():
        conn = _db()
        name = flask.request.args.get("name", "")
        # by=kernel: a line per kernel (each lineage's latest run on each kernel), for a
        # kernel A/B of guests; by=machine (the default): a line per machine and config.
        by = flask.request.args.get("by", "machine")
        if by not in ("machine", "kernel"):
            flask.abort(400, "by must be machine or kernel")
        names = views.latest_names(conn)
        if not name and names:
            name = names[0]
        points = views.scaling(conn, name, per_kernel=by == "kernel") if name else []
        return flask.render_template("scaling.html", name=name, names=names, by=by,
                                     data={"benchmark": name, "points": points, "by": by})

    @app.route("/releases")
    def releases():
        return _releases_page(_db(), flask.request.args.get("name", ""))

    @app.route("/triage", methods=["POST"])
    def set_triage():
        form = flask.request.form
        _check_token(form)
        try:
            item = triage.Item(form.get("kind", ""), form.get("host", ""),
                               form.get("machine", ""), db_int(form.get("cpus", "")),
                               form.get("config", ""),
                               form.get("name", ""), db_int(form.get("run_id", "")))
        except ValueError:
            flask.abort(400, "cpus and run_id must be whole numbers from 0 to 2^63-1")
        conn = _db()
        _run_or_404(conn, item.run_id)
        try:
            triage.set_state(conn, item, form.get("state", ""), form.get("who", ""),
                             form.get("why", ""))
        except triage.TriageError as err:
            flask.abort(400, str(err))
        return flask.redirect(_safe_next(form.get("next")), code=303)

    @app.errorhandler(store.HistoryError)
    def unusable(err):  # e.g. the server went away: its message, redacted by the store
        return flask.render_template("error.html", error=werkzeug_exceptions.ServiceUnavailable(
            str(err))), 503

    @app.errorhandler(400)
    @app.errorhandler(403)
    @app.errorhandler(404)
    @app.errorhandler(405)
    @app.errorhandler(413)
    def error(err):
        return flask.render_template("error.html", error=err), err.code
