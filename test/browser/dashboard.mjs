#!/usr/bin/env node
// dashboard.mjs -- drives the dashboard (pkg/dashboard/web) in Debian's
// Chromium through playwright-core and checks what a person sees.
//
//   node dashboard.mjs --fixtures   the app's files and test/browser/fixtures/*.json served by a small
//                                   node server here (no API server): every page, sign-in (401, 403),
//                                   live update, then timings with 10,000 nodes and 100,000 pending
//                                   pods generated here. A UI unit test, a few seconds.
//   node dashboard.mjs --e2e        a live scheduler (test/e2e/t_dashboard_browser.sh sets DASH_URL,
//                                   DASH_TOKEN, DASH_TOKEN_NORIGHTS, DASH_EXPECT, DASH_BIND_CMD).
//
// Screenshots go to build/ and, when DASHBOARD_SCREENSHOTS_TO is set, there
// too. CHROMIUM overrides /usr/bin/chromium. Exits 1 on the first failed check.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const web = path.join(repo, 'pkg/dashboard/web');
const mode = process.argv[2];
let passed = 0;

function ok(cond, what) {
  if (!cond) throw new Error('FAIL: ' + what);
  passed++;
  console.log('ok ' + passed + ' - ' + what);
}

// Waits until the locator's text matches re (a RegExp) and returns it.
async function waitText(loc, re, what, timeout = 5000) {
  const t0 = Date.now();
  let last = null;
  while (Date.now() - t0 < timeout) {
    last = (await loc.count()) ? await loc.first().textContent() : null;
    if (last !== null && re.test(last)) {
      ok(true, what);
      return last;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`FAIL: ${what}: wanted ${re}, saw ${JSON.stringify(last && last.slice(0, 300))}`);
}

// The row's cells' text equals want (exactly).
async function sameCells(row, want, what) {
  const got = await row.locator('td').allTextContents();
  ok(JSON.stringify(got) === JSON.stringify(want), `${what}: ${JSON.stringify(got)}`);
}

async function shot(page, name) {
  const out = path.join(repo, 'build');
  fs.mkdirSync(out, { recursive: true });
  const file = path.join(out, name + '.png');
  await page.screenshot({ path: file, fullPage: false });
  const to = process.env.DASHBOARD_SCREENSHOTS_TO;
  if (to) {
    fs.mkdirSync(to, { recursive: true });
    fs.copyFileSync(file, path.join(to, name + '.png'));
  }
  console.log('# screenshot ' + file);
}

async function launch() {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    console.error('dashboard.mjs: no playwright-core: run `npm ci` in test/browser (' + e.message + ')');
    process.exit(1);
  }
  const exe = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(exe)) {
    console.error(`dashboard.mjs: no Chromium at ${exe} (as root: bash test/deps.sh browser)`);
    process.exit(1);
  }
  const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox', '--disable-gpu'] });
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) console.error('# console: ' + m.text());
    // The server's Content-Security-Policy must not stop anything the app does.
    if (/Content Security Policy/i.test(m.text())) process.exitCode = 1;
  });
  page.on('pageerror', (e) => {
    console.error('# page error: ' + e.message);
    process.exitCode = 1;
  });
  return { browser, page };
}

async function signIn(page, token) {
  await page.locator('#login').waitFor({ state: 'visible', timeout: 5000 });
  await page.fill('#token', token);
  await page.click('#login button[type=submit]');
}

// Polls fn(arg) in the page until it is true. Not page.waitForFunction: that
// evaluates a string, which the server's Content-Security-Policy (no
// 'unsafe-eval') refuses, as it should; page.evaluate is not affected.
async function waitFor(page, fn, arg, timeout = 10000) {
  const t0 = Date.now();
  while (!(await page.evaluate(fn, arg))) {
    if (Date.now() - t0 > timeout) throw new Error('FAIL: timed out waiting for ' + fn.toString().slice(0, 120));
    await new Promise((r) => setTimeout(r, 25));
  }
}

// Goes to a page by its hash and waits for its first render after that.
async function go(page, name) {
  const before = await page.evaluate(() => window.__dash.renders);
  await page.evaluate((n) => (location.hash = '#/' + n), name);
  await waitFor(page, ([b, n]) => window.__dash.renders > b && window.__dash.last.page === n, [before, name]);
}

// ------------------------------------------------------------ fixture server

function fixtures() {
  const d = {};
  for (const f of fs.readdirSync(path.join(here, 'fixtures'))) {
    if (f.endsWith('.json')) d[f.slice(0, -5)] = JSON.parse(fs.readFileSync(path.join(here, 'fixtures', f), 'utf8'));
  }
  return d;
}

// A scale of its own: n nodes in 8 pools, p pending pods, g gangs.
function generate(n, p, g) {
  const pools = ['train-a', 'train-b', 'train-c', 'infer-a', 'infer-b', 'batch', 'dev', 'spare'];
  const map = [];
  const nodes = [];
  for (let i = 0; i < n; i++) {
    const pool = i % pools.length;
    const gpu = pool === 7 ? 0 : 8;
    const used = gpu ? (i * 7919) % 9 : 0;
    const state = i % 97 === 0 ? 1 : i % 389 === 0 ? 2 : 0;
    const name = 'node-' + String(i).padStart(5, '0');
    map.push([name, pool, state, gpu, Math.min(gpu, used), used % 3 === 1 ? 1 : 0, (i * 31) % 100]);
    nodes.push(name);
  }
  const queues = Array.from({ length: 50 }, (_, i) => 'team-' + i);
  const pending = [];
  for (let i = 0; i < p; i++) {
    const gang = i % 10 === 0 ? 'ns-' + (i % 40) + '/gang-' + Math.floor(i / 10) : null;
    pending.push({
      kind: 'pod', namespace: 'ns-' + (i % 40), name: 'job-' + String(i).padStart(6, '0'), queue: queues[i % 50],
      pool: pools[i % 8], waitingSeconds: (i * 7) % 86400, reason: `0/${n} nodes are available: ${i % 1250} Insufficient nvidia.com/gpu`,
      gang, hasDecision: i % 3 === 0,
    });
  }
  const gangs = [];
  for (let i = 0; i < g; i++) {
    gangs.push({
      namespace: 'ns-' + (i % 40), name: 'gang-' + i, queue: queues[i % 50], pool: pools[i % 8], phase: i % 4 ? 'Pending' : 'Running',
      placed: i % 4 ? 0 : 8, minMember: 8, members: 8, waitingSeconds: (i * 13) % 86400, waitingBehind: null, topology: null,
      reason: 'needs 64 GPUs at once',
    });
  }
  return { pools, map, nodes, pending, gangs };
}

function nodeItem(name, pool, m) {
  const [, , state, gpu, used, shared] = m;
  return {
    name, pool, cordoned: state === 1, ready: state !== 2, gpu: { whole: gpu, used, shared, free: gpu - used },
    cpu: { capacity: 64000, used: 640 * m[6] }, memory: { capacity: 2 ** 38, used: 2 ** 37 }, pods: Math.ceil(used),
    slots: Array.from({ length: gpu }, (_, k) => ({ index: k, used: k < used, fractions: [], reservation: null })),
  };
}

function fixtureServer() {
  const S = { d: fixtures(), gen: 1, big: null, requests: 0, sorted: new Map() };
  const status = (code, reason, message) => ({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });
  function list(what, items, q, defSort) {
    const sort = q.get('sort') || defSort;
    const order = q.get('order') || (sort === 'wait' ? 'desc' : 'asc');
    const key = [what, S.gen, sort, order, q.get('q') || '', q.get('queue') || '', q.get('pool') || ''].join('|');
    let all = S.sorted.get(key);
    if (!all) {
      const f = (q.get('q') || '').toLowerCase();
      all = items.filter((x) => (!f || (x.namespace + '/' + x.name).toLowerCase().includes(f)) &&
        (!q.get('queue') || x.queue === q.get('queue')) && (!q.get('pool') || x.pool === q.get('pool')));
      const k = { wait: (x) => x.waitingSeconds, name: (x) => x.namespace + '/' + x.name, queue: (x) => x.queue, pool: (x) => x.pool }[sort] ||
        ((x) => x.name);
      all = all.slice().sort((a, b) => (k(a) < k(b) ? -1 : k(a) > k(b) ? 1 : 0) * (order === 'desc' ? -1 : 1));
      S.sorted.set(key, all);
    }
    const offset = Math.max(0, parseInt(q.get('offset') || '0', 10) || 0);
    const limit = Math.min(500, Math.max(1, parseInt(q.get('limit') || '100', 10) || 100));
    return { total: all.length, offset, limit, items: all.slice(offset, offset + limit) };
  }
  function answer(url, token) {
    const p = url.pathname, q = url.searchParams;
    if (!token) return [401, status(401, 'Unauthorized', 'Unauthorized')];
    if (token !== 'good' && token !== 'norights') return [401, status(401, 'Unauthorized', 'Unauthorized')];
    const base = { generation: S.gen, now: Date.now() };
    if (S.dispatch) {
      if (p === '/api/v1/multicluster') {
        return [200, { served: true, jobs: [{ namespace: 'ml', name: 'job-1', phase: 'Racing', winner: null, members: [
          { cluster: 'cluster-a', state: 'Admitted', message: '' }, { cluster: 'cluster-b', state: 'Pending', message: 'queue full' }] }] }];
      }
      return [404, status(404, 'NotFound', 'not found')];
    }
    if (p === '/api/v1/info') return [200, { ...S.d.info, ...base, user: token === 'good' ? 'alice' : 'mallory' }];
    if (token === 'norights') {
      return [403, status(403, 'Forbidden', 'User "mallory" cannot get resource "pools" in API group "resource.aibee.cn" at the cluster scope')];
    }
    const B = S.big;
    switch (p) {
      case '/api/v1/overview': return [200, { ...S.d.overview, ...base }];
      case '/api/v1/queues': return [200, { ...S.d.queues, ...base }];
      case '/api/v1/multicluster': return [200, { ...S.d.multicluster, ...base }];
      case '/api/v1/queues/history':
        if (!S.d.queues.queues.some((x) => x.name === q.get('queue'))) return [404, status(404, 'NotFound', 'no queue ' + q.get('queue'))];
        return [200, { ...S.d['queues-history'], ...base, queue: q.get('queue'), resource: q.get('resource') }];
      case '/api/v1/gangs': return [200, { ...base, ...list('gangs', B ? B.gangs : S.d.gangs.items, q, 'wait') }];
      case '/api/v1/pending': return [200, { ...base, ...list('pending', B ? B.pending : S.d.pending.items, q, 'wait') }];
      case '/api/v1/nodes/map':
        return [200, B ? { ...base, pools: B.pools, fields: S.d['nodes-map'].fields, nodes: B.map } : { ...S.d['nodes-map'], ...base }];
      case '/api/v1/nodes': {
        if (!B) {
          const f = q.get('q') || '';
          const items = S.d.nodes.items.filter((x) => x.name.includes(f) && (!q.get('pool') || x.pool === q.get('pool')));
          return [200, { ...base, total: items.length, offset: 0, limit: 100, items }];
        }
        const offset = parseInt(q.get('offset') || '0', 10) || 0, limit = Math.min(500, parseInt(q.get('limit') || '100', 10) || 100);
        const f = q.get('q') || '';
        const idx = [];
        for (let i = 0; i < B.map.length; i++) if (!f || B.map[i][0].includes(f)) idx.push(i);
        return [200, { ...base, total: idx.length, offset, limit,
          items: idx.slice(offset, offset + limit).map((i) => nodeItem(B.map[i][0], B.pools[B.map[i][1]], B.map[i])) }];
      }
    }
    const m = p.match(/^\/debug\/(pods|podgroups)\/([^/]+)\/([^/]+)$/);
    if (m && S.d[`debug-${m[1]}-${m[2]}-${m[3]}`]) return [200, S.d[`debug-${m[1]}-${m[2]}-${m[3]}`]];
    return [404, status(404, 'NotFound', 'no decision recorded for ' + p)];
  }
  const types = { html: 'text/html', js: 'text/javascript', css: 'text/css', svg: 'image/svg+xml' };
  const srv = http.createServer((req, res) => {
    S.requests++;
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/') {
      res.writeHead(302, { Location: '/ui/' });
      return res.end();
    }
    if (url.pathname.startsWith('/ui/')) {
      const name = url.pathname.slice(4) || 'index.html';
      const file = path.join(web, name);
      if (name.includes('/') || !fs.existsSync(file)) {
        res.writeHead(404);
        return res.end('not found\n');
      }
      const ext = name.split('.').pop();
      // The policy pkg/server/http.c (add_safety_headers) sends with a page,
      // so that this mode finds what it would block.
      const csp = ext === 'html' ? { 'Content-Security-Policy': "default-src 'self'; script-src 'self'; " +
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; " +
        "base-uri 'none'; frame-ancestors 'none'; form-action 'self'" } : {};
      res.writeHead(200, { 'Content-Type': types[ext] || 'text/plain', ...csp });
      return res.end(fs.readFileSync(file));
    }
    const auth = req.headers.authorization || '';
    const [code, body] = answer(url, auth.startsWith('Bearer ') ? auth.slice(7) : '');
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', ...(code === 401 ? { 'WWW-Authenticate': 'Bearer' } : {}) });
    res.end(text);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({ S, srv, port: srv.address().port })));
}

const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];

async function runFixtures() {
  const { S, srv, port } = await fixtureServer();
  const base = `http://127.0.0.1:${port}`;
  const { browser, page } = await launch();
  try {
    const resp = await page.goto(base + '/');
    ok(resp.url() === base + '/ui/', '/ redirects to /ui/');
    await waitText(page.locator('#login-why'), /401/, 'no token: the sign-in form says 401');
    await signIn(page, 'bogus');
    await waitText(page.locator('#login-why'), /token rejected \(401/, 'a wrong token: "token rejected (401)"');
    await signIn(page, 'norights');
    await waitText(page.locator('#forbidden'), /you may not .*403.*cannot get resource "pools"/,
      'a token without rights: 403 and the Status message on the page');
    await page.click('#signout');
    await signIn(page, 'good');
    const train = page.locator('.pool[data-pool="train"]');
    await waitText(train.locator('h3'), /^train$/, 'overview: pool train');
    await waitText(train.locator('[data-res=gpu] .nums'), /used 20\.5 \/ 32 · shared 2 · free 11\.5 · pending 8/, 'overview: train GPU numbers');
    await waitText(train.locator('[data-res=cpu] .nums'), /used 120 \/ 256 /, 'overview: train CPU in cores');
    await waitText(train.locator('[data-res=memory] .nums'), /used 600Gi \/ 1Ti /, 'overview: train memory');
    await waitText(page.locator('.pool[data-pool="infer"] .facts'), /1 not ready/, 'overview: pool infer, a node not ready');
    await waitText(page.locator('#totals [data-res=gpu] .nums'), /used 27\.5 \/ 40/, 'overview: totals');
    await waitText(page.locator('main table'), /train→infer4/, 'overview: train lends 4 GPUs to infer');
    await waitText(page.locator('#leader'), /sched-0.*kube-system\/ai-scheduler-0.*0\.25\.0-fixture/, 'overview: leader and version');
    ok(await page.locator('#banner').isHidden(), 'the leader: no follower banner');
    await shot(page, 'dashboard-fixtures-overview');

    // Live: a change on the server is on the page within 2 s, with no reload.
    await page.evaluate(() => (window.__marker = 'same page'));
    S.d.overview.pools[0].resources.gpu.used = 21.5;
    S.d.overview.pools[0].resources.gpu.free = 10.5;
    S.d.info.isLeader = false;
    S.d.info.leader = 'sched-1';
    S.gen++;
    const t0 = Date.now();
    await waitText(train.locator('[data-res=gpu] .nums'), /used 21\.5 \/ 32/, 'live: the new GPU use is shown', 4000);
    const dt = Date.now() - t0;
    // The page polls every 1 s, so 2 s holds with room; the margin is for a
    // loaded machine (as in the e2e mode), not for a slower design.
    ok(dt <= 3000, `live: shown ${dt} ms after the change (2 s + margin)`);
    ok((await page.evaluate(() => window.__marker)) === 'same page', 'live: without a reload');
    await waitText(page.locator('#banner'), /follower.*leader is sched-1/, 'a follower: the banner names the leader');
    S.d.info.isLeader = true;
    S.gen++;

    await go(page, 'queues');
    const rows = page.locator('#queue-tree tbody tr');
    await waitText(rows.nth(0), /^root/, 'queues: root first');
    ok((await page.locator('#queue-tree tbody tr[data-queue]').count()) === 5, 'queues: 5 queues');
    await sameCells(page.locator('#queue-tree tr[data-queue="team-a-nlp"]'),
      ['└ team-a-nlp', '1', '8', '–', '13', '12', '4', '4', '2', '', ''],
      'queues: team-a-nlp weight, quota, limit, fair share, allocated, pending, pods');
    await sameCells(page.locator('#queue-tree tr[data-queue-pool="team-a/infer"]'),
      ['pool infer', '2', '–', '–', '4', '2', '0', '–', '0', '', ''], 'queues: team-a in pool infer, a row of its own');
    await waitText(page.locator('#queue-tree tr[data-queue="broken"]'), /parent queue "nowhere" does not exist/,
      'queues: an invalid queue says why');
    ok(await page.locator('#queue-tree tr[data-queue="team-a-nlp"] span').evaluate((e) => parseInt(e.style.paddingLeft, 10) === 36),
      'queues: team-a-nlp indented two levels');
    await page.click('#per-pool');
    await waitFor(page, () => !document.querySelector('#queue-tree tr.pool-row'));
    ok((await page.locator('#queue-tree tbody tr').count()) === 5, 'queues: without per pool, 5 rows');
    await page.click('#per-pool');
    await waitText(page.locator('#queue-chart h3'), /^team-a: gpu allocated against fair share/, 'queues: the chart of the first child');
    ok((await page.locator('#queue-chart polyline').count()) === 2, 'queues: two lines');
    await page.click('#queue-tree tr[data-queue="team-b"]');
    await waitText(page.locator('#queue-chart h3'), /team-b: gpu/, 'queues: a click charts that queue');
    await shot(page, 'dashboard-fixtures-queues');

    await go(page, 'gangs');
    await waitText(page.locator('#gangs tbody tr').first(), /llama-70b.*Pending.*0 \/ 4.*12m 34s.*zone=zone-a.*needs 32, 8 free/,
      'gangs: the waiting gang, its wait, domain and reason');
    await shot(page, 'dashboard-fixtures-gangs');

    await go(page, 'pending');
    ok((await page.locator('#pending tbody tr').count()) === 4, 'pending: 4 rows');
    await page.click('#pending tr[data-name="ml/sweep-17"]');
    const dec = await waitText(page.locator('#decision'), /hint: .*raise the quota.*outcome: unschedulable/, 'pending: a click shows the decision');
    ok(!/^[^{]*\bnull\b/.test(dec), 'pending: the decision panel shows no "null" before its JSON');
    await shot(page, 'dashboard-fixtures-pending');
    await page.click('#pending tr[data-name="web/serve-3"]');
    await waitText(page.locator('#decision'), /waiting for its first attempt.*No decision recorded/, 'pending: no decision: the reason');
    await page.click('#pending tr[data-name="ml/llama-70b"]');
    await waitText(page.locator('#decision'), /Gang ml\/llama-70b.*32 GPUs at once.*3 × Insufficient/, 'pending: a gang\'s decision');
    await page.selectOption('main select >> nth=0', 'name');
    await page.selectOption('main select >> nth=1', 'asc');
    await waitText(page.locator('#pending tbody tr').first(), /ml.*eval-2/, 'pending: sorted by name on the server');
    // the text filters: typed into, the list is fetched again from its first page
    await page.fill('main input[placeholder="filter by name…"]', 'sweep');
    await waitFor(page, () => document.querySelectorAll('#pending tbody tr').length === 1);
    ok(/sweep-17/.test(await page.locator('#pending tbody tr').first().textContent()), 'pending: filtered by name on the server');
    await page.fill('main input[placeholder="filter by name…"]', '');
    await page.fill('main input[placeholder="queue"]', 'nope');
    await waitFor(page, () => document.querySelectorAll('#pending tbody tr').length === 0);
    ok(true, 'pending: filtered by queue on the server');
    await page.fill('main input[placeholder="queue"]', '');
    await waitFor(page, () => document.querySelectorAll('#pending tbody tr').length === 4);

    await go(page, 'nodes');
    ok((await page.locator('#nodes tbody tr').count()) === 7, 'nodes: 7 rows');
    await page.locator('#map').click({ position: { x: 5, y: 45 } });
    await waitText(page.locator('#node'), /gpu-a1.*ml\/notebook-1: 0\.5.*reserved by ml\/llama-70b-0/, 'nodes: a click on the map shows slots, fractions, reservation');
    await page.click('#nodes tr:has-text("gpu-a3")');
    await waitText(page.locator('#node'), /gpu-a3.*cordoned.*ml\/nb-2: 0\.5.*ml\/nb-3: 0\.5/, 'nodes: a row shows a cordoned node with two fractions');
    await shot(page, 'dashboard-fixtures-nodes');

    await go(page, 'multicluster');
    await waitText(page.locator('#mc-not-served'), /served by the dispatch controller/, 'multi-cluster: served by the dispatch controller');

    // The dispatch controller's server: no /api/v1/info; its multi-cluster
    // page lists the jobs and their members.
    S.dispatch = true;
    await page.reload();
    await waitText(page.locator('#mc-jobs tbody tr').first(), /^mljob-1Racing–cluster-a: Admittedcluster-b: Pending — queue full$/,
      'dispatch controller: the multi-cluster page without /api/v1/info, jobs and their members');
    await page.evaluate(() => (location.hash = '#/overview'));
    await waitText(page.locator('main'), /404/, 'dispatch controller: the other pages say 404');
    S.dispatch = false;
    await page.evaluate(() => (location.hash = '#/overview'));
    await page.reload();
    await waitText(train.locator('h3'), /^train$/, 'back on the scheduler: overview');

    // Scale: 10,000 nodes, 100,000 pending pods, 5,000 gangs.
    const tg = Date.now();
    S.big = generate(10000, 100000, 5000);
    console.log(`# generated 10,000 nodes, 100,000 pending, 5,000 gangs in ${Date.now() - tg} ms`);
    S.gen++;
    const timings = {};
    for (const name of ['pending', 'nodes', 'gangs', 'overview', 'queues']) {
      const wall = [], inPage = [];
      for (let i = 0; i < 5; i++) {
        await go(page, 'multicluster');
        const t = Date.now();
        await go(page, name);
        wall.push(Date.now() - t);
        inPage.push(await page.evaluate(() => window.__dash.last.ms));
      }
      timings[name] = { wall: median(wall), page: median(inPage) };
      console.log(`# ${name} at scale: median of 5: ${timings[name].page.toFixed(1)} ms fetch+render in the page, ${timings[name].wall} ms wall`);
    }
    await go(page, 'pending');
    await waitText(page.locator('.pager .count'), /^1–100 of 100000$/, 'scale: pending pages 100,000 pods');
    ok((await page.locator('#pending tbody tr').count()) === 100, 'scale: one page of 100 rows in the DOM');
    const tn = Date.now();
    await page.click('.pager button:has-text("next")');
    await waitText(page.locator('.pager .count'), /^101–200 of 100000$/, 'scale: the next page');
    console.log(`# pending next page: ${Date.now() - tn} ms wall`);
    const tl = Date.now();
    S.gen++;
    await waitFor(page, (g) => window.__dash.last && window.__dash.last.generation === g, S.gen, 3000);
    console.log(`# pending live refresh at scale: ${Date.now() - tl} ms from the change to the page redrawn`);
    await go(page, 'nodes');
    await waitText(page.locator('main p.muted').first(), /^10000 nodes in 8 pools/, 'scale: the map has 10,000 nodes');
    await shot(page, 'dashboard-fixtures-nodes-10k');
    console.log('# timings ' + JSON.stringify(timings));
  } finally {
    await browser.close();
    srv.close();
  }
}

// ------------------------------------------------------------ e2e

async function runE2e() {
  const env = (k) => {
    if (!process.env[k]) throw new Error('dashboard.mjs --e2e: ' + k + ' is not set');
    return process.env[k];
  };
  const base = env('DASH_URL');
  const expect = JSON.parse(fs.readFileSync(env('DASH_EXPECT'), 'utf8'));
  const { browser, page } = await launch();
  try {
    const resp = await page.goto(base + '/');
    ok(resp.url() === base + '/ui/', '/ redirects to /ui/');
    await waitText(page.locator('#login-why'), /401/, 'no token: the page shows 401', 10000);
    await signIn(page, env('DASH_TOKEN_NORIGHTS'));
    await waitText(page.locator('#forbidden'), /you may not .*403/, 'a token without rights: 403 shown', 10000);
    await page.click('#signout');
    await signIn(page, env('DASH_TOKEN'));
    for (const p of expect.pools) {
      const card = page.locator(`.pool[data-pool="${p.name}"]`);
      await waitText(card.locator('h3'), new RegExp('^' + p.name + '$'), 'overview: pool ' + p.name, 10000);
      await waitText(card.locator('[data-res=gpu] .nums'), new RegExp(p.gpu), `overview: pool ${p.name} GPUs: ${p.gpu}`);
      await waitText(card.locator('.facts').first(), new RegExp(p.facts), `overview: pool ${p.name}: ${p.facts}`);
    }
    await shot(page, 'dashboard-overview');

    await go(page, 'queues');
    for (const q of expect.queues) {
      const row = page.locator(`#queue-tree tr[data-queue="${q.name}"]`);
      await waitText(row, new RegExp(q.name), 'queues: ' + q.name, 10000);
      const td = await row.locator('td').allTextContents();
      ok(td[0] === q.label && td[2] === q.quota && td[3] === q.limit,
        `queues: ${q.label} quota ${q.quota} limit ${q.limit}: ${JSON.stringify(td)}`);
    }
    await page.click('#queue-tree tr[data-queue="team-b"]');
    await waitText(page.locator('#queue-chart'), /^team-b: gpu allocated against fair share.*allocated \(now 0\.5\)fair share \(now 0\.5\)$/,
      'queues: team-b\'s chart, allocated 0.5 GPU and its fair share now');
    await shot(page, 'dashboard-queues');

    await go(page, 'gangs');
    await waitText(page.locator(`#gangs tbody tr:has-text("${expect.gang.name}")`), new RegExp(expect.gang.reason),
      `gangs: ${expect.gang.name} waits: ${expect.gang.reason}`, 15000);
    await shot(page, 'dashboard-gangs');

    await go(page, 'pending');
    const row = page.locator(`#pending tr[data-name="${expect.pending.ns}/${expect.pending.name}"]`);
    await waitText(row, new RegExp(expect.pending.reason), `pending: ${expect.pending.name}: ${expect.pending.reason}`, 15000);
    await row.click();
    await waitText(page.locator('#decision'), new RegExp(expect.pending.decision), 'pending: a click shows its decision', 10000);
    await shot(page, 'dashboard-pending');

    await go(page, 'nodes');
    await waitText(page.locator(`#nodes tr:has-text("${expect.fraction.node}")`), new RegExp(expect.fraction.node), 'nodes: ' + expect.fraction.node);
    await page.click(`#nodes tr:has-text("${expect.fraction.node}")`);
    await waitText(page.locator('#node'), new RegExp(expect.fraction.pod.replace('/', '\\/') + ': ' + expect.fraction.fraction),
      `nodes: ${expect.fraction.pod} holds ${expect.fraction.fraction} of a GPU`);
    await shot(page, 'dashboard-nodes');

    // Live: a pod that binds shows on the overview without a reload.
    await go(page, 'overview');
    const nums = page.locator(`.pool[data-pool="${expect.bind.pool}"] [data-res=cpu] .nums`);
    const before = await nums.textContent();
    const m = before.match(/used ([0-9.]+) \//);
    ok(m, `live: pool ${expect.bind.pool} CPU use is shown: "${before}"`);
    const after = String(Math.round((parseFloat(m[1]) + expect.bind.cpuDelta) * 100) / 100);
    await page.evaluate(() => (window.__marker = 'same page'));
    execFileSync('bash', ['-c', env('DASH_BIND_CMD')], { stdio: 'inherit' });
    const t0 = Date.now();
    await waitText(nums, new RegExp('used ' + after.replace('.', '\\.') + ' /'),
      `live: pool ${expect.bind.pool} CPU use goes from ${m[1]} to ${after}`, 4000);
    const dt = Date.now() - t0;
    ok(dt <= 3000, `live: on the page ${dt} ms after the pod bound (2 s + margin)`);
    ok((await page.evaluate(() => window.__marker)) === 'same page', 'live: without a reload');
  } finally {
    await browser.close();
  }
}

const run = mode === '--fixtures' ? runFixtures : mode === '--e2e' ? runE2e : null;
if (!run) {
  console.error('usage: node dashboard.mjs --fixtures | --e2e');
  process.exit(2);
}
run().then(() => {
  console.log(`# ${passed} checks passed`);
  // make test's closing summary (test/summary.sh) counts them; the e2e
  // runner records the e2e mode's cases itself
  if (process.env.TEST_SUMMARY && mode === '--fixtures') {
    fs.appendFileSync(process.env.TEST_SUMMARY, `${passed} 0 dashboard UI (fixtures)\n`);
  }
}, (e) => {
  console.error(e.message);
  process.exit(1);
});
