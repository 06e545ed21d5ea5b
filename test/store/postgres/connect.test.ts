/**
 * The chain the Postgres store stands on, proven inside workerd: the Hyperdrive binding of
 * wrangler.toml's `postgres` environment, its local connection string (the server of
 * test/setup/postgres.mjs), and the `pg` driver under `nodejs_compat`.
 */
import { env } from "cloudflare:workers";
import { Client } from "pg";
import { describe, expect, it } from "vitest";

/**
 * A client of its own per test, ended by the test: never one kept across requests.
 *
 * Runtime fact: after `end()`, pg-cloudflare's pending socket read fails ("This socket has been
 * closed.", no error code, so pg does not recognise it as its own teardown) and the client emits
 * it as an `error` event; without a listener that is an unhandled rejection. Errors before `end()`
 * are real and fail the test.
 */
async function withClient<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: env.HYPERDRIVE!.connectionString });
  const errors: unknown[] = [];
  let ending = false;
  client.on("error", (error) => {
    if (!ending) errors.push(error);
  });
  await client.connect();
  try {
    return await work(client);
  } finally {
    ending = true;
    await client.end();
    expect(errors).toEqual([]);
  }
}

describe("Postgres through the Hyperdrive binding", () => {
  it("gives the Worker a connection string to the local server's database, without TLS", () => {
    // Locally: postgres://postgres:…@<hex>.hyperdrive.local:5432/webhook_inbox?sslmode=disable;
    // workerd sends that host's sockets to the server's real port.
    const url = new URL(env.HYPERDRIVE!.connectionString);
    expect(url.protocol).toMatch(/^postgres(ql)?:$/);
    expect(url.username).toBe("postgres");
    expect(url.pathname).toBe("/webhook_inbox");
    expect(url.searchParams.get("sslmode")).toBe("disable");
  });

  it("connects with pg and answers SELECT 1", async () => {
    const { rows } = await withClient((client) => client.query<{ one: number }>("SELECT 1 AS one"));
    expect(rows).toEqual([{ one: 1 }]);
  });

  it("binds parameters, and a bytea parameter comes back byte for byte", async () => {
    const bytes = new Uint8Array([0, 1, 127, 128, 255, 0x5c, 0x27, 0x22]);
    const { rows } = await withClient((client) =>
      client.query<{ echoed: Uint8Array; length: number; label: string }>(
        "SELECT $1::bytea AS echoed, length($1::bytea) AS length, $2::text AS label",
        [bytes, "stripe/evt_1"],
      ),
    );
    expect(rows[0]!.length).toBe(bytes.length);
    expect(rows[0]!.label).toBe("stripe/evt_1");
    expect(new Uint8Array(rows[0]!.echoed)).toEqual(bytes);
  });

  it("reaches the migrated database", async () => {
    const { rows } = await withClient((client) => client.query<{ migrations: string }>("SELECT count(*) AS migrations FROM inbox_migrations"));
    expect(Number(rows[0]!.migrations)).toBeGreaterThan(0);
  });
});
