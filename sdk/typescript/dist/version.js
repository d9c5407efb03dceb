/** The SDK's version, sent to the server as `typescript/<version>`. */
export const VERSION = "0.1.0";
/** The `sdk` field of a claim. */
export const SDK_NAME = `typescript/${VERSION}`;
