#!/usr/bin/python3
"""fetch_probe.py LOG — what each Fetch of one librdkafka consumer looked like.

LOG is the stderr of a librdkafka consumer run with debug=fetch,protocol and
the default logger ("%7|SEC.MS|FAC|name| [thrd:...]: ..."). Prints one JSON
object:
  fetches           FetchRequests sent
  resp_bytes_mean   mean FetchResponse size (bytes); resp_bytes_p50 its median
  empty_pct         responses that enqueued no message (%)
  parts_req_mean    partitions asked for per request ("Fetch a/b/c toppar(s)": a)
  parts_data_mean   partitions with messages per response (the consumer's
                    "Enqueue ... fetch queue" lines between a response and
                    the next request: its broker thread handles a response
                    whole before it sends the next request)
  rtt_p50_ms, rtt_p99_ms, rtt_mean_ms   librdkafka's rtt of each response
  gap_mean_ms       response -> next request on the same connection (the log
                    clock has 1 ms resolution: a mean over many fetches)
  fetch_span_s      first request to last response
Reads nothing but the log: neither server is touched.
"""
import json
import re
import sys

SENT = re.compile(r"Sent FetchRequest \(v\d+, \d+ bytes")
RECV = re.compile(r"Received FetchResponse \(v\d+, (\d+) bytes, CorrId \d+, rtt ([0-9.]+)ms")
TOPPARS = re.compile(r"Fetch (\d+)/\d+/\d+ toppar")


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def main(path):
    nreq = 0
    sizes, rtts, gaps, parts_data, parts_req = [], [], [], [], []
    first_t = last_t = None
    resp_t = None        # time of the response being handled, None between
    cur = 0
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.split("|", 4)
            if len(fields) < 5 or not fields[0].startswith("%"):
                continue
            try:
                t = float(fields[1])
            except ValueError:
                continue
            fac, msg = fields[2], fields[4]
            if fac == "SEND" and SENT.search(msg):
                if resp_t is not None:
                    gaps.append((t - resp_t) * 1000.0)
                    parts_data.append(cur)
                    resp_t = None
                nreq += 1
                if first_t is None:
                    first_t = t
                continue
            m = RECV.search(msg) if fac == "RECV" else None
            if m:
                if resp_t is not None:
                    parts_data.append(cur)
                sizes.append(int(m.group(1)))
                rtts.append(float(m.group(2)))
                resp_t = last_t = t
                cur = 0
                continue
            if fac == "FETCH":
                m = TOPPARS.search(msg)
                if m:
                    parts_req.append(int(m.group(1)))
                continue
            if fac == "CONSUME" and "Enqueue " in msg and "fetch queue" in msg and resp_t is not None:
                cur += 1
    if resp_t is not None:
        parts_data.append(cur)
    mean = lambda v: sum(v) / len(v) if v else 0.0
    out = {
        "fetches": nreq,
        "responses": len(sizes),
        "resp_bytes_mean": round(mean(sizes)),
        "resp_bytes_p50": pct(sizes, 50),
        "empty_pct": round(100.0 * sum(1 for x in parts_data if x == 0) / len(parts_data), 1) if parts_data else 0.0,
        "parts_req_mean": round(mean(parts_req), 2),
        "parts_data_mean": round(mean(parts_data), 2),
        "rtt_p50_ms": round(pct(rtts, 50), 2),
        "rtt_p99_ms": round(pct(rtts, 99), 2),
        "rtt_mean_ms": round(mean(rtts), 2),
        "gap_mean_ms": round(mean(gaps), 2),
        "fetch_span_s": round((last_t - first_t) if first_t is not None and last_t is not None else 0.0, 3),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fetch_probe.py LOG")
    main(sys.argv[1])
