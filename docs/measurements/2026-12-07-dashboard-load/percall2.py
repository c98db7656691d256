import sys, time
sys.path.insert(0, "/work/wt/dashboard/tools/py")
from perfscale.web import app as web_app
h = sys.argv[1]
c = web_app.create_app(h).test_client()
for url in sys.argv[2:]:
    c.get(url)
    t = time.process_time()
    for _ in range(200): r = c.get(url)
    print("%s: %.2f ms CPU, %d bytes" % (url, 1000 * (time.process_time() - t) / 200, len(r.data)))
