// The receiver's checks run in a documented order (docs/architecture.md, "How it works"): a request that fails
// several of them at once is answered by the first, so a provider's dashboard shows the cause
// that has to be fixed first.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { app } from "../../src/http/app";
import { BASE_URL, githubSignature, unique } from "../helpers/provider-signers";

/** Each check, first to last, with the answer of a request that fails it first. */
const CHECKS = [
  ["unknown source", 404, "unknown_source"],
  ["method other than POST", 405, "method_not_allowed"],
  ["body over MAX_BODY_BYTES", 413, "payload_too_large"],
  ["no secret configured", 503, "source_not_configured"],
  ["bad signature", 401, "invalid_signature"],
  ["no delivery id", 400, "missing_delivery_id"],
] as const;

type Fault = (typeof CHECKS)[number][0];

/** A GitHub delivery (its id is a header of its own) that fails exactly `faults`. */
async function craft(faults: ReadonlySet<Fault>): Promise<{ status: number; error: unknown }> {
  const body = JSON.stringify({ padding: "x".repeat(48), nonce: unique("") }); // > 32 bytes
  const headers: Record<string, string> = {
    "x-hub-signature-256": await githubSignature(body, faults.has("bad signature") ? "not-our-secret" : env.GITHUB_WEBHOOK_SECRET),
    "x-github-event": "push",
  };
  if (!faults.has("no delivery id")) headers["x-github-delivery"] = unique("");
  const source = faults.has("unknown source") ? "nowhere" : "github";
  const method = faults.has("method other than POST") ? "PUT" : "POST";
  const overrides: Record<string, unknown> = {};
  if (faults.has("body over MAX_BODY_BYTES")) overrides.MAX_BODY_BYTES = "32";
  if (faults.has("no secret configured")) Object.assign(overrides, { GITHUB_WEBHOOK_SECRET: undefined, GITHUB_WEBHOOK_SECRET_PREVIOUS: undefined });

  const ctx = createExecutionContext();
  const response = await app.fetch(new Request(`${BASE_URL}/webhooks/${source}`, { method, headers, body }), { ...env, ...overrides } as Env, ctx);
  await waitOnExecutionContext(ctx);
  const json = (await response.json()) as Record<string, unknown>;
  return { status: response.status, error: json.error ?? json.status };
}

it("answers a request that fails several checks with the first one: 404, 405, 413, 503, 401, 400, in that order", async () => {
  const answers = [];
  // Request k fails check k and every check after it; the last fails none and is stored.
  for (let first = 0; first <= CHECKS.length; first++) {
    answers.push(await craft(new Set(CHECKS.slice(first).map(([fault]) => fault))));
  }
  expect(answers).toEqual([...CHECKS.map(([, status, error]) => ({ status, error })), { status: 200, error: "stored" }]);
});
