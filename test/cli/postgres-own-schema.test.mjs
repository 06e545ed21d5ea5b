// docs/postgres.md: a database that already has a `deliveries` table of its own gets the
// inbox in a schema of its own, with no change to any SQL, through a role whose search path starts
// there. Checked as written there, on a private Postgres server: the migrations land in that schema,
// the inbox's triggers work there, and the user's own table stays untouched and reachable by name.
// Skipped without Postgres on the machine, except on CI (CI=true), where that fails.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startLocalPostgres } from "../../src/cli/lib/local-postgres.mjs";
import { skipWithoutPostgres } from "../helpers/postgres-available.mjs";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "../../src/cli/lib/postgres-migrations.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const skip = skipWithoutPostgres;

async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe("the inbox in a schema of its own", { skip, timeout: 120_000 }, () => {
  it("migrates into the role's schema beside a deliveries table of the user's, and the fence and counts work there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-own-schema-"));
    const server = await startLocalPostgres({ dir, durable: false });
    try {
      const inboxUrl = new URL(server.url);
      inboxUrl.username = "inbox";
      inboxUrl.password = "inbox-password";
      await withClient(server.url, async (admin) => {
        await admin.query("CREATE TABLE deliveries (order_id integer PRIMARY KEY, address text)");
        // docs/postgres.md's statements, as written there.
        await admin.query("CREATE ROLE inbox LOGIN PASSWORD 'inbox-password'");
        await admin.query("CREATE SCHEMA webhook_inbox AUTHORIZATION inbox");
        await admin.query("ALTER ROLE inbox SET search_path = webhook_inbox, public");
        await admin.query("GRANT USAGE ON SCHEMA public TO inbox");
        await admin.query("GRANT SELECT, INSERT ON public.deliveries TO inbox");
      });

      const { applied } = await applyPostgresMigrations({ databaseUrl: inboxUrl.toString(), dir: join(ROOT, POSTGRES_MIGRATIONS_DIR) });
      assert.ok(applied.includes("0001_inbox.sql"));

      await withClient(server.url, async (admin) => {
        const { rows } = await admin.query(
          "SELECT table_schema || '.' || table_name AS name FROM information_schema.tables WHERE table_name IN ('deliveries', 'inbox_counts', 'inbox_migrations') ORDER BY 1",
        );
        assert.deepEqual(
          rows.map((row) => row.name),
          ["public.deliveries", "webhook_inbox.deliveries", "webhook_inbox.inbox_counts", "webhook_inbox.inbox_migrations"],
        );
      });

      await withClient(inboxUrl.toString(), async (inbox) => {
        const time = "2026-12-04T00:00:00.000Z";
        await inbox.query("INSERT INTO deliveries (source, id, status, received_at, updated_at, lease_token) VALUES ('stripe', 'evt_1', 'processing', $1, $1, 5)", [time]);
        await inbox.query("UPDATE deliveries SET status = 'done', handled = false, commit_token = 5 WHERE source = 'stripe' AND id = 'evt_1'");
        const counts = await inbox.query("SELECT unhandled FROM inbox_counts WHERE source = 'stripe'");
        assert.equal(counts.rows[0].unhandled, "1", "the unhandled-count trigger found its table in the inbox's schema");
        await assert.rejects(
          inbox.query("UPDATE deliveries SET commit_token = 4 WHERE source = 'stripe' AND id = 'evt_1'"),
          /lease_lost/,
          "the fence holds in the inbox's schema",
        );
        // A handler's effect on the user's own table, by schema-qualified name.
        await inbox.query("INSERT INTO public.deliveries (order_id, address) VALUES (1, 'Main St')");
      });

      await withClient(server.url, async (admin) => {
        const { rows } = await admin.query("SELECT order_id, address FROM public.deliveries");
        assert.deepEqual(rows, [{ order_id: 1, address: "Main St" }], "the user's own deliveries table is untouched but for the handler's row");
      });
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
