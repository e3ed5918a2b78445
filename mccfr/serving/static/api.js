// Requests to the service: the bearer token (kept in this tab's sessionStorage) on every call,
// errors shown in the message line with the server's {"error", "kind"}.

const TOKEN_KEY = "mccfr.token";

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

export async function api(path, body) {
  const headers = {};
  const t = token();
  if (t) headers["Authorization"] = `Bearer ${t}`;
  const init = { method: body === undefined ? "GET" : "POST", headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  try {
    data = await res.json();
  } catch (e) {
    data = { error: `${res.status} ${res.statusText}`, kind: "http_error" };
  }
  if (!res.ok) throw new ApiError(res.status, data.kind || "http_error", data.error || res.statusText);
  return data;
}

export function say(text, kind = "info") {
  const el = document.getElementById("message");
  el.textContent = text;
  el.className = kind;
}

export function sayError(err) {
  if (err instanceof ApiError && err.status === 401) {
    say("This server needs its token: enter it in the token field (top right).", "error");
    document.getElementById("token").focus();
  } else if (err instanceof ApiError) {
    say(`${err.message} (${err.kind}, ${err.status})`, "error");
  } else {
    say(String(err), "error");
  }
}
