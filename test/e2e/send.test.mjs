// Black-box: `webhook-inbox send` against the real local runtime, one source per provider, and the
// curl + openssl recipes of docs/providers.md ("Sending a test delivery"), run as written but for the
// port. The inbox's own verifiers (tested against the providers' SDKs and vectors in test/providers)
// are the judge here: every sample must be answered "stored", a resend of the same id "duplicate". The
// inbox runs with .dev.vars.example's secrets, which the recipes use.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LocalInbox, ROOT } from "./harness.mjs";

const CLI = join(ROOT, "src", "cli", "webhook-inbox.mjs");
/** .dev.vars.example's values, as `npm run dev` would run with them. */
const EXAMPLE = Object.fromEntries(
  readFileSync(join(ROOT, ".dev.vars.example"), "utf8")
    .split("\n")
    .filter((line) => /^[A-Z_]+=/.test(line))
    .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
);
const inbox = new LocalInbox({ vars: EXAMPLE });
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

  it("the curl + openssl recipes of docs/providers.md are answered stored, then duplicate", async () => {
    const page = readFileSync(join(ROOT, "docs", "providers.md"), "utf8");
    const section = page.slice(page.indexOf("## Sending a test delivery"));
    const recipes = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]).filter((text) => text.includes("openssl"));
    assert.equal(recipes.length, 2, "Stripe's and GitHub's");
    for (const recipe of recipes) {
      const script = recipe.replaceAll("http://localhost:8787", inbox.url);
      const answers = [];
      for (let round = 0; round < 2; round++) {
        answers.push(
          await new Promise((resolve, reject) =>
            execFile("/bin/sh", ["-c", script], { timeout: 30_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout).status))),
          ),
        );
      }
      assert.deepEqual(answers, ["stored", "duplicate"], recipe);
    }
  });
});
