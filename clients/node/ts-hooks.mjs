// Node module hooks that run TypeScript without a build step (Node 20 cannot
// strip types itself): each `.ts` module is transpiled on load by the
// TypeScript compiler from node_modules. Types are erased, not checked;
// `tsc -p clients/node` checks them. The generated code imports with `.ts`
// extensions, which resolve as they are. Inline source maps let
// `node --enable-source-maps` report TypeScript lines.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const options = {
  module: ts.ModuleKind.ESNext,
  target: ts.ScriptTarget.ES2022,
  inlineSourceMap: true,
  inlineSources: true,
};

export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:") || !url.endsWith(".ts")) {
    return nextLoad(url, context);
  }
  const fileName = fileURLToPath(url);
  const source = await readFile(fileName, "utf8");
  const { outputText } = ts.transpileModule(source, { compilerOptions: options, fileName });
  return { format: "module", source: outputText, shortCircuit: true };
}
