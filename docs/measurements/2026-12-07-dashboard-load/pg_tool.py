"""pg_tool.py DIR clone SRC DST | downgrade DB: a schema-6 twin of a schema-7 database
(CREATE DATABASE ... TEMPLATE, then the change stamp table dropped), for the old code."""
import json, os, sys
sys.path.insert(0, "/work/wt/dashboard/tools/py")
import psycopg
directory, action = sys.argv[1], sys.argv[2]
state = json.load(open(os.path.join(directory, "perfscale-db.json")))
def conninfo(db):
    return "host=127.0.0.1 port=%d user=perfscale dbname=%s password=%s" % (state["port"], db, state["passwords"]["perfscale"])
if action == "clone":
    with psycopg.connect(conninfo("postgres"), autocommit=True) as c:
        c.execute('CREATE DATABASE "%s" TEMPLATE "%s"' % (sys.argv[4], sys.argv[3]))
    db = sys.argv[4]
else:
    db = sys.argv[3]
with psycopg.connect(conninfo(db), autocommit=True) as c:
    c.execute("DROP TABLE perfscale_changes")
    c.execute("UPDATE perfscale_schema SET version = 6")
print("%s: schema 6" % db)
