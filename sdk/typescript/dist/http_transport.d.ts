/** The fetch function the SDK calls (the global one by default). */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;
export interface RequestOptions {
    method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
    path: string;
    query?: Record<string, string>;
    headers?: Record<string, string>;
    /** A JSON body, already encoded. */
    body?: string;
    /** Time limit of the whole call, headers and body; default 30 s. */
    timeoutMs?: number;
    /** Aborts the call; the call then rejects with the signal's reason. */
    signal?: AbortSignal;
    /** Called when the answer's headers have arrived, before its body is read. */
    onHeaders?: () => void;
}
export interface Answer<T> {
    status: number;
    headers: Headers;
    data: T;
}
/**
 * JSON over HTTP to one Docket server with one key. Node's fetch (undici)
 * keeps connections alive between calls. An answer outside 2xx, or no
 * answer, rejects with a DocketError.
 */
export declare class HttpTransport {
    private readonly base;
    private readonly fetchFn;
    private readonly authorization;
    constructor(options: {
        url: string;
        key: string;
        fetch?: FetchFunction;
    });
    request<T>(o: RequestOptions): Promise<Answer<T>>;
}
/** Parses Retry-After: delay seconds or an HTTP date; 0 when absent or unreadable. */
export declare function retryAfterMs(v: string | null): number;
