// One handler slower than the lease, batched with 30 fast ones, through the real local runtime:
// each handler calls a local HTTP server (a downstream API) that counts the calls. Every fast
// delivery calls it exactly once and is done long before the slow one returns; the slow one keeps
// its lease (renewed while it runs) and calls it once too.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { LocalInbox, ROOT, mapLimit, waitFor } from "./harness.mjs";
import { standardDelivery } from "./signers.mjs";

const LEASE_SECONDS = 4;
const SLOW_SECONDS = 15;

/** The downstream API: counts calls per delivery, answers after the delay the call asks for. */
function startDownstream() {
  const calls = new Map();
  const answeredAt = new Map();
  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://127.0.0.1");
    const id = url.searchParams.get("id");
    calls.set(id, (calls.get(id) ?? 0) + 1);
    setTimeout(() => {
      answeredAt.set(id, Date.now());
      response.end("ok");
    }, Number(url.searchParams.get("delaySeconds")) * 1000);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, calls, answeredAt, port: server.address().port })));
}

/** wrangler.toml with the fixture worker as main, in a directory of its own. */
function fixtureConfig() {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
    .replace(/^main = .*$/m, `main = ${JSON.stringify(join(ROOT, "test", "e2e", "fixtures", "slow-handler-worker.ts"))}`)
    .replace(/^migrations_dir = .*$/m, `migrations_dir = ${JSON.stringify(join(ROOT, "migrations"))}`);
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-slow-"));
  writeFileSync(join(dir, "wrangler.toml"), toml);
  return { path: join(dir, "wrangler.toml"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const config = fixtureConfig();
const downstream = await startDownstream();
const inbox = new LocalInbox({
  config: config.path,
  migrate: true,
  vars: { LEASE_SECONDS: String(LEASE_SECONDS), E2E_EFFECT_URL: `http://127.0.0.1:${downstream.port}` },
});
after(async () => {
  await inbox.stop();
  config.remove();
  downstream.server.close();
});

describe("a handler slower than the lease", { timeout: 300_000 }, () => {
  it("holds up none of the 30 fast deliveries of its batch, and every handler calls downstream once", async () => {
    await inbox.start();
    const slow = standardDelivery("msg_slow", { type: "report.slow", slowSeconds: SLOW_SECONDS });
    const fast = Array.from({ length: 30 }, (_, index) => standardDelivery(`msg_fast_${index}`, { type: "report.fast" }));
    const sentAt = Date.now();
    const results = await mapLimit([slow, ...fast], 16, (delivery) => inbox.post(delivery.path, delivery.body, delivery.headers));
    assert.deepEqual(results.map((result) => result.json?.status), Array(31).fill("stored"));

    // Watched through the admin API while deliveries run, not `inbox.sql`: that opens the runtime's
    // SQLite file from a process of its own, whose read lock can make the runtime's commit meet
    // SQLITE_BUSY (a lost done mark, so a second downstream call), which no deployment has.
    const slowState = async () => {
      const json = (await inbox.admin("/admin/deliveries/standard/msg_slow")).json;
      return { status: json?.status, attempts: json?.attempts };
    };
    const fastDone = await waitFor(
      async () => ((await inbox.admin("/admin/stats")).json?.bySource?.standard?.done === 30 ? Date.now() : null),
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.ok(fastDone, "30 deliveries end done");
    // Its first run is held by its lease alone: D1 records it when it ends (migrations/0006).
    assert.deepEqual(await slowState(), { status: "received", attempts: 0 }, "the fast ones are done while the slow one still runs");
    const fastIds = fast.map((_, index) => `'msg_fast_${index}'`).join(",");
    const [fastRows] = await inbox.sql(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done' AND id IN (${fastIds})`);
    assert.equal(fastRows.n, 30, "the 30 done are the fast ones");

    const slowDone = await waitFor(
      async () => {
        const state = await slowState();
        return state.status === "done" ? state : null;
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );
    assert.deepEqual(slowDone, { status: "done", attempts: 1 });
    const slowAnswered = downstream.answeredAt.get("msg_slow");
    console.log(
      `fast deliveries done ${((fastDone - sentAt) / 1000).toFixed(1)} s after the first send; the slow one's downstream call returned after ${((slowAnswered - sentAt) / 1000).toFixed(1)} s (lease ${LEASE_SECONDS} s)`,
    );
    assert.ok(fastDone < slowAnswered, "all fast ones were done before the slow handler's call returned");
    for (let index = 0; index < 30; index++) assert.equal(downstream.calls.get(`msg_fast_${index}`), 1, `msg_fast_${index} called downstream once`);
    assert.equal(downstream.calls.get("msg_slow"), 1, "the slow handler ran once: its lease was renewed, nobody took over");
  });
});
