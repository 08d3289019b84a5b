#!/usr/bin/python3
"""tcp_proxy.py — a TCP proxy that can cut skiff nodes off from each other
while clients keep reaching them (replication fault-injection tests).

  tcp_proxy.py --tag TAG --control PORT ROUTE [ROUTE ...]
      ROUTE = LISTEN_PORT:TARGET_PORT:NODE  (all on 127.0.0.1)

Each route listens on LISTEN_PORT and forwards to TARGET_PORT, the real
listener of node NODE. The nodes advertise the proxy ports (Kafka listener:
`advertised.listeners`; controller listener: the other nodes'
`controller.quorum.voters`), so both inter-broker and client traffic to a
node pass through its routes.

Who is calling: on accept, the proxy looks up which process owns the
connecting socket (/proc/net/tcp gives the socket's inode; /proc/PID/fd of
the skiff processes whose command line holds TAG and `--node N` shows
whose it is). A socket owned by node N's process is inter-broker traffic
from N; any other socket (kcat, confluent-kafka, skiffctl) is a client.
No broker-side change is needed and clients never see a cut.

Control: one line per TCP connection to 127.0.0.1:PORT, one line answered:
  cut N [M ...]  isolate these nodes: node<->node connections with exactly
                 one end in the set are closed now and refused (accepted and
                 closed at once) from now on; clients are never touched
  hole N [M ...] the same isolation as a black hole: those connections stay
                 open but every byte is discarded, new ones are accepted and
                 never read or forwarded (peers see time-outs, not resets)
  heal           isolate nothing; held and black-holed connections are
                 closed (their peers reconnect), new connections pass again
  status         "cut=1,2 hole=0|1 conns=N inter=N clients=N refused=N
                 dropped=N held=N" (dropped: cut or frozen so far)
Every reply starts with "ok" or "err".

Bounds: at most MAX_CONNS relayed connections (more are refused), one
64 KiB buffer per direction, two threads per connection.
"""
import argparse
import os
import socket
import sys
import threading

MAX_CONNS = 512
CHUNK_BYTES = 65536
CLIENT = -1


def _hexaddr(port):
    return "0100007F:%04X" % port


def _socket_inode(peer_port, listen_port):
    """Inode of the socket 127.0.0.1:peer_port -> 127.0.0.1:listen_port, or None."""
    want_l, want_r = _hexaddr(peer_port), _hexaddr(listen_port)
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                c = line.split()
                if c[1] == want_l and c[2] == want_r:
                    return c[9]
    except OSError:
        pass
    return None


def _node_pids(tag):
    """{pid: node id} of the running skiff processes whose argv holds tag."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if not any(tag in a for a in argv) or b"--node" not in argv:
            continue
        k = argv.index(b"--node")
        if k + 1 < len(argv) and argv[k + 1].isdigit():
            out[int(d)] = int(argv[k + 1])
    return out


def _fd_owner(pids, link):
    for pid, node in pids.items():
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == link:
                    return node
            except OSError:
                continue
    return None


def _owner_node(tag, inode, cache):
    """Node id whose process owns the socket inode, else CLIENT. cache:
    {pid: node} from the last /proc scan, refreshed when it does not know
    the owner (a restarted node has a new pid; clients always miss it)."""
    if inode is None:
        return CLIENT
    link = "socket:[%s]" % inode
    node = _fd_owner(cache, link)
    if node is None:
        cache.clear()
        cache.update(_node_pids(tag))
        node = _fd_owner(cache, link)
    return CLIENT if node is None else node


def _close(*socks):
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass


class Proxy:
    def __init__(self, tag):
        self.tag = tag.encode()
        self.lock = threading.Lock()
        self.cut = set()
        self.conns = {}     # id -> (src node, dst node, client sock, upstream sock)
        self.next_id = 0
        self.refused = 0
        self.dropped = 0
        self.frozen = set() # ids of black-holed connections
        self.held = []      # accepted, never served (hole mode)
        self.hole = False
        self.pids = {}      # pid -> node id (accept threads only, under plock)
        self.plock = threading.Lock()

    def _blocked(self, src, dst):
        return (src != CLIENT and src != dst and
                ((src in self.cut) != (dst in self.cut)))

    def serve_route(self, listen_port, target_port, node):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", listen_port))
        ls.listen(64)
        threading.Thread(target=self._accept, args=(ls, listen_port, target_port, node),
                         daemon=True).start()

    def _accept(self, ls, listen_port, target_port, node):
        while True:
            c, peer = ls.accept()
            with self.plock:
                src = _owner_node(self.tag, _socket_inode(peer[1], listen_port), self.pids)
            with self.lock:
                refuse = self._blocked(src, node) or len(self.conns) >= MAX_CONNS
                if refuse:
                    self.refused += 1
                    if self.hole and len(self.held) < MAX_CONNS:
                        self.held.append(c)
                        continue
            if refuse:
                _close(c)
                continue
            try:
                u = socket.create_connection(("127.0.0.1", target_port), timeout=5)
                u.settimeout(None)
            except OSError:
                _close(c)
                continue
            for s in (c, u):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                cid = self.next_id
                self.next_id += 1
                self.conns[cid] = (src, node, c, u)
            threading.Thread(target=self._relay, args=(cid, c, u), daemon=True).start()
            threading.Thread(target=self._relay, args=(cid, u, c), daemon=True).start()

    def _relay(self, cid, a, b):
        try:
            while True:
                data = a.recv(CHUNK_BYTES)
                if not data:
                    break
                if cid not in self.frozen:
                    b.sendall(data)
        except OSError:
            pass
        _close(a, b)
        with self.lock:
            self.conns.pop(cid, None)

    def command(self, line):
        w = line.split()
        if not w:
            return "err empty command"
        with self.lock:
            if w[0] in ("cut", "hole") and len(w) > 1 and all(x.isdigit() for x in w[1:]):
                self._heal()
                self.cut = {int(x) for x in w[1:]}
                self.hole = w[0] == "hole"
                doomed = [(k, v) for k, v in self.conns.items() if self._blocked(v[0], v[1])]
                for k, v in doomed:
                    if self.hole:
                        self.frozen.add(k)
                    else:
                        self.conns.pop(k, None)
                        _close(v[2], v[3])
                self.dropped += len(doomed)
                return "ok %s %s %s %d" % (w[0], ",".join(sorted(w[1:])),
                                           "frozen" if self.hole else "dropped", len(doomed))
            if w[0] == "heal" and len(w) == 1:
                return "ok healed, closed %d" % self._heal()
            if w[0] == "status" and len(w) == 1:
                inter = sum(1 for v in self.conns.values() if v[0] != CLIENT)
                return "ok cut=%s hole=%d conns=%d inter=%d clients=%d refused=%d dropped=%d held=%d" % (
                    ",".join(str(x) for x in sorted(self.cut)), self.hole, len(self.conns), inter,
                    len(self.conns) - inter, self.refused, self.dropped, len(self.held))
        return "err unknown command: %s" % line.strip()[:80]

    def _heal(self):
        """Under self.lock: isolate nothing; close what the hole kept."""
        n = len(self.held) + len(self.frozen)
        for k in self.frozen:
            v = self.conns.pop(k, None)
            if v:
                _close(v[2], v[3])
        for c in self.held:
            _close(c)
        self.frozen, self.held, self.cut, self.hole = set(), [], set(), False
        return n

    def control(self, port):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", port))
        ls.listen(8)
        while True:
            c, _ = ls.accept()
            try:
                c.settimeout(5)
                f = c.makefile("rw")
                line = f.readline(256)
                f.write(self.command(line) + "\n")
                f.flush()
            except OSError:
                pass
            _close(c)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tag", required=True, help="string in the skiff nodes' argv (e.g. the config dir)")
    ap.add_argument("--control", type=int, required=True, help="control port on 127.0.0.1")
    ap.add_argument("routes", nargs="+", help="LISTEN_PORT:TARGET_PORT:NODE")
    a = ap.parse_args()
    p = Proxy(a.tag)
    for r in a.routes:
        try:
            lp, tp, node = (int(x) for x in r.split(":"))
        except ValueError:
            sys.exit("tcp_proxy: bad route '%s' (LISTEN_PORT:TARGET_PORT:NODE)" % r)
        p.serve_route(lp, tp, node)
    print("tcp_proxy: %d routes, control on %d" % (len(a.routes), a.control), flush=True)
    p.control(a.control)


if __name__ == "__main__":
    main()
