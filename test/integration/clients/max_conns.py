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


def limit_acts(key, low, tries, what):
    """key=low serves at most `low` of `tries` new connections; raised to
    1000 it serves them all (the key is read at run time)."""
    err = alter(key, str(low))
    check("AlterConfigs %s=%d" % (key, low), err is None, err)
    time.sleep(1.0)   # the admin client's own connection goes away
    socks, ok = open_many(tries)
    check("at most %d of %d new connections%s served (%d)" % (low, tries, what, ok), 1 <= ok <= low, "served %d" % ok)
    for s in socks:
        s.close()
    time.sleep(0.5)
    err = alter(key, "1000")
    check("AlterConfigs %s=1000" % key, err is None, err)
    time.sleep(1.0)
    socks, ok = open_many(tries)
    check("%d of %d new connections served after raising %s" % (tries, tries, key), ok == tries, "served %d" % ok)
    for s in socks:
        s.close()


limit_acts("max.connections", 3, 6, "")

err = alter("num.io.threads", "4")
check("AlterConfigs num.io.threads refused (read at start only)", err is not None and ("read-only" in err.lower() or "restart" in err.lower()),
      err or "accepted")

# max.connections.per.ip is dynamic too (issue 16); the override list is
# read at start (a string: AlterConfigs refuses it)
limit_acts("max.connections.per.ip", 2, 4, " from 127.0.0.1")
err = alter("max.connections.per.ip.overrides", "127.0.0.1:5")
check("AlterConfigs max.connections.per.ip.overrides refused (read at start only)",
      err is not None and ("read-only" in err.lower() or "restart" in err.lower()), err or "accepted")
