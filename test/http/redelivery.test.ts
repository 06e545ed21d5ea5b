// A provider's own redelivery of a delivery that ended failed here (a user fixed the handler and
// pressed "redeliver" in Stripe's dashboard) is replayed once instead of swallowed as a duplicate;
// a copy of a delivery that is done, or still in flight, stays a duplicate. The real store.
import { describe, expect, it } from "vitest";
import { PermanentError } from "../../src/handler-api";
import { defineHandlers } from "../../src/handler-api";
import { consume } from "../helpers/processing";
import { post, stripeSignature, unique } from "../helpers/provider-signers";
import { recordingProducer } from "../helpers/recording-producer";
import { deliveryRow } from "../helpers/store-db";

const failing = defineHandlers({ stripe: { "*": () => Promise.reject(new PermanentError("handler bug")) } });
const succeeding = defineHandlers({ stripe: { "*": () => [] } });

async function sendStripe(body: string) {
  return post("stripe", body, { "stripe-signature": await stripeSignature(body), "content-type": "application/json" });
}

describe("a provider's redelivery of a failed delivery", () => {
  it("is replayed once (answer replayed, row back to received, attempts 0), then a duplicate again", async () => {
    const id = unique("evt_redeliver_");
    const body = JSON.stringify({ id, object: "event", type: "payment_intent.succeeded", data: { object: { amount: 1 } } });
    expect((await sendStripe(body)).json).toEqual({ status: "stored", source: "stripe", id });
    const { outcomes } = await consume([{ source: "stripe", id }], failing, { DEAD_LETTERS: recordingProducer().queue });
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["failed"]);

    expect((await sendStripe(body)).json).toEqual({ status: "replayed", source: "stripe", id });
    expect(await deliveryRow("stripe", id)).toMatchObject({ status: "received", attempts: 0, error: null });
    // Replayed once: a second copy while it waits is a duplicate.
    expect((await sendStripe(body)).json).toEqual({ status: "duplicate", source: "stripe", id });

    const second = await consume([{ source: "stripe", id }], succeeding);
    expect(second.outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    expect((await sendStripe(body)).json).toEqual({ status: "duplicate", source: "stripe", id });
    expect(await deliveryRow("stripe", id)).toMatchObject({ status: "done" });
  });
});
