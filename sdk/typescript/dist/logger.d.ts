/**
 * Fields of a log line: codes, counts, IDs. The SDK never puts an input, a
 * result, an evidence body or an error message in them.
 */
export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>;
/**
 * Where the SDK reports what goes wrong. `event` is a fixed snake_case name
 * (`claim_failed`, `finish_refused`, …); `fields` carry codes and IDs only.
 */
export interface Logger {
    /** Something transient that the SDK retries or works around. */
    warn(event: string, fields?: LogFields): void;
    /** Something that loses work or needs an operator. */
    error(event: string, fields?: LogFields): void;
}
/** Logs nothing. */
export declare const silentLogger: Logger;
/** Logs both levels with `console.warn`, one line each. */
export declare const consoleLogger: Logger;
/** The default: errors only, with `console.warn`. */
export declare const errorsLogger: Logger;
