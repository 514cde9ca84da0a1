// The traffic that render.mjs sends through the gateway, and the two fake servers it needs: the
// "flaky" provider's upstreams and a callback receiver. Everything listens and dials on loopback;
// every loop is bounded by a deadline and a count.
import http from 'node:http';

// Keys of gateway.caddyfile.
const ACME = 'mg-render-acme';
const SMALL = 'mg-render-small';
const NARROW = 'mg-render-narrow';
const BUSY = 'mg-render-busy';

// listen starts an HTTP server on a loopback port chosen by the system.
function listen(handler) {
  return new Promise((resolve, reject) => {
    const server = http.createServer(handler);
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function chatAnswer(model) {
  return JSON.stringify({
    id: 'chatcmpl-render', object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ok' } }],
    usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 },
  });
}

// flakyUpstreams serves /east/v1/… and /west/v1/…: chat answers after a delay, east slower and
// failing with 500 at the rate failRate() says at the time.
export async function flakyUpstreams(failRate) {
  let n = 0;
  return listen((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', async () => {
      const east = req.url.startsWith('/east/');
      let model = 'flaky-chat';
      try { model = JSON.parse(body).model ?? model; } catch { /* answer anyway */ }
      n++;
      await sleep(east ? 150 + (n * 37) % 450 : 40 + (n * 13) % 120);
      if (east && Math.random() < failRate()) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end('{"error":{"message":"simulated upstream failure","type":"server_error","param":null,"code":"internal_error"}}');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(chatAnswer(model));
    });
  });
}

// callbackReceiver answers task callbacks by path: /ok 200; /flaky 500 on the first attempt of an
// event, then 200; /gone 410; /down 503 always (retried, then given up).
export async function callbackReceiver() {
  const attempts = new Map();
  const server = await listen((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = req.headers['webhook-id'] ?? '';
      const seen = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, seen);
      let status = 200;
      if (req.url.startsWith('/flaky') && seen === 1) status = 500;
      if (req.url.startsWith('/gone')) status = 410;
      if (req.url.startsWith('/down')) status = 503;
      res.writeHead(status);
      res.end();
    });
  });
  server.received = () => [...attempts.values()].reduce((a, b) => a + b, 0);
  return server;
}

// call sends one request to the gateway and returns its status (0 for a network failure).
async function call(base, key, method, path, body) {
  try {
    const res = await fetch(base + path, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15000),
    });
    const text = await res.text();
    return { status: res.status, text };
  } catch {
    return { status: 0, text: '' };
  }
}

const chat = (model, stream = false) => ({
  model, stream, ...(stream ? { stream_options: { include_usage: true } } : {}),
  messages: [{ role: 'user', content: 'render the dashboard' }],
});

const task = (model, prompt, callback) => ({
  model, content: [{ type: 'text', text: prompt }], ...(callback ? { callback_url: callback } : {}),
});

// run drives the gateway for durationMs in ticks of 250 ms: chat on two models of one provider and
// one model of a flaky provider, rejections (quota, rate, active tasks, model not allowed, model
// not found, invalid request, unknown key), video tasks that succeed and fail with callbacks that
// succeed, are retried, gone or given up, and task queries. Its rates change over time so that the
// panels have a shape. The last 30 s send chat only, so tasks and callbacks finish. Every request
// of a tick is awaited before the next tick, so at most one tick's requests are in flight.
export async function run({ base, hook, durationMs, log }) {
  const start = Date.now();
  const deadline = start + durationMs;
  const drainFrom = deadline - 30000;
  const statuses = new Map();
  const taskIds = [];
  const count = (what, r) => {
    const k = `${what} ${r.status}`;
    statuses.set(k, (statuses.get(k) ?? 0) + 1);
    return r;
  };
  const maxTicks = Math.ceil(durationMs / 250) + 1;
  for (let tick = 0; tick < maxTicks && Date.now() < deadline; tick++) {
    const tickStart = Date.now();
    const t = (tickStart - start) / durationMs; // 0 … 1
    const wave = 0.5 + 0.5 * Math.sin(t * 2 * Math.PI * 1.5); // 0 … 1, one and a half periods
    const every = (ticks) => tick % ticks === 0;
    const jobs = [];
    const add = (what, p) => jobs.push(p.then((r) => count(what, r)));

    // acme: demo-chat 4–12/s, demo-chat-mini 2–4/s (half of them streamed), flaky-chat 2/s.
    const chats = 1 + Math.round(2 * wave);
    for (let i = 0; i < chats; i++) add('chat demo-chat', call(base, ACME, 'POST', '/v1/chat/completions', chat('demo-chat')));
    if (every(2) || wave > 0.6) add('chat demo-chat-mini', call(base, ACME, 'POST', '/v1/chat/completions', chat('demo-chat-mini', tick % 4 === 0)));
    if (every(2)) add('chat flaky-chat', call(base, ACME, 'POST', '/v1/chat/completions', chat('flaky-chat')));
    // small: 4/s against a rate of 20 per 10 s and a quota of 150: 429s, and 402s once it is spent.
    add('chat small', call(base, SMALL, 'POST', '/v1/chat/completions', chat('demo-chat-mini')));
    // narrow: demo-chat is allowed, demo-chat-mini is not.
    if (every(4)) add('chat narrow', call(base, NARROW, 'POST', '/v1/chat/completions', chat('demo-chat')));
    if (every(8)) add('chat narrow refused', call(base, NARROW, 'POST', '/v1/chat/completions', chat('demo-chat-mini')));
    // Mistakes: an unknown model, a task without text, an unknown key.
    if (every(12)) add('chat unknown model', call(base, ACME, 'POST', '/v1/chat/completions', chat('no-such-model')));
    if (every(10)) add('task invalid', call(base, ACME, 'POST', '/api/v3/contents/generations/tasks', { model: 'demo-seedance-1-0-pro', content: [] }));
    if (every(20)) add('models unknown key', call(base, 'mg-render-nobody', 'GET', '/v1/models'));
    if (every(16)) add('models', call(base, ACME, 'GET', '/v1/models'));

    if (tickStart < drainFrom) {
      // acme: a task every 2 s with a callback; one in five fails. busy: a task a second, over
      // its limit of two active tasks.
      if (every(8)) {
        const kinds = ['ok', 'ok', 'flaky', 'gone', 'down'];
        const kind = kinds[(tick / 8) % kinds.length];
        const fail = (tick / 8) % 5 === 3 ? ' [[fail]]' : '';
        const model = (tick / 8) % 3 === 0 ? 'demo-seedance-1-0-lite' : 'demo-seedance-1-0-pro';
        add('task acme', call(base, ACME, 'POST', '/api/v3/contents/generations/tasks',
          task(model, `a lighthouse at dawn${fail}`, `${hook}/${kind}/${tick}`)).then((r) => {
          try { taskIds.push(JSON.parse(r.text).id); } catch { /* refused: counted by status */ }
          return r;
        }));
      }
      if (every(4)) add('task busy', call(base, BUSY, 'POST', '/api/v3/contents/generations/tasks', task('demo-seedance-1-0-lite', 'a boat')));
    }
    // acme polls one of its tasks every second.
    if (every(4) && taskIds.length > 0) {
      const id = taskIds[Math.floor(Math.random() * taskIds.length)];
      add('task query', call(base, ACME, 'GET', `/api/v3/contents/generations/tasks/${id}`));
    }
    await Promise.all(jobs);
    const rest = 250 - (Date.now() - tickStart);
    if (rest > 0) await sleep(rest);
    if (tick % 40 === 0) log(`workload: ${Math.round((Date.now() - start) / 1000)} s of ${durationMs / 1000} s`);
  }
  return statuses;
}
