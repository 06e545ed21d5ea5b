/**
 * The Postgres suite (`npm run test:postgres`): test/store/postgres inside workerd, on a real Postgres.
 *
 * test/setup/postgres.mjs (a globalSetup, which vitest runs before the Workers pool reads its
 * options) starts a private server and migrates it; the pool's options are then a function of its
 * URL (`inject("postgresUrl")`). The Worker runs as wrangler.toml's `postgres` environment, with
 * that URL as the local connection string of its Hyperdrive binding `HYPERDRIVE`, set the way
 * `wrangler dev` takes it (CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE; wrangler
 * refuses the environment without it). The Worker's `env.HYPERDRIVE.connectionString` then names
 * the same user, password and database, and workerd relays the Worker's sockets to the server
 * (no TLS locally: the URL has no sslmode).
 */
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BOTH_STORES_FILES } from "./store-suites.ts";
import { workersPoolOptions } from "./vitest.config.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

export default defineConfig(async () => {
  const shared = await workersPoolOptions();
  return {
    root,
    plugins: [
      cloudflareTest(async ({ inject }) => {
        process.env.CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE = inject<string>("postgresUrl");
        return { ...shared, wrangler: { ...shared.wrangler, environment: "postgres" } };
      }),
    ],
    test: {
      // Postgres's own tests, and the folders that run on both stores (test/store-suites.ts).
      include: ["test/store/postgres/**/*.test.ts", ...BOTH_STORES_FILES],
      // The postgres environment keeps the D1 binding (wrangler.toml says why); migrated as in npm test.
      // Then each file of BOTH_STORES's folders gets a Postgres schema of its own (postgres-schema.ts).
      setupFiles: ["./test/setup/apply-migrations.ts", "./test/setup/postgres-schema.ts"],
      globalSetup: ["./test/setup/postgres.mjs", "./test/setup/forward-backend.mjs"],
      // A limit for the runner, not a time any test asserts: a request's store operation opens a
      // connection of its own (src/store/postgres/client.ts), about 30 ms here with its SCRAM
      // handshake, where a D1 call takes a millisecond; the tests written for D1's pace take longer.
      testTimeout: 30_000,
    },
  };
});
