"""The six pages' URLs on a history (printed as label<TAB>path)."""
import sys, urllib.parse
sys.path.insert(0, sys.argv[2])
from perfscale.history import store, views
conn = store.open_history(sys.argv[1], read_only=True, check_pages=False)
lin = views.lineage_list(conn)[0]
runs = [r["id"] for r in views.runs_of(conn, lin["host"], lin["machine"], lin["cpus"], lin["config"])]
name = views.one(conn, "SELECT name FROM benchmarks WHERE run_id = ? ORDER BY position LIMIT 1", (runs[-1],))["name"]
last = max(r["last_id"] for r in views.lineage_list(conn))
alert = views.one(conn, "SELECT MIN(id) AS id FROM alerts")["id"]
q = urllib.parse.urlencode
for label, path in (("fleet", "/"), ("trend", "/trend?" + q([("name", name), ("run", runs[-1])])),
                    ("run", "/run/%d" % last), ("compare", "/compare?a=%d&b=%d" % (runs[-2], runs[-1])),
                    ("scaling", "/scaling?" + q([("name", name)])), ("alert", "/alert/%d" % alert)):
    print("%s\t%s" % (label, path))
