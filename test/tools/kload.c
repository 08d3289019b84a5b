/* kload: a librdkafka load generator and checker for skiff's benchmarks and
 * scripted tests (issue 4, "Benchmarks").
 *
 *   kload produce     --brokers B --topic T --count N --size BYTES [...]
 *   kload consume     --brokers B --topic T --count N [--group G] [...]
 *   kload mock-bench  --topic T --count N --size BYTES [...]
 *   kload mock-serve  [--topic T --partitions P] [--timeout-s S]
 *   kload create-topic --brokers B --topic T [--partitions P] [--replication R]
 *
 * Each run prints one JSON line per phase on stdout; diagnostics go to stderr.
 * Exit status is 0 only if every phase finished without error in time.
 *
 * Payload format (when --size >= KLOAD_HDR_BYTES): magic "KLD1", sequence
 * number as u64 big-endian, then filler bytes that are a pure function of the
 * sequence and the offset in the value. A consumer can therefore check every
 * byte, and completeness, order and duplicates by sequence, without having to
 * be told anything by the producer but the sequence range.
 *
 * Bounds: the run as a whole is limited by --timeout-s (default 120 s);
 * librdkafka's queues are limited explicitly (producer: queue.buffering.max.*;
 * consumer: queued.max.messages.kbytes); --count is at most KLOAD_MAX_COUNT so
 * the consumer's seen-bitmap stays <= 12.5 MB; partitions are order-checked up
 * to KLOAD_MAX_PARTITIONS. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define KLOAD_HDR_BYTES 12
#define KLOAD_MAGIC "KLD1"
#define KLOAD_MAX_COUNT 100000000LL
#define KLOAD_MAX_SIZE_BYTES (16 * 1024 * 1024)
#define KLOAD_MAX_PARTITIONS 1024
#define KLOAD_MAX_LOGGED_ERRORS 20
#define KLOAD_POLL_EVERY_MSGS 1000
/* Messages go to partitions in turn, this many at a time: partitions fill
 * evenly (the mock keeps only 5 MB of each) and batches stay large. */
#define KLOAD_SPREAD_BLOCK_MSGS 1000
/* Latency histogram: log-linear, 32 sub-buckets per power of two (~3%). */
#define HIST_SUB_BITS 5
#define HIST_BUCKETS 2048

typedef struct {
  const char *mode;
  const char *brokers;
  const char *topic;
  const char *group;
  const char *acks;
  const char *compression;
  long long count;
  long long consume_count; /* mock-bench only; -1: same as count */
  long long start_seq;
  long long size_bytes;
  long long linger_ms;
  long long batch_bytes;
  long long rate_msgs_per_s;
  long long timeout_s;
  long long partitions;
  long long replication;
  long long inject_corrupt_seq; /* test only; -1: off */
  long long inject_dup_seq;     /* test only; -1: off */
  bool idempotent;
  bool strict;
  bool verify;
} opts_t;

typedef struct {
  uint64_t counts[HIST_BUCKETS];
  uint64_t total;
} hist_t;

typedef struct {
  const opts_t *o;
  const char *target;
  int64_t start_us;
  long long delivered;
  long long delivered_bytes;
  long long errors;
  int64_t last_dr_us;
  char first_error[256];
  hist_t lat;
} prod_state_t;

typedef struct {
  const opts_t *o;
  const char *target;
  uint8_t *seen; /* bitmap over [start_seq, start_seq + count) */
  int64_t last_seq[KLOAD_MAX_PARTITIONS];
  long long msgs, bytes, sequenced, distinct, unsequenced;
  long long duplicates, out_of_order, corrupt, out_of_range, errors;
  int64_t first_us, last_us;
  char first_error[256];
} cons_state_t;

static volatile sig_atomic_t g_stop;
static int g_logged_errors;

static int64_t now_us(void) {
  struct timespec ts;
  int rc = clock_gettime(CLOCK_MONOTONIC, &ts);
  assert(rc == 0);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_err(const char *fmt, ...) {
  if (g_logged_errors++ >= KLOAD_MAX_LOGGED_ERRORS) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("kload: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---------------------------------------------------------------- payload */

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Filler for value bytes [KLOAD_HDR_BYTES, len): 16 letters drawn from a
 * generator seeded by the sequence, so compression sees text-like bytes that
 * differ per message (neither trivially compressible nor random binary). */
static void fill_payload(uint8_t *buf, size_t len, uint64_t seq) {
  assert(len >= KLOAD_HDR_BYTES);
  memcpy(buf, KLOAD_MAGIC, 4);
  for (int i = 0; i < 8; i++) buf[4 + i] = (uint8_t)(seq >> (56 - 8 * i));
  uint64_t x = splitmix64(seq);
  for (size_t i = KLOAD_HDR_BYTES; i < len; i++) {
    if ((i - KLOAD_HDR_BYTES) % 8 == 0) x = splitmix64(x);
    buf[i] = (uint8_t)('a' + ((x >> (8 * ((i - KLOAD_HDR_BYTES) % 8))) & 15));
  }
}

/* Returns true and sets *seq when value carries a kload header. */
static bool payload_seq(const uint8_t *v, size_t len, uint64_t *seq) {
  if (len < KLOAD_HDR_BYTES || memcmp(v, KLOAD_MAGIC, 4) != 0) return false;
  uint64_t s = 0;
  for (int i = 0; i < 8; i++) s = (s << 8) | v[4 + i];
  *seq = s;
  return true;
}

static bool payload_intact(const uint8_t *v, size_t len, uint64_t seq, uint8_t *scratch) {
  fill_payload(scratch, len, seq);
  return memcmp(scratch, v, len) == 0;
}

/* -------------------------------------------------------------- histogram */

static int hist_index(uint64_t v) {
  if (v < (2u << HIST_SUB_BITS)) return (int)v;
  int e = 63 - __builtin_clzll(v);
  int shift = e - HIST_SUB_BITS;
  uint64_t m = v >> shift; /* in [32, 63] */
  int idx = (2 << HIST_SUB_BITS) + (shift - 1) * (1 << HIST_SUB_BITS) +
            (int)(m - (1u << HIST_SUB_BITS));
  assert(idx >= 0 && idx < HIST_BUCKETS);
  return idx;
}

/* Upper bound of bucket idx (inverse of hist_index), so percentiles err high. */
static uint64_t hist_upper(int idx) {
  if (idx < (2 << HIST_SUB_BITS)) return (uint64_t)idx;
  int rel = idx - (2 << HIST_SUB_BITS);
  int shift = rel / (1 << HIST_SUB_BITS) + 1;
  uint64_t m = (uint64_t)(rel % (1 << HIST_SUB_BITS)) + (1u << HIST_SUB_BITS);
  return ((m + 1) << shift) - 1;
}

static void hist_add(hist_t *h, uint64_t v) {
  h->counts[hist_index(v)]++;
  h->total++;
}

static double hist_pct_ms(const hist_t *h, double pct) {
  if (h->total == 0) return 0.0;
  uint64_t rank = (uint64_t)((double)h->total * pct / 100.0);
  if (rank >= h->total) rank = h->total - 1;
  uint64_t seen = 0;
  for (int i = 0; i < HIST_BUCKETS; i++) {
    seen += h->counts[i];
    if (seen > rank) return (double)hist_upper(i) / 1000.0;
  }
  assert(0 && "histogram total disagrees with its buckets");
  return 0.0;
}

/* ---------------------------------------------------------- rdkafka setup */

static bool conf_set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char err[256];
  if (rd_kafka_conf_set(c, k, v, err, sizeof err) == RD_KAFKA_CONF_OK) return true;
  fprintf(stderr, "kload: config %s=%s: %s\n", k, v, err);
  return false;
}

static bool conf_set_ll(rd_kafka_conf_t *c, const char *k, long long v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v);
  return conf_set(c, k, buf);
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  log_err("%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* -X key=value properties (security.protocol, sasl.*, ssl.*: the TLS and
 * SASL benchmarks), applied to every handle after kload's own settings
 * (new_handle). */
#define KLOAD_PROPS_MAX 16
static const char *g_props[KLOAD_PROPS_MAX];
static size_t g_nprops;

static rd_kafka_conf_t *base_conf(const char *brokers) {
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set_error_cb(c, error_cb);
  if ((brokers && !conf_set(c, "bootstrap.servers", brokers)) ||
      !conf_set(c, "log_level", "4") || !conf_set(c, "client.id", "kload")) {
    rd_kafka_conf_destroy(c);
    return NULL;
  }
  return c;
}

/* Creates a handle of `type` from conf (consumed on success and failure).
 * The -X properties are set here, last: after kload's own settings of the
 * mode (e.g. the consumer's queued.max.messages.kbytes), which they may
 * override. */
static rd_kafka_t *new_handle(rd_kafka_type_t type, rd_kafka_conf_t *c) {
  char err[512];
  for (size_t i = 0; i < g_nprops; i++) {
    char k[256];
    const char *eq = strchr(g_props[i], '=');
    size_t kl = (size_t)(eq - g_props[i]);
    assert(eq != NULL && kl > 0 && kl < sizeof k); /* checked by parse_args */
    memcpy(k, g_props[i], kl);
    k[kl] = '\0';
    if (!conf_set(c, k, eq + 1)) {
      rd_kafka_conf_destroy(c);
      return NULL;
    }
  }
  rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "kload: rd_kafka_new: %s\n", err);
    rd_kafka_conf_destroy(c);
  }
  return rk;
}

static double secs(int64_t us) { return (double)us / 1e6; }
static double per_s(long long n, int64_t us) { return us > 0 ? (double)n / secs(us) : 0.0; }

/* Writes s as a JSON string (quotes and escapes) to stdout. */
static void json_str(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') printf("\\%c", ch);
    else if (ch < 0x20) printf("\\u%04x", ch);
    else putchar(ch);
  }
  putchar('"');
}

/* Partition count of topic from the brokers, waiting (auto-create, leader
 * election) until deadline_us; -1 when it never showed up with leaders. */
static int topic_partitions(rd_kafka_t *rk, const char *topic, int64_t deadline_us) {
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  assert(rkt);
  int n = -1;
  while (n < 0 && now_us() < deadline_us && !g_stop) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 2000);
    if (!err && md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0) {
      bool leaders = true;
      for (int i = 0; i < md->topics[0].partition_cnt; i++)
        leaders = leaders && md->topics[0].partitions[i].leader >= 0;
      if (leaders) n = md->topics[0].partition_cnt;
    }
    if (md) rd_kafka_metadata_destroy(md);
    if (n < 0) {
      struct timespec ts = {0, 100 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  rd_kafka_topic_destroy(rkt);
  return n;
}

/* ---------------------------------------------------------------- produce */

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  prod_state_t *st = opaque;
  int64_t t = now_us();
  st->last_dr_us = t;
  if (m->err) {
    if (st->errors++ == 0)
      snprintf(st->first_error, sizeof st->first_error, "%s", rd_kafka_err2str(m->err));
    return;
  }
  int64_t sent_us = (int64_t)(uintptr_t)m->_private;
  st->delivered++;
  st->delivered_bytes += (long long)m->len;
  hist_add(&st->lat, (uint64_t)(t - st->start_us - sent_us));
}

static rd_kafka_t *producer_new(const opts_t *o, prod_state_t *st) {
  rd_kafka_conf_t *c = base_conf(o->brokers);
  if (!c) return NULL;
  rd_kafka_conf_set_opaque(c, st);
  rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
  bool ok = conf_set(c, "acks", o->acks) && conf_set(c, "compression.type", o->compression) &&
            conf_set_ll(c, "linger.ms", o->linger_ms) &&
            conf_set(c, "enable.idempotence", o->idempotent ? "true" : "false") &&
            conf_set_ll(c, "message.timeout.ms", o->timeout_s * 1000) &&
            conf_set(c, "queue.buffering.max.messages", "100000") &&
            conf_set(c, "queue.buffering.max.kbytes", "65536");
  if (ok && o->batch_bytes > 0) ok = conf_set_ll(c, "batch.size", o->batch_bytes);
  if (!ok) {
    rd_kafka_conf_destroy(c);
    return NULL;
  }
  return new_handle(RD_KAFKA_PRODUCER, c);
}

/* Waits until `due_us` (relative to start) while serving delivery reports.
 * Reports that have arrived are served before every sub-millisecond sleep
 * too: at >= 1000 msgs/s every wait is that short, and a report left for the
 * every-1000-messages poll would count up to 1000 / rate seconds of the
 * client's own delay as latency (seen: p50 250 ms at 2000 msgs/s). */
static void pace(rd_kafka_t *rk, const prod_state_t *st, long long i) {
  if (st->o->rate_msgs_per_s <= 0) return;
  int64_t due_us = (int64_t)((double)i * 1e6 / (double)st->o->rate_msgs_per_s);
  for (;;) {
    int64_t wait_us = due_us - (now_us() - st->start_us);
    if (wait_us <= 0) return;
    if (wait_us >= 1000) {
      rd_kafka_poll(rk, (int)(wait_us / 1000));
    } else {
      rd_kafka_poll(rk, 0);
      wait_us = due_us - (now_us() - st->start_us);
      if (wait_us <= 0) return;
      struct timespec ts = {0, (long)wait_us * 1000};
      nanosleep(&ts, NULL);
    }
  }
}

/* Enqueues one message, waiting for queue room until deadline_us. */
static rd_kafka_resp_err_t send_one(rd_kafka_t *rk, prod_state_t *st, int32_t partition,
                                    const uint8_t *v, size_t len, int64_t deadline_us) {
  for (;;) {
    int64_t sent_us = now_us() - st->start_us;
    rd_kafka_resp_err_t err =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(st->o->topic), RD_KAFKA_V_PARTITION(partition),
                          RD_KAFKA_V_VALUE((void *)v, len),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_OPAQUE((void *)(uintptr_t)sent_us), RD_KAFKA_V_END);
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) return err;
    if (now_us() >= deadline_us || g_stop) return RD_KAFKA_RESP_ERR__TIMED_OUT;
    rd_kafka_poll(rk, 10);
  }
}

static void print_produce(const prod_state_t *st, bool timed_out) {
  const opts_t *o = st->o;
  int64_t el = st->last_dr_us > st->start_us ? st->last_dr_us - st->start_us : 0;
  printf("{\"mode\":\"produce\",\"target\":");
  json_str(st->target);
  printf(",\"topic\":");
  json_str(o->topic);
  printf(",\"acks\":");
  json_str(o->acks);
  printf(",\"compression\":");
  json_str(o->compression);
  printf(",\"size\":%lld,\"count\":%lld,\"msgs\":%lld,\"bytes\":%lld,\"seconds\":%.3f,"
         "\"msgs_per_s\":%.0f,\"mb_per_s\":%.2f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
         "\"p999_ms\":%.3f,\"errors\":%lld,\"timeout\":%s,\"first_error\":",
         o->size_bytes, o->count, st->delivered, st->delivered_bytes, secs(el),
         per_s(st->delivered, el), per_s(st->delivered_bytes, el) / 1e6,
         hist_pct_ms(&st->lat, 50), hist_pct_ms(&st->lat, 99), hist_pct_ms(&st->lat, 99.9),
         st->errors, timed_out ? "true" : "false");
  json_str(st->first_error);
  printf("}\n");
  fflush(stdout);
}

/* Builds the value of message i into buf (len bytes). */
static void make_value(const opts_t *o, long long i, uint8_t *buf, size_t len) {
  uint64_t seq = (uint64_t)(o->start_seq + i);
  if (len >= KLOAD_HDR_BYTES) fill_payload(buf, len, seq);
  else memset(buf, 'k', len);
  if ((long long)seq == o->inject_corrupt_seq && len > KLOAD_HDR_BYTES) buf[len - 1] ^= 0x20;
}

/* Enqueues all messages; returns false if the deadline (or a signal) cut it short. */
static bool enqueue_all(rd_kafka_t *rk, prod_state_t *st, int nparts, uint8_t *buf,
                        int64_t deadline_us) {
  const opts_t *o = st->o;
  size_t len = (size_t)o->size_bytes;
  for (long long i = 0; i < o->count; i++) {
    make_value(o, i, buf, len);
    pace(rk, st, i);
    int32_t part = nparts > 0 ? (int32_t)((i / KLOAD_SPREAD_BLOCK_MSGS) % nparts)
                              : RD_KAFKA_PARTITION_UA;
    int sends = o->start_seq + i == o->inject_dup_seq ? 2 : 1;
    for (int s = 0; s < sends; s++) {
      rd_kafka_resp_err_t err = send_one(rk, st, part, buf, len, deadline_us);
      if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) return false;
      if (err && st->errors++ == 0)
        snprintf(st->first_error, sizeof st->first_error, "%s", rd_kafka_err2str(err));
    }
    if (i % KLOAD_POLL_EVERY_MSGS == 0) rd_kafka_poll(rk, 0);
  }
  return true;
}

/* Waits for every delivery report; on timeout fails what is left (purge) so
 * that destroy does not wait on it. Returns false on timeout. */
static bool drain(rd_kafka_t *rk, bool in_time, int64_t deadline_us) {
  while (in_time && rd_kafka_outq_len(rk) > 0) {
    rd_kafka_poll(rk, 50);
    if (now_us() >= deadline_us || g_stop) in_time = false;
  }
  if (!in_time) {
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk, 100);
  }
  return in_time;
}

/* Produces o->count messages and prints the produce JSON line. Returns 0 when
 * every message was delivered in time. */
static int run_produce(const opts_t *o, const char *target) {
  prod_state_t *st = calloc(1, sizeof *st);
  uint8_t *buf = malloc((size_t)o->size_bytes + 1);
  assert(st && buf);
  st->o = o;
  st->target = target;
  rd_kafka_t *rk = producer_new(o, st);
  if (!rk) {
    free(st);
    free(buf);
    return 2;
  }
  int64_t deadline_us = now_us() + o->timeout_s * 1000000;
  /* Connect and learn the leaders first (this also auto-creates the topic
   * where the broker does that), so the clock measures only the transfer. */
  int nparts = topic_partitions(rk, o->topic, deadline_us);
  if (nparts < 0)
    log_err("topic %s has no leaders yet; the timing includes the wait", o->topic);
  st->start_us = now_us();
  bool in_time = drain(rk, enqueue_all(rk, st, nparts, buf, deadline_us), deadline_us);
  print_produce(st, !in_time);
  rd_kafka_destroy(rk);
  bool dup_sent = o->inject_dup_seq >= o->start_seq && o->inject_dup_seq - o->start_seq < o->count;
  int rc = (st->errors || !in_time || st->delivered != o->count + dup_sent) ? 1 : 0;
  free(st);
  free(buf);
  return rc;
}

/* ---------------------------------------------------------------- consume */

static rd_kafka_t *consumer_new(const opts_t *o) {
  rd_kafka_conf_t *c = base_conf(o->brokers);
  if (!c) return NULL;
  bool ok = conf_set(c, "enable.partition.eof", "false") &&
            conf_set(c, "auto.offset.reset", "earliest") &&
            conf_set(c, "queued.max.messages.kbytes", "65536") &&
            conf_set(c, "enable.auto.offset.store", "false");
  /* librdkafka refuses assign() without a group.id; with assign() the group
   * is never joined and nothing is committed. */
  if (ok && o->group) ok = conf_set(c, "group.id", o->group);
  else if (ok) ok = conf_set(c, "group.id", "kload-assign") && conf_set(c, "enable.auto.commit", "false");
  if (!ok) {
    rd_kafka_conf_destroy(c);
    return NULL;
  }
  rd_kafka_t *rk = new_handle(RD_KAFKA_CONSUMER, c);
  if (rk) rd_kafka_poll_set_consumer(rk);
  return rk;
}

static bool consumer_start(rd_kafka_t *rk, const opts_t *o, int64_t deadline_us) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_resp_err_t err;
  if (o->group) {
    rd_kafka_topic_partition_list_add(l, o->topic, RD_KAFKA_PARTITION_UA);
    err = rd_kafka_subscribe(rk, l);
  } else {
    int n = topic_partitions(rk, o->topic, deadline_us);
    if (n < 0) {
      fprintf(stderr, "kload: topic %s not found with leaders\n", o->topic);
      rd_kafka_topic_partition_list_destroy(l);
      return false;
    }
    for (int p = 0; p < n; p++)
      rd_kafka_topic_partition_list_add(l, o->topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    err = rd_kafka_assign(rk, l);
  }
  rd_kafka_topic_partition_list_destroy(l);
  if (err) fprintf(stderr, "kload: subscribe/assign: %s\n", rd_kafka_err2str(err));
  return !err;
}

static void note_error(cons_state_t *st, const char *what) {
  if (st->errors++ == 0) snprintf(st->first_error, sizeof st->first_error, "%s", what);
}

/* Errors the consumer recovers from by itself (reconnects, leader moves). */
static bool transient(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
         err == RD_KAFKA_RESP_ERR__PARTITION_EOF || err == RD_KAFKA_RESP_ERR__RESOLVE;
}

static void check_message(cons_state_t *st, const rd_kafka_message_t *m, uint8_t *scratch) {
  const opts_t *o = st->o;
  uint64_t seq;
  st->msgs++;
  st->bytes += (long long)m->len;
  if (!m->payload || !payload_seq(m->payload, m->len, &seq)) {
    st->unsequenced++;
    return;
  }
  st->sequenced++;
  if (seq < (uint64_t)o->start_seq || seq - (uint64_t)o->start_seq >= (uint64_t)o->count) {
    st->out_of_range++;
    note_error(st, "sequence out of range");
    return;
  }
  /* A corrupt payload still counts as arrived (so the run ends) but fails it. */
  if (o->verify && m->len <= (size_t)KLOAD_MAX_SIZE_BYTES &&
      !payload_intact(m->payload, m->len, seq, scratch)) {
    st->corrupt++;
    note_error(st, "payload corrupt");
  }
  uint64_t bit = seq - (uint64_t)o->start_seq;
  if (st->seen[bit / 8] & (1u << (bit % 8))) {
    st->duplicates++;
  } else {
    st->seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
    st->distinct++;
  }
  if (m->partition >= 0 && m->partition < KLOAD_MAX_PARTITIONS) {
    if (st->last_seq[m->partition] > (int64_t)seq) st->out_of_order++;
    st->last_seq[m->partition] = (int64_t)seq;
  }
}

static void print_consume(const cons_state_t *st, bool timed_out) {
  const opts_t *o = st->o;
  int64_t el = st->msgs ? st->last_us - st->first_us : 0;
  long long missing = o->count - st->distinct - st->unsequenced;
  if (missing < 0) missing = 0;
  bool verified = o->verify && st->sequenced > 0 && st->unsequenced == 0 && missing == 0 &&
                  st->corrupt == 0 && st->out_of_range == 0;
  printf("{\"mode\":\"consume\",\"target\":");
  json_str(st->target);
  printf(",\"topic\":");
  json_str(o->topic);
  printf(",\"count\":%lld,\"msgs\":%lld,\"bytes\":%lld,\"seconds\":%.3f,\"msgs_per_s\":%.0f,"
         "\"mb_per_s\":%.2f,\"verified\":%s,\"sequenced\":%lld,\"distinct\":%lld,"
         "\"missing\":%lld,\"duplicates\":%lld,\"out_of_order\":%lld,\"corrupt\":%lld,"
         "\"out_of_range\":%lld,\"errors\":%lld,\"timeout\":%s,\"first_error\":",
         o->count, st->msgs, st->bytes, secs(el), per_s(st->msgs, el),
         per_s(st->bytes, el) / 1e6, verified ? "true" : "false", st->sequenced, st->distinct,
         missing, st->duplicates, st->out_of_order, st->corrupt, st->out_of_range, st->errors,
         timed_out ? "true" : "false");
  json_str(st->first_error);
  printf("}\n");
  fflush(stdout);
}

/* Work left: distinct sequences for sequenced payloads, else messages. */
static bool consume_done(const cons_state_t *st) {
  return st->distinct + st->unsequenced >= st->o->count;
}

/* Consumes until o->count messages (distinct sequences) arrived or the
 * timeout; prints the consume JSON line. Returns 0 when all arrived intact
 * (and, with --strict, without duplicates or reordering). */
static int run_consume(const opts_t *o, const char *target) {
  cons_state_t *st = calloc(1, sizeof *st);
  assert(st);
  st->o = o;
  st->target = target;
  st->seen = calloc((size_t)(o->count / 8 + 1), 1);
  uint8_t *scratch = malloc(KLOAD_MAX_SIZE_BYTES);
  assert(st->seen && scratch);
  for (int p = 0; p < KLOAD_MAX_PARTITIONS; p++) st->last_seq[p] = -1;
  int64_t deadline_us = now_us() + o->timeout_s * 1000000;
  rd_kafka_t *rk = consumer_new(o);
  bool started = rk && consumer_start(rk, o, deadline_us);
  if (!rk) note_error(st, "could not create the consumer");
  else if (!started) note_error(st, "could not assign or subscribe");
  bool timed_out = false;
  while (started && !consume_done(st) && !timed_out) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    int64_t t = now_us();
    if (m) {
      if (!m->err) {
        if (st->msgs == 0) st->first_us = t;
        st->last_us = t;
        check_message(st, m, scratch);
      } else if (transient(m->err)) {
        log_err("consumer: %s", rd_kafka_message_errstr(m));
      } else {
        log_err("consumer: %s", rd_kafka_message_errstr(m));
        note_error(st, rd_kafka_message_errstr(m));
      }
      rd_kafka_message_destroy(m);
    }
    if (t >= deadline_us || g_stop) timed_out = true;
  }
  print_consume(st, timed_out);
  if (rk) {
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
  }
  bool bad = !rk || timed_out || st->errors || st->corrupt || st->out_of_range ||
             (o->strict && (st->duplicates || st->out_of_order));
  free(scratch);
  free(st->seen);
  free(st);
  return bad ? 1 : 0;
}

/* -------------------------------------------------------- admin and mock */

static int run_create_topic(const opts_t *o) {
  rd_kafka_conf_t *c = base_conf(o->brokers);
  rd_kafka_t *rk = c ? new_handle(RD_KAFKA_PRODUCER, c) : NULL;
  if (!rk) return 2;
  char err[256];
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(o->topic, (int)o->partitions,
                                                  (int)o->replication, err, sizeof err);
  if (!nt) {
    fprintf(stderr, "kload: create-topic: %s\n", err);
    rd_kafka_destroy(rk);
    return 2;
  }
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, (int)(o->timeout_s * 1000));
  int rc = 1;
  if (!ev) {
    fprintf(stderr, "kload: create-topic: no answer in %lld s\n", o->timeout_s);
  } else if (rd_kafka_event_error(ev)) {
    fprintf(stderr, "kload: create-topic: %s\n", rd_kafka_event_error_string(ev));
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    rd_kafka_resp_err_t e = n == 1 ? rd_kafka_topic_result_error(res[0]) : RD_KAFKA_RESP_ERR__FAIL;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) rc = 0;
    else fprintf(stderr, "kload: create-topic %s: %s\n", o->topic, rd_kafka_err2str(e));
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return rc;
}

typedef struct {
  rd_kafka_t *rk; /* owns the mock cluster's threads; outlives mc */
  rd_kafka_mock_cluster_t *mc;
  const char *bootstraps;
} mock_t;

static bool mock_start(mock_t *m, const opts_t *o) {
  rd_kafka_conf_t *c = base_conf(NULL);
  m->rk = c ? new_handle(RD_KAFKA_PRODUCER, c) : NULL;
  m->mc = m->rk ? rd_kafka_mock_cluster_new(m->rk, 1) : NULL;
  if (!m->mc) {
    fprintf(stderr, "kload: could not create the mock cluster\n");
    if (m->rk) rd_kafka_destroy(m->rk);
    return false;
  }
  m->bootstraps = rd_kafka_mock_cluster_bootstraps(m->mc);
  if (o->topic) {
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(m->mc, o->topic, (int)o->partitions, 1);
    if (err) {
      fprintf(stderr, "kload: mock topic %s: %s\n", o->topic, rd_kafka_err2str(err));
      rd_kafka_mock_cluster_destroy(m->mc);
      rd_kafka_destroy(m->rk);
      return false;
    }
  }
  return true;
}

static void mock_stop(mock_t *m) {
  rd_kafka_mock_cluster_destroy(m->mc);
  rd_kafka_destroy(m->rk);
}

/* librdkafka's mock keeps only the newest 5 MB of each partition (fixed in
 * its source), so a consume from the beginning can read everything only if
 * the produced bytes spread over enough partitions. */
#define MOCK_KEPT_BYTES_PER_PARTITION (5LL * 1024 * 1024)
#define RECORD_OVERHEAD_BYTES 40

static int run_mock_bench(const opts_t *o) {
  long long per_part = o->count * (o->size_bytes + RECORD_OVERHEAD_BYTES) / o->partitions;
  if (per_part > MOCK_KEPT_BYTES_PER_PARTITION * 3 / 4)
    fprintf(stderr,
            "kload: warning: ~%lld bytes per partition; the mock keeps only the newest 5 MB "
            "of each, so consume will miss data (raise --partitions)\n",
            per_part);
  mock_t m;
  if (!mock_start(&m, o)) return 2;
  opts_t p = *o;
  p.brokers = m.bootstraps;
  int rc = run_produce(&p, "mock");
  opts_t c = p;
  if (o->consume_count >= 0) c.count = o->consume_count;
  int rc2 = run_consume(&c, "mock");
  mock_stop(&m);
  return rc ? rc : rc2;
}

static void on_signal(int sig) { g_stop = 1; }

/* Serves a mock cluster to other processes until SIGTERM/SIGINT or timeout. */
static int run_mock_serve(const opts_t *o) {
  mock_t m;
  if (!mock_start(&m, o)) return 2;
  printf("{\"bootstraps\":");
  json_str(m.bootstraps);
  printf("}\n");
  fflush(stdout);
  int64_t deadline_us = now_us() + o->timeout_s * 1000000;
  while (!g_stop && now_us() < deadline_us) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  mock_stop(&m);
  return 0;
}

/* ------------------------------------------------------------------ main */

static void usage(void) {
  fprintf(stderr,
          "usage: kload produce|consume|mock-bench|mock-serve|create-topic [options]\n"
          "  --brokers B --topic T --count N --size BYTES --start-seq S\n"
          "  --acks 0|1|all --compression none|gzip|snappy|lz4|zstd --linger-ms X\n"
          "  --batch-bytes X --idempotent --rate MSGS_PER_S --group G --strict\n"
          "  --no-verify --timeout-s S (default 120) --partitions P --replication R\n"
          "  --consume-count N (mock-bench) --inject-corrupt SEQ --inject-dup SEQ (tests)\n"
          "  -X key=value  librdkafka property (repeatable; e.g. security.protocol=SASL_SSL)\n");
}

static bool parse_ll(const char *s, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

typedef struct {
  const char *name;
  long long *dst;
  long long lo, hi;
} num_opt_t;

static bool parse_args(int argc, char **argv, opts_t *o) {
  num_opt_t nums[] = {
      {"--count", &o->count, 0, KLOAD_MAX_COUNT},
      {"--consume-count", &o->consume_count, 0, KLOAD_MAX_COUNT},
      {"--start-seq", &o->start_seq, 0, INT64_MAX / 2},
      {"--size", &o->size_bytes, 0, KLOAD_MAX_SIZE_BYTES},
      {"--linger-ms", &o->linger_ms, 0, 900000},
      {"--batch-bytes", &o->batch_bytes, 1, 2147483647},
      {"--rate", &o->rate_msgs_per_s, 1, 100000000},
      {"--timeout-s", &o->timeout_s, 1, 86400},
      {"--partitions", &o->partitions, 1, KLOAD_MAX_PARTITIONS},
      {"--replication", &o->replication, 1, 16},
      {"--inject-corrupt", &o->inject_corrupt_seq, 0, INT64_MAX},
      {"--inject-dup", &o->inject_dup_seq, 0, INT64_MAX},
  };
  struct {
    const char *name;
    const char **dst;
  } strs[] = {{"--brokers", &o->brokers}, {"--topic", &o->topic},
              {"--group", &o->group},     {"--acks", &o->acks},
              {"--compression", &o->compression}};
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    bool known = true;
    if (!strcmp(a, "--idempotent")) o->idempotent = true;
    else if (!strcmp(a, "--strict")) o->strict = true;
    else if (!strcmp(a, "--no-verify")) o->verify = false;
    else known = false;
    if (known) continue;
    if (!strcmp(a, "-X") && i + 1 < argc) {
      const char *kv = argv[++i];
      const char *eq = strchr(kv, '=');
      if (eq == NULL || eq == kv || eq - kv >= 256 || g_nprops == KLOAD_PROPS_MAX) {
        fprintf(stderr, "kload: -X %s: expected key=value (at most %d)\n", kv, KLOAD_PROPS_MAX);
        return false;
      }
      g_props[g_nprops++] = kv;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "kload: %s needs a value\n", a);
      return false;
    }
    const char *v = argv[++i];
    for (size_t k = 0; k < sizeof nums / sizeof nums[0] && !known; k++) {
      if (strcmp(a, nums[k].name)) continue;
      known = true;
      if (!parse_ll(v, nums[k].lo, nums[k].hi, nums[k].dst)) {
        fprintf(stderr, "kload: %s %s: not a number in [%lld, %lld]\n", a, v, nums[k].lo,
                nums[k].hi);
        return false;
      }
    }
    for (size_t k = 0; k < sizeof strs / sizeof strs[0] && !known; k++) {
      if (strcmp(a, strs[k].name)) continue;
      known = true;
      *strs[k].dst = v;
    }
    if (!known) {
      fprintf(stderr, "kload: unknown option %s\n", a);
      return false;
    }
  }
  return true;
}

static bool require(const opts_t *o, bool brokers, bool count) {
  if (brokers && !o->brokers) fprintf(stderr, "kload: %s needs --brokers\n", o->mode);
  else if (!o->topic) fprintf(stderr, "kload: %s needs --topic\n", o->mode);
  else if (count && o->count <= 0) fprintf(stderr, "kload: %s needs --count > 0\n", o->mode);
  else return true;
  return false;
}

int main(int argc, char **argv) {
  opts_t o = {.acks = "1", .compression = "none", .size_bytes = 100, .consume_count = -1,
              .timeout_s = 120, .partitions = 1, .replication = 1,
              .inject_corrupt_seq = -1, .inject_dup_seq = -1, .verify = true};
  if (argc < 2 || !parse_args(argc, argv, &o)) {
    usage();
    return 2;
  }
  o.mode = argv[1];
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  if (!strcmp(o.mode, "produce")) return require(&o, true, true) ? run_produce(&o, o.brokers) : 2;
  if (!strcmp(o.mode, "consume")) return require(&o, true, true) ? run_consume(&o, o.brokers) : 2;
  if (!strcmp(o.mode, "mock-bench")) return require(&o, false, true) ? run_mock_bench(&o) : 2;
  if (!strcmp(o.mode, "create-topic")) return require(&o, true, false) ? run_create_topic(&o) : 2;
  if (!strcmp(o.mode, "mock-serve")) return run_mock_serve(&o);
  usage();
  return 2;
}
