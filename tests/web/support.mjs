// What the Node tests share (openapi_check.mjs, openapi_responses.mjs,
// console_test.mjs): options, a free port, plain HTTP requests to it, waiting.
import http from 'node:http';
import net from 'node:net';

/// A TCP port free on 127.0.0.1 at the time of asking.
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/// The value of `--name value` among command-line `args`, taken out of them (so what is left
/// are the positional arguments and flags); undefined when absent.
export function takeOption(args, name) {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const [, value] = args.splice(at, 2);
  return value;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/// One request to 127.0.0.1:port on a connection of its own (any method, TRACE included, which
/// fetch refuses): {status, headers (lower-case names), body (text), json (the body parsed, or
/// null)}. `body` other than a string is sent as JSON. Rejects when there is no answer within
/// `timeoutMs`.
export function send(port, method, target, { headers = {}, body, timeoutMs = 10000 } = {}) {
  const allHeaders = { ...headers };
  let payload;
  if (body !== undefined) {
    payload = typeof body === 'string' ? body : JSON.stringify(body);
    if (typeof body !== 'string' && !Object.keys(allHeaders).some((h) => h.toLowerCase() === 'content-type'))
      allHeaders['Content-Type'] = 'application/json';
    allHeaders['Content-Length'] = Buffer.byteLength(payload);
  }
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, method, path: target, headers: allHeaders, agent: false, timeout: timeoutMs },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => {
          let json = null;
          try {
            json = text ? JSON.parse(text) : null;
          } catch {
            json = null;
          }
          resolve({ status: response.statusCode, headers: response.headers, body: text, json });
        });
      },
    );
    request.on('timeout', () =>
      request.destroy(new Error(`${method} ${target}: no answer within ${timeoutMs / 1000} s`)));
    request.on('error', reject);
    request.end(payload);
  });
}

/// A bounded poll: calls `probe` until it returns a truthy value (which is returned), at most
/// `timeoutMs`; then throws, naming `what` and the last value or error.
export async function until(what, probe, timeoutMs, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    await sleep(intervalMs);
  }
}
