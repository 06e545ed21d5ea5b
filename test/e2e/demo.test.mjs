// Black-box: `npm run demo` (src/cli/demo.mjs) against the real local runtime.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LocalInbox, ROOT, SECRETS } from "./harness.mjs";

const inbox = new LocalInbox();
before(() => inbox.start());
after(() => inbox.stop());

function demo(env) {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, "src", "cli", "demo.mjs")], { env: { ...process.env, ...env }, timeout: 90_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code : 0, stdout, stderr }),
    );
  });
}

describe("npm run demo against wrangler dev", { timeout: 180_000 }, () => {
  it("prints stored/duplicate per send, each payment's outcome, and the settled counts", async () => {
    const result = await demo({ INBOX_URL: inbox.url, STRIPE_WEBHOOK_SECRET: SECRETS.STRIPE_WEBHOOK_SECRET, INBOX_ADMIN_TOKEN: SECRETS.ADMIN_TOKEN });
    assert.equal(result.code, 0, result.stderr);
    const sends = [...result.stdout.matchAll(/^evt_\w+_(\d+): (\w+)$/gm)].map((match) => `${match[1]} ${match[2]}`);
    assert.deepEqual(sends, ["100 stored", "100 duplicate", "101 stored", "100 duplicate", "102 stored"]);
    assert.match(result.stdout, /^evt_\w+_100 done$/m);
    assert.match(result.stdout, /^evt_\w+_101 done$/m);
    assert.match(result.stdout, /^evt_\w+_102 failed: PermanentError: .*data\.object\.amount$/m);
    assert.match(result.stdout, /^done\s+2$/m);
    assert.match(result.stdout, /^failed\s+1$/m);
    assert.match(result.stdout, /^received\s+0$/m);
    const [payments] = await inbox.sql("SELECT COUNT(*) AS n, SUM(amount) AS total FROM payments");
    assert.deepEqual(payments, { n: 2, total: 2_499 + 1_250 });
  });

  it("exits 1 with one line when the inbox is not running", async () => {
    const result = await demo({ INBOX_URL: "http://127.0.0.1:9", STRIPE_WEBHOOK_SECRET: "whsec_x", INBOX_ADMIN_TOKEN: "x" });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^demo: cannot reach the inbox at http:\/\/127\.0\.0\.1:9\/webhooks\/stripe: is `npm run dev` running\? \(or set INBOX_URL\)\n$/);
  });

  it("explains a secret that differs from the inbox's", async () => {
    const result = await demo({ INBOX_URL: inbox.url, STRIPE_WEBHOOK_SECRET: "whsec_not_the_inbox_secret", INBOX_ADMIN_TOKEN: SECRETS.ADMIN_TOKEN });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /refused the signature/);
  });
});
