/* Unit tests for broker/metrics*.c: exact text for counters, gauges and
 * histograms with labels and escaping, deterministic order, number
 * spellings, the series bound and its drop counter, invalid label values,
 * scrape-time callbacks and collectors, registration errors, out-of-memory
 * rendering, the catalogue, an independent format validator run by
 * /usr/bin/python3 over the output (and shown to reject broken text), and
 * GET /metrics through a real admin server on 127.0.0.1 port 0. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "broker/http/admin.h"
#include "broker/metrics/metrics.h"
#include "broker/metrics/metrics_catalogue.h"

/* ------------------------------------------------------------- helpers */

#define DROPPED_HEAD                                                                   \
    "# HELP skiff_metrics_series_dropped_total Series not created: over the metric's " \
    "series bound, invalid label values, or out of memory.\n"                          \
    "# TYPE skiff_metrics_series_dropped_total counter\n"

/* The registry rendered into a NUL-terminated heap string. */
static char *render(bk_mx_t *m) {
    struct evbuffer *b = evbuffer_new();
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(bk_mx_render(m, b), KP_OK);
    size_t n = evbuffer_get_length(b);
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(evbuffer_remove(b, s, n), (int)n);
    s[n] = '\0';
    evbuffer_free(b);
    return s;
}

/* Compares line by line so a failure names the first differing line. */
static void expect_text(const char *got, const char *want) {
    int line = 1;
    const char *g = got, *w = want;
    while (*g != '\0' || *w != '\0') {
        size_t gl = strcspn(g, "\n"), wl = strcspn(w, "\n");
        ck_assert_msg(gl == wl && memcmp(g, w, gl) == 0,
                      "line %d:\n got: %.*s\nwant: %.*s", line, (int)gl, g, (int)wl, w);
        ck_assert_msg(g[gl] == w[wl], "line %d: newline mismatch", line);
        g += gl + (g[gl] != '\0');
        w += wl + (w[wl] != '\0');
        line++;
    }
}

static void expect_render(bk_mx_t *m, const char *want) {
    char *got = render(m);
    expect_text(got, want);
    free(got);
}

static uint32_t reg(bk_mx_t *m, const bk_mx_desc_t *d) {
    uint32_t id = UINT32_MAX;
    ck_assert_int_eq(bk_mx_register(m, d, &id), KP_OK);
    return id;
}

static bk_mx_series_t *ser1(bk_mx_t *m, uint32_t id, const char *v) {
    return bk_mx_series(m, id, (const char *[]){ v });
}

static bk_mx_series_t *ser2(bk_mx_t *m, uint32_t id, const char *a, const char *b) {
    return bk_mx_series(m, id, (const char *[]){ a, b });
}

/* --------------------------------------------------- python validator */

static const char validator_py[] =
    "import re, sys\n"
    "NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*')\n"
    "LNAME = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*')\n"
    "def fail(n, msg):\n"
    "    sys.stdout.write('line %d: %s\\n' % (n, msg)); sys.exit(1)\n"
    "def value(n, s):\n"
    "    if s in ('+Inf', '-Inf', 'NaN'): return float(s.replace('+', ''))\n"
    "    if not re.fullmatch(r'[-+]?(\\d+\\.?\\d*|\\.\\d+)([eE][-+]?\\d+)?', s): fail(n, 'bad value ' + s)\n"
    "    return float(s)\n"
    "def labels(n, s, i):\n"
    "    out = {}\n"
    "    while True:\n"
    "        if s[i] == '}': return out, i + 1\n"
    "        m = LNAME.match(s, i)\n"
    "        if not m: fail(n, 'bad label name')\n"
    "        k = m.group(0); i = m.end()\n"
    "        if k in out: fail(n, 'duplicate label ' + k)\n"
    "        if s[i:i+2] != '=\"': fail(n, 'expected =\"')\n"
    "        i += 2; v = []\n"
    "        while True:\n"
    "            if i >= len(s): fail(n, 'unterminated label value')\n"
    "            c = s[i]\n"
    "            if c == '\\\\':\n"
    "                e = s[i+1:i+2]\n"
    "                if e not in ('\\\\', '\"', 'n'): fail(n, 'bad escape')\n"
    "                v.append('\\n' if e == 'n' else e); i += 2\n"
    "            elif c == '\"': i += 1; break\n"
    "            elif c == '\\n': fail(n, 'raw newline')\n"
    "            else: v.append(c); i += 1\n"
    "        out[k] = ''.join(v)\n"
    "        if s[i] == ',': i += 1\n"
    "        elif s[i] != '}': fail(n, 'expected , or }')\n"
    "data = sys.stdin.buffer.read()\n"
    "try: text = data.decode('utf-8')\n"
    "except UnicodeDecodeError: fail(0, 'not UTF-8')\n"
    "if not text.endswith('\\n'): fail(0, 'no final newline')\n"
    "types, helps, done, seen = {}, set(), set(), set()\n"
    "hist = {}\n"
    "cur = None; samples = 0; sampled = set()\n"
    "def family(name):\n"
    "    for suf in ('_bucket', '_sum', '_count'):\n"
    "        if name.endswith(suf) and types.get(name[:-len(suf)]) == 'histogram': return name[:-len(suf)]\n"
    "    return name\n"
    "for n, line in enumerate(text[:-1].split('\\n'), 1):\n"
    "    if line.startswith('#'):\n"
    "        p = line.split(' ', 3)\n"
    "        if len(p) >= 3 and p[1] in ('HELP', 'TYPE'):\n"
    "            if not NAME.fullmatch(p[2]): fail(n, 'bad name in ' + p[1])\n"
    "            if p[2] in done or (cur is not None and cur != p[2] and p[2] in types): fail(n, 'family split')\n"
    "            if p[1] == 'HELP':\n"
    "                if p[2] in helps: fail(n, 'second HELP')\n"
    "                h = p[3] if len(p) > 3 else ''\n"
    "                if not re.fullmatch(r'(?:[^\\\\]|\\\\[\\\\n])*', h): fail(n, 'bad HELP escape')\n"
    "                helps.add(p[2])\n"
    "            else:\n"
    "                if p[2] in types: fail(n, 'second TYPE')\n"
    "                if len(p) != 4 or p[3] not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'): fail(n, 'bad TYPE')\n"
    "                if p[2] in sampled: fail(n, 'TYPE after samples')\n"
    "                types[p[2]] = p[3]\n"
    "            if cur is not None and cur != p[2]: done.add(cur)\n"
    "            cur = p[2]\n"
    "        continue\n"
    "    if line == '': fail(n, 'empty line')\n"
    "    m = NAME.match(line)\n"
    "    if not m: fail(n, 'bad metric name')\n"
    "    name = m.group(0); i = m.end(); lab = {}\n"
    "    if i < len(line) and line[i] == '{': lab, i = labels(n, line, i + 1)\n"
    "    if line[i:i+1] != ' ': fail(n, 'expected space')\n"
    "    rest = line[i+1:].split(' ')\n"
    "    if len(rest) > 2: fail(n, 'trailing fields')\n"
    "    v = value(n, rest[0])\n"
    "    fam = family(name)\n"
    "    if fam in done: fail(n, 'family split: ' + fam)\n"
    "    if cur != fam:\n"
    "        if cur is not None: done.add(cur)\n"
    "        cur = fam\n"
    "    key = (name, tuple(sorted(lab.items())))\n"
    "    if key in seen: fail(n, 'duplicate series')\n"
    "    seen.add(key); samples += 1; sampled.add(fam)\n"
    "    t = types.get(fam, 'untyped')\n"
    "    if t == 'counter' and not (v >= 0): fail(n, 'negative counter')\n"
    "    if t == 'histogram':\n"
    "        if name == fam: fail(n, 'bare histogram sample')\n"
    "        base = tuple(sorted((k, x) for k, x in lab.items() if k != 'le'))\n"
    "        h = hist.setdefault((fam, base), {'le': [], 'sum': None, 'count': None})\n"
    "        if name.endswith('_bucket'):\n"
    "            if 'le' not in lab: fail(n, 'bucket without le')\n"
    "            le = value(n, lab['le'])\n"
    "            if h['le'] and (le <= h['le'][-1][0] or v < h['le'][-1][1]): fail(n, 'buckets not increasing / cumulative')\n"
    "            h['le'].append((le, v))\n"
    "        elif 'le' in lab: fail(n, 'le outside _bucket')\n"
    "        elif name.endswith('_sum'): h['sum'] = v\n"
    "        else: h['count'] = v\n"
    "for (fam, base), h in hist.items():\n"
    "    if not h['le'] or h['le'][-1][0] != float('inf'): fail(0, fam + ': no +Inf bucket')\n"
    "    if h['count'] is None or h['sum'] is None: fail(0, fam + ': no _sum/_count')\n"
    "    if h['count'] != h['le'][-1][1]: fail(0, fam + ': +Inf bucket != _count')\n"
    "print('ok %d samples' % samples)\n";

/* Runs the validator over text[0..len); returns its exit status and copies
 * its first output line into msg. Files live in a mkdtemp directory that is
 * removed afterwards. */
static int validate(const char *text, size_t len, char *msg, size_t msg_len) {
    char dir[] = "/tmp/skiff-metrics-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char py[128], in[128], cmd[512];
    snprintf(py, sizeof py, "%s/v.py", dir);
    snprintf(in, sizeof in, "%s/in.txt", dir);
    FILE *f = fopen(py, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(validator_py, 1, strlen(validator_py), f), strlen(validator_py));
    ck_assert_int_eq(fclose(f), 0);
    f = fopen(in, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s < %s 2>&1", py, in);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    msg[0] = '\0';
    if (fgets(msg, (int)msg_len, p) == NULL) msg[0] = '\0';
    char sink[256];
    while (fgets(sink, sizeof sink, p) != NULL) {}
    int st = pclose(p);
    unlink(py);
    unlink(in);
    rmdir(dir);
    ck_assert_msg(WIFEXITED(st), "validator did not exit");
    return WEXITSTATUS(st);
}

static void expect_valid(const char *text) {
    char msg[256];
    int rc = validate(text, strlen(text), msg, sizeof msg);
    ck_assert_msg(rc == 0, "validator rejected the output: %s\n%s", msg, text);
    ck_assert_msg(strncmp(msg, "ok ", 3) == 0, "validator said: %s", msg);
}

static void expect_invalid(const char *text, const char *why) {
    char msg[256];
    int rc = validate(text, strlen(text), msg, sizeof msg);
    ck_assert_msg(rc == 1, "validator accepted broken text (%s):\n%s", why, text);
    ck_assert_msg(strstr(msg, why) != NULL, "validator said '%s', expected '%s'", msg, why);
}

/* ---------------------------------------------------------------- tests */

START_TEST(test_counter_labels_escaping_and_order) {
    bk_mx_t *m = bk_mx_new();
    ck_assert_ptr_nonnull(m);
    /* help holds a backslash and a newline; values a quote, backslash, newline */
    bk_mx_desc_t d = { .name = "t_requests_total", .help = "Requests \\ counted\nper \"api\".",
                       .type = BK_MX_COUNTER, .label_count = 2, .labels = { "api", "client" } };
    uint32_t id = reg(m, &d);
    ck_assert_uint_eq(id, 0);
    bk_mx_series_t *p = ser2(m, id, "Produce", "a\"b");
    bk_mx_series_t *f = ser2(m, id, "Fetch", "x\\y\nz");
    bk_mx_series_t *pa = ser2(m, id, "Produce", "a");
    ck_assert(!bk_mx_is_sink(p) && !bk_mx_is_sink(f) && !bk_mx_is_sink(pa));
    bk_mx_inc(p, 2);
    bk_mx_inc(ser2(m, id, "Produce", "a\"b"), 1);  /* same series, found again */
    ck_assert_ptr_eq(ser2(m, id, "Produce", "a\"b"), p);
    bk_mx_inc(f, 1);
    ck_assert_uint_eq(bk_mx_counter_value(p), 3);
    ck_assert_uint_eq(bk_mx_counter_value(pa), 0);
    expect_render(m,
        "# HELP t_requests_total Requests \\\\ counted\\nper \"api\".\n"
        "# TYPE t_requests_total counter\n"
        "t_requests_total{api=\"Fetch\",client=\"x\\\\y\\nz\"} 1\n"
        "t_requests_total{api=\"Produce\",client=\"a\"} 0\n"
        "t_requests_total{api=\"Produce\",client=\"a\\\"b\"} 3\n"
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_requests_total\"} 0\n");
    char *s = render(m);
    expect_valid(s);
    free(s);
    bk_mx_free(m);
}
END_TEST

START_TEST(test_counter_extremes_and_metric_order) {
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t z = { .name = "t_z_total", .help = "", .type = BK_MX_COUNTER };
    bk_mx_desc_t a = { .name = "t:a_total", .help = "A.", .type = BK_MX_COUNTER,
                       .label_count = 1, .labels = { "k" } };
    uint32_t iz = reg(m, &z), ia = reg(m, &a);
    ck_assert_uint_eq(iz, 0);
    ck_assert_uint_eq(ia, 1);
    bk_mx_inc(bk_mx_series(m, iz, NULL), UINT64_MAX);
    /* created in reverse order, rendered sorted (bytewise: "B" < "a" < "ab") */
    bk_mx_inc(ser1(m, ia, "ab"), 5);
    bk_mx_inc(ser1(m, ia, "a"), 6);
    bk_mx_inc(ser1(m, ia, "B"), 7);
    bk_mx_inc(ser1(m, ia, ""), 8); /* an empty value is a value */
    expect_render(m,
        "# HELP t_z_total \n"
        "# TYPE t_z_total counter\n"
        "t_z_total 18446744073709551615\n"
        "# HELP t:a_total A.\n"
        "# TYPE t:a_total counter\n"
        "t:a_total{k=\"\"} 8\n"
        "t:a_total{k=\"B\"} 7\n"
        "t:a_total{k=\"a\"} 6\n"
        "t:a_total{k=\"ab\"} 5\n"
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_z_total\"} 0\n"
        "skiff_metrics_series_dropped_total{metric=\"t:a_total\"} 0\n");
    bk_mx_free(m);
}
END_TEST

START_TEST(test_gauge_values_spelling) {
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t t = { .name = "t_temp", .help = "T.", .type = BK_MX_GAUGE };
    bk_mx_desc_t g = { .name = "t_g", .help = "G.", .type = BK_MX_GAUGE,
                       .label_count = 1, .labels = { "k" } };
    uint32_t it = reg(m, &t), ig = reg(m, &g);
    /* an unlabelled metric renders 0 before any update */
    expect_render(m,
        "# HELP t_temp T.\n# TYPE t_temp gauge\nt_temp 0\n"
        "# HELP t_g G.\n# TYPE t_g gauge\n"
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_temp\"} 0\n"
        "skiff_metrics_series_dropped_total{metric=\"t_g\"} 0\n");
    bk_mx_series_t *h = bk_mx_series(m, it, NULL);
    bk_mx_set(h, 2.5);
    bk_mx_add(h, -4);
    ck_assert(bk_mx_gauge_value(h) == -1.5);
    bk_mx_set(ser1(m, ig, "a_tenth"), 0.1);
    bk_mx_set(ser1(m, ig, "b_big"), 1e21);
    bk_mx_set(ser1(m, ig, "c_third"), 1.0 / 3.0);
    bk_mx_set(ser1(m, ig, "d_nan"), NAN);
    bk_mx_set(ser1(m, ig, "e_inf"), INFINITY);
    bk_mx_set(ser1(m, ig, "f_ninf"), -INFINITY);
    bk_mx_set(ser1(m, ig, "g_int"), 123456789012.0);
    bk_mx_set(ser1(m, ig, "h_tiny"), 5e-324);
    bk_mx_set(ser1(m, ig, "i_negzero"), -0.0);
    char *s = render(m);
    expect_text(s,
        "# HELP t_temp T.\n# TYPE t_temp gauge\nt_temp -1.5\n"
        "# HELP t_g G.\n# TYPE t_g gauge\n"
        "t_g{k=\"a_tenth\"} 0.1\n"
        "t_g{k=\"b_big\"} 1e+21\n"
        "t_g{k=\"c_third\"} 0.33333333333333331\n"
        "t_g{k=\"d_nan\"} NaN\n"
        "t_g{k=\"e_inf\"} +Inf\n"
        "t_g{k=\"f_ninf\"} -Inf\n"
        "t_g{k=\"g_int\"} 123456789012\n"
        "t_g{k=\"h_tiny\"} 4.94065645841247e-324\n" /* %.15g reads back */
        "t_g{k=\"i_negzero\"} -0\n"
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_temp\"} 0\n"
        "skiff_metrics_series_dropped_total{metric=\"t_g\"} 0\n");
    expect_valid(s);
    free(s);
    bk_mx_free(m);
}
END_TEST

START_TEST(test_histogram_cumulative_buckets) {
    bk_mx_t *m = bk_mx_new();
    static const double b[] = { 0.25, 0.5, 1 };
    bk_mx_desc_t d = { .name = "t_lat_seconds", .help = "Latency.", .type = BK_MX_HISTOGRAM,
                       .label_count = 1, .labels = { "api" }, .bucket_count = 3, .buckets = b };
    static const double b1[] = { 0.001 };
    bk_mx_desc_t d1 = { .name = "t_h", .help = "H.", .type = BK_MX_HISTOGRAM,
                        .bucket_count = 1, .buckets = b1 };
    uint32_t id = reg(m, &d), id1 = reg(m, &d1);
    bk_mx_series_t *p = ser1(m, id, "Produce");
    (void)ser1(m, id, "Fetch");
    /* a value equal to a bound belongs to that bucket (le = less or equal) */
    double obs[] = { 0.125, 0.25, 0.375, 2, 0.5, NAN /* ignored */ };
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++) bk_mx_observe(p, obs[i]);
    ck_assert_uint_eq(bk_mx_histogram_count(p), 5);
    bk_mx_observe(bk_mx_series(m, id1, NULL), 0.0005);
    char *s = render(m);
    expect_text(s,
        "# HELP t_lat_seconds Latency.\n"
        "# TYPE t_lat_seconds histogram\n"
        "t_lat_seconds_bucket{api=\"Fetch\",le=\"0.25\"} 0\n"
        "t_lat_seconds_bucket{api=\"Fetch\",le=\"0.5\"} 0\n"
        "t_lat_seconds_bucket{api=\"Fetch\",le=\"1\"} 0\n"
        "t_lat_seconds_bucket{api=\"Fetch\",le=\"+Inf\"} 0\n"
        "t_lat_seconds_sum{api=\"Fetch\"} 0\n"
        "t_lat_seconds_count{api=\"Fetch\"} 0\n"
        "t_lat_seconds_bucket{api=\"Produce\",le=\"0.25\"} 2\n"
        "t_lat_seconds_bucket{api=\"Produce\",le=\"0.5\"} 4\n"
        "t_lat_seconds_bucket{api=\"Produce\",le=\"1\"} 4\n"
        "t_lat_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 5\n"
        "t_lat_seconds_sum{api=\"Produce\"} 3.25\n"
        "t_lat_seconds_count{api=\"Produce\"} 5\n"
        "# HELP t_h H.\n"
        "# TYPE t_h histogram\n"
        "t_h_bucket{le=\"0.001\"} 1\n"
        "t_h_bucket{le=\"+Inf\"} 1\n"
        "t_h_sum 0.0005\n"
        "t_h_count 1\n"
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_lat_seconds\"} 0\n"
        "skiff_metrics_series_dropped_total{metric=\"t_h\"} 0\n");
    expect_valid(s);
    free(s);
    bk_mx_free(m);
}
END_TEST

START_TEST(test_series_bound_overflow) {
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t d = { .name = "t_c_total", .help = "C.", .type = BK_MX_COUNTER,
                       .label_count = 1, .labels = { "topic" }, .series_max = 2 };
    uint32_t id = reg(m, &d);
    bk_mx_series_t *a = ser1(m, id, "a"), *b = ser1(m, id, "b");
    bk_mx_inc(a, 1);
    bk_mx_inc(b, 2);
    bk_mx_series_t *c = ser1(m, id, "c");
    ck_assert(bk_mx_is_sink(c));
    ck_assert_uint_eq(bk_mx_dropped(m, id), 1);
    bk_mx_inc(c, 100); /* the sink takes updates and is never rendered */
    ck_assert(bk_mx_is_sink(ser1(m, id, "0")));   /* sorts before "a": still over */
    ck_assert_uint_eq(bk_mx_dropped(m, id), 2);
    /* existing series are still found at the bound */
    ck_assert_ptr_eq(ser1(m, id, "a"), a);
    ck_assert_ptr_eq(ser1(m, id, "b"), b);
    ck_assert_uint_eq(bk_mx_dropped(m, id), 2);
    expect_render(m,
        "# HELP t_c_total C.\n# TYPE t_c_total counter\n"
        "t_c_total{topic=\"a\"} 1\n"
        "t_c_total{topic=\"b\"} 2\n"
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_c_total\"} 2\n");
    bk_mx_free(m);
}
END_TEST

START_TEST(test_default_bound_and_many_series) {
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t d = { .name = "t_many", .help = "M.", .type = BK_MX_GAUGE,
                       .label_count = 1, .labels = { "i" } };
    uint32_t id = reg(m, &d);
    /* insert in a scrambled order: 7919 is prime, so i*7919 mod N is a permutation */
    const uint32_t n = BK_MX_SERIES_MAX_DEFAULT;
    for (uint32_t i = 0; i < n; i++) {
        char v[16];
        snprintf(v, sizeof v, "%05u", (i * 7919u) % n);
        bk_mx_series_t *h = ser1(m, id, v);
        ck_assert(!bk_mx_is_sink(h));
        bk_mx_set(h, (double)((i * 7919u) % n));
    }
    ck_assert(bk_mx_is_sink(ser1(m, id, "x")));
    ck_assert_uint_eq(bk_mx_dropped(m, id), 1);
    char *s = render(m);
    /* lines come out in value order and each carries its own value */
    const char *p = strstr(s, "# TYPE t_many gauge\n");
    ck_assert_ptr_nonnull(p);
    p += strlen("# TYPE t_many gauge\n");
    for (uint32_t i = 0; i < n; i++) {
        char want[64];
        int wl = snprintf(want, sizeof want, "t_many{i=\"%05u\"} %u\n", i, i);
        ck_assert_msg(strncmp(p, want, (size_t)wl) == 0, "series %u out of place", i);
        p += wl;
    }
    ck_assert(strncmp(p, "# HELP skiff_metrics_series_dropped_total", 41) == 0);
    expect_valid(s);
    free(s);
    bk_mx_free(m);
}
END_TEST

START_TEST(test_invalid_label_values_dropped) {
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t d = { .name = "t_v_total", .help = "V.", .type = BK_MX_COUNTER,
                       .label_count = 1, .labels = { "topic" } };
    uint32_t id = reg(m, &d);
    char longest[BK_MX_LABEL_VALUE_MAX_BYTES + 2];
    memset(longest, 'x', sizeof longest);
    longest[BK_MX_LABEL_VALUE_MAX_BYTES] = '\0';
    ck_assert(!bk_mx_is_sink(ser1(m, id, longest)));        /* exactly the bound */
    longest[BK_MX_LABEL_VALUE_MAX_BYTES] = 'x';
    longest[BK_MX_LABEL_VALUE_MAX_BYTES + 1] = '\0';
    ck_assert(bk_mx_is_sink(ser1(m, id, longest)));         /* one byte over */
    const char *bad[] = {
        "\xff", "a\x80", "\xc0\xaf" /* overlong '/' */, "\xe0\x80\xaf" /* overlong */,
        "\xed\xa0\x80" /* surrogate */, "\xf4\x90\x80\x80" /* > U+10FFFF */,
        "\xe2\x82" /* truncated */, "\xf0\x9f\x98" /* truncated */, "\xc3" /* truncated */,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(bk_mx_is_sink(ser1(m, id, bad[i])), "bad value %zu accepted", i);
    ck_assert_uint_eq(bk_mx_dropped(m, id), 1 + sizeof bad / sizeof bad[0]);
    const char *good[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf",
                           "\xf4\x8f\xbf\xbf", "tab\there" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(!bk_mx_is_sink(ser1(m, id, good[i])), "good value %zu refused", i);
    char *s = render(m);
    ck_assert_ptr_nonnull(strstr(s, "t_v_total{topic=\"\xf0\x9f\x98\x80\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(s, "t_v_total{topic=\"tab\there\"} 0\n"));
    expect_valid(s);
    free(s);
    bk_mx_free(m);
}
END_TEST

static double read_double(void *arg) {
    return *(double *)arg;
}

typedef struct {
    int calls;
    int n;                       /* how many of the rows below to emit */
} coll_t;

static void collect_sizes(bk_mx_emit_t *e, void *arg) {
    coll_t *c = arg;
    c->calls++;
    static const struct { const char *t, *p; double v; } rows[] = {
        { "b", "0", 10 }, { "a", "1", 20 }, { "a", "0", 30 }, { "c", "0", 40 }, { "\xff", "0", 1 },
    };
    for (int i = 0; i < c->n; i++) bk_mx_emit(e, (const char *[]){ rows[i].t, rows[i].p }, rows[i].v);
}

static void collect_one(bk_mx_emit_t *e, void *arg) {
    bk_mx_emit(e, NULL, *(double *)arg);
}

START_TEST(test_callbacks_evaluated_at_render) {
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t g = { .name = "t_epoch", .help = "E.", .type = BK_MX_GAUGE };
    bk_mx_desc_t sz = { .name = "t_size_bytes", .help = "S.", .type = BK_MX_GAUGE,
                        .label_count = 2, .labels = { "topic", "partition" }, .series_max = 3 };
    bk_mx_desc_t c = { .name = "t_drops_total", .help = "D.", .type = BK_MX_COUNTER };
    uint32_t ig = reg(m, &g), isz = reg(m, &sz), ic = reg(m, &c);
    double epoch = 7, drops = 12;
    bk_mx_series_t *h = bk_mx_series(m, ig, NULL);
    bk_mx_set(h, 1);
    bk_mx_set_fn(h, read_double, &epoch);
    coll_t cs = { .calls = 0, .n = 3 };
    bk_mx_set_collector(m, isz, collect_sizes, &cs);
    bk_mx_set_collector(m, ic, collect_one, &drops); /* drops its pre-created series */
    ck_assert_int_eq(cs.calls, 0);                   /* nothing runs before a scrape */
    const char *tail1 =
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_epoch\"} 0\n"
        "skiff_metrics_series_dropped_total{metric=\"t_size_bytes\"} 0\n"
        "skiff_metrics_series_dropped_total{metric=\"t_drops_total\"} 0\n";
    char want[4096];
    snprintf(want, sizeof want,
             "# HELP t_epoch E.\n# TYPE t_epoch gauge\nt_epoch 7\n"
             "# HELP t_size_bytes S.\n# TYPE t_size_bytes gauge\n"
             "t_size_bytes{topic=\"a\",partition=\"0\"} 30\n"
             "t_size_bytes{topic=\"a\",partition=\"1\"} 20\n"
             "t_size_bytes{topic=\"b\",partition=\"0\"} 10\n"
             "# HELP t_drops_total D.\n# TYPE t_drops_total counter\nt_drops_total 12\n%s", tail1);
    expect_render(m, want);
    ck_assert_int_eq(cs.calls, 1);
    /* values move between scrapes; the 4th row is over the bound of 3 and the
     * 5th has an invalid value: both dropped and counted, per scrape */
    epoch = 8;
    drops = 13;
    cs.n = 5;
    expect_render(m,
        "# HELP t_epoch E.\n# TYPE t_epoch gauge\nt_epoch 8\n"
        "# HELP t_size_bytes S.\n# TYPE t_size_bytes gauge\n"
        "t_size_bytes{topic=\"a\",partition=\"0\"} 30\n"
        "t_size_bytes{topic=\"a\",partition=\"1\"} 20\n"
        "t_size_bytes{topic=\"b\",partition=\"0\"} 10\n"
        "# HELP t_drops_total D.\n# TYPE t_drops_total counter\nt_drops_total 13\n"
        DROPPED_HEAD
        "skiff_metrics_series_dropped_total{metric=\"t_epoch\"} 0\n"
        "skiff_metrics_series_dropped_total{metric=\"t_size_bytes\"} 2\n"
        "skiff_metrics_series_dropped_total{metric=\"t_drops_total\"} 0\n");
    ck_assert_int_eq(cs.calls, 2);
    ck_assert_uint_eq(bk_mx_dropped(m, isz), 2);
    /* clearing the callback brings back the stored value; no rows, no lines */
    bk_mx_set_fn(h, NULL, NULL);
    cs.n = 0;
    char *s = render(m);
    ck_assert_ptr_nonnull(strstr(s, "\nt_epoch 1\n"));
    ck_assert_ptr_null(strstr(s, "t_size_bytes{"));
    expect_valid(s);
    free(s);
    bk_mx_free(m);
}
END_TEST

START_TEST(test_registration_errors) {
    bk_mx_t *m = bk_mx_new();
    static const double ok_b[] = { 1, 2 }, eq_b[] = { 1, 1 }, dn_b[] = { 2, 1 };
    static const double nan_b[] = { NAN }, inf_b[] = { 1, INFINITY };
    const bk_mx_desc_t bad[] = {
        { .name = NULL, .help = "", .type = BK_MX_COUNTER },
        { .name = "", .help = "", .type = BK_MX_COUNTER },
        { .name = "1abc", .help = "", .type = BK_MX_COUNTER },
        { .name = "a-b", .help = "", .type = BK_MX_COUNTER },
        { .name = "a b", .help = "", .type = BK_MX_COUNTER },
        { .name = "ok", .help = NULL, .type = BK_MX_COUNTER },
        { .name = "ok", .help = "\xff", .type = BK_MX_COUNTER },
        { .name = "ok", .help = "", .type = (bk_mx_type_t)0 },
        { .name = "ok", .help = "", .type = (bk_mx_type_t)4 },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .label_count = 1, .labels = { "a:b" } },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .label_count = 1, .labels = { "__x" } },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .label_count = 1, .labels = { NULL } },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .label_count = 1, .labels = { "9" } },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .label_count = 2, .labels = { "a", "a" } },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .label_count = BK_MX_LABELS_MAX + 1 },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .series_max = BK_MX_SERIES_MAX_LIMIT + 1 },
        { .name = "ok", .help = "", .type = BK_MX_COUNTER, .bucket_count = 2, .buckets = ok_b },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = 0, .buckets = ok_b },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = 2, .buckets = NULL },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = 2, .buckets = eq_b },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = 2, .buckets = dn_b },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = 1, .buckets = nan_b },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = 2, .buckets = inf_b },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = BK_MX_BUCKETS_MAX + 1,
          .buckets = ok_b },
        { .name = "ok", .help = "", .type = BK_MX_HISTOGRAM, .bucket_count = 2, .buckets = ok_b,
          .label_count = 1, .labels = { "le" } },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t id = 99;
        ck_assert_msg(bk_mx_register(m, &bad[i], &id) == KP_ERR_BAD_VALUE, "desc %zu", i);
        ck_assert_uint_eq(id, 99);
    }
    char long_name[BK_MX_NAME_MAX_BYTES + 2];
    memset(long_name, 'n', sizeof long_name);
    long_name[BK_MX_NAME_MAX_BYTES + 1] = '\0';
    bk_mx_desc_t ln = { .name = long_name, .help = "", .type = BK_MX_COUNTER };
    uint32_t id;
    ck_assert_int_eq(bk_mx_register(m, &ln, &id), KP_ERR_BAD_VALUE);
    long_name[BK_MX_NAME_MAX_BYTES] = '\0';
    ck_assert_int_eq(bk_mx_register(m, &ln, &id), KP_OK);
    ck_assert_uint_eq(id, 0);  /* failed registrations took no id */
    /* "le" is an ordinary label name outside histograms; names are unique */
    bk_mx_desc_t le = { .name = "ok", .help = "", .type = BK_MX_GAUGE, .label_count = 1,
                        .labels = { "le" } };
    ck_assert_int_eq(bk_mx_register(m, &le, &id), KP_OK);
    ck_assert_int_eq(bk_mx_register(m, &le, &id), KP_ERR_BAD_VALUE);
    ck_assert_uint_eq(id, 1);
    bk_mx_free(m);
}
END_TEST

START_TEST(test_registry_full) {
    bk_mx_t *m = bk_mx_new();
    for (uint32_t i = 0; i < BK_MX_METRICS_MAX; i++) {
        char name[32];
        snprintf(name, sizeof name, "t_m%u", i);
        bk_mx_desc_t d = { .name = name, .help = "", .type = BK_MX_GAUGE };
        ck_assert_uint_eq(reg(m, &d), i);
    }
    bk_mx_desc_t d = { .name = "t_one_more", .help = "", .type = BK_MX_GAUGE };
    uint32_t id;
    ck_assert_int_eq(bk_mx_register(m, &d, &id), KP_ERR_TOO_LARGE);
    char *s = render(m);
    expect_valid(s);
    free(s);
    bk_mx_free(m);
    bk_mx_free(NULL);
}
END_TEST

START_TEST(test_render_out_of_memory) {
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t d = { .name = "t_x", .help = "X.", .type = BK_MX_GAUGE };
    (void)reg(m, &d);
    struct evbuffer *b = evbuffer_new();
    /* a buffer frozen at its end refuses every add, like a failed allocation */
    ck_assert_int_eq(evbuffer_freeze(b, 0), 0);
    ck_assert_int_eq(bk_mx_render(m, b), KP_ERR_NOMEM);
    evbuffer_free(b);
    bk_mx_free(m);
}
END_TEST

START_TEST(test_validator_rejects_broken_text) {
    /* the validator must be able to fail, or the checks above prove nothing */
    expect_valid("# HELP a x\\\\y\\n\n# TYPE a gauge\na{b=\"\\\"\\\\\\n\"} 1\n");
    expect_invalid("a{b=\"\\q\"} 1\n", "bad escape");
    expect_invalid("a{b=\"x\"\"} 1\n", "expected , or }");
    expect_invalid("# HELP a x\\y\na 1\n", "bad HELP escape");
    expect_invalid("a 1\nb 2\na 3\n", "family split");
    expect_invalid("a 1\na 2\n", "duplicate series");
    expect_invalid("a 1", "no final newline");
    expect_invalid("a one\n", "bad value");
    expect_invalid("a 1\n# TYPE a gauge\n", "TYPE after samples");
    expect_invalid("# TYPE c counter\nc -1\n", "negative counter");
    expect_invalid("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                   "h_sum 0\nh_count 1\n", "not increasing / cumulative");
    expect_invalid("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 0\nh_count 1\n",
                   "no +Inf bucket");
    expect_invalid("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 0\nh_count 1\n",
                   "+Inf bucket != _count");
    char raw[] = "a{b=\"\xff\"} 1\n";
    char msg[256];
    ck_assert_int_eq(validate(raw, strlen(raw), msg, sizeof msg), 1);
    ck_assert_ptr_nonnull(strstr(msg, "not UTF-8"));
}
END_TEST

START_TEST(test_catalogue) {
    bk_mx_t *m = bk_mx_new();
    ck_assert_int_eq(bk_mx_catalogue_register(m), KP_OK);
    for (uint32_t i = 0; i < BK_MX_CATALOGUE_COUNT; i++) {
        const bk_mx_desc_t *d = bk_mx_catalogue_desc((bk_mx_id_t)i);
        size_t n = strlen(d->name);
        ck_assert_msg(strncmp(d->name, "skiff_", 6) == 0, "%s: no skiff_ prefix", d->name);
        bool total = n > 6 && strcmp(d->name + n - 6, "_total") == 0;
        ck_assert_msg(total == (d->type == BK_MX_COUNTER), "%s: _total iff counter", d->name);
        if (d->type == BK_MX_HISTOGRAM)
            ck_assert_msg(strcmp(d->name + n - 8, "_seconds") == 0, "%s: unit", d->name);
        ck_assert_msg(strlen(d->help) > 10, "%s: help", d->name);
        for (uint32_t j = 0; j < i; j++)
            ck_assert_str_ne(d->name, bk_mx_catalogue_desc((bk_mx_id_t)j)->name);
        ck_assert_uint_eq(bk_mx_dropped(m, i), 0);
    }
    /* what the issue asks for is present under these names */
    const char *want[] = { "skiff_requests_total", "skiff_request_latency_seconds",
                           "skiff_bytes_in_total", "skiff_bytes_out_total",
                           "skiff_under_replicated_partitions", "skiff_offline_partitions",
                           "skiff_isr_shrinks_total", "skiff_isr_expands_total",
                           "skiff_raft_epoch", "skiff_raft_commit_lag_records",
                           "skiff_raft_elections_total", "skiff_log_size_bytes",
                           "skiff_connections", "skiff_purgatory_operations" };
    bk_mx_series_t *lat = ser1(m, BK_MX_REQUEST_LATENCY_SECONDS, "Produce");
    bk_mx_observe(lat, 0.003);
    bk_mx_inc(ser1(m, BK_MX_BYTES_IN_TOTAL, "orders"), 1024);
    bk_mx_set(ser1(m, BK_MX_PURGATORY_OPERATIONS, "fetch"), 2);
    coll_t cs = { .n = 3 };
    bk_mx_set_collector(m, BK_MX_LOG_SIZE_BYTES, collect_sizes, &cs);
    char *s = render(m);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char line[160];
        snprintf(line, sizeof line, "\n# TYPE %s ", want[i]);
        ck_assert_msg(strstr(s, line) != NULL, "%s missing", want[i]);
    }
    ck_assert_ptr_nonnull(strstr(s,
        "\nskiff_request_latency_seconds_bucket{api=\"Produce\",le=\"0.0025\"} 0\n"
        "skiff_request_latency_seconds_bucket{api=\"Produce\",le=\"0.005\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(s, "\nskiff_bytes_in_total{topic=\"orders\"} 1024\n"));
    ck_assert_ptr_nonnull(strstr(s, "\nskiff_log_size_bytes{topic=\"a\",partition=\"1\"} 20\n"));
    expect_valid(s);
    free(s);
    bk_mx_free(m);
}
END_TEST

/* Random updates against a model: label values from an alphabet with every
 * character that needs escaping plus a 2-byte UTF-8 one, more distinct values
 * than the bound. The model keeps the first `max` distinct values. */
#define RAND_MAX_SERIES 40
#define RAND_OPS 3000
#define RAND_VALUES_MAX 200

typedef struct { char v[16]; uint64_t n; } model_t;

static void escape_model(const char *in, char *out) {
    for (; *in; in++) {
        if (*in == '\\') { *out++ = '\\'; *out++ = '\\'; }
        else if (*in == '"') { *out++ = '\\'; *out++ = '"'; }
        else if (*in == '\n') { *out++ = '\\'; *out++ = 'n'; }
        else *out++ = *in;
    }
    *out = '\0';
}

START_TEST(test_random_against_model) {
    static const char *alpha[] = { "a", "\\", "\"", "\n", "\xc3\xa9", "z" };
    uint64_t seed = 0x5eedULL + (uint64_t)_i;
    bk_mx_t *m = bk_mx_new();
    bk_mx_desc_t d = { .name = "t_r_total", .help = "R.", .type = BK_MX_COUNTER,
                       .label_count = 1, .labels = { "k" }, .series_max = RAND_MAX_SERIES };
    uint32_t id = reg(m, &d);
    model_t *model = calloc(RAND_VALUES_MAX, sizeof *model);
    uint32_t nmodel = 0;
    uint64_t drops = 0;
    for (int op = 0; op < RAND_OPS; op++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        char v[16] = "";
        int len = (int)((seed >> 33) % 3) + 1;
        for (int i = 0; i < len; i++) strcat(v, alpha[(seed >> (40 + 3 * i)) % 6]);
        uint64_t inc = (seed >> 20) % 5;
        uint32_t j = 0;
        while (j < nmodel && strcmp(model[j].v, v) != 0) j++;
        bk_mx_series_t *h = ser1(m, id, v);
        if (j == nmodel && nmodel == RAND_MAX_SERIES) {
            ck_assert(bk_mx_is_sink(h));
            drops++;
            continue;
        }
        ck_assert(!bk_mx_is_sink(h));
        if (j == nmodel) {
            ck_assert_uint_lt(nmodel, RAND_VALUES_MAX);
            snprintf(model[nmodel++].v, sizeof model[0].v, "%s", v);
        }
        model[j].n += inc;
        bk_mx_inc(h, inc);
    }
    ck_assert_uint_eq(bk_mx_dropped(m, id), drops);
    ck_assert_uint_gt(drops, 0); /* the alphabet is large enough to overflow */
    char *s = render(m);
    uint32_t lines = 0;
    for (const char *p = s; (p = strstr(p, "\nt_r_total{")) != NULL; p++) lines++;
    ck_assert_uint_eq(lines, nmodel);
    for (uint32_t j = 0; j < nmodel; j++) {
        char esc[64], line[128];
        escape_model(model[j].v, esc);
        snprintf(line, sizeof line, "\nt_r_total{k=\"%s\"} %llu\n", esc,
                 (unsigned long long)model[j].n);
        ck_assert_msg(strstr(s, line) != NULL, "seed %d: missing %s", _i, line);
    }
    expect_valid(s);
    free(s);
    free(model);
    bk_mx_free(m);
}
END_TEST

/* ------------------------------------------------- GET /metrics over HTTP */

#define HTTP_DEADLINE_MS 5000

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* GET `path` from 127.0.0.1:port with Connection: close, pumping `base`
 * until the server closes; the whole reply into out (NUL-terminated). */
static void http_get(struct event_base *base, uint16_t port, const char *path,
                     char *out, size_t out_len) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    char req[256];
    int rl = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                      path);
    size_t sent = 0, got = 0;
    int64_t deadline = now_ms() + HTTP_DEADLINE_MS;
    for (bool eof = false; !eof;) {
        ck_assert_msg(now_ms() < deadline, "no reply in time");
        event_base_loop(base, EVLOOP_NONBLOCK);
        if (sent < (size_t)rl) {
            ssize_t n = send(fd, req + sent, (size_t)rl - sent, MSG_NOSIGNAL);
            if (n > 0) sent += (size_t)n;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5) > 0) {
            ssize_t n = recv(fd, out + got, out_len - 1 - got, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) eof = true;
            else if (n > 0) got += (size_t)n;
            ck_assert_uint_lt(got, out_len - 1);
        }
    }
    close(fd);
    out[got] = '\0';
}

START_TEST(test_get_metrics_over_http) {
    struct event_base *base = event_base_new();
    ck_assert_ptr_nonnull(base);
    char err[256];
    bk_http_t *admin = bk_http_start(base, "127.0.0.1:0", err, sizeof err);
    ck_assert_msg(admin != NULL, "%s", err);
    bk_mx_t *m = bk_mx_new();
    ck_assert_int_eq(bk_mx_catalogue_register(m), KP_OK);
    ck_assert_int_eq(bk_http_route(admin, "GET", "/metrics", bk_mx_serve, m), KP_OK);
    bk_mx_inc(ser1(m, BK_MX_REQUESTS_TOTAL, "Fetch"), 3);
    static char reply[262144];
    http_get(base, bk_http_port(admin), "/metrics", reply, sizeof reply);
    ck_assert_msg(strncmp(reply, "HTTP/1.1 200", 12) == 0, "%.80s", reply);
    ck_assert_ptr_nonnull(strcasestr(reply, "\r\nContent-Type: " BK_MX_CONTENT_TYPE "\r\n"));
    char *body = strstr(reply, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    body += 4;
    char *direct = render(m);
    expect_text(body, direct);
    ck_assert_ptr_nonnull(strstr(body, "\nskiff_requests_total{api=\"Fetch\"} 3\n"));
    expect_valid(body);
    free(direct);
    bk_http_stop(admin);
    bk_mx_free(m);
    event_base_free(base);
}
END_TEST

int main(void) {
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("registry");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_counter_labels_escaping_and_order);
    tcase_add_test(tc, test_counter_extremes_and_metric_order);
    tcase_add_test(tc, test_gauge_values_spelling);
    tcase_add_test(tc, test_histogram_cumulative_buckets);
    tcase_add_test(tc, test_series_bound_overflow);
    tcase_add_test(tc, test_default_bound_and_many_series);
    tcase_add_test(tc, test_invalid_label_values_dropped);
    tcase_add_test(tc, test_callbacks_evaluated_at_render);
    tcase_add_test(tc, test_registration_errors);
    tcase_add_test(tc, test_registry_full);
    tcase_add_test(tc, test_render_out_of_memory);
    tcase_add_test(tc, test_validator_rejects_broken_text);
    tcase_add_test(tc, test_catalogue);
    tcase_add_loop_test(tc, test_random_against_model, 0, 4);
    tcase_add_test(tc, test_get_metrics_over_http);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
