import sys, time
sys.path.insert(0, "/work/wt/dashboard/tools/py")
from perfscale.web import app as web_app
from perfscale.history import store
h = sys.argv[1]
c = web_app.create_app(h).test_client()
c.get("/alert/1")
def timeit(label, f, n=300):
    t = time.process_time()
    for _ in range(n): f()
    print("%s: %.2f ms CPU" % (label, 1000 * (time.process_time() - t) / n))
timeit("cached /alert/1 via test client", lambda: c.get("/alert/1"))
timeit("304 /alert/1", lambda: c.get("/alert/1", headers={"If-None-Match": c.get("/alert/1").headers["ETag"]}))
def op():
    s = store.open_history(h, read_only=True, check_pages=False); store.change_stamp(s); s.close()
timeit("open + stamp + close", op)
s = store.open_history(h, read_only=True, check_pages=False)
timeit("stamp only", lambda: store.change_stamp(s))
