// The dashboard's charts (Chart.js, served by the application itself).
// Data comes from the page's <script type="application/json" id="data"> block, read with
// textContent and JSON.parse; every string from a result file goes to the canvas or to
// textContent, never into markup.
"use strict";

const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

function pageData() {
  const node = document.getElementById("data");
  return node ? JSON.parse(node.textContent) : null;
}

function when(iso) {
  return Date.parse(iso.endsWith("Z") || /[+-]\d\d:\d\d$/.test(iso) ? iso : iso + "Z");
}

function day(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

function openRun(run) {
  window.location.href = "/run/" + encodeURIComponent(String(run));
}

// Clicking a point opens its run (every point carries its run id).
function clickToRun(evt, elements, chart) {
  if (!elements.length) return;
  const el = elements[0];
  const point = chart.data.datasets[el.datasetIndex].data[el.index];
  if (point && point.run !== undefined) openRun(point.run);
}

// Dashed vertical lines where the kernel changed, labelled with the new kernel.
const kernelLines = {
  id: "kernelLines",
  afterDatasetsDraw(chart, _args, options) {
    const marks = options.marks || [];
    const {ctx, chartArea, scales} = chart;
    ctx.save();
    ctx.strokeStyle = "#888";
    ctx.fillStyle = "#555";
    ctx.setLineDash([4, 4]);
    ctx.font = "11px sans-serif";
    for (const mark of marks) {
      const x = scales.x.getPixelForValue(mark.x);
      if (x < chartArea.left || x > chartArea.right) continue;
      ctx.beginPath();
      ctx.moveTo(x, chartArea.top);
      ctx.lineTo(x, chartArea.bottom);
      ctx.stroke();
      if (options.labels) ctx.fillText(mark.label, x + 3, chartArea.top + 10);
    }
    ctx.restore();
  },
};

// Each point's machine written beside it (scaling page).
const pointLabels = {
  id: "pointLabels",
  afterDatasetsDraw(chart) {
    const {ctx} = chart;
    ctx.save();
    ctx.fillStyle = "#333";
    ctx.font = "11px sans-serif";
    chart.data.datasets.forEach((dataset, i) => {
      const meta = chart.getDatasetMeta(i);
      meta.data.forEach((element, j) => {
        const label = dataset.data[j] && dataset.data[j].label;
        if (label) ctx.fillText(label, element.x + 5, element.y - 5);
      });
    });
    ctx.restore();
  },
};

function timeAxis(title) {
  return {type: "linear", title: {display: true, text: title},
          ticks: {callback: (value) => day(value), maxRotation: 0}};
}

function drawTrend(data) {
  const timeDatasets = [];
  const countDatasets = [];
  const marks = [];
  data.series.forEach((series, s) => {
    const colour = COLOURS[s % COLOURS.length];
    const points = series.points.map((p) => ({x: when(p.x), y: p.y, run: p.run,
                                              kernel: p.kernel, verdict: p.verdict}));
    if (series.noise_floor !== null) {
      const banded = series.points.filter((p) => p.band);
      timeDatasets.push({label: series.lineage + " noise band (low)", borderWidth: 0,
                         pointRadius: 0, backgroundColor: colour + "22",
                         data: banded.map((p) => ({x: when(p.x), y: p.band[0], run: p.run})),
                         fill: false});
      timeDatasets.push({label: series.lineage + " noise band", borderWidth: 0,
                         pointRadius: 0, backgroundColor: colour + "22",
                         data: banded.map((p) => ({x: when(p.x), y: p.band[1], run: p.run})),
                         fill: "-1"});
    }
    timeDatasets.push({label: series.lineage, data: points, borderColor: colour,
                       backgroundColor: colour, pointRadius: 3, pointHoverRadius: 6,
                       pointBackgroundColor: points.map((p) =>
                         p.verdict === "slower" || p.verdict === "counts up" ? "#d00" : colour),
                       borderWidth: 1.5, spanGaps: true});
    if (series.changepoints.length) {
      timeDatasets.push({label: series.lineage + " change points", type: "scatter",
                         pointStyle: "triangle", pointRadius: 9, borderColor: "#000",
                         backgroundColor: "#fc0",
                         data: series.changepoints.map((c) => ({
                           x: when(c.x), y: c.after_ns, run: c.run,
                           step: c.change, before: c.kernel_before, after: c.kernel_after}))});
    }
    for (const k of series.kernels) marks.push({x: when(k.x), label: k.after});
    series.counters.forEach((counter, c) => {
      countDatasets.push({label: series.lineage + " " + counter,
                          borderColor: COLOURS[(s * 3 + c + 1) % COLOURS.length],
                          pointRadius: 2, borderWidth: 1.2, spanGaps: true,
                          data: series.points.filter((p) => counter in p.counters).map((p) => ({
                            x: when(p.x), y: p.counters[counter], run: p.run}))});
    });
  });
  const xs = timeDatasets.flatMap((d) => d.data.map((p) => p.x));
  const range = xs.length ? {min: Math.min(...xs), max: Math.max(...xs)} : {};
  const tooltip = {callbacks: {
    label: (item) => {
      const p = item.raw;
      const parts = [item.dataset.label + ": " + Number(p.y).toPrecision(4)];
      if (p.kernel) parts.push("kernel " + p.kernel);
      if (p.verdict) parts.push(p.verdict);
      if (p.step !== undefined) parts.push("step " + (100 * p.step).toFixed(1) + "%, " +
                                            p.before + " -> " + p.after);
      parts.push("run " + p.run);
      return parts.join(", ");
    },
    title: (items) => items.length ? day(items[0].raw.x) : ""}};
  const common = (yTitle, labels) => ({
    animation: false, responsive: true, maintainAspectRatio: false, parsing: true,
    interaction: {mode: "nearest", intersect: true}, onClick: clickToRun,
    scales: {x: Object.assign(timeAxis("recorded (UTC)"), range),
             y: {title: {display: true, text: yTitle}}},
    plugins: {tooltip: tooltip, kernelLines: {marks: marks, labels: labels},
              legend: {labels: {filter: (item) => !item.text.endsWith("(low)")}}}});
  new Chart(document.getElementById("trend-chart"), {
    type: "line", data: {datasets: timeDatasets}, options: common("median real time (ns)", true),
    plugins: [kernelLines]});
  new Chart(document.getElementById("counts-chart"), {
    type: "line", data: {datasets: countDatasets}, options: common("count per operation", false),
    plugins: [kernelLines]});
}

function drawScaling(data) {
  const groups = new Map();
  const byKernel = data.by === "kernel";
  for (const p of data.points) {
    // by=kernel: one line per kernel (and config), so a kernel A/B reads as two lines.
    const key = byKernel ? (p.kernel || "unknown kernel") + " · " + (p.config || "default")
                         : p.host + " · " + (p.config || "default");
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push({x: p.cpus, y: p.median_ns, run: p.run_id, label: p.host});
  }
  const datasets = Array.from(groups.entries()).map(([key, points], i) => ({
    label: key, data: points.sort((a, b) => a.x - b.x), showLine: true,
    borderColor: COLOURS[i % COLOURS.length], backgroundColor: COLOURS[i % COLOURS.length],
    pointRadius: 5, pointHoverRadius: 8}));
  new Chart(document.getElementById("scaling-chart"), {
    type: "scatter", data: {datasets: datasets}, plugins: [pointLabels],
    options: {animation: false, responsive: true, maintainAspectRatio: false,
              layout: {padding: {right: 80}},  // room for the last point's label
              interaction: {mode: "nearest", intersect: true}, onClick: clickToRun,
              scales: {x: {type: "linear", title: {display: true, text: "online CPUs"},
                           ticks: {precision: 0}},
                       y: {title: {display: true, text: "median real time (ns)"}}},
              plugins: {tooltip: {callbacks: {label: (item) => item.raw.label + ": " +
                Number(item.raw.y).toPrecision(4) + " ns at " + item.raw.x + " CPUs, run " +
                item.raw.run}}}}});
}

// A step's marker, by the gate's verdict of the release against the run before it.
const STEP_STYLES = {"slower": ["triangle", "#d62728"], "faster": ["triangle", "#2ca02c"],
                     "counts up": ["rectRot", "#ff7f0e"], "counts down": ["rectRot", "#9467bd"]};

function drawReleases(data) {
  const releases = data.releases;
  const datasets = data.lines.map((line, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const points = line.points.filter((p) => p.median_ns !== null).map((p) => ({
      x: p.kernel, y: p.median_ns, run: p.run_id, verdict: p.verdict, step: p.step,
      change: p.change, before: p.baseline_kernel}));
    const style = (p, k, fallback) => (p.step && STEP_STYLES[p.verdict] ?
                                       STEP_STYLES[p.verdict][k] : fallback);
    return {label: line.lineage, data: points, borderColor: colour, backgroundColor: colour,
            borderWidth: 1.5, spanGaps: true,
            pointStyle: points.map((p) => style(p, 0, "circle")),
            pointBackgroundColor: points.map((p) => style(p, 1, colour)),
            pointRotation: points.map((p) => (p.step && p.verdict === "faster" ? 180 : 0)),
            pointRadius: points.map((p) => (p.step ? 9 : 3)), pointHoverRadius: 10};
  });
  new Chart(document.getElementById("releases-chart"), {
    type: "line", data: {labels: releases, datasets: datasets},
    options: {animation: false, responsive: true, maintainAspectRatio: false,
              interaction: {mode: "nearest", intersect: true}, onClick: clickToRun,
              scales: {x: {type: "category", title: {display: true, text: "kernel release"}},
                       y: {title: {display: true, text: "median real time (ns)"}}},
              plugins: {tooltip: {callbacks: {label: (item) => {
                const p = item.raw;
                const parts = [item.dataset.label + ": " + Number(p.y).toPrecision(4) + " ns"];
                if (p.step) parts.push(p.verdict + (p.change !== null ? " " +
                  (100 * p.change).toFixed(1) + "%" : "") + " against " + p.before);
                parts.push("run " + p.run);
                return parts.join(", ");
              }}}}}});
}

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  const data = pageData();
  if (page === "trend" && data) drawTrend(data);
  if (page === "scaling" && data) drawScaling(data);
  if (page === "releases" && data) drawReleases(data);
});
