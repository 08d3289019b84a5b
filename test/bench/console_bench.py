"""The console's benchmark figures (issue 21), against a running node:
  (a) time to first render of the Topics page: fresh navigations to
      /#/topics in headless Chromium, the page's own mark
      (body.dataset.firstRenderMs = performance.now() when the first page
      was swapped in, i.e. since navigation start) once every topic row is
      in the DOM; median and max of ROUNDS;
  (b) the node's CPU while the console stays open on the Topics page
      (its refresh every 10 s, health every 5 s, /metrics every 5 s) for
      SECS seconds, against the same SECS with no browser: CPU seconds
      from /proc/PID/stat (utime + stime).
Prints one JSON line per figure. No timing assertion.

    console_bench.py --admin PORT --pid PID --topics N --rounds R --secs S"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "clients"))
from cdp import Browser  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK   # utime, stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--admin", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--topics", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=int, default=60)
    a = ap.parse_args()
    url = "http://127.0.0.1:%d/#/topics" % a.admin
    # (b) first: the idle baseline without any browser, once the topic
    # creation's own work (log directories, metadata) has settled
    time.sleep(5)
    c0 = cpu_s(a.pid)
    time.sleep(a.secs)
    idle = cpu_s(a.pid) - c0
    b = Browser(1280, 800)
    try:
        times = []
        for _ in range(a.rounds + 1):
            b.goto("about:blank")
            b.goto(url)
            ok = b.wait("document.body && document.body.dataset.rendered === 'topics' && "
                        "document.querySelectorAll('#topics tbody tr').length >= %d && document.body.dataset.firstRenderMs" % a.topics, 60)
            if not ok:
                print(json.dumps({"error": "topics page did not render %d rows in 60 s" % a.topics}))
                return 1
            times.append(float(ok))
        times = times[1:]   # the first load warms the cache (304s afterwards)
        print(json.dumps({"figure": "topics_first_render_ms", "topics": a.topics, "rounds": a.rounds,
                          "median_ms": statistics.median(times), "max_ms": max(times), "all_ms": times}))
        c0 = cpu_s(a.pid)
        time.sleep(a.secs)
        open_s = cpu_s(a.pid) - c0
        renders = b.eval("Number(document.body.dataset.renders)")
        print(json.dumps({"figure": "node_cpu_console_open", "secs": a.secs, "topics": a.topics,
                          "cpu_s_idle": round(idle, 2), "cpu_s_console_open": round(open_s, 2),
                          "extra_cpu_pct_of_one_core": round(100 * (open_s - idle) / a.secs, 2),
                          "page_renders": renders, "js_errors": b.errors[:3]}))
    finally:
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
