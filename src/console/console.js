// herald operator console. Plain JavaScript, no framework, no build step.
// Every value that comes from the API is inserted as text (textContent / text nodes), never as
// markup: message bodies, recipients and error details are written by whoever sends messages.
'use strict';

(function () {
  const KEY_STORAGE = 'herald.console.api_key';
  const REFRESH_MS = 5000;
  const MAX_SAMPLES = 60;
  const PAGES = ['overview', 'messages', 'dead-letters'];
  const STATES = ['pending', 'sending', 'retry_wait', 'sent', 'delivered', 'read', 'clicked',
    'undelivered', 'unconfirmed', 'failed', 'dead', 'expired', 'suppressed'];
  const OUTCOMES = ['success', 'retryable', 'permanent', 'timeout', 'throttled'];
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);

  // ---- DOM helpers: attributes and text only ----
  function build(node, attrs, children) {
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'class') node.setAttribute('class', value);
      else if (name === 'text') node.textContent = String(value);
      else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const el = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
  const svg = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

  const fmtInt = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');
  const fmtPct = (x) => (typeof x === 'number' && isFinite(x) ? (x * 100).toFixed(1) + ' %' : '—');
  const fmtTime = (iso) => (iso ? String(iso).replace('T', ' ').replace(/(\.\d{3})\d*Z$/, '$1Z') : '—');
  const badge = (kind, value) =>
    el('span', { class: 'badge ' + kind + '-' + String(value).toLowerCase(), 'data-testid': 'badge' }, String(value));

  function showError(box, message) {
    box.textContent = message || '';
    box.hidden = !message;
  }

  // ---- the API key: kept in this tab's sessionStorage only ----
  const getKey = () => sessionStorage.getItem(KEY_STORAGE) || '';

  function describeKey() {
    const key = getKey();
    const status = $('key-status');
    status.className = 'key-status';
    status.title = '';
    if (!key) {
      status.textContent = 'no key: requests go without one';
      return;
    }
    const id = /^(hk_[^_]+)_/.exec(key);
    status.textContent = (id ? id[1].slice(0, 11) + '…' : 'a key') + ' in use';
    status.title = 'the key ' + (id ? id[1] : '') + ' is kept in this tab only (sessionStorage)';
    status.classList.add('ok');
  }

  function keyRefused(message) {
    const status = $('key-status');
    status.className = 'key-status bad';
    status.textContent = message;
  }

  // ---- HTTP ----
  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path) {
    const headers = { Accept: 'application/json' };
    const key = getKey();
    if (key) headers.Authorization = 'Bearer ' + key;
    let response;
    try {
      response = await fetch(path, { method, headers, cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      throw new ApiError(0, 'network', 'herald did not answer (' + e.message + ')');
    }
    const text = await response.text();
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (e) {
      body = null;
    }
    if (response.ok) return { status: response.status, body };
    const error = (body && body.error) || {};
    const message = error.message || 'HTTP ' + response.status;
    let shown;
    if (response.status === 401) {
      shown = key ? 'The API key was refused (401 unauthorized): it is unknown, wrong or revoked.'
        : 'This herald needs an API key (401 unauthorized): enter one above.';
      keyRefused(key ? 'key refused (401)' : 'a key is required');
    } else if (response.status === 403) {
      shown = 'Not allowed (403 forbidden): ' + message + '.';
    } else {
      shown = message + ' (' + response.status + (error.code ? ' ' + error.code : '') + ')';
    }
    throw new ApiError(response.status, error.code || 'http_' + response.status, shown);
  }

  // ---- pages (hash routes: #overview, #messages?id=…, #dead-letters) ----
  function parseHash() {
    const hash = location.hash.replace(/^#/, '');
    const cut = hash.indexOf('?');
    const page = cut < 0 ? hash : hash.slice(0, cut);
    return {
      page: PAGES.includes(page) ? page : 'overview',
      params: new URLSearchParams(cut < 0 ? '' : hash.slice(cut + 1)),
    };
  }

  let deadLoaded = false;
  // Why nothing loads by itself, if so: 'refused' (the overview's last refresh was answered 401
  // or 403: polling cannot change that, a key can) or 'forgotten' (Forget: nothing is loaded
  // until a key is used or the user asks for a page). null: loads and auto-refresh as usual.
  let paused = null;

  function route() {
    const { page, params } = parseHash();
    for (const name of PAGES) {
      $('page-' + name).hidden = name !== page;
      const tab = $('tab-' + name);
      if (name === page) tab.setAttribute('aria-current', 'page');
      else tab.removeAttribute('aria-current');
    }
    document.body.dataset.page = page;
    if (page === 'overview') {
      if (paused !== 'forgotten') refreshOverview();
    } else {
      stopRefresh();
    }
    if (page === 'messages') { // a link to a message is asked for: it loads even after Forget
      if (params.get('id')) {
        $('search-message-id').value = params.get('id');
        findMessage({ id: params.get('id') });
      } else if (params.get('biz_type') && params.get('biz_id') && params.get('user_id')) {
        $('search-biz-type').value = params.get('biz_type');
        $('search-biz-id').value = params.get('biz_id');
        $('search-user-id').value = params.get('user_id');
        findMessage({ biz_type: params.get('biz_type'), biz_id: params.get('biz_id'), user_id: params.get('user_id') });
      }
    }
    if (page === 'dead-letters' && !deadLoaded && paused !== 'forgotten') loadDeadLetters(null, []);
  }

  // ---- overview ----
  const samples = new Map(); // channel -> [{t, total, failed}] since this page was opened
  let refreshTimer = null;
  let refreshing = false;
  let refreshAgain = false; // asked for while a refresh was in flight (a new key, say)
  let overviewGeneration = 0; // bumped by Forget: an answer to an older refresh is dropped
  // The key was refused GET /v1/channels (it lacks `ops`): not asked again, and so not a 403
  // in herald's log every 5 s, until a key is used or Refresh is pressed.
  let channelsWithheld = false;

  // body[data-refresh] says whether an auto-refresh is scheduled ("scheduled" / "stopped").
  function stopRefresh() {
    clearTimeout(refreshTimer);
    refreshTimer = null;
    document.body.dataset.refresh = 'stopped';
  }

  function scheduleRefresh() {
    stopRefresh();
    if ($('auto-refresh').checked && parseHash().page === 'overview' && !paused) {
      refreshTimer = setTimeout(refreshOverview, REFRESH_MS);
      document.body.dataset.refresh = 'scheduled';
    }
  }

  async function refreshOverview() {
    if (refreshing) {
      refreshAgain = true;
      return;
    }
    refreshing = true;
    refreshAgain = false;
    stopRefresh();
    const generation = overviewGeneration;
    const errors = [];
    let shown = 0;
    let answers = null;
    try {
      const from = new Date(Date.now() - 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
      answers = await Promise.allSettled([
        api('GET', '/v1/stats?from=' + encodeURIComponent(from)),
        channelsWithheld ? Promise.resolve(null) : api('GET', '/v1/channels'),
      ]);
    } finally {
      refreshing = false;
    }
    if (generation !== overviewGeneration) { // Forget came meanwhile: this answer is not shown
      if (refreshAgain && !paused && parseHash().page === 'overview') refreshOverview();
      return;
    }
    const [stats, channels] = answers;
    try {
      if (stats.status === 'fulfilled') {
        renderStats(stats.value.body);
        shown++;
      } else {
        errors.push('Task counts: ' + stats.reason.message);
      }
      if (channels.status === 'fulfilled' && channels.value === null) {
        renderChannelsWithheld();
      } else if (channels.status === 'fulfilled') {
        recordSamples(channels.value.body);
        renderChannels(channels.value.body);
        shown++;
      } else if (channels.reason.status === 403) {
        if (!refreshAgain) channelsWithheld = true; // else the answer is an older key's
        renderChannelsWithheld();
      } else {
        errors.push('Channels: ' + channels.reason.message);
      }
    } catch (e) {
      errors.push('Cannot show the answer: ' + e.message);
    }
    // A refused key stays refused: polling again would only repeat the 401 (or 403), so
    // auto-refresh stops until a key is used or Refresh is pressed. (With refreshAgain set, a
    // new key came meanwhile: the refresh that follows decides.) A key without `ops` still
    // reads the task counts: only the channels are withheld, and polling goes on.
    const rejected = (answer, status) => answer.status === 'rejected' && answer.reason.status === status;
    const refused = rejected(stats, 401) || rejected(channels, 401) || rejected(stats, 403);
    if (!refreshAgain) {
      if (refused) {
        paused = 'refused';
        if ($('auto-refresh').checked) errors.push('Auto-refresh stopped until a key is used or Refresh is pressed.');
      } else if (paused === 'refused') {
        paused = null;
      }
    }
    showError($('overview-error'), errors.join(' '));
    if (shown > 0) {
      const now = new Date();
      $('updated-at').textContent = now.toLocaleTimeString('en-GB', { hour12: false });
      $('updated-at').setAttribute('datetime', now.toISOString());
      document.body.dataset.overviewLoaded = String(Number(document.body.dataset.overviewLoaded || 0) + 1);
    }
    if (refreshAgain && parseHash().page === 'overview') refreshOverview();
    else scheduleRefresh();
  }

  function recordSamples(body) {
    const t = performance.now() / 1000;
    for (const channel of body.channels || []) {
      const calls = channel.provider_calls || {};
      const total = OUTCOMES.reduce((sum, o) => sum + (calls[o] || 0), 0);
      const failed = total - (calls.success || 0);
      let list = samples.get(channel.channel) || [];
      if (list.length && total < list[list.length - 1].total) list = []; // the node restarted
      list.push({ t, total, failed });
      if (list.length > MAX_SAMPLES) list.shift();
      samples.set(channel.channel, list);
    }
  }

  // Per interval between two samples: calls per second, and the share of calls that failed
  // (null when there were none).
  function rates(channel) {
    const list = samples.get(channel) || [];
    const out = [];
    for (let i = 1; i < list.length; i++) {
      const dt = Math.max(list[i].t - list[i - 1].t, 0.001);
      const calls = list[i].total - list[i - 1].total;
      out.push({ send: calls / dt, failure: calls > 0 ? (list[i].failed - list[i - 1].failed) / calls : null });
    }
    return out;
  }

  function sparkline(values, label, format, bad) {
    const width = 120, height = 28, pad = 2;
    const box = svg('svg', { width, height, viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': label });
    box.append(svg('title', { text: label + (values.length ? '; peak ' + format(Math.max(...values)) : '') }));
    box.append(svg('line', { class: 'spark-base', x1: 0, y1: height - pad, x2: width, y2: height - pad }));
    if (values.length < 2) return box;
    const max = Math.max(...values, 1e-9);
    const step = (width - 2 * pad) / (values.length - 1);
    const x0 = pad;
    const points = values.map((v, i) =>
      (x0 + i * step).toFixed(1) + ',' + (height - pad - (v / max) * (height - 2 * pad)).toFixed(1));
    const first = x0.toFixed(1), last = (x0 + step * (values.length - 1)).toFixed(1);
    box.append(svg('polygon', { class: 'spark-area' + (bad ? ' bad' : ''),
      points: first + ',' + (height - pad) + ' ' + points.join(' ') + ' ' + last + ',' + (height - pad) }));
    box.append(svg('polyline', { class: 'spark-line' + (bad ? ' bad' : ''), points: points.join(' ') }));
    return box;
  }

  function renderChannels(body) {
    $('retry-queue-depth').textContent = fmtInt(body.retry_queue_depth);
    const list = body.channels || [];
    const open = list.filter((c) => c.circuit !== 'closed').map((c) => c.channel);
    $('open-circuits').textContent = open.length ? open.join(', ') : 'none';
    $('open-circuits').classList.toggle('bad', open.length > 0);
    fillChannelFilter(list.map((c) => c.channel));
    const rows = list.map((c) => {
      const name = c.channel;
      const calls = c.provider_calls || {};
      const r = rates(name);
      const latest = r.length ? r[r.length - 1] : null;
      const sendText = latest ? latest.send.toFixed(1) + '/s' : '—';
      const failText = latest ? (latest.failure === null ? 'no calls' : fmtPct(latest.failure)) : '—';
      return el('tr', { 'data-testid': 'channel-row', 'data-channel': name },
        el('th', { scope: 'row' }, name),
        el('td', { 'data-testid': 'circuit-' + name }, badge('c', c.circuit)),
        OUTCOMES.map((o) => el('td', { class: 'num' + (calls[o] ? '' : ' zero'), 'data-testid': 'calls-' + name + '-' + o }, fmtInt(calls[o] || 0))),
        el('td', {}, el('div', { class: 'spark' },
          sparkline(r.map((x) => x.send), name + ' send rate, calls per second', (v) => v.toFixed(1) + '/s'),
          el('span', { class: 'spark-value', 'data-testid': 'send-rate-' + name }, sendText))),
        el('td', {}, el('div', { class: 'spark' },
          sparkline(r.map((x) => x.failure || 0), name + ' failure rate, share of calls', fmtPct, true),
          el('span', { class: 'spark-value', 'data-testid': 'failure-rate-' + name }, failText))));
    });
    if (!rows.length) rows.push(el('tr', {}, el('td', { class: 'empty', colspan: 9 }, 'No channels configured.')));
    $('channels-body').replaceChildren(...rows);
  }

  // GET /v1/channels needs the ops scope: node-wide figures, every tenant's.
  function renderChannelsWithheld() {
    samples.clear();
    for (const id of ['retry-queue-depth', 'open-circuits']) {
      $(id).textContent = '—';
      $(id).classList.remove('bad');
    }
    $('channels-body').replaceChildren(el('tr', {}, el('td', { class: 'empty', colspan: 9, 'data-testid': 'channels-withheld' },
      'Circuits, provider calls and the retry queue are shown to a key with the ops scope.')));
  }

  function stateChart(total) {
    const rowH = 18, labelW = 92, barW = 170, countW = 50;
    const width = labelW + barW + countW;
    const max = Math.max(1, ...STATES.map((s) => total[s] || 0));
    const chart = svg('svg', { width, height: STATES.length * rowH, role: 'img',
      'aria-label': 'tasks per state, all channels' });
    STATES.forEach((state, i) => {
      const y = i * rowH;
      const count = total[state] || 0;
      chart.append(
        svg('text', { x: 0, y: y + 13, text: state.toUpperCase() }),
        svg('rect', { class: 'bar-bg', x: labelW, y: y + 3, width: barW, height: rowH - 6, rx: 2 }),
        svg('rect', { class: 'fill-' + state, x: labelW, y: y + 3, width: count ? Math.max(2, (count / max) * barW) : 0, height: rowH - 6, rx: 2 }),
        svg('text', { class: 'count', x: width - 4, y: y + 13, 'text-anchor': 'end', text: fmtInt(count) }));
    });
    return chart;
  }

  function stackedBar(counts) {
    const width = 96, height = 10;
    const sum = STATES.reduce((s, st) => s + (counts[st] || 0), 0);
    const bar = svg('svg', { width, height, role: 'img', 'aria-label': 'share of tasks per state' });
    bar.append(svg('rect', { class: 'bar-bg', x: 0, y: 0, width, height, rx: 2 }));
    let x = 0;
    for (const state of STATES) {
      const w = sum ? ((counts[state] || 0) / sum) * width : 0;
      if (w > 0) bar.append(svg('rect', { class: 'fill-' + state, x: x.toFixed(2), y: 0, width: w.toFixed(2), height },
        svg('title', { text: state.toUpperCase() + ': ' + counts[state] })));
      x += w;
    }
    return bar;
  }

  // The API's delivery_rate: null where no receipt settled a task (a channel without receipts);
  // once something was sent the cell says why rather than stay blank.
  function deliveryRate(counts) {
    if (counts.delivery_rate === null && (counts.sent || 0) > 0) return 'no receipts';
    return fmtPct(counts.delivery_rate);
  }

  function renderStats(body) {
    const total = body.total || {};
    const channels = body.channels || [];
    $('total-messages').textContent = fmtInt(total.messages);
    $('total-accepted').textContent = fmtInt(total.accepted);
    const sent = ['sent', 'delivered', 'read', 'clicked', 'undelivered', 'unconfirmed'].reduce((n, st) => n + (total[st] || 0), 0);
    $('total-sent').textContent = fmtInt(sent);
    $('total-sent-note').textContent = total.accepted ? fmtPct(sent / total.accepted) + ' of accepted, taken by the provider' : 'taken by the provider';
    const bad = (total.failed || 0) + (total.dead || 0);
    $('total-failed-dead').textContent = fmtInt(bad);
    $('total-failed-dead').classList.toggle('bad', bad > 0);
    $('state-chart').replaceChildren(stateChart(total));

    const columns = [{ name: 'total', counts: total }].concat(channels.map((c) => ({ name: c.channel, counts: c })));
    $('states-head').replaceChildren(el('th', { scope: 'col' }, 'State'),
      ...columns.map((c) => el('th', { scope: 'col', class: 'num' }, c.name === 'total' ? 'All channels' : c.name)));
    const row = (label, cls, cell) => el('tr', { class: cls }, el('th', { scope: 'row' }, label), columns.map(cell));
    const rows = [
      row('accepted', 'total-row', (c) => el('td', { class: 'num', 'data-testid': 'stat-' + c.name + '-accepted' }, fmtInt(c.counts.accepted))),
      row('mix', '', (c) => el('td', { class: 'num' }, stackedBar(c.counts))),
    ];
    for (const state of STATES) {
      rows.push(row(badge('s', state.toUpperCase()), '', (c) => {
        const n = c.counts[state] || 0;
        return el('td', { class: 'num' + (n ? '' : ' zero'), 'data-testid': 'stat-' + c.name + '-' + state }, fmtInt(n));
      }));
    }
    rows.push(row('delivery rate', '', (c) => el('td', { class: 'num', 'data-testid': 'stat-' + c.name + '-delivery_rate',
      title: 'delivered, read or clicked ÷ sent (receipts confirm delivery)' }, deliveryRate(c.counts))));
    $('states-body').replaceChildren(...rows);
    fillChannelFilter(channels.map((c) => c.channel));
  }

  // ---- messages ----
  let messageSearch = 0; // only the latest search's answer is shown

  async function findMessage(query) {
    const mine = ++messageSearch;
    const result = $('message-result');
    showError($('message-error'), '');
    result.replaceChildren(el('p', { class: 'muted' }, 'Looking…'));
    const path = query.id
      ? '/v1/messages/' + encodeURIComponent(query.id)
      : '/v1/messages?' + ['biz_type', 'biz_id', 'user_id'].map((f) => f + '=' + encodeURIComponent(query[f])).join('&');
    try {
      const { body } = await api('GET', path);
      if (mine !== messageSearch) return;
      result.replaceChildren(renderMessage(body));
    } catch (e) {
      if (mine !== messageSearch) return;
      result.replaceChildren();
      showError($('message-error'), e.message);
    }
  }

  function renderMessage(m) {
    const fact = (label, value, testid) => [el('dt', {}, label), el('dd', { 'data-testid': testid }, value === undefined || value === null || value === '' ? '—' : value)];
    const template = m.template ? m.template.code + (m.template.version ? ' v' + m.template.version : '') + ' (' + m.template.source + ')' : 'literal content';
    const card = el('div', { class: 'message-card', 'data-testid': 'message-card' },
      el('h2', {}, 'Message ', el('span', { class: 'mono', 'data-testid': 'message-id' }, m.message_id)),
      el('dl', { class: 'facts' },
        fact('biz_type', m.biz_type, 'message-biz-type'), fact('biz_id', m.biz_id, 'message-biz-id'),
        fact('user_id', m.user_id, 'message-user-id'), fact('tenant', m.tenant, 'message-tenant'),
        fact('category', m.category, 'message-category'), fact('priority', m.priority, 'message-priority'),
        fact('created', fmtTime(m.created_at), 'message-created'), fact('trace id', m.trace_id, 'message-trace'),
        fact('template', template, 'message-template'), fact('tasks', String((m.tasks || []).length), 'message-task-count')),
      el('div', { class: 'message-text' },
        el('div', { class: 'title', 'data-testid': 'message-title' }, m.title || '(no title)'),
        el('pre', { 'data-testid': 'message-body' }, m.body || '')));
    const tasks = el('div', { class: 'tasks', 'data-testid': 'tasks' }, (m.tasks || []).map(renderTask));
    return el('div', {}, card, el('h2', {}, 'Tasks'), tasks);
  }

  function renderTask(t) {
    const events = [];
    const add = (at, order, kind, title, detail, testid) => events.push({ at: at || '', order, kind, title, detail, testid });
    add(t.created_at, 0, 'created', 'created', 'accepted as PENDING' + (t.content ? ', with a text of its own' : ''));
    if (t.policy_reason) {
      if (t.status === 'SUPPRESSED') add(t.created_at, 1, 'policy', 'suppressed by policy', 'reason: ' + t.policy_reason, 'policy');
      else add(t.created_at, 1, 'policy', 'deferred by policy', 'reason: ' + t.policy_reason + (t.send_at ? '; held until ' + fmtTime(t.send_at) : ''), 'policy');
    } else if (t.send_at) {
      add(t.created_at, 1, 'policy', 'scheduled', 'held until ' + fmtTime(t.send_at), 'policy');
    }
    for (const a of t.attempt_log || []) {
      const ms = a.started_at && a.finished_at ? Math.max(0, Date.parse(a.finished_at) - Date.parse(a.started_at)) : null;
      add(a.started_at, 2, 'attempt', ['attempt ' + a.attempt_no + ' ', badge('o', a.outcome)],
        (a.detail || '') + (ms === null ? '' : ' (' + ms + ' ms)'), 'attempt');
    }
    for (const r of t.receipts || []) {
      add(r.received_at, 3, 'receipt', ['receipt ', badge('s', String(r.status).toUpperCase()), ' via ' + r.source],
        'provider time ' + fmtTime(r.occurred_at) + (r.detail ? ' · ' + r.detail : ''), 'receipt');
    }
    if (t.next_attempt_at) add(t.next_attempt_at, 4, 'retry', 'next attempt due', 'retry scheduled', 'retry');
    events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.order - b.order));
    add(t.updated_at, 9, 'now', ['now ', badge('s', t.status)], 'last change ' + fmtTime(t.updated_at), 'now');

    const timeline = el('ol', { class: 'timeline', 'data-testid': 'timeline' }, events.map((e) =>
      el('li', { class: 'ev-' + e.kind, 'data-testid': 'timeline-' + (e.testid || e.kind) },
        el('div', {}, el('span', { class: 'ev-title' }, e.title), ' ', el('span', { class: 'ev-time' }, e.kind === 'now' ? '' : fmtTime(e.at))),
        e.detail ? el('div', { class: 'ev-detail' }, e.detail) : null)));

    return el('article', { class: 'task-card', 'data-testid': 'task-' + t.channel, 'data-task-id': t.task_id, 'data-status': t.status },
      el('div', { class: 'task-head' }, el('span', { class: 'channel' }, t.channel), badge('s', t.status),
        el('span', { class: 'muted', 'data-testid': 'task-attempts' }, (t.attempts || 0) + (t.attempts === 1 ? ' attempt' : ' attempts'))),
      el('dl', { class: 'task-meta' },
        el('dt', {}, 'task'), el('dd', { class: 'mono' }, t.task_id),
        el('dt', {}, 'to'), el('dd', {}, t.recipient || '—'),
        t.provider_request_id ? [el('dt', {}, 'request id'), el('dd', { class: 'mono' }, t.provider_request_id)] : null,
        t.provider_message_id ? [el('dt', {}, 'provider id'), el('dd', { class: 'mono' }, t.provider_message_id)] : null),
      t.last_error ? el('div', { class: 'error', 'data-testid': 'task-last-error' }, 'last error: ' + t.last_error) : null,
      t.content ? el('div', { class: 'message-text' }, el('div', { class: 'title' }, t.content.title || '(no title)'), el('pre', {}, t.content.body || '')) : null,
      timeline);
  }

  // ---- dead letters ----
  let deadPage = { after: null, previous: [], next: null };
  let deadLoad = 0; // only the latest listing's answer is shown

  function fillChannelFilter(names) {
    const select = $('dead-channel');
    const have = new Set(Array.from(select.options, (o) => o.value));
    for (const name of names) if (!have.has(name)) select.append(el('option', { value: name }, name));
  }

  async function loadDeadLetters(after, previous) {
    const params = new URLSearchParams({ limit: $('dead-limit').value });
    if ($('dead-channel').value) params.set('channel', $('dead-channel').value);
    if (after) params.set('after', after);
    const mine = ++deadLoad;
    showError($('dead-error'), '');
    $('dead-body').replaceChildren(el('tr', {}, el('td', { class: 'empty', colspan: 8 }, 'Loading…')));
    try {
      const { body } = await api('GET', '/v1/dead-letters?' + params);
      if (mine !== deadLoad) return;
      deadLoaded = true;
      deadPage = { after, previous, next: body.next_after || null };
      const rows = (body.dead_letters || []).map(deadRow);
      if (!rows.length) rows.push(el('tr', {}, el('td', { class: 'empty', colspan: 8 }, 'No dead letters' + (after ? ' on this page.' : '.'))));
      $('dead-body').replaceChildren(...rows);
      $('dead-page-info').textContent = 'Page ' + (previous.length + 1) + ' · ' + (body.dead_letters || []).length + ' shown' + (deadPage.next ? ' · more may follow' : ' · last page');
    } catch (e) {
      if (mine !== deadLoad) return;
      $('dead-body').replaceChildren();
      $('dead-page-info').textContent = '';
      showError($('dead-error'), e.message);
    }
    $('dead-next').disabled = !deadPage.next;
    $('dead-first').disabled = !deadPage.after;
  }

  function deadRow(t) {
    const result = el('span', { class: 'replay-result', 'data-testid': 'replay-result', 'aria-live': 'polite' });
    const note = (cls, text) => {
      result.querySelector('.pending')?.remove();
      result.append(el('span', { class: 'line ' + cls }, text));
    };
    const status = el('td', { 'data-testid': 'dead-status' }, badge('s', t.status));
    const button = el('button', { type: 'button', class: 'small', 'data-testid': 'replay-button', 'aria-label': 'Replay ' + t.task_id }, 'Replay');
    button.addEventListener('click', async () => {
      button.disabled = true;
      result.removeAttribute('data-status');
      note('pending', 'replaying…');
      try {
        const { status: code, body } = await api('POST', '/v1/dead-letters/' + encodeURIComponent(t.task_id) + '/replay');
        note('ok', code + ': replayed, now ' + body.status);
        result.dataset.status = String(code);
        status.replaceChildren(badge('s', body.status));
      } catch (e) {
        note('bad', e.status === 409 ? '409: not replayable: ' + e.message.replace(/ \(409 not_replayable\)$/, '') : e.message);
        result.dataset.status = String(e.status);
      }
      button.disabled = false;
    });
    const messageLink = t.message_id
      ? el('a', { href: '#messages?id=' + encodeURIComponent(t.message_id), class: 'mono small', title: 'show the message and its tasks' }, t.message_id) : '—';
    return el('tr', { 'data-testid': 'dead-row', 'data-task-id': t.task_id, 'data-channel': t.channel },
      el('td', { class: 'nowrap' }, el('div', { class: 'mono small' }, t.task_id), el('div', { class: 'sub' }, 'of ', messageLink)),
      el('td', {}, t.channel), status,
      el('td', {}, t.recipient || '—'), el('td', { class: 'num' }, fmtInt(t.attempts)),
      el('td', { class: 'cell-error' }, t.last_error || '—'),
      el('td', { class: 'nowrap', title: t.updated_at }, fmtTime(t.updated_at).replace(/\.\d+Z$/, '')),
      el('td', { class: 'replay-cell' }, button, result));
  }

  // ---- Forget: the views' data goes with the key ----
  function resume() {
    paused = null;
    channelsWithheld = false;
    showBanner('');
  }

  function showBanner(message) {
    const banner = $('banner');
    banner.classList.toggle('info', Boolean(message));
    showError(banner, message);
  }

  // Clears what the pages show (answers still in flight are dropped), stops auto-refresh, and
  // loads nothing by itself until a key is used or the user asks (Refresh, Find, Show).
  function forgetViews() {
    paused = 'forgotten';
    overviewGeneration++;
    stopRefresh();
    samples.clear();
    for (const id of ['total-messages', 'total-accepted', 'total-sent', 'total-failed-dead', 'retry-queue-depth', 'open-circuits', 'updated-at']) {
      $(id).textContent = '—';
      $(id).classList.remove('bad');
    }
    $('updated-at').removeAttribute('datetime');
    $('total-sent-note').textContent = 'taken by the provider';
    for (const id of ['channels-body', 'state-chart', 'states-head', 'states-body']) $(id).replaceChildren();
    showError($('overview-error'), '');

    messageSearch++;
    for (const id of ['search-message-id', 'search-biz-type', 'search-biz-id', 'search-user-id']) $(id).value = '';
    $('message-result').replaceChildren();
    showError($('message-error'), '');

    deadLoad++;
    deadLoaded = false;
    deadPage = { after: null, previous: [], next: null };
    $('dead-body').replaceChildren();
    $('dead-page-info').textContent = '';
    showError($('dead-error'), '');
    $('dead-next').disabled = true;
    $('dead-first').disabled = true;

    const { page } = parseHash();
    if (location.hash.includes('?')) history.replaceState(null, '', '#' + page); // a search's key
    showBanner('Key forgotten: the pages were cleared and nothing is loaded or refreshed until a key is used (or Refresh, Find or Show is pressed).');
  }

  // ---- wiring ----
  function init() {
    describeKey();
    $('key-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const key = $('key-input').value.trim();
      if (key) sessionStorage.setItem(KEY_STORAGE, key);
      else sessionStorage.removeItem(KEY_STORAGE);
      $('key-input').value = '';
      describeKey();
      resume();
      deadLoaded = false;
      route();
    });
    $('key-forget').addEventListener('click', () => {
      sessionStorage.removeItem(KEY_STORAGE);
      $('key-input').value = '';
      describeKey();
      forgetViews();
    });
    $('refresh-now').addEventListener('click', () => {
      resume();
      refreshOverview();
    });
    $('auto-refresh').addEventListener('change', scheduleRefresh);
    $('search-id-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const id = $('search-message-id').value.trim();
      if (id) history.replaceState(null, '', '#messages?' + new URLSearchParams({ id }));
      findMessage({ id });
    });
    $('search-key-form').addEventListener('submit', (e) => {
      e.preventDefault();
      // biz_type cannot hold a space (A-Z a-z 0-9 _ . : -), so a pasted one is trimmed; biz_id
      // and user_id may begin or end with spaces (any text without control characters), and
      // the business key is matched exactly, so they are sent as typed.
      const query = { biz_type: $('search-biz-type').value.trim(), biz_id: $('search-biz-id').value, user_id: $('search-user-id').value };
      history.replaceState(null, '', '#messages?' + new URLSearchParams(query));
      findMessage(query);
    });
    $('dead-filter').addEventListener('submit', (e) => {
      e.preventDefault();
      loadDeadLetters(null, []);
    });
    $('dead-first').addEventListener('click', () => loadDeadLetters(null, []));
    $('dead-next').addEventListener('click', () => {
      if (deadPage.next) loadDeadLetters(deadPage.next, deadPage.previous.concat([deadPage.after]));
    });
    window.addEventListener('hashchange', route);
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && parseHash().page === 'overview' && !paused) refreshOverview();
    });
    route();
  }

  init();
})();
