// The run's training curve from its metrics file: exploitability (mbb/game) against training time
// or iterations, as inline SVG; a run without exploitability rows shows its progress instead
// (iterations against time).

import { api, sayError } from "./api.js";

const $ = (id) => document.getElementById(id);
const NS = "http://www.w3.org/2000/svg";

function el(name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function ticks(lo, hi, log, n = 5) {
  // [values, decimals to show]
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
    return [out.filter((t) => t >= lo / 1.0001 && t <= hi * 1.0001), null];
  }
  const step0 = (hi - lo) / n || 1;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0);
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9 * Math.abs(hi); t += step) out.push(t);
  return [out, Math.max(0, -Math.floor(Math.log10(step)))];
}

function fmt(v, decimals) {
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toPrecision(3)}k`;
  if (decimals !== null && decimals !== undefined) return v.toFixed(decimals);
  return String(+v.toPrecision(2));
}

export function drawCurve(svgBox, points, xLabel, yLabel, log) {
  const W = 720, H = 380, L = 70, R = 20, T = 20, B = 50;
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  // time and iterations start at 0: the axis does too (a run of one row still has a scale)
  const x0 = Math.min(0, ...xs), x1 = Math.max(...xs) || 1;
  let y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (!log) y0 = Math.min(0, y0);
  if (y1 === y0) y1 = y0 + 1;
  const fy = log ? (v) => Math.log10(v) : (v) => v;
  const sx = (v) => L + ((v - x0) / (x1 - x0 || 1)) * (W - L - R);
  const sy = (v) => H - B - ((fy(v) - fy(y0)) / (fy(y1) - fy(y0) || 1)) * (H - T - B);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, id: "curve-svg", role: "img" });
  svg.appendChild(el("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "plot" }));
  const [xt, xd] = ticks(x0, x1, false);
  for (const t of xt) {
    svg.appendChild(el("line", { x1: sx(t), x2: sx(t), y1: T, y2: H - B, class: "gridline" }));
    svg.appendChild(el("text", { x: sx(t), y: H - B + 16, "text-anchor": "middle" }, fmt(t, xd)));
  }
  const [yt, yd] = ticks(y0, y1, log);
  for (const t of yt) {
    svg.appendChild(el("line", { x1: L, x2: W - R, y1: sy(t), y2: sy(t), class: "gridline" }));
    svg.appendChild(el("text", { x: L - 6, y: sy(t) + 4, "text-anchor": "end" }, fmt(t, yd)));
  }
  svg.appendChild(el("text", { x: (L + W - R) / 2, y: H - 10, "text-anchor": "middle", class: "axis" }, xLabel));
  svg.appendChild(el("text", { x: 16, y: (T + H - B) / 2, "text-anchor": "middle", class: "axis", transform: `rotate(-90 16 ${(T + H - B) / 2})` }, yLabel));
  const d = points.map((p, i) => `${i ? "L" : "M"}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join("");
  svg.appendChild(el("path", { d, class: "curve" }));
  for (const p of points) svg.appendChild(el("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 3, class: "point" }));
  svgBox.replaceChildren(svg);
}

export class Runs {
  constructor(game) {
    this.game = game;
    this.data = null;
    $("runs-x").onchange = () => this.draw();
  }

  async load() {
    try {
      this.data = await api("/v1/run");
      this.draw();
    } catch (err) {
      $("curve").textContent = err.kind === "no_run" ? "this server was not started on a run directory" : "";
      sayError(err);
    }
  }

  draw() {
    if (!this.data) return;
    const rows = this.data.rows;
    const x = $("runs-x").value;
    const xLabel = x === "seconds" ? "training time (s)" : "iterations";
    const withExpl = rows.filter((r) => r.exploitability !== null && r.exploitability !== undefined && r[x] !== null);
    const box = $("curve");
    box.dataset.points = "0";
    if (rows.length === 0) {
      box.textContent = "no metrics rows yet";
      $("runs-info").textContent = this.data.run_dir;
      return;
    }
    let pts, yLabel, log = false, note;
    if (withExpl.length) {
      pts = withExpl.map((r) => [r[x], r.exploitability * this.data.factor]);
      yLabel = `exploitability (${this.data.unit})`;
      const pos = pts.every((p) => p[1] > 0);
      log = pos && Math.max(...pts.map((p) => p[1])) / Math.min(...pts.map((p) => p[1])) > 20;
      note = `${withExpl.length} exploitability measurements`;
      box.dataset.kind = "exploitability";
    } else {
      const y = x === "seconds" ? "iteration" : "seconds";
      pts = rows.filter((r) => r[x] !== null && r[y] !== null).map((r) => [r[x], r[y]]);
      yLabel = y === "seconds" ? "training time (s)" : "iterations";
      note = "no exploitability in this run's metrics (too big to compute exactly; mccfr eval RUN --lbr measures LBR): its progress instead";
      box.dataset.kind = "progress";
    }
    $("runs-info").textContent = `${this.data.run_dir}: ${rows.length} row${rows.length > 1 ? "s" : ""}, ${note}`;
    drawCurve(box, pts, xLabel, yLabel, log);
    box.dataset.points = String(pts.length);
  }
}
