// gspo report's page script (docs/report.md), inlined by `gspo report` after plotly.js. Reads the page's JSON
// (<script id="gspo-data">: runs with their metric columns, rollouts, config, summary and notes) and builds the page.
// Everything a run or a model wrote is put in the page as text (textContent, attribute values), never as markup.
(function () {
  'use strict';
  const DATA = JSON.parse(document.getElementById('gspo-data').textContent);
  const RUNS = DATA.runs;
  const DOCS = DATA.docs || {};
  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
    '#bcbd22', '#17becf'];
  const DASHES = ['solid', 'dot', 'dash', 'longdash', 'dashdot', 'longdashdot'];
  // One panel a row: the metrics.jsonl fields it plots (`keys`), or every field starting with a prefix (`prefix`).
  const PANELS = [
    {id: 'reward', title: 'Reward', keys: ['reward_mean'], prefix: 'reward_components_mean/'},
    {id: 'accuracy', title: 'Accuracy', keys: ['accuracy']},
    {id: 'length', title: 'Response length (tokens)', keys: ['response_len_mean', 'response_len_max']},
    {id: 'truncated', title: 'Truncated fraction', keys: ['truncated_frac']},
    {id: 'clip', title: 'Clip fractions', keys: ['clip_seq_frac', 'clip_tok_frac']},
    {id: 'kl', title: 'KL to the reference', keys: ['kl', 'kl_seq']},
    {id: 'mismatch', title: 'Sampler vs trainer mismatch', keys: ['mismatch_logprob_diff_mean', 'is_truncated_frac']},
    {id: 'entropy', title: 'Entropy', keys: ['entropy']},
    {id: 'grad_norm', title: 'Gradient norm', keys: ['grad_norm', 'grad_norm_max']},
    {id: 'time', title: 'Step time split (s)', keys: ['time_sample_s', 'time_reward_s', 'time_old_logprobs_s',
      'time_update_s', 'time_tools_s'], stack: true},
    {id: 'validation', title: 'Validation sets', prefix: 'val/', markers: true},
    {id: 'by_source', title: 'Reward by data source', prefix: 'reward_by_source/'},
    {id: 'advantage', title: 'Advantages', keys: ['advantage_std', 'zero_variance_frac']},
    {id: 'ratio', title: 'Sequence ratio', keys: ['seq_ratio_mean', 'seq_ratio_min', 'seq_ratio_max']},
    {id: 'lr', title: 'Learning rate', keys: ['lr']},
    {id: 'tools', title: 'Tools', keys: ['tool_turns_mean', 'tool_calls_mean', 'observation_frac']},
    {id: 'staleness', title: 'Policy lag (async)', keys: ['version_lag_mean', 'version_lag_max']},
    {id: 'throughput', title: 'Throughput (tokens/s)', keys: ['sample_tokens_per_s', 'train_tokens_per_s']},
    {id: 'memory', title: 'Peak memory (MB)', keys: ['peak_rss_mb', 'peak_gpu_mb']},
  ];
  const AT_STEP = ['reward_mean', 'accuracy', 'response_len_mean', 'clip_seq_frac', 'kl', 'entropy',
    'mismatch_logprob_diff_mean', 'grad_norm', 'time_step_s'];

  const state = {smooth: 0.6, cursor: null, charts: []};

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in (attrs || {})) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent, tag, attrs, text) { const e = el(tag, attrs, text); parent.appendChild(e); return e; }
  function arr(v) { return Array.isArray(v) ? v : []; }  // a field a damaged row may hold as something else
  function num(v, d) { return (v === null || v === undefined || !isFinite(v)) ? '-' : Number(v).toPrecision(d || 4); }

  // TensorBoard's smoothing: an exponential moving average, debiased at the start; nulls are passed over.
  function smooth(ys, w) {
    if (!(w > 0)) return ys;
    let last = 0, n = 0;
    return ys.map(function (y) {
      if (y === null || !isFinite(y)) return null;
      last = last * w + (1 - w) * y; n += 1;
      return last / (1 - Math.pow(w, n));
    });
  }

  function panelKeys(p) {
    const keys = [];
    const seen = new Set();
    function take(k) { if (!seen.has(k)) { seen.add(k); keys.push(k); } }
    (p.keys || []).forEach(take);
    if (p.prefix) RUNS.forEach(function (r) { Object.keys(r.series).sort().forEach(function (k) {
      if (k.startsWith(p.prefix)) take(k); }); });
    return keys.filter(function (k) { return RUNS.some(function (r) {
      return (r.series[k] || []).some(function (v) { return v !== null; }); }); });
  }

  function traces(p, keys) {
    const out = [];
    RUNS.forEach(function (r, ri) {
      keys.forEach(function (k, ki) {
        const ys = r.series[k];
        if (!ys) return;
        const color = RUNS.length > 1 ? PALETTE[ri % PALETTE.length] : PALETTE[ki % PALETTE.length];
        const dash = RUNS.length > 1 ? DASHES[ki % DASHES.length] : 'solid';
        const name = (RUNS.length > 1 ? r.name + ': ' : '') + k;
        const common = {x: r.steps, type: 'scatter', connectgaps: true, legendgroup: name};
        if (p.stack) { common.stackgroup = 'run' + ri; }
        const mode = p.markers ? 'lines+markers' : 'lines';
        if (state.smooth > 0 && !p.stack) {
          out.push(Object.assign({}, common, {y: ys, mode: mode, name: name + ' (raw)', showlegend: false,
            hoverinfo: 'skip', opacity: 0.25, line: {color: color, width: 1, dash: dash}}));
        }
        out.push(Object.assign({}, common, {y: p.stack ? ys : smooth(ys, state.smooth), mode: mode, name: name,
          line: {color: color, width: 2, dash: dash},
          hovertemplate: name + '<br>step %{x}: %{y:.4g}<extra></extra>'}));
      });
    });
    return out;
  }

  function cursorShapes() {
    if (state.cursor === null) return [];
    return [{type: 'line', xref: 'x', yref: 'paper', x0: state.cursor, x1: state.cursor, y0: 0, y1: 1,
      line: {color: '#555', width: 1, dash: 'dot'}}];
  }

  function layout(p) {
    return {title: {text: p.title, font: {size: 14}, x: 0.01, xanchor: 'left'}, margin: {l: 50, r: 10, t: 36, b: 30},
      showlegend: true, legend: {orientation: 'h', y: -0.12, font: {size: 10}}, xaxis: {automargin: true},
      yaxis: {automargin: true}, hovermode: 'x unified', shapes: cursorShapes()};
  }

  function drawCharts(root) {
    const grid = add(root, 'div', {id: 'charts'});
    PANELS.forEach(function (p) {
      const keys = panelKeys(p);
      if (!keys.length) return;
      const div = add(grid, 'div', {'class': 'chart', id: 'chart-' + p.id, 'data-panel': p.id,
        'data-keys': keys.join(','), title: keys.map(function (k) { return k + ': ' + (DOCS[k] || ''); }).join('\n')});
      state.charts.push({div: div, panel: p, keys: keys});
    });
    // Any field of the lines, picked by name.
    const all = new Set();
    RUNS.forEach(function (r) { Object.keys(r.series).forEach(function (k) { all.add(k); }); });
    if (all.size) {
      const box = add(root, 'div', {id: 'any-metric'});
      add(box, 'label', {'for': 'pick-metric'}, 'Any metric: ');
      const sel = add(box, 'select', {id: 'pick-metric'});
      Array.from(all).sort().forEach(function (k) { add(sel, 'option', {value: k}, k); });
      const doc = add(box, 'span', {'class': 'muted'});
      const div = add(box, 'div', {'class': 'chart', id: 'chart-any', 'data-panel': 'any'});
      const entry = {div: div, panel: {id: 'any', title: ''}, keys: []};
      state.charts.push(entry);
      sel.addEventListener('change', function () {
        entry.keys = [sel.value]; entry.panel.title = sel.value; doc.textContent = ' ' + (DOCS[sel.value] || '');
        plot(entry);
      });
      sel.value = all.has('reward_std') ? 'reward_std' : Array.from(all).sort()[0];
      entry.keys = [sel.value]; entry.panel.title = sel.value; doc.textContent = ' ' + (DOCS[sel.value] || '');
    }
  }

  function plot(c) {
    const t = traces(c.panel, c.keys);
    c.div.setAttribute('data-traces', String(t.length));
    Plotly.react(c.div, t, layout(c.panel), {displaylogo: false, responsive: true, displayModeBar: 'hover'});
    if (!c.bound) {
      c.bound = true;
      c.div.on('plotly_click', function (ev) { if (ev.points && ev.points.length) setCursor(ev.points[0].x); });
    }
  }
  function plotAll() { state.charts.forEach(plot); }

  function allSteps() {
    const s = new Set();
    RUNS.forEach(function (r) { r.steps.forEach(function (x) { s.add(x); }); });
    return Array.from(s).sort(function (a, b) { return a - b; });
  }

  function setCursor(step) {
    state.cursor = step;
    const steps = allSteps();
    const slider = document.getElementById('cursor');
    if (slider) slider.value = String(Math.max(0, steps.indexOf(step)));
    document.getElementById('cursor-label').textContent = 'step ' + step;
    state.charts.forEach(function (c) { if (c.div.data) Plotly.relayout(c.div, {shapes: cursorShapes()}); });
    showAtStep(step);
    const pick = document.getElementById('pick-step');
    if (pick) {
      const has = Array.from(pick.options).map(function (o) { return Number(o.value); });
      const near = has.filter(function (s) { return s <= step; }).pop();
      if (near !== undefined && Number(pick.value) !== near) { pick.value = String(near); showStepGroups(); }
    }
  }

  function showAtStep(step) {
    const box = document.getElementById('at-step');
    box.textContent = '';
    const table = add(box, 'table');
    const head = add(table, 'tr');
    add(head, 'th', {}, 'at step ' + step);
    const keys = AT_STEP.filter(function (k) { return RUNS.some(function (r) { return r.series[k]; }); });
    keys.forEach(function (k) { add(head, 'th', {title: DOCS[k] || ''}, k); });
    RUNS.forEach(function (r) {
      const tr = add(table, 'tr');
      add(tr, 'td', {}, r.name);
      const i = r.steps.indexOf(step);
      keys.forEach(function (k) { add(tr, 'td', {}, i < 0 || !r.series[k] ? '-' : num(r.series[k][i])); });
    });
  }

  function controls(root) {
    const bar = add(root, 'div', {id: 'controls'});
    const sm = add(bar, 'label', {}, 'smoothing ');
    const s = add(sm, 'input', {type: 'range', id: 'smoothing', min: '0', max: '0.99', step: '0.01',
      value: String(state.smooth)});
    const sv = add(sm, 'span', {id: 'smoothing-value'}, ' ' + state.smooth.toFixed(2));
    s.addEventListener('input', function () { state.smooth = Number(s.value); sv.textContent = ' ' +
      state.smooth.toFixed(2); plotAll(); });
    const steps = allSteps();
    if (steps.length) {
      const cl = add(bar, 'label', {}, 'step cursor ');
      const c = add(cl, 'input', {type: 'range', id: 'cursor', min: '0', max: String(steps.length - 1), step: '1',
        value: String(steps.length - 1)});
      add(cl, 'span', {id: 'cursor-label'});
      c.addEventListener('input', function () { setCursor(steps[Number(c.value)]); });
    }
    add(root, 'div', {id: 'at-step'});
  }

  // ---- rollout browser ----
  const rb = {run: 0};

  function rolloutRun() { return RUNS[rb.run]; }

  function stepRows() {
    const r = rolloutRun();
    const step = document.getElementById('pick-step').value;
    return (r.rollouts[step] || []);
  }

  function showStepGroups() {
    const rows = stepRows();
    const pick = document.getElementById('pick-group');
    pick.textContent = '';
    const groups = new Map();
    rows.forEach(function (row) {
      if (!groups.has(row.group)) groups.set(row.group, []);
      groups.get(row.group).push(row);
    });
    groups.forEach(function (g, id) {
      const mean = g.reduce(function (a, x) { return a + (Number(x.reward) || 0); }, 0) / g.length;
      const prompt = String(g[0].prompt || '').replace(/\s+/g, ' ');
      add(pick, 'option', {value: String(id)}, 'group ' + id + ' (mean reward ' + num(mean, 3) + '): ' +
        (prompt.length > 70 ? '...' + prompt.slice(-70) : prompt));
    });
    showGroup();
  }

  // The response split into its tokens: each token's text when the row has it ("pieces"), else one code point a token
  // where the counts agree (an older gspo's rows of a byte-level model); else null (the text is shown whole, the
  // values as a strip of cells).
  function tokensOf(row) {
    const lp = arr(row.logprobs);
    if (Array.isArray(row.pieces) && row.pieces.length === lp.length) return row.pieces.map(String);
    const chars = Array.from(String(row.response));
    if (chars.length === lp.length) return chars;
    return null;
  }

  function perToken(row, mode) {
    const lp = arr(row.logprobs);
    if (mode === 'logprob') return lp;
    if (mode === 'entropy') return Array.isArray(row.entropy) ? row.entropy : null;
    const train = row.trainer_logprobs;
    if (!Array.isArray(train)) return null;
    if (mode === 'teacher') {  // distillation: log pi_teacher - log pi_student, the token's term before coef
      const teach = row.teacher_logprobs;
      if (!Array.isArray(teach)) return null;
      return train.map(function (s, i) {
        return teach[i] === null || teach[i] === undefined || s === null ? null : teach[i] - s; });
    }
    return lp.map(function (b, i) { return train[i] === undefined ? null : train[i] - b; });
  }

  function colour(mode, v, scale) {
    if (v === null || v === undefined || !isFinite(v)) return 'transparent';
    if (mode === 'logprob') {  // p = exp(logprob): red (unlikely) to green (likely)
      const p = Math.exp(Math.min(0, v));
      return 'hsla(' + Math.round(120 * p) + ',75%,55%,0.35)';
    }
    if (mode === 'mismatch' || mode === 'teacher') {
      const a = Math.min(1, Math.abs(v) / Math.max(scale, 1e-6));
      return (v > 0 ? 'rgba(30,120,255,' : 'rgba(230,40,40,') + (0.08 + 0.6 * a).toFixed(3) + ')';
    }
    const a = Math.min(1, v / Math.max(scale, 1e-6));
    return 'rgba(150,60,200,' + (0.05 + 0.6 * a).toFixed(3) + ')';
  }

  function describe(mode, v) {
    if (mode === 'logprob') return 'logprob ' + num(v) + ' (p ' + num(Math.exp(v), 3) + ')';
    if (mode === 'mismatch') return 'log pi_train - log pi_sampler ' + num(v);
    if (mode === 'teacher') return 'log pi_teacher - log pi_student ' + num(v);
    return 'entropy ' + num(v);
  }

  function responseCard(parent, row, mode, scale, best) {
    const card = add(parent, 'div', {'class': 'resp' + (best ? ' best' : ''), 'data-row': String(row.row)});
    const adv = Number(row.advantage);
    const head = add(card, 'div', {'class': 'head'});
    add(head, 'span', {}, 'row ' + row.row + ' | reward ' + num(row.reward, 3) + (row.correct ? ' \u2713' : ' \u2717') +
      ' | ');
    add(head, 'span', {'class': adv > 0 ? 'pos' : (adv < 0 ? 'neg' : 'muted')}, 'adv ' + num(adv, 3));
    add(head, 'span', {}, ' | ' + row.finish + ' | ' + row.tokens + ' tok' +
      (row.inserted_tokens ? ' (+' + row.inserted_tokens + ' tool)' : '') +
      (row.staleness ? ' | stale ' + row.staleness : ''));
    if (Array.isArray(row.components)) add(card, 'div', {'class': 'muted'}, 'components: ' +
      row.components.map(function (c) { return num(c, 3); }).join(', '));
    const box = add(card, 'div', {'class': 'tokens'});
    const vals = perToken(row, mode) || [];
    const toks = tokensOf(row);
    if (toks) {
      toks.forEach(function (t, i) {
        const s = add(box, 'span', {'class': 'tok', title: 'token ' + i + ' ' + JSON.stringify(t) + ': ' +
          describe(mode, vals[i])}, t);
        s.style.background = colour(mode, vals[i], scale);
      });
    } else {
      add(box, 'div', {}, row.response);
      const strip = add(card, 'div', {'class': 'strip'});
      vals.forEach(function (v, i) {
        const s = add(strip, 'span', {'class': 'tok', title: 'token ' + i + ': ' + describe(mode, v)}, '\u2007');
        s.style.background = colour(mode, v, scale);
      });
    }
    if (row.trimmed_tokens) add(card, 'div', {'class': 'muted'}, 'token detail of the first ' + vals.length +
      ' of ' + row.trimmed_tokens + ' tokens (gspo report --max-tokens)');
  }

  function showGroup() {
    const view = document.getElementById('group-view');
    view.textContent = '';
    const id = Number(document.getElementById('pick-group').value);
    const mode = document.getElementById('colour-by').value;
    const rows = stepRows().filter(function (x) { return x.group === id; });
    if (!rows.length) { add(view, 'p', {'class': 'muted'}, 'no rows'); return; }
    add(view, 'div', {'class': 'prompt', id: 'group-prompt'}, String(rows[0].prompt === undefined ? '' : rows[0].prompt));
    let scale = 0;
    rows.forEach(function (r) { (perToken(r, mode) || []).forEach(function (v) {
      if (v !== null && isFinite(v)) scale = Math.max(scale, Math.abs(v)); }); });
    const best = Math.max.apply(null, rows.map(function (r) { return Number(r.reward); }));
    const grid = add(view, 'div', {id: 'group', 'data-rows': String(rows.length)});
    rows.forEach(function (r) { responseCard(grid, r, mode, scale, Number(r.reward) === best); });
  }

  function rolloutBrowser(root) {
    add(root, 'h2', {}, 'Rollouts');
    const withRows = RUNS.map(function (r, i) { return Object.keys(r.rollouts).length ? i : -1; })
      .filter(function (i) { return i >= 0; });
    if (!withRows.length) {
      add(root, 'p', {'class': 'muted', id: 'no-rollouts'}, 'No rollouts in ' + (RUNS.length > 1 ? 'these runs' :
        'this run') + ': train with --set logging.rollouts_every=N to write them (docs/metrics.md "Rollouts").');
      return;
    }
    rb.run = withRows[0];
    const bar = add(root, 'div', {id: 'rollout-controls'});
    if (withRows.length > 1) {
      const rs = add(bar, 'select', {id: 'pick-run'});
      withRows.forEach(function (i) { add(rs, 'option', {value: String(i)}, RUNS[i].name); });
      rs.addEventListener('change', function () { rb.run = Number(rs.value); fillSteps(); });
    }
    add(bar, 'label', {'for': 'pick-step'}, ' step ');
    const ss = add(bar, 'select', {id: 'pick-step'});
    add(bar, 'label', {'for': 'pick-group'}, ' prompt ');
    const gs = add(bar, 'select', {id: 'pick-group'});
    add(bar, 'label', {'for': 'colour-by'}, ' colour tokens by ');
    const cs = add(bar, 'select', {id: 'colour-by'});
    add(root, 'div', {id: 'group-view'});
    function fillSteps() {
      ss.textContent = '';
      Object.keys(rolloutRun().rollouts).map(Number).sort(function (a, b) { return a - b; }).forEach(function (s) {
        add(ss, 'option', {value: String(s)}, String(s)); });
      cs.textContent = '';
      const rows = [].concat.apply([], Object.values(rolloutRun().rollouts));
      add(cs, 'option', {value: 'logprob'}, 'behaviour log-prob');
      const mm = rows.some(function (r) { return Array.isArray(r.trainer_logprobs); });
      const en = rows.some(function (r) { return Array.isArray(r.entropy); });
      add(cs, 'option', mm ? {value: 'mismatch'} : {value: 'mismatch', disabled: 'disabled'},
        'sampler vs trainer mismatch' + (mm ? '' : ' (not in these rollouts)'));
      add(cs, 'option', en ? {value: 'entropy'} : {value: 'entropy', disabled: 'disabled'},
        'entropy' + (en ? '' : ' (not in these rollouts)'));
      if (rows.some(function (r) { return Array.isArray(r.teacher_logprobs); }))  // distill.teacher runs
        add(cs, 'option', {value: 'teacher'}, 'teacher vs student (distillation)');
      showStepGroups();
    }
    ss.addEventListener('change', showStepGroups);
    gs.addEventListener('change', showGroup);
    cs.addEventListener('change', showGroup);
    fillSteps();
  }

  function notesAndConfig(root) {
    const notes = [];
    RUNS.forEach(function (r) { (r.notes || []).forEach(function (n) { notes.push(r.name + ': ' + n); }); });
    if (notes.length) {
      add(root, 'h2', {}, 'Skipped while reading');
      const ul = add(root, 'ul', {id: 'notes'});
      notes.forEach(function (n) { add(ul, 'li', {}, n); });
    }
    add(root, 'h2', {}, 'Runs: summary and resolved config');
    RUNS.forEach(function (r, i) {
      const d = add(root, 'details', {'class': 'run', id: 'run-' + i});
      if (i === 0) d.setAttribute('open', '');
      add(d, 'summary', {}, r.name);
      const t = add(d, 'table', {'class': 'summary'});
      (r.summary || []).forEach(function (kv) { const tr = add(t, 'tr'); add(tr, 'td', {}, kv[0]);
        add(tr, 'td', {}, kv[1]); });
      add(d, 'pre', {'class': 'config'}, r.config || '(no config.yaml found)');
    });
  }

  function main() {
    const root = document.getElementById('app');
    const top = add(root, 'div', {id: 'top'});
    controls(top);
    drawCharts(root);
    rolloutBrowser(root);
    notesAndConfig(root);
    plotAll();
    const steps = allSteps();
    if (steps.length) setCursor(steps[steps.length - 1]);
    document.body.setAttribute('data-ready', 'yes');
  }
  main();
})();
