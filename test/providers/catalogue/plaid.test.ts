// Plaid: an ES256 JWT in Plaid-Verification, its key asked of Plaid's /webhook_verification_key/get
// by the token's kid (with the client id and secret), cached by kid; request_body_sha256 must be
// the body's SHA-256 and iat at most 5 minutes old. A real local HTTP server stands in for Plaid's
// key endpoint, reachable only as a loopback TEST_ONLY_ALLOWED_HOSTS host (a production config
// cannot point the lookup, and the secret it carries, anywhere but Plaid's hosts). The tokens are
// signed with jose's SignJWT and the body hashed with node:crypto, independently of the verifier.
import { createHash } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey as JoseKey, type JWK } from "jose";
import { beforeEach, describe, expect, it } from "vitest";
import { clearKeyCache, MAX_KEY_LOOKUPS_PER_MINUTE } from "../../../src/providers/engine/schemes/key-api";
import { sql } from "../../../src/sql";
import { backendCalls, bytesOf, planBackend, type BackendStep } from "../../helpers/forward-backend";
import { send } from "../../helpers/catalogue";
import { count } from "../../helpers/store-db";

const CLIENT_ID = "5f3c1a0e9b8d7c6a5b4c3d2e";
const SECRET = "plaid-sandbox-secret-current";
const OLD_SECRET = "plaid-sandbox-secret-previous";
const plaidKeys = await generateKeyPair("ES256", { extractable: true });
const otherKeys = await generateKeyPair("ES256", { extractable: true });
const now = () => Math.floor(Date.now() / 1000);

/** Plaid's answer for a key: the public JWK with Plaid's fields (created_at, expired_at). */
async function keyAnswer(kid: string, expiredAt: number | null = null, publicKey: JoseKey = plaidKeys.publicKey): Promise<BackendStep> {
  const jwk: JWK = await exportJWK(publicKey);
  const key = { alg: "ES256", created_at: 1_560_466_143, crv: "P-256", expired_at: expiredAt, kid, kty: "EC", use: "sig", x: jwk.x, y: jwk.y };
  return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ key, request_id: "RZ6Omi1bzzwDaLo" }) };
}

/** Plaid's error answer for an unknown key id or bad credentials. */
const plaidError = (code: string): BackendStep => ({
  status: 400,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ display_message: null, error_code: code, error_message: "invalid", error_type: "INVALID_INPUT", request_id: "x" }),
});

/** A key endpoint of its own for one test, and the vars that point the source at it. */
async function keyEndpoint(...steps: BackendStep[]) {
  const path = `/plaid/${crypto.randomUUID()}/webhook_verification_key/get`;
  const url = await planBackend(path, ...steps);
  const env = { PLAID_WEBHOOK_SECRET: SECRET, PLAID_WEBHOOK_CLIENT_ID: CLIENT_ID, PLAID_WEBHOOK_KEY_URL: url, TEST_ONLY_ALLOWED_HOSTS: new URL(url).host };
  const calls = async () => (await backendCalls(path)).calls.map((call) => ({ ...call, json: JSON.parse(new TextDecoder().decode(bytesOf(call.body))) as Record<string, unknown> }));
  return { env, calls };
}

/** Plaid-Verification for `body`: ES256, the body's SHA-256 (hex) in request_body_sha256. */
async function verification(body: string, options: { kid: string; iat?: number; key?: JoseKey; alg?: string; hash?: string }): Promise<Record<string, string>> {
  const hash = options.hash ?? createHash("sha256").update(body).digest("hex");
  const jwt = await new SignJWT({ request_body_sha256: hash })
    .setProtectedHeader({ alg: options.alg ?? "ES256", kid: options.kid, typ: "JWT" })
    .setIssuedAt(options.iat ?? now())
    .sign(options.key ?? plaidKeys.privateKey);
  return { "content-type": "application/json", "plaid-verification": jwt };
}

/** A Plaid webhook body as Plaid sends it (2-space indented JSON). */
const ping = (itemId = "wz666MBjYWTp2PDzzggYhM6oWWmBb") =>
  JSON.stringify({ environment: "sandbox", historical_update_complete: true, initial_update_complete: true, item_id: itemId, webhook_code: "SYNC_UPDATES_AVAILABLE", webhook_type: "TRANSACTIONS" }, null, 2);
const stored = (body: string) => count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = 'plaid' AND body = ${new TextEncoder().encode(body)}`);
const kid = () => `6c5516e1-92dc-479e-a8ff-${crypto.randomUUID().slice(-12)}`;

beforeEach(() => clearKeyCache());

describe("plaid", () => {
  it("stores a delivery verified with the key asked of Plaid's API, byte for byte; its replay is a duplicate, and the key is cached", async () => {
    const keyId = kid();
    const { env, calls } = await keyEndpoint(await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const headers = await verification(body, { kid: keyId });
    const answer = await send("plaid", { body, headers, env });
    expect([answer.status, answer.json?.status], answer.text).toEqual([200, "stored"]);
    expect(await stored(body)).toBe(1);
    const [call, ...more] = await calls();
    expect(more).toHaveLength(0);
    expect([call!.method, call!.headers["content-type"], call!.json]).toEqual(["POST", "application/json", { client_id: CLIENT_ID, secret: SECRET, key_id: keyId }]);
    // The same signed request again: a duplicate, and no second lookup.
    const again = await send("plaid", { body, headers, env });
    expect([again.status, again.json?.status, again.json?.id]).toEqual([200, "duplicate", answer.json?.id]);
    expect(await calls()).toHaveLength(1);
  });

  it("keeps two identical pings signed at different times as two deliveries (Plaid's pings are identical by design)", async () => {
    const keyId = kid();
    const { env } = await keyEndpoint(await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const first = await send("plaid", { body, headers: await verification(body, { kid: keyId, iat: now() - 10 }), env });
    const second = await send("plaid", { body, headers: await verification(body, { kid: keyId }), env });
    expect([first.json?.status, second.json?.status]).toEqual(["stored", "stored"]);
    expect(first.json?.id).not.toBe(second.json?.id);
    expect(await stored(body)).toBe(2);
    const row = await count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = 'plaid' AND id = ${String(first.json?.id)} AND event_type = 'TRANSACTIONS.SYNC_UPDATES_AVAILABLE'`);
    expect(row).toBe(1);
  });

  it("refuses a body that is not the one hashed in the token, a token signed by another key, and stores nothing", async () => {
    const keyId = kid();
    const { env } = await keyEndpoint(await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const headers = await verification(body, { kid: keyId });
    const changed = body.replace("SYNC_UPDATES_AVAILABLE", "DEFAULT_UPDATE");
    const tampered = await send("plaid", { body: changed, headers, env });
    expect([tampered.status, tampered.json?.message]).toEqual([401, "signature verification failed: the body does not match the token's hash"]);
    const forged = await send("plaid", { body, headers: await verification(body, { kid: keyId, key: otherKeys.privateKey }), env });
    expect(forged.status).toBe(401);
    expect(await stored(body)).toBe(0);
    expect(await stored(changed)).toBe(0);
  });

  it("refuses a token issued more than 5 minutes ago, or ahead of now", async () => {
    const keyId = kid();
    const { env } = await keyEndpoint(await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const old = await send("plaid", { body, headers: await verification(body, { kid: keyId, iat: now() - 330 }), env });
    expect([old.status, old.json?.message]).toEqual([401, "signature verification failed: token too old"]);
    const ahead = await send("plaid", { body, headers: await verification(body, { kid: keyId, iat: now() + 600 }), env });
    expect(ahead.status).toBe(401);
    expect(await stored(body)).toBe(0);
  });

  it("refuses a token whose key Plaid marks expired", async () => {
    const keyId = kid();
    const { env } = await keyEndpoint(await keyAnswer(keyId, 1_700_000_000));
    const body = ping(crypto.randomUUID());
    const answer = await send("plaid", { body, headers: await verification(body, { kid: keyId }), env });
    expect([answer.status, answer.json?.message]).toEqual([401, "signature verification failed: the token's key has expired"]);
  });

  it("refuses a token with another algorithm, or naming a made-up key id, before asking Plaid anything", async () => {
    const keyId = kid();
    const { env, calls } = await keyEndpoint(await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const hs256 = await verification(body, { kid: keyId, alg: "HS256", key: new TextEncoder().encode(SECRET) as unknown as JoseKey });
    expect((await send("plaid", { body, headers: hs256, env })).json?.message).toBe("signature verification failed: token algorithm not allowed");
    const odd = await verification(body, { kid: "../../admin?x=1" });
    expect((await send("plaid", { body, headers: odd, env })).json?.message).toBe("signature verification failed: token names no usable key id");
    expect((await send("plaid", { body, headers: { "plaid-verification": "not.a.token" }, env })).status).toBe(401);
    expect(await calls()).toHaveLength(0);
  });

  it("asks only Plaid's hosts: a key URL elsewhere is refused without a request, whatever TEST_ONLY_ALLOWED_HOSTS says", async () => {
    const keyId = kid();
    const { env, calls } = await keyEndpoint(await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const headers = await verification(body, { kid: keyId });
    // Without the loopback test host, the local server is not on the allow-list.
    const { TEST_ONLY_ALLOWED_HOSTS: _, ...production } = env;
    expect((await send("plaid", { body, headers, env: production })).json?.message).toBe("signature verification failed: the key API's URL is not on the allow-list");
    // A non-loopback host never becomes a test host.
    const elsewhere = { ...env, PLAID_WEBHOOK_KEY_URL: "https://plaid.example.com/webhook_verification_key/get", TEST_ONLY_ALLOWED_HOSTS: "plaid.example.com" };
    expect((await send("plaid", { body, headers, env: elsewhere })).json?.message).toBe("signature verification failed: the key API's URL is not on the allow-list");
    // An environment Plaid does not have.
    const { PLAID_WEBHOOK_KEY_URL: __, ...noUrl } = env;
    expect((await send("plaid", { body, headers, env: { ...noUrl, PLAID_WEBHOOK_ENV: "development" } })).json?.message).toBe("signature verification failed: the key API's environment setting is not valid");
    // No client id: nothing to ask with.
    const { PLAID_WEBHOOK_CLIENT_ID: ___, ...noClient } = env;
    expect((await send("plaid", { body, headers, env: noClient })).json?.message).toBe("signature verification failed: a setting the key API needs is missing");
    expect(await calls()).toHaveLength(0);
    expect(await stored(body)).toBe(0);
  });

  it("asks with the previous secret when Plaid refuses the current one (a rotation), and says so", async () => {
    const keyId = kid();
    const { env, calls } = await keyEndpoint(plaidError("INVALID_API_KEYS"), await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const answer = await send("plaid", { body, headers: await verification(body, { kid: keyId }), env: { ...env, PLAID_WEBHOOK_SECRET_PREVIOUS: OLD_SECRET } });
    expect([answer.status, answer.json?.status]).toEqual([200, "stored"]);
    expect((await calls()).map((call) => call.json.secret)).toEqual([SECRET, OLD_SECRET]);
  });

  it("refuses while Plaid's API fails or is slow, caching no failure: the next request asks again", async () => {
    const keyId = kid();
    const { env, calls } = await keyEndpoint({ status: 500, body: "oops" }, { status: 200, delayMs: 7_000, body: "{}" }, await keyAnswer(keyId));
    const body = ping(crypto.randomUUID());
    const failed = await send("plaid", { body, headers: await verification(body, { kid: keyId }), env });
    expect([failed.status, failed.json?.message]).toEqual([401, "signature verification failed: the key API failed"]);
    const slow = await send("plaid", { body, headers: await verification(body, { kid: keyId }), env });
    expect([slow.status, slow.json?.message]).toEqual([401, "signature verification failed: the key API could not be reached"]);
    const ok = await send("plaid", { body, headers: await verification(body, { kid: keyId }), env });
    expect([ok.status, ok.json?.status]).toEqual([200, "stored"]);
    expect(await calls()).toHaveLength(3);
  }, 20_000);

  it(`asks Plaid about at most ${MAX_KEY_LOOKUPS_PER_MINUTE} unknown key ids a minute: a flood of made-up kids cannot hammer Plaid's API`, async () => {
    const { env, calls } = await keyEndpoint(plaidError("INVALID_FIELD"));
    const body = ping(crypto.randomUUID());
    for (let index = 0; index < MAX_KEY_LOOKUPS_PER_MINUTE; index++) {
      const answer = await send("plaid", { body, headers: await verification(body, { kid: kid() }), env });
      expect(answer.json?.message).toBe("signature verification failed: the key API refused the lookup (400)");
    }
    const throttled = await send("plaid", { body, headers: await verification(body, { kid: kid() }), env });
    expect([throttled.status, throttled.json?.message]).toEqual([401, "signature verification failed: too many key lookups this minute"]);
    expect(await calls()).toHaveLength(MAX_KEY_LOOKUPS_PER_MINUTE);
  });
});
