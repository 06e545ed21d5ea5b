// A real failure of the store: the deliveries table is gone (this file has its own D1, or under
// npm run test:postgres its own Postgres schema).
import { exports } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { sql } from "../../src/sql";
import { standardRequest } from "../helpers/signers";
import { exec } from "../helpers/store-db";

beforeAll(async () => {
  // Its runs first: on Postgres they hold a foreign key to it (migrations-postgres/0005).
  await exec(sql`DROP TABLE subscriber_runs`, sql`DROP TABLE deliveries`);
});

it("answers 503 store_unavailable when the deliveries table is missing", async () => {
  const response = await exports.default.fetch(standardRequest("{}"));
  expect(response.status).toBe(503);
  expect(await response.json()).toEqual({ error: "store_unavailable", message: "the delivery could not be stored; retry later" });
});
