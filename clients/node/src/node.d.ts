// The few Node APIs the agent uses. @types/node is not among the project's
// packages; with it, this file goes. (DOM's lib covers the web-standard
// globals Node shares: console, URL, AbortController, TextEncoder.)

declare const process: {
  readonly argv: string[];
  readonly version: string;
  exitCode: number | undefined;
  readonly stdout: { write(text: string): boolean };
};

declare module "node:fs" {
  export function readFileSync(path: string | URL, encoding: "utf8"): string;
}

declare module "node:url" {
  export function pathToFileURL(path: string): URL;
}
