// The API client: base URL from ./config.json (else this origin), the bearer token from sessionStorage.

const TOKEN_KEY = "research-console.token";
let apiBase = "";

export async function loadConfig() {
  try {
    const response = await fetch("./config.json", { cache: "no-store" });
    if (response.ok) {
      const config = await response.json();
      if (config && typeof config.apiBaseUrl === "string" && config.apiBaseUrl.trim()) {
        apiBase = config.apiBaseUrl.trim().replace(/\/+$/, "");
      }
    }
  } catch {
    // no config.json (or not JSON): the API is on this origin
  }
  return apiBase;
}

export const apiUrl = (path) => apiBase + path;

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const result = new Headers(extra);
  const token = getToken();
  if (token) result.set("Authorization", `Bearer ${token}`);
  return result;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Every family's error body: {"error": {"message"}}, {"error", "message"}, {"detail"}.
async function errorFrom(response) {
  let message = response.statusText || "request failed";
  try {
    const body = await response.json();
    if (body && typeof body.error === "object" && body.error && body.error.message) message = body.error.message;
    else if (body && typeof body.message === "string") message = body.message;
    else if (body && typeof body.detail === "string") message = body.detail;
    else if (body && Array.isArray(body.detail)) message = body.detail.map((d) => d.msg || "").join("; ");
  } catch {
    // not JSON: keep the status text
  }
  return new ApiError(response.status, `${response.status}: ${message}`);
}

export async function request(path, { method = "GET", json, body, signal } = {}) {
  const init = { method, headers: headers(), signal };
  if (json !== undefined) {
    init.headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  const response = await fetch(apiUrl(path), init);
  if (!response.ok) throw await errorFrom(response);
  return response;
}

export async function getJson(path, options) {
  return (await request(path, options)).json();
}

function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  return { event: name, data: JSON.parse(data.join("\n")) };
}

// POSTs `json` and yields each Server-Sent Event ({event, data}) as it arrives.
export async function* stream(path, json, signal) {
  const response = await fetch(apiUrl(path), {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(json),
    signal,
  });
  if (!response.ok) throw await errorFrom(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = (buffer + value).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
    }
  }
  const last = parseEvent(buffer);
  if (last) yield last;
}
