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

function line(event: string, fields?: LogFields): string {
  let out = `docket: ${event}`;
  if (fields) {
    for (const [k, v] of Object.entries(fields)) {
      if (v !== undefined) out += ` ${k}=${String(v)}`;
    }
  }
  return out;
}

/** Logs nothing. */
export const silentLogger: Logger = { warn() {}, error() {} };

/** Logs both levels with `console.warn`, one line each. */
export const consoleLogger: Logger = {
  warn(event, fields) {
    console.warn(line(event, fields));
  },
  error(event, fields) {
    console.warn(line(event, fields));
  },
};

/** The default: errors only, with `console.warn`. */
export const errorsLogger: Logger = {
  warn() {},
  error(event, fields) {
    console.warn(line(event, fields));
  },
};
