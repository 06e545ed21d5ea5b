/**
 * `POST /webhooks/:source` (and `GET` where a provider's handshake needs it): verify, store once,
 * enqueue, answer at once.
 *
 * The checks run in a fixed order, each with its own status, so a provider's dashboard shows
 * what is wrong: unknown source 404, wrong method 405, too large 413, no secret configured 503,
 * bad signature 401, no delivery id 400, store failure 503. A 200 is only ever sent for a
 * delivery that is in the store (new or already there), or for a handshake or lifecycle message
 * answered as its provider requires (handshake.ts), which stores no delivery. Already there means
 * the same id, or, for a provider whose id is not signed, the same signed content under another
 * id (a replay). A provider's own redelivery of a delivery that ended `failed` here is replayed
 * once instead of swallowed (the answer says `replayed`). A delivery its source's filter keeps out
 * (`<SOURCE>_FILTER`, source-filter.ts) is stored as `filtered` and not enqueued (the answer says
 * `filtered`, still a 200: the provider must not retry it).
 */
import { Hono } from "hono";
import { replayIfFailed } from "../processing/replay";
import { enqueueSoon } from "../processing/enqueue";
import { ensureSweepHeartbeat } from "../processing/sweeper";
import { testHosts } from "../providers/engine/outbound";
import { MisconfiguredSecretError, type SignedRequest, type VerifyContext } from "../providers/types";
import { secretsFor, settingFor } from "../config/secrets";
import { findSource } from "../sources";
import { openStore } from "../store";
import { headersToStore } from "../store/headers";
import { readBodyWithLimit } from "./body";
import { sourceFilterReason } from "./source-filter";
import { ApiError } from "./errors";
import { answerHandshake, answerLifecycle } from "./handshake";
import { noteSignatureFailure } from "./signature-failures";
import type { AppEnv } from "./types";

/** Delivery ids longer than this are refused: ids are primary keys and show up in every listing. */
export const MAX_DELIVERY_ID_LENGTH = 255;

export const receiver = new Hono<AppEnv>();

/** The id as the store can keep it, or a 400. */
function checkedId(id: string | null): string {
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
  return id;
}

receiver.all("/webhooks/:source", async (c) => {
  const sourceName = c.req.param("source");
  const provider = findSource(sourceName);
  if (!provider) throw new ApiError(404, "unknown_source", "no source with that name is configured");
  const methods = ["POST", ...(provider.methods ?? [])];
  if (!methods.includes(c.req.method)) {
    throw new ApiError(405, "method_not_allowed", `this source accepts ${methods.join(" and ")}`, { Allow: methods.join(", ") });
  }

  const config = c.get("config");
  const body = c.req.method === "POST" ? await readBodyWithLimit(c.req.raw, config.maxBodyBytes) : new Uint8Array(0);

  // Fail closed: without a secret nothing can be verified, and unverified input is never stored.
  // 503 makes the provider retry until the secret is set.
  const secrets = secretsFor(c.env, sourceName);
  if (secrets.length === 0) {
    throw new ApiError(503, "source_not_configured", "this source has no webhook secret configured");
  }

  const url = publicUrl(c.req.url, config.publicBaseUrl);
  const request: SignedRequest = { url, method: c.req.method, headers: c.req.raw.headers, body };
  const context: VerifyContext = {
    setting: (what) => settingFor(c.env, sourceName, what),
    testHosts: testHosts((c.env as unknown as Record<string, unknown>).TEST_ONLY_ALLOWED_HOSTS),
  };
  const verification = await provider.verify(request, secrets, Math.floor(Date.now() / 1000), context).catch((error: unknown) => {
    if (error instanceof MisconfiguredSecretError) {
      console.error(`source ${sourceName}: ${error.message}`);
      throw new ApiError(503, "source_misconfigured", "this source's webhook secret is not usable");
    }
    throw error;
  });
  if (!verification.ok) {
    noteSignatureFailure(c.env, c.executionCtx, sourceName);
    // Alerting runs in the sweeps: an inbox only probed (nothing stored yet) must sweep too.
    c.executionCtx.waitUntil(ensureSweepHeartbeat(c.env));
    throw new ApiError(401, "invalid_signature", `signature verification failed: ${verification.reason}`);
  }
  if ((verification.matchedSecret ?? 0) > 0) notePreviousSecret(c.env, c.executionCtx, sourceName);
  if (verification.handshake) return answerHandshake(c, sourceName, verification.handshake, context.testHosts);
  if (verification.lifecycle) return answerLifecycle(c, sourceName, verification.lifecycle);

  const events = verification.events ?? [{ deliveryId: verification.deliveryId, eventType: verification.eventType, body, contentDigest: verification.contentDigest }];
  const ids = events.map((event) => checkedId(event.deliveryId));
  const headers = headersToStore(c.req.raw.headers, provider.credentialHeaders ?? []);
  const store = openStore(c.env);
  const receivedAtMs = Date.now();
  let outcomes: ("stored" | "duplicate" | "replayed" | "filtered")[];
  try {
    outcomes = await Promise.all(
      events.map(async (event, index) => {
        const delivery = {
          source: sourceName,
          id: ids[index]!,
          eventType: event.eventType,
          body: event.body,
          contentDigest: ("contentDigest" in event ? event.contentDigest : undefined) ?? null,
          headers,
          receivedAtMs,
          // Kept out by the source's filter: stored finished as `filtered`, never enqueued.
          filtered: sourceFilterReason(config, sourceName, event.eventType, c.req.raw.headers, event.body),
        };
        const outcome = await store.record(delivery, c.executionCtx);
        if (outcome === "stored") return delivery.filtered === null ? outcome : "filtered";
        // A copy of a delivery that ended failed here: the provider redelivers it on purpose (a
        // user fixed the handler and pressed "redeliver"), so it runs once more. A failed row is
        // put back only once: the store's reset is one UPDATE … WHERE status = 'failed'.
        return (await replayIfFailed(c.env, { source: sourceName, id: delivery.id })) ? "replayed" : outcome;
      }),
    );
  } catch (error) {
    console.error(`store failed for ${sourceName}:`, error instanceof Error ? error.message : String(error));
    throw new ApiError(503, "store_unavailable", "the delivery could not be stored; retry later");
  }

  // Only a new row is enqueued (a replay enqueued its own). A failed send still answers 200: the
  // row is saved, and the sweeper re-enqueues `received` rows that nobody picked up.
  outcomes.forEach((outcome, index) => {
    if (outcome === "stored") enqueueSoon(c.env, c.executionCtx, { source: sourceName, id: ids[index]! });
  });
  c.executionCtx.waitUntil(ensureSweepHeartbeat(c.env));
  const accept = verification.acceptReply ?? provider.acceptReply;
  if (accept) return new Response(accept.status === 204 ? null : accept.body, { status: accept.status, headers: { "Content-Type": accept.contentType ?? "text/plain" } });
  if (verification.events) {
    const status = outcomes.includes("stored") ? "stored" : outcomes.includes("replayed") ? "replayed" : outcomes.includes("filtered") ? "filtered" : "duplicate";
    return c.json({ status, source: sourceName, events: ids.map((id, index) => ({ id, status: outcomes[index] })) });
  }
  return c.json({ status: outcomes[0], source: sourceName, id: ids[0] });
});

/** When each source's previous secret was last noted by this isolate: at most one write a minute per source. */
const previousSecretNoted = new Map<string, number>();
const NOTE_EVERY_MS = 60_000;

/**
 * Notes, after the answer, that a source's previous secret verified a delivery: the admin API's
 * sources then show whether a rotation can be finished. A failed note is logged, never fatal.
 */
function notePreviousSecret(env: Env, ctx: { waitUntil(promise: Promise<unknown>): void }, source: string): void {
  const nowMs = Date.now();
  if (nowMs - (previousSecretNoted.get(source) ?? 0) < NOTE_EVERY_MS) return;
  previousSecretNoted.set(source, nowMs);
  ctx.waitUntil(openStore(env).notePreviousSecret(source, nowMs).catch((error: unknown) => {
    console.error(`source ${source}: could not note the previous secret's use:`, error instanceof Error ? error.message : String(error));
  }));
}

/** The URL the provider called: behind a proxy or custom domain, PUBLIC_BASE_URL says what it was. */
function publicUrl(requestUrl: string, publicBaseUrl: string | undefined): string {
  if (!publicBaseUrl) return requestUrl;
  const { pathname, search } = new URL(requestUrl);
  return new URL(`${publicBaseUrl.replace(/\/+$/, "")}${pathname}${search}`).toString();
}
