/**
 * Signers and senders for the provider tests. Where a provider publishes a JavaScript SDK that
 * runs in workerd (Stripe, Octokit, Standard Webhooks, Svix), the SDK signs; for Shopify, Slack
 * and Twilio, whose SDKs need Node, a few lines of Web Crypto written here from the providers'
 * docs sign instead, independently of src/providers (and the published vectors pin both down).
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { sign as octokitSign } from "@octokit/webhooks-methods";
import Stripe from "stripe";
import { Webhook as SvixWebhook } from "svix";
import { app } from "../../src/http/app";
import { BASE_URL } from "./signers";

export { BASE_URL };

/** A source's configured secrets: `name`'s value, then `<name>_PREVIOUS`'s (the one being rotated out). */
export function secretsOf(name: keyof Cloudflare.Env): string[] {
  const vars = env as unknown as Record<string, unknown>;
  return [vars[name], vars[`${name}_PREVIOUS`]].filter((secret): secret is string => typeof secret === "string" && secret.length > 0);
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export interface Reply {
  status: number;
  json: Record<string, unknown>;
}

/** POSTs to `/webhooks/<source>` through the worker's own fetch handler. */
export async function post(source: string, body: string, headers: Record<string, string>, path = ""): Promise<Reply> {
  const request = new Request(`${BASE_URL}/webhooks/${source}${path}`, { method: "POST", headers, body });
  const response = await exports.default.fetch(request);
  return { status: response.status, json: await response.json() };
}

/** The same, with vars overridden (e.g. a second Standard Webhooks secret for a rotation test). */
export async function postWithEnv(source: string, body: string, headers: Record<string, string>, overrides: Record<string, unknown>): Promise<Reply> {
  const ctx = createExecutionContext();
  const request = new Request(`${BASE_URL}/webhooks/${source}`, { method: "POST", headers, body });
  const response = await app.fetch(request, { ...env, ...overrides } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function hmacBytes(hash: "SHA-256" | "SHA-1", secret: string, data: string): Promise<Uint8Array> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(data)));
}

const hex = (bytes: Uint8Array) => [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** `Stripe-Signature`, made by stripe-node's own test helper (its Web Crypto provider). */
export function stripeSignature(body: string, options: { secret?: string; timestamp?: number } = {}): Promise<string> {
  return Stripe.webhooks.generateTestHeaderStringAsync({
    payload: body,
    secret: options.secret ?? secretsOf("STRIPE_WEBHOOK_SECRET")[0]!,
    timestamp: options.timestamp ?? nowSeconds(),
    cryptoProvider: Stripe.createSubtleCryptoProvider(),
  });
}

/** `X-Hub-Signature-256`, made by `@octokit/webhooks-methods`. */
export function githubSignature(body: string, secret = secretsOf("GITHUB_WEBHOOK_SECRET")[0]!): Promise<string> {
  return octokitSign(secret, body);
}

/** `X-Shopify-Hmac-Sha256`: base64 HMAC-SHA256 of the body. */
export async function shopifySignature(body: string, secret = secretsOf("SHOPIFY_WEBHOOK_SECRET")[0]!): Promise<string> {
  return base64(await hmacBytes("SHA-256", secret, body));
}

/** Slack's headers: `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`. */
export async function slackHeaders(body: string, options: { secret?: string; timestamp?: number } = {}): Promise<Record<string, string>> {
  const timestamp = String(options.timestamp ?? nowSeconds());
  const secret = options.secret ?? secretsOf("SLACK_WEBHOOK_SECRET")[0]!;
  return {
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature": `v0=${hex(await hmacBytes("SHA-256", secret, `v0:${timestamp}:${body}`))}`,
    "content-type": "application/json",
  };
}

/** `X-Twilio-Signature` for a URL and form parameters, as twilio-node computes it. */
export async function twilioSignature(url: string, params: Record<string, string>, secret = secretsOf("TWILIO_WEBHOOK_SECRET")[0]!): Promise<string> {
  const data = Object.keys(params)
    .sort()
    .reduce((signed, name) => signed + name + params[name], url);
  return base64(await hmacBytes("SHA-1", secret, data));
}

/** Hex SHA-256 of a string's UTF-8 bytes (Twilio's `bodySHA256`). */
export async function sha256Hex(text: string): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}

/** Svix's headers, made by the `svix` SDK. */
export function svixHeaders(body: string, options: { id?: string; secret?: string; at?: Date } = {}): Record<string, string> {
  const id = options.id ?? `msg_${crypto.randomUUID()}`;
  const at = options.at ?? new Date();
  return {
    "svix-id": id,
    "svix-timestamp": String(Math.floor(at.getTime() / 1000)),
    "svix-signature": new SvixWebhook(options.secret ?? secretsOf("SVIX_WEBHOOK_SECRET")[0]!).sign(id, at, body),
    "content-type": "application/json",
  };
}

/** A random id suffix, so that tests sharing one D1 never collide. */
export function unique(prefix: string): string {
  return `${prefix}${crypto.randomUUID()}`;
}
