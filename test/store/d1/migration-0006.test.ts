/**
 * migrations/0006 on a database of before it: rows of the old rowid table are copied into the
 * WITHOUT ROWID one, and a run in progress, counted when it started under the old rules, is
 * uncounted (runs count when they end from now on). Each test file has a D1 of its own, so this one
 * rebuilds the old schema in its own.
 */
import { env } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { markDone } from "../../../src/store/d1/lifecycle";

const queriesOf = (prefix: string) => env.TEST_MIGRATIONS.find((migration) => migration.name.startsWith(prefix))!.queries;

beforeAll(async () => {
  // Back to the schema of before 0006: deliveries as 0001, 0004 and 0005 left it.
  await env.DB.batch([env.DB.prepare("DROP TABLE deliveries"), env.DB.prepare("DROP TABLE inbox_marks")]);
  for (const prefix of ["0001_", "0004_", "0005_"]) for (const query of queriesOf(prefix)) await env.DB.prepare(query).run();
  const row = (id: string, status: string, attempts: number, leaseToken: number | null) =>
    env.DB.prepare(
      `INSERT INTO deliveries (source, id, event_type, status, attempts, body, received_at, updated_at, lease_token)
       VALUES ('old', ?1, 'test.event', ?2, ?3, x'7b7d', '2026-12-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z', ?4)`,
    ).bind(id, status, attempts, leaseToken);
  await env.DB.batch([row("waiting", "received", 1, 5), row("in-progress", "processing", 2, 7), row("finished", "done", 1, 3), row("given-up", "failed", 5, 9)]);
  for (const query of queriesOf("0006_")) await env.DB.prepare(query).run();
  // And the columns of later migrations that the statements under test write (the tables they
  // add are there already: the setup applied every migration before this rebuilt the old schema).
  for (const query of queriesOf("0008_").filter((text) => /\b(ALTER TABLE deliveries|CREATE INDEX)\b/.test(text))) await env.DB.prepare(query).run();
  for (const query of queriesOf("0012_").filter((text) => /\bALTER TABLE deliveries\b/.test(text))) await env.DB.prepare(query).run();
});

it("copies every row, uncounting only the run in progress", async () => {
  const { results } = await env.DB.prepare("SELECT id, status, attempts, lease_token, body FROM deliveries ORDER BY id").all();
  expect(results.map(({ id, status, attempts, lease_token }) => ({ id, status, attempts, lease_token }))).toEqual([
    { id: "finished", status: "done", attempts: 1, lease_token: 3 },
    { id: "given-up", status: "failed", attempts: 5, lease_token: 9 },
    { id: "in-progress", status: "processing", attempts: 1, lease_token: 7 },
    { id: "waiting", status: "received", attempts: 1, lease_token: 5 },
  ]);
  expect(results.every((row) => row.body !== null)).toBe(true);
});

it("leaves a WITHOUT ROWID table whose fence takes the run in progress's result once, counted then", async () => {
  await expect(env.DB.prepare("SELECT rowid FROM deliveries").all()).rejects.toThrow(/no such column: rowid/);
  const ref = { source: "old", id: "in-progress" };
  await expect(markDone(env.DB, ref, 6, true, Date.now()).run()).rejects.toThrow(/lease_lost/);
  expect((await markDone(env.DB, ref, 7, true, Date.now()).run()).meta.changes).toBe(1);
  expect(await env.DB.prepare("SELECT status, attempts FROM deliveries WHERE id = 'in-progress'").first()).toEqual({ status: "done", attempts: 2 });
  await expect(markDone(env.DB, ref, 7, true, Date.now()).run()).rejects.toThrow(/lease_lost/);
});
