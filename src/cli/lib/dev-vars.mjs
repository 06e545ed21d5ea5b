/**
 * The local dev secrets: reading them (`.dev.vars`, else the committed `.dev.vars.example`) as
 * wrangler dev does, and preparing `.dev.vars` for `npm run dev` (create it, add what an older
 * one lacks, warn about values whose meaning changed).
 */
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** A line as wrangler's dotenv (16.x) reads it: quoted values verbatim, an unquoted one up to `#`. */
const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*('(?:\\'|[^'])*'|"(?:\\"|[^"])*"|`(?:\\`|[^`])*`|[^#\r\n]*)/;

/**
 * Parses dotenv text as wrangler does: `NAME=value` lines; `#` comments and blank lines skipped;
 * a quoted value taken between its quotes (`\n` expanded inside double quotes), an unquoted one
 * up to a `#` and trimmed.
 * @param {string} text
 * @returns {Record<string, string>}
 * @example
 * parseDotenv('A=1\n# note\nB="two words" # comment\nC=x # y'); // { A: "1", B: "two words", C: "x" }
 */
export function parseDotenv(text) {
  /** @type {Record<string, string>} */
  const vars = {};
  for (const line of text.split(/\r?\n/)) {
    const match = LINE.exec(line);
    if (!match) continue;
    const [, name, raw] = /** @type {[string, string, string]} */ (match);
    const quote = raw[0];
    if (raw.length >= 2 && (quote === "'" || quote === '"' || quote === "`") && raw.endsWith(quote)) {
      const inner = raw.slice(1, -1);
      vars[name] = quote === '"' ? inner.replace(/\\n/g, "\n").replace(/\\r/g, "\r") : inner;
    } else {
      vars[name] = raw.trim();
    }
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

/**
 * The `<SOURCE>_WEBHOOK_SECRET` vars whose value holds a space or a comma. Such a value used to
 * mean several secrets; it is now one secret, verbatim, so a "new old" pair no longer verifies
 * with either half. Names only: values are never shown.
 * @param {string} text dotenv text
 * @returns {string[]}
 * @example
 * secretsThatLookLikeLists('GITHUB_WEBHOOK_SECRET="new old"\nSTRIPE_WEBHOOK_SECRET=whsec_x'); // ["GITHUB_WEBHOOK_SECRET"]
 */
export function secretsThatLookLikeLists(text) {
  return Object.entries(parseDotenv(text))
    .filter(([name, value]) => /_WEBHOOK_SECRET$/.test(name) && /[\s,]/.test(value))
    .map(([name]) => name);
}

/**
 * Prepares `root/.dev.vars` for `npm run dev`: copies `.dev.vars.example` when it is missing;
 * otherwise appends the example's vars that it lacks (an older checkout lacks the secrets of
 * sources added since), never touching a value the developer set, and warns (on `err`) about each
 * webhook secret that looks like the old space- or comma-separated list.
 * @param {string} root
 * @param {{ out?: (line: string) => void, err?: (line: string) => void }} [log]
 * @returns {{ created: boolean, added: string[], warned: string[] }}
 */
export function prepareDevVars(root, log = {}) {
  const out = log.out ?? console.log;
  const err = log.err ?? console.error;
  const path = join(root, ".dev.vars");
  const examplePath = join(root, ".dev.vars.example");
  if (!existsSync(path)) {
    copyFileSync(examplePath, path);
    out("created .dev.vars from .dev.vars.example (dev-only secrets; never use them in production)");
    return { created: true, added: [], warned: [] };
  }
  const current = readFileSync(path, "utf8");
  const present = new Set(Object.keys(parseDotenv(current)));
  const missing = readFileSync(examplePath, "utf8")
    .split(/\r?\n/)
    .filter((line) => Object.keys(parseDotenv(line)).some((name) => !present.has(name)));
  const added = missing.flatMap((line) => Object.keys(parseDotenv(line)));
  if (missing.length > 0) {
    const separator = current.length === 0 || current.endsWith("\n") ? "" : "\n";
    appendFileSync(path, `${separator}\n# Added from .dev.vars.example by npm run dev:\n${missing.join("\n")}\n`);
    out(`added to .dev.vars: ${added.join(", ")}`);
  }
  const warned = secretsThatLookLikeLists(current);
  for (const name of warned) {
    err(
      [
        "",
        `!!! WARNING: ${name} in .dev.vars contains a space or a comma.`,
        "!!! It used to hold several secrets separated by spaces or commas; it now holds exactly ONE secret,",
        "!!! the whole value, verbatim. If it lists a new and an old secret, keep the new one in",
        `!!! ${name} and move the old one to ${name}_PREVIOUS (both verify while both are set).`,
        "!!! If the value is one secret that contains a space or comma, nothing needs to change.",
        "",
      ].join("\n"),
    );
  }
  return { created: false, added, warned };
}
