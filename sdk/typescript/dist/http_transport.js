import { DocketError } from "./docket_error.js";
import { VERSION } from "./version.js";
const DEFAULT_TIMEOUT_MS = 30_000;
/**
 * JSON over HTTP to one Docket server with one key. Node's fetch (undici)
 * keeps connections alive between calls. An answer outside 2xx, or no
 * answer, rejects with a DocketError.
 */
export class HttpTransport {
    base;
    fetchFn;
    authorization;
    constructor(options) {
        if (!options.url)
            throw new TypeError("docket: url is required");
        if (!options.key)
            throw new TypeError("docket: key is required");
        this.base = options.url.replace(/\/+$/, "");
        this.authorization = `Bearer ${options.key}`;
        this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    }
    async request(o) {
        let url = this.base + o.path;
        if (o.query && Object.keys(o.query).length > 0)
            url += `?${new URLSearchParams(o.query).toString()}`;
        const headers = {
            authorization: this.authorization,
            accept: "application/json",
            "user-agent": `docket-typescript/${VERSION}`,
            ...o.headers,
        };
        if (o.body !== undefined)
            headers["content-type"] = "application/json";
        const controller = new AbortController();
        const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
        let timedOut = false;
        const timer = setTimeout(() => {
            timedOut = true;
            controller.abort();
        }, timeoutMs);
        const onAbort = () => controller.abort();
        if (o.signal) {
            if (o.signal.aborted)
                controller.abort();
            else
                o.signal.addEventListener("abort", onAbort, { once: true });
        }
        const what = `${o.method} ${o.path}`;
        try {
            let res;
            let text;
            try {
                res = await this.fetchFn(url, { method: o.method, headers, body: o.body, signal: controller.signal });
                o.onHeaders?.();
                text = await res.text();
            }
            catch (err) {
                if (o.signal?.aborted)
                    throw o.signal.reason;
                if (timedOut) {
                    throw new DocketError("timeout", `docket: ${what}: no answer within ${timeoutMs} ms`, { cause: err });
                }
                // The transport's error text names the host, never the key or a body.
                throw new DocketError("network_error", `docket: ${what}: no answer`, { cause: err });
            }
            if (res.status < 200 || res.status > 299)
                throw errorOf(res, text, what);
            let data = null;
            if (text !== "") {
                try {
                    data = JSON.parse(text);
                }
                catch (err) {
                    throw new DocketError("http_error", `docket: ${what}: the answer is not JSON`, {
                        status: res.status,
                        cause: err,
                    });
                }
            }
            return { status: res.status, headers: res.headers, data: data };
        }
        finally {
            clearTimeout(timer);
            o.signal?.removeEventListener("abort", onAbort);
        }
    }
}
function errorOf(res, text, what) {
    let code = "";
    let message = "";
    let traceId = "";
    try {
        const env = JSON.parse(text);
        if (env && typeof env.error?.code === "string") {
            code = env.error.code;
            message = typeof env.error.message === "string" ? env.error.message : "";
            traceId = typeof env.error.trace_id === "string" ? env.error.trace_id : "";
        }
    }
    catch {
        // not Docket's envelope
    }
    if (!traceId)
        traceId = traceIdOf(res.headers.get("traceparent"));
    const shown = code || "http_error";
    return new DocketError(shown, `docket: ${what}: ${shown} (HTTP ${res.status})${message ? `: ${message}` : ""}`, { status: res.status, traceId, retryAfterMs: retryAfterMs(res.headers.get("retry-after")) });
}
/** Parses Retry-After: delay seconds or an HTTP date; 0 when absent or unreadable. */
export function retryAfterMs(v) {
    if (!v)
        return 0;
    if (/^\d+$/.test(v.trim()))
        return Number(v.trim()) * 1000;
    const at = Date.parse(v);
    return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}
function traceIdOf(tp) {
    const parts = (tp ?? "").split("-");
    return parts.length === 4 && parts[1]?.length === 32 ? parts[1] : "";
}
