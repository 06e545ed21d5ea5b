// DocuSign Connect signs with every HMAC key of the account, one header each:
// X-DocuSign-Signature-1..N (during a rotation, several). The inbox accepts a delivery when any of
// them matches the configured key (or the previous one), whatever its number, and refuses it when
// none does. Signed here with node:crypto, independently of the verifier.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sql } from "../../../src/sql";
import { send } from "../../helpers/catalogue";
import { count } from "../../helpers/store-db";

const KEY = "docusign-connect-key-current";
const OLD_KEY = "docusign-connect-key-old";
const env = { DOCUSIGN_WEBHOOK_SECRET: KEY };
const sign = (key: string, body: string) => createHmac("sha256", key).update(body).digest("base64");
const body = () =>
  JSON.stringify({
    event: "envelope-completed",
    apiVersion: "v2.1",
    uri: "/restapi/v2.1/accounts/1/envelopes/2",
    retryCount: 0,
    configurationId: 10_000_001,
    generatedDateTime: new Date().toISOString(),
    data: { accountId: "1", userId: "2", envelopeId: crypto.randomUUID() },
  });
const stored = (sent: string) => count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = 'docusign' AND body = ${new TextEncoder().encode(sent)}`);
/** Headers X-DocuSign-Signature-<n> for each `[n, key]`. */
const signatures = (sent: string, ...keys: [number, string][]) => Object.fromEntries([["content-type", "application/json"], ...keys.map(([number, key]) => [`X-DocuSign-Signature-${number}`, sign(key, sent)])]);

describe("docusign: one signature per HMAC key", () => {
  it("accepts a delivery whose second signature is the configured key's (the first is another key of the account)", async () => {
    const sent = body();
    const answer = await send("docusign", { body: sent, headers: signatures(sent, [1, "another-key-of-the-account"], [2, KEY]), env });
    expect(answer.status).toBe(200);
    expect(answer.json?.status).toBe("stored");
    expect(await stored(sent)).toBe(1);
  });

  it("accepts the configured key's signature at any number, up to 100", async () => {
    const sent = body();
    const answer = await send("docusign", { body: sent, headers: signatures(sent, [1, "key-a"], [2, "key-b"], [100, KEY]), env });
    expect(answer.status).toBe(200);
    expect(await stored(sent)).toBe(1);
  });

  it("accepts a signature under the previous key during a rotation", async () => {
    const sent = body();
    const answer = await send("docusign", { body: sent, headers: signatures(sent, [1, "key-a"], [3, OLD_KEY]), env: { ...env, DOCUSIGN_WEBHOOK_SECRET_PREVIOUS: OLD_KEY } });
    expect(answer.status).toBe(200);
    expect(await stored(sent)).toBe(1);
  });

  it("refuses a delivery when no signature matches, however many there are, and stores nothing", async () => {
    const sent = body();
    const answer = await send("docusign", { body: sent, headers: signatures(sent, [1, "key-a"], [2, "key-b"], [3, "key-c"]), env });
    expect(answer.status).toBe(401);
    expect(await stored(sent)).toBe(0);
  });

  it("refuses a body changed after signing, even with the configured key's signature among others", async () => {
    const sent = body();
    const headers = signatures(sent, [1, "key-a"], [2, KEY]);
    const changed = sent.replace("envelope-completed", "envelope-voided!!");
    expect((await send("docusign", { body: changed, headers, env })).status).toBe(401);
    expect(await stored(changed)).toBe(0);
  });

  it("reads no header past X-DocuSign-Signature-100, and refuses a request with no signature", async () => {
    const sent = body();
    expect((await send("docusign", { body: sent, headers: signatures(sent, [101, KEY]), env })).status).toBe(401);
    expect((await send("docusign", { body: sent, headers: { "content-type": "application/json", "X-DocuSign-Signature": sign(KEY, sent) }, env })).status).toBe(401);
    expect(await stored(sent)).toBe(0);
  });
});
