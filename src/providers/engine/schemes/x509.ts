/**
 * The `x509` kind (AWS SNS, PayPal): the request names the URL of the certificate that signed it.
 * The URL must be https on a host the declaration allows (tests may add loopback hosts only,
 * outbound.ts); the certificate is fetched once and cached, parsed with `pkijs`, and must be
 * within its validity period. Where `<NAME>_WEBHOOK_CA_PEM` is set (one or more PEM certificates),
 * the chain is checked too: the leaf, and any intermediates served with it, must lead to one of
 * them. Without it, trust rests on the https fetch from the allow-listed host (what AWS's own
 * validators do). The signature is RSA PKCS#1 v1.5 with the hash the request says.
 */
import * as pkijs from "pkijs";
import { fromBase64, timingSafeEqualText } from "../../crypto";
import type { VerifyContext } from "../../types";
import type { X509Scheme } from "../declaration";
import { fetchAllowed, isAllowedUrl } from "../outbound";
import { readSignatures, readTimestamp, readValue, renderSigned, type Parsed } from "../values";
import { refused, type SchemeResult } from "./result";

/** Certificates fetched, by URL: an hour at most, 64 URLs at most. */
const CACHE_MS = 3_600_000;
const certificates = new Map<string, { readonly at: number; readonly chain: Promise<pkijs.Certificate[]> }>();

/** The certificates of a PEM text, in order. */
export function parsePem(pem: string): pkijs.Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => {
    const der = fromBase64(block.replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, ""));
    if (!der) throw new Error("malformed PEM");
    return pkijs.Certificate.fromBER(der);
  });
}

async function fetchChain(url: string): Promise<pkijs.Certificate[]> {
  const response = await fetchAllowed(url);
  if (!response.ok) throw new Error(`certificate fetch answered ${response.status}`);
  const chain = parsePem(await response.text());
  if (chain.length === 0) throw new Error("no certificate at the URL");
  return chain;
}

function cachedChain(url: string, nowMs: number): Promise<pkijs.Certificate[]> {
  const cached = certificates.get(url);
  if (cached && nowMs - cached.at < CACHE_MS) return cached.chain;
  if (certificates.size >= 64) certificates.clear();
  const chain = fetchChain(url);
  certificates.set(url, { at: nowMs, chain });
  chain.catch(() => certificates.delete(url));
  return chain;
}

function withinValidity(certificate: pkijs.Certificate, nowMs: number): boolean {
  return certificate.notBefore.value.getTime() <= nowMs && nowMs <= certificate.notAfter.value.getTime();
}

/** Whether `chain` (leaf first) leads to one of `anchors`, every link signed and valid now. */
async function chainsTo(chain: pkijs.Certificate[], anchors: pkijs.Certificate[], nowMs: number): Promise<boolean> {
  for (let index = 0; index < chain.length; index++) {
    const certificate = chain[index]!;
    if (!withinValidity(certificate, nowMs)) return false;
    for (const anchor of anchors) {
      if (withinValidity(anchor, nowMs) && (await certificate.verify(anchor).catch(() => false))) return true;
    }
    const issuer = chain[index + 1];
    if (!issuer || !(await certificate.verify(issuer).catch(() => false))) return false;
  }
  return false;
}

async function leafKey(certificate: pkijs.Certificate, hash: "SHA-1" | "SHA-256"): Promise<CryptoKey> {
  const spki = certificate.subjectPublicKeyInfo.toSchema().toBER(false);
  return crypto.subtle.importKey("spki", spki, { name: "RSASSA-PKCS1-v1_5", hash }, false, ["verify"]);
}

export async function verifyX509Scheme(
  scheme: X509Scheme,
  parsed: Parsed,
  secrets: readonly string[],
  nowSeconds: number,
  context: VerifyContext,
  id: string,
): Promise<SchemeResult> {
  let matchedSecret = 0;
  if (scheme.secretMatches) {
    const value = readValue(scheme.secretMatches, parsed) ?? "";
    matchedSecret = secrets.findIndex((secret) => timingSafeEqualText(value, secret));
    if (matchedSecret < 0) return refused("not the configured topic or webhook");
  }
  const url = readValue(scheme.certUrl, parsed);
  if (!url) return refused("missing certificate URL");
  if (!isAllowedUrl(url, scheme.allowedHosts, context.testHosts)) return refused("the certificate URL is not on the allow-list");
  const hash = scheme.hash(parsed.request, parsed.json);
  if (!hash) return refused("unknown signature algorithm");
  const read = readSignatures(scheme.signature, parsed);
  if (typeof read === "string") return refused(read);
  if (read.signatures.length === 0) return refused("no well-formed signature");
  let timestamp = "";
  if (scheme.timestamp) {
    const checked = readTimestamp(scheme.timestamp, parsed, read.timestamp, nowSeconds);
    if (typeof checked === "string") return refused(checked);
    timestamp = checked.value;
  }
  const nowMs = nowSeconds * 1000;
  let chain: pkijs.Certificate[];
  try {
    chain = await cachedChain(url, nowMs);
  } catch {
    return refused("the signing certificate could not be fetched");
  }
  const leaf = chain[0]!;
  if (!withinValidity(leaf, nowMs)) return refused("the signing certificate is expired or not yet valid");
  const anchorsPem = context.setting("CA_PEM");
  if (anchorsPem && !(await chainsTo(chain, parsePem(anchorsPem), nowMs))) return refused("the signing certificate does not chain to a configured CA");
  // PayPal signs its webhook id, which is the source's secret: the content is rendered per secret.
  const candidates = scheme.secretMatches ? [secrets[matchedSecret]!] : secrets;
  const key = await leafKey(leaf, hash);
  for (const [index, secret] of candidates.entries()) {
    const signed = await renderSigned(scheme.signed, parsed, { timestamp, id, secret }, context);
    if (signed === null) return refused("the signed fields are missing");
    for (const signature of read.signatures) {
      if (await crypto.subtle.verify("RSASSA-PKCS1-v1_5", key, signature, signed).catch(() => false)) {
        return { ok: true, matchedSecret: scheme.secretMatches ? matchedSecret : index, signed, timestamp };
      }
    }
  }
  return refused("signature mismatch");
}
