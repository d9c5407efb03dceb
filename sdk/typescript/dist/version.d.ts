/** The SDK's version, sent to the server as `typescript/<version>`. */
export declare const VERSION = "0.1.0";
/** The `sdk` field of a claim. */
export declare const SDK_NAME = "typescript/0.1.0";
