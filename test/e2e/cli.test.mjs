// Black-box: the `webhook-inbox` CLI, run as a child process against the real local runtime.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort, LocalInbox, ROOT, waitFor } from "./harness.mjs";
import { paymentEvent, standardDelivery, stripeDelivery } from "./signers.mjs";

const CLI = join(ROOT, "src", "cli", "webhook-inbox.mjs");
const inbox = new LocalInbox();

/**
 * Runs the CLI; resolves with its exit code and output, whatever the exit code.
 * @param {string[]} args
 * @param {Record<string, string>} [env]
 */
function cli(args, env = {}) {
  return new Promise((resolve) => {
    const childEnv = { ...process.env, INBOX_URL: inbox.url, INBOX_ADMIN_TOKEN: inbox.vars.ADMIN_TOKEN, ...env };
    execFile(process.execPath, [CLI, ...args], { env: childEnv, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

async function cliJson(args) {
  const result = await cli([...args, "--json"]);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

async function delivery(source, id) {
  return cliJson(["show", source, id]);
}

/** The same payment three times, a second payment, a broken one, and one no handler matches. */
const SENDS = [
  stripeDelivery(paymentEvent("evt_cli_pay1", 1_000)),
  stripeDelivery(paymentEvent("evt_cli_pay1", 1_000)),
  stripeDelivery(paymentEvent("evt_cli_pay1", 1_000)),
  stripeDelivery(paymentEvent("evt_cli_pay2", 2_500)),
  stripeDelivery(paymentEvent("evt_cli_broken", undefined)),
  standardDelivery("msg_cli_unhandled"),
];

before(async () => {
  await inbox.start();
  const replies = [];
  for (const send of SENDS) replies.push(await inbox.post(send.path, send.body, send.headers));
  assert.deepEqual(
    replies.map((reply) => reply.json?.status),
    ["stored", "duplicate", "duplicate", "stored", "stored", "stored"],
  );
  const settled = await waitFor(async () => {
    const stats = (await inbox.admin("/admin/stats")).json;
    return stats?.counts.done === 3 && stats.counts.failed === 1 ? stats : null;
  }, { timeoutMs: 60_000, intervalMs: 500 });
  assert.ok(settled, "the deliveries settle");
  // The broken payment's dead letter is recorded by the dead-letter consumer a few seconds after it
  // failed; wait for it, so that it cannot land on top of the replay below.
  assert.ok(await waitFor(() => inbox.output.includes("dead letter: stripe/evt_cli_broken"), { timeoutMs: 30_000, intervalMs: 250 }));
});
after(() => inbox.stop());

describe("the webhook-inbox CLI against wrangler dev", { timeout: 180_000 }, () => {
  it("status prints the counts by status, unhandled ones and sources, and exits 0", async () => {
    const result = await cli(["status"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^done\s+3 \(1 unhandled\)$/m);
    assert.match(result.stdout, /^failed\s+1$/m);
    assert.match(result.stdout, /^received\s+0$/m);
    assert.match(result.stdout, /^oldest waiting: none$/m);
    assert.match(result.stdout, /^stripe\s+0\s+0\s+2\s+1\s+0$/m);
    assert.match(result.stdout, /^standard\s+0\s+0\s+1\s+0\s+0$/m);
  });

  it("sources prints each configured source's security grade, and leaves out the unconfigured ones", async () => {
    const result = await cli(["sources"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^stripe\s+stripe\s+strong\s+-\s+set\s+body `id`/m);
    assert.match(result.stdout, /^github\s+github\s+fair\s+no timestamp, id unsigned\s+set\s/m);
    // GitLab has no secret in this runtime: listed only with --all, as weak.
    assert.doesNotMatch(result.stdout, /^gitlab\s/m);
    assert.match((await cli(["sources", "--all"])).stdout, /^gitlab\s+gitlab\s+weak\s+body unsigned, no timestamp, id unsigned, secret in clear\s+not set\s/m);
    assert.match(result.stdout, /docs\/providers\.md, "Security grade"/);
  });

  it("status --json prints the API's counts, matching what was sent", async () => {
    const stats = await cliJson(["status"]);
    assert.deepEqual(stats.counts, { received: 0, processing: 0, done: 3, failed: 1, filtered: 0 });
    assert.equal(stats.unhandled, 1);
    assert.equal(stats.oldestWaitingSeconds, null);
  });

  it("list --status failed shows the broken payment with its error", async () => {
    const result = await cli(["list", "--status", "failed"]);
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trim().split("\n");
    assert.equal(lines.length, 2, result.stdout);
    assert.match(lines[0], /^RECEIVED\s+SOURCE\s+ID\s+TYPE\s+STATUS\s+ATTEMPTS\s+ERROR$/);
    assert.match(lines[1], /stripe\s+evt_cli_broken\s+payment_intent\.succeeded\s+failed\s+1\s+PermanentError: payment_intent\.succeeded has no/);
    const page = await cliJson(["list", "--status", "failed"]);
    assert.deepEqual(page.deliveries.map((row) => [row.id, row.attempts]), [["evt_cli_broken", 1]]);
    assert.match(page.deliveries[0].error, /data\.object\.amount/);
  });

  it("list pages with --limit and the cursor it prints", async () => {
    const first = await cliJson(["list", "--limit", "2"]);
    assert.equal(first.deliveries.length, 2);
    const second = await cliJson(["list", "--limit", "2", "--cursor", first.nextCursor]);
    const ids = [...first.deliveries, ...second.deliveries].map((row) => row.id);
    assert.equal(new Set(ids).size, 4);
    assert.equal(second.nextCursor, null);
  });

  it("show prints a delivery's fields and its body", async () => {
    const result = await cli(["show", "stripe", "evt_cli_broken"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^status\s+failed$/m);
    assert.match(result.stdout, /^error\s+PermanentError: payment_intent\.succeeded has no integer data\.object\.amount$/m);
    assert.match(result.stdout, /"id": "evt_cli_broken"/);
  });

  it("show of an unknown delivery exits 1 with one line on stderr", async () => {
    const result = await cli(["show", "stripe", "evt_cli_nope"]);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, "");
    assert.equal(result.stderr, "webhook-inbox: no delivery stripe/evt_cli_nope (404 not_found)\n");
  });

  it("replay of a done delivery without --force exits 1 and says to pass --force", async () => {
    const result = await cli(["replay", "stripe", "evt_cli_pay2"]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^webhook-inbox: delivery stripe\/evt_cli_pay2 is done; pass --force to run its handler again \(409 conflict\)\n$/);
  });

  it("replay puts the failed delivery back and it is processed again from attempt 1", async () => {
    const before = await delivery("stripe", "evt_cli_broken");
    const result = await cli(["replay", "stripe", "evt_cli_broken"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "replayed stripe/evt_cli_broken: back to received, attempts reset, enqueued\n");
    // Still broken, so it fails again: on a fresh attempt 1, with a later update than before.
    const again = await waitFor(async () => {
      const row = await delivery("stripe", "evt_cli_broken");
      return row.status === "failed" && row.updatedAt > before.updatedAt ? row : null;
    }, { timeoutMs: 30_000, intervalMs: 250 });
    assert.ok(again, "the replayed delivery was processed again");
    assert.equal(again.attempts, 1);
    assert.match(again.error, /data\.object\.amount/);
  });

  it("replay --force runs a done payment again, and its keyed payment row stays the one it was", async () => {
    const before = await delivery("stripe", "evt_cli_pay2");
    const paymentSql = "SELECT delivery_id, amount, currency, created_at FROM payments WHERE delivery_id = 'evt_cli_pay2'";
    const paymentsBefore = await inbox.sql(paymentSql);
    assert.equal(paymentsBefore.length, 1);
    const result = await cli(["replay", "stripe", "evt_cli_pay2", "--force"]);
    assert.equal(result.code, 0, result.stderr);
    // It ends in the state it started in, so only a later update shows that it ran: done again
    // after the replay moved it to received.
    const again = await waitFor(async () => {
      const row = await delivery("stripe", "evt_cli_pay2");
      return row.status === "done" && row.updatedAt > before.updatedAt ? row : null;
    }, { timeoutMs: 30_000, intervalMs: 250 });
    assert.ok(again, "the forced replay ran the delivery again");
    assert.equal(again.attempts, 1);
    assert.equal(again.handled, true);
    // The handler's INSERT OR IGNORE is keyed by the delivery: the second run added nothing.
    assert.deepEqual(await inbox.sql(paymentSql), paymentsBefore);
  });

  it("replay --failed --source stripe replays every failed stripe delivery", async () => {
    const result = await cli(["replay", "--failed", "--source", "stripe"]);
    assert.equal(result.code, 0, result.stderr);
    // Known at once: what was put back; not how its run ends (it may fail again a second later).
    assert.equal(result.stdout, "replayed 1 failed delivery of stripe: back on the queue, results pending (webhook-inbox list --status failed shows any that fail again)\n");
  });

  it("a wrong token exits 1 with one line naming the 401", async () => {
    const result = await cli(["status"], { INBOX_ADMIN_TOKEN: "not-the-token" });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, "");
    assert.equal(result.stderr.split("\n").length, 2, "one line");
    assert.match(result.stderr, /^webhook-inbox: the admin token was refused by .* \(401\): check INBOX_ADMIN_TOKEN or --token\n$/);
  });

  it("an unreachable URL exits 1 with one line saying so", async () => {
    const port = await freePort();
    const result = await cli(["status", "--url", `http://127.0.0.1:${port}`]);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `webhook-inbox: cannot reach the inbox at http://127.0.0.1:${port}: connection refused (check INBOX_URL or --url)\n`);
  });
});
