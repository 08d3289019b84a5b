/* The console's pages. Each is async (view, route) -> fills `view` from the
 * JSON API; render() in main.js swaps it in and marks the body when done. */
'use strict';

function table(headers, rows, opts) {
  const thead = h('thead', null, h('tr', null, headers.map((c) => {
    const [label, cls] = Array.isArray(c) ? c : [c, null];
    return h('th', { scope: 'col', class: cls }, label);
  })));
  return h('div', { class: 'scroll' }, h('table', opts || null, thead, h('tbody', null, rows)));
}
function card(k, v, cls) { return h('div', { class: 'card' }, h('div', { class: 'k' }, k), h('div', { class: 'v ' + (cls || '') }, v)); }
function badge(text, kind) { return h('span', { class: 'badge ' + kind }, text); }

SK.pages.cluster = async (view) => {
  const [cl, br, q, he] = await Promise.all([api('GET', '/v1/cluster'), api('GET', '/v1/brokers'),
    api('GET', '/v1/quorum'), api('GET', '/v1/health')]);
  view.append(h('h1', null, 'Cluster'));
  view.append(h('div', { class: 'cards' },
    card('Cluster id', cl.cluster_id || '–'),
    card('This node', cl.node_id),
    card('Controller', cl.controller_id >= 0 ? 'node ' + cl.controller_id : 'none elected', cl.controller_id >= 0 ? '' : 'missing'),
    card('Health', he.healthy ? badge('✓ healthy', 'ok') : badge('✗ unhealthy', 'bad')),
    card('Under-replicated', he.under_replicated_partitions),
    card('Leaderless', he.leaderless_partitions)));
  if (!he.healthy) {
    view.append(h('h2', null, 'Why unhealthy'));
    view.append(h('ul', { id: 'health-reasons' }, he.unhealthy_reasons.map((r) =>
      h('li', null, r.replace(/_/g, ' ') + (r === 'nodes_down' ? ': ' + he.nodes_down.join(', ') : '')))));
  }
  view.append(h('h2', null, 'Brokers'));
  view.append(table(['Node', 'Address', 'Rack', 'State', ['Epoch', 'num hide-narrow']],
    br.brokers.map((b) => {
      const l = b.listeners[0];
      const st = b.fenced ? badge('✗ fenced', 'bad') : b.in_controlled_shutdown ? badge('shutting down', 'warn') : badge('✓ active', 'ok');
      return h('tr', { class: b.fenced ? 'bad' : null, 'data-broker': b.node_id },
        h('td', null, String(b.node_id), b.node_id === cl.controller_id ? ' (controller)' : ''),
        h('td', null, l ? `${l.host}:${l.port}` : '–'),
        h('td', null, b.rack || '–'), h('td', null, st),
        h('td', { class: 'num hide-narrow' }, b.broker_epoch));
    }), { id: 'brokers' }));
  view.append(h('h2', null, 'Metadata quorum'));
  view.append(h('p', { class: 'muted' }, `Leader: node ${q.leader_id}, epoch ${q.leader_epoch}, high watermark ${q.high_watermark}. ` +
    `This node is ${q.role}` + (q.role === 'leader' ? '.' : ' (voters\' lag is known on the quorum leader only).')));
  const rows = [...q.voters.map((v) => [v, 'voter']), ...(q.observers || []).map((v) => [v, 'observer'])];
  view.append(table(['Node', 'Kind', ['Log end', 'num'], ['Lag', 'num'], ['Last fetch', 'hide-narrow']],
    rows.map(([v, kind]) => h('tr', { class: v.lag > 0 ? 'warn' : null, 'data-voter': v.node_id },
      h('td', null, String(v.node_id), v.node_id === q.leader_id ? ' (leader)' : ''), h('td', null, kind),
      h('td', { class: 'num' }, v.log_end_offset < 0 ? '–' : v.log_end_offset),
      h('td', { class: 'num' }, v.lag < 0 ? '–' : v.lag),
      h('td', { class: 'hide-narrow' }, fmtTime(v.last_fetch_ms)))), { id: 'quorum' }));
};

SK.pages.topics = async (view, r) => {
  const [tp] = await Promise.all([api('GET', '/v1/topics')]);
  const filter = r.q.get('filter') || '';
  view.append(h('h1', null, 'Topics'));
  const inp = h('input', { type: 'search', value: filter, 'aria-label': 'Filter topics', placeholder: 'filter' });
  inp.addEventListener('change', () => { location.hash = '#/topics' + (inp.value ? '?filter=' + encodeURIComponent(inp.value) : ''); });
  view.append(h('div', { class: 'toolbar' }, h('label', null, 'Filter', inp),
    h('button', { class: 'primary', type: 'button', onclick: () => actCreateTopic() }, 'Create topic…')));
  const topics = tp.topics.filter((t) => !filter || t.name.includes(filter));
  const urp = topics.filter((t) => t.under_replicated_partitions > 0).length;
  const off = topics.filter((t) => t.offline_partitions > 0).length;
  view.append(h('p', { class: 'muted' }, `${topics.length} topics; ${urp} with under-replicated and ${off} with offline partitions. ` +
    'Size counts the replicas on this node; rates are this node\'s, sampled every 5 s.'));
  const rows = topics.map((t) => {
    const st = t.offline_partitions > 0 ? badge(`✗ ${t.offline_partitions} offline`, 'bad')
      : t.under_replicated_partitions > 0 ? badge(`⚠ ${t.under_replicated_partitions} under-replicated`, 'warn') : badge('✓ ok', 'ok');
    return h('tr', { class: t.offline_partitions > 0 ? 'bad' : t.under_replicated_partitions > 0 ? 'warn' : null, 'data-topic': t.name },
      h('td', null, h('a', { href: link('topic', t.name) }, t.name), t.internal ? h('span', { class: 'muted' }, ' (internal)') : ''),
      h('td', { class: 'num' }, t.partitions), h('td', { class: 'num' }, t.replication_factor), h('td', null, st),
      h('td', { class: 'num' }, fmtBytes(t.size_bytes)),
      h('td', { class: 'num hide-narrow' }, fmtRate(lastRate('skiff_bytes_in_total', t.name), 'B')),
      h('td', { class: 'num hide-narrow' }, fmtRate(lastRate('skiff_messages_in_total', t.name))),
      h('td', { class: 'num hide-narrow' }, fmtRate(lastRate('skiff_bytes_out_total', t.name), 'B')));
  });
  view.append(table(['Topic', ['Partitions', 'num'], ['RF', 'num'], 'State', ['Size', 'num'], ['In', 'num hide-narrow'],
    ['Msgs in', 'num hide-narrow'], ['Out', 'num hide-narrow']], rows, { id: 'topics' }));
};

SK.pages.topic = async (view, r) => {
  const name = r.args[0] || '';
  const t = await api('GET', '/v1/topics/' + encodeURIComponent(name));
  view.append(h('p', null, h('a', { href: '#/topics' }, '← Topics')));
  view.append(h('h1', null, 'Topic ', h('span', { id: 'topic-name' }, t.name)));
  view.append(h('div', { class: 'toolbar' },
    h('button', { type: 'button', onclick: () => actAddPartitions(t) }, 'Add partitions…'),
    h('button', { type: 'button', onclick: () => actConfig(t) }, 'Change config…'),
    h('a', { href: link('messages') + '?topic=' + encodeURIComponent(t.name) }, 'Read messages'),
    h('button', { type: 'button', class: 'danger', onclick: () => actDeleteTopic(t.name) }, 'Delete topic…')));
  view.append(h('p', { class: 'muted' }, `id ${t.topic_id}. Offsets and size are this node's replica (the leader's are the partition's).`));
  const ids = (a, isr) => a.map((id, i) => h('span', { class: isr && !isr.includes(id) ? 'missing' : null,
    title: isr && !isr.includes(id) ? 'not in the ISR' : null }, (i ? ', ' : '') + id));
  const rows = t.partitions.map((p) => {
    const offline = p.leader < 0, under = p.isr.length < p.replicas.length;
    return h('tr', { class: offline ? 'bad' : under ? 'warn' : null, 'data-partition': p.partition },
      h('td', { class: 'num' }, p.partition),
      h('td', { class: 'num' }, offline ? badge('✗ none', 'bad') : p.leader),
      h('td', null, ids(p.replicas, p.isr)), h('td', { class: 'isr' }, p.isr.join(', ')),
      h('td', { class: 'num' }, fmtNum(p.log_start_offset)), h('td', { class: 'num' }, fmtNum(p.high_watermark)),
      h('td', { class: 'num' }, fmtBytes(p.size_bytes)),
      h('td', null, p.replicas[0] !== p.leader
        ? h('button', { type: 'button', class: 'small', onclick: () => actElect(t.name, p) }, 'Elect preferred…') : h('span', { class: 'muted' }, 'preferred')));
  });
  view.append(table([['Partition', 'num'], ['Leader', 'num'], 'Replicas', 'ISR', ['Log start', 'num'], ['High watermark', 'num'], ['Size', 'num'], 'Leader election'],
    rows, { id: 'partitions' }));
  view.append(h('h2', null, 'Configs'));
  view.append(table(['Key', 'Value'], Object.entries(t.configs).map(([k, v]) => h('tr', null, h('td', null, k), h('td', null, v === null ? '–' : v))), { id: 'configs' }));
};

/* Record bytes come as base64 (null stays null); shown as text, hex or
 * pretty JSON, chosen per page. */
function b64bytes(b) {
  const s = atob(b);
  const u = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
  return u;
}
function showBytes(b, fmt) {
  if (b === null || b === undefined) return h('span', { class: 'muted' }, 'null');
  const u = b64bytes(b);
  if (fmt === 'hex') return h('pre', { class: 'val' }, Array.from(u, (x) => x.toString(16).padStart(2, '0')).join(' '));
  const text = new TextDecoder('utf-8', { fatal: false }).decode(u);
  if (fmt === 'json') {
    try { return h('pre', { class: 'val' }, JSON.stringify(JSON.parse(text), null, 2)); } catch (e) { /* not JSON: as text */ }
  }
  return h('pre', { class: 'val' }, text);
}

SK.pages.messages = async (view, r) => {
  const tp = await api('GET', '/v1/topics');
  const q = r.q;
  view.append(h('h1', null, 'Messages'));
  const topic = h('select', { name: 'topic', 'aria-label': 'Topic' }, tp.topics.map((t) => h('option', { value: t.name, selected: t.name === q.get('topic') }, t.name)));
  const form = h('form', { class: 'toolbar', id: 'msg-form' },
    h('label', null, 'Topic', topic),
    field('Partition', 'partition', { type: 'number', min: 0, value: q.get('partition') || '0', required: true }),
    h('label', null, 'From', h('select', { name: 'from' }, h('option', { value: 'offset', selected: q.get('from') !== 'timestamp' }, 'offset'),
      h('option', { value: 'timestamp', selected: q.get('from') === 'timestamp' }, 'timestamp (ms)'))),
    field('Offset / timestamp', 'at', { value: q.get('at') || '0', inputmode: 'numeric', pattern: '-?[0-9]+', required: true }),
    field('Count', 'count', { type: 'number', min: 1, max: 500, value: q.get('count') || '20', required: true }),
    h('label', null, 'Show as', h('select', { name: 'fmt' }, ['text', 'hex', 'json'].map((f) => h('option', { value: f, selected: f === (q.get('fmt') || 'text') }, f)))),
    h('button', { class: 'primary', type: 'submit' }, 'Read'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const p = new URLSearchParams(new FormData(form));
    p.set('read', '1');
    location.hash = '#/messages?' + p.toString();
  });
  view.append(form);
  if (!q.get('read') || !q.get('topic')) { view.append(h('p', { class: 'muted' }, 'Choose a partition and where to start.')); return; }
  const params = { count: q.get('count') || 20 };
  params[q.get('from') === 'timestamp' ? 'timestamp' : 'offset'] = q.get('at') || 0;
  const res = await api('GET', `/v1/partitions/${encodeURIComponent(q.get('topic'))}/${encodeURIComponent(q.get('partition') || 0)}/records`, params);
  const fmt = q.get('fmt') || 'text';
  view.append(h('p', { class: 'muted', id: 'msg-summary' }, `${res.records.length} records from ${res.topic}-${res.partition} ` +
    `(log start ${res.log_start_offset}, high watermark ${res.high_watermark}, read on node ${res.node_id}); next offset ${res.next_offset}.`));
  if (res.next_offset < res.high_watermark) {
    const nq = new URLSearchParams(q);
    nq.set('from', 'offset');
    nq.set('at', String(res.next_offset));
    view.append(h('p', null, h('a', { href: '#/messages?' + nq.toString(), id: 'msg-next' }, `Next ${q.get('count') || 20} from offset ${res.next_offset} →`)));
  }
  if (res.error) view.append(h('p', { class: 'error' }, 'The read stopped early: ' + res.error));
  view.append(table([['Offset', 'num'], 'Timestamp', 'Key', 'Value', 'Headers'], res.records.map((m) => h('tr', { 'data-offset': m.offset },
    h('td', { class: 'num' }, m.offset), h('td', null, fmtTime(m.timestamp)),
    h('td', null, showBytes(m.key, fmt)), h('td', null, showBytes(m.value, fmt)),
    h('td', null, m.headers.map((x) => h('div', null, h('strong', null, x.key + ': '), showBytes(x.value, fmt === 'json' ? 'text' : fmt)))))), { id: 'records' }));
};

SK.pages.groups = async (view) => {
  const g = await api('GET', '/v1/groups');
  view.append(h('h1', null, 'Consumer groups'));
  view.append(h('p', { class: 'muted' }, `Groups coordinated by this node (${g.coordinator_partitions_here} of ${g.coordinator_partitions_total} ` +
    `__consumer_offsets partitions${g.complete ? ': all groups' : '; open the console of the other nodes for the rest'}).`));
  view.append(table(['Group', 'State', 'Protocol', ['Members', 'num']], g.groups.map((x) => h('tr', { 'data-group': x.group_id },
    h('td', null, h('a', { href: link('group', x.group_id) }, x.group_id)), h('td', null, x.state),
    h('td', null, x.protocol_type || '–'), h('td', { class: 'num' }, x.members))), { id: 'groups' }));
};

SK.pages.group = async (view, r) => {
  const id = r.args[0] || '';
  const g = await api('GET', '/v1/groups/' + encodeURIComponent(id));
  view.append(h('p', null, h('a', { href: '#/groups' }, '← Groups')));
  view.append(h('h1', null, 'Group ', h('span', { id: 'group-id' }, g.group_id)));
  if (!g.coordinated_here) { view.append(h('p', { class: 'error' }, g.note || 'not coordinated by this node')); return; }
  /* the page samples the total lag on each refresh: the chart covers the
   * time this tab has had the group open (at most SAMPLES_MAX points) */
  const hist = SK.groupLag.get(id) || [];
  if (g.total_lag !== null && g.total_lag !== undefined) hist.push({ t: Date.now(), v: g.total_lag });
  while (hist.length > SAMPLES_MAX) hist.shift();
  SK.groupLag.set(id, hist);
  view.append(h('div', { class: 'cards' }, card('State', g.state), card('Generation', g.generation), card('Protocol', g.protocol || '–'),
    card('Members', g.members.length), card('Total lag', h('span', { id: 'total-lag' }, fmtNum(g.total_lag)))));
  view.append(h('div', { class: 'toolbar' }, h('button', { type: 'button', onclick: () => actResetOffsets(g) }, 'Reset offsets…')));
  view.append(h('h2', null, 'Members'));
  view.append(table(['Member', 'Client', 'Host', 'Assignment'], g.members.map((m) => h('tr', null,
    h('td', null, m.member_id, m.instance_id ? ` (${m.instance_id})` : ''), h('td', null, m.client_id), h('td', null, m.client_host),
    h('td', null, m.assignment ? m.assignment.map((a) => `${a.topic}: ${a.partitions.join(', ')}`).join('; ') : '–'))), { id: 'members' }));
  view.append(h('h2', null, 'Lag per partition'));
  view.append(table(['Topic', ['Partition', 'num'], ['Committed', 'num'], ['Log end', 'num'], ['Lag', 'num']], g.offsets.map((o) =>
    h('tr', { class: o.lag > 0 ? 'warn' : null, 'data-tp': `${o.topic}-${o.partition}` }, h('td', null, o.topic), h('td', { class: 'num' }, o.partition),
      h('td', { class: 'num' }, o.committed_offset), h('td', { class: 'num' }, fmtNum(o.log_end_offset)), h('td', { class: 'num lag' }, fmtNum(o.lag)))), { id: 'offsets' }));
  view.append(h('h2', null, 'Total lag'));
  view.append(lineChart({ title: 'Total lag of ' + id, suffix: ' msgs', series: [{ name: 'lag', points: hist }] }));
};

SK.pages.charts = async (view) => {
  view.append(h('h1', null, 'Charts'));
  view.append(h('p', { class: 'muted' }, `Sampled by this page from this node's /metrics every ${SAMPLE_MS / 1000} s ` +
    `(${SK.samples.length} samples, last ${SAMPLES_MAX * SAMPLE_MS / 60000} minutes kept). Other brokers: open their console.`));
  const last = SK.samples[SK.samples.length - 1];
  const names = last ? Object.keys(last.topics) : [];
  /* the busiest topics by bytes in+out over the window, at most 8 lines */
  const tot = (n) => rateSeries('skiff_bytes_in_total', n).concat(rateSeries('skiff_bytes_out_total', n)).reduce((a, p) => a + p.v, 0);
  const top = names.map((n) => [n, tot(n)]).sort((a, b) => b[1] - a[1]).slice(0, 8).map((x) => x[0]);
  const grid = h('div', { class: 'grid2', id: 'charts' });
  grid.append(lineChart({ title: 'This broker: bytes', unit: 'B', series: [
    { name: 'in', points: rateSeries('skiff_bytes_in_total') }, { name: 'out', points: rateSeries('skiff_bytes_out_total') }] }));
  grid.append(lineChart({ title: 'This broker: messages in', series: [{ name: 'in', points: rateSeries('skiff_messages_in_total') }] }));
  grid.append(lineChart({ title: 'Bytes in per topic', unit: 'B', series: top.map((n) => ({ name: n, points: rateSeries('skiff_bytes_in_total', n) })) }));
  grid.append(lineChart({ title: 'Bytes out per topic', unit: 'B', series: top.map((n) => ({ name: n, points: rateSeries('skiff_bytes_out_total', n) })) }));
  grid.append(lineChart({ title: 'Messages in per topic', series: top.map((n) => ({ name: n, points: rateSeries('skiff_messages_in_total', n) })) }));
  view.append(grid);
};

SK.pages.transactions = async (view) => {
  const x = await api('GET', '/v1/transactions');
  view.append(h('h1', null, 'Transactions'));
  view.append(h('p', { class: 'muted' }, `Transactional ids coordinated by this node (${x.coordinator_partitions_here} of ` +
    `${x.coordinator_partitions_total} __transaction_state partitions)${x.truncated ? '; list truncated' : ''}.`));
  view.append(table(['Transactional id', 'State', ['Producer id', 'num'], ['Epoch', 'num'], ['Timeout', 'num'], 'Started', 'Partitions'],
    x.transactions.map((t) => h('tr', { 'data-txn': t.transactional_id }, h('td', null, t.transactional_id), h('td', null, t.state),
      h('td', { class: 'num' }, t.producer_id), h('td', { class: 'num' }, t.producer_epoch), h('td', { class: 'num' }, t.timeout_ms + ' ms'),
      h('td', null, fmtTime(t.start_ms)), h('td', null, t.partitions.map((p) => `${p.topic}-${p.partition}`).join(', ')))), { id: 'transactions' }));
};
