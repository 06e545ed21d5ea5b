// Black-box: `webhook-inbox send` against the real local runtime, one source per provider. The
// inbox's own verifiers (tested against the providers' SDKs and vectors in test/providers) are the
// judge here: every sample must be answered "stored", a resend of the same id "duplicate".
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LocalInbox, ROOT } from "./harness.mjs";

const CLI = join(ROOT, "src", "cli", "webhook-inbox.mjs");
const inbox = new LocalInbox({ vars: { GITLAB_WEBHOOK_SECRET: "e2e-gitlab-token" } });
before(() => inbox.start());
after(() => inbox.stop());

/** Runs `webhook-inbox send …` with the inbox's secrets in the environment (as exported by a user). */
function send(args) {
  return new Promise((resolve) => {
    // cwd elsewhere: the secrets come from the environment, not from the checkout's .dev.vars.
    const env = { ...process.env, ...inbox.vars, INBOX_URL: inbox.url };
    execFile(process.execPath, [CLI, "send", ...args, "--json"], { env, cwd: mkdtempSync(join(tmpdir(), "send-")), timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code : 0, json: stdout ? JSON.parse(stdout) : null, stderr }),
    );
  });
}

describe("webhook-inbox send against wrangler dev", { timeout: 180_000 }, () => {
  for (const source of ["stripe", "github", "shopify", "slack", "standard", "svix", "gitlab", "twilio"]) {
    it(`sends a ${source} sample the inbox verifies and stores`, async () => {
      const result = await send([source]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.json.status, "stored");
      const row = await inbox.admin(`/admin/deliveries/${source}/${encodeURIComponent(result.json.id)}`);
      assert.equal(row.status, 200);
      assert.equal(row.json.source, source);
    });
  }

  it("a second send with the same --id is recognised as a duplicate", async () => {
    assert.equal((await send(["stripe", "--id", "evt_send_twice"])).json.status, "stored");
    assert.equal((await send(["stripe", "--id", "evt_send_twice"])).json.status, "duplicate");
    assert.equal((await send(["github", "--id", "gh-twice"])).json.status, "stored");
  });
});
