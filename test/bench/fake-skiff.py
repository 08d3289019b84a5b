#!/usr/bin/python3
"""Stand-in for bin/skiff, used only to test run-broker-bench.sh before the
broker exists: `fake-skiff.py --config FILE --node N [--set k=v ...]` reads
node N's Kafka listener and admin.listener from the config that
test/integration/lib.sh writes, starts `kload mock-serve` (KLOAD env var),
forwards the Kafka port to the mock's bootstrap port (clients then follow the
mock's own metadata), and accepts-and-closes on the admin port. Exits on
SIGTERM. With FAKE_SKIFF_BROKEN=1 it closes every Kafka connection at once,
so the harness's failure path can be tested. Not a broker: its CPU figures
mean nothing."""
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading

PR_SET_PDEATHSIG = 1
MAX_CONNS = 64  # bound on forwarded connections alive at once


def node_section(path, node):
    """Returns {key: value} of the [node.N] section."""
    out, cur = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^\[(.+)\]$", line)
            if m:
                cur = m.group(1)
            elif cur == "node.%d" % node and "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip()
    return out


def host_port(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve_forward(lsock, target, slots):
    while True:
        c, _ = lsock.accept()
        if os.environ.get("FAKE_SKIFF_BROKEN") == "1" or not slots.acquire(blocking=False):
            c.close()
            continue
        try:
            u = socket.create_connection(target, timeout=5)
            u.settimeout(None)
        except OSError:
            c.close()
            slots.release()
            continue

        def run(c=c, u=u):
            t = threading.Thread(target=pump, args=(u, c), daemon=True)
            t.start()
            pump(c, u)
            t.join()
            c.close()
            u.close()
            slots.release()

        threading.Thread(target=run, daemon=True).start()


def serve_admin(lsock):
    while True:
        c, _ = lsock.accept()
        c.close()


def listen(addr):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr)
    s.listen(16)
    return s


def main():
    args = sys.argv[1:]
    conf = args[args.index("--config") + 1]
    node = int(args[args.index("--node") + 1])
    sec = node_section(conf, node)
    kafka = [x for x in sec["listeners"].split(",") if x.startswith("PLAINTEXT://")][0]
    kafka_addr = host_port(kafka[len("PLAINTEXT://"):])
    admin_addr = host_port(sec["admin.listener"])
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    mock = subprocess.Popen(
        [os.environ["KLOAD"], "mock-serve", "--timeout-s", "3600"],
        stdout=subprocess.PIPE,
        preexec_fn=lambda: libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM),
    )
    boot = json.loads(mock.stdout.readline())["bootstraps"].split(",")[0]
    signal.signal(signal.SIGTERM, lambda *_: (mock.terminate(), mock.wait(), os._exit(0)))
    slots = threading.Semaphore(MAX_CONNS)
    threading.Thread(target=serve_admin, args=(listen(admin_addr),), daemon=True).start()
    print("fake skiff: %s -> mock %s" % (kafka_addr, boot), flush=True)
    serve_forward(listen(kafka_addr), host_port(boot), slots)


if __name__ == "__main__":
    main()
