// Forwarding through the real local runtime: `standard` deliveries go to a real HTTP backend
// started here, configured by vars alone (STANDARD_FORWARD_URL, _SECRET, _CONCURRENCY). The backend
// verifies every request with the standardwebhooks library and deduplicates on webhook-id; it fails
// some deliveries' first two calls with 503 (half of those after it had already taken them, as a
// backend that crashes before answering), answers others 429 with Retry-After: 2 once, and refuses
// one with 400. Every good delivery must be taken exactly once in effect, the refused one must end
// failed with its status, and the backend must never have more than the limit in flight.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { Webhook } from "standardwebhooks";
import { LocalInbox, mapLimit, waitFor } from "./harness.mjs";
import { standardDelivery } from "./signers.mjs";

const LIMIT = 3;
/** How long the backend takes over each request: long enough for requests to overlap. */
const HOLD_MS = 250;
const FORWARD_SECRET = "whsec_Zm9yd2FyZGluZy1lMmUtc2VjcmV0LTMyLWJ5dGVzISE=";

const ids = (prefix, count) => Array.from({ length: count }, (_, index) => `msg_fwd_${prefix}_${index}`);
const FLAKY = ids("flaky", 6); // 503, 503, then 200; the first three took the delivery before their first 503
const TAKEN_BEFORE_503 = new Set(FLAKY.slice(0, 3));
const THROTTLED = ids("throttled", 6); // 429 with Retry-After: 2, then 200
const REJECTED = "msg_fwd_rejected"; // 400, always
const PLAIN = ids("plain", 11); // 200
const GOOD = [...FLAKY, ...THROTTLED, ...PLAIN];

/** The backend: what a service behind the inbox would do, with counters for the test. */
function startBackend() {
  const verifier = new Webhook(FORWARD_SECRET);
  const state = {
    calls: new Map(), // delivery id → calls
    webhookIds: new Map(), // delivery id → the webhook-ids it came with
    taken: new Map(), // webhook-id → times its effect was applied (must end at 1)
    duplicates: 0,
    unverified: 0,
    providerHeaders: 0,
    inFlight: 0,
    maxInFlight: 0,
    throttledAt: new Map(), // delivery id → when it was answered 429
    retryAfterGapsMs: [],
  };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      state.inFlight++;
      state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
      let finished = false;
      const finish = () => {
        if (!finished) state.inFlight--;
        finished = true;
      };
      response.on("finish", finish);
      response.on("close", finish);
      const body = Buffer.concat(chunks).toString("utf8");
      const id = request.headers["webhook-inbox-delivery-id"];
      const webhookId = request.headers["webhook-id"];
      const call = (state.calls.get(id) ?? 0) + 1;
      state.calls.set(id, call);
      state.webhookIds.set(id, new Set([...(state.webhookIds.get(id) ?? []), webhookId]));
      if (request.headers.authorization || request.headers["x-provider-credential"]) state.providerHeaders++;
      if (state.throttledAt.has(id) && call === 2) state.retryAfterGapsMs.push(Date.now() - state.throttledAt.get(id));

      const answer = (status, headers = {}, text = "") =>
        setTimeout(() => {
          response.writeHead(status, headers);
          response.end(text);
        }, HOLD_MS);
      try {
        verifier.verify(body, request.headers);
      } catch {
        state.unverified++;
        return answer(401, {}, "bad signature");
      }
      const take = () => {
        // Deduplicate on webhook-id: a retry of what was taken already has no second effect.
        if (state.taken.has(webhookId)) state.duplicates++;
        else state.taken.set(webhookId, 1);
      };
      if (id === REJECTED) return answer(400, { "content-type": "application/json" }, '{"error":"unknown account"}');
      if (FLAKY.includes(id) && call <= 2) {
        if (TAKEN_BEFORE_503.has(id)) take();
        return answer(503, {}, "try again later");
      }
      if (THROTTLED.includes(id) && call === 1) {
        state.throttledAt.set(id, Date.now() + HOLD_MS);
        return answer(429, { "retry-after": "2" }, "slow down");
      }
      take();
      return answer(200, {}, "ok");
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, state, port: server.address().port })));
}

const backend = await startBackend();
const inbox = new LocalInbox({
  vars: {
    STANDARD_FORWARD_URL: `http://127.0.0.1:${backend.port}/webhooks/inbox`,
    STANDARD_FORWARD_SECRET: FORWARD_SECRET,
    STANDARD_FORWARD_CONCURRENCY: String(LIMIT),
  },
});
before(() => inbox.start());
after(async () => {
  await inbox.stop();
  backend.server.close();
});

describe("forwarding, end to end", { timeout: 600_000 }, () => {
  it("takes every good delivery once in effect, fails the refused one with its status, never more than the limit in flight", async () => {
    const all = [...GOOD, REJECTED].sort(() => Math.random() - 0.5);
    const results = await mapLimit(all, 8, (id) => {
      const delivery = standardDelivery(id, { type: "invoice.paid", id });
      // Credentials the provider's request carried: they must never reach the backend.
      const headers = { ...delivery.headers, authorization: "Bearer provider-token", "x-provider-credential": "abc" };
      return inbox.post(delivery.path, delivery.body, headers);
    });
    assert.deepEqual(results.map((result) => result.json?.status), Array(all.length).fill("stored"));

    // Watched through the admin API, not `inbox.sql`: that opens the runtime's SQLite file from a
    // process of its own, whose read lock can make a commit of the runtime's meet SQLITE_BUSY (a
    // lost done mark, so a call more than planned: seen once in CI on a loaded machine). No
    // deployment has a second process on its database; the queries below run once all is settled.
    const settled = await waitFor(
      async () => {
        const counts = (await inbox.admin("/admin/stats")).json?.bySource?.standard;
        return counts?.done === GOOD.length && counts?.failed === 1 ? { done: counts.done, failed: counts.failed } : null;
      },
      { timeoutMs: 540_000, intervalMs: 1_000 },
    );
    assert.deepEqual(settled, { done: GOOD.length, failed: 1 });

    const { state } = backend;
    const calls = [...state.calls.values()].reduce((total, count) => total + count, 0);
    const [deferrals] = await inbox.sql(
      "SELECT coalesce(SUM(coalesce(json_extract(entry.value, '$.count'), 1)), 0) AS n FROM deliveries, json_each(deliveries.attempt_log) AS entry WHERE source = 'standard' AND json_extract(entry.value, '$.outcome') = 'deferred'",
    );
    console.log(
      [
        `forwarding e2e: ${all.length} deliveries (${GOOD.length} good, 1 refused with 400), concurrency limit ${LIMIT}`,
        `backend: ${calls} calls, ${calls - all.length} of them retries (${FLAKY.length} × 2 after 503, ${THROTTLED.length} × 1 after 429), ${state.duplicates} duplicates deduplicated on webhook-id`,
        `maximum in flight at the backend: ${state.maxInFlight}; deliveries put back on the queue to wait for a slot: ${deferrals.n}`,
        `after 429 with Retry-After: 2, the next call came ${Math.min(...state.retryAfterGapsMs)}–${Math.max(...state.retryAfterGapsMs)} ms later`,
      ].join("\n"),
    );

    // What the inbox recorded for any delivery the backend saw more often than planned: the
    // attempt log says which run called it again, and why.
    const planned = (id) => (FLAKY.includes(id) ? 3 : THROTTLED.includes(id) ? 2 : 1);
    const unplanned = [...state.calls].filter(([id, count]) => count !== planned(id)).map(([id]) => id);
    if (unplanned.length > 0) {
      const rows = await inbox.sql(`SELECT id, status, attempts, attempt_log FROM deliveries WHERE id IN (${unplanned.map((id) => `'${id}'`).join(", ")})`);
      console.log(`called more often than planned: ${JSON.stringify(rows, null, 1)}`);
    }

    assert.equal(state.unverified, 0, "every request verifies with standardwebhooks under the forward secret");
    assert.equal(state.providerHeaders, 0, "no provider credential header reached the backend");
    for (const id of GOOD) {
      assert.equal(state.webhookIds.get(id)?.size, 1, `${id}: one webhook-id on every call`);
      assert.equal(state.taken.get([...state.webhookIds.get(id)][0]), 1, `${id}: taken exactly once in effect`);
    }
    assert.equal(state.taken.size, GOOD.length, "nothing else was taken");
    assert.equal(new Set([...state.webhookIds.values()].map((set) => [...set][0])).size, all.length, "no two deliveries share a webhook-id");
    for (const id of FLAKY) assert.equal(state.calls.get(id), 3, `${id}: 503, 503, then 200`);
    for (const id of THROTTLED) assert.equal(state.calls.get(id), 2, `${id}: 429, then 200`);
    for (const id of PLAIN) assert.equal(state.calls.get(id), 1, `${id}: once`);
    assert.equal(state.duplicates, TAKEN_BEFORE_503.size * 2, "the retries of what was taken before its 503 were deduplicated");

    assert.equal(state.calls.get(REJECTED), 1, "a 400 is not retried");
    const [rejected] = await inbox.sql(`SELECT status, attempts, error FROM deliveries WHERE id = '${REJECTED}'`);
    assert.equal(rejected.status, "failed");
    assert.equal(rejected.attempts, 1);
    assert.match(rejected.error, /answered 400 Bad Request: \{"error":"unknown account"\}/);

    const attempts = await inbox.sql("SELECT id, attempts FROM deliveries WHERE source = 'standard' AND status = 'done'");
    for (const row of attempts) {
      const expected = FLAKY.includes(row.id) ? 3 : THROTTLED.includes(row.id) ? 2 : 1;
      assert.equal(row.attempts, expected, `${row.id}: waiting for a slot uses up no attempt`);
    }
    assert.ok(state.maxInFlight <= LIMIT, `at most ${LIMIT} in flight (saw ${state.maxInFlight})`);
    assert.equal(state.maxInFlight, LIMIT, "the limit was reached, so it was exercised");
  });
});
