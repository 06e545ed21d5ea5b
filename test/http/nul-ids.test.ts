// NUL in an id or a filter: Postgres text cannot hold one, so neither store is ever asked to. A
// delivery whose id carries one is refused (400, the provider stops); reads that name one get a 400
// from the admin API, and the dashboard reads past it.
import { describe, expect, it } from "vitest";
import { admin } from "./admin/client";
import { post, stripeSignature, unique } from "../helpers/provider-signers";

describe("NUL characters", () => {
  it("refuses a signed delivery whose id holds NUL with 400 invalid_delivery_id, storing nothing", async () => {
    const id = `${unique("evt_nul_")}\u0000x`;
    const body = JSON.stringify({ id, type: "payment_intent.succeeded", data: { object: {} } });
    const reply = await post("stripe", body, { "stripe-signature": await stripeSignature(body) });
    expect(reply.status).toBe(400);
    expect(reply.json.error).toBe("invalid_delivery_id");
    const lookup = await admin(`/deliveries/stripe/${encodeURIComponent(id.slice(0, -2))}`);
    expect(lookup.status).toBe(404);
  });

  it("refuses a delivery whose id holds half a surrogate pair with 400 invalid_delivery_id, storing nothing", async () => {
    const prefix = unique("evt_half_");
    // JSON can carry a lone surrogate as an escape; Postgres would store U+FFFD instead.
    const body = `{"id":"${prefix}\\ud83d","type":"payment_intent.succeeded","data":{"object":{}}}`;
    expect(JSON.parse(body).id).toBe(`${prefix}\ud83d`);
    const reply = await post("stripe", body, { "stripe-signature": await stripeSignature(body) });
    expect(reply.status).toBe(400);
    expect(reply.json.error).toBe("invalid_delivery_id");
    expect((await admin(`/deliveries/stripe/${encodeURIComponent(`${prefix}\uFFFD`)}`)).status).toBe(404);
  });

  it("answers 400 to an admin lookup or filter that names NUL", async () => {
    expect((await admin(`/deliveries/stripe/${encodeURIComponent("evt\u0000")}`)).status).toBe(400);
    expect((await admin(`/deliveries?eventType=${encodeURIComponent("a\u0000b")}`)).status).toBe(400);
  });
});
