/* Small SVG line charts: time on x, value on y, one polyline per series, a
 * legend with the latest value. Colours differ in hue and lightness, and each
 * legend entry names its series, so a colour never carries meaning alone. */
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
const PALETTE = ['#1d5fa8', '#b34700', '#2a7d2e', '#8a2be2', '#a31b16', '#00707a', '#6b5b00', '#555f6b'];
function s(tag, attrs, ...kids) {
  const n = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
  for (const k of kids) n.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return n;
}

/* lineChart({title, unit: 'B' | '', series: [{name, points: [{t, v}]}]})
 * -> a <figure class="chart">. Empty series draw "no samples yet". */
function lineChart(o) {
  const W = 600, H = 200, L = 62, R = 8, T = 8, B = 22;
  const all = o.series.flatMap((x) => x.points);
  const fig = h('figure', { class: 'chart', 'data-chart': o.title });
  fig.append(h('figcaption', null, h('strong', null, o.title)));
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': o.title });
  fig.append(svg);
  if (all.length === 0) {
    svg.append(s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'axis' }, 'no samples yet (one every 5 s)'));
    return fig;
  }
  let t0 = Math.min(...all.map((p) => p.t)), t1 = Math.max(...all.map((p) => p.t));
  if (t1 === t0) { t0 -= 5000; t1 += 1; }
  let vmax = Math.max(...all.map((p) => p.v));
  vmax = Math.max(vmax, o.unit === 'B' ? 1024 : 1);   /* an idle chart still has a readable scale */
  const x = (t) => L + (W - L - R) * (t - t0) / (t1 - t0);
  const y = (v) => T + (H - T - B) * (1 - v / vmax);
  for (const f of [0, 0.5, 1]) {
    const yy = y(vmax * f);
    svg.append(s('line', { x1: L, x2: W - R, y1: yy, y2: yy, stroke: '#d5dbe2', 'stroke-width': 1 }));
    const lab = o.unit === 'B' ? fmtBytes(Math.round(vmax * f)) + '/s' : (vmax * f).toFixed(vmax * f >= 10 ? 0 : 1) + (o.suffix || '');
    svg.append(s('text', { x: L - 4, y: yy + 4, 'text-anchor': 'end', class: 'axis' }, lab));
  }
  const secs = Math.round((t1 - t0) / 1000);
  svg.append(s('text', { x: L, y: H - 6, class: 'axis' }, `-${secs}s`));
  svg.append(s('text', { x: W - R, y: H - 6, 'text-anchor': 'end', class: 'axis' }, 'now'));
  const legend = h('div', { class: 'legend' });
  o.series.forEach((ser, i) => {
    const col = PALETTE[i % PALETTE.length];
    if (ser.points.length) {
      const d = ser.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ');
      svg.append(s('polyline', { points: d, fill: 'none', stroke: col, 'stroke-width': 2 }));
      const lp = ser.points[ser.points.length - 1];   /* the latest sample, visible even alone */
      svg.append(s('circle', { cx: x(lp.t).toFixed(1), cy: y(lp.v).toFixed(1), r: 3, fill: col }));
    }
    const last = ser.points.length ? ser.points[ser.points.length - 1].v : null;
    const sw = h('span', { class: 'sw' });
    sw.style.background = col;
    legend.append(h('span', null, sw, ser.name + ': ' + (o.unit === 'B' ? fmtRate(last, 'B') : last === null ? '–' : (o.suffix ? Math.round(last) + o.suffix : fmtRate(last)))));
  });
  fig.append(legend);
  return fig;
}
