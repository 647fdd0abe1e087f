#!/usr/bin/env node
// End-to-end test of the operator console (/console) in Debian's headless Chromium.
//
// Starts the built herald ($HERALD_BINARY, default build/herald) on a free port with a
// throwaway SQLite database, API keys, and simulated channels that fail some tasks (sms: busy,
// retries exhausted -> DEAD; email: recipient rejected -> FAILED; pager: every call rejected,
// and one call per 1000 s), submits messages over HTTP, then drives the console: the overview's
// numbers against GET /v1/stats and GET /v1/channels, a message found by business key with its
// task timelines, the dead letters with filter and paging, replays (an email task: 202 and sent
// once more; the pager task: 202, then 409 as its call waits for the rate limit), a key without
// the admin scope (403), and Forget (the views cleared, nothing loaded or polled after it).
// No console errors, page errors or CSP violations may be reported, and the browser may meet
// exactly the error answers the test provokes.
//
//   node tests/web/console_test.mjs [SCREENSHOT_DIR] [--update-docs]
//
// Screenshots of each page go to SCREENSHOT_DIR (or $CONSOLE_SCREENSHOTS, else a temp dir).
// With --update-docs (or CONSOLE_UPDATE_DOCS=1) they are also written to docs/console/*.png,
// the copies kept in the repository. Every wait is on a condition, with a bound.
import { chromium } from 'playwright-core';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort, send, sleep, until } from './support.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const binary = process.env.HERALD_BINARY || path.join(repo, 'build', 'herald');
const args = process.argv.slice(2);
const updateDocs = args.includes('--update-docs') || process.env.CONSOLE_UPDATE_DOCS === '1';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-console-'));
const shotDir = args.find((a) => !a.startsWith('--')) || process.env.CONSOLE_SCREENSHOTS ||
  path.join(work, 'screenshots');
fs.mkdirSync(shotDir, { recursive: true });

const WAVES = 4;
const PER_WAVE = 10;
const ROUTED = ['app', 'email', 'sms']; // the channels of ORDER_SHIPPED
const CHANNELS = ROUTED.concat(['pager']);
const REFRESH_MS = 5000; // the overview's auto-refresh period (console.js)
const STATES = ['pending', 'sending', 'retry_wait', 'sent', 'delivered', 'read', 'clicked',
  'undelivered', 'unconfirmed', 'failed', 'dead', 'expired', 'suppressed'];
const OUTCOMES = ['success', 'retryable', 'permanent', 'timeout', 'throttled'];
const XSS_TITLE = '<img src=x onerror="window.__pwned=1">';
const XSS_BODY = 'Hello <script>window.__pwned=2</script>\nsecond line & "quotes"';

let failures = 0;
let herald = null;
let browser = null;
const heraldOutput = [];

function check(condition, what, detail) {
  if (condition) {
    console.log('ok - ' + what);
  } else {
    failures++;
    console.log('not ok - ' + what + (detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  }
  return condition;
}

function fail(message) {
  throw new Error(message);
}

// ---- herald ----
const port = await freePort();
const base = 'http://127.0.0.1:' + port;
const dbUrl = 'sqlite:' + path.join(work, 'herald.db');
const configPath = path.join(work, 'herald.json');
fs.writeFileSync(configPath, JSON.stringify({
  listen: '127.0.0.1:' + port,
  auth: { mode: 'api_keys' },
  database: dbUrl,
  log_level: 'warn',
  drain_timeout_ms: 5000,
  channels: [
    // Busy 30 % of the time, two calls at most: some tasks end DEAD.
    { name: 'sms', type: 'simulated', retryable_failure_rate: 0.3, seed: 7,
      retry: { schedule_ms: [50], jitter: 0, max_attempts: 2 }, circuit: { failure_threshold: 1000 } },
    // A quarter of the recipients rejected: FAILED.
    { name: 'email', type: 'simulated', permanent_failure_rate: 0.25, latency_ms: 20, seed: 11 },
    { name: 'app', type: 'simulated', latency_ms: 5 },
    // One task, rejected: FAILED at its first call, which takes the bucket's only token. Tokens
    // come back at 0.001/s, so once replayed the task waits PENDING for ~1000 s, whatever the
    // machine's speed, and a second replay meets 409 not_replayable.
    { name: 'pager', type: 'simulated', permanent_failure_rate: 1, rate_per_sec: 0.001, burst: 1 },
  ],
  routes: { ORDER_SHIPPED: ['sms', 'email', 'app'] },
  default_route: ['app'],
  templates: { order_shipped: { title: 'Your order has shipped', body: 'Order ${order_no} is on its way.' } },
}, null, 2));

function createKey(scopes) {
  return execFileSync(binary, ['keys', 'create', '--tenant', 't1', '--scopes', scopes,
    '--config', configPath, '--db', dbUrl], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

// {status, headers, body (text), json}
function call(method, urlPath, { key, body } = {}) {
  return send(port, method, urlPath, { headers: key ? { Authorization: 'Bearer ' + key } : {}, body });
}

async function stopHerald() {
  if (!herald || herald.exitCode !== null) return;
  const exited = new Promise((resolve) => herald.once('exit', resolve));
  herald.kill('SIGTERM');
  const timer = setTimeout(() => herald.kill('SIGKILL'), 15000);
  await exited;
  clearTimeout(timer);
}

async function main() {
  check(fs.existsSync(binary), 'herald binary exists at ' + binary);
  const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(chromiumPath)) fail('could not find executable ' + chromiumPath + ' (Chromium; set CHROMIUM)');
  const fullKey = createKey('submit,read,admin,ops');
  const readKey = createKey('read');
  check(/^hk_/.test(fullKey) && /^hk_/.test(readKey), 'herald keys create printed two keys');

  herald = spawn(binary, ['serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  herald.stdout.on('data', (d) => heraldOutput.push(String(d)));
  herald.stderr.on('data', (d) => heraldOutput.push(String(d)));
  await until('herald to answer /healthz', async () => (await call('GET', '/healthz')).status === 200, 20000);

  // The console's files, as served.
  const index = await call('GET', '/console');
  check(index.status === 200 && /text\/html/.test(index.headers['content-type']), 'GET /console is HTML', index.status);
  const csp = index.headers['content-security-policy'] || '';
  check(/script-src 'self'/.test(csp) && /style-src 'self'/.test(csp) && !/unsafe-inline/.test(csp), 'the console has a strict CSP', csp);
  const js = await call('GET', '/console/console.js');
  check(js.status === 200 && /javascript/.test(js.headers['content-type']), 'GET /console/console.js is JavaScript');
  const css = await call('GET', '/console/console.css');
  check(css.status === 200 && /text\/css/.test(css.headers['content-type']), 'GET /console/console.css is CSS');
  check(!/<script>|<style>|\sstyle=/.test(index.body.replace(/<script src="[^"]+" defer><\/script>/, '')), 'index.html has no inline script or style');

  // ---- the browser ----
  browser = await chromium.launch({
    executablePath: chromiumPath,
    // /dev/shm is small in containers; Chromium's shared memory goes to /tmp instead.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic',
      '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const consoleProblems = [];
  // The browser logs every error answer ("Failed to load resource: the server responded with a
  // status of 404"); those statuses are compared with the error answers the page received, which
  // must be exactly the ones the test provokes (checked at the end).
  const loggedStatuses = [];
  page.on('console', (message) => {
    if (message.type() !== 'error' && message.type() !== 'warning') return;
    const text = message.text();
    const status = /^Failed to load resource: the server responded with a status of (\d+)/.exec(text);
    if (status) loggedStatuses.push(Number(status[1]));
    else consoleProblems.push(message.type() + ': ' + text);
  });
  const errorAnswers = []; // "STATUS METHOD /path" of every answer >= 400 the page received
  page.on('response', (response) => {
    if (response.status() >= 400)
      errorAnswers.push(response.status() + ' ' + response.request().method() + ' ' + new URL(response.url()).pathname);
  });
  const apiRequests = []; // every /v1 request the page made, in order
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/v1/')) apiRequests.push(request.method() + ' ' + url.pathname);
  });
  page.on('pageerror', (error) => consoleProblems.push('pageerror: ' + error.message));
  // CSP violations are also reported as console errors; this catches any the console misses.
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
  });
  const overviewLoads = () => page.evaluate(() => Number(document.body.dataset.overviewLoaded || 0));
  const shot = async (name) => {
    const file = path.join(shotDir, name + '.png');
    await page.screenshot({ path: file, fullPage: true });
    if (updateDocs) {
      fs.mkdirSync(path.join(repo, 'docs', 'console'), { recursive: true });
      fs.copyFileSync(file, path.join(repo, 'docs', 'console', name + '.png'));
    }
    console.log('# screenshot ' + file);
  };

  // Without a key: the API answers 401 and the console says so.
  await page.goto(base + '/console');
  await page.waitForSelector('#overview-error:not([hidden])', { timeout: 10000 });
  const noKey = await page.evaluate(() => ({ error: document.getElementById('overview-error').textContent, refresh: document.body.dataset.refresh }));
  check(/401/.test(noKey.error), 'without a key the overview shows the 401', noKey.error);
  check(noKey.refresh === 'stopped' && /Auto-refresh stopped/.test(noKey.error), 'after a 401 the overview stops polling and says so', noKey);

  // The key: typed into the form, kept in sessionStorage only.
  await page.fill('#key-input', fullKey);
  await page.click('#key-save');
  await page.waitForFunction(() => Number(document.body.dataset.overviewLoaded || 0) >= 1 &&
    document.getElementById('overview-error').hidden && document.body.dataset.refresh === 'scheduled', null, { timeout: 10000 });
  const stored = await page.evaluate(() => ({ session: Object.values(sessionStorage), local: Object.keys(localStorage).length, cookie: document.cookie }));
  check(stored.session.includes(fullKey) && stored.local === 0 && stored.cookie === '', 'the key is kept in sessionStorage only');
  check(await page.inputValue('#key-input') === '', 'the key field is cleared after use');

  // Submit the messages in waves while the overview samples /v1/channels (its sparklines).
  const submitted = [];
  for (let wave = 0; wave < WAVES; wave++) {
    const loads = await overviewLoads();
    const answers = await Promise.all(Array.from({ length: PER_WAVE }, (_, i) => {
      const n = wave * PER_WAVE + i + 1;
      const event = {
        biz_type: 'ORDER_SHIPPED', biz_id: 'order-2026-' + String(n).padStart(4, '0'), user_id: 'u-' + n,
        to: { sms: '+86138' + String(n).padStart(8, '0'), email: 'user' + n + '@example.com', app: 'device-token-' + n },
        template: 'order_shipped', params: { order_no: '2026-' + n },
      };
      submitted.push(event);
      return call('POST', '/v1/messages', { key: fullKey, body: event });
    }));
    if (!check(answers.every((a) => a.status === 202), 'wave ' + (wave + 1) + ': ' + PER_WAVE + ' messages accepted (202)', answers.map((a) => a.status)))
      fail('submissions refused: ' + answers.find((a) => a.status !== 202).text);
    await page.waitForFunction((n) => Number(document.body.dataset.overviewLoaded || 0) > n, loads, { timeout: 15000 });
  }
  const evil = await call('POST', '/v1/messages', { key: fullKey, body: {
    biz_type: 'SUPPORT_REPLY', biz_id: 'ticket-<b>7</b>', user_id: 'u-<i>evil</i>', channels: ['app'],
    to: { app: 'device-token-evil' }, content: { title: XSS_TITLE, body: XSS_BODY } } });
  check(evil.status === 202, 'a message with markup in its text is accepted', evil.status);
  const paged = await call('POST', '/v1/messages', { key: fullKey, body: {
    biz_type: 'MAINTENANCE', biz_id: 'window-2026-12', user_id: 'u-oncall', channels: ['pager'],
    to: { pager: 'pager-0001' }, content: { title: 'Maintenance tonight', body: 'From 01:00 to 02:00 UTC.' } } });
  check(paged.status === 202, 'a message to the pager channel is accepted', paged.status);
  const expectedTasks = WAVES * PER_WAVE * ROUTED.length + 2;
  const expectedMessages = WAVES * PER_WAVE + 2;

  // Everything settles: nothing pending, sending or waiting for a retry.
  const since = new Date(Date.now() - 3600 * 1000).toISOString();
  await until('the tasks to settle', async () => {
    const stats = (await call('GET', '/v1/stats?from=' + encodeURIComponent(since), { key: fullKey })).json;
    const t = stats.total;
    const channels = (await call('GET', '/v1/channels', { key: fullKey })).json;
    return t.accepted === expectedTasks && t.pending + t.sending + t.retry_wait === 0 && channels.retry_queue_depth === 0;
  }, 60000, 250);

  // ---- overview: the page shows what the API answers ----
  const loadsAfterSettle = await overviewLoads();
  await page.click('#refresh-now');
  await page.waitForFunction((n) => Number(document.body.dataset.overviewLoaded || 0) > n, loadsAfterSettle, { timeout: 10000 });
  const shown = await page.evaluate(({ channels, states, outcomes }) => {
    const text = (testid) => {
      const node = document.querySelector('[data-testid="' + testid + '"]');
      return node ? node.textContent.trim() : null;
    };
    const out = { stats: {}, calls: {}, circuit: {}, retryQueue: text('retry-queue-depth'), accepted: text('total-accepted'), messages: text('total-messages'), updatedAt: text('updated-at') };
    for (const column of ['total'].concat(channels)) {
      out.stats[column] = {};
      for (const state of ['accepted'].concat(states)) out.stats[column][state] = text('stat-' + column + '-' + state);
    }
    for (const channel of channels) {
      out.circuit[channel] = text('circuit-' + channel);
      out.calls[channel] = {};
      for (const outcome of outcomes) out.calls[channel][outcome] = text('calls-' + channel + '-' + outcome);
    }
    return out;
  }, { channels: CHANNELS, states: STATES, outcomes: OUTCOMES });
  const statsNow = (await call('GET', '/v1/stats?from=' + encodeURIComponent(new Date(Date.now() - 3600 * 1000).toISOString()), { key: fullKey })).json;
  const channelsNow = (await call('GET', '/v1/channels', { key: fullKey })).json;
  const number = (text) => (text === null ? null : Number(text.replace(/,/g, '')));
  const statMismatches = [];
  for (const column of ['total'].concat(CHANNELS)) {
    const api = column === 'total' ? statsNow.total : statsNow.channels.find((c) => c.channel === column);
    for (const state of ['accepted'].concat(STATES))
      if (!api || number(shown.stats[column][state]) !== api[state]) statMismatches.push([column, state, shown.stats[column][state], api && api[state]]);
  }
  check(statMismatches.length === 0, 'overview: accepted and every state, per channel and in total, equal GET /v1/stats', statMismatches);
  check(number(shown.accepted) === statsNow.total.accepted && statsNow.total.accepted === expectedTasks, 'overview: tasks accepted = ' + expectedTasks, shown.accepted);
  check(number(shown.messages) === statsNow.total.messages && statsNow.total.messages === expectedMessages, 'overview: messages accepted = ' + expectedMessages, shown.messages);
  check(statsNow.total.dead > 0 && statsNow.total.failed > 0, 'the run made DEAD and FAILED tasks', statsNow.total);
  const pagerStats = statsNow.channels.find((c) => c.channel === 'pager');
  check(pagerStats && pagerStats.accepted === 1 && pagerStats.failed === 1, 'the pager task ended FAILED', pagerStats);
  const callMismatches = [];
  for (const channel of CHANNELS) {
    const api = channelsNow.channels.find((c) => c.channel === channel);
    if (!api || shown.circuit[channel] !== api.circuit) callMismatches.push([channel, 'circuit', shown.circuit[channel], api && api.circuit]);
    for (const outcome of OUTCOMES)
      if (!api || number(shown.calls[channel][outcome]) !== api.provider_calls[outcome]) callMismatches.push([channel, outcome, shown.calls[channel][outcome], api && api.provider_calls[outcome]]);
  }
  check(callMismatches.length === 0, 'overview: circuit states and provider calls per outcome equal GET /v1/channels', callMismatches);
  check(number(shown.retryQueue) === channelsNow.retry_queue_depth, 'overview: retry queue depth equals GET /v1/channels', shown.retryQueue);
  check(/^\d\d:\d\d:\d\d$/.test(shown.updatedAt), 'overview: shows when it was updated', shown.updatedAt);
  const sparks = await page.$$eval('#channels-body polyline.spark-line', (lines) => lines.length);
  check(sparks === CHANNELS.length * 2, 'overview: a send-rate and a failure-rate sparkline per channel', sparks);
  await shot('overview');

  // ---- messages: found by business key, with each task's timeline ----
  const deadSms = (await call('GET', '/v1/dead-letters?channel=sms&limit=1000', { key: fullKey })).json.dead_letters.find((t) => t.status === 'DEAD');
  if (!deadSms) fail('no DEAD sms task to look at');
  const message = (await call('GET', '/v1/messages/' + deadSms.message_id, { key: fullKey })).json;
  await page.click('#tab-messages');
  await page.waitForSelector('#page-messages:not([hidden])', { timeout: 5000 });
  await page.fill('#search-biz-type', message.biz_type);
  await page.fill('#search-biz-id', message.biz_id);
  await page.fill('#search-user-id', message.user_id);
  await page.click('[data-testid="search-key-submit"]');
  await page.waitForSelector('[data-testid="message-card"]', { timeout: 10000 });
  const view = await page.evaluate(() => ({
    id: document.querySelector('[data-testid="message-id"]').textContent,
    tasks: Array.from(document.querySelectorAll('[data-testid="tasks"] > article'), (card) => ({
      id: card.dataset.taskId,
      status: card.dataset.status,
      attempts: card.querySelectorAll('[data-testid="timeline-attempt"]').length,
      outcomes: Array.from(card.querySelectorAll('[data-testid="timeline-attempt"] .badge'), (b) => b.textContent),
      created: card.querySelectorAll('[data-testid="timeline-created"]').length,
      now: card.querySelector('[data-testid="timeline-now"] .badge')?.textContent,
      lastError: card.querySelector('[data-testid="task-last-error"]')?.textContent || null,
    })),
  }));
  check(view.id === message.message_id, 'messages: the business key finds ' + message.message_id, view.id);
  const timelineProblems = [];
  check(view.tasks.length === message.tasks.length, 'messages: one timeline per task (' + message.tasks.length + ')', view.tasks.length);
  for (const task of message.tasks) {
    const card = view.tasks.find((c) => c.id === task.task_id);
    if (!card) { timelineProblems.push([task.task_id, 'missing']); continue; }
    if (card.status !== task.status || card.now !== task.status) timelineProblems.push([task.channel, 'status', card.status, task.status]);
    if (card.created !== 1) timelineProblems.push([task.channel, 'created']);
    if (card.attempts !== task.attempt_log.length || card.attempts !== task.attempts) timelineProblems.push([task.channel, 'attempts', card.attempts, task.attempts]);
    if (JSON.stringify(card.outcomes) !== JSON.stringify(task.attempt_log.map((a) => a.outcome))) timelineProblems.push([task.channel, 'outcomes', card.outcomes]);
    if (task.last_error && !(card.lastError || '').includes(task.last_error)) timelineProblems.push([task.channel, 'last_error', card.lastError]);
  }
  check(timelineProblems.length === 0, 'messages: each task shows its status, attempts with outcomes and last error', timelineProblems);
  const smsCard = view.tasks.find((c) => c.id === deadSms.task_id);
  check(smsCard && smsCard.status === 'DEAD' && smsCard.attempts === 2, 'messages: the DEAD sms task shows its two attempts', smsCard);
  await shot('message');

  // Markup in a message is shown as text.
  await page.fill('#search-biz-type', 'SUPPORT_REPLY');
  await page.fill('#search-biz-id', 'ticket-<b>7</b>');
  await page.fill('#search-user-id', 'u-<i>evil</i>');
  await page.click('[data-testid="search-key-submit"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="message-biz-id"]')?.textContent === 'ticket-<b>7</b>', null, { timeout: 10000 });
  const rendered = await page.evaluate(() => ({
    title: document.querySelector('[data-testid="message-title"]').textContent,
    body: document.querySelector('[data-testid="message-body"]').textContent,
    elements: document.querySelectorAll('#message-result img, #message-result script, #message-result b, #message-result i').length,
    pwned: window.__pwned || null,
  }));
  check(rendered.title === XSS_TITLE && rendered.body === XSS_BODY && rendered.elements === 0 && rendered.pwned === null,
    'messages: markup in a message is shown as text, never run', rendered);

  // By id, and a key that finds nothing.
  await page.fill('#search-message-id', message.message_id);
  await page.click('[data-testid="search-id-submit"]');
  const byId = await (await page.waitForFunction(() => {
    const text = (testid) => document.querySelector('[data-testid="' + testid + '"]')?.textContent;
    // Shown once the previous message (the one with markup) is replaced.
    return text('message-biz-id') && text('message-biz-id') !== 'ticket-<b>7</b>'
      ? { id: text('message-id'), bizType: text('message-biz-type'), bizId: text('message-biz-id'), userId: text('message-user-id'),
        tasks: document.querySelectorAll('[data-testid="tasks"] > article').length }
      : null;
  }, null, { timeout: 10000 })).jsonValue();
  check(byId.id === message.message_id && byId.bizType === message.biz_type && byId.bizId === message.biz_id &&
    byId.userId === message.user_id && byId.tasks === message.tasks.length, 'messages: the message id finds the message, with its business key and tasks', byId);
  await page.fill('#search-biz-id', 'no-such-order');
  await page.click('[data-testid="search-key-submit"]');
  await page.waitForSelector('#message-error:not([hidden])', { timeout: 10000 });
  check(/404|no such/i.test(await page.textContent('#message-error')), 'messages: an unknown business key shows the 404', await page.textContent('#message-error'));

  // ---- dead letters: filter, paging, replay ----
  await page.click('#tab-dead-letters');
  await page.waitForSelector('[data-testid="dead-row"]', { timeout: 10000 });
  await page.selectOption('#dead-limit', '10');
  await page.click('[data-testid="dead-apply"]');
  const apiPage1 = (await call('GET', '/v1/dead-letters?limit=10', { key: fullKey })).json;
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="dead-row"]').length === n, apiPage1.dead_letters.length, { timeout: 10000 });
  const rowIds = () => page.$$eval('[data-testid="dead-row"]', (rows) => rows.map((r) => r.dataset.taskId));
  check(JSON.stringify(await rowIds()) === JSON.stringify(apiPage1.dead_letters.map((t) => t.task_id)), 'dead letters: the first page lists what GET /v1/dead-letters answers');
  if (apiPage1.next_after) {
    const apiPage2 = (await call('GET', '/v1/dead-letters?limit=10&after=' + apiPage1.next_after, { key: fullKey })).json;
    await page.click('#dead-next');
    await page.waitForFunction((first) => document.querySelector('[data-testid="dead-row"]')?.dataset.taskId === first || (first === null && document.querySelector('#dead-body td.empty')),
      apiPage2.dead_letters.length ? apiPage2.dead_letters[0].task_id : null, { timeout: 10000 });
    check(JSON.stringify(await rowIds()) === JSON.stringify(apiPage2.dead_letters.map((t) => t.task_id)), 'dead letters: the next page follows next_after');
  } else {
    check(false, 'dead letters: the run made more than 10 dead letters, so there is a second page', apiPage1.dead_letters.length);
  }

  await page.selectOption('#dead-channel', 'email');
  await page.selectOption('#dead-limit', '25');
  await page.click('[data-testid="dead-apply"]');
  const apiEmail = (await call('GET', '/v1/dead-letters?channel=email&limit=25', { key: fullKey })).json.dead_letters;
  await page.waitForFunction((n) => {
    const rows = document.querySelectorAll('[data-testid="dead-row"]');
    return rows.length === n && Array.from(rows).every((r) => r.dataset.channel === 'email');
  }, apiEmail.length, { timeout: 10000 });
  check(JSON.stringify(await rowIds()) === JSON.stringify(apiEmail.map((t) => t.task_id)), 'dead letters: the channel filter shows the email dead letters only (' + apiEmail.length + ')');

  // All channels on one page: the email task and the pager task to replay are both in it.
  await page.selectOption('#dead-channel', '');
  await page.selectOption('#dead-limit', '50');
  await page.click('[data-testid="dead-apply"]');
  const apiAll = (await call('GET', '/v1/dead-letters?limit=50', { key: fullKey })).json;
  if (apiAll.next_after) fail('more than 50 dead letters: the replays are looked for on one page');
  await page.waitForFunction((n) => {
    const rows = Array.from(document.querySelectorAll('[data-testid="dead-row"]'));
    return rows.length === n && rows.some((r) => r.dataset.channel !== 'email');
  }, apiAll.dead_letters.length, { timeout: 10000 });
  check(JSON.stringify(await rowIds()) === JSON.stringify(apiAll.dead_letters.map((t) => t.task_id)), 'dead letters: all channels again (' + apiAll.dead_letters.length + ')');
  const taskOf = async (t) => (await call('GET', '/v1/messages/' + t.message_id, { key: fullKey })).json.tasks.find((x) => x.task_id === t.task_id);
  const replay = async (t) => {
    const row = page.locator('[data-testid="dead-row"][data-task-id="' + t.task_id + '"]');
    const result = row.locator('[data-testid="replay-result"]');
    await row.locator('[data-testid="replay-button"]').click();
    // The click clears data-status at once; it is set again by the answer.
    await row.locator('[data-testid="replay-result"][data-status]').waitFor({ timeout: 10000 });
    return result.evaluate((n) => ({ status: n.dataset.status, text: n.textContent }));
  };

  // An email task: replayed, and sent once more.
  const emailVictim = apiEmail.find((t) => t.status === 'FAILED');
  if (!emailVictim) fail('no FAILED email task to replay');
  const emailReplay = await replay(emailVictim);
  check(emailReplay.status === '202' && /202: replayed, now PENDING/.test(emailReplay.text), 'dead letters: Replay answers 202 in the row', emailReplay);
  const resent = await until('the replayed email task to be called again', async () => {
    const task = await taskOf(emailVictim);
    return ['SENT', 'FAILED'].includes(task.status) && task.attempts === emailVictim.attempts + 1 ? task : null;
  }, 20000, 200);
  check(resent.attempt_log.length === emailVictim.attempts + 1, 'the replayed task was called once more (' + resent.status + ', attempt ' + resent.attempts + ')');

  // The pager task: replayed, then waiting for its channel's next token (~1000 s), so it is
  // PENDING when replayed again: 409.
  const pagerVictim = apiAll.dead_letters.find((t) => t.channel === 'pager');
  if (!pagerVictim || pagerVictim.status !== 'FAILED' || pagerVictim.attempts !== 1) fail('the pager task is not a FAILED dead letter with one attempt: ' + JSON.stringify(pagerVictim));
  const pagerFirst = await replay(pagerVictim);
  check(pagerFirst.status === '202' && /202: replayed, now PENDING/.test(pagerFirst.text), 'dead letters: the pager task is replayed (202)', pagerFirst);
  const waiting = await taskOf(pagerVictim);
  check(waiting.status === 'PENDING' && waiting.attempts === 1, 'the API shows the replayed pager task PENDING, not yet called again', { status: waiting.status, attempts: waiting.attempts });
  const pagerSecond = await replay(pagerVictim);
  check(pagerSecond.status === '409' && /409: not replayable: .*PENDING/i.test(pagerSecond.text),
    'dead letters: a second Replay shows the 409 not_replayable message', pagerSecond);
  await shot('dead-letters');

  // ---- a key without the admin scope ----
  await page.fill('#key-input', readKey);
  await page.click('#key-save');
  await page.waitForSelector('[data-testid="dead-row"]', { timeout: 10000 });
  const other = page.locator('[data-testid="dead-row"]').first();
  const otherId = await other.getAttribute('data-task-id');
  await other.locator('[data-testid="replay-button"]').click();
  await other.locator('[data-testid="replay-result"][data-status="403"]').waitFor({ timeout: 10000 });
  const refused = await other.locator('[data-testid="replay-result"]').textContent();
  check(/lacks the 'admin' scope/.test(refused), 'dead letters: a read-only key is told it lacks the admin scope', refused);

  // ---- Forget: the views are cleared and nothing is loaded or polled any more ----
  const loadsBefore = await overviewLoads();
  await page.click('#tab-overview');
  await page.waitForFunction((n) => Number(document.body.dataset.overviewLoaded || 0) > n && document.body.dataset.refresh === 'scheduled',
    loadsBefore, { timeout: 10000 });
  // GET /v1/channels needs admin: the read-only key sees the task counts, the channels withheld.
  const readOnly = await page.evaluate(() => ({
    accepted: document.getElementById('total-accepted').textContent,
    withheld: document.querySelectorAll('[data-testid="channels-withheld"]').length,
    rows: document.querySelectorAll('[data-testid="channel-row"]').length,
    retryQueue: document.getElementById('retry-queue-depth').textContent,
    error: document.getElementById('overview-error').textContent,
  }));
  check(number(readOnly.accepted) === statsNow.total.accepted && readOnly.withheld === 1 && readOnly.rows === 0 &&
    readOnly.retryQueue === '—' && readOnly.error === '',
  'overview with a read-only key: the task counts, the channels withheld without an error, polling on', readOnly);
  // The next auto-refresh reads the counts again but not the channels (one 403, checked below).
  const loadsReadOnly = await overviewLoads();
  await page.waitForFunction((n) => Number(document.body.dataset.overviewLoaded || 0) > n, loadsReadOnly, { timeout: REFRESH_MS + 10000 });
  check(await page.locator('[data-testid="channels-withheld"]').count() === 1, 'the refreshed overview still shows the channels withheld');
  await page.click('#key-forget');
  const requestsAtForget = apiRequests.length;
  const forgotten = await page.evaluate(() => ({
    session: sessionStorage.length,
    refresh: document.body.dataset.refresh,
    banner: document.getElementById('banner').hidden ? null : document.getElementById('banner').textContent,
    accepted: document.getElementById('total-accepted').textContent,
    channels: document.querySelectorAll('#channels-body tr').length,
    states: document.querySelectorAll('#states-body tr').length,
    deadRows: document.querySelectorAll('#dead-body tr').length,
    message: document.getElementById('message-result').childElementCount + document.getElementById('search-message-id').value.length,
  }));
  check(forgotten.session === 0 && forgotten.refresh === 'stopped' && /forgotten/i.test(forgotten.banner || '') &&
    forgotten.accepted === '—' && forgotten.channels === 0 && forgotten.states === 0 && forgotten.deadRows === 0 && forgotten.message === 0,
  'Forget removes the key, clears every page and stops auto-refresh', forgotten);
  // Visiting the pages loads nothing, and no refresh comes (a bounded wait longer than the period).
  await page.click('#tab-dead-letters');
  await page.click('#tab-messages');
  await page.click('#tab-overview');
  await sleep(REFRESH_MS + 1500);
  const after = await page.evaluate(() => ({ refresh: document.body.dataset.refresh, deadRows: document.querySelectorAll('#dead-body tr').length }));
  check(apiRequests.length === requestsAtForget && after.refresh === 'stopped' && after.deadRows === 0,
    'after Forget no request is made for ' + (REFRESH_MS + 1500) + ' ms, on any page', { requests: apiRequests.slice(requestsAtForget), after });

  // ---- nothing went wrong in the page ----
  const csp2 = await page.evaluate(() => window.__csp);
  check(csp2.length === 0, 'no CSP violations', csp2);
  check(consoleProblems.length === 0, 'no console errors or page errors', consoleProblems);
  // Exactly the provoked error answers: the overview's two requests without a key (401, once:
  // it stops polling then), the unknown business key (404), the pager task's second replay
  // (409), the read-only key's replay (403) and its overview's channels (403, once: the page
  // does not ask again for that key).
  const provoked = ['401 GET /v1/stats', '401 GET /v1/channels', '404 GET /v1/messages',
    '409 POST /v1/dead-letters/' + pagerVictim.task_id + '/replay', '403 POST /v1/dead-letters/' + otherId + '/replay',
    '403 GET /v1/channels'];
  check(JSON.stringify([...errorAnswers].sort()) === JSON.stringify([...provoked].sort()), 'the page met exactly the provoked error answers', errorAnswers);
  const provokedStatuses = provoked.map((a) => Number(a.split(' ')[0])).sort();
  check(JSON.stringify([...loggedStatuses].sort()) === JSON.stringify(provokedStatuses), 'the browser logged exactly those statuses', loggedStatuses);
}

try {
  await main();
} catch (e) {
  failures++;
  console.log('not ok - ' + (e && e.stack ? e.stack : e));
} finally {
  if (browser) await browser.close().catch(() => {});
  await stopHerald();
  if (failures) {
    console.log('# herald output:\n' + heraldOutput.join('').split('\n').slice(-40).join('\n'));
    console.log('# kept ' + work);
  } else if (!process.env.KEEP_WORK) {
    for (const f of fs.readdirSync(work)) if (f.startsWith('herald.')) fs.rmSync(path.join(work, f), { force: true });
    if (fs.readdirSync(work).length === 0) fs.rmdirSync(work);
  }
}
console.log(failures ? '# FAILED: ' + failures : '# all passed');
process.exit(failures ? 1 : 0);
