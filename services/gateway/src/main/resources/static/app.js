'use strict';
// The Hexforge dashboard: plain DOM over the REST API v1, live through its server-sent events (no polling).

const view = document.getElementById('view');
let closeLive = () => {};

/** Builds an element; children are nodes or text (never parsed as HTML). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

async function api(path, options = {}) {
  const headers = Object.assign({'X-Hexforge-UI': '1'}, options.headers || {});
  const res = await fetch(path, Object.assign({}, options, {headers, credentials: 'same-origin'}));
  if (res.status === 401) {
    location.href = '/login.html';
    throw new Error('not signed in');
  }
  const body = (res.headers.get('content-type') || '').includes('json') ? await res.json() : null;
  if (!res.ok) {
    const err = new Error((body && body.error) || res.statusText);
    err.status = res.status;
    err.body = body;
    throw err;
  }
  return body;
}

function live(path, handlers) {
  const es = new EventSource(path, {withCredentials: true});
  for (const [name, fn] of Object.entries(handlers)) {
    es.addEventListener(name, e => fn(JSON.parse(e.data)));
  }
  const previous = closeLive;
  closeLive = () => { previous(); es.close(); };
  return es;
}

const age = iso => {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 60 ? `${Math.round(s)} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : s < 86400
    ? `${Math.round(s / 3600)} h ago` : `${Math.round(s / 86400)} d ago`;
};
const duration = ms => ms === null || ms === undefined ? '' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
const bytes = n => n === null || n === undefined ? '' : n < 1e3 ? `${n} B` : n < 1e6 ? `${(n / 1e3).toFixed(1)} kB`
  : n < 1e9 ? `${(n / 1e6).toFixed(1)} MB` : `${(n / 1e9).toFixed(2)} GB`;
const num = (v, d = 2) => typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : (v ?? '');
const badge = state => h('span', {class: `badge ${state}`}, state);
const empty = (title, ...what) => h('div', {class: 'empty'}, h('h2', {}, title), h('p', {}, ...what));
const table = (head, rows, attrs = {}) => h('div', {class: 'scroll'},
  h('table', attrs, h('thead', {}, h('tr', {}, head.map(x => h('th', {}, x)))), h('tbody', {}, rows)));

// ---- jobs ----

function jobRow(j) {
  return h('tr', {'data-job': j.id},
    h('td', {}, h('a', {href: `#/jobs/${j.id}`}, j.name || j.id)),
    h('td', {}, badge(j.state)),
    h('td', {}, j.currentStage || ''),
    h('td', {title: j.createdAt}, age(j.createdAt)));
}

async function jobsPage(params) {
  const state = params.get('state') || '';
  const data = await api(`/api/v1/jobs?size=100${state ? `&state=${state}` : ''}`);
  const filter = h('select', {id: 'state-filter', onchange: e => location.hash = e.target.value ? `#/?state=${e.target.value}` : '#/'},
    ['', 'running', 'completed', 'failed', 'cancelled'].map(s => h('option', {value: s, selected: s === state}, s || 'all states')));
  const body = h('tbody', {id: 'jobs'}, data.jobs.map(jobRow));
  const list = h('div', {class: 'scroll'}, h('table', {}, h('thead', {}, h('tr', {}, ['Job', 'State', 'Stage', 'Created'].map(x => h('th', {}, x)))), body));
  const none = empty('No jobs yet', 'Start one from ', h('a', {href: '#/submit'}, 'Submit'),
    ' (the bundled tiny model converts in about a minute) or with ', h('code', {}, 'hexforge submit job.yaml'), '.');
  const show = () => { list.hidden = body.children.length === 0; none.hidden = !list.hidden; };
  view.replaceChildren(h('section', {}, h('div', {class: 'bar'}, h('h1', {}, 'Jobs'), filter), list, none));
  show();
  live('/api/v1/jobs/events', {
    job: async change => {
      const j = await api(`/api/v1/jobs/${change.id}`);
      if (state && j.state !== state) {
        body.querySelector(`[data-job="${j.id}"]`)?.remove();
      } else {
        const row = jobRow(j);
        const old = body.querySelector(`[data-job="${j.id}"]`);
        if (old) old.replaceWith(row); else body.prepend(row);
      }
      show();
    }
  });
}

function lossChart(points, evalPoints) {
  const el = h('div', {id: 'loss-chart', class: 'chart'});
  const width = () => Math.max(280, Math.min(900, view.clientWidth - 32));
  const data = () => [points.map(p => p[0]), points.map(p => p[1])];
  const plot = new uPlot({width: width(), height: 240, title: 'Training loss',
    scales: {x: {time: false}}, axes: [{label: 'step'}, {label: 'loss'}],
    series: [{label: 'step'}, {label: 'train loss', stroke: '#2563eb', width: 2}]}, data(), el);
  if (evalPoints.length) {
    el.append(h('p', {class: 'muted', id: 'eval-loss'}, 'eval loss by epoch: ',
      evalPoints.map(e => `epoch ${e.epoch}: ${num(e.evalLoss, 4)}`).join(', ')));
  }
  return {el, add: (step, loss) => { points.push([step, loss]); plot.setData(data()); }};
}

function kv(obj, keys) {
  return h('dl', {class: 'kv'}, keys.filter(k => obj[k] !== undefined && obj[k] !== null && typeof obj[k] !== 'object')
    .flatMap(k => [h('dt', {}, k), h('dd', {}, num(obj[k], 4))]));
}

function quantizeReport(r) {
  const parts = [h('h3', {}, 'Quantization report'),
    h('p', {id: 'gate', class: r.gatePassed ? 'ok' : 'error'}, r.gatePassed ? 'Accuracy gate passed' : 'Accuracy gate failed',
      r.deltaPerplexity !== null && r.deltaPerplexity !== undefined
        ? `: ΔPPL ${num(r.deltaPerplexity, 4)} (limit ${num(r.maxDeltaPerplexity, 4)})` : ''),
    kv(r, ['method', 'spec', 'floatPerplexity', 'quantizedPerplexity', 'greedyAgreement', 'seconds'])];
  const a = r.activations;
  if (a && typeof a === 'object') {
    parts.push(h('p', {id: 'precision'}, `${a.precision}: the static graph with every activation quantized (KV cache `
      + `${a.kvBits}-bit), perplexity ${num(a.perplexity, 4)}, ΔPPL ${num(a.deltaPerplexity, 4)}, greedy agreement `
      + `${num(a.greedyAgreement, 4)}`));
    if (Array.isArray(a.noisiest) && a.noisiest.length) parts.push(h('p', {}, 'noisiest activations: ', a.noisiest.join('; ')));
  }
  if (Array.isArray(r.kept) && r.kept.length) parts.push(h('p', {}, 'kept in float: ', r.kept.join(', ')));
  if (Array.isArray(r.worstLayers) && r.worstLayers.length) parts.push(h('p', {}, 'worst layers: ', r.worstLayers.join('; ')));
  if (Array.isArray(r.warnings) && r.warnings.length) parts.push(h('ul', {class: 'warnings'}, r.warnings.map(w => h('li', {}, w))));
  if (Array.isArray(r.layers) && r.layers.length) {
    parts.push(h('details', {}, h('summary', {}, `${r.layers.length} quantized linears`),
      table(['layer', 'bits', 'group', 'relative error', 'output error', 'RTN output error'], r.layers.map(l =>
        h('tr', {}, h('td', {}, l.name), h('td', {}, l.bits), h('td', {}, l.groupSize), h('td', {}, num(l.relativeError, 5)),
          h('td', {}, num(l.outputError, 5)), h('td', {}, num(l.rtnOutputError, 5)))))));
  }
  return h('section', {id: 'quantize-report'}, parts);
}

/** An NPU bundle: what it was built for, what it holds in the device's memory, and its parts or graphs. */
function compileReport(r) {
  const parts = [h('h3', {}, 'Compile report'), kv(r, Object.keys(r).filter(k => typeof r[k] !== 'object'))];
  const m = r.deviceMemory;
  if (m) parts.push(h('p', {id: 'device-memory'}, `Device memory ${bytes(m.totalBytes)}: weights ${bytes(m.weightBytes)}`
    + (m.weightsShared ? ` (each part's once: its prompt and token graphs share them; ${bytes(m.weightBytesUnshared)} unshared)` : '')
    + `, KV cache ${bytes(m.kvCacheBytes)} at ${m.kvBits} bits over ${r.contextLength} positions`));
  if (Array.isArray(r.parts)) {
    parts.push(table(['Part', 'Context binary', 'Graphs'], r.parts.map((p, i) => h('tr', {},
      h('td', {}, `${i + 1} of ${r.parts.length}`), h('td', {}, p.file), h('td', {}, (p.graphs || []).join(', ')))), {id: 'bundle-parts'}));
  } else if (r.graphs && typeof r.graphs === 'object') {
    parts.push(table(['Graph', 'File', 'Weights'], Object.entries(r.graphs).map(([role, g]) => h('tr', {},
      h('td', {}, role), h('td', {}, g.file || ''), h('td', {}, bytes(g.weightBytes)))), {id: 'bundle-graphs'}));
  }
  return h('section', {class: 'report', 'data-stage': 'compile', id: 'compile-report'}, parts);
}

function genericReport(stage, r) {
  const scalars = Object.keys(r).filter(k => typeof r[k] !== 'object');
  if (!scalars.length && !r.preflight) return null;
  const parts = [h('h3', {}, `${stage} report`), kv(r, scalars)];
  if (r.preflight) parts.push(h('pre', {}, JSON.stringify(r.preflight, null, 2)));
  return h('section', {class: 'report', 'data-stage': stage}, parts);
}

async function artifactList(jobId) {
  const data = await api(`/api/v1/artifacts?job=${jobId}`);
  if (!data.artifacts.length) return h('p', {class: 'muted', id: 'no-artifacts'}, 'No artifacts yet: each stage stores its output when it completes.');
  const rows = [];
  for (const a of data.artifacts) {
    const detail = await api(`/api/v1/artifacts/${a.id}`);
    const sig = a.signature || {};
    rows.push(h('tr', {'data-artifact': a.id},
      h('td', {}, a.stage), h('td', {}, a.kind), h('td', {}, bytes(a.size)),
      h('td', {class: 'digest', title: a.sha256}, (a.sha256 || '').slice(0, 16) + '…'),
      h('td', {}, sig.keyHint ? h('span', {class: 'badge completed', title: `OMS root ${sig.rootDigest}`}, `signed (${sig.keyHint})`)
        : h('span', {class: 'badge failed'}, 'unsigned'),
        sig.provenance ? h('span', {class: 'badge completed', title: 'provenance.sig: the job spec, every input and earlier artifact by digest, tool versions'}, 'provenance') : null),
      h('td', {}, (detail.files || []).slice(0, 8).map(f => h('a', {class: 'download', href:
        `/api/v1/artifacts/${a.id}/download?path=${encodeURIComponent(f.path)}`, download: f.path.split('/').pop()}, f.path, ' ')),
        (detail.files || []).length > 8 ? h('span', {class: 'muted'}, `… and ${detail.files.length - 8} more: `,
          h('code', {}, `hexforge download ${a.id}`)) : null)));
  }
  return table(['Stage', 'Kind', 'Size', 'sha256', 'Signature', 'Download'], rows, {id: 'artifacts'});
}

const logs = new Map();

async function jobPage(id) {
  let job;
  try {
    job = await api(`/api/v1/jobs/${id}`);
  } catch (e) {
    if (e.status === 404 || e.status === 400) {
      view.replaceChildren(empty('Job not found', 'No job ', h('code', {}, id), ' among yours. ', h('a', {href: '#/'}, 'Back to jobs')));
      return;
    }
    throw e;
  }
  const finetune = job.stages.filter(s => s.stage === 'finetune').pop();
  const points = (finetune?.report?.lossCurve || []).map(p => [p[0], p[1]]);
  const chart = finetune ? lossChart(points, finetune.report?.epochs || []) : null;
  const timeline = table(['Stage', 'Attempt', 'State', 'Started', 'Duration', 'Progress'], job.stages.map(s =>
    h('tr', {'data-attempt': s.id, 'data-stage': s.stage},
      h('td', {}, s.stage), h('td', {}, s.attempt), h('td', {}, badge(s.state)),
      h('td', {title: s.startedAt}, age(s.startedAt)), h('td', {}, duration(s.durationMs)),
      h('td', {}, h('progress', {max: 100, value: Math.max(0, s.progress || 0)}), ' ',
        h('span', {class: 'message'}, s.message || ''),
        s.error ? h('div', {class: 'error'}, `${s.error.code}: ${s.error.message}`, s.error.hint ? h('div', {class: 'hint'}, s.error.hint) : null) : null))),
    {id: 'timeline'});
  const reports = job.stages.filter(s => (s.state === 'completed' || s.state === 'failed') && s.report && Object.keys(s.report).length && s.stage !== 'finetune')
    .map(s => s.stage === 'quantize' ? quantizeReport(s.report) : s.stage === 'compile' ? compileReport(s.report)
      : genericReport(s.stage, s.report)).filter(Boolean);
  const buttons = h('div', {class: 'actions'},
    job.state === 'running' ? h('button', {id: 'cancel', onclick: () => act('cancel')}, 'Cancel') : null,
    job.state === 'failed' || job.state === 'cancelled' ? h('button', {id: 'resume', onclick: () => act('resume')}, 'Resume') : null);
  async function act(what) {
    await api(`/api/v1/jobs/${id}/${what}`, {method: 'POST'});
    route();
  }
  // the log tail outlives the page's re-renders as stages complete
  const log = logs.get(id) || h('pre', {id: 'log', class: 'log'});
  logs.clear();
  logs.set(id, log);
  view.replaceChildren(h('section', {},
    h('div', {class: 'bar'}, h('h1', {}, job.name || job.id), h('span', {id: 'job-state'}, badge(job.state)), buttons),
    job.error ? h('div', {class: 'error', id: 'job-error'}, `${job.error.code}: ${job.error.message}`,
      job.error.hint ? h('div', {class: 'hint'}, job.error.hint) : null) : null,
    h('h2', {}, 'Stages'), timeline,
    chart ? h('section', {}, h('h2', {}, 'Fine-tuning'), chart.el) : null,
    reports.length ? h('section', {}, h('h2', {}, 'Reports'), reports) : null,
    h('h2', {}, 'Artifacts'), h('div', {id: 'artifact-list'}, await artifactList(id)),
    h('details', {}, h('summary', {}, 'Job spec'), h('pre', {}, JSON.stringify(job.spec, null, 2))),
    h('h2', {}, 'Live log'), log));
  if (job.state !== 'running') return;
  let refresh = null;
  const again = () => { clearTimeout(refresh); refresh = setTimeout(() => { if (location.hash === `#/jobs/${id}`) route(); }, 150); };
  live(`/api/v1/jobs/${id}/events`, {
    progress: e => {
      const row = view.querySelector(`[data-attempt="${e.attemptId}"]`);
      if (!row) { again(); return; }
      const state = row.querySelector('.badge');
      if (state && state.textContent === 'dispatched') { state.textContent = 'running'; state.className = 'badge running'; }
      if (e.percent >= 0) row.querySelector('progress').value = e.percent;
      row.querySelector('.message').textContent = e.message || '';
      log.append(`${new Date().toLocaleTimeString()} ${String(e.stage).toLowerCase()}: ${e.message}\n`);
      log.scrollTop = log.scrollHeight;
      if (chart && e.metrics && typeof e.metrics.loss === 'number' && typeof e.metrics.step === 'number') chart.add(e.metrics.step, e.metrics.loss);
    },
    completed: again,
    failed: again,
    job: j => { if (j.state !== 'running') again(); }
  });
}

// ---- submit ----

const STAGES = ['finetune', 'merge', 'quantize', 'export', 'compile', 'sign', 'benchmark'];
// the form's fields by the job-spec field each sets: a problem about one is shown under the form's own name for it
const LABELS = {'name': 'Name', 'model.path': 'Folder the fleet can read (path or URI)', 'model.upload': 'or an uploaded model',
  'stages': 'Stages', 'finetune.data': 'Fine-tune data', 'quantize.method': 'Quantization method', 'quantize.bits': 'Bits',
  'quantize.format': 'Linear format', 'compile.target': 'Compile target', 'compile.soc': 'SoC'};

function specFrom(form) {
  const f = new FormData(form);
  const stages = STAGES.filter(s => f.get(`stage-${s}`));
  const spec = {name: f.get('name') || undefined, model: f.get('upload') ? {upload: f.get('upload')} : {path: f.get('path')}, stages};
  if (stages.includes('finetune')) spec.finetune = {data: f.get('finetune-data') || undefined};
  if (stages.includes('quantize')) spec.quantize = {method: f.get('method'), bits: Number(f.get('bits')), format: f.get('format')};
  if (stages.includes('compile')) spec.compile = {target: f.get('target'), soc: f.get('soc') || undefined};
  return JSON.parse(JSON.stringify(spec));
}

async function submitPage() {
  const [uploads, examples, schema] = await Promise.all([api('/api/v1/uploads?size=50'), api('/api/v1/examples'),
    api('/api/v1/job-spec/schema')]);
  // the choices and their defaults come from the schema the server validates against
  const field = path => path.split('.').reduce((f, k) => f.properties[k], schema);
  const choice = (name, path, values) => {
    const f = field(path);
    return h('select', {name, title: f.description}, (values || f.enum).map(v => h('option', {value: v, selected: v === f.default}, v)));
  };
  const range = f => Array.from({length: f.maximum - f.minimum + 1}, (_, i) => f.maximum - i);
  const problems = h('ul', {id: 'problems', class: 'error', hidden: true});
  const editor = h('textarea', {id: 'spec', rows: 14, spellcheck: 'false'});
  const sync = () => { editor.value = JSON.stringify(specFrom(form), null, 2); };
  const check = (name, label, checked) => h('label', {class: 'check'}, h('input', {type: 'checkbox', name, checked, onchange: sync}), label);
  const form = h('form', {id: 'submit-form', oninput: e => { if (e.target !== editor) sync(); }, onsubmit: async e => {
    e.preventDefault();
    problems.hidden = true;
    try {
      const job = await api('/api/v1/jobs', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: editor.value});
      location.hash = `#/jobs/${job.id}`;
    } catch (err) {
      problems.replaceChildren(...(err.body?.problems || [{path: '', message: err.message}])
        .map(p => h('li', {}, LABELS[p.path] ? h('strong', {}, LABELS[p.path], ' ') : null, p.path ? h('code', {}, p.path) : null,
          ' ', p.message)));
      problems.hidden = false;
    }
  }},
    h('label', {}, LABELS.name, h('input', {name: 'name', value: 'tiny-int8'})),
    h('fieldset', {}, h('legend', {}, 'Base model'),
      h('label', {}, LABELS['model.path'], h('input', {name: 'path', id: 'model-path', value: examples.modelPath, placeholder: '/models/Qwen2.5-0.5B'})),
      h('label', {}, LABELS['model.upload'], h('select', {name: 'upload', id: 'model-upload'}, h('option', {value: ''}, '(none)'),
        uploads.uploads.map(u => h('option', {value: u.id}, `${u.name || u.id} (${bytes(u.size)})`)))),
      h('label', {}, 'Upload a Hugging Face folder as .zip / .tar / .tar.gz', h('input', {type: 'file', id: 'upload-file', onchange: upload})),
      h('span', {id: 'upload-status', class: 'muted'})),
    h('fieldset', {}, h('legend', {}, LABELS.stages), STAGES.map(s => check(`stage-${s}`, s, ['quantize', 'export', 'sign'].includes(s)))),
    h('fieldset', {}, h('legend', {}, 'Settings (defaults shown; the rest take the documented defaults)'),
      h('label', {}, LABELS['finetune.data'], h('input', {name: 'finetune-data', value: examples.finetuneData, placeholder: 'train.jsonl (Alpaca or chat)'})),
      h('label', {}, LABELS['quantize.method'], choice('method', 'quantize.method')),
      h('label', {}, LABELS['quantize.bits'], choice('bits', 'quantize.bits', range(field('quantize.bits')))),
      h('label', {}, LABELS['quantize.format'], choice('format', 'quantize.format')),
      h('label', {}, LABELS['compile.target'], choice('target', 'compile.target')),
      h('label', {}, LABELS['compile.soc'], h('input', {name: 'soc', value: field('compile.soc').default}))),
    h('label', {}, 'Job spec (JSON or YAML; edit freely — the server checks it)', editor),
    problems,
    h('button', {type: 'submit', id: 'submit-job'}, 'Submit job'));
  async function upload(e) {
    const file = e.target.files[0];
    if (!file) return;
    const status = document.getElementById('upload-status');
    status.textContent = `uploading ${file.name} (${bytes(file.size)})…`;
    try {
      const u = await api(`/api/v1/uploads?name=${encodeURIComponent(file.name)}`, {method: 'POST',
        headers: {'Content-Type': 'application/octet-stream'}, body: file});
      const select = document.getElementById('model-upload');
      select.append(h('option', {value: u.id}, `${u.name} (${bytes(u.size)})`));
      select.value = u.id;
      status.textContent = `uploaded, sha256 ${u.sha256.slice(0, 16)}…`;
      sync();
    } catch (err) {
      status.textContent = `upload refused: ${err.message}`;
    }
  }
  view.replaceChildren(h('section', {}, h('h1', {}, 'Submit a job'), form));
  sync();
}

// ---- devices and benchmarks ----

async function devicesPage() {
  const data = await api('/api/v1/devices');
  const devices = data.devices || [];
  view.replaceChildren(h('section', {}, h('h1', {}, 'Devices'), devices.length
    ? table(['Name', 'State', 'Backends', 'SoC', 'Last heartbeat', 'Current task'], devices.map(d => {
      const info = d.info || {};
      return h('tr', {'data-device': d.id}, h('td', {}, d.name), h('td', {}, badge(d.online ? 'online' : 'offline')),
        h('td', {}, (info.backends || []).join(', ')), h('td', {}, info.soc || info.chipset || ''),
        h('td', {title: d.lastSeen}, age(d.lastSeen)), h('td', {}, d.currentTask || ''));
    }), {id: 'devices'})
    : empty('No device runners yet', 'Add one with ', h('code', {}, 'hexforge device add NAME'),
      ', then start it on the phone host or laptop with ', h('code', {}, 'device-runner serve --gateway URL --token TOKEN'),
      '. In standalone mode a local ort-cpu runner registers itself.')));
}

async function benchmarksPage() {
  const rows = (await api('/api/v1/benchmarks')).benchmarks;
  if (!rows.length) {
    view.replaceChildren(h('section', {}, h('h1', {}, 'Benchmarks'), empty('No benchmark results yet',
      'Add the ', h('code', {}, 'benchmark'), ' stage to a job (after ', h('code', {}, 'compile'), ' or ', h('code', {}, 'export'),
      '); a registered device runner picks it up and its figures appear here.')));
    return;
  }
  const label = r => `${r.job} · ${r.quantization} · ${r.device}/${r.result.backend}`;
  const chartEl = h('div', {id: 'benchmark-chart', class: 'chart'});
  view.replaceChildren(h('section', {}, h('h1', {}, 'Benchmarks'), chartEl,
    table(['Model', 'Quantization', 'Target', 'Device', 'Backend', 'Decode tok/s', 'Prefill tok/s', 'TTFT ms', 'Peak memory',
      'Token agreement', 'Perplexity (host)', 'Energy/token', 'Roofline efficiency'], rows.map(r => {
      const x = r.result;
      return h('tr', {'data-job': r.jobId}, h('td', {}, h('a', {href: `#/jobs/${r.jobId}`}, r.job)), h('td', {}, r.quantization),
        h('td', {}, r.target), h('td', {}, r.device), h('td', {}, x.backend), h('td', {}, num(x.decodeTokensPerSecond, 1)),
        h('td', {}, num(x.prefillTokensPerSecond, 1)), h('td', {}, num(x.timeToFirstTokenMs, 1)), h('td', {}, bytes(x.peakRssBytes)),
        h('td', {}, x.tokenAgreement === null || x.tokenAgreement === undefined ? '' : `${(100 * x.tokenAgreement).toFixed(0)}%`),
        h('td', {title: x.notAvailable?.perplexity || 'on the device, and in brackets on the host'},
          x.perplexity ? `${num(x.perplexity, 2)} (${num(x.referencePerplexity, 2)})` : 'n/a'),
        h('td', {title: x.notAvailable?.energyPerToken || ''}, x.joulesPerToken ? num(x.joulesPerToken, 3) + ' J' : 'n/a'),
        h('td', {title: x.bandwidthSource ? `of ${num(x.memoryBandwidthBytesPerSecond / 1e9, 1)} GB/s, ${x.bandwidthSource}` : ''},
          x.efficiency ? `${(100 * x.efficiency).toFixed(0)}%` : ''));
    }), {id: 'benchmarks'})));
  const xs = rows.map((_, i) => i);
  new uPlot({width: Math.max(280, Math.min(900, view.clientWidth - 32)), height: 260, title: 'Decode and prefill tokens/s',
    scales: {x: {time: false, range: [-0.5, rows.length - 0.5]}, y: {range: (u, min, max) => [0, Math.max(1, max) * 1.1]}},
    axes: [{values: (u, ticks) => ticks.map(t => Number.isInteger(t) && rows[t] ? label(rows[t]) : '')}, {label: 'tokens/s'}],
    series: [{}, {label: 'decode', stroke: '#2563eb', fill: 'rgba(37,99,235,0.35)', paths: uPlot.paths.bars({size: [0.35], align: -1})},
      {label: 'prefill', stroke: '#16a34a', fill: 'rgba(22,163,74,0.35)', paths: uPlot.paths.bars({size: [0.35], align: 1})}]},
  [xs, rows.map(r => r.result.decodeTokensPerSecond), rows.map(r => r.result.prefillTokensPerSecond)], chartEl);
}

// ---- router ----

async function route() {
  closeLive();
  closeLive = () => {};
  const [path, query] = (location.hash.slice(1) || '/').split('?');
  const params = new URLSearchParams(query || '');
  const section = path.startsWith('/jobs/') ? 'jobs' : path.slice(1) || 'jobs';
  document.querySelectorAll('[data-nav]').forEach(a => a.classList.toggle('active', a.dataset.nav === section));
  try {
    if (path.startsWith('/jobs/')) await jobPage(decodeURIComponent(path.slice('/jobs/'.length)));
    else if (path === '/submit') await submitPage();
    else if (path === '/devices') await devicesPage();
    else if (path === '/benchmarks') await benchmarksPage();
    else await jobsPage(params);
  } catch (e) {
    if (e.message !== 'not signed in') view.replaceChildren(h('div', {class: 'error'}, `Could not load this page: ${e.message}`));
  }
}

window.addEventListener('hashchange', route);
route();
