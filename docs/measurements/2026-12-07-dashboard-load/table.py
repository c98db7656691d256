import sys, collections
rows = collections.OrderedDict()
for line in open("/tmp/dash/results.txt"):
    p = line.split()
    tag, page, side = p[0], p[1], p[2]
    f = dict(zip(p[4::2], p[5::2]))
    rows.setdefault(tag, []).append((page, side, f))
for tag in (sys.argv[1:] or rows):
    print("\n%s\n" % tag)
    print("| page | side | requests | per second | p50 (ms) | p95 (ms) | p99 (ms) | errors | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for page, side, f in rows[tag]:
        b = "**" if side == "after" else ""
        print("| %s | %s | %s | %s | %s | %s%s%s | %s%s%s | %s | %s |" % (page, side, f["requests"], f["rps"], f["p50"], b, f["p95"], b, b, f["p99"], b, f["errors"], f["load"]))
