/* skiff console core: error capture, DOM helpers, the JSON API client, the
 * confirmation dialog, the router and the metrics sampler. No framework; the
 * page talks only to this node's admin port (same origin). */
'use strict';

/* Every uncaught error and rejected promise lands in #js-errors (hidden) so a
 * headless test reading the DOM can see them; the count is an attribute. */
const SK = { errors: 0, pages: {}, timers: [], samples: [], groupLag: new Map() };
function skRecordError(what) {
  SK.errors++;
  const pre = document.getElementById('js-errors');
  if (pre) { pre.textContent += what + '\n'; pre.dataset.count = String(SK.errors); }
}
window.addEventListener('error', (e) => skRecordError('error: ' + (e.message || e.type) + ' at ' + (e.filename || '') + ':' + (e.lineno || 0)));
window.addEventListener('unhandledrejection', (e) => skRecordError('unhandled rejection: ' + (e.reason && e.reason.stack || e.reason)));

/* h('td', {class: 'num'}, text or nodes...): text is always set as text,
 * never parsed as HTML, so names and record bytes cannot inject markup. */
function h(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    n.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return n;
}

function fmtBytes(n) {
  if (n === null || n === undefined) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0, v = Number(n);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : String(v)) + ' ' + u[i];
}
function fmtRate(n, unit) {
  if (n === null || n === undefined || !isFinite(n)) return '–';
  if (unit === 'B') return fmtBytes(Math.round(n)) + '/s';
  return (n >= 100 ? Math.round(n) : n.toFixed(1)) + '/s';
}
function fmtNum(n) { return n === null || n === undefined ? '–' : String(n); }
function fmtTime(ms) { return ms === null || ms === undefined || ms < 0 ? '–' : new Date(Number(ms)).toISOString().replace('T', ' ').replace('Z', ' UTC'); }

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
/* Explains an API failure for a person: authentication and authorization
 * first (the browser asks for credentials itself on a 401 with
 * WWW-Authenticate; the console never stores them). */
function explain(err) {
  if (!(err instanceof ApiError)) return String(err && err.message || err);
  if (err.status === 401) return '401 Unauthorized: sign in (the browser asks for the admin credentials). ' + err.message;
  if (err.status === 403) return '403 Forbidden: your user may not do this (changes need a super user). ' + err.message;
  return err.status + ': ' + err.message;
}
/* Same origin only; POST/DELETE carry no body: their arguments are query
 * parameters (see broker/admin/README.md), so no JSON is parsed server side. */
async function api(method, path, params) {
  let url = path;
  if (params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) q.append(k, String(v));
    const s = q.toString();
    if (s) url += (url.includes('?') ? '&' : '?') + s;
  }
  let r;
  try {
    r = await fetch(url, { method, credentials: 'same-origin', headers: { Accept: 'application/json' }, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'node unreachable (' + e.message + ')');
  }
  let body = null;
  const text = await r.text();
  if (text) { try { body = JSON.parse(text); } catch (e) { body = { error: text.slice(0, 300) }; } }
  if (!r.ok) throw new ApiError(r.status, body && body.error ? body.error : r.statusText);
  return body;
}
async function apiText(path) {
  const r = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
  if (!r.ok) throw new ApiError(r.status, r.statusText);
  return r.text();
}

function toast(msg, bad) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.className = bad ? 'bad' : '';
  t.hidden = false;
  clearTimeout(SK.toastTimer);
  SK.toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 12000 : 5000);
}

/* confirmAction({title, body: [nodes], ok: 'Delete', run: async (form) => msg})
 * opens the modal dialog; Confirm runs `run`, whose error stays in the
 * dialog (so the fields are kept), and whose result is toasted. */
function confirmAction(o) {
  const dlg = document.getElementById('dlg');
  const form = document.getElementById('dlg-form');
  const errp = document.getElementById('dlg-error');
  document.getElementById('dlg-title').textContent = o.title;
  const body = document.getElementById('dlg-body');
  body.replaceChildren(...(o.body || []));
  const ok = document.getElementById('dlg-ok');
  ok.textContent = o.ok || 'Confirm';
  ok.disabled = false;
  errp.hidden = true;
  form.onsubmit = async (e) => {
    e.preventDefault();
    if (!form.reportValidity()) return;
    ok.disabled = true;
    errp.hidden = true;
    try {
      const msg = await o.run(form);
      dlg.close();
      toast(msg || 'Done');
      render();
    } catch (err) {
      errp.textContent = explain(err);
      errp.hidden = false;
      ok.disabled = false;
    }
  };
  document.getElementById('dlg-cancel').onclick = () => dlg.close();
  dlg.showModal();
  const first = body.querySelector('input, select');
  (first || ok).focus();
}
function field(label, name, attrs) {
  return h('label', null, label, h('input', Object.assign({ name }, attrs || {})));
}

/* The route is the hash: #/page/arg?k=v. */
function route() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const parts = path.split('/').map(decodeURIComponent);
  return { page: parts[0] || 'cluster', args: parts.slice(1), q: new URLSearchParams(query || '') };
}
function link(page, ...args) { return '#/' + [page, ...args.map(encodeURIComponent)].join('/'); }

/* Prometheus text -> [{name, labels, value}] (what the sampler needs:
 * counters and gauges; comments and histograms' buckets are skipped). */
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([^ ]+)/.exec(line);
    if (!m || m[1].endsWith('_bucket')) continue;
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let l;
      while ((l = re.exec(m[3]))) labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

/* One sample of this node's traffic counters every SAMPLE_MS, the last
 * SAMPLES_MAX kept (10 minutes): the Topics page's rates and the Charts. */
const SAMPLE_MS = 5000, SAMPLES_MAX = 120;
const TRAFFIC = ['skiff_bytes_in_total', 'skiff_bytes_out_total', 'skiff_messages_in_total'];
async function sampleMetrics() {
  const text = await apiText('/metrics');
  const s = { t: Date.now(), topics: {}, node: {} };
  for (const m of TRAFFIC) s.node[m] = 0;   /* a node without traffic yet rates 0, not "no data" */
  for (const m of parseMetrics(text)) {
    if (!TRAFFIC.includes(m.name)) continue;
    const topic = m.labels.topic;
    s.node[m.name] = (s.node[m.name] || 0) + m.value;
    if (topic === undefined) continue;
    const row = s.topics[topic] || (s.topics[topic] = {});
    row[m.name] = (row[m.name] || 0) + m.value;
  }
  SK.samples.push(s);
  if (SK.samples.length > SAMPLES_MAX) SK.samples.shift();
}
/* Per-second rate of `metric` between consecutive samples: [{t, v}]. */
function rateSeries(metric, topic) {
  const pts = [];
  for (let i = 1; i < SK.samples.length; i++) {
    const a = SK.samples[i - 1], b = SK.samples[i];
    const va = topic === undefined ? a.node[metric] : (a.topics[topic] || {})[metric];
    const vb = topic === undefined ? b.node[metric] : (b.topics[topic] || {})[metric];
    const dt = (b.t - a.t) / 1000;
    if (vb === undefined || dt <= 0) continue;
    pts.push({ t: b.t, v: Math.max(0, (vb - (va || 0)) / dt) });
  }
  return pts;
}
function lastRate(metric, topic) {
  const s = rateSeries(metric, topic);
  return s.length ? s[s.length - 1].v : null;
}
