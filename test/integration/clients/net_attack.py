"""Hostile-peer helpers for the issue 16 network tests and benchmarks: raw
sockets only (no Kafka client), so nothing here reads what it should not.

  partial HOST PORT CONNS ANNOUNCE_BYTES SEND_BYTES HOLD_S
      CONNS connections each send a size prefix of ANNOUNCE_BYTES and then
      SEND_BYTES of it (never the whole frame), hold HOLD_S seconds, close.
      Prints "sent N" when every connection has sent what it could (a send
      the node does not take within 0.5 s counts what went through).
  noread HOST PORT CONNS TOPIC MAX_BYTES VERSION HOLD_S
      CONNS connections each send Fetch requests (TOPIC partition 0 from
      offset 0, MAX_BYTES, api VERSION 4 or 11) and never read; prints
      "closed C of CONNS" after HOLD_S (a connection the node closed shows
      EOF/reset once we finally read).
  many HOST PORT CONNS HOLD_S [SRC_ADDR]
      opens CONNS connections (from SRC_ADDR if given), each asks
      ApiVersions once; prints "served S of CONNS" then holds HOLD_S.
  garbage HOST PORT CONNS
      CONNS connections each send a malformed request (bad api key
      header with junk), wait for the close; prints "done".
"""
import socket
import struct
import sys
import time


def api_versions_frame(corr=1):
    req = struct.pack(">hhih", 18, 0, corr, 4) + b"test"
    return struct.pack(">i", len(req)) + req


def served(s, timeout=5):
    try:
        s.sendall(api_versions_frame())
        s.settimeout(timeout)
        return len(s.recv(4)) == 4
    except OSError:
        return False


def closed_by_peer(s):
    """True when the node closed this socket (EOF or reset after draining)."""
    s.settimeout(0.5)
    got = 0
    try:
        while got < (4 << 20):   # an open connection would stream on: stop
            b = s.recv(1 << 20)
            if not b:
                return True
            got += len(b)
        return False
    except socket.timeout:
        return False
    except OSError:
        return True


def string(b):
    return struct.pack(">h", len(b)) + b


def fetch_frame(topic, max_bytes, version, corr):
    hdr = struct.pack(">hhi", 1, version, corr) + string(b"noread")
    if version >= 11:
        body = struct.pack(">iiiibii", -1, 0, 1, max_bytes, 0, 0, -1)
        body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
        body += struct.pack(">iiqqi", 0, -1, 0, -1, max_bytes)
        body += struct.pack(">i", 0) + string(b"")
    else:  # v4
        body = struct.pack(">iiiib", -1, 0, 1, max_bytes, 0)
        body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
        body += struct.pack(">iqi", 0, 0, max_bytes)
    req = hdr + body
    return struct.pack(">i", len(req)) + req


def connect(host, port, src=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if src:
        s.bind((src, 0))
    s.connect((host, port))
    return s


def partial(host, port, conns, announce, send, hold):
    socks, total = [], 0
    chunk = b"x" * (1 << 20)
    for _ in range(conns):
        s = connect(host, port)
        s.settimeout(0.5)
        socks.append(s)
        try:
            s.sendall(struct.pack(">i", announce))
        except OSError:
            continue
        left = send
        while left > 0:
            try:
                n = s.send(chunk[: min(left, len(chunk))])
            except (socket.timeout, OSError):
                break
            left -= n
            total += n
    print("sent %d" % total, flush=True)
    time.sleep(hold)
    for s in socks:
        s.close()


def noread(host, port, conns, topic, max_bytes, version, hold):
    socks = []
    for i in range(conns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # before connect: small window
        s.connect((host, port))
        s.settimeout(1)
        socks.append(s)
        for k in range(8):   # more than fit while the node stops reading us
            try:
                s.send(fetch_frame(topic, max_bytes, version, k))
            except (socket.timeout, OSError):
                break
    print("sent", flush=True)
    time.sleep(hold)
    closed = sum(closed_by_peer(s) for s in socks)
    print("closed %d of %d" % (closed, conns), flush=True)
    for s in socks:
        s.close()


def many(host, port, conns, hold, src=None):
    socks, ok = [], 0
    for _ in range(conns):
        try:
            s = connect(host, port, src)
        except OSError:
            continue
        socks.append(s)
        ok += served(s, timeout=1)
    print("served %d of %d" % (ok, conns), flush=True)
    time.sleep(hold)
    for s in socks:
        s.close()


def garbage(host, port, conns):
    for i in range(conns):
        s = connect(host, port)
        req = struct.pack(">hhih", 0x7777, 99, i, 2) + b"gb" + b"\xff" * 16
        try:
            s.sendall(struct.pack(">i", len(req)) + req)
            closed_by_peer(s)
        except OSError:
            pass
        s.close()
    print("done", flush=True)


def main(a):
    host, port = a[1], int(a[2])
    if a[0] == "partial":
        partial(host, port, int(a[3]), int(a[4]), int(a[5]), float(a[6]))
    elif a[0] == "noread":
        noread(host, port, int(a[3]), a[4].encode(), int(a[5]), int(a[6]), float(a[7]))
    elif a[0] == "many":
        many(host, port, int(a[3]), float(a[4]), a[5] if len(a) > 5 else None)
    elif a[0] == "garbage":
        garbage(host, port, int(a[3]))
    else:
        sys.exit("unknown mode " + a[0])


if __name__ == "__main__":
    main(sys.argv[1:])
