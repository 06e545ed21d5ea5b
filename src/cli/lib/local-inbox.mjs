/**
 * Where the CLI finds the inbox when nothing says so: `npm run dev` writes its URL to
 * `.wrangler/webhook-inbox-dev.json` while it runs (and removes it when it stops), so that
 * `webhook-inbox` and `npm run demo` reach it on whichever port it was given; without that file,
 * http://localhost:8787. On such a local inbox the admin token is `.dev.vars`'s ADMIN_TOKEN, as
 * `npm run dev` runs it: a first user need not export anything. A remote inbox never gets a token
 * from a file (it would be sent to a host that does not hold it).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { devVar } from "./dev-vars.mjs";

export const DEFAULT_URL = "http://localhost:8787";
/** The file `npm run dev` announces its URL in, under the project root. */
export const DEV_URL_FILE = join(".wrangler", "webhook-inbox-dev.json");

/**
 * Records the running dev inbox's URL (dev.mjs); returns a function that removes the record.
 * @param {string} root @param {string} url
 */
export function announceDevUrl(root, url) {
  const path = join(root, DEV_URL_FILE);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ url, pid: process.pid })}\n`);
  return () => {
    try {
      if (JSON.parse(readFileSync(path, "utf8")).pid === process.pid) rmSync(path, { force: true });
    } catch {
      // already gone
    }
  };
}

/**
 * The URL of the inbox `npm run dev` runs under `root`, when its record names a live process.
 * @param {string} root
 * @returns {string | undefined}
 */
export function devUrl(root) {
  const path = join(root, DEV_URL_FILE);
  if (!existsSync(path)) return undefined;
  try {
    const { url, pid } = JSON.parse(readFileSync(path, "utf8"));
    process.kill(pid, 0); // throws when that `npm run dev` is gone (a kill -9 leaves the file)
    return typeof url === "string" ? url : undefined;
  } catch (error) {
    // EPERM: the process exists under another user; it is still running.
    return /** @type {any} */ (error)?.code === "EPERM" ? JSON.parse(readFileSync(path, "utf8")).url : undefined;
  }
}

/** True for a URL on this machine (localhost, 127.0.0.0/8, ::1). @param {string} url */
export function isLocal(url) {
  try {
    const host = new URL(url).hostname;
    return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

/**
 * The inbox's URL and admin token: the flags, else INBOX_URL / INBOX_ADMIN_TOKEN, else, for a local
 * inbox, what `npm run dev` runs with (its URL; ADMIN_TOKEN from .dev.vars, else .dev.vars.example).
 * @param {{ url?: string, token?: string }} flags @param {NodeJS.ProcessEnv} env @param {string} root
 * @returns {{ url: string, token: string | undefined }}
 */
export function resolveInbox(flags, env, root) {
  const url = flags.url ?? env.INBOX_URL ?? devUrl(root) ?? DEFAULT_URL;
  const token = flags.token ?? env.INBOX_ADMIN_TOKEN ?? (isLocal(url) ? devVar(root, "ADMIN_TOKEN", {}) : undefined);
  return { url, token };
}
