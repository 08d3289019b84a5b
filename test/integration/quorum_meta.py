#!/usr/bin/python3
"""Helpers for t_quorum_*.sh (kafka-python's protocol classes, one node at a
time, so that each node's own answer is checked).

  quorum_meta.py metadata HOST:PORT   -> one line: controller=<id> brokers=<ids> topics=<names>
  quorum_meta.py describe-quorum HOST:PORT -> error=<e> leader=<id> epoch=<n> voters=<ids>
  quorum_meta.py create-once HOST:PORT TOPIC PARTITIONS RF -> one CreateTopics to that node
  quorum_meta.py autocreate HOST:PORT TOPIC -> Metadata for TOPIC until it exists
  quorum_meta.py race-create HOST:PORT TOPIC -> two CreateTopics of TOPIC on two
                                     connections, both sent before either
                                     answer is read: "errors=<a>,<b>" (sorted)
  quorum_meta.py race-partitions HOST:PORT TOPIC COUNT -> the same with two
                                     CreatePartitions to COUNT: "errors=..."
  quorum_meta.py alter-broker HOST:PORT NAME KEY VALUE -> AlterConfigs v1 of a
                                     BROKER resource (NAME "" = cluster default)
  quorum_meta.py describe HOST:PORT TYPE NAME KEY -> DescribeConfigs v1 of one
                                     key: "value=<v> source=<s>" (TYPE 2 topic, 4 broker)
  quorum_meta.py create HOST:PORT[,..] TOPIC PARTITIONS RF [TIMEOUT_S]
                                     -> exit 0 once created (retries through
                                        NOT_CONTROLLER / leader changes until
                                        the timeout), 1 otherwise
"""
import io
import socket
import struct
import sys
import time

from kafka.protocol.admin import (AlterConfigsRequest, CreatePartitionsRequest, CreateTopicsRequest,
                                  DescribeConfigsRequest)
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.types import Array, Boolean, Int8, Int16, Int32, Schema, String

# kafka-python decodes DescribeConfigs v1's config_source (int8) as a
# boolean; the same layout with the right type:
_S = String("utf-8")
DESCRIBE_V1 = Schema(
    ("throttle_time_ms", Int32),
    ("resources", Array(("error_code", Int16), ("error_message", _S), ("resource_type", Int8),
                        ("resource_name", _S),
                        ("config_entries", Array(("config_names", _S), ("config_value", _S),
                                                 ("read_only", Boolean), ("config_source", Int8),
                                                 ("is_sensitive", Boolean),
                                                 ("config_synonyms", Array(("config_name", _S),
                                                                           ("config_value", _S),
                                                                           ("config_source", Int8))))))))


def send(s, req):
    cid = b"t_quorum"   # request header v1 (these versions are not flexible)
    hdr = struct.pack(">hhih", req.API_KEY, req.API_VERSION, 7, len(cid)) + cid
    msg = hdr + req.encode()
    s.sendall(struct.pack(">i", len(msg)) + msg)


def call(addr, req, timeout=5.0):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        send(s, req)
        return receive(s, req)


def receive(s, req):
    buf = b""
    while len(buf) < 4:
        chunk = s.recv(4 - len(buf))
        if not chunk:
            raise IOError("closed")
        buf += chunk
    size = struct.unpack(">i", buf)[0]
    data = b""
    while len(data) < size:
        chunk = s.recv(size - len(data))
        if not chunk:
            raise IOError("closed")
        data += chunk
    corr = struct.unpack(">i", data[:4])[0]
    assert corr == 7, corr
    if isinstance(req, DescribeConfigsRequest[1]):
        return DESCRIBE_V1.decode(io.BytesIO(data[4:]))
    return req.RESPONSE_TYPE.decode(data[4:])


def race(addr, req):
    """The same request on two connections, both sent before reading."""
    host, port = addr.rsplit(":", 1)
    socks = [socket.create_connection((host, int(port)), timeout=10.0) for _ in range(2)]
    try:
        for so in socks:
            send(so, req)
        return [receive(so, req) for so in socks]
    finally:
        for so in socks:
            so.close()


def race_create(addr, topic):
    req = CreateTopicsRequest[1](create_topic_requests=[(topic, 3, 1, [], [])], timeout=5000, validate_only=False)
    return sorted(r.topic_errors[0][1] for r in race(addr, req))


def race_partitions(addr, topic, count):
    req = CreatePartitionsRequest[0](topic_partitions=[(topic, (count, None))], timeout=5000, validate_only=False)
    return sorted(r.topic_errors[0][1] for r in race(addr, req))


def alter_broker(addr, name, key, value):
    req = AlterConfigsRequest[1](resources=[(4, name, [(key, value)])], validate_only=False)
    r = call(addr, req, timeout=8.0)
    return r.resources[0][0]


def describe(addr, rtype, name, key):
    r = call(addr, DescribeConfigsRequest[1](resources=[(rtype, name, [key])], include_synonyms=False))
    res = r[1][0]
    if res[0] != 0:
        return "error=%d" % res[0]
    for e in res[4]:
        if e[0] == key:
            return "value=%s source=%d" % (e[1], e[3])
    return "missing"


def metadata(addr):
    r = call(addr, MetadataRequest[1](topics=None))
    brokers = sorted(b[0] for b in r.brokers)
    topics = sorted(t[1] for t in r.topics if t[0] == 0)
    return r.controller_id, brokers, topics


def create(addrs, topic, parts, rf, timeout_s):
    deadline = time.time() + timeout_s
    last = None
    while time.time() < deadline:
        for a in addrs:
            try:
                ctrl, brokers, topics = metadata(a)
                if topic in topics:
                    return 0
                req = CreateTopicsRequest[1](create_topic_requests=[(topic, parts, rf, [], [])],
                                             timeout=5000, validate_only=False)
                r = call(a, req, timeout=6.0)
                err = r.topic_errors[0][1]
                last = err
                if err in (0, 36):   # created, or already exists (an earlier try committed)
                    return 0
            except (OSError, IOError) as e:
                last = str(e)
        time.sleep(0.2)
    print("create %s failed: %s" % (topic, last), file=sys.stderr)
    return 1


def create_once(addr, topic, parts, rf):
    """One CreateTopics to this node only: 0 when it answers success."""
    req = CreateTopicsRequest[1](create_topic_requests=[(topic, parts, rf, [], [])],
                                 timeout=5000, validate_only=False)
    r = call(addr, req, timeout=8.0)
    err = r.topic_errors[0][1]
    if err != 0:
        print("create %s via %s: error %d" % (topic, addr, err), file=sys.stderr)
    return 0 if err == 0 else 1


def autocreate(addr, topic, timeout_s=10.0):
    """Metadata naming a new topic (auto-creation) until it has partitions."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        r = call(addr, MetadataRequest[1](topics=[topic]))
        for t in r.topics:
            if t[1] == topic and t[0] == 0 and len(t[3]) > 0:
                return 0
        time.sleep(0.2)
    print("auto-creation of %s via %s did not happen" % (topic, addr), file=sys.stderr)
    return 1


def describe_quorum(addr):
    """DescribeQuorum v0 (flexible) by hand: kafka-python lacks it.
    Returns (partition error, leader id, leader epoch, voter ids)."""
    host, port = addr.rsplit(":", 1)
    topic = b"__cluster_metadata"
    cid = b"t_quorum"
    hdr = struct.pack(">hhih", 55, 0, 9, len(cid)) + cid + b"\x00"
    body = b"\x02" + bytes([len(topic) + 1]) + topic + b"\x02" + struct.pack(">i", 0) + b"\x00\x00\x00"
    msg = hdr + body
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise IOError("closed")
            buf += chunk
    d = buf[4:]
    assert struct.unpack(">i", d[:4])[0] == 9
    p = 5                                   # correlation id + empty tag section
    p += 2                                  # top-level error code
    assert d[p] == 2; p += 1                # one topic
    n = d[p] - 1; p += 1 + n                # topic name
    assert d[p] == 2; p += 1                # one partition
    p += 4                                  # partition index
    err, leader, epoch, hw = struct.unpack(">hiiq", d[p:p + 18]); p += 18
    nv = d[p] - 1; p += 1
    voters = []
    for _ in range(nv):
        rid, leo = struct.unpack(">iq", d[p:p + 12]); p += 12
        p += 1                              # tagged fields
        voters.append(rid)
    return err, leader, epoch, sorted(voters)


def main():
    if sys.argv[1] == "metadata":
        ctrl, brokers, topics = metadata(sys.argv[2])
        print("controller=%d brokers=%s topics=%s" % (ctrl, ",".join(map(str, brokers)), ",".join(topics)))
        return 0
    if sys.argv[1] == "create":
        t = float(sys.argv[6]) if len(sys.argv) > 6 else 20.0
        return create(sys.argv[2].split(","), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), t)
    if sys.argv[1] == "describe-quorum":
        err, leader, epoch, voters = describe_quorum(sys.argv[2])
        print("error=%d leader=%d epoch=%d voters=%s" % (err, leader, epoch, ",".join(map(str, voters))))
        return 0
    if sys.argv[1] == "create-once":
        return create_once(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    if sys.argv[1] == "race-create":
        print("errors=%s" % ",".join(map(str, race_create(sys.argv[2], sys.argv[3]))))
        return 0
    if sys.argv[1] == "race-partitions":
        print("errors=%s" % ",".join(map(str, race_partitions(sys.argv[2], sys.argv[3], int(sys.argv[4])))))
        return 0
    if sys.argv[1] == "alter-broker":
        err = alter_broker(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
        print("error=%d" % err)
        return 0 if err == 0 else 1
    if sys.argv[1] == "describe":
        print(describe(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]))
        return 0
    if sys.argv[1] == "autocreate":
        return autocreate(sys.argv[2], sys.argv[3])
    return 2


if __name__ == "__main__":
    sys.exit(main())
