function line(event, fields) {
    let out = `docket: ${event}`;
    if (fields) {
        for (const [k, v] of Object.entries(fields)) {
            if (v !== undefined)
                out += ` ${k}=${String(v)}`;
        }
    }
    return out;
}
/** Logs nothing. */
export const silentLogger = { warn() { }, error() { } };
/** Logs both levels with `console.warn`, one line each. */
export const consoleLogger = {
    warn(event, fields) {
        console.warn(line(event, fields));
    },
    error(event, fields) {
        console.warn(line(event, fields));
    },
};
/** The default: errors only, with `console.warn`. */
export const errorsLogger = {
    warn() { },
    error(event, fields) {
        console.warn(line(event, fields));
    },
};
