// The circuit breaker end to end, through the real local runtime and real HTTP backends: `standard`
// forwards to a backend that is down (503) for a while and then back; `svix` forwards to one that
// answers 400 to everything. While the first is down its breaker opens: its deliveries wait without
// using attempts (each delivery's attempts equal the requests the backend saw for it: only the
// requests that opened the breaker and the probes count), every delivery arrives once after it is
// back, in order of arrival within what its concurrency limit allows, and /admin/metrics shows the
// state. The 4xx destination fails its deliveries alone and never opens its breaker.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { Webhook } from "standardwebhooks";
import { LocalInbox, sleep, waitFor } from "./harness.mjs";
import { standardDelivery, svixDelivery } from "./signers.mjs";

const FORWARD_SECRET = "whsec_Zm9yd2FyZGluZy1lMmUtc2VjcmV0LTMyLWJ5dGVzISE=";
const LIMIT = 2;
const DOWN_IDS = Array.from({ length: 10 }, (_, index) => `msg_breaker_${String(index).padStart(2, "0")}`);
const PICKY_IDS = ["msg_picky_0", "msg_picky_1", "msg_picky_2"];

function startBackend() {
  const verifier = new Webhook(FORWARD_SECRET);
  const state = { down: true, calls: new Map(), taken: [], callsWhileDown: 0, unverified: 0, inFlight: 0, maxInFlight: 0 };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const id = request.headers["webhook-inbox-delivery-id"];
      state.calls.set(id, (state.calls.get(id) ?? 0) + 1);
      try {
        verifier.verify(Buffer.concat(chunks).toString("utf8"), request.headers);
      } catch {
        state.unverified++;
      }
      if (request.url === "/picky") {
        response.writeHead(400, { "content-type": "text/plain" });
        return response.end("unknown account");
      }
      if (state.down) {
        state.callsWhileDown++;
        response.writeHead(503);
        return response.end("down for maintenance");
      }
      state.inFlight++;
      state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
      state.taken.push(id);
      setTimeout(() => {
        state.inFlight--;
        response.writeHead(200);
        response.end("ok");
      }, 100);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, state, port: server.address().port })));
}

const backend = await startBackend();
const base = `http://127.0.0.1:${backend.port}`;
const inbox = new LocalInbox({
  vars: {
    MAX_ATTEMPTS: "10",
    STANDARD_FORWARD_URL: `${base}/down`,
    STANDARD_FORWARD_SECRET: FORWARD_SECRET,
    STANDARD_FORWARD_CONCURRENCY: String(LIMIT),
    STANDARD_FORWARD_BREAKER_FAILURES: "2",
    STANDARD_FORWARD_BREAKER_OPEN_SECONDS: "2",
    SVIX_FORWARD_URL: `${base}/picky`,
    SVIX_FORWARD_SECRET: FORWARD_SECRET,
    SVIX_FORWARD_BREAKER_FAILURES: "1",
  },
});
before(() => inbox.start());
after(async () => {
  await inbox.stop();
  backend.server.close();
});

/** A query, tried again while the running inbox holds the database (SQLITE_BUSY). */
async function query(command) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inbox.sql(command);
    } catch (error) {
      if (attempt >= 10 || !String(error).includes("SQLITE_BUSY")) throw error;
      await sleep(200);
    }
  }
}

async function metrics() {
  const response = await fetch(`${inbox.url}/admin/metrics`, { headers: { authorization: `Bearer ${inbox.vars.ADMIN_TOKEN}` } });
  return response.text();
}

const stateLine = (prefix, state) => `webhook_inbox_forward_breaker_state{source_prefix="${prefix}",destination="forward",state="${state}"} 1`;

describe("the circuit breaker, end to end", { timeout: 600_000 }, () => {
  it("holds a down destination's deliveries without using attempts, then delivers each once, in order; a 4xx destination never opens", async () => {
    // One at a time, so that each is received after the one before.
    for (const id of DOWN_IDS) {
      const delivery = standardDelivery(id, { type: "invoice.paid", id });
      assert.equal((await inbox.post(delivery.path, delivery.body, delivery.headers)).json?.status, "stored");
      await sleep(20);
    }
    for (const id of PICKY_IDS) {
      const delivery = svixDelivery(id, { type: "user.created", id });
      assert.equal((await inbox.post(delivery.path, delivery.body, delivery.headers)).json?.status, "stored");
    }

    await waitFor(async () => (await metrics()).includes(stateLine("STANDARD", "open")), { timeoutMs: 120_000, intervalMs: 500 });
    // Down for a while longer: probes fail, the open period grows; nothing is failed.
    await sleep(10_000);
    const whileDown = await query("SELECT id, status, attempts FROM deliveries WHERE source = 'standard' ORDER BY received_at");
    const attemptsWhileDown = whileDown.reduce((sum, row) => sum + row.attempts, 0);
    assert.ok(whileDown.every((row) => row.status !== "failed" && row.status !== "done"), "nothing failed or done while down");
    assert.equal(attemptsWhileDown, backend.state.callsWhileDown, "only the requests the backend saw used attempts");
    assert.ok(attemptsWhileDown < DOWN_IDS.length, `far fewer attempts than deliveries while down (${attemptsWhileDown})`);
    const metricsWhileDown = await metrics();

    backend.state.down = false;
    const settled = await waitFor(
      async () => {
        const rows = await query("SELECT id, source, status, attempts, received_at FROM deliveries ORDER BY received_at");
        const standard = rows.filter((row) => row.source === "standard");
        const svix = rows.filter((row) => row.source === "svix");
        return standard.every((row) => row.status === "done") && svix.every((row) => row.status === "failed") ? { standard, svix } : null;
      },
      { timeoutMs: 480_000, intervalMs: 1_000 },
    );
    const { state } = backend;
    const order = settled.standard.map((row) => row.id);
    console.log(
      [
        `breaker e2e: ${DOWN_IDS.length} deliveries to a destination down (503), concurrency ${LIMIT}, opened after 2 failures`,
        `while down: ${state.callsWhileDown} requests (the opening failures and the probes), ${attemptsWhileDown} attempts used in all`,
        `after it came back: taken in the order ${state.taken.join(", ")}; max in flight ${state.maxInFlight}`,
        `attempts per delivery: ${settled.standard.map((row) => `${row.id.slice(-2)}=${row.attempts}`).join(" ")}`,
      ].join("\n"),
    );

    assert.ok(metricsWhileDown.includes(stateLine("STANDARD", "open")) || metricsWhileDown.includes(stateLine("STANDARD", "half-open")), "metrics showed it open while down");
    assert.equal(state.unverified, 0, "every request verifies under the forward secret");
    // Each delivery arrived (2xx) exactly once, and in the order it was received, but for what
    // LIMIT requests in flight at once may swap.
    assert.deepEqual([...state.taken].sort(), [...order].sort(), "each delivery taken once");
    for (const [index, id] of state.taken.entries()) {
      assert.ok(Math.abs(order.indexOf(id) - index) < LIMIT, `${id} arrived at ${index}, received ${order.indexOf(id)}th: ${state.taken.join(",")}`);
    }
    // Attempts: only the requests the backend saw for each delivery.
    for (const row of settled.standard) assert.equal(row.attempts, state.calls.get(row.id), `${row.id}: attempts = requests it made`);
    assert.ok(state.maxInFlight <= LIMIT);

    // The 4xx destination: each failed after one attempt, its breaker still closed.
    for (const row of settled.svix) {
      assert.equal(row.attempts, 1, `${row.id}: one attempt`);
      assert.equal(state.calls.get(row.id), 1);
    }
    const after = await metrics();
    assert.ok(after.includes(stateLine("SVIX", "closed")), "a 4xx destination's breaker stays closed");
    assert.ok(after.includes(stateLine("STANDARD", "closed")), "closed again once the probe succeeded");
  });
});
