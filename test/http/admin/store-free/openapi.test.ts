import { describe, expect, it } from "vitest";
import { MAX_BULK_REPLAY_LIMIT, MAX_LIST_LIMIT } from "../../../../src/http/admin/schemas";
import { admin } from "../client";

describe("GET /admin/openapi.json", () => {
  it("is behind the admin token like every admin route", async () => {
    expect((await admin("/openapi.json", { token: null })).status).toBe(401);
  });

  it("documents every admin route with its method", async () => {
    const { status, json } = await admin("/openapi.json");
    expect(status).toBe(200);
    expect(json.openapi).toBe("3.1.0");
    const operations = Object.entries(json.paths as Record<string, object>).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual([
      "GET /deliveries",
      "GET /deliveries/{source}/{id}",
      "GET /incidents",
      "GET /incidents/{id}",
      "GET /metrics",
      "GET /sources",
      "GET /stats",
      "POST /deliveries/{source}/{id}/replay",
      "POST /replay",
    ]);
    expect(json.servers).toEqual([{ url: "https://inbox.example.com/admin" }]);
  });

  it("takes the listing's limits from the schema the route validates with", async () => {
    const { json } = await admin("/openapi.json");
    const limit = json.paths["/deliveries"].get.parameters.find((parameter: { name: string }) => parameter.name === "limit");
    expect(limit.schema).toMatchObject({ maximum: MAX_LIST_LIMIT, minimum: 1, default: 50 });
    expect(json.components.schemas.BulkReplayRequest.properties.limit).toMatchObject({ maximum: MAX_BULK_REPLAY_LIMIT });
  });

  it("documents both codes a replay is refused with, conflict and body_pruned", async () => {
    const { json } = await admin("/openapi.json");
    const refused = json.paths["/deliveries/{source}/{id}/replay"].post.responses["409"];
    expect(refused.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ReplayRefused" });
    expect(json.components.schemas.ReplayRefused.properties.error.enum).toEqual(["conflict", "body_pruned"]);
  });

  it("declares bearer authentication and the error shape on each route", async () => {
    const { json } = await admin("/openapi.json");
    expect(json.components.securitySchemes.AdminToken).toMatchObject({ type: "http", scheme: "bearer" });
    const stats = json.paths["/stats"].get;
    expect(stats.security).toEqual([{ AdminToken: [] }]);
    expect(stats.responses["401"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
  });
});
