// Kill and restart: SIGKILL the local runtime's whole process group in the middle of a load,
// restart it on the same state, and check that every delivery answered 200 before the kill is
// processed exactly once within RECOVERY_LIMIT_S of the restart, with no manual step and no
// setting: the env file holds only secrets, as a user's own .dev.vars does (local queues die
// with the runtime; the lease alarms and the sweeper's heartbeat alarm are persisted and
// recover the rest).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { LocalInbox, SECRETS } from "./harness.mjs";
import { killUnderLoadAndRestart } from "./kill-restart.mjs";

const inbox = new LocalInbox();
after(() => inbox.stop());

describe("kill and restart", { timeout: 420_000 }, () => {
  it("processes every delivery answered 200 before a SIGKILL exactly once after a restart", async () => {
    await inbox.start();
    const envFile = readFileSync(join(inbox.stateDir, "e2e.env"), "utf8");
    assert.deepEqual(envFile.split("\n").map((line) => line.split("=")[0]).sort(), Object.keys(SECRETS).sort(), "the env file holds only secrets");
    // Ids quoted inline: D1 through wrangler d1 execute binds no parameters.
    const quoted = (ids) => ids.map((id) => `'${id}'`).join(",");
    const answeredBeforeKill = await killUnderLoadAndRestart(inbox, {
      prefix: "evt_restart_",
      doneCount: async (ids) => (await inbox.sql(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done' AND id IN (${quoted(ids)})`))[0].n,
    });
    const list = quoted(answeredBeforeKill);

    const [payments] = await inbox.sql(`SELECT COUNT(*) AS n, COUNT(DISTINCT delivery_id) AS distinct_ids FROM payments WHERE delivery_id IN (${list})`);
    assert.deepEqual(payments, { n: answeredBeforeKill.length, distinct_ids: answeredBeforeKill.length });
    const [leftovers] = await inbox.sql("SELECT COUNT(*) AS n FROM deliveries WHERE status IN ('received', 'processing', 'failed')");
    assert.equal(leftovers.n, 0, "nothing stored is left behind, including requests cut off by the kill");
  });
});
