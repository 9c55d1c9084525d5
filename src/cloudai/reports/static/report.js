/* cloudai report: draws every div.chart of the page from its data-spec with uPlot (inline above), and shows
   what a point is when the mouse is over it: a trial's step, status, configuration (knob values) and metrics.
   The specs are written by cloudai/reports/plots*.py (their module docstrings describe them); a point given as
   a row number reads its values from its agent run's table, <script type="application/json" class="rows">
   (cloudai/reports/chartdata.py). window.cloudaiReport.charts maps a chart's id to {u, points} (tests use it). */
(() => {
  "use strict";
  const tables = {};
  for (const el of document.querySelectorAll("script.rows")) tables[el.dataset.rows] = JSON.parse(el.textContent);
  const charts = new Map();
  window.cloudaiReport = { charts };

  const fmt = (v) => {
    if (v === null || v === undefined) return "—";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
    return String(v);
  };

  function rowText(table, r) {
    const c = table.cols;
    const lines = [`step ${c.step[r]} (${table.statuses[c.status[r]]})`];
    table.knobs.forEach((k, j) => lines.push(`${k} = ${fmt(c["knob:" + j][r])}`));
    (table.env || []).forEach((p, j) => lines.push(`${p} = ${fmt(c["env:" + j][r])} (env)`));
    lines.push(`${table.reward}: ${fmt(c.reward[r])}`);
    table.metrics.forEach((m, j) => lines.push(`${m}: ${fmt(c["obs:" + j][r])}`));
    (table.more || []).forEach((m, j) => lines.push(`${m}: ${fmt(c["more:" + j][r])}`));
    lines.push(`duration: ${fmt(c.elapsed[r])} s`);
    return lines.join("\n");
  }

  // [x, y, series index, what hovering it shows] of every drawable point, sorted by x (uPlot's aligned data).
  function collect(spec) {
    const table = tables[spec.rows];
    const out = [];
    spec.series.forEach((s, si) => {
      const n = s.xs ? s.xs.length : s.rows.length;
      for (let i = 0; i < n; i++) {
        const r = s.rows ? s.rows[i] : null;
        const x = s.xs ? s.xs[i] : table.cols[s.x][r];
        const y = s.ys ? s.ys[i] : table.cols[s.y][r];
        if (typeof x !== "number" || typeof y !== "number" || !isFinite(x) || !isFinite(y)) continue;
        if (spec.xlog && x <= 0) continue;
        const tip = r !== null && r !== undefined ? () => rowText(table, r)
          : () => (s.tips ? s.tips[i] : `${s.label}\n${spec.xlabel} ${fmt(x)}: ${fmt(y)}`);
        out.push([x, y, si, tip]);
      }
    });
    return out.sort((a, b) => a[0] - b[0]);
  }

  function seriesOpts(s) {
    const line = s.line === "step" ? uPlot.paths.stepped({ align: 1 }) : s.line === "line" ? uPlot.paths.linear() : null;
    const size = s.size === undefined ? 5 : s.size;
    return {
      label: s.label, stroke: s.color, width: line ? 1.5 : 0, spanGaps: true,
      paths: line || (() => null),
      points: { show: size > 0, size, fill: s.color, stroke: s.color, width: 0 },
    };
  }

  function axes(spec) {
    const x = { label: spec.xlabel, stroke: "#333" };
    if (spec.ticks) {
      x.splits = () => spec.ticks.map((t) => t[0]);
      x.values = () => spec.ticks.map((t) => t[1]);
      if (spec.ticks.some((t) => t[2])) { x.rotate = -30; x.size = 70; }
    }
    return [x, { label: spec.ylabel, stroke: "#333", size: 60 }];
  }

  // Each series' key: a swatch of its colour (a line's or its markers').
  function legend(spec, show) {
    const color = (u, si) => spec.series[si - 1].color;
    return { show, live: false, markers: { width: 2, stroke: color, fill: color } };
  }

  // Boxes of a categorical knob: quartiles, median (orange), whiskers with caps.
  function drawBoxes(u, boxes) {
    const ctx = u.ctx, X = (v) => u.valToPos(v, "x", true), Y = (v) => u.valToPos(v, "y", true);
    ctx.save();
    ctx.lineWidth = uPlot.pxRatio;
    for (const [c, half, q1, q3, med, lo, hi] of boxes) {
      ctx.strokeStyle = "#000";
      ctx.strokeRect(X(c - half), Y(q3), X(c + half) - X(c - half), Y(q1) - Y(q3));
      ctx.beginPath();
      for (const [from, to] of [[q1, lo], [q3, hi]]) { ctx.moveTo(X(c), Y(from)); ctx.lineTo(X(c), Y(to)); }
      for (const w of [lo, hi]) { ctx.moveTo(X(c - half / 2), Y(w)); ctx.lineTo(X(c + half / 2), Y(w)); }
      ctx.stroke();
      ctx.strokeStyle = "#ff7f0e";
      ctx.lineWidth = 2 * uPlot.pxRatio;
      ctx.beginPath(); ctx.moveTo(X(c - half), Y(med)); ctx.lineTo(X(c + half), Y(med)); ctx.stroke();
      ctx.lineWidth = uPlot.pxRatio;
    }
    ctx.restore();
  }

  // The tooltip of the point nearest the cursor (within 12 px), among the series shown.
  function hover(u, points, tip) {
    const { left, top } = u.cursor;
    let best = null, dist = 144;
    if (left >= 0) {
      for (const p of points) {
        if (!u.series[p[2] + 1].show) continue;
        const dx = u.valToPos(p[0], "x") - left, dy = u.valToPos(p[1], "y") - top, d = dx * dx + dy * dy;
        if (d <= dist) { best = p; dist = d; }
      }
    }
    if (best === null) { tip.style.display = "none"; return; }
    tip.textContent = best[3]();
    tip.style.display = "block";
    const px = u.valToPos(best[0], "x"), py = u.valToPos(best[1], "y");
    tip.style.left = (px + tip.offsetWidth + 16 > u.over.clientWidth ? px - tip.offsetWidth - 10 : px + 10) + "px";
    tip.style.top = (py + tip.offsetHeight + 16 > u.over.clientHeight ? Math.max(0, py - tip.offsetHeight - 10) : py + 10) + "px";
  }

  function xyChart(el, spec) {
    const points = collect(spec);
    const data = [points.map((p) => p[0]), ...spec.series.map(() => new Array(points.length).fill(null))];
    points.forEach((p, k) => { data[p[2] + 1][k] = p[1]; });
    const tip = document.createElement("div");
    tip.className = "tip";
    const opts = {
      title: spec.title || undefined, width: spec.width, height: spec.height,
      scales: { x: { time: false, distr: spec.xlog ? 3 : 1, range: spec.xrange ? () => spec.xrange : undefined } },
      axes: axes(spec),
      legend: legend(spec, spec.series.length > 1),
      cursor: { points: { show: false }, drag: { x: true, y: false } },
      series: [{}, ...spec.series.map(seriesOpts)],
      hooks: {
        draw: spec.boxes ? [(u) => drawBoxes(u, spec.boxes)] : [],
        setCursor: [(u) => hover(u, points, tip)],
      },
    };
    const u = new uPlot(opts, data, el);
    u.over.appendChild(tip);
    return { u, points };
  }

  // Parallel coordinates: one line per trial across the objectives, each scaled to its [min, max].
  function parallelChart(el, spec) {
    const table = tables[spec.rows];
    const n = spec.axes.length;
    const scaled = (r, j) => {
      const v = table.cols[spec.cols[j]][r], lo = spec.lows[j], hi = spec.highs[j];
      return hi > lo ? (v - lo) / (hi - lo) : 0.5;
    };
    const points = [];  // every vertex, for the hover
    spec.series.forEach((s, si) => s.rows.forEach((r) => {
      for (let j = 0; j < n; j++) points.push([j, scaled(r, j), si, () => rowText(table, r)]);
    }));
    const tip = document.createElement("div");
    tip.className = "tip";
    const draw = (u) => {
      const ctx = u.ctx;
      ctx.save();
      spec.series.forEach((s, si) => {
        if (!u.series[si + 1].show) return;
        ctx.strokeStyle = s.color;
        ctx.globalAlpha = si === 0 ? 0.3 : 0.9;
        ctx.lineWidth = (si === 0 ? 0.8 : 1.5) * uPlot.pxRatio;
        for (const r of s.rows) {
          ctx.beginPath();
          for (let j = 0; j < n; j++) {
            const x = u.valToPos(j, "x", true), y = u.valToPos(scaled(r, j), "y", true);
            if (j === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
          }
          ctx.stroke();
        }
      });
      ctx.restore();
    };
    const ticks = spec.axes.map((a, j) => [j, a]);
    const opts = {
      title: spec.title || undefined, width: spec.width, height: spec.height,
      scales: { x: { time: false, range: () => [-0.1, n - 0.9] }, y: { range: () => [-0.05, 1.05] } },
      axes: axes({ ...spec, ticks }),
      legend: legend(spec, true),
      cursor: { points: { show: false }, drag: { x: false, y: false } },
      series: [{}, ...spec.series.map((s) => ({ label: s.label, stroke: s.color, paths: () => null, points: { show: false } }))],
      hooks: { draw: [draw], setCursor: [(u) => hover(u, points, tip)] },
    };
    const u = new uPlot(opts, [[0, n - 1], ...spec.series.map(() => [null, null])], el);
    u.over.appendChild(tip);
    return { u, points };
  }

  for (const el of document.querySelectorAll("div.chart")) {
    try {
      const spec = JSON.parse(el.dataset.spec);
      charts.set(el.id, spec.kind === "parallel" ? parallelChart(el, spec) : xyChart(el, spec));
    } catch (err) {
      el.textContent = `This chart could not be drawn: ${err}`;
      console.error(`cloudai report: chart ${el.id}: ${err}`);
    }
  }
})();
