// The x509 providers (AWS SNS, PayPal): a throw-away CA and signing certificate made in the test
// (pkijs), served by the local test backend on a loopback host that only TEST_ONLY_ALLOWED_HOSTS
// may allow; the canonical strings signed here from AWS's and PayPal's docs.
import { describe, expect, it } from "vitest";
import { planBackend } from "../../helpers/forward-backend";
import { providerCases, randomBase64, send, type Signed } from "../../helpers/catalogue";
import { b64, certificate, rsaPair, rsaSign, throwAwayChain, withHash } from "../../helpers/test-keys";

const uuid = () => crypto.randomUUID();
const chain = await throwAwayChain();
const other = await throwAwayChain();
const certUrl = await planBackend(`/certs/SimpleNotificationService-${uuid()}.pem`, { status: 200, body: chain.leafPem });
const otherCertUrl = await planBackend(`/certs/other-${uuid()}.pem`, { status: 200, body: other.leafPem });
const TEST_HOST = new URL(certUrl).host;
const TOPIC = "arn:aws:sns:us-west-2:123456789012:MyTopic";

/** SNS's string to sign, written here from AWS's docs (name, newline, value, newline; Subject only when present). */
function snsStringToSign(message: Record<string, string>): string {
  const keys = message.Type === "Notification" ? ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"] : ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"];
  return keys.filter((key) => key in message).map((key) => `${key}\n${message[key]}\n`).join("");
}

async function snsBody(fields: Record<string, string>, key: CryptoKey, version: "1" | "2" = "2", url = certUrl): Promise<string> {
  const message: Record<string, string> = { Type: "Notification", MessageId: uuid(), TopicArn: TOPIC, Subject: "My First Message", Message: "Hello world!", Timestamp: new Date().toISOString(), ...fields };
  const signingKey = await withHash(key, version === "1" ? "SHA-1" : "SHA-256");
  return JSON.stringify({ ...message, SignatureVersion: version, Signature: b64(await rsaSign(signingKey, snsStringToSign(message))), SigningCertURL: url, UnsubscribeURL: "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe" });
}

const snsEnv = { SNS_WEBHOOK_CA_PEM: chain.caPem, TEST_ONLY_ALLOWED_HOSTS: TEST_HOST };

describe("catalogue: sns (a certificate from a test-allowed host, chained to a throw-away CA)", () =>
  providerCases({
    source: "sns",
    secret: TOPIC,
    signWith: chain.signingKey,
    wrongSigner: other.signingKey,
    env: snsEnv,
    body: () => "",
    sign: async (_raw, key) => ({ headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" }, body: await snsBody({}, key as CryptoKey) }),
    tamper: (body, signed) => ({ body: body.replace("Hello world!", "Hello world?"), signed }),
    forge: (signed) => ({ ...signed, body: signed.body!.replace(/"Signature":"[^"]+"/, `"Signature":"${randomBase64(256)}"`) }),
    timestamped: false,
    expectedId: (body) => JSON.parse(body).MessageId,
  }));

describe("catalogue: sns's certificate checks", () => {
  const post = (body: string, env: Record<string, unknown> = snsEnv) => send("sns", { body, env: { SNS_WEBHOOK_SECRET: TOPIC, ...env } });

  it("verifies SignatureVersion 1 (SHA-1) as well as 2", async () => {
    expect((await post(await snsBody({}, chain.signingKey, "1"))).json?.status).toBe("stored");
  });

  it("refuses a certificate URL off the allow-list (without the test host), and plain http to an AWS-looking host", async () => {
    expect((await post(await snsBody({}, chain.signingKey), { SNS_WEBHOOK_CA_PEM: chain.caPem })).json?.message).toMatch(/allow-list/);
    const spoofed = await snsBody({}, chain.signingKey, "2", "http://sns.us-east-1.amazonaws.com/cert.pem");
    expect((await post(spoofed)).json?.message).toMatch(/allow-list/);
    const lookalike = await snsBody({}, chain.signingKey, "2", "https://sns.us-east-1.amazonaws.com.evil.example/cert.pem");
    expect((await post(lookalike)).json?.message).toMatch(/allow-list/);
  });

  it("refuses a certificate that does not chain to the configured CA, though it signed the message", async () => {
    const answer = await post(await snsBody({}, other.signingKey, "2", otherCertUrl));
    expect(answer.status).toBe(401);
    expect(answer.json?.message).toMatch(/does not chain/);
  });

  it("refuses an expired signing certificate", async () => {
    const leaf = await rsaPair();
    const ca = await rsaPair();
    const caPem = await certificate({ subject: "Old CA", publicKey: ca.publicKey, issuer: "Old CA", issuerKey: ca.privateKey });
    const expired = await certificate({ subject: "old", publicKey: leaf.publicKey, issuer: "Old CA", issuerKey: ca.privateKey, notBefore: new Date(Date.now() - 3 * 86_400_000), notAfter: new Date(Date.now() - 86_400_000) });
    const url = await planBackend(`/certs/expired-${uuid()}.pem`, { status: 200, body: expired });
    const answer = await post(await snsBody({}, leaf.privateKey, "2", url), { SNS_WEBHOOK_CA_PEM: caPem, TEST_ONLY_ALLOWED_HOSTS: TEST_HOST });
    expect(answer.json?.message).toMatch(/expired/);
  });

  it("refuses a message of another topic", async () => {
    const answer = await post(await snsBody({ TopicArn: "arn:aws:sns:us-west-2:123456789012:Other" }, chain.signingKey));
    expect(answer.json?.message).toMatch(/topic/);
  });
});

const PAYPAL_WEBHOOK_ID = "1JE4291016473214C";
const paypalCert = await planBackend(`/certs/paypal-${uuid()}.pem`, { status: 200, body: chain.leafPem });

/** CRC-32 (IEEE), written here: PayPal signs the body's in decimal. */
function crc32(text: string): number {
  let crc = -1;
  for (const byte of new TextEncoder().encode(text)) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ -1) >>> 0;
}

describe("catalogue: paypal (SHA256withRSA by a certificate from a test-allowed host)", () =>
  providerCases({
    source: "paypal",
    secret: PAYPAL_WEBHOOK_ID,
    signWith: chain.signingKey,
    wrongSigner: other.signingKey,
    env: { PAYPAL_WEBHOOK_CA_PEM: chain.caPem, TEST_ONLY_ALLOWED_HOSTS: TEST_HOST },
    body: () => JSON.stringify({ id: `WH-${uuid()}`, event_version: "1.0", create_time: "2026-12-04T12:00:00.000Z", resource_type: "capture", event_type: "PAYMENT.CAPTURE.COMPLETED", summary: "Payment completed for $ 7.47 USD", resource: { id: "42311647XV020574X", amount: { currency_code: "USD", value: "7.47" } } }),
    sign: async (body, key, t) => {
      const transmissionId = uuid();
      const time = new Date(t * 1000).toISOString();
      const signature = b64(await rsaSign(key as CryptoKey, `${transmissionId}|${time}|${PAYPAL_WEBHOOK_ID}|${crc32(body)}`));
      return { headers: { "paypal-transmission-id": transmissionId, "paypal-transmission-time": time, "paypal-transmission-sig": signature, "paypal-cert-url": paypalCert, "paypal-auth-algo": "SHA256withRSA", "content-type": "application/json" } };
    },
    tamper: (body: string, signed: Signed) => ({ body: body.replace("7.47", "9.47"), signed }),
    forge: (signed) => ({ ...signed, headers: { ...signed.headers, "paypal-transmission-sig": randomBase64(256) } }),
    timestamped: true,
    expectedId: (body) => JSON.parse(body).id,
  }));
