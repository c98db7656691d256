import sys, pickle, time, random
sys.path.insert(0, "/work/wt/dashboard/tools/py")
from perfscale.gate import floors, stats
from perfscale.history import store, views
rng = random.Random(3)
sig = [rng.choice([0.0, float("nan"), 1e-9, rng.random()*0.05, rng.random()]) for _ in range(60)]
out = []
for df in (0, 3, 7, 9):
    for nr in (1, 3):
        for s in sig:
            out.append(floors.floor_and_mdc(s, 0.05, 200, 8, nr, df=df))
conn = store.open_history(sys.argv[2], read_only=True, check_pages=False)
lin = views.lineage_list(conn)[0]
ids = store.passing_run_ids(conn, lin["host"], lin["cpus"], lin["config"], 10, lin["machine"])
runs = [store.load_entries(conn, i) for i in ids]
t = time.perf_counter(); learned = floors.learn(runs); print("learn %.0f ms" % (1000*(time.perf_counter()-t)), file=sys.stderr)
out.append([(k, v) for k, v in learned.items()])
pickle.dump(out, open(sys.argv[1], "wb"))
