/**
 * `defineProvider`: a declaration (declaration.ts) becomes a `Provider`. The steps, in order:
 * a handshake that carries no signature (Meta's GET); the scheme's check (schemes/); a handshake
 * or lifecycle message of a verified request; the events of a batch; the delivery id, event type
 * and content digest. The security grade is read off the declaration, never written by hand.
 */
import { concat, parseJson, rotated, sha256, toHex } from "../crypto";
import type { BatchEvent, Provider, SecurityGrade, SignedRequest, Verification, VerifyContext } from "../types";
import { refuse } from "../types";
import { splitArray } from "./batch";
import type { IdSpec, ProviderDeclaration, Scheme, ValueSpec } from "./declaration";
import { verifyAsymmetricScheme } from "./schemes/asymmetric";
import { verifyHmacScheme } from "./schemes/hmac";
import { verifyJwtScheme } from "./schemes/jwt";
import type { SchemeResult } from "./schemes/result";
import { verifySharedSecretScheme, verifyUrlSecretScheme } from "./schemes/secret";
import { verifyX509Scheme } from "./schemes/x509";
import { checkTemplate, readValue, type Parsed } from "./values";

const NO_SETTINGS: VerifyContext = { setting: () => undefined, testHosts: [] };

function runScheme(scheme: Scheme, parsed: Parsed, secrets: readonly string[], nowSeconds: number, context: VerifyContext, id: string): Promise<SchemeResult> {
  switch (scheme.kind) {
    case "hmac": return verifyHmacScheme(scheme, parsed, secrets, nowSeconds, context, id);
    case "asymmetric": return verifyAsymmetricScheme(scheme, parsed, secrets, nowSeconds, context, id);
    case "x509": return verifyX509Scheme(scheme, parsed, secrets, nowSeconds, context, id);
    case "jwt": return verifyJwtScheme(scheme, parsed, secrets, nowSeconds, context);
    case "shared-secret": return verifySharedSecretScheme(scheme, parsed, secrets);
    case "url-secret": return verifyUrlSecretScheme(scheme, parsed, secrets);
  }
}

/** A delivery id: read, or derived (SHA-256 of the named values, JSON-encoded: no two inputs collide). */
async function deliveryIdOf(spec: IdSpec, parsed: Parsed, timestamp: string): Promise<string | null> {
  if (spec === "per-request") return crypto.randomUUID();
  if (!("derive" in spec)) return readValue(spec, parsed);
  const values = spec.derive.map((part) => (part === "body" ? new TextDecoder().decode(parsed.request.body) : part === "timestamp" ? timestamp : readValue(part, parsed)));
  if (values.every((value) => value === null || value === "")) return null;
  return toHex(await sha256(new TextEncoder().encode(JSON.stringify(values))));
}

function signedTemplate(scheme: Scheme): string | null {
  return "signed" in scheme && typeof scheme.signed === "string" ? scheme.signed : null;
}

/** Whether the body is under the signature: whole, in part (selected fields), or not at all. */
function bodySigned(scheme: Scheme): boolean | "partly" {
  if (scheme.kind === "shared-secret" || scheme.kind === "url-secret") return false;
  if (scheme.kind === "jwt") return scheme.bodyHashClaim !== undefined;
  if (scheme.kind === "hmac" && scheme.bodySigned !== undefined) return scheme.bodySigned;
  const template = signedTemplate(scheme);
  if (template === null) return "partly";
  return template.includes("{body}") || template.includes("{crc32:body}") || template.includes("{sha256:body}");
}

function valueSigned(spec: ValueSpec, scheme: Scheme, body: boolean | "partly"): boolean {
  const template = signedTemplate(scheme) ?? "";
  if ("json" in spec || "form" in spec) return body === true || template.includes(`{json:${"json" in spec ? spec.json : ""}}`);
  if ("header" in spec) return template.includes("{id}") || [spec.header].flat().some((name) => template.toLowerCase().includes(`{header:${name.toLowerCase()}}`));
  return false;
}

/** The grade of a declaration: what its signature covers, and whether the secret travels. */
export function gradeOf(declaration: ProviderDeclaration): SecurityGrade {
  const { scheme } = declaration;
  const body = bodySigned(scheme);
  const timestampSigned =
    scheme.kind === "jwt" ||
    (("timestamp" in scheme && scheme.timestamp !== undefined) &&
      ((signedTemplate(scheme) ?? "").includes("{timestamp}") || (scheme.timestamp.from !== "signature" && valueSigned(scheme.timestamp.from, scheme, body))));
  const idSpec = declaration.batch?.deliveryId ?? declaration.deliveryId ?? "per-request";
  const deliveryIdSigned =
    idSpec === "per-request"
      ? false
      : "derive" in idSpec
      ? body !== false && idSpec.derive.every((part) => part === "body" || (part === "timestamp" ? timestampSigned : valueSigned(part, scheme, body)))
      : valueSigned(idSpec, scheme, body);
  return { bodySigned: body, timestampSigned, deliveryIdSigned, secretInClear: scheme.kind === "shared-secret" || scheme.kind === "url-secret", ...declaration.gradeOverride };
}

/**
 * A provider from its declaration.
 * @example
 * export const linear = defineProvider({
 *   name: "linear", docs: "https://linear.app/developers/webhooks",
 *   scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "Linear-Signature" }, encoding: "hex" }, signed: "{body}",
 *             timestamp: { from: { json: "webhookTimestamp" }, unit: "milliseconds", toleranceSeconds: 60 } },
 *   deliveryId: { header: "Linear-Delivery" }, eventType: { json: "type" }, dedupKey: "Linear-Delivery, and the body's digest",
 * });
 */
export function defineProvider(declaration: ProviderDeclaration): Provider {
  if ("signed" in declaration.scheme) checkTemplate(declaration.scheme.signed);
  const declaredId = declaration.deliveryId ?? declaration.batch?.deliveryId;
  if (declaredId === undefined) throw new TypeError(`${declaration.name}: a declaration needs a deliveryId (or a batch with one)`);
  const grade = gradeOf(declaration);
  const dedupeOnContent = declaration.dedupeOnContent ?? (!grade.deliveryIdSigned && declaredId !== "per-request");
  const credentialHeaders = [...(declaration.credentialHeaders ?? [])];
  const { scheme } = declaration;
  if (scheme.kind === "shared-secret" && scheme.from !== "basic" && "header" in scheme.from) credentialHeaders.push(scheme.from.header);
  return {
    kind: declaration.name,
    signsDeliveryId: grade.deliveryIdSigned,
    credentialHeaders: credentialHeaders.map((name) => name.toLowerCase()),
    grade,
    dedupKey: declaration.dedupKey,
    ...(declaration.methods ? { methods: declaration.methods } : {}),
    ...(declaration.acceptReply && typeof declaration.acceptReply !== "function" ? { acceptReply: declaration.acceptReply } : {}),
    async verify(request: SignedRequest, secrets: readonly string[], nowSeconds: number, context: VerifyContext = NO_SETTINGS): Promise<Verification> {
      const parsed: Parsed = { request, json: parseJson(request.body) };
      const input = { request, parsed: parsed.json, context, secrets, matchedSecret: 0 };
      for (const handshake of declaration.unsignedHandshakes ?? []) {
        const reply = await handshake(input);
        if (reply) return { ok: true, deliveryId: null, eventType: null, handshake: reply };
      }
      if ((request.method ?? "POST") !== "POST") return refuse(`${request.method} is only for this provider's handshake`);
      const idSpec = declaredId;
      const plainId = idSpec === "per-request" || "derive" in idSpec ? null : readValue(idSpec, parsed);
      const batch = declaration.batch;
      const items = batch ? splitArray(request.body, batch.path) : null;
      if (batch && items === null) return refuse("the body is not the batch this provider sends");
      const itemParsed = (items ?? []).map((bytes): Parsed => {
        const element = parseJson(bytes);
        return { request, json: batch?.item ? (element as Record<string, unknown> | null)?.[batch.item] ?? null : element };
      });

      // Adyen signs each item of its batch, Graph puts its clientState in each: every item must verify.
      const perItem = batch?.verifyEach === true;
      const results = perItem ? await Promise.all(itemParsed.map((item) => runScheme(scheme, item, secrets, nowSeconds, context, ""))) : [await runScheme(scheme, parsed, secrets, nowSeconds, context, plainId ?? "")];
      if (results.length === 0) return refuse("an empty batch");
      const failed = results.find((result) => !result.ok);
      if (failed && !failed.ok) return refuse(failed.reason);
      const first = results[0]!;
      if (!first.ok) return refuse(first.reason);
      const verified = { ...input, ...rotated(first.matchedSecret) };

      for (const handshake of declaration.handshakes ?? []) {
        const reply = await handshake(verified);
        if (reply) return { ok: true, deliveryId: null, eventType: null, handshake: reply, ...rotated(first.matchedSecret) };
      }
      const lifecycle = declaration.lifecycle?.(verified);
      if (lifecycle) return { ok: true, deliveryId: null, eventType: lifecycle.kind, lifecycle, ...rotated(first.matchedSecret) };

      if (batch && items) {
        const events: BatchEvent[] = [];
        for (const [index, bytes] of items.entries()) {
          const item = itemParsed[index]!;
          events.push({
            deliveryId: await deliveryIdOf(batch.deliveryId, item, first.timestamp),
            eventType: batch.eventType ? readValue(batch.eventType, item) : null,
            body: bytes,
            // An event whose id is not signed is also kept once by its own bytes.
            ...(dedupeOnContent ? { contentDigest: await sha256(concat(["event\u0000", bytes])) } : {}),
          });
        }
        return { ok: true, deliveryId: null, eventType: null, events, ...rotated(first.matchedSecret) };
      }
      const deliveryId = plainId ?? (await deliveryIdOf(idSpec, parsed, first.timestamp));
      // The whole signed content (with a signed timestamp, a provider's new attempt differs; Mailgun's
      // timestamp and token alone, so a replay with another body is caught too); the body where the
      // scheme signs no content (a token).
      const digestOf = first.signed ?? request.body;
      return {
        ok: true,
        deliveryId,
        eventType: typeof declaration.eventType === "function" ? declaration.eventType(parsed.json) : declaration.eventType ? readValue(declaration.eventType, parsed) : null,
        ...rotated(first.matchedSecret),
        ...(typeof declaration.acceptReply === "function" ? { acceptReply: declaration.acceptReply(verified) } : {}),
        ...(dedupeOnContent ? { contentDigest: await sha256(digestOf) } : {}),
      };
    },
  };
}
