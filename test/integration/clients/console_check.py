"""Drives the web console (issue 21) in headless Chromium against a running
cluster and prints one PASS/FAIL line per check (sk_check_lines protocol).

    console_check.py --admin P1,P2,P3 --bootstrap HOST:PORT --shots DIR
                     --topic orders --group g1 --txn tx1

Expected values come from the JSON API and from kcat, never from constants:
the DOM must show the brokers, topics, ISR, records and group lag that the
cluster reports. Actions are clicked through the confirmation dialog and
their effect checked with kcat. JavaScript errors are collected over the
DevTools protocol and from the page's own #js-errors."""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    return ok


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
        return json.load(r)


def kcat_meta(bootstrap, topic):
    # all topics: a Metadata request naming one would auto-create it
    out = subprocess.run(["kcat", "-b", bootstrap, "-L", "-J"], capture_output=True, text=True, timeout=15).stdout
    try:
        return next((t for t in json.loads(out)["topics"] if t["topic"] == topic and not t.get("error")), None)
    except (ValueError, KeyError):
        return None


def kcat_records(bootstrap, topic, partition, count):
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", "beginning",
                          "-c", str(count), "-e", "-J"], capture_output=True, text=True, timeout=20).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


class Console:
    def __init__(self, b, port, shots):
        self.b, self.port, self.shots = b, port, shots

    def open(self, hash_, page):
        self.b.goto("http://127.0.0.1:%d/%s" % (self.port, hash_))
        return self.b.wait("document.body && document.body.dataset.rendered === %s" % json.dumps(page), 15)

    def show(self, hash_, page):
        n = self.b.eval("Number(document.body.dataset.renders || 0)")
        if self.b.eval("location.hash") == hash_:
            # the same hash fires no hashchange: the page would render again
            # only at its periodic refresh (up to 10 s); a query no page
            # reads makes it a new hash, rendered now
            hash_ += ("&" if "?" in hash_ else "?") + "again=%d" % n
        self.b.eval("location.hash = %s" % json.dumps(hash_))
        return self.b.wait("Number(document.body.dataset.renders || 0) > %d && document.body.dataset.rendered === %s"
                           % (n, json.dumps(page)), 15)

    def texts(self, sel):
        return self.b.eval("[...document.querySelectorAll(%s)].map(e => e.textContent.trim())" % json.dumps(sel))

    def shot(self, name):
        self.b.screenshot(os.path.join(self.shots, name + ".png"))

    def click_button(self, prefix):
        return self.b.eval("(() => { const b = [...document.querySelectorAll('button')].find(x => x.textContent.startsWith(%s));"
                           " if (!b) return false; b.click(); return true; })()" % json.dumps(prefix))

    def dialog(self, fields, wait_for):
        """Fills the open dialog's fields, confirms, waits for `wait_for`
        ('toast' or 'error'); returns the toast / dialog error text."""
        if not self.b.wait("document.getElementById('dlg').open", 5):
            return None
        for k, v in fields.items():
            self.b.eval("document.querySelector('#dlg [name=%s]').value = %s" % (k, json.dumps(v)))
        self.b.eval("document.getElementById('dlg-ok').click()")
        if wait_for == "toast":
            return self.b.wait("!document.getElementById('dlg').open && !document.getElementById('toast').hidden"
                               " && document.getElementById('toast').textContent", 15)
        return self.b.wait("!document.getElementById('dlg-error').hidden && document.getElementById('dlg-error').textContent", 15)


def degraded(a, ports):
    """After the shell stopped node --down: the console of node 1 shows it
    fenced, the health reasons, and marks under-replicated and offline
    topics (compared with /v1/topics)."""
    b = Browser(1280, 800)
    try:
        c = Console(b, ports[0], a.shots)
        check(c.open("#/cluster", "cluster"), "cluster page renders with node %d down" % a.down)
        row = b.eval("(() => { const r = document.querySelector('#brokers tr[data-broker=\"%d\"]');"
                     " return r ? [r.className, r.textContent] : null; })()" % a.down)
        check(row is not None and row[0] == "bad" and "fenced" in row[1], "broker %d shown fenced (%s)" % (a.down, row))
        reasons = c.texts("#health-reasons li")
        want = get(ports[0], "/v1/health")["unhealthy_reasons"]
        check(len(reasons) == len(want) and all(w.replace("_", " ") in r for w, r in zip(want, reasons)),
              "health reasons shown as /v1/health (%s)" % reasons)
        check(any(str(a.down) in r for r in reasons if r.startswith("nodes down")), "the down node is named")
        c.shot("cluster-degraded")
        check(c.show("#/topics", "topics"), "topics page renders with node %d down" % a.down)
        topics = {t["name"]: t for t in get(ports[0], "/v1/topics")["topics"]}
        cls = dict(b.eval("[...document.querySelectorAll('#topics tbody tr')].map(r => [r.dataset.topic, r.className])"))
        want = {n: "bad" if t["offline_partitions"] else "warn" if t["under_replicated_partitions"] else "" for n, t in topics.items()}
        check(cls == want, "under-replicated (warn) and offline (bad) topics stand out as /v1/topics says (%s)" %
              {n: v for n, v in cls.items() if v})
        check(want.get(a.topic) == "warn" and "bad" in want.values(), "the test really has an under-replicated and an offline topic")
        c.shot("topics-degraded")
        check(c.show("#/topic/" + a.topic, "topic"), "topic page renders with node %d down" % a.down)
        missing = b.eval("[...document.querySelectorAll('#partitions .missing')].map(e => e.textContent.replace(/[, ]/g, ''))")
        check(len(missing) > 0 and all(m == str(a.down) for m in missing), "replicas out of the ISR are marked (%s)" % missing)
        c.shot("topic-degraded")
        check(not b.errors and not b.eval("document.getElementById('js-errors').textContent"), "no JavaScript errors (%s)" % b.errors[:3])
    finally:
        b.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--admin", required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--shots", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--txn", required=True)
    ap.add_argument("--down", type=int, default=0, help="the node stopped: check the degraded views only")
    a = ap.parse_args()
    ports = [int(p) for p in a.admin.split(",")]
    os.makedirs(a.shots, exist_ok=True)
    if a.down:
        degraded(a, ports)
        return
    cluster = get(ports[0], "/v1/cluster")
    ctrl = cluster["controller_id"]
    ctrl_port = ports[ctrl - 1]
    b = Browser(1280, 800)
    try:
        c = Console(b, ports[0], a.shots)
        # --- Cluster
        check(c.open("#/cluster", "cluster"), "cluster page renders")
        want = sorted(str(x["node_id"]) for x in get(ports[0], "/v1/brokers")["brokers"])
        got = sorted(b.eval("[...document.querySelectorAll('#brokers tbody tr')].map(r => r.dataset.broker)"))
        check(got == want, "cluster page lists brokers %s (got %s)" % (want, got))
        ctl_row = b.eval("document.querySelector('#brokers tr[data-broker=\"%d\"]').textContent" % ctrl)
        check("controller" in ctl_row, "broker %d marked controller" % ctrl)
        voters = sorted(b.eval("[...document.querySelectorAll('#quorum tbody tr')].map(r => r.dataset.voter)"))
        check(voters == ["1", "2", "3"], "quorum table shows the 3 voters (%s)" % voters)
        check("healthy" in b.eval("document.getElementById('health').textContent"), "health badge says healthy")
        c.shot("cluster")
        # --- the keyboard: Tab reaches the skip link, then the page links; Enter follows one
        focus = "document.activeElement.textContent.trim()"
        b.key("Tab")
        first = b.eval(focus)
        b.key("Tab")
        b.key("Tab")
        second = b.eval(focus)
        check(first == "Skip to content" and second == "Topics", "Tab order: skip link, then the nav (%s, %s)" % (first, second))
        n0 = b.eval("Number(document.body.dataset.renders)")
        b.key("Enter")
        check(b.wait("Number(document.body.dataset.renders) > %d && document.body.dataset.rendered === 'topics'" % n0, 10),
              "Enter on the Topics link opens the Topics page")
        check(c.click_button("Create topic") and b.wait("document.getElementById('dlg').open", 5)
              and b.eval("document.activeElement.name") == "name", "the dialog opens with focus in its first field")
        b.key("Escape")
        check(b.wait("!document.getElementById('dlg').open", 5), "Escape closes the dialog")
        # --- Topics
        check(c.show("#/topics", "topics"), "topics page renders")
        topics = {t["name"]: t for t in get(ports[0], "/v1/topics")["topics"]}
        rows = b.eval("[...document.querySelectorAll('#topics tbody tr')].map(r => [r.dataset.topic, r.children[1].textContent])")
        shown = {r[0]: int(r[1]) for r in rows}
        check(set(shown) == set(topics) and all(shown[n] == topics[n]["partitions"] for n in topics),
              "topics page lists every topic with its partition count (%d topics)" % len(topics))
        c.shot("topics")
        b.viewport(390, 844, mobile=True)
        time.sleep(0.3)
        c.shot("topics-phone")
        check(b.eval("document.documentElement.scrollWidth <= 420"), "topics page fits a phone width (no page-wide scroll)")
        b.viewport(1280, 800)
        # --- Topic detail: ISR per partition
        check(c.show("#/topic/" + a.topic, "topic"), "topic page renders")
        tj = get(ports[0], "/v1/topics/" + a.topic)
        isr_dom = b.eval("[...document.querySelectorAll('#partitions tbody tr')].map(r => [r.dataset.partition, r.querySelector('.isr').textContent])")
        isr_json = [[str(p["partition"]), ", ".join(str(x) for x in p["isr"])] for p in tj["partitions"]]
        check(isr_dom == isr_json, "topic page shows each partition's ISR as /v1/topics (%s)" % isr_dom)
        km = kcat_meta(a.bootstrap, a.topic)
        ids = lambda xs: ", ".join(str(x["id"] if isinstance(x, dict) else x) for x in xs)  # noqa: E731
        kisr = sorted([str(p["partition"]), ids(p["isrs"])] for p in km["partitions"]) if km else None
        check(kisr is not None and sorted(isr_dom) == kisr, "... and as kcat's Metadata (%s)" % kisr)
        c.shot("topic")
        # --- Messages
        recs = kcat_records(a.bootstrap, a.topic, 0, 5)
        check(len(recs) == 5, "kcat reads 5 records of %s-0" % a.topic)
        check(c.show("#/messages?topic=%s&partition=0&from=offset&at=0&count=5&fmt=text&read=1" % a.topic, "messages"),
              "messages page renders")
        dom = b.eval("[...document.querySelectorAll('#records tbody tr')].map(r => [Number(r.dataset.offset), r.children[2].textContent, r.children[3].textContent, r.children[4].textContent])")
        check([d[0] for d in dom] == [r["offset"] for r in recs], "messages: offsets as kcat (%s)" % [d[0] for d in dom])
        check([d[2] for d in dom] == [r["payload"] for r in recs], "messages: values as kcat")
        check([d[1] for d in dom] == [r["key"] for r in recs], "messages: keys as kcat")
        check(all("h1: v1" in d[3] for d in dom), "messages: headers shown")
        c.shot("messages")
        c.show("#/messages?topic=%s&partition=0&from=offset&at=0&count=2&fmt=hex&read=1" % a.topic, "messages")
        hexv = b.eval("document.querySelector('#records tbody tr').children[3].textContent")
        check(hexv == " ".join("%02x" % x for x in recs[0]["payload"].encode()), "messages: hex view of the value")
        c.show("#/messages?topic=%s&partition=0&from=offset&at=0&count=2&fmt=json&read=1" % a.topic, "messages")
        pj = b.eval("document.querySelector('#records tbody tr').children[3].textContent")
        check(pj == json.dumps(json.loads(recs[0]["payload"]), indent=2), "messages: pretty JSON view of the value")
        ts = b.eval("0")  # timestamp search: records at or after the 3rd record's time
        ts = kcat_records(a.bootstrap, a.topic, 0, 3)[2]["ts"]
        c.show("#/messages?topic=%s&partition=0&from=timestamp&at=%d&count=1&fmt=text&read=1" % (a.topic, ts), "messages")
        first = b.eval("Number(document.querySelector('#records tbody tr').dataset.offset)")
        check(first is not None and first <= 2, "messages from a timestamp start at or before offset 2 (%s)" % first)
        # --- Charts: this tab has sampled /metrics every 5 s since the cluster page; two give a rate
        check(c.show("#/charts", "charts"), "charts page renders")
        check(b.eval("document.querySelectorAll('#charts figure.chart').length") == 5, "charts page draws 5 charts")
        check(b.wait("document.querySelectorAll('#charts polyline').length >= 2", 14), "charts have lines after two samples")
        c.shot("charts")
        # --- Groups: on the coordinator of the group
        gport = next((p for p in ports if get(p, "/v1/groups/" + a.group).get("coordinated_here")), None)
        check(gport is not None, "a node coordinates group %s" % a.group)
        g = Console(b, gport, a.shots)
        check(g.open("#/groups", "groups"), "groups page renders")
        check(a.group in b.eval("[...document.querySelectorAll('#groups tbody tr')].map(r => r.dataset.group)"), "groups page lists " + a.group)
        c.shot("groups")
        check(g.show("#/group/" + a.group, "group"), "group page renders")
        gj = get(gport, "/v1/groups/" + a.group)
        want = {"%s-%d" % (o["topic"], o["partition"]): str(o["lag"]) for o in gj["offsets"]}
        got = dict(b.eval("[...document.querySelectorAll('#offsets tbody tr')].map(r => [r.dataset.tp, r.querySelector('.lag').textContent])"))
        check(got == want and len(want) > 0, "group page shows the lag per partition as /v1/groups (%s)" % got)
        check(b.eval("document.getElementById('total-lag').textContent") == str(gj["total_lag"]), "group total lag %s" % gj["total_lag"])
        check(b.wait("document.querySelector('figure.chart polyline') !== null", 12), "group lag chart draws its samples")
        c.shot("group")
        # reset the (empty) group to the earliest offsets through the dialog
        check(g.click_button("Reset offsets"), "reset-offsets button")
        msg = g.dialog({"topic": a.topic, "to": "earliest"}, "toast")
        check(msg and "partitions reset" in msg, "reset offsets confirmed: %s" % msg)
        from confluent_kafka import Consumer, TopicPartition
        cons = Consumer({"bootstrap.servers": a.bootstrap, "group.id": a.group, "enable.auto.commit": False})
        committed = cons.committed([TopicPartition(a.topic, 0)], timeout=10)
        cons.close()
        check(committed[0].offset == 0, "confluent_kafka sees %s-0 committed at 0 for %s (%s)" % (a.topic, a.group, committed[0].offset))
        check(g.show("#/group/" + a.group + "?after=reset", "group"), "group page renders again")
        lag0 = b.eval("document.querySelector('#offsets tr[data-tp=\"%s-0\"] .lag').textContent" % a.topic)
        check(lag0 == str(get(gport, "/v1/groups/" + a.group)["offsets"][0]["lag"]) and lag0 == "20",
              "the lag shown after the reset is the whole partition (%s)" % lag0)
        # --- Transactions: on the coordinator of the transactional id
        tport = next((p for p in ports if any(t["transactional_id"] == a.txn for t in get(p, "/v1/transactions")["transactions"])), None)
        check(tport is not None, "a node coordinates transactional id " + a.txn)
        if tport:
            Console(b, tport, a.shots).open("#/transactions", "transactions")
            check(a.txn in b.eval("[...document.querySelectorAll('#transactions tbody tr')].map(r => r.dataset.txn)"), "transactions page lists " + a.txn)
            c.shot("transactions")
        # --- Actions on the controller's console
        k = Console(b, ctrl_port, a.shots)
        k.open("#/topic/" + a.topic, "topic")
        nparts = len(tj["partitions"])
        check(k.click_button("Add partitions"), "add-partitions button")
        msg = k.dialog({"count": str(nparts + 1)}, "toast")
        check(msg and "now has %d partitions" % (nparts + 1) in msg, "add partitions confirmed: %s" % msg)
        km = kcat_meta(a.bootstrap, a.topic)
        check(km is not None and len(km["partitions"]) == nparts + 1, "kcat sees %d partitions of %s" % (nparts + 1, a.topic))
        k.show("#/topics", "topics")
        check(k.click_button("Create topic"), "create-topic button")
        err = k.dialog({"name": a.topic, "partitions": "1"}, "error")
        check(err and "TOPIC_ALREADY_EXISTS" in err, "creating an existing topic shows the Kafka error in the dialog: %s" % err)
        k.shot("action-error")
        b.eval("document.getElementById('dlg-cancel').click()")
        k.click_button("Create topic")
        msg = k.dialog({"name": "made-by-console", "partitions": "2", "replication_factor": "3", "configs": "retention.ms=3600000"}, "toast")
        check(msg and "made-by-console created" in msg, "create topic confirmed: %s" % msg)
        km = kcat_meta(a.bootstrap, "made-by-console")
        check(km is not None and len(km["partitions"]) == 2 and len(km["partitions"][0]["replicas"]) == 3,
              "kcat sees made-by-console with 2 partitions, RF 3")
        # off the controller the actions go to it as Kafka requests (forwarded)
        other = ports[ctrl % 3]
        o = Console(b, other, a.shots)
        o.open("#/topics", "topics")
        o.click_button("Create topic")
        msg = o.dialog({"name": "via-follower", "partitions": "3", "replication_factor": "2"}, "toast")
        check(msg and "via-follower created: 3 partitions, RF 2" in msg, "create topic on a non-controller (forwarded): %s" % msg)
        km = kcat_meta(a.bootstrap, "via-follower")
        check(km is not None and len(km["partitions"]) == 3, "kcat sees via-follower with 3 partitions")
        o.show("#/topic/via-follower", "topic")
        o.click_button("Change config")
        msg = o.dialog({"key": "retention.ms", "value": "7200000"}, "toast")
        check(msg and "retention.ms = 7200000" in msg, "change a config on a non-controller: %s" % msg)
        check(get(ports[ctrl - 1], "/v1/topics/via-follower")["configs"]["retention.ms"] == "7200000",
              "the controller's /v1/topics shows retention.ms 7200000")
        o.show("#/topic/via-follower", "topic")
        o.click_button("Change config")
        err = o.dialog({"key": "retention.ms", "value": "soon"}, "error")
        check(err and "INVALID_CONFIG" in err, "a bad config value forwarded: the Kafka error in the dialog: %s" % err)
        b.eval("document.getElementById('dlg-cancel').click()")
        o.click_button("Delete topic")
        msg = o.dialog({"confirm": "via-follower"}, "toast")
        check(msg and "deleted" in msg, "delete topic on a non-controller: %s" % msg)
        check(kcat_meta(a.bootstrap, "via-follower") is None, "kcat no longer sees via-follower")
        # --- no JavaScript errors anywhere
        page_errs = b.eval("document.getElementById('js-errors').textContent")
        # the two refusals above were provoked: their 409s are expected
        errs = [e for e in b.errors if not (("status of 409" in e and "name=%s&" % a.topic in e) or
                                            ("status of 400" in e and "value=soon" in e))]
        check(not errs and not page_errs, "no JavaScript errors (%s %s)" % (errs[:3], page_errs))
    finally:
        b.close()


if __name__ == "__main__":
    main()
