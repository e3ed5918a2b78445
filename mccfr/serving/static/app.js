// The page's entry point: the token field, the tabs, and the game the server plays.

import { api, say, sayError, setToken, token } from "./api.js";
import { Explorer } from "./explorer.js";
import { Play } from "./play.js";
import { Runs } from "./runs.js";

const $ = (id) => document.getElementById(id);
let views = null;

function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll("main > section")) s.classList.toggle("active", s.id === name);
  if (name === "runs" && views) views.runs.load();
}

async function connect() {
  try {
    const game = await api("/v1/game");
    $("game-name").textContent = `${game.name || "game"}${game.run_dir ? " · " + game.run_dir : ""}`;
    document.body.dataset.game = game.name || "";
    views = { explorer: new Explorer(game), play: new Play(game), runs: new Runs(game) };
    say("");
    await views.explorer.start();
    await savedList(views.explorer);
    const active = document.querySelector("#tabs button.active");
    if (active && active.dataset.tab === "runs") views.runs.load();
    document.body.dataset.ready = "1";
  } catch (err) {
    sayError(err);
  }
}

async function savedList(explorer) {
  const { saved } = await api("/v1/saved");
  const sel = $("saved");
  sel.replaceChildren(new Option("(live strategy)", ""));
  for (const e of saved) {
    const what = `${e.id}: ${e.root || "start"} ${e.board.join("")} · ${e.method}, ${e.iterations} it`;
    sel.add(new Option(what + (e.locks.length ? " · locked" : ""), e.id));
  }
  $("saved-box").hidden = saved.length === 0;
  sel.onchange = () => explorer.openSaved(saved.find((e) => e.id === sel.value) || null);
}

function init() {
  const input = $("token");
  input.value = token();
  input.onchange = () => {
    setToken(input.value.trim());
    if (!views) connect();
  };
  for (const b of document.querySelectorAll("#tabs button")) b.onclick = () => showTab(b.dataset.tab);
  connect();
}

init();
