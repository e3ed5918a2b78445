// The hand-class grid: with two hole cards a ranks x ranks square (pairs on the diagonal, suited
// above it, offsuit below, aces top left); with one hole card a row of ranks. Each cell is split
// by the class's action frequencies (its combos weighted by reach) and fades with the class's
// weight (its mean reach, relative to the largest at the state). Hovering a cell lists its combos.

const RANKS = "23456789TJQKA";

export function classes(game) {
  // hand index -> {key, row, col}; the cells in display order
  const R = game.num_ranks;
  const cells = new Map();
  const of = [];
  game.hands.forEach((name, h) => {
    let key, row, col;
    if (game.num_hole_cards === 1) {
      const r = RANKS.indexOf(name[0]);
      key = name[0];
      row = 0;
      col = R - 1 - r;
    } else {
      const r1 = RANKS.indexOf(name[0]);
      const r2 = RANKS.indexOf(name[2]);
      const i = R - 1 - r1;
      const j = R - 1 - r2;
      if (r1 === r2) [key, row, col] = [name[0] + name[2], i, j];
      else if (name[1] === name[3]) [key, row, col] = [name[0] + name[2] + "s", i, j];
      else [key, row, col] = [name[0] + name[2] + "o", j, i];
    }
    if (!cells.has(key)) cells.set(key, { key, row, col, hands: [] });
    cells.get(key).hands.push(h);
    of.push(key);
  });
  const list = [...cells.values()].sort((a, b) => a.row - b.row || a.col - b.col);
  return { list, rows: game.num_hole_cards === 1 ? 1 : R, cols: R };
}

function aggregate(cell, data) {
  // the class's frequencies (reach-weighted over its combos not blocked by the board) and weight
  const A = data.actions.length;
  const freq = new Array(A).fill(0);
  let wsum = 0;
  let live = 0;
  for (const h of cell.hands) {
    let s = 0;
    for (let a = 0; a < A; a++) s += data.strategy[a][h];
    if (s <= 0) continue; // blocked by the board
    live += 1;
    const w = data.reach[h];
    wsum += w;
    for (let a = 0; a < A; a++) freq[a] += (w > 0 ? w : 0) * data.strategy[a][h];
  }
  if (live === 0) return { live: 0, weight: 0, freq };
  if (wsum > 0) for (let a = 0; a < A; a++) freq[a] /= wsum;
  else {
    // a class the history never reaches: its plain average, shown faded out
    for (const h of cell.hands) for (let a = 0; a < A; a++) freq[a] += data.strategy[a][h] / live;
  }
  return { live, weight: wsum / live, freq };
}

export function renderGrid(root, legend, tooltip, game, layout, data, colors, labelOf) {
  const t0 = performance.now();
  const cells = layout.list.map((c) => ({ ...c, ...aggregate(c, data) }));
  const top = Math.max(1e-12, ...cells.map((c) => c.weight));
  root.style.gridTemplateColumns = `repeat(${layout.cols}, 1fr)`;
  root.classList.toggle("single-row", layout.rows === 1);
  const frag = document.createDocumentFragment();
  for (const c of cells) {
    const div = document.createElement("div");
    div.className = "cell";
    div.dataset.class = c.key;
    div.dataset.weight = c.weight.toFixed(5);
    div.style.gridRow = String(c.row + 1);
    div.style.gridColumn = String(c.col + 1);
    if (c.live === 0) div.classList.add("blocked");
    else {
      div.style.opacity = String(0.12 + 0.88 * (c.weight / top));
      const bar = document.createElement("div");
      bar.className = "bar";
      c.freq.forEach((f, a) => {
        if (f <= 0) return;
        const seg = document.createElement("span");
        seg.style.width = `${(100 * f).toFixed(2)}%`;
        seg.style.background = colors[data.actions[a]];
        bar.appendChild(seg);
      });
      div.appendChild(bar);
    }
    const lab = document.createElement("span");
    lab.className = "label";
    lab.textContent = c.key;
    div.appendChild(lab);
    div.addEventListener("mouseenter", () => showTip(tooltip, div, c, game, data, colors, labelOf));
    div.addEventListener("mouseleave", () => (tooltip.hidden = true));
    frag.appendChild(div);
  }
  root.replaceChildren(frag);
  renderLegend(legend, cells, data, colors, labelOf);
  return performance.now() - t0;
}

function renderLegend(legend, cells, data, colors, labelOf) {
  // the whole range's frequencies: every combo weighted by its reach
  const A = data.actions.length;
  const tot = new Array(A).fill(0);
  let w = 0;
  data.reach.forEach((r, h) => {
    if (r <= 0) return;
    w += r;
    for (let a = 0; a < A; a++) tot[a] += r * data.strategy[a][h];
  });
  legend.replaceChildren(
    ...data.actions.map((a, i) => {
      const item = document.createElement("span");
      item.className = "legend-item";
      item.dataset.action = a;
      const sw = document.createElement("i");
      sw.style.background = colors[a];
      item.append(sw, `${labelOf(a)} ${w > 0 ? ((100 * tot[i]) / w).toFixed(1) : "0.0"}%`);
      return item;
    }),
  );
}

function showTip(tooltip, div, cell, game, data, colors, labelOf) {
  const rows = [];
  const head = data.actions.map((a) => `<th style="color:${colors[a]}">${labelOf(a)}</th>`).join("");
  for (const h of cell.hands) {
    let s = 0;
    for (let a = 0; a < data.actions.length; a++) s += data.strategy[a][h];
    if (s <= 0) continue;
    const tds = data.actions
      .map((a, i) => `<td data-action="${a}">${data.strategy[i][h].toFixed(3)}</td>`)
      .join("");
    rows.push(`<tr data-combo="${game.hands[h]}"><th>${game.hands[h]}</th><td class="reach">${data.reach[h].toFixed(3)}</td>${tds}</tr>`);
  }
  tooltip.innerHTML =
    `<div class="tip-head">${cell.key}: weight ${cell.weight.toFixed(3)}</div>` +
    (rows.length
      ? `<table><tr><th>combo</th><th>reach</th>${head}</tr>${rows.join("")}</table>`
      : "<div>every combo is blocked by the board</div>");
  const r = div.getBoundingClientRect();
  tooltip.hidden = false;
  const tw = tooltip.offsetWidth;
  let x = r.right + 8 + window.scrollX;
  if (r.right + 8 + tw > window.innerWidth) x = r.left - 8 - tw + window.scrollX;
  tooltip.style.left = `${Math.max(4, x)}px`;
  tooltip.style.top = `${r.top + window.scrollY}px`;
}
