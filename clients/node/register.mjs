// `node --import ./register.mjs app.ts`: install the TypeScript hooks.
import { register } from "node:module";

register("./ts-hooks.mjs", import.meta.url);
