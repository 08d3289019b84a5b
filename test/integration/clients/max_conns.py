"""max.connections acts at run time (issue 14 review): set through
AlterConfigs (confluent-kafka), new connections beyond the limit are closed
at accept; raised again, new connections are served. num.io.threads is read
at start only: AlterConfigs refuses it. Prints PASS/FAIL lines."""
import socket
import struct
import sys
import time

from confluent_kafka.admin import AdminClient, ConfigResource

BOOT = sys.argv[1]
HOST, PORT = BOOT.rsplit(":", 1)


def check(name, ok, why=""):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))


def alter(key, value):
    a = AdminClient({"bootstrap.servers": BOOT})
    fs = a.alter_configs([ConfigResource("broker", "1", set_config={key: value})], request_timeout=10)
    try:
        for f in fs.values():
            f.result()
        return None
    except Exception as e:   # the broker's refusal
        return str(e)
    finally:
        del a


def served(s):
    """True when the connection answers ApiVersions v0, False when closed."""
    req = struct.pack(">hhih", 18, 0, 9, 1) + b"t"
    try:
        s.sendall(struct.pack(">i", len(req)) + req)
        s.settimeout(5)
        return len(s.recv(4)) == 4
    except OSError:
        return False


def open_many(n):
    socks, ok = [], 0
    for _ in range(n):
        s = socket.create_connection((HOST, int(PORT)))
        socks.append(s)
        ok += served(s)
    return socks, ok


err = alter("max.connections", "3")
check("AlterConfigs max.connections=3", err is None, err)
time.sleep(1.0)   # the admin client's own connection goes away
socks, ok = open_many(6)
check("at most 3 of 6 new connections served (%d)" % ok, 1 <= ok <= 3, "served %d" % ok)
for s in socks:
    s.close()
time.sleep(0.5)
err = alter("max.connections", "1000")
check("AlterConfigs max.connections=1000", err is None, err)
time.sleep(1.0)
socks, ok = open_many(6)
check("6 of 6 new connections served after raising the limit", ok == 6, "served %d" % ok)
for s in socks:
    s.close()
err = alter("num.io.threads", "4")
check("AlterConfigs num.io.threads refused (read at start only)", err is not None and ("read-only" in err.lower() or "restart" in err.lower()),
      err or "accepted")

# max.connections.per.ip is dynamic too (issue 16); the override list is
# read at start (a string: AlterConfigs refuses it)
err = alter("max.connections.per.ip", "2")
check("AlterConfigs max.connections.per.ip=2", err is None, err)
time.sleep(1.0)
socks, ok = open_many(4)
check("at most 2 of 4 new connections from 127.0.0.1 served (%d)" % ok, 1 <= ok <= 2, "served %d" % ok)
for s in socks:
    s.close()
time.sleep(0.5)
err = alter("max.connections.per.ip", "1000")
check("AlterConfigs max.connections.per.ip=1000", err is None, err)
time.sleep(1.0)
socks, ok = open_many(4)
check("4 of 4 served after raising max.connections.per.ip", ok == 4, "served %d" % ok)
for s in socks:
    s.close()
err = alter("max.connections.per.ip.overrides", "127.0.0.1:5")
check("AlterConfigs max.connections.per.ip.overrides refused (read at start only)",
      err is not None and ("read-only" in err.lower() or "restart" in err.lower()), err or "accepted")
