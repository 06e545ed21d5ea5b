/**
 * Tests run inside the Workers runtime (workerd) with @cloudflare/vitest-plugin, the maintained
 * name of @cloudflare/vitest-pool-workers: real D1, queues, Durable Objects and alarms.
 */
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL("..", import.meta.url));

export default defineConfig(async () => ({
  root,
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations(`${root}/migrations`),
          // Test-only secrets (the published Standard Webhooks vector's key, among others).
          STANDARD_WEBHOOK_SECRET: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
          SVIX_WEBHOOK_SECRET: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
          ADMIN_TOKEN: "test-admin-token",
        },
      },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/e2e/**"],
    setupFiles: ["./test/setup/apply-migrations.ts"],
  },
}));
