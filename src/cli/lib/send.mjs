/**
 * `webhook-inbox send <source> [file]`: a first signed webhook without guessing a signature format.
 * It signs a sample body of the source's provider (or the given file, byte for byte) with the
 * source's secret, `<SOURCE>_WEBHOOK_SECRET` from the environment, else `.dev.vars`, else
 * `.dev.vars.example` (what `npm run dev` runs with), and POSTs it to `<url>/webhooks/<source>`
 * as the provider would. It talks to the receiver only: no admin token is needed.
 */
import { readFileSync } from "node:fs";
import { InboxError } from "./admin-client.mjs";
import { devVar } from "./dev-vars.mjs";
import { SAMPLES, sampleText } from "./samples.mjs";
import { PROVIDERS, SIGNERS } from "./signers.mjs";

/** How long the POST may take. */
const SEND_TIMEOUT_MS = 15_000;

/**
 * The `<SOURCE>_WEBHOOK_SECRET` name of a source, as the inbox reads it (src/secrets.ts):
 * upper-cased, `-` → `_`.
 * @param {string} source
 */
export const secretName = (source) => `${source.toUpperCase().replaceAll("-", "_")}_WEBHOOK_SECRET`;

/**
 * @typedef {{
 *   source: string, provider?: string, file?: string, id?: string, eventType?: string,
 *   url: string, root: string, env: NodeJS.ProcessEnv, nowSeconds?: number, fetch?: typeof fetch,
 * }} SendOptions
 * @typedef {{ id: string, eventType: string, status: number, answer: string, headers: Record<string, string>, body: string }} SendResult
 */

/**
 * Builds the request a provider would send: the body (sample or file), its delivery id and type,
 * and the signed headers.
 * @param {Omit<SendOptions, "fetch">} options
 */
export function buildDelivery({ source, provider = source, file, id, eventType, url, root, env, nowSeconds = Math.floor(Date.now() / 1000) }) {
  const signer = SIGNERS[provider];
  const sample = SAMPLES[provider];
  if (!signer || !sample) {
    throw new InboxError(`no signer for "${provider}": pass --provider, one of ${PROVIDERS.join(", ")}`, { exitCode: 2 });
  }
  const name = secretName(source);
  const secret = devVar(root, name, env);
  if (!secret) throw new InboxError(`no ${name} in the environment, .dev.vars or .dev.vars.example: add it to .dev.vars`);
  const type = eventType ?? sample.defaultEvent;
  let body;
  let deliveryId = id;
  if (file === undefined) {
    deliveryId ??= sample.newId();
    body = sampleText(provider, sample.sample(deliveryId, type, nowSeconds));
  } else {
    body = readBody(file);
    if (sample.idInBody) {
      // The id is part of the signed body: written in with --id, else the file's own.
      if (deliveryId !== undefined) body = withIdInBody(body, deliveryId, sample.idInBody, file);
      deliveryId ??= sample.idOfBody?.(parseJson(body, file)) ?? "(none in the body)";
    } else {
      deliveryId ??= sample.newId();
    }
  }
  const target = `${url.replace(/\/+$/, "")}/webhooks/${encodeURIComponent(source)}`;
  const headers = signer({ body, secret, id: deliveryId, eventType: type, url: target, nowSeconds });
  const shownType = sample.idInBody && file !== undefined ? (typeTitle(body) ?? type) : type;
  return { target, id: deliveryId, eventType: shownType, headers, body };
}

/**
 * Signs and POSTs one delivery; resolves with what the inbox answered.
 * @param {SendOptions} options
 * @returns {Promise<SendResult>}
 */
export async function sendDelivery(options) {
  const delivery = buildDelivery(options);
  let response;
  try {
    response = await (options.fetch ?? fetch)(delivery.target, { method: "POST", headers: delivery.headers, body: delivery.body, signal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
  } catch {
    throw new InboxError(`cannot reach the inbox at ${delivery.target}: is \`npm run dev\` running? (or set INBOX_URL / --url)`);
  }
  const text = await response.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: shown as its status
  }
  if (!response.ok) throw refusal(response.status, json, options.source);
  return { id: delivery.id, eventType: delivery.eventType, status: response.status, answer: json?.status ?? "accepted", headers: delivery.headers, body: delivery.body };
}

/** @param {number} status @param {any} json @param {string} source */
function refusal(status, json, source) {
  const code = typeof json?.error === "string" ? json.error : `HTTP ${status}`;
  const message = typeof json?.message === "string" ? json.message : "";
  if (status === 401) {
    return new InboxError(
      `the inbox refused the signature (401 ${message}): its ${secretName(source)} differs from the one used here (the environment, else .dev.vars); npm run dev reloads .dev.vars when it changes`,
      { status, code },
    );
  }
  if (code === "source_not_configured") return new InboxError(`the inbox has no ${secretName(source)} (503): add it to .dev.vars`, { status, code });
  if (status === 404) return new InboxError(`the inbox has no source "${source}" (404): sources are in src/sources.ts`, { status, code });
  return new InboxError(`the inbox answered ${status} ${code}${message ? `: ${message}` : ""}`, { status, code });
}

/** @param {string} file */
function readBody(file) {
  try {
    return readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new InboxError(`cannot read ${file}: ${/** @type {any} */ (error)?.code ?? error}`, { exitCode: 2 });
  }
}

/** @param {string} text @param {string} file */
function parseJson(text, file) {
  try {
    return JSON.parse(text);
  } catch {
    throw new InboxError(`${file} is not JSON, and this provider's delivery id is in its body`, { exitCode: 2 });
  }
}

/** @param {string} body @param {string} id @param {(body: any, id: string) => void} put @param {string} file */
function withIdInBody(body, id, put, file) {
  const parsed = parseJson(body, file);
  put(parsed, id);
  return JSON.stringify(parsed);
}

/** A body's `type` (Stripe) or `event.type` (Slack), for the line printed. @param {string} body */
function typeTitle(body) {
  try {
    const parsed = JSON.parse(body);
    const type = parsed?.event?.type ?? parsed?.type;
    return typeof type === "string" ? type : undefined;
  } catch {
    return undefined;
  }
}
