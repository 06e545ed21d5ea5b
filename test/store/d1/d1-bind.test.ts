// How D1 binds a handler's portable values (store/d1/index.ts): numbers are doubles there, so a bigint
// beyond 2^53 is refused for good rather than stored rounded. Postgres binds it exactly
// (test/store/postgres/lifecycle.test.ts).
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../../src/sql";
import { d1Store } from "../../../src/store/d1";
import { createEffectTables, storeDelivery } from "../../helpers/processing";

beforeAll(async () => {
  await createEffectTables();
  await env.DB.exec("CREATE TABLE IF NOT EXISTS big_numbers (delivery_id TEXT PRIMARY KEY, n INTEGER NOT NULL)");
});

const store = d1Store(env.DB);
const TOKEN = 1_000;

async function claimed(id: string) {
  const ref = { source: "bind", id };
  await storeDelivery(ref);
  expect((await store.claim(ref, TOKEN, null, Date.now())).kind).toBe("run");
  return ref;
}

describe("a bigint effect value on D1", () => {
  it("binds one within 2^53 exactly", async () => {
    const ref = await claimed("safe");
    const n = 2n ** 53n - 1n;
    const result = await store.commitDone(ref, TOKEN, { handled: true, effects: [sql`INSERT INTO big_numbers (delivery_id, n) VALUES (${ref.id}, ${n})`] }, Date.now());
    expect(result).toEqual({ kind: "committed" });
    const row = await env.DB.prepare("SELECT CAST(n AS TEXT) AS n FROM big_numbers WHERE delivery_id = ?").bind(ref.id).first<{ n: string }>();
    expect(row?.n).toBe(n.toString());
  });

  it("refuses one beyond 2^53 for good, committing nothing, rather than store it rounded", async () => {
    const ref = await claimed("unsafe");
    const n = 2n ** 60n + 1n;
    const result = await store.commitDone(ref, TOKEN, { handled: true, effects: [sql`INSERT INTO big_numbers (delivery_id, n) VALUES (${ref.id}, ${n})`] }, Date.now());
    expect(result).toMatchObject({ kind: "refused", permanent: true });
    expect(result.kind === "refused" && String(result.error)).toMatch(/beyond what D1 binds exactly/);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM big_numbers WHERE delivery_id = ?").bind(ref.id).first("n")).toBe(0);
    expect(await env.DB.prepare("SELECT status FROM deliveries WHERE source = ? AND id = ?").bind(ref.source, ref.id).first("status")).toBe("received");
  });
});
