import socket, sys, time, urllib.request, threading
port = int(sys.argv[1]); n = int(sys.argv[2]); mode = sys.argv[3]
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    if mode == "headers":
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    elif mode == "body":
        s.sendall(b"POST /triage HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\nkind=")
    socks.append(s)
def trickle():
    for _ in range(80):
        time.sleep(0.5)
        for s in socks:
            try: s.sendall(b"X-a: 1\r\n" if mode == "headers" else b"a")
            except OSError: pass
t = threading.Thread(target=trickle, daemon=True); t.start()
time.sleep(1)
for i in range(5):
    st = time.monotonic()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/alert/1" % port, timeout=30) as r:
            r.read()
        print("page %d: %.3f s" % (r.status, time.monotonic() - st))
    except OSError as err:
        print("page failed after %.1f s: %s" % (time.monotonic() - st, err))
    time.sleep(0.5)
for s in socks: s.close()
