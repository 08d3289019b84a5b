/* Starts the console: the router, the 5 s refresh of the current page, the
 * health badge and the metrics sampler. */
'use strict';

/* How often each page is re-read; 0: only on demand (forms). */
const REFRESH_MS = { cluster: 5000, topics: 10000, topic: 5000, messages: 0, groups: 5000, group: 5000, charts: SAMPLE_MS, transactions: 5000 };
let renderSeq = 0;
const bootMs = performance.now();

async function render() {
  const r = route();
  const page = SK.pages[r.page] ? r.page : 'cluster';
  const seq = ++renderSeq;
  for (const a of document.querySelectorAll('.top nav a'))
    if (a.dataset.page === page || (a.dataset.page + '') === page.replace(/^(topic|group)$/, '$1s')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  const fresh = h('div', { id: 'view' });
  try {
    await SK.pages[page](fresh, r);
  } catch (e) {
    fresh.replaceChildren(h('h1', null, page[0].toUpperCase() + page.slice(1)), h('p', { class: 'error', id: 'page-error' }, explain(e)));
  }
  if (seq !== renderSeq) return;   /* a newer render started meanwhile */
  /* a refresh keeps keyboard focus where it was: the same control, found by
   * its place among the page's focusable elements */
  const old = document.getElementById('view');
  const FOCUSABLE = 'a[href], button, input, select, textarea, [tabindex]';
  const at = old.contains(document.activeElement) ? [...old.querySelectorAll(FOCUSABLE)].indexOf(document.activeElement) : -1;
  old.replaceWith(fresh);
  if (at >= 0) { const f = fresh.querySelectorAll(FOCUSABLE)[at]; if (f) f.focus(); }
  document.title = 'skiff · ' + page;
  /* for tests and the benchmark: which page is on screen, how long the first took */
  document.body.dataset.rendered = page;
  document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
  if (!document.body.dataset.firstRenderMs) document.body.dataset.firstRenderMs = String(Math.round(performance.now()));
}

/* A refresh never replaces the page under a person typing or a dialog. */
function busy() {
  const a = document.activeElement;
  return document.getElementById('dlg').open || (a && a.closest('#view') && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName));
}
async function tick() {
  const page = route().page;
  if (REFRESH_MS[page] && !busy() && Date.now() - (SK.lastRender || 0) >= REFRESH_MS[page] - 100) {
    SK.lastRender = Date.now();
    await render();
  }
}
async function healthBadge() {
  const b = document.getElementById('health');
  try {
    const he = await api('GET', '/v1/health');
    b.textContent = he.healthy ? '✓ healthy' : '✗ ' + he.unhealthy_reasons.join(', ').replace(/_/g, ' ');
    b.className = 'badge ' + (he.healthy ? 'ok' : 'bad');
  } catch (e) {
    b.textContent = '✗ ' + explain(e);
    b.className = 'badge bad';
  }
}
function safe(fn) { return () => fn().catch((e) => { if (!(e instanceof ApiError)) skRecordError(String(e && e.stack || e)); }); }

window.addEventListener('hashchange', () => { SK.lastRender = Date.now(); render().then(() => document.getElementById('main').focus()); });
document.addEventListener('DOMContentLoaded', () => {
  SK.lastRender = Date.now();
  render();
  safe(healthBadge)();
  safe(sampleMetrics)();
  setInterval(safe(tick), 1000);
  setInterval(safe(healthBadge), 5000);
  setInterval(safe(sampleMetrics), SAMPLE_MS);
  void bootMs;
});
