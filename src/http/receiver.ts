/**
 * `POST /webhooks/:source`: verify, store once, enqueue, answer at once.
 *
 * The checks run in a fixed order, each with its own status, so a provider's dashboard shows
 * what is wrong: unknown source 404, wrong method 405, too large 413, no secret configured 503,
 * bad signature 401, no delivery id 400, store failure 503. A 200 is only ever sent for a
 * delivery that is in D1 (new or already there). Already there means the same id, or, for a
 * provider whose id is not signed, the same signed content under another id (a replay).
 */
import { Hono } from "hono";
import { secretsFor } from "../config/secrets";
import { enqueueSoon } from "../processing/enqueue";
import { ensureSweepHeartbeat } from "../processing/sweeper";
import { MisconfiguredSecretError, type SignedRequest } from "../providers/types";
import { findSource } from "../sources";
import { openStore } from "../store";
import { headersToStore } from "../store/headers";
import { readBodyWithLimit } from "./body";
import { ApiError } from "./errors";
import type { AppEnv } from "./types";

/** Delivery ids longer than this are refused: ids are primary keys and show up in every listing. */
export const MAX_DELIVERY_ID_LENGTH = 255;

export const receiver = new Hono<AppEnv>();

receiver.all("/webhooks/:source", async (c) => {
  const sourceName = c.req.param("source");
  const provider = findSource(sourceName);
  if (!provider) throw new ApiError(404, "unknown_source", "no source with that name is configured");
  if (c.req.method !== "POST") {
    throw new ApiError(405, "method_not_allowed", "webhooks are delivered with POST", { Allow: "POST" });
  }

  const config = c.get("config");
  const body = await readBodyWithLimit(c.req.raw, config.maxBodyBytes);

  // Fail closed: without a secret nothing can be verified, and unverified input is never stored.
  // 503 makes the provider retry until the secret is set.
  const secrets = secretsFor(c.env, sourceName);
  if (secrets.length === 0) {
    throw new ApiError(503, "source_not_configured", "this source has no webhook secret configured");
  }

  const request: SignedRequest = { url: publicUrl(c.req.url, config.publicBaseUrl), headers: c.req.raw.headers, body };
  const verification = await provider.verify(request, secrets, Math.floor(Date.now() / 1000)).catch((error: unknown) => {
    if (error instanceof MisconfiguredSecretError) {
      console.error(`source ${sourceName}: ${error.message}`);
      throw new ApiError(503, "source_misconfigured", "this source's webhook secret is not usable");
    }
    throw error;
  });
  if (!verification.ok) throw new ApiError(401, "invalid_signature", `signature verification failed: ${verification.reason}`);
  if (verification.handshake) return c.json(verification.handshake);

  const id = verification.deliveryId;
  if (id === null || id.length === 0) throw new ApiError(400, "missing_delivery_id", "the delivery carries no delivery id");
  if (id.length > MAX_DELIVERY_ID_LENGTH) {
    throw new ApiError(400, "invalid_delivery_id", `the delivery id is longer than ${MAX_DELIVERY_ID_LENGTH} characters`);
  }
  // Postgres text cannot hold NUL: such an id would fail its insert (503) on every retry, for ever.
  // Refused in both stores alike; an id from a JSON body (Stripe's "evt_\u0000") can carry one.
  if (id.includes("\u0000")) throw new ApiError(400, "invalid_delivery_id", "the delivery id contains a NUL character");
  // Nor half a UTF-16 surrogate pair ("evt_\ud83d" in JSON): stored as U+FFFD, it would no longer be
  // the id sent (two ids could become one, and the store could not tell its insert landed).
  if (!id.isWellFormed()) throw new ApiError(400, "invalid_delivery_id", "the delivery id is not well-formed Unicode (a lone surrogate)");

  let outcome;
  try {
    const delivery = {
      source: sourceName,
      id,
      eventType: verification.eventType,
      body,
      contentDigest: verification.contentDigest ?? null,
      headers: headersToStore(c.req.raw.headers, provider.credentialHeaders ?? []),
      receivedAtMs: Date.now(),
    };
    outcome = await openStore(c.env).record(delivery, c.executionCtx);
  } catch (error) {
    console.error(`store failed for ${sourceName}:`, error instanceof Error ? error.message : String(error));
    throw new ApiError(503, "store_unavailable", "the delivery could not be stored; retry later");
  }

  // Only a new row is enqueued. A failed send still answers 200: the row is saved, and the
  // sweeper re-enqueues `received` rows that nobody picked up.
  if (outcome === "stored") enqueueSoon(c.env, c.executionCtx, { source: sourceName, id });
  c.executionCtx.waitUntil(ensureSweepHeartbeat(c.env));
  return c.json({ status: outcome, source: sourceName, id });
});

/** The URL the provider called: behind a proxy or custom domain, PUBLIC_BASE_URL says what it was. */
function publicUrl(requestUrl: string, publicBaseUrl: string | undefined): string {
  if (!publicBaseUrl) return requestUrl;
  const { pathname, search } = new URL(requestUrl);
  return new URL(`${publicBaseUrl.replace(/\/+$/, "")}${pathname}${search}`).toString();
}
