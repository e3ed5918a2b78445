// Play heads-up hands against the server's bot: each of its answers with its source and time, a
// running result in mbb/hand with its 95% interval, the match's history as the dealer's log. The
// server sends the bot's strategies (and its cards) only with the finished hand: the review.

import { api, say, sayError } from "./api.js";
import { actionLabel } from "./colors.js";

const $ = (id) => document.getElementById(id);
const MATCH_KEY = "mccfr.match";

function num(x) {
  // a value as the ACPC dealer's log writes it
  const t = x.toFixed(6).replace(/0+$/, "").replace(/\.$/, "");
  return t === "-0" ? "0" : t;
}

export function summary(nets, mbbPerChip) {
  // mean and 95% interval half-width, in mbb/hand (chips where the game has no big blind)
  const n = nets.length;
  const f = mbbPerChip || 1;
  if (n === 0) return { n, mean: 0, ci95: null };
  const mean = nets.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { n, mean: mean * f, ci95: null };
  const v = nets.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1);
  return { n, mean: mean * f, ci95: (1.96 * Math.sqrt(v / n)) * f };
}

export class Play {
  constructor(game) {
    this.game = game;
    this.hand = null;
    this.view = null;
    this.match = JSON.parse(sessionStorage.getItem(MATCH_KEY) || "null") || { lines: [], nets: [], next: 0 };
    $("deal").onclick = () => this.deal();
    $("download").onclick = () => this.download();
    $("reset-match").onclick = () => {
      this.match = { lines: [], nets: [], next: 0 };
      this.save();
      this.renderResult();
    };
    this.renderResult();
  }

  save() {
    sessionStorage.setItem(MATCH_KEY, JSON.stringify(this.match));
  }

  async deal() {
    try {
      $("play-log").replaceChildren();
      const v = await api("/v1/play/deal", { hand_number: this.match.next });
      this.match.next += 1;
      this.save();
      this.show(v);
    } catch (err) {
      sayError(err);
    }
  }

  async act(action) {
    if (!this.view || this.view.over) return;
    $("play-actions").replaceChildren(); // one action per turn: the buttons come back with the answer
    this.log(`you: ${actionLabel(action, this.view.legal.includes("f"))}`, "you");
    try {
      this.show(await api("/v1/play/act", { hand: this.view.hand, action }));
    } catch (err) {
      sayError(err);
    }
  }

  log(text, cls) {
    const li = document.createElement("li");
    li.textContent = text;
    li.className = cls;
    $("play-log").appendChild(li);
  }

  cards(ids) {
    return ids.map((c) => `<span class="card suit-${this.game.cards[c][1]}">${this.game.cards[c]}</span>`).join("");
  }

  show(v) {
    this.view = v;
    say("");
    for (const b of v.bot) {
      const extra = [b.source, b.method, b.fallback ? `fallback ${b.fallback}` : null].filter(Boolean).join(", ");
      this.log(`mccfr: ${actionLabel(b.action, b.facing_bet)}  (${extra}; ${b.elapsed_ms.toFixed(1)} ms)`, "bot");
      const li = $("play-log").lastChild;
      li.dataset.source = b.source;
      li.dataset.ms = b.elapsed_ms.toFixed(2);
    }
    $("your-cards").innerHTML = this.cards(v.hole) + ` <span class="pos">${v.position === 0 ? "position 0" : "position 1"}</span>`;
    $("play-board").innerHTML = this.cards(v.board);
    $("play-pot").textContent = `pot ${v.spent[0] + v.spent[1]} (you ${v.spent[v.position]}, mccfr ${v.spent[1 - v.position]})`;
    $("bot-cards").innerHTML = v.over && v.bot_hole.length ? this.cards(v.bot_hole) : '<span class="card back"></span><span class="card back"></span>';
    const box = $("play-actions");
    box.replaceChildren();
    if (v.over) {
      this.match.lines.push(v.log_line);
      this.match.nets.push(v.net);
      this.save();
      this.log(`hand over: you ${v.net >= 0 ? "won" : "lost"} ${Math.abs(v.net)} chips`, "result");
      $("play-log").lastChild.dataset.net = String(v.net);
      this.review(v);
      this.renderResult();
      return;
    }
    const facing = v.legal.includes("f");
    for (const a of v.legal.filter((a) => a === "f" || a === "c" || a === "r")) box.appendChild(this.button(a, actionLabel(a, facing)));
    if (v.raise_range && !this.game.limit) {
      const [lo, hi] = v.raise_range;
      const pot = v.spent[0] + v.spent[1];
      const top = Math.max(...v.spent);
      const call = top - v.spent[v.position];
      const sizes = new Map();
      for (const [name, f] of [["½ pot", 0.5], ["pot", 1]]) {
        const to = Math.round(top + f * (pot + call));
        if (to > lo && to < hi) sizes.set(to, name);
      }
      sizes.set(lo, "min");
      sizes.set(hi, "all-in");
      for (const [to, name] of [...sizes.entries()].sort((a, b) => a[0] - b[0])) box.appendChild(this.button(`r${to}`, `raise ${to} (${name})`));
      const input = document.createElement("input");
      input.type = "number";
      input.min = lo;
      input.max = hi;
      input.placeholder = `${lo}..${hi}`;
      input.id = "play-raise";
      const go = document.createElement("button");
      go.textContent = "raise to";
      go.onclick = () => input.value && this.act(`r${input.value}`);
      box.append(input, go);
    }
  }

  review(v) {
    // the finished hand: what the bot held and, at each of its decisions, its strategy with it
    const held = v.bot_hole.map((c) => this.game.cards[c]).join("");
    for (const r of v.review) {
      const probs = Object.entries(r.strategy)
        .map(([a, p]) => `${actionLabel(a, r.facing_bet)} ${(100 * p).toFixed(0)}%`)
        .join(", ");
      this.log(`review: mccfr with ${held} at "${r.betting}": ${probs}; played ${actionLabel(r.action, r.facing_bet)}`, "review");
      const li = $("play-log").lastChild;
      li.dataset.action = r.action;
      li.dataset.strategy = JSON.stringify(r.strategy);
    }
  }

  button(action, text) {
    const b = document.createElement("button");
    b.className = "action";
    b.dataset.action = action;
    b.textContent = text;
    b.onclick = () => this.act(action);
    return b;
  }

  renderResult() {
    const s = summary(this.match.nets, this.game.mbb_per_chip);
    const unit = this.game.mbb_per_chip ? "mbb/hand" : "chips/hand";
    const el = $("play-result");
    el.dataset.hands = String(s.n);
    el.dataset.mean = s.mean.toFixed(3);
    el.textContent = s.n === 0 ? "no hands yet" : `${s.n} hand${s.n > 1 ? "s" : ""}: ${s.mean.toFixed(0)} ${unit}` + (s.ci95 === null ? "" : ` ± ${s.ci95.toFixed(0)} (95%)`);
  }

  download() {
    const total = this.match.nets.reduce((a, b) => a + b, 0);
    const text =
      `# mccfr serve: hands against the bot, ${this.game.name || "game"}\n` +
      `# name/game/hands you ${this.game.name || "game"} ${this.match.lines.length}\n` +
      this.match.lines.map((l) => l + "\n").join("") +
      `SCORE:${num(total)}|${num(-total)}:you|mccfr\n`;
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    a.download = "mccfr-match.log";
    document.body.appendChild(a);
    a.click();
    setTimeout(() => {
      URL.revokeObjectURL(a.href);
      a.remove();
    }, 0);
  }
}
