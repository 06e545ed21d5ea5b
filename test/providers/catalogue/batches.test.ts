// The catalogue's batching providers and those that sign little or nothing: HubSpot (v3, a batch),
// Adyen (per-item HMAC, signed by @adyen/api-library, answered "[accepted]"), Event Grid (a query
// secret, a batch), Postmark (HTTP Basic), Graph (clientState in each notification), Mailgun (only
// timestamp and token signed), Dropbox (pings: every request its own delivery).
import { hmacValidator } from "@adyen/api-library";
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BASE_URL } from "../../helpers/signers";
import { providerCases, randomBase64, randomHex, send, type Signed } from "../../helpers/catalogue";
import { count } from "../../helpers/store-db";
import { sql } from "../../../src/sql";

const uuid = () => crypto.randomUUID();
const tamperBody = (body: string, signed: Signed) => ({ body: body.replace("{", "{ "), signed });
const forge = (name: string, make: () => string) => (signed: Signed): Signed => ({ ...signed, headers: { ...signed.headers, [name]: make() } });
const elements = (body: string, path: (parsed: any) => unknown[] = (parsed) => parsed) => path(JSON.parse(body)).map((element) => JSON.stringify(element));

const hubspotEvents = () => [
  { eventId: Math.floor(Math.random() * 1e9), subscriptionId: 4211, portalId: 62515, appId: 1160452, occurredAt: Date.now(), subscriptionType: "contact.propertyChange", attemptNumber: 0, objectId: 123, propertyName: "firstname", propertyValue: uuid() },
  { eventId: Math.floor(Math.random() * 1e9), subscriptionId: 4212, portalId: 62515, appId: 1160452, occurredAt: Date.now(), subscriptionType: "contact.creation", attemptNumber: 0, objectId: 124, changeSource: uuid() },
];

describe("catalogue: hubspot (signature v3; a batch, each event its own delivery)", () =>
  providerCases({
    source: "hubspot",
    secret: "hubspot-client-secret",
    body: () => JSON.stringify(hubspotEvents()),
    sign: (body, key, t) => {
      const ms = String(t * 1000);
      const signature = createHmac("sha256", key as string).update(`POST${BASE_URL}/webhooks/hubspot${body}${ms}`).digest("base64");
      return { headers: { "x-hubspot-signature-v3": signature, "x-hubspot-request-timestamp": ms, "content-type": "application/json" } };
    },
    tamper: tamperBody,
    forge: forge("x-hubspot-signature-v3", () => randomBase64(32)),
    timestamped: true,
    // Derived ids: each event's row holds exactly its bytes.
    events: (body) => elements(body).map((bytes) => ({ id: "", bytes })),
  }));

const ADYEN_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
const adyenItem = (eventCode: string) => {
  const item: Record<string, any> = {
    additionalData: {},
    amount: { currency: "EUR", value: 1130 },
    eventCode,
    eventDate: "2026-12-04T12:00:00+01:00",
    merchantAccountCode: "YOUR_MERCHANT_ACCOUNT",
    merchantReference: `order-${uuid()}`,
    pspReference: `${Math.floor(Math.random() * 1e15)}`,
    originalReference: "",
    paymentMethod: "visa",
    success: "true",
  };
  return item;
};

describe("catalogue: adyen (each item signed, by @adyen/api-library; answered [accepted])", () => {
  const validator = new hmacValidator();
  const sign = (items: Record<string, any>[], key: string) =>
    JSON.stringify({ live: "false", notificationItems: items.map((item) => ({ NotificationRequestItem: { ...item, additionalData: { hmacSignature: validator.calculateHmac(item as never, key) } } })) });
  providerCases({
    source: "adyen",
    secret: ADYEN_KEY,
    wrongSigner: "0".repeat(64),
    body: () => JSON.stringify([adyenItem("AUTHORISATION"), adyenItem("CAPTURE")]),
    // The "body" above is the items; the signer wraps them as Adyen does, signing each.
    sign: (items, key) => ({ headers: { "content-type": "application/json" }, body: sign(JSON.parse(items), key as string) }),
    tamper: (body, signed) => ({ body: body.replace('"value":1130', '"value":1'), signed }),
    forge: (signed) => ({ ...signed, body: signed.body!.replace(/"hmacSignature":"[^"]+"/g, () => `"hmacSignature":"${randomBase64(32)}"`) }),
    timestamped: false,
    okStatus: 200,
    events: (body) => elements(body, (parsed) => parsed.notificationItems).map((bytes) => ({ id: "", bytes })),
  });

  it("answers [accepted] as text, and refuses a batch where one item's signature is made up", async () => {
    const items = [adyenItem("AUTHORISATION"), adyenItem("REFUND")];
    const good = sign(items, ADYEN_KEY);
    const answer = await send("adyen", { body: good, headers: { "content-type": "application/json" }, env: { ADYEN_WEBHOOK_SECRET: ADYEN_KEY } });
    expect([answer.status, answer.text, answer.headers.get("content-type")]).toEqual([200, "[accepted]", "text/plain"]);
    const forged = good.replace(/"hmacSignature":"[^"]+"/, `"hmacSignature":"${randomBase64(32)}"`);
    expect((await send("adyen", { body: forged, env: { ADYEN_WEBHOOK_SECRET: ADYEN_KEY } })).status).toBe(401);
  });
});

describe("catalogue: eventgrid (a secret in the URL's query; a batch)", () =>
  providerCases({
    source: "eventgrid",
    secret: "eventgrid-url-key",
    body: () => JSON.stringify([{ id: uuid(), eventType: "Microsoft.Storage.BlobCreated", subject: "/blobServices/default/containers/test/blobs/a.txt", eventTime: "2026-12-04T12:00:00.000Z", data: { api: "PutBlob" }, dataVersion: "", metadataVersion: "1", topic: "/subscriptions/x/resourceGroups/y" }]),
    sign: (_body, key) => ({ headers: { "content-type": "application/json" }, path: `?key=${encodeURIComponent(key as string)}` }),
    // Nothing is signed: a request without the key, or with another, is the only forgery.
    tamper: (body, signed) => ({ body, signed: { ...signed, path: `${signed.path}x` } }),
    forge: (signed) => ({ ...signed, path: "" }),
    timestamped: false,
    events: (body) => elements(body).map((bytes) => ({ id: JSON.parse(bytes).id, bytes })),
  }));

describe("catalogue: postmark (HTTP Basic credentials)", () =>
  providerCases({
    source: "postmark",
    secret: "inbox:postmark-password",
    body: () => JSON.stringify({ RecordType: "Delivery", ServerID: 23, MessageStream: "outbound", MessageID: uuid(), Recipient: "john@example.com", Tag: "welcome-email", DeliveredAt: "2026-12-04T12:00:00Z", Details: "Test delivery webhook details" }),
    sign: (_body, key) => ({ headers: { authorization: `Basic ${btoa(key as string)}`, "content-type": "application/json" } }),
    tamper: (body, signed) => ({ body, signed: { headers: { ...signed.headers, authorization: `Basic ${btoa("inbox:guess")}` } } }),
    forge: (signed) => ({ headers: { ...signed.headers, authorization: "Bearer nothing" } }),
    timestamped: false,
  }));

describe("catalogue: graph (clientState in each notification)", () =>
  providerCases({
    source: "graph",
    secret: "graph-client-state",
    body: () => JSON.stringify({ value: [{ subscriptionId: uuid(), subscriptionExpirationDateTime: "2026-12-06T12:00:00.000Z", changeType: "created", resource: "Users/x/Messages/y", resourceData: { "@odata.type": "#Microsoft.Graph.Message", "@odata.id": "Users/x/Messages/y", "@odata.etag": uuid(), id: "y" }, clientState: "graph-client-state", tenantId: "z" }] }),
    sign: (raw, key) => ({ headers: { "content-type": "application/json" }, body: raw.replaceAll("graph-client-state", key as string) }),
    tamper: (body, signed) => ({ body: body.replace('"changeType":"created"', '"changeType":"deleted"').replaceAll("graph-client-state", "guessed-state"), signed }),
    forge: (signed) => ({ ...signed, body: signed.body!.replace(/"clientState":"[^"]+"/, '"clientState":""') }),
    timestamped: false,
    okStatus: 202,
    events: (body) => elements(body, (parsed) => parsed.value).map((bytes) => ({ id: "", bytes })),
  }));

const MAILGUN_KEY = "mailgun-signing-key";
const mailgunBody = (key: string, t: number, token = randomHex(25)) =>
  JSON.stringify({
    signature: { timestamp: String(t), token, signature: createHmac("sha256", key).update(`${t}${token}`).digest("hex") },
    "event-data": { event: "delivered", id: uuid(), timestamp: t, recipient: "alice@example.com", message: { headers: { "message-id": "20130503182626.18666.16540@example.com" } } },
  });

describe("catalogue: mailgun (timestamp and token signed, in the body)", () =>
  providerCases({
    source: "mailgun",
    secret: MAILGUN_KEY,
    body: () => "{}",
    sign: (_raw, key, t) => ({ headers: { "content-type": "application/json" }, body: mailgunBody(key as string, t) }),
    tamper: (body, signed) => ({ body: body.replace(/"token":"[0-9a-f]+"/, `"token":"${randomHex(25)}"`), signed }),
    forge: (signed) => ({ ...signed, body: signed.body!.replace(/"signature":"[0-9a-f]+"/, `"signature":"${randomHex(32)}"`) }),
    timestamped: true,
    expectedId: (body) => JSON.parse(body)["event-data"].id,
  }));

describe("catalogue: mailgun's replay with another body", () => {
  it("is a duplicate: the body is not signed, the signed timestamp and token are the same", async () => {
    const t = Math.floor(Date.now() / 1000);
    const first = mailgunBody(MAILGUN_KEY, t);
    const env = { MAILGUN_WEBHOOK_SECRET: MAILGUN_KEY };
    expect((await send("mailgun", { body: first, env })).json?.status).toBe("stored");
    const altered = first.replace(/"id":"[^"]+"/, `"id":"${uuid()}"`).replace("delivered", "failed");
    expect((await send("mailgun", { body: altered, env })).json?.status).toBe("duplicate");
  });
});

describe("catalogue: dropbox (pings: each request its own delivery)", () => {
  const env = { DROPBOX_WEBHOOK_SECRET: "dropbox-app-secret" };
  const body = JSON.stringify({ list_folder: { accounts: ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"] }, delta: { users: [12345678] } });
  const signature = (key: string, text = body) => createHmac("sha256", key).update(text).digest("hex");
  const rows = () => count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = 'dropbox'`);

  it("stores two identical signed pings as two deliveries: merging them would lose a change", async () => {
    const before = await rows();
    for (let time = 0; time < 2; time++) expect((await send("dropbox", { body, headers: { "x-dropbox-signature": signature("dropbox-app-secret") }, env })).json?.status).toBe("stored");
    expect(await rows()).toBe(before + 2);
  });

  it("refuses a forged signature, another secret, and a tampered body", async () => {
    for (const [text, sig] of [[body, randomHex(32)], [body, signature("other")], [body.replace("{", "{ "), signature("dropbox-app-secret")]] as const) {
      expect((await send("dropbox", { body: text, headers: { "x-dropbox-signature": sig }, env })).status).toBe(401);
    }
  });
});
