/**
 * The test files that run on both stores: under `npm test` on D1 (with every other file), and under
 * `npm run test:postgres` on Postgres (test/vitest.postgres.config.ts, beside test/postgres/*).
 *
 * A file belongs here when it tests the store's behaviour (through `openStore(env)`, the Worker's
 * routes, the consumer or the sweeper) and reads and writes the database only through
 * test/helpers/store-db.ts. Tests of D1's own workings (query plans, rows-written meters, D1
 * migrations, body chunks, the D1 batcher and group commit, D1 fault wrappers) stay in files of
 * their own, outside this list; a file never skips a test by store.
 */
export const BOTH_STORES: readonly string[] = [
  "test/admin/auth.test.ts",
  "test/admin/deliveries.test.ts",
  "test/admin/metrics.test.ts",
  "test/admin/replay-lease-faults.test.ts",
  "test/admin/replay.test.ts",
  "test/admin/sources.test.ts",
  "test/admin/stats.test.ts",
  "test/forwarding/handlers.test.ts",
  "test/forwarding/limit.test.ts",
  "test/forwarding/outcomes.test.ts",
  "test/forwarding/request-shape.test.ts",
  "test/handlers/payments.test.ts",
  "test/http/config-invalid.test.ts",
  "test/http/content-dedup.test.ts",
  "test/http/nul-ids.test.ts",
  "test/http/receiver-order.test.ts",
  "test/http/receiver.test.ts",
  "test/http/redelivery.test.ts",
  "test/http/store-failure.test.ts",
  "test/processing/commit-faults.test.ts",
  "test/processing/consumer.test.ts",
  "test/processing/dead-letters.test.ts",
  "test/processing/faults.test.ts",
  "test/processing/interleavings.test.ts",
  "test/processing/lease-loss.test.ts",
  "test/processing/order-guard.test.ts",
  "test/processing/poison.test.ts",
  "test/processing/sweeper.test.ts",
  "test/providers/catalogue/batches.test.ts",
  "test/providers/catalogue/certificates.test.ts",
  "test/providers/catalogue/handshakes.test.ts",
  "test/providers/catalogue/hmac.test.ts",
  "test/providers/catalogue/keys.test.ts",
  "test/providers/github.test.ts",
  "test/providers/gitlab.test.ts",
  "test/providers/shopify.test.ts",
  "test/providers/slack.test.ts",
  "test/providers/standard-webhooks.test.ts",
  "test/providers/stripe.test.ts",
  "test/providers/svix.test.ts",
  "test/providers/twilio.test.ts",
  "test/store/body-compression.test.ts",
  "test/store/dashboard-data.test.ts",
  "test/store/duplicates.test.ts",
  "test/store/overview.test.ts",
  "test/store/retention.test.ts",
  "test/ui/deliveries.test.ts",
  "test/ui/listing-window.test.ts",
  "test/ui/overview.test.ts",
  "test/ui/replay.test.ts",
  "test/ui/security.test.ts",
];
