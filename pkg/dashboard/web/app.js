// app.js -- the dashboard's single-page app: sign-in, hash routing, the
// 1 s /api/v1/info poll that refetches the page shown when the scheduler's
// generation changes, and the six pages. Data only through textContent and
// attributes (never innerHTML): workload names are untrusted.
import { h, bar, fmt, fmtDur, lineChart, drawMap, mapColor, DRA_MARK } from './draw.js';

const TOKEN_KEY = 'aisched.token';
const PAGE = 100; // rows per page: the server pages, the browser renders one page only
const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------ API

class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

async function api(path) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(path, { headers, cache: 'no-store' });
  let body = null;
  try {
    body = await r.json();
  } catch (e) {
    body = null;
  }
  if (r.ok) return body;
  const msg = body && typeof body.message === 'string' ? body.message : r.statusText;
  if (r.status === 401) {
    showLogin(token ? 'token rejected (401 Unauthorized): ' + msg : 'a bearer token is needed (401 Unauthorized)');
  }
  throw new ApiError(r.status, msg);
}

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

// What a failed request shows, in place of the page's data.
function errorView(e) {
  if (e.code === 403) return h('p', { class: 'error', id: 'forbidden' }, 'you may not see this (403 Forbidden): ' + e.message);
  if (e.code === 401) return h('p', { class: 'error' }, 'sign in first (401 Unauthorized)');
  if (e.code === 503) return h('p', { class: 'banner' }, 'not available here (503): ' + e.message);
  return h('p', { class: 'error' }, (e.code ? e.code + ': ' : '') + e.message);
}

// A page's data: on an error the page shows it in place of its data, and
// the error goes on to the caller (the refresh loop).
async function load(into, request) {
  try {
    return await request;
  } catch (e) {
    into.replaceChildren(errorView(e));
    throw e;
  }
}

// ------------------------------------------------------------ shell

const state = { info: null, generation: null, page: null, view: null, signedOut: false };
window.__dash = { renders: 0, last: null, timings: [] }; // read by test/browser/dashboard.mjs

function showLogin(why) {
  $('login').hidden = false;
  $('main').hidden = true;
  $('login-why').textContent = why;
  $('login-why').className = 'error';
  state.generation = null;
}

function hideLogin() {
  $('login').hidden = true;
  $('main').hidden = false;
}

function setError(msg) {
  $('error').hidden = !msg;
  $('error').textContent = msg || '';
}

const pages = {
  overview: overviewPage,
  queues: queuesPage,
  gangs: gangsPage,
  pending: pendingPage,
  nodes: nodesPage,
  multicluster: multiclusterPage,
};

function route() {
  const name = (location.hash.replace(/^#\/?/, '').split(/[/?]/)[0] || 'overview');
  const page = pages[name] ? name : 'overview';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.getAttribute('href') === '#/' + page);
  if (page !== state.page) {
    state.page = page;
    const main = $('main');
    main.replaceChildren();
    state.view = pages[page](main);
  }
  refresh();
}

// Refetches what the page shows; its time (fetch + DOM) is recorded.
let refreshing = null;
let again = false;
async function refresh() {
  if (!state.view) return;
  if (refreshing) {
    again = true;
    return refreshing;
  }
  const view = state.view, page = state.page, generation = state.generation;
  const t0 = performance.now();
  refreshing = (async () => {
    try {
      await view.refresh();
    } catch (e) {
      if (!(e instanceof ApiError)) console.error(e);
    }
    const ms = performance.now() - t0;
    window.__dash.renders++;
    window.__dash.last = { page, ms, generation };
    window.__dash.timings.push({ page, ms });
    if (window.__dash.timings.length > 100) window.__dash.timings.shift();
  })();
  await refreshing;
  refreshing = null;
  if (again) {
    again = false;
    refresh();
  }
}

async function poll() {
  try {
    const info = await api('/api/v1/info');
    hideLogin();
    setError('');
    state.info = info;
    $('who').textContent = (info.user ? info.user + ' · ' : '') + 'ai-scheduler ' + (info.version || '');
    $('signout').hidden = !sessionStorage.getItem(TOKEN_KEY);
    const banner = $('banner');
    banner.hidden = !!info.isLeader;
    banner.textContent = info.isLeader ? '' : 'This scheduler is a follower: data comes from the leader only. The leader is ' +
      (info.leader || 'unknown') + (info.leaderPod ? ' (pod ' + info.leaderPod + ')' : '') + '.';
    if (info.generation !== state.generation) {
      state.generation = info.generation;
      if (!state.view) route();
      else refresh();
    }
  } catch (e) {
    if (e instanceof ApiError && e.code === 404) {
      // A server without /api/v1/info (the dispatch controller's serves
      // only its multi-cluster page): no generation to follow, so the page
      // shown is refetched on every poll.
      hideLogin();
      setError('');
      state.generation = 'none';
      if (!state.view) {
        if (!location.hash) location.hash = '#/multicluster';
        route();
      } else refresh();
      return;
    }
    if (e instanceof ApiError && e.code !== 401) setError('the scheduler answered ' + e.code + ': ' + e.message);
    else if (!(e instanceof ApiError)) setError('the scheduler cannot be reached: ' + e.message);
  }
}

function start() {
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = $('token').value.trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
    $('token').value = '';
    state.generation = null;
    poll();
  });
  $('signout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    state.generation = null;
    showLogin('signed out');
  });
  window.addEventListener('hashchange', () => {
    if (state.generation !== null) route();
  });
  poll();
  setInterval(poll, 1000);
}

// ------------------------------------------------------------ helpers

function table(cols, rows, onRow) {
  const head = h('tr', {}, cols.map((c) => h('th', { class: c.num ? 'num' : '' }, c.title)));
  const body = rows.map((r) => {
    const tr = h('tr', onRow ? { class: 'clickable' } : {}, cols.map((c) => {
      const v = c.get(r);
      return h('td', { class: c.num ? 'num' : c.cls || '' }, v instanceof Node ? v : v === null || v === undefined ? '–' : String(v));
    }));
    if (onRow) tr.addEventListener('click', () => onRow(r, tr));
    return tr;
  });
  return h('table', {}, h('thead', {}, head), h('tbody', {}, body));
}

// Offset paging controls; onChange(offset).
function pager(total, offset, limit, onChange) {
  const last = Math.max(0, Math.floor((total - 1) / limit) * limit);
  const prev = h('button', { type: 'button' }, '‹ prev');
  const next = h('button', { type: 'button' }, 'next ›');
  prev.disabled = offset <= 0;
  next.disabled = offset + limit >= total;
  prev.addEventListener('click', () => onChange(Math.max(0, offset - limit)));
  next.addEventListener('click', () => onChange(Math.min(last, offset + limit)));
  const shown = total ? (offset + 1) + '–' + Math.min(total, offset + limit) : '0';
  return h('span', { class: 'pager' }, prev, ' ', h('span', { class: 'count' }, shown + ' of ' + total), ' ', next);
}

function input(placeholder, onChange) {
  const el = h('input', { type: 'search', placeholder });
  let t = null;
  el.addEventListener('input', () => {
    clearTimeout(t);
    t = setTimeout(() => onChange(el.value.trim()), 250);
  });
  return el;
}

function select(options, value, onChange) {
  const el = h('select', {}, options.map(([v, label]) => h('option', { value: v }, label)));
  el.value = value;
  el.addEventListener('change', () => onChange(el.value));
  return el;
}

const RES = ['gpu', 'cpu', 'memory'];

// ------------------------------------------------------------ Overview

function overviewPage(root) {
  const data = h('div');
  root.append(h('h2', {}, 'Overview'), legend(), data);
  return {
    async refresh() {
      const o = await load(data, api('/api/v1/overview'));
      const pools = (o.pools || []).map((p) => h('div', { class: 'card pool', 'data-pool': p.name },
        h('h3', {}, p.name),
        h('div', { class: 'facts' },
          `${p.nodes} nodes · ${p.cordoned} cordoned · ${p.notReady} not ready · ${p.pendingPods} pending pods · ${p.waitingGangs} waiting gangs`),
        RES.map((k) => resBar(k, p.resources && p.resources[k])),
        lendList('lends to', p.lentTo), lendList('borrows from', p.borrowedFrom)));
      const totals = o.totals ? h('div', { class: 'card', id: 'totals' }, h('h3', {}, 'Cluster totals'),
        RES.map((k) => resBar(k, o.totals[k]))) : null;
      const lending = (o.lending || []).length ? table([
        { title: 'from', get: (l) => l.from },
        { title: '', get: () => '→' },
        { title: 'to', get: (l) => l.to },
        { title: 'GPU', num: 1, get: (l) => fmt.gpu(l.gpu) },
        { title: 'CPU', num: 1, get: (l) => fmt.cpu(l.cpu) },
        { title: 'memory', num: 1, get: (l) => fmt.memory(l.memory) },
        { title: 'pods', num: 1, get: (l) => l.pods },
      ], o.lending) : h('p', { class: 'muted' }, 'No pool lends to another.');
      const ld = o.leader || state.info || {};
      data.replaceChildren(
        h('div', { class: 'cards' }, pools, totals),
        h('h3', {}, 'Borrowed capacity between pools'), lending,
        h('p', { class: 'muted', id: 'leader' }, 'Leader: ' + (ld.leader || ld.identity || '?') +
          (ld.leaderPod ? ' (pod ' + ld.leaderPod + ')' : '') + ' · version ' + (ld.version || '?')));
    },
  };
}

function legend() {
  const item = (c, t) => h('span', {}, h('i', { style: 'background:' + c }), t);
  return h('p', { class: 'legend' }, item('var(--used)', 'used'), item('var(--shared)', 'shared (split into fractions)'),
    item('var(--free)', 'free'), item('var(--pending)', 'pending (asked by pending pods)'));
}

function resBar(kind, r) {
  if (!r) return null;
  const f = fmt[kind];
  return h('div', { class: 'bar', 'data-res': kind },
    h('span', { class: 'label' }, kind === 'gpu' ? 'GPU' : kind === 'cpu' ? 'CPU' : 'memory'),
    bar(r),
    h('span', { class: 'nums' },
      `used ${f(r.used)} / ${f(r.capacity)} · shared ${f(r.shared)} · free ${f(r.free)} · pending ${f(r.pending)}`));
}

function lendList(what, list) {
  if (!list || !list.length) return null;
  return h('div', { class: 'facts' }, what + ': ' + list.map((l) =>
    `${l.pool} (${fmt.gpu(l.gpu)} GPU, ${fmt.cpu(l.cpu)} CPU, ${fmt.memory(l.memory)}, ${l.pods} pods)`).join('; '));
}

// ------------------------------------------------------------ Queues

function queuesPage(root) {
  const st = { res: 'gpu', queue: null, perPool: true };
  const perPool = h('input', { type: 'checkbox', id: 'per-pool', checked: '' });
  perPool.addEventListener('change', () => {
    st.perPool = perPool.checked;
    refresh();
  });
  const data = h('div');
  const chartBox = h('div', { class: 'card', id: 'queue-chart' });
  root.append(h('h2', {}, 'Queues'),
    h('div', { class: 'toolbar' }, 'Resource ', select(RES.map((r) => [r, r]), st.res, (v) => {
      st.res = v;
      refresh();
    }), h('label', {}, perPool, ' per pool'),
    h('span', { class: 'muted' }, 'Click a queue for its allocation against fair share over time.')),
    data, chartBox);
  return {
    async refresh() {
      const q = await load(data, api('/api/v1/queues'));
      const queues = q.queues || [];
      const depth = {};
      for (const x of queues) depth[x.name] = x.parent && depth[x.parent] !== undefined ? depth[x.parent] + 1 : 0;
      if (!st.queue && queues.length) st.queue = (queues.find((x) => x.parent) || queues[0]).name;
      const f = fmt[st.res];
      // A row per queue, then (with "per pool") a row per pool it has
      // demand or share in, with that pool's numbers.
      const rows = [];
      for (const x of queues) {
        rows.push({ q: x, R: (x.resources && x.resources[st.res]) || {}, pool: null });
        if (st.perPool) {
          for (const p of x.pools || []) {
            if (p && typeof p === 'object' && inUse(p)) rows.push({ q: x, R: (p.resources && p.resources[st.res]) || {}, pool: p });
          }
        }
      }
      const weight = (e) => (e.R.weight !== undefined && e.R.weight !== null ? e.R.weight : e.pool ? null : e.q.weight);
      const t = table([
        { title: 'queue', get: (e) => h('span', { style: 'padding-left:' + (depth[e.q.name] * 18 + (e.pool ? 18 : 0)) + 'px' },
          e.pool ? 'pool ' + e.pool.name : (depth[e.q.name] ? '└ ' : '') + e.q.name) },
        { title: 'weight', num: 1, get: weight },
        { title: 'quota', num: 1, get: (e) => f(e.R.quota) },
        { title: 'limit', num: 1, get: (e) => f(e.R.limit) },
        { title: 'fair share', num: 1, get: (e) => f(e.R.fairShare) },
        { title: 'allocated', num: 1, get: (e) => f(e.R.allocated) },
        { title: 'pending', num: 1, get: (e) => f(e.R.pending) },
        { title: 'pods running', num: 1, get: (e) => (e.pool ? null : e.q.runningPods) },
        { title: 'pods pending', num: 1, get: (e) => (e.pool ? e.pool.pendingPods : e.q.pendingPods) },
        { title: 'preemptible', get: (e) => (e.pool || e.q.preemptible === undefined ? '' : e.q.preemptible ? 'yes' : 'no') },
        { title: 'status', cls: 'reason', get: (e) => (e.pool || e.q.valid !== false ? '' : h('span', { class: 'bad' }, e.q.message || 'invalid')) },
      ], rows, (e) => {
        st.queue = e.q.name;
        refresh();
      });
      t.id = 'queue-tree';
      for (const [i, tr] of [...t.tBodies[0].rows].entries()) {
        const e = rows[i];
        if (e.pool) {
          tr.classList.add('pool-row');
          tr.dataset.queuePool = e.q.name + '/' + e.pool.name;
        } else {
          tr.dataset.queue = e.q.name;
          if (e.q.name === st.queue) tr.classList.add('selected');
        }
      }
      data.replaceChildren(t);
      if (!st.queue) return chartBox.replaceChildren(h('p', { class: 'muted' }, 'No queues.'));
      try {
        const hist = await api('/api/v1/queues/history' + qs({ queue: st.queue, resource: st.res }));
        chartBox.replaceChildren(h('h3', {}, `${st.queue}: ${st.res} allocated against fair share`),
          lineChart(hist.points || [], f, [['allocated', 'var(--used)'], ['fair share', 'var(--fair)']]));
      } catch (e) {
        chartBox.replaceChildren(e.code === 404 ? h('p', { class: 'muted' }, `${st.queue}: no samples yet (one every 10 s).`) : errorView(e));
      }
    },
  };
}

// A queue's entry for a pool is worth a row when something is there: a
// share, an allocation, demand.
function inUse(p) {
  if (p.pendingPods > 0) return true;
  return RES.some((r) => {
    const q = (p.resources && p.resources[r]) || {};
    return q.fairShare > 0 || q.allocated > 0 || q.pending > 0;
  });
}

// ------------------------------------------------------------ Gangs

function gangsPage(root) {
  const st = { offset: 0, sort: 'wait', order: 'desc', q: '' };
  const data = h('div');
  root.append(h('h2', {}, 'Gangs'), sortBar(st), data);
  return {
    async refresh() {
      const g = await load(data, api('/api/v1/gangs' + qs({ offset: st.offset, limit: PAGE, sort: st.sort,
        order: st.order, q: st.q })));
      const t = table([
        { title: 'namespace', get: (x) => x.namespace },
        { title: 'name', get: (x) => x.name },
        { title: 'queue', get: (x) => x.queue },
        { title: 'pool', get: (x) => x.pool },
        { title: 'phase', get: (x) => h('span', { class: 'phase-' + x.phase }, x.phase) },
        { title: 'placed / min', num: 1, get: (x) => `${x.placed} / ${x.minMember}` },
        { title: 'members', num: 1, get: (x) => x.members },
        { title: 'waiting', num: 1, get: (x) => fmtDur(x.waitingSeconds) },
        { title: 'waits behind', get: (x) => x.waitingBehind },
        // key=domain once a member holds a node; before, the level it asks for.
        { title: 'topology', get: (x) => (!x.topology ? null : x.topology.domain ? `${x.topology.key}=${x.topology.domain}`
          : `${x.topology.key} (${x.topology.required ? 'required' : 'preferred'})`) },
        { title: 'reason', cls: 'reason', get: (x) => x.reason },
      ], g.items || []);
      t.id = 'gangs';
      data.replaceChildren(h('div', { class: 'toolbar' }, pager(g.total, g.offset, g.limit || PAGE, (o) => {
        st.offset = o;
        refresh();
      })), t);
    },
  };
}

// A control's handler on a list page: st[key] takes the value, the list
// goes back to its first page and is fetched again.
function refilter(st, key) {
  return (v) => {
    st[key] = v;
    st.offset = 0;
    refresh();
  };
}

function sortBar(st, extra) {
  return h('div', { class: 'toolbar' },
    'Sort by ', select([['wait', 'wait time'], ['queue', 'queue'], ['pool', 'pool'], ['name', 'name']], st.sort,
      refilter(st, 'sort')),
    select([['desc', 'descending'], ['asc', 'ascending']], st.order, refilter(st, 'order')),
    input('filter by name…', refilter(st, 'q')), extra || null);
}

// ------------------------------------------------------------ Pending

function pendingPage(root) {
  const st = { offset: 0, sort: 'wait', order: 'desc', q: '', queue: '', pool: '', sel: null };
  const data = h('div');
  const panel = h('aside', { class: 'panel', id: 'decision', hidden: '' });
  const extra = h('span', {}, input('queue', refilter(st, 'queue')), ' ', input('pool', refilter(st, 'pool')));
  root.append(h('h2', {}, 'Pending'), sortBar(st, extra), h('div', { class: 'split' }, data, panel));
  async function openDecision(x) {
    st.sel = x.namespace + '/' + x.name;
    panel.hidden = false;
    const title = h('h3', {}, `${x.kind === 'gang' ? 'Gang' : 'Pod'} ${x.namespace}/${x.name}`);
    const close = h('button', { type: 'button' }, 'close');
    close.addEventListener('click', () => {
      st.sel = null;
      panel.hidden = true;
    });
    panel.replaceChildren(title, close, h('p', { class: 'reason' }, x.reason), h('p', { class: 'muted' }, 'loading the decision…'));
    if (!x.hasDecision) {
      panel.replaceChildren(title, close, h('p', { class: 'reason' }, x.reason),
        h('p', { class: 'muted' }, 'No decision recorded for it yet; the reason above is the last word on it.'));
      return;
    }
    const path = (x.kind === 'gang' ? '/debug/podgroups/' : '/debug/pods/') +
      encodeURIComponent(x.namespace) + '/' + encodeURIComponent(x.name);
    try {
      const d = await api(path);
      // replaceChildren would show a null as the text "null": leave it out.
      const parts = [title, close];
      if (!(d && d.hint === x.reason)) parts.push(h('p', { class: 'reason' }, x.reason));
      parts.push(decisionView(d));
      panel.replaceChildren(...parts);
    } catch (e) {
      panel.replaceChildren(title, close, h('p', { class: 'reason' }, x.reason), errorView(e));
    }
  }
  return {
    async refresh() {
      const p = await load(data, api('/api/v1/pending' + qs({ offset: st.offset, limit: PAGE, sort: st.sort,
        order: st.order, q: st.q, queue: st.queue, pool: st.pool })));
      const items = p.items || [];
      const t = table([
        { title: 'kind', get: (x) => x.kind },
        { title: 'namespace', get: (x) => x.namespace },
        { title: 'name', get: (x) => x.name },
        { title: 'queue', get: (x) => x.queue },
        { title: 'pool', get: (x) => x.pool },
        { title: 'waiting', num: 1, get: (x) => fmtDur(x.waitingSeconds) },
        { title: 'gang', get: (x) => x.gang },
        { title: 'reason', cls: 'reason', get: (x) => x.reason },
      ], items, (x, tr) => {
        for (const r of tr.parentNode.rows) r.classList.remove('selected');
        tr.classList.add('selected');
        openDecision(x);
      });
      t.id = 'pending';
      for (const [i, tr] of [...t.tBodies[0].rows].entries()) {
        tr.dataset.name = items[i].namespace + '/' + items[i].name;
        if (tr.dataset.name === st.sel) tr.classList.add('selected');
      }
      data.replaceChildren(h('div', { class: 'toolbar' }, pager(p.total, p.offset, p.limit || PAGE, (o) => {
        st.offset = o;
        refresh();
      })), t);
    },
  };
}

// The explain record (`ai-scheduler explain`): its summary first (hint,
// outcome, message, why nodes were filtered out, the best nodes), then the
// whole document.
function decisionView(d) {
  const out = [];
  const line = (k, v) => (v === null || v === undefined || v === '' ? null : h('p', {}, h('b', {}, k + ': '), String(v)));
  out.push(line('hint', d.hint), line('outcome', d.outcome), line('message', d.message), line('pool', d.pool),
    line('attempts', d.attempts), line('nodes evaluated', d.nodesEvaluated), line('decided at', d.time));
  const filters = d.filters && typeof d.filters === 'object' ? Object.entries(d.filters) : [];
  if (filters.length) {
    out.push(h('h4', {}, 'Nodes filtered out'),
      h('ul', { class: 'filters' }, filters.sort((a, b) => b[1] - a[1]).map(([why, n]) => h('li', {}, `${n} × ${why}`))));
  }
  const top = Array.isArray(d.topNodes) ? d.topNodes : [];
  if (top.length) out.push(h('h4', {}, 'Best nodes'), h('ul', {}, top.map((t) => h('li', {}, `${t.node}: score ${t.score}`))));
  out.push(h('details', {}, h('summary', {}, 'the whole decision (JSON)'), h('pre', { class: 'json' }, JSON.stringify(d, null, 2))));
  return h('div', { class: 'decision' }, out);
}

// ------------------------------------------------------------ Nodes

function nodesPage(root) {
  const st = { offset: 0, q: '', pool: '', sel: null, map: null };
  const canvas = h('canvas', { id: 'map', width: 1000, height: 120 });
  const tip = h('div', { class: 'tip', hidden: '' });
  const info = h('p', { class: 'muted' });
  const data = h('div');
  const panel = h('aside', { class: 'panel', id: 'node', hidden: '' });
  const lg = (c, t) => h('span', {}, h('i', { style: 'background:' + c }), t);
  // Shown once the map has a node with DRA devices.
  const draLegend = lg(DRA_MARK, 'DRA devices (corner; the colour of a node without GPUs)');
  draLegend.hidden = true;
  root.append(h('h2', {}, 'Nodes'),
    h('p', { class: 'legend' }, lg(mapColor(0), 'GPUs idle'), lg(mapColor(0.5), 'half used'), lg(mapColor(1), 'all used'),
      lg('#cbd5e0', 'no GPU'), lg('#000', 'not ready'), h('span', {}, '□ cordoned (outlined)'),
      draLegend),
    info, canvas, tip,
    h('div', { class: 'toolbar' }, input('filter nodes…', refilter(st, 'q')), input('pool', refilter(st, 'pool'))),
    h('div', { class: 'split' }, data, panel), tip);
  const at = (ev) => (st.map ? st.map.layout.hit(ev.offsetX * (canvas.width / canvas.clientWidth),
    ev.offsetY * (canvas.height / canvas.clientHeight)) : -1);
  canvas.addEventListener('mousemove', (ev) => {
    const i = at(ev);
    if (i < 0) return (tip.hidden = true);
    const n = st.map.nodes[i];
    tip.hidden = false;
    tip.style.left = ev.clientX + 12 + 'px';
    tip.style.top = ev.clientY + 12 + 'px';
    tip.textContent = `${n[0]} · ${st.map.pools[n[1]]} · GPU ${n[4]}/${n[3]}${n[5] ? ' (' + n[5] + ' shared)' : ''}` +
      `${n[7] > 0 ? ` · DRA ${n[8]}/${n[7]}` : ''} · CPU ${n[6]}%`;
  });
  canvas.addEventListener('mouseleave', () => (tip.hidden = true));
  canvas.addEventListener('click', (ev) => {
    const i = at(ev);
    if (i >= 0) openNode(st.map.nodes[i][0]);
  });
  async function openNode(name) {
    st.sel = name;
    panel.hidden = false;
    panel.replaceChildren(h('h3', {}, name), h('p', { class: 'muted' }, 'loading…'));
    try {
      const r = await api('/api/v1/nodes' + qs({ q: name, limit: 50 }));
      const n = (r.items || []).find((x) => x.name === name);
      panel.replaceChildren(n ? nodeView(n) : h('p', {}, 'node ' + name + ' is gone'));
    } catch (e) {
      panel.replaceChildren(h('h3', {}, name), errorView(e));
    }
  }
  return {
    async refresh() {
      const [m, p] = await load(data, Promise.all([api('/api/v1/nodes/map'),
        api('/api/v1/nodes' + qs({ offset: st.offset, limit: PAGE, q: st.q, pool: st.pool }))]));
      const layout = drawMap(canvas, m.nodes || [], m.pools || []);
      st.map = { nodes: m.nodes || [], pools: m.pools || [], layout };
      const gpus = (m.nodes || []).reduce((a, n) => [a[0] + n[3], a[1] + n[4], a[2] + (n[7] || 0), a[3] + (n[8] || 0)], [0, 0, 0, 0]);
      const dra = gpus[2] > 0 ? ` · ${gpus[3]} of ${gpus[2]} DRA devices used` : '';
      draLegend.hidden = gpus[2] === 0;
      info.textContent = `${(m.nodes || []).length} nodes in ${(m.pools || []).length} pools · ${fmt.gpu(gpus[1])} of ${gpus[0]} GPUs used${dra}. Click a node for its GPU slots.`;
      const items = p.items || [];
      const hasDra = items.some((x) => x.draDevices && x.draDevices.total > 0);
      const t = table([
        { title: 'name', get: (x) => x.name },
        { title: 'pool', get: (x) => x.pool },
        { title: 'state', get: (x) => (!x.ready ? h('span', { class: 'bad' }, 'not ready') : x.cordoned ? h('span', { class: 'warn' }, 'cordoned') : 'ready') },
        { title: 'GPU whole', num: 1, get: (x) => x.gpu && x.gpu.whole },
        { title: 'GPU used', num: 1, get: (x) => x.gpu && fmt.gpu(x.gpu.used) },
        { title: 'GPU shared', num: 1, get: (x) => x.gpu && x.gpu.shared },
        { title: 'GPU free', num: 1, get: (x) => x.gpu && fmt.gpu(x.gpu.free) },
        hasDra ? { title: 'DRA devices', num: 1, get: draText } : null,
        { title: 'CPU', num: 1, get: (x) => x.cpu && `${fmt.cpu(x.cpu.used)} / ${fmt.cpu(x.cpu.capacity)}` },
        { title: 'memory', num: 1, get: (x) => x.memory && `${fmt.memory(x.memory.used)} / ${fmt.memory(x.memory.capacity)}` },
        { title: 'pods', num: 1, get: (x) => x.pods },
      ].filter(Boolean), items, (x) => {
        st.sel = x.name;
        panel.hidden = false;
        panel.replaceChildren(nodeView(x));
      });
      t.id = 'nodes';
      data.replaceChildren(h('div', { class: 'toolbar' }, pager(p.total, p.offset, p.limit || PAGE, (o) => {
        st.offset = o;
        refresh();
      })), t);
      const again = items.find((x) => x.name === st.sel);
      if (again) panel.replaceChildren(nodeView(again));
    },
  };
}

// A node's DRA devices "used / total" ('' when it has none).
function draText(x) {
  const d = x.draDevices;
  return d && d.total > 0 ? `${d.used} / ${d.total}` : '';
}

function nodeView(n) {
  const slots = (n.slots || []).map((s) => {
    const fr = s.fractions || [];
    const cls = 'slot' + (s.used ? ' used' : '') + (fr.length ? ' frac' : '') + (s.reservation ? ' resv' : '');
    return h('div', { class: cls, 'data-slot': s.index },
      h('b', {}, 'GPU ' + s.index), ' ', s.used ? (fr.length ? 'shared' : 'used') : 'free',
      fr.map((f) => h('div', {}, `${f.pod}: ${fmt.gpu(f.fraction)}`)),
      s.reservation ? h('div', { class: 'muted' }, 'reserved by ' + s.reservation) : null);
  });
  return h('div', {},
    h('h3', {}, n.name),
    h('p', {}, `pool ${n.pool} · ${!n.ready ? 'not ready' : n.cordoned ? 'cordoned' : 'ready'} · ${n.pods} pods`),
    h('p', {}, `GPU: ${n.gpu.whole} whole, ${fmt.gpu(n.gpu.used)} used, ${n.gpu.shared} shared, ${fmt.gpu(n.gpu.free)} free`),
    n.draDevices && n.draDevices.total > 0
      ? h('p', { class: 'dra' }, `DRA devices: ${n.draDevices.total}, ${n.draDevices.used} in use, ${n.draDevices.total - n.draDevices.used} free`)
      : null,
    h('p', {}, `CPU ${fmt.cpu(n.cpu.used)} / ${fmt.cpu(n.cpu.capacity)} · memory ${fmt.memory(n.memory.used)} / ${fmt.memory(n.memory.capacity)}`),
    slots.length ? h('div', { class: 'slots' }, slots) : h('p', { class: 'muted' }, 'No GPUs.'));
}

// ------------------------------------------------------------ Multi-cluster

function multiclusterPage(root) {
  const data = h('div');
  root.append(h('h2', {}, 'Multi-cluster'), data);
  return {
    async refresh() {
      const m = await load(data, api('/api/v1/multicluster'));
      if (!m.served) {
        data.replaceChildren(h('p', { id: 'mc-not-served' }, m.message || 'MultiClusterJobs are served by the dispatch controller.'));
        return;
      }
      const jobs = m.jobs || [];
      if (!jobs.length) return data.replaceChildren(h('p', { class: 'muted' }, 'No MultiClusterJobs.'));
      const t = table([
        { title: 'namespace', get: (j) => j.namespace },
        { title: 'name', get: (j) => j.name },
        { title: 'phase', get: (j) => h('span', { class: 'phase-' + j.phase }, j.phase) },
        { title: 'winner', get: (j) => j.winner },
        { title: 'members', cls: 'reason', get: (j) => h('div', {}, (j.members || []).map((x) =>
          h('div', {}, h('b', {}, x.cluster + ': '), x.state + (x.message ? ' — ' + x.message : '')))) },
      ], jobs);
      t.id = 'mc-jobs';
      data.replaceChildren(t);
    },
  };
}

start();
