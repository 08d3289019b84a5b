/* Actions that change the cluster, each behind the confirmation dialog.
 * Every one calls a route of this node that goes through the controller's
 * own decision path (on another node: forwarded to it as the Kafka request,
 * CreateTopics, DeleteTopics, ...); errors come back as Kafka error names
 * with the controller's message. */
'use strict';

function actCreateTopic() {
  confirmAction({
    title: 'Create a topic', ok: 'Create',
    body: [field('Name', 'name', { required: true, maxlength: 249, pattern: '[a-zA-Z0-9._\\-]+' }),
      field('Partitions (empty: num.partitions)', 'partitions', { type: 'number', min: 1 }),
      field('Replication factor (empty: default.replication.factor)', 'replication_factor', { type: 'number', min: 1 }),
      field('Config (optional, key=value, comma separated)', 'configs', { placeholder: 'retention.ms=86400000' })],
    run: async (f) => {
      const p = { name: f.name.value, partitions: f.partitions.value, replication_factor: f.replication_factor.value };
      for (const kv of f.configs.value.split(',').map((x) => x.trim()).filter(Boolean)) {
        const i = kv.indexOf('=');
        if (i <= 0) throw new Error(`config '${kv}' is not key=value`);
        p['config.' + kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
      }
      const r = await api('POST', '/v1/topics', p);
      return `Topic ${r.name} created: ${r.partitions} partitions, RF ${r.replication_factor}`;
    },
  });
}

function actDeleteTopic(name) {
  confirmAction({
    title: `Delete topic ${name}?`, ok: 'Delete',
    body: [h('p', null, 'Every partition and its records are removed. Type the topic name to confirm.'),
      field('Topic name', 'confirm', { required: true, autocomplete: 'off' })],
    run: async (f) => {
      if (f.confirm.value !== name) throw new Error('the name typed does not match');
      await api('DELETE', '/v1/topics/' + encodeURIComponent(name));
      location.hash = '#/topics';
      return `Topic ${name} deleted`;
    },
  });
}

function actAddPartitions(t) {
  confirmAction({
    title: `Add partitions to ${t.name}`, ok: 'Add',
    body: [h('p', null, `It has ${t.partitions.length}. Keys map to other partitions afterwards.`),
      field('New total partition count', 'count', { type: 'number', min: t.partitions.length + 1, required: true, value: t.partitions.length + 1 })],
    run: async (f) => {
      const r = await api('POST', `/v1/topics/${encodeURIComponent(t.name)}/partitions`, { count: f.count.value });
      return `${r.name} now has ${r.partitions} partitions`;
    },
  });
}

function actConfig(t) {
  const keys = Object.keys(t.configs);
  confirmAction({
    title: `Change a config of ${t.name}`, ok: 'Apply',
    body: [h('label', null, 'Key', h('select', { name: 'key' }, keys.map((k) => h('option', { value: k }, k)))),
      field('New value (empty: back to the default)', 'value', {})],
    run: async (f) => {
      const r = await api('POST', `/v1/topics/${encodeURIComponent(t.name)}/configs`, { key: f.key.value, value: f.value.value === '' ? null : f.value.value });
      return `${r.name}: ${r.key} = ${r.value === null ? '(default)' : r.value}`;
    },
  });
}

function actElect(topic, p) {
  confirmAction({
    title: `Elect the preferred leader of ${topic}-${p.partition}?`, ok: 'Elect',
    body: [h('p', null, `Leadership moves from node ${p.leader} to node ${p.replicas[0]} (the first replica), if it is in the ISR.`)],
    run: async () => {
      const r = await api('POST', `/v1/partitions/${encodeURIComponent(topic)}/${p.partition}/elect`);
      return `${topic}-${p.partition}: leader ${r.leader}, epoch ${r.leader_epoch}`;
    },
  });
}

function actResetOffsets(g) {
  const topics = [...new Set(g.offsets.map((o) => o.topic))];
  const to = h('select', { name: 'to' }, ['earliest', 'latest', 'offset', 'timestamp'].map((x) => h('option', { value: x }, x)));
  confirmAction({
    title: `Reset the offsets of group ${g.group_id}`, ok: 'Reset',
    body: [h('p', null, 'Only an empty group (no members) can be reset, as in Kafka.'),
      h('label', null, 'Topic', h('select', { name: 'topic' }, topics.map((x) => h('option', { value: x }, x)))),
      h('label', null, 'To', to),
      field('Offset or timestamp (ms) for those choices', 'at', { inputmode: 'numeric', pattern: '-?[0-9]*' })],
    run: async (f) => {
      const p = { topic: f.topic.value, to: f.to.value };
      if (p.to === 'offset') p.offset = f.at.value;
      if (p.to === 'timestamp') p.timestamp = f.at.value;
      const r = await api('POST', `/v1/groups/${encodeURIComponent(g.group_id)}/offsets/reset`, p);
      return `${r.group_id}: ${r.partitions.length} partitions reset`;
    },
  });
}
