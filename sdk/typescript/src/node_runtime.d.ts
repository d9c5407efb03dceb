// The few Node.js APIs the SDK uses beyond the web platform (fetch,
// AbortController, timers), declared here so that the package builds with
// TypeScript alone, without @types/node.

declare module "node:os" {
  export function hostname(): string;
}

type NodeSignal = "SIGINT" | "SIGTERM";

declare const process: {
  readonly pid: number;
  readonly env: Record<string, string | undefined>;
  on(event: NodeSignal, listener: (signal: NodeSignal) => void): unknown;
  off(event: NodeSignal, listener: (signal: NodeSignal) => void): unknown;
  kill(pid: number, signal?: NodeSignal): boolean;
};

declare function setImmediate(callback: () => void): unknown;
