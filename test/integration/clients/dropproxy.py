"""A TCP proxy in front of one Kafka listener that loses Produce responses.

It forwards every request to the broker at once, but for chosen Produce
requests it waits until the broker has answered and then closes both sides
instead of passing the answer on: the broker has appended the batch, the
client never hears so and must retry. That is exactly the case an idempotent
producer and the broker's sequence checks exist for.

Used by the confluent-kafka scripts; Python threads, blocking sockets, every
connection bounded by the client's own lifetime.
"""
import socket
import struct
import threading

PRODUCE = 0


def _recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read_frame(s):
    size = _recv_exact(s, 4)
    if size is None:
        return None
    (n,) = struct.unpack(">i", size)
    body = _recv_exact(s, n) if n > 0 else b""
    return None if body is None else size + body


class DropProxy:
    """listen_port: where clients connect (the node advertises it);
    upstream: (host, port) of the real listener; drop_every: lose the answer
    to every drop_every-th Produce request, at most max_drops times."""

    def __init__(self, listen_port, upstream, drop_every, max_drops):
        self.upstream = upstream
        self.drop_every = drop_every
        self.max_drops = max_drops
        self.produce_seen = 0
        self.drops = 0
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", listen_port))
        self.ls.listen(32)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            u = socket.create_connection(self.upstream)
            doomed = set()   # correlation ids whose answer closes the link
            threading.Thread(target=self._up, args=(c, u, doomed), daemon=True).start()
            threading.Thread(target=self._down, args=(u, c, doomed), daemon=True).start()

    def _pick(self, frame):
        """Called per request frame: should its answer be lost?"""
        api_key, _, corr = struct.unpack_from(">hhi", frame, 4)
        if api_key != PRODUCE:
            return None
        with self.lock:
            self.produce_seen += 1
            if self.drops < self.max_drops and self.produce_seen % self.drop_every == 0:
                self.drops += 1
                return corr
        return None

    @staticmethod
    def _close(a, b):
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _up(self, c, u, doomed):
        try:
            while True:
                f = _read_frame(c)
                if f is None:
                    break
                corr = self._pick(f)
                if corr is not None:
                    doomed.add(corr)
                u.sendall(f)
        except OSError:
            pass
        self._close(c, u)

    def _down(self, u, c, doomed):
        try:
            while True:
                f = _read_frame(u)
                if f is None:
                    break
                (corr,) = struct.unpack_from(">i", f, 4)
                if corr in doomed:
                    break     # the broker answered; the client never learns
                c.sendall(f)
        except OSError:
            pass
        self._close(u, c)

    def close(self):
        self.ls.close()
