"""Copies every table of an SQLite history (schema 7) into a new database of the cluster
with COPY, ids kept: a measurement fixture (the history import's path costs a transaction
per run, most of an hour for the 200-benchmark year)."""
import sys, time
sys.path.insert(0, "/work/wt/dashboard/tools/py")
from perfscale.history import cluster, store
src_path, directory, name = sys.argv[1:4]
urls = cluster.create_history(directory, name)
t = time.time()
with store.open_history(src_path, read_only=True, check_pages=False) as src, store.open_history(urls[cluster.OWNER]) as dst:
    with dst.engine.transaction():
        for table in ("runs", "benchmarks", "calibration", "triage", "triage_log", "alerts", "alert_members", "alert_log"):
            cur = src.engine._conn.execute("SELECT * FROM %s" % table)
            cols = [d[0] for d in cur.description]
            n = 0
            with dst.engine._conn.cursor() as pg, pg.copy("COPY %s (%s) FROM STDIN" % (table, ", ".join(cols))) as copy:
                while True:
                    rows = cur.fetchmany(5000)
                    if not rows:
                        break
                    for row in rows:
                        copy.write_row(tuple(row)); n += 1
            print(table, n, "%.0f s" % (time.time() - t), flush=True)
        for seq, table in (("runs_id_seq", "runs"), ("alerts_id_seq", "alerts"), ("alert_log_id_seq", "alert_log")):
            dst.engine.execute("SELECT setval('%s', COALESCE((SELECT MAX(id) FROM %s), 1))" % (seq, table))
    dst.engine.execute("ANALYZE")
    a, b = store.counts(src), store.counts(dst)
    assert a == b, (a, b)
print("loaded %s into %s in %.0f s" % (src_path, name, time.time() - t))
