// Checks every response the e2e tests received against docs/openapi.yaml: for each exchange
// recorded by tests/support/http_client.cpp (HERALD_E2E_RESPONSE_LOG, one <pid>.jsonl per test
// process) whose path is documented, the status must be documented for the operation, the
// Content-Type one of that response's media types, the body valid against its schema, and the
// recorded headers (Allow, WWW-Authenticate, Retry-After) present where required and valid where
// given. A method the path does not document must have been answered 405 with the documented
// Allow (or one of the server's own refusals). Exchanges with undocumented paths (the fake
// providers the tests also talk to) are counted and ignored.
// Usage: node tests/web/openapi_responses.mjs [DIR] [--document FILE] [--min N]
//   DIR defaults to $HERALD_E2E_RESPONSE_LOG. --min: the fewest responses that must be checked
//   (default 3 per log file), so that a broken recorder cannot pass.
import fs from 'node:fs';
import path from 'node:path';

import {
  defaultDocument,
  dereferenced,
  describeErrors,
  documentedPaths,
  label,
  matchPath,
  mediaType,
  root,
  schemaValidator,
} from './openapi_common.mjs';
import { takeOption } from './support.mjs';

const args = process.argv.slice(2);
const option = (name) => takeOption(args, name);
const documentPath = option('--document') ?? defaultDocument;
const minimumOption = option('--min');
const directory = args[0] ?? process.env.HERALD_E2E_RESPONSE_LOG;
if (!directory) {
  console.log('usage: openapi_responses.mjs DIR (or HERALD_E2E_RESPONSE_LOG=DIR)');
  process.exit(2);
}

const document = await dereferenced(documentPath);
const paths = documentedPaths(document);
const ajv = schemaValidator();
const validators = new Map(); // schema object → compiled validator
const validatorOf = (schema) => {
  if (!validators.has(schema)) validators.set(schema, ajv.compile(schema));
  return validators.get(schema);
};

// ---- every response object schema is closed ----
// An open object schema accepts any member, so a field the server sends that the document
// omits would pass unseen. Every object a response body may hold must say what else it takes:
// additionalProperties (false, or a schema for a map such as `contacts`) or
// unevaluatedProperties (false, where allOf composes it); an object schema composed into a
// closing one (allOf/anyOf/oneOf under unevaluatedProperties) needs nothing itself. A branch of
// allOf beside a closed object only narrows it (the error codes of `BadRequestError`): it adds
// no member and is not checked, nor is anything inside it.
const openSchemas = new Map(); // open object schema → where it was first met
function checkClosed(schema, where, closedAbove, seen) {
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
  seen.add(schema);
  const types = [schema.type].flat();
  const isObject = types.includes('object') || (schema.type === undefined && schema.properties);
  const closesHere = schema.unevaluatedProperties !== undefined;
  if (isObject && schema.additionalProperties === undefined && !closesHere && !closedAbove &&
      !openSchemas.has(schema))
    openSchemas.set(schema, where);
  const closed = (s) =>
    s && (s.additionalProperties === false || s.unevaluatedProperties === false);
  for (const keyword of ['allOf', 'anyOf', 'oneOf'])
    (schema[keyword] ?? []).forEach((branch, i) => {
      // An allOf branch beside a closed object schema narrows it; it is not an object of its own.
      if (keyword === 'allOf' && !closed(branch) && schema.allOf.some(closed)) return;
      checkClosed(branch, `${where}/${keyword}[${i}]`, closedAbove || closesHere, new Set(seen));
    });
  for (const [name, property] of Object.entries(schema.properties ?? {}))
    checkClosed(property, `${where}.${name}`, false, new Set(seen));
  if (schema.items) checkClosed(schema.items, `${where}[]`, false, new Set(seen));
  if (typeof schema.additionalProperties === 'object')
    checkClosed(schema.additionalProperties, `${where}{}`, false, new Set(seen));
}
for (const entry of paths)
  for (const [method, operation] of entry.operations)
    for (const [status, response] of Object.entries(operation.responses ?? {}))
      for (const [type, media] of Object.entries(response.content ?? {}))
        if (media.schema)
          checkClosed(media.schema, `${label(method, entry.path)} ${status} ${type}: (body)`, false, new Set());

// The answers a method a path does not document may get: 405, or the server's own refusals
// before any route is chosen.
const otherMethodResponses = Object.fromEntries(
  [
    ['405', 'MethodNotAllowed'],
    ['400', 'BadRequest'],
    ['413', 'PayloadTooLarge'],
    ['431', 'HeadersTooLarge'],
    ['500', 'InternalError'],
    ['503', 'ServiceUnavailable'],
  ].map(([status, name]) => [status, document.components.responses[name]]),
);

// The headers the recorder keeps, by their name in the log.
const recordedHeaders = ['allow', 'www-authenticate', 'retry-after'];

const failures = [];
const failuresShown = 60;
const fail = (where, exchange, message) => {
  failures.push(message);
  if (failures.length <= failuresShown) {
    const body = (exchange.body ?? '').slice(0, 300);
    console.log(`FAIL ${where}: ${message}\n     ${exchange.method} ${exchange.target} -> ${exchange.status} ${exchange['content-type'] ?? ''} ${body}`);
  }
};
for (const where of openSchemas.values()) {
  failures.push(`open schema ${where}`);
  console.log(`FAIL ${where}: an object schema without additionalProperties or unevaluatedProperties, so a member the document omits would pass`);
}

/// Checks one exchange against a response object of the document; false when it failed.
function checkResponse(where, exchange, response, allow) {
  if (!response) {
    fail(where, exchange, `status ${exchange.status} is not documented here`);
    return false;
  }
  let ok = true;
  const headers = Object.fromEntries(
    Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), header]),
  );
  for (const name of recordedHeaders) {
    const header = headers[name];
    const value = exchange[name];
    if (value === undefined) {
      if (header?.required) {
        fail(where, exchange, `${exchange.status} has no ${name} header, which the document requires`);
        ok = false;
      }
      continue;
    }
    if (!header) {
      fail(where, exchange, `${exchange.status} carries ${name}: ${value}, which the document does not name for it`);
      ok = false;
    } else if (header.schema && !validatorOf(header.schema)(value)) {
      fail(where, exchange, `${name}: ${value} does not match the document: ${describeErrors(validatorOf(header.schema).errors)}`);
      ok = false;
    }
  }
  if (exchange.status === 405 && typeof exchange.allow === 'string' && allow) {
    const named = exchange.allow.split(',').map((m) => m.trim()).filter(Boolean).sort().join(', ');
    const expected = [...allow].sort().join(', ');
    if (named !== expected) {
      fail(where, exchange, `405 with Allow "${exchange.allow}", but the document has ${expected}`);
      ok = false;
    }
  }
  const content = response.content ?? {};
  const body = exchange.body ?? '';
  if (Object.keys(content).length === 0) {
    if (body !== '') {
      fail(where, exchange, `${exchange.status} has a body, but the document gives it none`);
      ok = false;
    }
    return ok;
  }
  if (exchange.method === 'HEAD') return ok; // no body to check
  const type = mediaType(exchange['content-type']);
  const entry = Object.entries(content).find(([documented]) => mediaType(documented) === type);
  if (!entry) {
    fail(where, exchange, `Content-Type "${exchange['content-type'] ?? ''}" is not one of the documented ${Object.keys(content).join(', ')}`);
    return false;
  }
  const schema = entry[1].schema;
  if (!schema || exchange.body_truncated) return ok;
  let instance = body;
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      instance = JSON.parse(body);
    } catch (error) {
      fail(where, exchange, `the body is not JSON: ${error.message}`);
      return false;
    }
  }
  const validate = validatorOf(schema);
  if (!validate(instance)) {
    fail(where, exchange, `the ${exchange.status} body does not match the document: ${describeErrors(validate.errors)}`);
    return false;
  }
  return ok;
}

// ---- read the logs ----

if (!fs.existsSync(directory)) {
  console.log(`FAIL no response log at ${directory}: no e2e test recorded anything. Run this check with the e2e tests (ctest -R 'e2e|web.openapi'); a broken recorder (tests/support/http_client.cpp) also ends here`);
  process.exit(1);
}
const files = fs.readdirSync(directory).filter((name) => name.endsWith('.jsonl')).sort();
if (files.length === 0) {
  console.log(`FAIL ${directory} holds no *.jsonl log: no e2e test recorded anything. Run this check with the e2e tests (ctest -R 'e2e|web.openapi'); a broken recorder (tests/support/http_client.cpp) also ends here`);
  process.exit(1);
}

const checked = new Map(); // operation label → Map(status → count)
const ignored = new Map(); // first path segment → count
let exchanges = 0;
let truncated = 0;
const count = (where, status) => {
  if (!checked.has(where)) checked.set(where, new Map());
  const statuses = checked.get(where);
  statuses.set(status, (statuses.get(status) ?? 0) + 1);
};
const isNotFound = (exchange) => {
  if (exchange.status !== 404) return false;
  try {
    return JSON.parse(exchange.body)?.error?.code === 'not_found';
  } catch {
    return false;
  }
};

/// The listeners (host:port) of one log that serve /metrics only (`metrics_listen`): /metrics
/// answered 200 there, and everything else 404 not_found.
function metricsListeners(log) {
  const seen = new Map(); // host → {metrics, other}
  for (const exchange of log) {
    const host = exchange.host ?? '';
    if (!seen.has(host)) seen.set(host, { metrics: false, other: false });
    const state = seen.get(host);
    const requestPath = String(exchange.target ?? '').split(/[?#]/)[0];
    if (requestPath === '/metrics' && exchange.status === 200) state.metrics = true;
    else if (!isNotFound(exchange)) state.other = true;
  }
  return new Set([...seen].filter(([, s]) => s.metrics && !s.other).map(([host]) => host));
}

function checkExchange(exchange, metricsOnly) {
  const requestPath = String(exchange.target ?? '').split(/[?#]/)[0];
  const method = String(exchange.method).toUpperCase();
  if (metricsOnly && requestPath !== '/metrics') {
    // The metrics listener answers nothing else: 404 not_found, whatever the path.
    const where = '(metrics_listen listener) any path but /metrics';
    checkResponse(where, exchange, exchange.status === 404 ? document.components.responses.NotFound : undefined);
    count(where, exchange.status);
    return;
  }
  const documented = matchPath(paths, requestPath);
  if (!documented) {
    const segment = requestPath.split('/').slice(0, 2).join('/') || '(empty)';
    ignored.set(segment, (ignored.get(segment) ?? 0) + 1);
    return;
  }
  const operationMethod = method === 'HEAD' ? 'GET' : method;
  const operation = documented.operations.get(operationMethod);
  let where;
  if (operation) {
    where = label(operationMethod, documented.path);
    const response = operation.responses?.[String(exchange.status)];
    if (!response)
      fail(where, exchange, `status ${exchange.status} is not documented for ${where} (documented: ${Object.keys(operation.responses ?? {}).join(', ')})`);
    else checkResponse(where, exchange, response, documented.allow);
  } else {
    where = `${method} ${documented.path} (not documented: 405)`;
    const response = otherMethodResponses[String(exchange.status)];
    if (!response)
      fail(where, exchange, `${method} is not documented for ${documented.path}, but was answered ${exchange.status}, not 405`);
    else checkResponse(where, exchange, response, documented.allow);
  }
  count(where, exchange.status);
}

for (const file of files) {
  const log = [];
  const lines = fs.readFileSync(path.join(directory, file), 'utf8').split('\n');
  lines.forEach((text, index) => {
    if (text.trim() === '') return;
    try {
      log.push(JSON.parse(text));
    } catch (error) {
      failures.push(`${file}:${index + 1} is not JSON`);
      console.log(`FAIL ${file}:${index + 1} is not a JSON line: ${error.message}`);
    }
  });
  const metricsOnly = metricsListeners(log);
  for (const exchange of log) {
    exchanges++;
    if (exchange.body_truncated) truncated++;
    checkExchange(exchange, metricsOnly.has(exchange.host ?? ''));
  }
}

// ---- report ----

let total = 0;
console.log(`\nresponses checked against ${path.relative(root, documentPath)}, per operation:`);
for (const where of [...checked.keys()].sort()) {
  const statuses = checked.get(where);
  const count = [...statuses.values()].reduce((a, b) => a + b, 0);
  total += count;
  const detail = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ');
  console.log(`  ${String(count).padStart(6)}  ${where}  (${detail})`);
}
const operations = [];
for (const entry of paths)
  for (const method of entry.operations.keys()) operations.push(label(method, entry.path));
const unseen = operations.filter((op) => !checked.has(op));
const ignoredTotal = [...ignored.values()].reduce((a, b) => a + b, 0);
console.log(`  ${String(total).padStart(6)}  in all, from ${exchanges} exchanges in ${files.length} log files` +
  (truncated ? ` (${truncated} bodies too large to keep, not validated)` : ''));
console.log(`  ${String(ignoredTotal).padStart(6)}  exchanges with undocumented paths ignored: ` +
  ([...ignored].map(([s, n]) => `${s} ×${n}`).join(', ') || 'none'));
if (unseen.length)
  console.log(`  operations no e2e test reached (${unseen.length} of ${operations.length}): ${unseen.join('; ')}`);

// Every e2e test process that logs anything starts herald (waiting for /healthz) and asks it
// something: the smallest suites log 3 exchanges. The whole suite checks over 10000.
const minimum = minimumOption !== undefined ? Number(minimumOption) : 3 * files.length;
if (total < minimum) {
  failures.push('too few');
  console.log(`FAIL only ${total} responses were checked, fewer than ${minimum}: is the recorder (tests/support/http_client.cpp) broken?`);
}
if (failures.length) {
  if (failures.length > failuresShown) console.log(`… and ${failures.length - failuresShown} more`);
  console.log(`\n${failures.length} response(s) disagree with ${path.relative(root, documentPath)}`);
  process.exit(1);
}
console.log(`\nevery checked response agrees with ${path.relative(root, documentPath)}`);
