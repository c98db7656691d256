"""firstcompare.py CODE HISTORY [CACHE_DIR] PAIR...: in this fresh process, the compare
page of each pair (offsets back from the first lineage's last run, e.g. 3 4: a=runs[-3]),
each never asked before in this process; prints ms per request. CACHE_DIR (after only, or
'-'): the server's shared folder another process may have filled."""
import sys, time
code, history = sys.argv[1], sys.argv[2]
sys.path.insert(0, code + "/tools/py")
from perfscale.web import app as web_app
from perfscale.history import store, views
conn = store.open_history(history, read_only=True, check_pages=False)
lin = views.lineage_list(conn)[0]
ids = [r["id"] for r in views.runs_of(conn, lin["host"], lin["machine"], lin["cpus"], lin["config"])]
conn.close()
rest = sys.argv[3:]
kwargs = {}
if rest and not rest[0].isdigit():
    if rest[0] != "-":
        from perfscale.web.cache import SharedCache
        kwargs["cache"] = SharedCache(rest[0])
    rest = rest[1:]
client = web_app.create_app(history, **kwargs).test_client()
out = []
for back in rest:
    t, c = time.perf_counter(), time.process_time()
    r = client.get("/compare?a=%d&b=%d" % (ids[-int(back)], ids[-1]))
    assert r.status_code == 200, r.status_code
    out.append("%.0f ms (cpu %.0f)" % (1000 * (time.perf_counter() - t), 1000 * (time.process_time() - c)))
print(" ".join(out), "load %s" % open("/proc/loadavg").read().split()[0])
