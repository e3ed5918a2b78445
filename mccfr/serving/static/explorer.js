// The explorer: walk the betting tree from any state (the strategy's actions, fold / call, a raise
// size typed in, the board's cards), and see the state's range on the hand-class grid, from the
// blueprint or from a subgame the server solves there.

import { api, say, sayError } from "./api.js";
import { actionColors, actionLabel } from "./colors.js";
import { classes, renderGrid } from "./grid.js";

const $ = (id) => document.getElementById(id);

export const timings = { firstGrid: null, last: null };
window.mccfrTimings = timings;

export class Explorer {
  constructor(game) {
    this.game = game;
    this.layout = classes(game);
    this.line = []; // [{betting, board, label}], the current state last
    this.data = null;
    this.session = `explorer:${Math.random().toString(36).slice(2, 12)}`;
    this.busy = false;
    this.setupControls();
    this.cardButtons();
  }

  setupControls() {
    const sel = $("method");
    sel.replaceChildren(new Option("blueprint", "blueprint"));
    for (const m of this.game.methods) if (m !== "blueprint") sel.add(new Option(`subgame: ${m}`, m));
    if (this.game.solve_method) sel.title = `the server solves from round ${this.game.solve_from_round + 1} on`;
    else sel.title = "this server does not solve (mccfr serve --solve METHOD)";
    if (this.game.default_time_budget_ms) $("budget").value = this.game.default_time_budget_ms;
    sel.onchange = () => this.reload();
    $("budget").onchange = () => sel.value !== "blueprint" && this.reload();
    $("raise-go").onclick = () => {
      const v = $("raise-to").value.trim();
      if (v) this.act(this.game.limit ? "r" : `r${v}`);
    };
    $("raise-to").onkeydown = (e) => e.key === "Enter" && $("raise-go").click();
    $("board-go").onclick = () => this.deal($("board-text").value.replace(/[\s/]/g, ""));
    $("board-text").onkeydown = (e) => e.key === "Enter" && $("board-go").click();
  }

  cardButtons() {
    const box = $("card-buttons");
    box.replaceChildren(
      ...this.game.cards.map((c) => {
        const b = document.createElement("button");
        b.className = `card suit-${c[1]}`;
        b.textContent = c;
        b.dataset.card = c;
        b.onclick = () => this.pick(c);
        return b;
      }),
    );
  }

  get current() {
    return this.line[this.line.length - 1];
  }

  async start() {
    this.line = [{ betting: "", board: "", label: "start" }];
    await this.load({ betting: "", board: "" }, null, true);
  }

  async reload() {
    const cur = this.current;
    if (cur) await this.load({ betting: cur.betting, board: cur.board }, null, true);
  }

  async act(action) {
    const cur = this.current;
    await this.load({ betting: cur.betting, board: cur.board, action }, action);
  }

  async deal(cards) {
    const cur = this.current;
    if (!cards) return;
    await this.load({ betting: cur.betting, board: cur.board + cards }, cards);
  }

  pick(card) {
    const box = $("board-text");
    const picked = box.value.replace(/[\s/]/g, "");
    if (picked.includes(card)) return;
    box.value = picked + card;
    const due = this.data && this.data.status === "cards_due" ? this.data.cards_due : 0;
    if (due && box.value.length / 2 >= due) this.deal(box.value);
  }

  async goto(i) {
    this.line = this.line.slice(0, i + 1);
    await this.load({ betting: this.current.betting, board: this.current.board }, null, true);
  }

  async load(req, label = null, replace = false) {
    if (this.busy) return;
    this.busy = true;
    const method = $("method").value;
    const body = { ...req };
    if (method !== "blueprint") {
      body.method = method;
      body.time_budget_ms = parseInt($("budget").value) || undefined;
      body.session = this.session;
      say(`solving (${method}, at most ${body.time_budget_ms} ms) ...`);
    }
    document.body.classList.add("loading");
    const t0 = performance.now();
    try {
      const data = await api("/v1/range", body);
      const t1 = performance.now();
      if (!replace) this.line.push({ betting: data.betting, board: data.board.join(""), label });
      else Object.assign(this.current, { betting: data.betting, board: data.board.join("") });
      const renderMs = this.show(data);
      const t2 = performance.now();
      timings.last = { fetchMs: t1 - t0, renderMs, totalMs: t2 - t0, serverMs: data.elapsed_ms, source: data.source, status: data.status };
      if (data.status === "decision" && timings.firstGrid === null) {
        timings.firstGrid = t2;
        performance.mark("mccfr-first-grid");
      }
      if (method === "blueprint" || data.status !== "decision") say("");
      else say(`${data.source} answer in ${data.elapsed_ms.toFixed(0)} ms`);
    } catch (err) {
      sayError(err);
    } finally {
      this.busy = false;
      document.body.classList.remove("loading");
    }
  }

  show(data) {
    // (node locking goes here: a control in #explorer-tools locks the node this.current, whose
    // range is this.data, and a later /v1/range request carries the locks)
    this.data = data;
    this.renderLine();
    this.renderState(data);
    const grid = $("grid");
    grid.dataset.status = data.status;
    if (data.status !== "decision") {
      grid.replaceChildren();
      $("legend").replaceChildren();
      $("source").textContent = "";
      $("source").className = "badge";
      $("source-detail").textContent = "";
      grid.dataset.betting = data.betting;
      return 0;
    }
    const colors = actionColors(data.actions);
    const facing = data.legal.includes("f");
    const ms = renderGrid(grid, $("legend"), $("tooltip"), this.game, this.layout, data, colors, (a) => actionLabel(a, facing));
    grid.dataset.betting = data.betting;
    grid.dataset.board = data.board.join("");
    grid.dataset.seat = String(data.seat);
    grid.dataset.source = data.source;
    grid.dataset.session = data.session || "";
    $("source").textContent = data.source;
    $("source").className = `badge ${data.source}`;
    const d = [];
    if (data.method) d.push(data.method);
    if (data.iterations != null) d.push(`${data.iterations} iterations`);
    if (data.exploitability_pct_pot != null) d.push(`exploitability ${data.exploitability_pct_pot.toFixed(2)}% pot`);
    if (data.reused) d.push("reused");
    if (data.fallback) d.push(`fallback: ${data.fallback}`);
    if (data.reason) d.push(data.reason);
    d.push(`${data.elapsed_ms.toFixed(0)} ms`);
    $("source-detail").textContent = d.join(" · ");
    return ms;
  }

  renderLine() {
    const nav = $("line");
    nav.replaceChildren(
      ...this.line.map((s, i) => {
        const b = document.createElement("button");
        b.textContent = i === 0 ? "start" : s.label;
        b.className = i === this.line.length - 1 ? "step current" : "step";
        b.onclick = () => this.goto(i);
        return b;
      }),
    );
  }

  renderState(data) {
    const info = $("state-info");
    const round = ["preflop", "flop", "turn", "river"][data.round] || `round ${data.round + 1}`;
    const lines = [
      `<div><b>${data.betting || "(no action yet)"}</b> · ${this.game.num_rounds === 4 ? round : `round ${data.round + 1}`}</div>`,
      `<div>board ${data.board.length ? data.board.join(" ") : "–"} · pot ${data.pot}</div>`,
    ];
    if (data.status === "decision") lines.push(`<div>seat ${data.seat} to act · to call ${Math.max(...data.spent) - data.spent[data.seat]}</div>`);
    if (data.status === "cards_due") lines.push(`<div class="due">deal ${data.cards_due} board card${data.cards_due > 1 ? "s" : ""}: type them or click the cards</div>`);
    if (data.status === "hand_over") lines.push("<div>the hand is over</div>");
    info.innerHTML = lines.join("");
    const acts = $("actions");
    acts.replaceChildren();
    $("raise-box").hidden = !(data.status === "decision" && data.raise_range && !this.game.limit);
    $("board-box").hidden = data.status !== "cards_due";
    $("board-text").value = "";
    if (data.status === "cards_due") {
      const used = new Set(data.board);
      for (const b of $("card-buttons").children) b.disabled = used.has(b.dataset.card);
    }
    if (data.status !== "decision") return;
    const facing = data.legal.includes("f");
    const colors = actionColors(data.actions);
    const shown = [...data.actions];
    for (const a of data.legal) if ((a === "f" || a === "c") && !shown.includes(a)) shown.push(a);
    // the range's frequency of each action (reach-weighted), on its button
    let w = 0;
    const tot = {};
    data.reach.forEach((r, h) => {
      if (r <= 0) return;
      w += r;
      data.actions.forEach((a, i) => (tot[a] = (tot[a] || 0) + r * data.strategy[i][h]));
    });
    for (const a of shown) {
      const b = document.createElement("button");
      b.className = "action";
      b.dataset.action = a;
      b.style.borderColor = colors[a] || "#999";
      const pct = w > 0 && tot[a] !== undefined ? ` ${((100 * tot[a]) / w).toFixed(0)}%` : "";
      b.textContent = actionLabel(a, facing) + pct;
      b.onclick = () => this.act(a);
      acts.appendChild(b);
    }
    if (data.raise_range) {
      const [lo, hi] = data.raise_range;
      const input = $("raise-to");
      input.min = lo;
      input.max = hi;
      input.placeholder = `${lo}..${hi}`;
    }
  }
}
