/**
 * Tests run inside the Workers runtime (workerd) with @cloudflare/vitest-plugin, the maintained
 * name of @cloudflare/vitest-pool-workers: real D1, queues, Durable Objects and alarms.
 */
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Each `<NAME>_FORWARD_*` var of a developer's own environment, set to "" (an empty value counts as
 * unset). The pool reads .dev.vars (or, without one, .env and .env.local) through wrangler, and
 * offers no switch to stop it: a forward URL kept there for `npm run dev` (docs/forwarding.md)
 * would otherwise send the tests' deliveries to the developer's backend and fail them. Tests that
 * forward set their own vars (test/helpers/forward-backend.ts).
 */
function forwardVarsUnset(): Record<string, string> {
  const names = new Set(Object.keys(process.env));
  for (const file of [".dev.vars", ".env", ".env.local"]) {
    const path = `${root}/${file}`;
    if (existsSync(path)) for (const name of Object.keys(parseEnv(readFileSync(path, "utf8")))) names.add(name);
  }
  return Object.fromEntries([...names].filter((name) => name.includes("_FORWARD_")).map((name) => [name, ""]));
}

/**
 * The Workers pool's options: wrangler.toml's bindings, with the tests' own. Shared with the
 * Postgres suite's config (test/vitest.postgres.config.ts), which adds the Hyperdrive binding.
 */
export async function workersPoolOptions() {
  return {
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: {
      // Unit tests drive the consumer with createMessageBatch; keep the runtime's own consumer of
      // the real queue from racing them (messages sent by alarms and the sweeper wait here).
      queueConsumers: { "webhook-deliveries": { maxBatchSize: 100, maxBatchTimeout: 60 } },
      bindings: {
        TEST_MIGRATIONS: await readD1Migrations(`${root}/migrations`),
        ...forwardVarsUnset(),
        // Set here, not left to a developer's .dev.vars: the tests must not depend on it.
        SWEEP_INTERVAL_SECONDS: "30",
        // Test-only secrets (the published Standard Webhooks vector's key, among others).
        STANDARD_WEBHOOK_SECRET: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        SVIX_WEBHOOK_SECRET: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        // Each with a _PREVIOUS: the secret being rotated out, which verifies too while it is set.
        STRIPE_WEBHOOK_SECRET: "whsec_test_secret",
        STRIPE_WEBHOOK_SECRET_PREVIOUS: "whsec_test_rotated",
        GITHUB_WEBHOOK_SECRET: "github-test-secret",
        GITHUB_WEBHOOK_SECRET_PREVIOUS: "github-test-rotated",
        SHOPIFY_WEBHOOK_SECRET: "shopify-test-secret",
        SHOPIFY_WEBHOOK_SECRET_PREVIOUS: "shopify-test-rotated",
        // Slack's published example signing secret, and twilio-node's test auth token.
        SLACK_WEBHOOK_SECRET: "8f742231b10e8888abcd99yyyzzz85a5",
        SLACK_WEBHOOK_SECRET_PREVIOUS: "slack-test-rotated",
        TWILIO_WEBHOOK_SECRET: "12345",
        TWILIO_WEBHOOK_SECRET_PREVIOUS: "twilio-test-rotated",
        GITLAB_WEBHOOK_SECRET: "gitlab-test-token",
        GITLAB_WEBHOOK_SECRET_PREVIOUS: "gitlab-test-rotated",
        ADMIN_TOKEN: "test-admin-token",
      },
    },
  };
}

export default defineConfig(async () => ({
  root,
  plugins: [cloudflareTest(await workersPoolOptions())],
  test: {
    // npm run bench sets BENCH_METER to run its operation counter (bench/meter.spec.ts) instead.
    include: process.env.BENCH_METER ? ["bench/meter.spec.ts"] : ["test/**/*.test.ts"],
    // test/store/postgres needs a Postgres server: npm run test:postgres (test/vitest.postgres.config.ts).
    exclude: ["test/e2e/**", "test/store/postgres/**"],
    setupFiles: ["./test/setup/apply-migrations.ts"],
    // A real HTTP backend for the forwarding tests, in Node; its URL reaches them by inject().
    globalSetup: ["./test/setup/forward-backend.mjs"],
  },
}));
