"""Loads an SQLite history (runs, calibrations, alerts) into a new database of the cluster."""
import sys, time
sys.path.insert(0, "/work/wt/dashboard/tools/py")
from perfscale.history import cluster, store, transfer
src_path, directory, name = sys.argv[1:4]
urls = cluster.create_history(directory, name)
t = time.time()
with store.open_history(src_path, read_only=True, check_pages=False) as src, store.open_history(urls[cluster.OWNER]) as dst:
    transfer.copy_history(src, dst, bulk=True, progress=lambda n: n % 2000 == 0 and print("runs", n, "%.0f s" % (time.time() - t), flush=True))
    for table in ("alerts", "alert_members", "alert_log", "triage", "triage_log"):
        rows = src.engine.execute("SELECT * FROM %s" % table)
        if rows:
            cols = list(rows[0])
            with dst.engine.transaction():
                dst.engine.executemany("INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(cols), ",".join("?" * len(cols))), [tuple(r[c] for c in cols) for r in rows])
    with dst.engine.transaction():
        for seq, table in (("alerts_id_seq", "alerts"), ("alert_log_id_seq", "alert_log")):
            dst.engine.execute("SELECT setval('%s', COALESCE((SELECT MAX(id) FROM %s), 1))" % (seq, table))
    assert store.counts(src)["runs"] == store.counts(dst)["runs"]
    assert [r["id"] for r in store.all_runs(src)][-1] == [r["id"] for r in store.all_runs(dst)][-1]
print("loaded %s into %s in %.0f s" % (src_path, name, time.time() - t))
