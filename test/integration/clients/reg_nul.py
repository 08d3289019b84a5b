"""BrokerRegistration (API 62, v0, flexible) frames from a raw client to
every controller port (issue 16, finding 6): a listener name holding a NUL
must be refused (INVALID_REQUEST) by the active controller, never cut at
the NUL and registered; the same frame without the NUL but with another
cluster id reaches the cluster-id check (INCONSISTENT_CLUSTER_ID), which
shows the NUL check, not something earlier, answered the first. Other
nodes answer NOT_CONTROLLER. Nothing is registered either way.

usage: reg_nul.py PORT...
Prints "PASS what" / "FAIL what: why" lines (sk_check_lines).
"""
import struct
import sys

from forged_raft import exchange, frame
from kwire import cstr, uvarint

ERR_NOT_CONTROLLER, ERR_INVALID_REQUEST, ERR_INCONSISTENT_CLUSTER_ID = 41, 42, 104


def registration(listener_name):
    """BrokerId 77, ClusterId "not-this-cluster", IncarnationId, one listener,
    no features, Rack null, IsMigratingZkBroker false, no tags."""
    lst = cstr(listener_name) + cstr(b"127.0.0.1") + struct.pack(">Hh", 9, 0) + b"\x00"
    body = (struct.pack(">i", 77) + cstr(b"not-this-cluster") + bytes(range(1, 17)) +
            uvarint(2) + lst + uvarint(1) + b"\x00" + b"\x00" + b"\x00")
    return frame(62, 0, b"attacker", body, True)


def error_code(port, data):
    body = exchange(port, data)   # after the correlation id: header tags, ThrottleTimeMs, ErrorCode
    if body is None or len(body) < 7:
        return None
    return struct.unpack(">h", body[5:7])[0]


ports = [int(p) for p in sys.argv[1:]]
nul = [error_code(p, registration(b"PLAIN\x00TEXT")) for p in ports]
plain = [error_code(p, registration(b"PLAINTEXT")) for p in ports]
ok = nul.count(ERR_INVALID_REQUEST) == 1 and all(c in (ERR_NOT_CONTROLLER, ERR_INVALID_REQUEST) for c in nul)
print(("PASS" if ok else "FAIL") + " a listener name with a NUL: INVALID_REQUEST from the controller" +
      ("" if ok else f": answers {nul}"))
ok = plain.count(ERR_INCONSISTENT_CLUSTER_ID) == 1 and all(
    c in (ERR_NOT_CONTROLLER, ERR_INCONSISTENT_CLUSTER_ID) for c in plain)
print(("PASS" if ok else "FAIL") + " control: the same frame without the NUL reaches the cluster-id check" +
      ("" if ok else f": answers {plain}"))
