// What openapi_check.mjs and openapi_responses.mjs share: the document, its operations, matching
// a request path to a documented path, and JSON Schema validation of its schemas (Ajv, draft
// 2020-12, with formats).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const defaultDocument = path.join(root, 'docs', 'openapi.yaml');

/// The methods an OpenAPI path item may hold, upper-case.
export const methods = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'];

/// The document with every $ref resolved (a fresh copy: the parser resolves in place).
export async function dereferenced(documentPath = defaultDocument) {
  return SwaggerParser.dereference(documentPath);
}

/// Every documented path with its operations: {path, regex, literal, operations: Map(METHOD →
/// operation), allow: [METHOD…]}. `allow` is what the path's Allow header names: the methods
/// of its operations, less those that only some channels answer (`x-herald-channel-types`).
export function documentedPaths(document) {
  const out = [];
  for (const [template, item] of Object.entries(document.paths ?? {})) {
    const operations = new Map();
    for (const method of methods) {
      const operation = item[method.toLowerCase()];
      if (operation) operations.set(method, operation);
    }
    const allow = [...operations]
      .filter(([, operation]) => !operation['x-herald-channel-types'])
      .map(([method]) => method);
    const pattern = template
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
      .join('');
    out.push({
      path: template,
      regex: new RegExp(`^${pattern}$`),
      literal: template.replace(/\{[^}]+\}/g, '').length,
      item,
      operations,
      allow,
    });
  }
  return out;
}

/// The documented path a request path (no query) falls under: an exact one first, else the
/// matching template with the most literal characters; undefined when none.
export function matchPath(paths, requestPath) {
  let best;
  for (const candidate of paths)
    if (candidate.regex.test(requestPath) && (!best || candidate.literal > best.literal))
      best = candidate;
  return best;
}

/// "text/plain; version=0.0.4" → "text/plain".
export function mediaType(contentType) {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/// Ajv for the document's schemas: draft 2020-12 as OpenAPI 3.1 uses it, with formats, strict
/// about the schemas themselves, knowing OpenAPI's own schema keywords.
export function schemaValidator() {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
  addFormats(ajv);
  ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']);
  return ajv;
}

/// Ajv's errors as one line each, naming where in the instance.
export function describeErrors(errors) {
  return (errors ?? [])
    .slice(0, 8)
    .map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ' ' + JSON.stringify(e.params) : ''}`)
    .join('; ');
}

/// The operation's label in reports: "GET /v1/messages/{message_id}".
export function label(method, documentedPath) {
  return `${method} ${documentedPath}`;
}
