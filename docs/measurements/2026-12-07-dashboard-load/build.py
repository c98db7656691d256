import sys, time
sys.path.insert(0, "/work/wt/dashboard/testing/py")
from perfscale.history import sqlite_engine
_init = sqlite_engine.Engine.__init__
def fast_init(self, *a, **k):
    _init(self, *a, **k)
    if not self.read_only:  # a fixture for measurements: no fsync per night
        self._conn.execute("PRAGMA synchronous = OFF")
        self._conn.execute("PRAGMA journal_mode = MEMORY")
sqlite_engine.Engine.__init__ = fast_init
import synthetic_history
out, machines, nights, benchmarks, step_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t = time.time()
synthetic_history.build(out, machines=machines, nights=nights, benchmarks=benchmarks, step_at=step_at,
    kernel_change_at=step_at, step_lineages=10, alerts=True, judge=False, lineages_per_host=1, progress=True)
print("built %s in %.0f s" % (out, time.time() - t), flush=True)
