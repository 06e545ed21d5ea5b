// Black-box: Stripe-signed payments through the real local runtime until every one is settled.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { LocalInbox, mapLimit, waitFor } from "./harness.mjs";
import { paymentEvent, stripeDelivery } from "./signers.mjs";

const inbox = new LocalInbox();
before(() => inbox.start());
after(() => inbox.stop());

async function send(delivery) {
  return inbox.post(delivery.path, delivery.body, delivery.headers);
}

async function statusCounts() {
  const rows = await inbox.sql("SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status");
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

describe("processing, end to end", { timeout: 300_000 }, () => {
  it("processes 500 payments (10% sent twice) and 5 broken ones: effects exactly once, broken ones failed", async () => {
    const good = Array.from({ length: 500 }, (_, index) => stripeDelivery(paymentEvent(`evt_e2e_${index}`, 100 + index)));
    const broken = Array.from({ length: 5 }, (_, index) => stripeDelivery(paymentEvent(`evt_e2e_broken_${index}`, undefined)));
    const sends = [...good, ...broken, ...good.filter((_, index) => index % 10 === 0)];
    sends.sort(() => Math.random() - 0.5);
    const results = await mapLimit(sends, 16, send);
    assert.deepEqual(
      results.filter((result) => result.status !== 200),
      [],
      "every send is answered 200",
    );
    assert.equal(results.filter((result) => result.json.status === "stored").length, 505);
    assert.equal(results.filter((result) => result.json.status === "duplicate").length, 50);

    const settled = await waitFor(async () => {
      const counts = await statusCounts();
      return (counts.done ?? 0) === 500 && (counts.failed ?? 0) === 5 ? counts : null;
    });
    assert.deepEqual(settled, { done: 500, failed: 5 });

    const [payments] = await inbox.sql("SELECT COUNT(*) AS n, COUNT(DISTINCT delivery_id) AS distinct_ids, SUM(amount) AS total FROM payments");
    assert.deepEqual(payments, { n: 500, distinct_ids: 500, total: 500 * 100 + (499 * 500) / 2 });
    const failed = await inbox.sql("SELECT id, attempts, error FROM deliveries WHERE status = 'failed' ORDER BY id");
    assert.equal(failed.length, 5);
    for (const row of failed) {
      assert.match(row.id, /^evt_e2e_broken_/);
      assert.equal(row.attempts, 1, "a PermanentError is not retried");
      assert.match(row.error, /data\.object\.amount/);
    }
  });

  it("records exactly 300 payments for 300 events each sent one to three times at once, broken ones failed", async () => {
    const copies = (index) => 1 + (index % 3);
    const events = Array.from({ length: 300 }, (_, index) => stripeDelivery(paymentEvent(`evt_e2e_multi_${index}`, 7)));
    const broken = Array.from({ length: 3 }, (_, index) => stripeDelivery(paymentEvent(`evt_e2e_multi_broken_${index}`, undefined)));
    const groups = [...events, ...broken].map((delivery, index) => Array.from({ length: copies(index) }, () => delivery));
    const results = (await mapLimit(groups, 8, (group) => Promise.all(group.map(send)))).flat();
    assert.ok(results.every((result) => result.status === 200), "every copy is answered 200");
    assert.equal(results.filter((result) => result.json.status === "stored").length, 303);

    const settled = await waitFor(async () => {
      const [row] = await inbox.sql(
        "SELECT SUM(status = 'done') AS done, SUM(status = 'failed') AS failed FROM deliveries WHERE id LIKE 'evt_e2e_multi_%'",
      );
      return row.done === 300 && row.failed === 3 ? row : null;
    });
    assert.deepEqual(settled, { done: 300, failed: 3 });
    const [payments] = await inbox.sql("SELECT COUNT(*) AS n FROM payments WHERE delivery_id LIKE 'evt_e2e_multi_%'");
    assert.equal(payments.n, 300);
    const failed = await inbox.sql("SELECT error FROM deliveries WHERE id LIKE 'evt_e2e_multi_broken_%'");
    assert.ok(failed.every((row) => /data\.object\.amount/.test(row.error)), "the error names the missing amount");
  });

  it("stores 50 parallel copies of one delivery as one row, processed once", async () => {
    const delivery = stripeDelivery(paymentEvent("evt_e2e_fifty", 4242));
    const results = await Promise.all(Array.from({ length: 50 }, () => send(delivery)));
    assert.ok(results.every((result) => result.status === 200));
    assert.equal(results.filter((result) => result.json.status === "stored").length, 1);
    const done = await waitFor(async () => {
      const [row] = await inbox.sql("SELECT status, attempts FROM deliveries WHERE id = 'evt_e2e_fifty'");
      return row?.status === "done" ? row : null;
    });
    assert.deepEqual(done, { status: "done", attempts: 1 });
    const [payments] = await inbox.sql("SELECT COUNT(*) AS n FROM payments WHERE delivery_id = 'evt_e2e_fifty'");
    assert.equal(payments.n, 1);
  });
});
