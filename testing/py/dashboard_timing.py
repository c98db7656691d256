"""Server time of the dashboard's pages over a history, and a trend page's data size:
the figures docs/measurements/2026-12-02-dashboard.md records.

    tools/py/python testing/py/dashboard_timing.py HISTORY [--repeat 5]

HISTORY: an SQLite file or a PostgreSQL URL, as `tools/perfscale serve` takes.

Each page is requested through Flask's test client (the whole WSGI handling: queries,
change points, templates; no network), the first time (cold: change points, floors and
verdicts not yet kept in the process) and then --repeat times (warm); the median is
printed. The compare page is also timed on a pair never asked for before, each time
another (the server keeps a pair's verdicts, so the same pair again is a lookup).
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "py"))
from perfscale.history import store as history, views  # noqa: E402
from perfscale.web import app as web_app  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("history")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    # Through the store, so a PostgreSQL history is timed as an SQLite one is.
    conn = history.open_history(args.history, read_only=True, check_pages=False)
    try:
        counts = history.counts(conn)
        size = history.size_bytes(conn)
        lineages = views.lineage_list(conn)  # each with its last run, by lineage
        first = history.get_run(conn, views.one(conn, "SELECT MIN(id) AS id FROM runs")["id"])
        mine = [r for r in lineages if (r["host"], r["machine"], r["cpus"], r["config"])
                == (first["host"], first["machine"], first["cpus"], first["config"])][0]
        lineage_last = mine["last_id"]
        earlier = [r["id"] for r in views.runs_of(conn, mine["host"], mine["machine"],
                                                   mine["cpus"], mine["config"])][:-1]
        night_before = earlier[-1]
        name = views.one(conn, "SELECT name FROM benchmarks WHERE run_id = ? "
                         "ORDER BY position LIMIT 1", (first["id"],))["name"]
        other = max(r["last_id"] for r in lineages if r is not mine)
        eight = sorted(r["last_id"] for r in lineages)[:8]
        last = max(r["last_id"] for r in lineages)
        first_alert = views.one(conn, "SELECT MIN(id) AS id FROM alerts")["id"]
    finally:
        conn.close()
    print("history: %s, %.0f MB: %d runs, %d lineages, %d samples" % (
        history.describe(args.history), size / 1e6, counts["runs"], len(lineages),
        counts["samples"]))
    start = time.perf_counter()
    client = web_app.create_app(args.history).test_client()
    # Once per server: the history's pages checked (quick_check reads the whole file).
    print("server start: %.0f ms" % (1000 * (time.perf_counter() - start)))
    q = urllib.parse.urlencode
    pages = [("fleet", "/"),
             ("trend, 1 lineage", "/trend?" + q([("name", name), ("run", lineage_last)])),
             ("trend, 2 lineages", "/trend?" + q([("name", name), ("run", lineage_last),
                                                  ("run", other)])),
             ("trend, 8 lineages", "/trend?" + q([("name", name)]
                                                 + [("run", r) for r in eight])),
             ("run", "/run/%d" % last),
             ("compare", "/compare?a=%d&b=%d" % (night_before, lineage_last)),
             # The server keeps a pair's verdicts: the same pair again is a lookup, so the
             # pair that was never asked for before is timed as well, each time another.
             ("compare, a new pair each time", ["/compare?a=%d&b=%d" % (a, lineage_last)
                                                for a in earlier[-args.repeat - 2:-1]]),
             ("scaling", "/scaling?" + q([("name", name)]))]
    if first_alert is not None:  # a history built with alerts (synthetic_history alerts=True)
        pages.append(("alert", "/alert/%d" % first_alert))
    print("| page | cold (ms) | warm median of %d (ms) | page bytes | chart data bytes "
          "| change points |" % args.repeat)
    print("|---|---|---|---|---|---|")
    for label, url in pages:
        times = []
        for index in range(args.repeat + 1):
            start = time.perf_counter()
            response = client.get(url if isinstance(url, str) else url[index % len(url)])
            times.append(1000 * (time.perf_counter() - start))
            assert response.status_code == 200, (url, response.status_code)
        body = response.get_data(as_text=True)
        data = re.search(r'<script type="application/json" id="data">(.*?)</script>', body,
                         re.S)
        # The trend's change points: the cold request's search did find the step.
        found = (sum(len(s["changepoints"]) for s in json.loads(data.group(1))["series"])
                 if data and label.startswith("trend") else "-")
        print("| %s | %.0f | %.0f | %d | %s | %s |" % (
            label, times[0], statistics.median(times[1:]), len(body.encode()),
            len(data.group(1).encode()) if data else "-", found))
    print("load average at the end: %.2f %.2f %.2f (the machine's other work)"
          % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
