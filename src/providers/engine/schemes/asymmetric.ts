/**
 * The `asymmetric` kind: Ed25519, ECDSA P-256 or RSA (PKCS#1 v1.5, PSS) with SHA-256, over a
 * template, against a public key that is the source's secret: Ed25519 as hex (Discord) or base64
 * (Telnyx) of its 32 raw bytes, the others as base64 SPKI DER or PEM (SendGrid's verification key).
 * An ECDSA signature may be DER (SendGrid) or raw r‖s; Web Crypto wants raw.
 */
import { fromBase64, fromHex } from "../../crypto";
import { MisconfiguredSecretError, type VerifyContext } from "../../types";
import type { AsymmetricAlgorithm, AsymmetricScheme } from "../declaration";
import { readSignedParts, renderSigned, type Parsed } from "../values";
import { refused, type SchemeResult } from "./result";

type Params = Parameters<SubtleCrypto["importKey"]>[2];
type VerifyParams = Parameters<SubtleCrypto["verify"]>[0];

const PARAMS: Record<AsymmetricAlgorithm, { importParams: Params; verifyParams: VerifyParams }> = {
  Ed25519: { importParams: { name: "Ed25519" }, verifyParams: { name: "Ed25519" } },
  "ECDSA-P256-SHA256": { importParams: { name: "ECDSA", namedCurve: "P-256" }, verifyParams: { name: "ECDSA", hash: "SHA-256" } },
  "RSA-PKCS1-SHA256": { importParams: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, verifyParams: { name: "RSASSA-PKCS1-v1_5" } },
  "RSA-PSS-SHA256": { importParams: { name: "RSA-PSS", hash: "SHA-256" }, verifyParams: { name: "RSA-PSS", saltLength: 32 } },
};

const keys = new Map<string, Promise<CryptoKey>>();

/** The public key of `secret`, imported once; a secret that is no key is a misconfiguration. */
export function publicKey(algorithm: AsymmetricAlgorithm, secret: string): Promise<CryptoKey> {
  const cacheKey = `${algorithm}:${secret}`;
  let key = keys.get(cacheKey);
  if (!key) {
    if (keys.size > 256) keys.clear();
    key = importPublicKey(algorithm, secret);
    keys.set(cacheKey, key);
    key.catch(() => keys.delete(cacheKey));
  }
  return key;
}

async function importPublicKey(algorithm: AsymmetricAlgorithm, secret: string): Promise<CryptoKey> {
  const { importParams } = PARAMS[algorithm];
  try {
    if (algorithm === "Ed25519" && /^[0-9a-f]{64}$/i.test(secret.trim())) {
      return await crypto.subtle.importKey("raw", fromHex(secret.trim())!, importParams, false, ["verify"]);
    }
    const der = fromBase64(secret.replace(/-----(BEGIN|END) PUBLIC KEY-----/g, "").replace(/\s+/g, ""));
    if (!der) throw new Error("not base64");
    // Telnyx gives an Ed25519 key as base64 of its 32 raw bytes.
    if (algorithm === "Ed25519" && der.length === 32) return await crypto.subtle.importKey("raw", der, importParams, false, ["verify"]);
    return await crypto.subtle.importKey("spki", der, importParams, false, ["verify"]);
  } catch {
    throw new MisconfiguredSecretError(`this source's secret is not a ${algorithm} public key`);
  }
}

/** An ECDSA signature in DER (`30 … 02 r 02 s`) as raw r‖s of 32 bytes each; raw input passes through. */
export function ecdsaRaw(signature: Uint8Array): Uint8Array | null {
  if (signature.length === 64) return signature;
  if (signature[0] !== 0x30) return null;
  let offset = 2;
  const out = new Uint8Array(64);
  for (const half of [0, 32]) {
    if (signature[offset] !== 0x02) return null;
    let length = signature[offset + 1]!;
    let start = offset + 2;
    offset = start + length;
    while (length > 32 && signature[start] === 0) [start, length] = [start + 1, length - 1];
    if (length > 32 || offset > signature.length) return null;
    out.set(signature.subarray(start, start + length), half + 32 - length);
  }
  return out;
}

export async function verifyAsymmetricScheme(
  scheme: AsymmetricScheme,
  parsed: Parsed,
  secrets: readonly string[],
  nowSeconds: number,
  context: VerifyContext,
  id: string,
): Promise<SchemeResult> {
  const read = readSignedParts(scheme, parsed, nowSeconds);
  if (typeof read === "string") return refused(read);
  const { timestamp } = read;
  const signatures = read.signatures
    .map((signature) => (scheme.algorithm === "ECDSA-P256-SHA256" ? ecdsaRaw(signature) : signature))
    .filter((signature): signature is Uint8Array => signature !== null);
  if (signatures.length === 0) return refused("no well-formed signature");
  const signed = await renderSigned(scheme.signed, parsed, { timestamp, id }, context);
  if (signed === null) return refused("the signed fields are missing");
  let matchedSecret = -1;
  for (const [index, secret] of secrets.entries()) {
    const key = await publicKey(scheme.algorithm, secret);
    for (const signature of signatures) {
      const valid = await crypto.subtle.verify(PARAMS[scheme.algorithm].verifyParams, key, signature, signed).catch(() => false);
      if (valid && matchedSecret < 0) matchedSecret = index;
    }
  }
  if (matchedSecret < 0) return refused("signature mismatch");
  return { ok: true, matchedSecret, signed, timestamp };
}
