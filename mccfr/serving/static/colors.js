// One colour per action: fold, check/call, raises from the smallest (orange) to all-in (dark red).

const RAISES = ["#f2b134", "#ec8a2f", "#e0602a", "#cc3b2d", "#a8273c", "#7d1a3f", "#55102f"];

export function actionColors(actions) {
  const raises = actions.filter((a) => a.startsWith("r"));
  raises.sort((a, b) => (parseInt(a.slice(1)) || 0) - (parseInt(b.slice(1)) || 0));
  const out = {};
  for (const a of actions) {
    if (a === "f") out[a] = "#4d7fd6";
    else if (a === "c") out[a] = "#3ea463";
    else {
      const i = raises.indexOf(a);
      const k = raises.length <= 1 ? 2 : Math.round((i * (RAISES.length - 1)) / (raises.length - 1));
      out[a] = RAISES[k];
    }
  }
  return out;
}

export function actionLabel(a, facingBet) {
  if (a === "f") return "fold";
  if (a === "c") return facingBet ? "call" : "check";
  if (a === "r") return "raise";
  return `raise ${a.slice(1)}`;
}
