#!/usr/bin/env python3
"""Developer tool: convert Kafka's JSON message schemas into our .kps format.

usage: import_json.py --ref DIR --out protocol/schema

DIR is a folder holding messages/*.json and raft/*.json. Run it once when
adding APIs; the resulting .kps files are committed and are the source of
truth from then on (the build never reads DIR). The .kps format is documented
at the top of kpgen.py. Only the standard library is used.
"""
import argparse
import json
import os
import re
import sys

APIS = """ApiVersions Metadata Produce Fetch ListOffsets FindCoordinator JoinGroup
SyncGroup Heartbeat LeaveGroup OffsetCommit OffsetFetch ListGroups DescribeGroups
DeleteGroups OffsetDelete CreateTopics DeleteTopics CreatePartitions DeleteRecords
DescribeConfigs AlterConfigs IncrementalAlterConfigs DescribeCluster DescribeLogDirs
DescribeTopicPartitions OffsetForLeaderEpoch ElectLeaders AlterPartitionReassignments
ListPartitionReassignments InitProducerId AddPartitionsToTxn AddOffsetsToTxn EndTxn
TxnOffsetCommit WriteTxnMarkers DescribeProducers DescribeTransactions ListTransactions
SaslHandshake SaslAuthenticate DescribeAcls CreateAcls DeleteAcls
DescribeUserScramCredentials AlterUserScramCredentials DescribeClientQuotas
AlterClientQuotas Vote BeginQuorumEpoch EndQuorumEpoch DescribeQuorum FetchSnapshot
AlterPartition BrokerRegistration BrokerHeartbeat ConsumerGroupHeartbeat
ConsumerGroupDescribe UpdateFeatures""".split()

STANDALONE = [("messages", "ConsumerProtocolSubscription"),
              ("messages", "ConsumerProtocolAssignment"),
              ("raft", "LeaderChangeMessage"), ("raft", "SnapshotHeaderRecord"),
              ("raft", "SnapshotFooterRecord"), ("raft", "VotersRecord"),
              ("raft", "KRaftVersionRecord"),
              ("internal-records/group-coordinator", "GroupMetadataKey"),
              ("internal-records/group-coordinator", "GroupMetadataValue"),
              ("internal-records/group-coordinator", "OffsetCommitKey"),
              ("internal-records/group-coordinator", "OffsetCommitValue")]
# KIP-848 consumer groups' records (imported one by one with write(): a full
# run would overwrite the .kps files edited since)
STANDALONE += [("internal-records/group-coordinator", n + kv)
               for n in ['ConsumerGroupMetadata', 'ConsumerGroupPartitionMetadata', 'ConsumerGroupMemberMetadata', 'ConsumerGroupTargetAssignmentMetadata', 'ConsumerGroupTargetAssignmentMember', 'ConsumerGroupCurrentMemberAssignment'] for kv in ("Key", "Value")]


def snake(name):
    s = re.sub(r'([A-Z]+)([A-Z][a-z])', r'\1_\2', name)
    return re.sub(r'(?<=[a-z0-9])([A-Z])', r'_\1', s).lower()


def load(path):
    with open(path) as f:
        text = "\n".join(l for l in f.read().splitlines() if not l.strip().startswith("//"))
    return json.loads(text)


def field_lines(fields, indent, out):
    for fd in fields:
        attrs = ["v=" + fd["versions"]]
        if fd.get("nullableVersions"):
            attrs.append("null=" + fd["nullableVersions"])
        if "tag" in fd:
            attrs.append("tag=%d" % int(fd["tag"]))
            attrs.append("tagv=" + fd.get("taggedVersions", fd["versions"]))
        if "flexibleVersions" in fd:
            attrs.append("flex=" + fd["flexibleVersions"])
        if "default" in fd:
            d = str(fd["default"])
            if d.lower() in ("true", "false"):
                d = d.lower()
            attrs.append('default=' + (d if d else '""'))
        if fd.get("ignorable"):
            attrs.append("ignorable")
        about = fd.get("about", "").replace("\n", " ").strip()
        line = " " * indent + "%s %s %s" % (fd["name"], fd["type"], " ".join(attrs))
        if about:
            line += "  # " + about
        out.append(line)
        if "fields" in fd:
            field_lines(fd["fields"], indent + 2, out)


def message_lines(kind, d, out):
    head = "%s %s" % (kind, d["name"])
    if "apiKey" in d:
        head += " api=%d" % d["apiKey"]
    head += " valid=%s flexible=%s" % (d["validVersions"], d["flexibleVersions"])
    if d.get("latestVersionUnstable"):
        head += " unstable"
    out.append(head)
    field_lines(d["fields"], 2, out)
    for cs in d.get("commonStructs", []):
        out.append("  struct %s v=%s" % (cs["name"], cs["versions"]))
        field_lines(cs["fields"], 4, out)


def write(out_dir, stem, msgs):
    out = ["# %s — imported from the Kafka JSON schema by protocol/gen/import_json.py;" % stem,
           "# this file is now the source of truth (format: see protocol/gen/kpgen.py)."]
    for kind, d in msgs:
        out.append("")
        message_lines(kind, d, out)
    with open(os.path.join(out_dir, snake(stem) + ".kps"), "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for api in APIS:
        req = load(os.path.join(a.ref, "messages", api + "Request.json"))
        rsp = load(os.path.join(a.ref, "messages", api + "Response.json"))
        write(a.out, api, [("request", req), ("response", rsp)])
    for folder, name in STANDALONE:
        write(a.out, name, [("message", load(os.path.join(a.ref, folder, name + ".json")))])
    return 0


if __name__ == "__main__":
    sys.exit(main())
