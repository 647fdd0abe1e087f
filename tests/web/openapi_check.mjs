// Checks docs/openapi.yaml against the standard and against the server:
//   1. it validates as OpenAPI 3.1 (swagger-parser), and every schema in it compiles as JSON
//      Schema 2020-12 (Ajv, strict);
//   2. every route of src/api/routes.cpp (its path/prefix/suffix constants and the literal paths
//      of match_route) is under some documented path, so an undocumented route fails;
//   3. against the built binary (HERALD_BINARY, else build/herald): every documented path and
//      method is answered by a route (neither the unknown-route 404 nor 405), and every other
//      method of a documented path is 405 with an Allow header naming exactly the documented
//      methods.
// Usage: node tests/web/openapi_check.mjs [--document FILE] [--binary FILE] [--skip-server]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import SwaggerParser from '@apidevtools/swagger-parser';

import {
  defaultDocument,
  dereferenced,
  documentedPaths,
  label,
  methods,
  root,
  schemaValidator,
} from './openapi_common.mjs';
import { freePort, send, sleep, takeOption } from './support.mjs';

const args = process.argv.slice(2);
const option = (name) => takeOption(args, name);
const documentPath = option('--document') ?? defaultDocument;
const binary = option('--binary') ?? process.env.HERALD_BINARY ?? path.join(root, 'build', 'herald');

const failures = [];
const fail = (message) => {
  failures.push(message);
  console.log(`FAIL ${message}`);
};

// ---- 1. the document is valid OpenAPI 3.1, its schemas valid JSON Schema ----

async function checkDocument() {
  try {
    const api = await SwaggerParser.validate(documentPath);
    if (!String(api.openapi).startsWith('3.1'))
      fail(`${documentPath}: openapi is ${api.openapi}, not 3.1.x`);
    console.log(`ok   ${documentPath} is valid OpenAPI ${api.openapi} (swagger-parser)`);
  } catch (error) {
    fail(`${documentPath} is not valid OpenAPI: ${error.message}`);
    return undefined;
  }
  const document = await dereferenced(documentPath);
  const ajv = schemaValidator();
  let compiled = 0;
  const compile = (where, schema) => {
    try {
      ajv.compile(schema);
      compiled++;
    } catch (error) {
      fail(`${where}: the schema does not compile as JSON Schema 2020-12: ${error.message}`);
    }
  };
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {}))
    compile(`components/schemas/${name}`, schema);
  for (const [template, item] of Object.entries(document.paths)) {
    for (const method of methods) {
      const operation = item[method.toLowerCase()];
      if (!operation) continue;
      const where = label(method, template);
      if (!operation.operationId) fail(`${where}: no operationId`);
      if (!operation.description?.trim()) fail(`${where}: no description`);
      for (const parameter of operation.parameters ?? [])
        if (parameter.schema) compile(`${where} parameter ${parameter.name}`, parameter.schema);
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {}))
        if (media.schema) compile(`${where} request ${type}`, media.schema);
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (!/^[1-5][0-9][0-9]$/.test(status))
          fail(`${where}: response '${status}' is not a status (no 'default' or ranges here)`);
        for (const [type, media] of Object.entries(response.content ?? {}))
          if (media.schema) compile(`${where} ${status} ${type}`, media.schema);
      }
    }
  }
  console.log(`ok   ${compiled} schemas compile (Ajv, JSON Schema 2020-12, strict)`);
  return document;
}

// ---- 2. every route the server knows is documented ----

/// The route strings of src/api/routes.cpp (and batch_path of routes.hpp): {name, kind, value}.
function routeConstants() {
  const found = [];
  for (const file of ['src/api/routes.cpp', 'src/api/routes.hpp']) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    for (const m of text.matchAll(
      /constexpr\s+std::string_view\s+(\w+_(path|prefix|suffix))\s*=\s*"([^"]*)"/g,
    ))
      found.push({ name: `${file}: ${m[1]}`, kind: m[2], value: m[3] });
    // The literal paths of match_route ("/healthz"), from its definition to its closing brace.
    const start = text.search(/^std::optional<matched_route>\s+match_route\(/m);
    if (start >= 0) {
      const end = text.indexOf('\n}\n', start);
      for (const m of text.slice(start, end).matchAll(/"(\/[^"]*)"/g))
        found.push({ name: `${file}: match_route literal`, kind: 'path', value: m[1] });
    } else if (file.endsWith('.cpp')) {
      fail(`${file}: match_route not found; the route check cannot read the routes`);
    }
  }
  return found;
}

function checkRoutesDocumented(document) {
  const templates = Object.keys(document.paths);
  const constants = routeConstants();
  if (constants.length < 10)
    fail(`only ${constants.length} route strings found in src/api/routes.cpp: the parser is broken`);
  let covered = 0;
  for (const { name, kind, value } of constants) {
    const ok =
      kind === 'path'
        ? templates.includes(value)
        : kind === 'prefix'
          ? templates.some((t) => t.startsWith(value) && t[value.length] === '{')
          : templates.some((t) => t.endsWith(`}${value}`));
    if (ok) covered++;
    else
      fail(
        `route ${kind} "${value}" (${name}) is in no documented path` +
          (kind === 'prefix' ? ` (none of the form ${value}{…})` : kind === 'suffix' ? ` (none ending in {…}${value})` : ''),
      );
  }
  console.log(`ok   ${covered} of ${constants.length} route strings of routes.cpp are documented`);
}

// ---- 3. the server answers every documented path and method, and 405s the rest ----

/// A configuration with a wechat_template channel, the one kind that also answers GET on
/// /v1/receipts/{channel}; its provider is never called.
const serverConfig = {
  channels: [
    { name: 'sms', type: 'simulated' },
    {
      name: 'wechat',
      type: 'wechat_template',
      appid: 'wx-openapi-check',
      app_secret: 'openapi-check-secret',
      template_id: 'tpl-openapi-check',
      title_field: 'first',
      body_field: 'keyword1',
      base_url: 'http://127.0.0.1:9',
      callback_token: 'openapi-check-token',
    },
  ],
};

async function startServer() {
  if (!fs.existsSync(binary)) throw new Error(`no herald binary at ${binary} (set HERALD_BINARY)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-openapi-'));
  fs.writeFileSync(path.join(dir, 'herald.json'), JSON.stringify(serverConfig));
  const port = await freePort();
  const log = fs.openSync(path.join(dir, 'herald.log'), 'w');
  const child = spawn(
    binary,
    ['serve', '--listen', `127.0.0.1:${port}`, '--db', `sqlite:${path.join(dir, 'h.db')}`,
     '--config', path.join(dir, 'herald.json')],
    { stdio: ['ignore', log, log] },
  );
  let exited = null;
  child.on('exit', (code, signal) => (exited = signal ?? code));
  const deadline = Date.now() + 30000;
  for (;;) {
    if (exited !== null)
      throw new Error(`herald exited (${exited}) before answering; its log:\n${fs.readFileSync(path.join(dir, 'herald.log'), 'utf8')}`);
    try {
      if ((await send(port, 'GET', '/healthz')).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`herald did not answer /healthz within 30 s; its log is ${dir}/herald.log`);
    }
    await sleep(100);
  }
  const stop = async () => {
    if (exited === null) {
      child.kill('SIGTERM');
      for (let i = 0; i < 100 && exited === null; i++) await sleep(100);
      if (exited === null) child.kill('SIGKILL');
    }
    fs.closeSync(log);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { port, stop };
}

/// The target of a documented path: each {name} filled with its parameter's example, else a
/// dummy value.
function targetOf(template, item, operation) {
  const parameters = [...(item.parameters ?? []), ...(operation?.parameters ?? [])];
  return template.replace(/\{([^}]+)\}/g, (_, name) => {
    const parameter = parameters.find((p) => p.in === 'path' && p.name === name);
    const example = parameter?.example ?? parameter?.schema?.example;
    return encodeURIComponent(example ?? `dummy-${name}`);
  });
}

const errorCode = (body) => {
  try {
    return JSON.parse(body)?.error?.code;
  } catch {
    return undefined;
  }
};

async function checkServer(document) {
  const { port, stop } = await startServer();
  try {
    const unknown = await send(port, 'GET', `/no-such-route-${process.pid}`);
    if (unknown.status !== 404 || errorCode(unknown.body) !== 'not_found')
      fail(`an unknown path answered ${unknown.status} ${unknown.body}, not 404 not_found`);
    const isUnknownRoute = (answer) => answer.status === 404 && answer.body === unknown.body;
    let answered = 0;
    let refused = 0;
    for (const entry of documentedPaths(document)) {
      const { path: template, item, operations, allow } = entry;
      // Every documented method reaches a route.
      for (const [method, operation] of operations) {
        const target = targetOf(template, item, operation);
        const answer = await send(port, method, target);
        if (answer.status === 405)
          fail(`${label(method, template)}: ${method} ${target} answered 405 (Allow: ${answer.headers.allow}): the server has no such method there`);
        else if (isUnknownRoute(answer))
          fail(`${label(method, template)}: ${method} ${target} answered the unknown-route 404: the server has no such path`);
        else answered++;
      }
      // Every other method is 405, naming exactly the documented ones.
      const target = targetOf(template, item);
      for (const method of methods) {
        if (operations.has(method)) continue;
        if (method === 'HEAD' && operations.has('GET')) continue; // HEAD is GET without a body
        const answer = await send(port, method, target);
        if (method === 'HEAD') {
          // HEAD is answered as GET: where GET is not allowed, 405 without a body.
          if (answer.status !== 405) fail(`${method} ${target} answered ${answer.status}, not 405`);
          continue;
        }
        if (answer.status !== 405) {
          fail(`${label(method, template)} is not documented, but ${method} ${target} answered ${answer.status}${isUnknownRoute(answer) ? ' (unknown route)' : ''}, not 405`);
          continue;
        }
        const named = (answer.headers.allow ?? '').split(',').map((m) => m.trim()).filter(Boolean);
        const expected = [...allow].sort().join(', ');
        if ([...named].sort().join(', ') !== expected)
          fail(`${method} ${target}: 405 with Allow "${answer.headers.allow ?? ''}", but the document has ${template} with ${expected || 'no method'}`);
        else if (errorCode(answer.body) !== 'method_not_allowed')
          fail(`${method} ${target}: 405 without the method_not_allowed error body: ${answer.body}`);
        else refused++;
      }
    }
    console.log(`ok   ${answered} documented operations answered by a route; ${refused} other methods answered 405 with the documented Allow`);
  } finally {
    await stop();
  }
}

const document = await checkDocument();
if (document) {
  checkRoutesDocumented(document);
  if (!args.includes('--skip-server')) {
    try {
      await checkServer(document);
    } catch (error) {
      fail(`server check: ${error.message}`);
    }
  }
}
if (failures.length) {
  console.log(`\n${failures.length} problem(s) with ${path.relative(root, documentPath)}`);
  process.exit(1);
}
console.log(`\n${path.relative(root, documentPath)} agrees with the standard and with ${binary}`);
