// The explorer: walk the betting tree from any state (the strategy's actions, fold / call, a raise
// size typed in, the board's cards), and see the state's range on the hand-class grid, from the
// blueprint or from a subgame the server solves there. Node locking: at a solved state, "lock
// node" fixes the seat to act's frequencies there and the subgame is solved again under the
// locks, rooted at the first locked state; every state below it is then read from a locked solve.
// The frequencies typed apply to the whole range, or, with hand classes picked on the grid while
// the form is open, to those classes' combos only: every other hand keeps its current strategy
// there, and the lock is sent per hand (one probability per hand of /v1/game's `hands`, the order
// of the range's arrays). A saved solve (mccfr serve --saved) is browsed the same way.

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
    this.lock = null; // {root, board, spec, parts}: the locks, their histories from the state `root`
    // (parts: per history, what was locked there, [{classes (null: the whole range), freqs}], for the list)
    this.saved = null; // {id, root, board}: browsing a saved solve
    this.picked = new Set(); // the grid's classes picked for a per-hand lock (while the form is open)
    this.cellOf = new Map(this.layout.list.map((c) => [c.key, c]));
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
    this.setupLockTools();
  }

  setupLockTools() {
    const tools = $("explorer-tools");
    const open = document.createElement("button");
    open.id = "lock-open";
    open.textContent = "lock node";
    open.title = "fix the seat to act's frequencies here (the whole range, or the classes picked on the grid) and solve again";
    open.onclick = () => this.lockForm();
    const form = document.createElement("span");
    form.id = "lock-form";
    form.hidden = true;
    const list = document.createElement("span");
    list.id = "locks";
    tools.replaceChildren(open, form, list);
    // with the form open, clicking a cell picks its class (again: drops it)
    $("grid").addEventListener("click", (e) => {
      const cell = e.target.closest(".cell");
      if (!cell || form.hidden || cell.classList.contains("blocked")) return;
      const k = cell.dataset.class;
      if (this.picked.has(k)) this.picked.delete(k);
      else this.picked.add(k);
      cell.classList.toggle("picked", this.picked.has(k));
      this.lockPicked();
    });
  }

  // drop the picked classes and close the form
  closeLockForm() {
    $("lock-form").hidden = true;
    $("grid").classList.remove("picking");
    this.picked.clear();
    for (const c of $("grid").querySelectorAll(".cell.picked")) c.classList.remove("picked");
  }

  // the picked classes in grid order; the hands they hold
  pickedClasses() {
    return this.layout.list.filter((c) => this.picked.has(c.key)).map((c) => c.key);
  }

  pickedHands() {
    const out = new Set();
    for (const k of this.picked) for (const h of this.cellOf.get(k).hands) out.add(h);
    return out;
  }

  // whether the board leaves hand `h` live in `data` (a blocked hand's strategy is all zeros)
  static live(data, h) {
    return data.actions.some((a, i) => data.strategy[i][h] > 0);
  }

  // how many of `hands` the board does not block
  liveCount(hands) {
    let n = 0;
    for (const h of hands) if (Explorer.live(this.data, h)) n += 1;
    return n;
  }

  // the reach-weighted frequency of each action over `hands` (null: every hand), in percent; a
  // set of hands the line never reaches: their plain average
  frequencies(data, hands = null) {
    const tot = data.actions.map(() => 0);
    const avg = data.actions.map(() => 0);
    let w = 0;
    let live = 0;
    const add = (h) => {
      if (!Explorer.live(data, h)) return; // blocked by the board
      let s = 0;
      data.actions.forEach((a, i) => (s += data.strategy[i][h]));
      live += 1;
      const r = data.reach[h] > 0 ? data.reach[h] : 0;
      w += r;
      data.actions.forEach((a, i) => {
        tot[i] += r * data.strategy[i][h];
        avg[i] += data.strategy[i][h] / s;
      });
    };
    if (hands) hands.forEach(add);
    else data.reach.forEach((r, h) => add(h));
    const out = {};
    data.actions.forEach((a, i) => (out[a] = w > 0 ? (100 * tot[i]) / w : live ? (100 * avg[i]) / live : 0));
    return out;
  }

  // the form after the picked classes changed: what they are, and (until a frequency is typed)
  // their current frequencies in the inputs
  lockPicked() {
    const form = $("lock-form");
    const names = this.pickedClasses();
    const what = form.querySelector("#lock-classes");
    what.dataset.classes = names.join(",");
    what.textContent = names.length
      ? `${names.join(",")} (${this.liveCount(this.pickedHands())} combos; every other hand keeps its strategy here):`
      : "whole range (or click classes on the grid to lock only them):";
    if (form.dataset.edited) return;
    const f = this.frequencies(this.data, names.length ? this.pickedHands() : null);
    for (const inp of form.querySelectorAll("input[data-action]")) inp.value = f[inp.dataset.action].toFixed(1);
  }

  // a per-hand lock: `freqs` ({action: probability}) for the hands in `picked`, every other hand
  // its strategy in `data`; lists over the game's hands, 4 decimals with each unblocked hand's
  // sum exactly 1 (the largest action takes the rounding), 0 for hands the board blocks
  perHandLock(data, freqs, picked) {
    const U = 10000;
    const A = data.actions.length;
    const board = new Set(data.board);
    const units = (p) => {
      const s = p.reduce((x, y) => x + y, 0);
      const q = s > 0 ? p.map((x) => x / s) : p.map(() => 1 / A);
      const u = q.map((x) => Math.round(x * U));
      let top = 0;
      for (let i = 1; i < A; i++) if (q[i] > q[top]) top = i;
      u[top] = U - u.reduce((x, y, i) => (i === top ? x : x + y), 0);
      return u;
    };
    const typed = units(data.actions.map((a) => freqs[a] || 0));
    const lists = data.actions.map(() => new Array(this.game.hands.length).fill(0));
    this.game.hands.forEach((name, h) => {
      if (name.match(/../g).some((c) => board.has(c))) return;
      const u = picked.has(h) ? typed : units(data.actions.map((a, i) => data.strategy[i][h]));
      for (let i = 0; i < A; i++) lists[i][h] = u[i] / U;
    });
    const out = {};
    data.actions.forEach((a, i) => {
      if (lists[i].some((x) => x > 0)) out[a] = lists[i]; // (an action left out gets 0)
    });
    return out;
  }

  // the current state's history from the locked subgame's root ("" = the root), or null where the
  // locks do not apply: off their line, or in a later round (a later round's subgame is solved
  // without them: a depth-limited subgame ends with its round)
  lockKey(cur = this.current) {
    const lk = this.lock;
    if (!lk || !cur.betting.startsWith(lk.root) || cur.board !== lk.board) return null;
    const key = cur.betting.slice(lk.root.length);
    return key.includes("/") ? null : key;
  }

  lockForm() {
    const data = this.data;
    const form = $("lock-form");
    if (!data || data.status !== "decision" || !(data.source === "subgame")) return;
    this.closeLockForm();
    delete form.dataset.edited;
    const facing = data.legal.includes("f");
    const what = document.createElement("span");
    what.id = "lock-classes";
    const inputs = data.actions.map((a) => {
      const l = document.createElement("label");
      const inp = document.createElement("input");
      inp.type = "number";
      inp.min = "0";
      inp.max = "100";
      inp.step = "any";
      inp.dataset.action = a;
      inp.oninput = () => (form.dataset.edited = "1");
      l.append(`${actionLabel(a, facing)} `, inp, "%");
      return l;
    });
    const go = document.createElement("button");
    go.id = "lock-go";
    go.textContent = "lock & solve";
    go.onclick = () => {
      const freqs = {};
      let sum = 0;
      for (const inp of form.querySelectorAll("input[data-action]")) {
        const v = parseFloat(inp.value) || 0;
        if (v < 0) return say("the frequencies cannot be negative", "error");
        freqs[inp.dataset.action] = v;
        sum += v;
      }
      if (!(sum > 0)) return say("the frequencies must add up to more than 0", "error");
      for (const a in freqs) freqs[a] /= sum; // typed in percent, or any weights: normalised
      const cur = this.current;
      const key = this.lockKey(cur);
      const lock =
        key === null
          ? { root: cur.betting, board: cur.board, spec: {}, parts: {} }
          : { ...this.lock, spec: { ...this.lock.spec }, parts: { ...this.lock.parts } };
      const k = cur.betting.slice(lock.root.length);
      const classes = this.pickedClasses();
      if (classes.length) {
        // the node's other hands keep their strategy here (a lock already there included)
        lock.spec[k] = this.perHandLock(data, freqs, this.pickedHands());
        lock.parts[k] = [...(key !== null && lock.parts[k] ? lock.parts[k] : []), { classes, freqs }];
      } else {
        lock.spec[k] = freqs;
        lock.parts[k] = [{ classes: null, freqs }];
      }
      const cap = this.game.max_body_bytes;
      const bytes = new TextEncoder().encode(JSON.stringify({ locks: lock.spec, lock_root: lock.root })).length;
      if (cap && bytes + 1024 > cap) {
        return say(
          `these locks need a request of ${bytes.toLocaleString()} bytes; this server takes at most ` +
            `${cap.toLocaleString()} (mccfr serve --max-body-bytes)`,
          "error",
        );
      }
      this.lock = lock;
      this.closeLockForm();
      this.renderLocks();
      this.reload();
    };
    const cancel = document.createElement("button");
    cancel.id = "lock-cancel";
    cancel.textContent = "cancel";
    cancel.onclick = () => this.closeLockForm();
    form.replaceChildren(what, ...inputs, go, cancel);
    form.hidden = false;
    $("grid").classList.add("picking");
    this.lockPicked();
  }

  renderLocks() {
    const box = $("locks");
    const lk = this.lock;
    if (!lk) {
      box.replaceChildren();
      box.dataset.count = "0";
      return;
    }
    const badge = document.createElement("span");
    badge.className = "badge locked";
    const keys = Object.keys(lk.spec);
    badge.textContent = `${keys.length} lock${keys.length > 1 ? "s" : ""} from ${lk.root || "the start"}`;
    const items = keys.map((k) => {
      const s = document.createElement("span");
      s.className = "lock-item";
      s.dataset.history = k;
      // whole range: every action's frequency; per hand: the classes and the actions they play
      const text = lk.parts[k].map(({ classes, freqs }) => {
        const f = Object.entries(freqs)
          .filter(([, p]) => !classes || p > 0)
          .map(([a, p]) => `${a} ${(100 * p).toFixed(0)}%`);
        return classes ? `${classes.join(",")} → ${f.join(", ")}` : f.join(", ");
      });
      s.dataset.perHand = lk.parts[k].some((p) => p.classes) ? "1" : "";
      s.textContent = `${lk.root + k || "(start)"}: ${text.join("; ")}`;
      return s;
    });
    const clear = document.createElement("button");
    clear.id = "lock-clear";
    clear.textContent = "clear locks";
    clear.onclick = () => {
      this.lock = null;
      this.renderLocks();
      this.reload();
    };
    box.dataset.count = String(keys.length);
    box.replaceChildren(badge, ...items, clear);
  }

  // browse a saved solve (null: back to the live strategy)
  async openSaved(entry) {
    this.saved = entry ? { id: entry.id, root: entry.root, board: entry.board.join("") } : null;
    this.lock = null;
    this.renderLocks();
    $("method").disabled = !!entry;
    $("explorer-tools").hidden = !!entry;
    const root = entry ? { betting: this.saved.root, board: this.saved.board } : { betting: "", board: "" };
    this.line = [{ ...root, label: "start" }];
    await this.load(root, null, true);
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
    const method = this.saved ? "blueprint" : $("method").value;
    let body = { ...req };
    let path = "/v1/range";
    if (this.saved) {
      path = "/v1/saved/range";
      const sv = this.saved;
      body = { id: sv.id, history: req.betting.slice(sv.root.length), board: req.board.slice(sv.board.length) };
      if (req.action) body.action = req.action;
    } else if (method !== "blueprint") {
      body.method = method;
      body.time_budget_ms = parseInt($("budget").value) || undefined;
      body.session = this.session;
      if (this.lockKey(req) !== null) {
        body.locks = this.lock.spec;
        body.lock_root = this.lock.root;
      }
      say(`solving (${method}${body.locks ? ", locked" : ""}, at most ${body.time_budget_ms} ms) ...`);
    }
    document.body.classList.add("loading");
    const t0 = performance.now();
    try {
      const data = await api(path, body);
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
      else if (body.locks && !data.locked) say(`the locked solve did not answer: ${data.fallback} (the blueprint's range is shown)`, "error");
      else say(`${data.source} answer in ${data.elapsed_ms.toFixed(0)} ms`);
    } catch (err) {
      sayError(err);
    } finally {
      this.busy = false;
      document.body.classList.remove("loading");
    }
  }

  show(data) {
    this.data = data;
    $("lock-open").disabled = !(data.status === "decision" && data.source === "subgame");
    this.closeLockForm();
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
    grid.dataset.locked = data.locked ? "1" : "";
    $("source").textContent = data.locked ? "subgame (locked)" : data.source;
    $("source").className = `badge ${data.source}${data.locked ? " locked" : ""}`;
    const d = [];
    if (this.saved) d.push(`saved solve ${this.saved.id}`);
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
