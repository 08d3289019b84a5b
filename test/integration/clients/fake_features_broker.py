#!/usr/bin/env python3
"""A one-port fake broker for `skiffctl feature` (issue 19 review): answers
ApiVersions v0 (UpdateFeatures 0-1 only) and UpdateFeatures v1 with a
result list of the length given (0: none for the features asked, or more
than asked), so that skiffctl's bounds check of the answer can be driven
(a real skiff always answers one result per feature).
usage: fake_features_broker.py PORTFILE NRESULTS   (writes its port, serves
until killed)"""
import socket
import struct
import sys

from kwire import Rd, uvarint


def frame(b):
    return struct.pack(">i", len(b)) + b


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        x = s.recv(n - len(buf))
        if not x:
            raise EOFError
        buf += x
    return buf


def serve(conn, nres):
    while True:
        (ln,) = struct.unpack(">i", read_exact(conn, 4))
        req = read_exact(conn, ln)
        key, ver, corr = struct.unpack(">hhi", req[:8])
        if key == 18:        # ApiVersions v0: error, [key, min, max]
            body = struct.pack(">ih", corr, 0) + struct.pack(">i", 2) + struct.pack(">hhh", 18, 0, 0) + \
                struct.pack(">hhh", 57, 0, 1)
            conn.sendall(frame(body))
        elif key == 57:      # UpdateFeatures v1 (flexible): header v1, throttle, error, msg, results
            res = b""
            for i in range(nres):
                name = ("feature-%d" % i).encode()
                res += uvarint(len(name) + 1) + name + struct.pack(">h", 0) + b"\x00" + b"\x00"
            body = struct.pack(">i", corr) + b"\x00" + struct.pack(">ih", 0, 0) + b"\x00" + \
                uvarint(nres + 1) + res + b"\x00"
            conn.sendall(frame(body))
        else:
            return


def main():
    nres = int(sys.argv[2])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    with open(sys.argv[1], "w") as f:
        f.write(str(ls.getsockname()[1]))
    while True:
        conn, _ = ls.accept()
        try:
            serve(conn, nres)
        except (EOFError, OSError):
            pass
        conn.close()


if __name__ == "__main__":
    main()
