/** Reads the local dev secrets (`.dev.vars`, else the committed `.dev.vars.example`), as wrangler dev does. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Parses dotenv text: `NAME=value` lines; `#` comments and blank lines skipped; quotes stripped.
 * @param {string} text
 * @returns {Record<string, string>}
 * @example
 * parseDotenv('A=1\n# note\nB="two"'); // { A: "1", B: "two" }
 */
export function parseDotenv(text) {
  /** @type {Record<string, string>} */
  const vars = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith("#")) continue;
    const [, name, raw] = /** @type {[string, string, string]} */ (match);
    vars[name] = /^(["']).*\1$/.test(raw) ? raw.slice(1, -1) : raw;
  }
  return vars;
}

/**
 * The value of `name`: from the process environment, else `.dev.vars`, else `.dev.vars.example`,
 * each under `root`. Undefined when none has it.
 * @param {string} root
 * @param {string} name
 * @param {NodeJS.ProcessEnv} [env]
 */
export function devVar(root, name, env = process.env) {
  if (env[name]) return env[name];
  for (const file of [".dev.vars", ".dev.vars.example"]) {
    const path = join(root, file);
    if (!existsSync(path)) continue;
    const value = parseDotenv(readFileSync(path, "utf8"))[name];
    if (value) return value;
  }
  return undefined;
}
