/**
 * The `hmac` kind: SHA-1/256/512 over a template, hex or base64, keyed with the secret as UTF-8 or
 * decoded from hex, base64 or a `whsec_` string. Every secret is tried against every signature
 * sent (rotation on either side), and all of them even after a match, so timing says nothing.
 */
import { fromBase64, fromHex, hmac, timingSafeEqual } from "../../crypto";
import { standardWebhooksKey } from "../../standard-webhooks";
import { MisconfiguredSecretError, type VerifyContext } from "../../types";
import type { HmacScheme } from "../declaration";
import { readSignedParts, renderSigned, type Parsed } from "../values";
import { refused, type SchemeResult } from "./result";

const DIGEST_BYTES = { "SHA-1": 20, "SHA-256": 32, "SHA-512": 64 } as const;

/** The key bytes of `secret` as the scheme reads it; throws for a secret that cannot be one. */
export function hmacKey(scheme: Pick<HmacScheme, "key">, secret: string): Uint8Array | string {
  switch (scheme.key ?? "utf8") {
    case "utf8": return secret;
    case "whsec": return standardWebhooksKey(secret);
    case "hex": {
      const key = fromHex(secret);
      if (!key || key.length === 0) throw new MisconfiguredSecretError("this source's secret must be hex");
      return key;
    }
    case "base64": {
      const key = fromBase64(secret);
      if (!key || key.length === 0) throw new MisconfiguredSecretError("this source's secret must be base64");
      return key;
    }
  }
}

export async function verifyHmacScheme(
  scheme: HmacScheme,
  parsed: Parsed,
  secrets: readonly string[],
  nowSeconds: number,
  context: VerifyContext,
  id: string,
): Promise<SchemeResult> {
  const read = readSignedParts(scheme, parsed, nowSeconds);
  if (typeof read === "string") return refused(read);
  const { timestamp } = read;
  const signatures = read.signatures.filter((signature) => signature.length === DIGEST_BYTES[scheme.hash]);
  if (signatures.length === 0) return refused("no well-formed signature");
  const signed = await renderSigned(scheme.signed, parsed, { timestamp, id }, context);
  if (signed === null) return refused("the signed fields are missing");
  let matchedSecret = -1;
  for (const [index, secret] of secrets.entries()) {
    const expected = await hmac(scheme.hash, hmacKey(scheme, secret), signed);
    for (const candidate of signatures) if (timingSafeEqual(candidate, expected) && matchedSecret < 0) matchedSecret = index;
  }
  if (matchedSecret < 0) return refused("signature mismatch");
  return { ok: true, matchedSecret, signed, timestamp };
}
