/**
 * The catalogue's table-driven cases (test/providers/catalogue/*): every provider gets a good
 * delivery stored byte for byte, a replay answered duplicate, a forged signature, a wrong secret,
 * a stale timestamp where one is signed, and a tampered signed field, each refused with 401 and
 * nothing stored. Each case brings its own signer, written in the test with node:crypto (or the
 * provider's SDK), never src/providers' code.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { app } from "../../src/http/app";
import { secretVarName } from "../../src/config/secrets";
import { BASE_URL } from "./signers";
import { countWithBody, deliveryRow } from "./store-db";

export interface Sent {
  status: number;
  text: string;
  json: Record<string, unknown> | null;
  headers: Headers;
}

/** A request to `/webhooks/<source><path>` through the app, with vars overridden (a source's secrets). */
export async function send(
  source: string,
  options: { method?: string; body?: string; headers?: Record<string, string>; path?: string; env?: Record<string, unknown> },
): Promise<Sent> {
  const ctx = createExecutionContext();
  const init: RequestInit = { method: options.method ?? "POST", headers: options.headers ?? {} };
  if (options.body !== undefined && init.method !== "GET") init.body = options.body;
  const response = await app.fetch(new Request(`${BASE_URL}/webhooks/${source}${options.path ?? ""}`, init), { ...env, ...options.env } as Env, ctx);
  await waitOnExecutionContext(ctx);
  const text = await response.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = null;
  }
  return { status: response.status, text, json, headers: response.headers };
}

/** A signed request a case builds: headers, and a path (a query) where the provider signs the URL. */
export interface Signed {
  headers: Record<string, string>;
  path?: string;
  /** The body as sent, when the signer makes it (a signature inside the body). */
  body?: string;
}

export interface ProviderCase {
  source: string;
  /** The secret configured (a key, a token, a public key); `wrongSecret` signs the forgeries' kin. */
  secret: string;
  /** Signs with this instead when the configured secret is a public key (the private key's holder). */
  signWith?: unknown;
  wrongSigner?: unknown;
  /** A realistic body with fresh ids (from the provider's docs). */
  body: () => string;
  sign: (body: string, signer: unknown, nowSeconds: number) => Promise<Signed> | Signed;
  /** A change to a signed field (the body unless only fields are signed). */
  tamper: (body: string, signed: Signed) => { body: string; signed: Signed };
  /** Replaces the signature with made-up bytes of the right shape. */
  forge: (signed: Signed) => Signed;
  timestamped: boolean;
  /** The delivery id the inbox should report, when known in advance. */
  expectedId?: (body: string, signed: Signed) => string;
  /** Extra vars (second values). */
  env?: Record<string, unknown>;
  /** The status of an accepted delivery (Discord's 204); default 200. */
  okStatus?: number;
  /** A batch: each event's id and its exact bytes, each stored as its own delivery. */
  events?: (body: string) => { id: string; bytes: string }[];
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Random bytes as hex / base64, for forged signatures. */
export const randomHex = (bytes: number) => [...crypto.getRandomValues(new Uint8Array(bytes))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
export const randomBase64 = (bytes: number) => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(bytes))));

/** Registers the six cases of `spec` in the current `describe`. */
export function providerCases(spec: ProviderCase): void {
  const vars = { [secretVarName(spec.source)]: spec.secret, ...spec.env };
  const signer = spec.signWith ?? spec.secret;
  // A signer that puts the signature inside the body (Adyen, Mailgun, Graph) returns the body it made.
  const sentOf = (body: string, signed: Signed) => signed.body ?? body;
  const post = (body: string, signed: Signed) => send(spec.source, { body: sentOf(body, signed), headers: signed.headers, path: signed.path, env: vars });
  const storedBody = (body: string) => countWithBody(spec.source, new TextEncoder().encode(body));
  // A batch counts as stored when every event is a row holding its own bytes.
  const stored = async (body: string) => {
    if (!spec.events) return storedBody(body);
    const counts = await Promise.all(spec.events(body).map((event) => storedBody(event.bytes)));
    return Math.min(...counts);
  };

  it(`${spec.source}: stores a good delivery byte for byte, and answers duplicate to its replay`, async () => {
    const raw = spec.body();
    const signed = await spec.sign(raw, signer, nowSeconds());
    const body = sentOf(raw, signed);
    const first = await post(body, signed);
    expect(first.status, first.text).toBe(spec.okStatus ?? 200);
    expect(first.json?.status ?? "stored").toBe("stored");
    if (spec.events) {
      for (const event of spec.events(body)) {
        expect(await storedBody(event.bytes)).toBe(1);
        if (event.id) expect((await deliveryRow(spec.source, event.id))?.body).toEqual(new TextEncoder().encode(event.bytes));
      }
    } else if (spec.expectedId) {
      const id = spec.expectedId(body, signed);
      expect(first.json?.id).toBe(id);
      expect((await deliveryRow(spec.source, id))?.body).toEqual(new TextEncoder().encode(body));
    } else {
      expect(await storedBody(body)).toBe(1);
    }
    const again = await post(body, signed);
    expect(again.status).toBe(spec.okStatus ?? 200);
    expect(again.json?.status ?? "duplicate").toBe("duplicate");
    expect(await stored(body)).toBe(1);
  });

  it(`${spec.source}: refuses a forged signature and stores nothing`, async () => {
    const raw = spec.body();
    const signed = await spec.sign(raw, signer, nowSeconds());
    const forged = spec.forge(signed);
    const body = sentOf(raw, forged);
    expect((await post(body, forged)).status).toBe(401);
    expect(await stored(body)).toBe(0);
  });

  it(`${spec.source}: refuses a delivery signed with another secret`, async () => {
    const raw = spec.body();
    const signed = await spec.sign(raw, spec.wrongSigner ?? `${spec.secret}-not-ours`, nowSeconds());
    const body = sentOf(raw, signed);
    expect((await post(body, signed)).status).toBe(401);
    expect(await stored(body)).toBe(0);
  });

  it(`${spec.source}: refuses a tampered signed field`, async () => {
    const raw = spec.body();
    const signed = await spec.sign(raw, signer, nowSeconds());
    const tampered = spec.tamper(sentOf(raw, signed), signed);
    const request = { ...tampered.signed, body: tampered.body };
    expect((await post(tampered.body, request)).status).toBe(401);
    expect(await stored(tampered.body)).toBe(0);
  });

  if (spec.timestamped) {
    it(`${spec.source}: refuses a stale timestamp, and one from the future`, async () => {
      for (const at of [nowSeconds() - 3_600, nowSeconds() + 3_600]) {
        const raw = spec.body();
        const signed = await spec.sign(raw, signer, at);
        const answer = await post(sentOf(raw, signed), signed);
        expect(answer.status).toBe(401);
        expect(answer.json?.message).toMatch(/timestamp|expired|token/);
      }
    });
  }
}
