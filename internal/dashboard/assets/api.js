// The v1 API: every call carries the session's key in the Authorization
// header (and nowhere else); an error answer becomes an APIError with the
// envelope's code, message and trace ID.

import { session, storedKey } from "./session.js";

export class APIError extends Error {
  constructor(status, code, message, traceId) {
    super(message);
    this.status = status;
    this.code = code;
    this.traceId = traceId;
  }
  describe() {
    return this.code + ": " + this.message;
  }
  // withStatus is describe() after the HTTP status, for forms that show
  // the API's answer as it came.
  withStatus() {
    return (this.status ? this.status + " " : "") + this.describe();
  }
}

let refused = () => {};

// onRefused sets what happens when the API refuses the signed-in key (401).
export function onRefused(fn) {
  refused = fn;
}

// api calls the API with the session's key.
export async function api(method, path, body, headers) {
  const h = Object.assign({ Accept: "application/json" }, headers || {});
  const key = storedKey();
  if (key) h.Authorization = "Bearer " + key;
  const init = { method, headers: h, cache: "no-store", credentials: "omit", redirect: "error" };
  if (body !== undefined) {
    h["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new APIError(0, "network", "the server did not answer", "");
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch (e) {
      data = null;
    }
  }
  if (!resp.ok) {
    const e = (data && data.error) || {};
    const err = new APIError(resp.status, e.code || "http_" + resp.status, e.message || resp.statusText, e.trace_id || "");
    if (resp.status === 401 && session.role) refused(err);
    throw err;
  }
  return { status: resp.status, data, headers: resp.headers };
}

// metricsText reads the node's Prometheus metrics (no key needed).
export async function metricsText() {
  const resp = await fetch("/metrics", { cache: "no-store", credentials: "omit" });
  if (!resp.ok) throw new APIError(resp.status, "http_" + resp.status, "metrics unavailable", "");
  return resp.text();
}
