// A real D1 failure: the table is gone (this file has its own isolated storage).
import { env, exports } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { standardRequest } from "../helpers/signers";

beforeAll(async () => {
  await env.DB.exec("DROP TABLE deliveries");
});

it("answers 503 store_unavailable when the deliveries table is missing", async () => {
  const response = await exports.default.fetch(standardRequest("{}"));
  expect(response.status).toBe(503);
  expect(await response.json()).toEqual({ error: "store_unavailable", message: "the delivery could not be stored; retry later" });
});
