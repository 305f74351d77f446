// draw.js -- the dashboard's DOM builder, number formats and drawings: the
// resource bars and the queue chart as SVG, the node map on a <canvas>.
// Text goes in through text nodes only, never as markup.

const SVG = 'http://www.w3.org/2000/svg';

function fill(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h('tr', {class: 'x'}, child, [children], 'text')
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, v);
  return fill(el, children);
}

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  return fill(el, children);
}

const num = (v, d) => (Math.round(v * 10 ** d) / 10 ** d).toString();

export const fmt = {
  gpu: (v) => (v === null || v === undefined ? '–' : num(v, 2)),
  cpu: (v) => (v === null || v === undefined ? '–' : num(v / 1000, v < 10000 ? 2 : 1)), // millicores -> cores
  memory: (v) => {
    if (v === null || v === undefined) return '–';
    const u = [['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]];
    for (const [n, b] of u) if (Math.abs(v) >= b) return num(v / b, 1) + n;
    return String(v);
  },
};

export function fmtDur(sec) {
  if (sec === null || sec === undefined) return '–';
  sec = Math.max(0, Math.round(sec));
  if (sec < 60) return sec + 's';
  if (sec < 3600) return Math.floor(sec / 60) + 'm ' + (sec % 60) + 's';
  if (sec < 86400) return Math.floor(sec / 3600) + 'h ' + Math.floor((sec % 3600) / 60) + 'm';
  return Math.floor(sec / 86400) + 'd ' + Math.floor((sec % 86400) / 3600) + 'h';
}

// One resource R {capacity, used, shared, free, pending} as a bar: used
// (green) from the left, shared GPUs as an orange band under it, pending as
// a blue hatched box after what is used (cut at capacity: more is shown in
// the numbers beside it).
export function bar(r) {
  const W = 300, H = 16;
  const cap = r.capacity > 0 ? r.capacity : 0;
  const x = (v) => (cap ? Math.max(0, Math.min(W, (v / cap) * W)) : 0);
  const used = x(r.used), shared = x(r.shared);
  const pend = Math.min(W - used, x(r.pending));
  return s('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', width: '100%', height: H, role: 'img' },
    s('defs', {}, s('pattern', { id: 'hatch', width: 4, height: 4, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
      s('rect', { width: 2, height: 4, fill: 'var(--pending)' }))),
    s('rect', { x: 0, y: 0, width: W, height: H, fill: 'var(--free)' }, s('title', {}, 'capacity ' + r.capacity)),
    s('rect', { x: 0, y: 0, width: used, height: H, fill: 'var(--used)' }, s('title', {}, 'used ' + r.used)),
    shared ? s('rect', { x: 0, y: H - 5, width: shared, height: 5, fill: 'var(--shared)' }, s('title', {}, 'shared ' + r.shared)) : null,
    pend > 0 ? s('rect', { x: used, y: 0, width: pend, height: H, fill: 'url(#hatch)', stroke: 'var(--pending)' },
      s('title', {}, 'pending ' + r.pending)) : null);
}

// points [[t_ms, a, b], ...] as two lines (series: [[label, colour], x2]).
export function lineChart(points, f, series) {
  const W = 800, H = 220, L = 60, R = 10, T = 10, B = 30;
  if (!points.length) return h('p', { class: 'muted' }, 'No samples yet (one every 10 s).');
  const t0 = points[0][0], t1 = Math.max(points[points.length - 1][0], t0 + 1);
  let max = 0;
  for (const p of points) max = Math.max(max, p[1] || 0, p[2] || 0);
  max = max > 0 ? max * 1.1 : 1;
  const X = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const Y = (v) => T + (1 - (v || 0) / max) * (H - T - B);
  const line = (i, colour) => s('polyline', {
    points: points.map((p) => X(p[0]).toFixed(1) + ',' + Y(p[i]).toFixed(1)).join(' '),
    fill: 'none', stroke: colour, 'stroke-width': 2, 'stroke-dasharray': i === 2 ? '6 3' : 'none',
  });
  const hhmm = (t) => new Date(t).toTimeString().slice(0, 5);
  const grid = [0, 0.5, 1].map((k) => [s('line', { x1: L, x2: W - R, y1: Y(max * k / 1.1), y2: Y(max * k / 1.1), stroke: '#e2e8f0' }),
    s('text', { x: L - 6, y: Y(max * k / 1.1) + 4, 'text-anchor': 'end' }, f(max * k / 1.1))]);
  // Few samples yet: dots, so that one sample shows at all.
  const dots = points.length < 3 ? points.flatMap((p) => [1, 2].map((i) => s('circle', { cx: X(p[0]), cy: Y(p[i]), r: 4,
    fill: series[i - 1][1] }))) : null;
  const last = points[points.length - 1];
  return h('div', {},
    s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', class: 'chart', role: 'img' }, grid,
      line(1, series[0][1]), line(2, series[1][1]), dots,
      s('text', { x: L, y: H - 8 }, hhmm(t0)), s('text', { x: W - R, y: H - 8, 'text-anchor': 'end' }, hhmm(t1))),
    h('p', { class: 'legend' }, series.map(([label, colour], i) => h('span', {}, h('i', { style: 'background:' + colour }),
      `${label} (now ${f(last[i + 1])})`))));
}

export function mapColor(u) {
  const hue = 120 * (1 - Math.max(0, Math.min(1, u)));
  return `hsl(${hue.toFixed(0)}, 65%, 42%)`;
}

// The corner mark of a node with DRA devices on the node map.
export const DRA_MARK = '#2b6cb0';

// The node map: nodes ["name", pool, state, gpu, gpuUsed, gpuShared, cpuPct, dra, draUsed],
// a pool per block (in the order given), a cell per node, coloured by GPU
// use (by its DRA devices' use on a node without GPUs); a node with DRA
// devices has its top-right corner marked (DRA_MARK). names: the pools'
// names by index. Returns { hit(x, y) -> index or -1 } in canvas pixels.
export function drawMap(canvas, nodes, names) {
  const W = canvas.parentNode ? Math.max(400, Math.min(1400, canvas.parentNode.clientWidth - 4)) : 1000;
  const n = nodes.length;
  const cell = n <= 200 ? 20 : n <= 1000 ? 12 : n <= 4000 ? 8 : 6;
  const cols = Math.max(1, Math.floor(W / cell));
  const byPool = new Map();
  for (let i = 0; i < n; i++) {
    const p = nodes[i][1];
    if (!byPool.has(p)) byPool.set(p, []);
    byPool.get(p).push(i);
  }
  const head = Math.max(2, Math.ceil(14 / cell)); // rows for a pool's name
  let rows = 0;
  for (const idx of byPool.values()) rows += head + Math.ceil(idx.length / cols);
  const grid = new Int32Array(Math.max(1, rows * cols)).fill(-1);
  canvas.width = cols * cell;
  canvas.height = Math.max(cell, rows * cell);
  const g = canvas.getContext('2d');
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.font = '12px system-ui, sans-serif';
  let row = 0;
  for (const [p, idx] of byPool) {
    g.fillStyle = '#4a5568';
    g.fillText((names && names[p]) || 'pool ' + p, 2, row * cell + head * cell - 4);
    row += head;
    for (let k = 0; k < idx.length; k++) {
      const i = idx[k], r = row + Math.floor(k / cols), c = k % cols;
      grid[r * cols + c] = i;
      const nd = nodes[i];
      const state = nd[2], gpu = nd[3], used = nd[4], dra = nd[7] || 0, draUsed = nd[8] || 0;
      g.fillStyle = state === 2 ? '#000' : gpu > 0 ? mapColor(used / gpu) : dra > 0 ? mapColor(draUsed / dra) : '#cbd5e0';
      g.fillRect(c * cell, r * cell, cell - 1, cell - 1);
      if (state === 1) {
        g.strokeStyle = '#1a202c';
        g.lineWidth = 1;
        g.strokeRect(c * cell + 0.5, r * cell + 0.5, cell - 2, cell - 2);
        g.fillStyle = '#fff';
        g.fillRect(c * cell + 2, r * cell + 2, cell - 5, cell - 5);
      }
      if (dra > 0) {
        const m = Math.max(3, Math.floor(cell / 2));
        g.fillStyle = DRA_MARK;
        g.beginPath();
        g.moveTo(c * cell + cell - 1 - m, r * cell);
        g.lineTo(c * cell + cell - 1, r * cell);
        g.lineTo(c * cell + cell - 1, r * cell + m);
        g.fill();
      }
    }
    row += Math.ceil(idx.length / cols);
  }
  return {
    hit(x, y) {
      const c = Math.floor(x / cell), r = Math.floor(y / cell);
      if (c < 0 || c >= cols || r < 0 || r >= rows) return -1;
      return grid[r * cols + c];
    },
  };
}
