// Kill and restart: SIGKILL the local runtime's whole process group in the middle of a load,
// restart it on the same state, and check that every delivery answered 200 before the kill is
// processed exactly once, with no manual step (local queues die with the runtime; the lease
// alarms and the sweeper's heartbeat alarm are persisted and recover the rest).
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { LocalInbox, waitFor } from "./harness.mjs";
import { paymentEvent, stripeDelivery } from "./signers.mjs";

const inbox = new LocalInbox();
after(() => inbox.stop());

describe("kill and restart", { timeout: 420_000 }, () => {
  it("processes every delivery answered 200 before a SIGKILL exactly once after a restart", async () => {
    await inbox.start();
    const total = 400;
    const answered = new Set();
    let next = 0;
    let killed = false;
    const sender = async () => {
      while (next < total && !killed) {
        const id = `evt_restart_${next++}`;
        const delivery = stripeDelivery(paymentEvent(id, 1_000));
        try {
          const result = await inbox.post(delivery.path, delivery.body, delivery.headers);
          if (result.status === 200) answered.add(id);
        } catch {
          // the runtime died under this request: no 200, so the provider would retry it
        }
      }
    };
    const load = Promise.all(Array.from({ length: 16 }, sender));
    await waitFor(() => answered.size >= total / 2, { timeoutMs: 60_000, intervalMs: 20 });
    killed = true;
    await inbox.kill();
    await load;
    const answeredBeforeKill = [...answered];
    assert.ok(answeredBeforeKill.length >= total / 2);

    const [before] = await inbox.sql("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done'");
    assert.ok(before.n < answeredBeforeKill.length, "the kill landed while work was still pending");

    const restartedAt = Date.now();
    await inbox.start();
    const list = answeredBeforeKill.map((id) => `'${id}'`).join(",");
    const settled = await waitFor(
      async () => {
        const [row] = await inbox.sql(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done' AND id IN (${list})`);
        return row.n === answeredBeforeKill.length ? row : null;
      },
      { timeoutMs: 180_000, intervalMs: 3_000 },
    );
    assert.ok(settled, "every delivery answered 200 before the kill ends done");
    const recoverySeconds = (Date.now() - restartedAt) / 1000;
    console.log(`answered before the kill: ${answeredBeforeKill.length}, done before it: ${before.n}, all done ${recoverySeconds.toFixed(0)} s after the restart`);

    const [payments] = await inbox.sql(`SELECT COUNT(*) AS n, COUNT(DISTINCT delivery_id) AS distinct_ids FROM payments WHERE delivery_id IN (${list})`);
    assert.deepEqual(payments, { n: answeredBeforeKill.length, distinct_ids: answeredBeforeKill.length });
    const [leftovers] = await inbox.sql("SELECT COUNT(*) AS n FROM deliveries WHERE status IN ('received', 'processing', 'failed')");
    assert.equal(leftovers.n, 0, "nothing stored is left behind, including requests cut off by the kill");
  });
});
