/**
 * Reading a declaration's values from a request: headers, JSON fields, query and form parameters,
 * the signed-content template, signature fields and timestamps. Pure functions, no crypto keys.
 */
import { concat, fromBase64, fromHex, jsonString, MAX_SIGNATURE_HEADER_LENGTH, sha256, toHex } from "../crypto";
import type { SignedRequest, VerifyContext } from "../types";
import type { NumberedHeaders, SignatureSpec, SignedContent, TimestampSpec, ValueSpec } from "./declaration";

/** The request with its body parsed once, as each value reader needs it. */
export interface Parsed {
  readonly request: SignedRequest;
  /** The JSON body (or an object within it, for a batch item), or null. */
  readonly json: unknown;
}

function formField(body: Uint8Array, name: string): string | null {
  return new URLSearchParams(new TextDecoder().decode(body)).get(name);
}

function query(url: string, name: string): string | null {
  return URL.canParse(url) ? new URL(url).searchParams.get(name) : null;
}

/** A value of the request, or null when absent. */
export function readValue(spec: ValueSpec, parsed: Parsed): string | null {
  if ("header" in spec) {
    for (const name of typeof spec.header === "string" ? [spec.header] : spec.header) {
      const value = parsed.request.headers.get(name);
      if (value) return value;
    }
    return null;
  }
  if ("json" in spec) return jsonString(parsed.json, spec.json);
  if ("query" in spec) return query(parsed.request.url, spec.query);
  return formField(parsed.request.body, spec.form);
}

/** Decimal CRC-32 (IEEE) of `bytes`: PayPal signs the body's. */
export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

const PLACEHOLDER = /\{([a-z0-9]+)(?::([^}]+))?\}/gi;

/** The names a template knows; anything else is a mistake caught when the provider is declared. */
const KNOWN = new Set(["secret", "body", "timestamp", "id", "url", "method", "header", "json", "query", "form", "setting", "crc32", "sha256"]);

/** Throws (at declaration time) for a template naming an unknown placeholder. */
export function checkTemplate(template: SignedContent): void {
  if (typeof template !== "string") return;
  for (const match of template.matchAll(PLACEHOLDER)) {
    if (!KNOWN.has(match[1]!)) throw new TypeError(`unknown placeholder {${match[0]}} in a signed-content template`);
  }
}

/** What a template names besides the body: the timestamp and id values the verifier found. */
export interface TemplateValues {
  readonly timestamp: string;
  readonly id: string;
  /** `{secret}`: PayPal signs its webhook id, which is the source's secret. */
  readonly secret?: string;
}

/**
 * The signed content as bytes: literal text and values as UTF-8, `{body}` as the raw bytes.
 * Null when a named value is missing and the content cannot be built (a function said so).
 */
export async function renderSigned(template: SignedContent, parsed: Parsed, values: TemplateValues, context: VerifyContext): Promise<Uint8Array | null> {
  if (typeof template !== "string") {
    const text = template(parsed.request, parsed.json);
    return text === null ? null : new TextEncoder().encode(text);
  }
  const parts: (string | Uint8Array)[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    parts.push(template.slice(last, match.index));
    last = match.index + match[0].length;
    const [, name, argument = ""] = match;
    const request = parsed.request;
    switch (name) {
      case "secret": parts.push(values.secret ?? ""); break;
      case "body": parts.push(request.body); break;
      case "timestamp": parts.push(values.timestamp); break;
      case "id": parts.push(values.id); break;
      case "url": parts.push(request.url); break;
      case "method": parts.push(request.method ?? "POST"); break;
      case "header": parts.push(request.headers.get(argument) ?? ""); break;
      case "json": parts.push(jsonString(parsed.json, argument) ?? ""); break;
      case "query": parts.push(query(request.url, argument) ?? ""); break;
      case "form": parts.push(formField(request.body, argument) ?? ""); break;
      case "setting": parts.push(context.setting(argument) ?? ""); break;
      case "crc32": parts.push(String(crc32(request.body))); break;
      case "sha256": parts.push(toHex(await sha256(request.body))); break;
    }
  }
  parts.push(template.slice(last));
  return concat(parts);
}

const DECODE = {
  hex: fromHex,
  base64: fromBase64,
  base64url: (text: string) => fromBase64(text.replaceAll("-", "+").replaceAll("_", "/")),
} as const;

/**
 * The values of numbered headers (`x-docusign-signature-1`, `-2`, …), in order of their number:
 * each header is looked up by name (at most `max`), so a request's other headers are never read.
 */
function numberedHeaderValues(spec: NumberedHeaders, headers: Headers): string[] {
  const values: string[] = [];
  for (let number = 1; number <= spec.max; number++) {
    const value = headers.get(`${spec.numberedHeaders}${number}`);
    if (value) values.push(value);
  }
  return values;
}

/** The signatures a request carries (several during a rotation), decoded, and a keyed list's timestamp. */
export function readSignatures(spec: SignatureSpec, parsed: Parsed): { signatures: Uint8Array[]; timestamp: string | null } | string {
  if ("numberedHeaders" in spec.from) {
    const fields = numberedHeaderValues(spec.from, parsed.request.headers);
    if (fields.length === 0) return "missing signature";
    const signatures: Uint8Array[] = [];
    for (const field of fields) {
      const read = signaturesOfField(spec, field);
      if (typeof read === "string") return read;
      signatures.push(...read.signatures);
    }
    return { signatures, timestamp: null };
  }
  const field = readValue(spec.from, parsed);
  if (!field) return "missing signature";
  return signaturesOfField(spec, field);
}

/** One field's signatures, as its layout says (a prefix, a list, a keyed list with its timestamp). */
function signaturesOfField(spec: SignatureSpec, field: string): { signatures: Uint8Array[]; timestamp: string | null } | string {
  if (field.length > MAX_SIGNATURE_HEADER_LENGTH) return "signature too long";
  const decode = DECODE[spec.encoding];
  if (spec.keyed) {
    const { items, signature, timestamp } = spec.keyed;
    let stamp: string | null = null;
    const signatures: Uint8Array[] = [];
    for (const item of field.split(items)) {
      const at = item.indexOf("=");
      if (at < 0) continue;
      const [key, value] = [item.slice(0, at).trim(), item.slice(at + 1).trim()];
      if (key === timestamp) {
        if (stamp !== null) return "timestamp repeated in the signature";
        stamp = value;
      } else if (key === signature) {
        const decoded = decode(value);
        if (decoded) signatures.push(decoded);
      }
    }
    return { signatures, timestamp: stamp };
  }
  const prefix = spec.prefix ?? "";
  const entries = spec.list ? field.split(spec.list) : [field];
  const signatures = entries
    .map((entry) => entry.trim())
    .filter((entry) => entry.startsWith(prefix))
    .map((entry) => decode(entry.slice(prefix.length)))
    .filter((decoded): decoded is Uint8Array => decoded !== null && decoded.length > 0);
  return { signatures, timestamp: null };
}

/**
 * The timestamp as sent (for the template) after checking it lies within the tolerance, both
 * ways: a far-future timestamp would let a captured request be replayed later. A string is a refusal.
 */
export function readTimestamp(spec: TimestampSpec, parsed: Parsed, fromSignature: string | null, nowSeconds: number): { value: string } | string {
  const value = spec.from === "signature" ? fromSignature : readValue(spec.from, parsed);
  if (value === null || value === "") return "missing timestamp";
  let seconds: number;
  if (spec.unit === "iso8601") {
    seconds = Date.parse(value) / 1000;
    if (!Number.isFinite(seconds)) return "malformed timestamp";
  } else {
    if (!/^\d{1,15}$/.test(value.trim())) return "malformed timestamp";
    seconds = Number(value.trim()) / (spec.unit === "milliseconds" ? 1000 : 1);
  }
  const tolerance = spec.toleranceSeconds ?? 300;
  if (seconds < nowSeconds - tolerance) return "timestamp too old";
  if (seconds > nowSeconds + tolerance) return "timestamp in the future";
  return { value: value.trim() };
}

/**
 * The signatures a scheme reads and the timestamp it signs (checked both ways when it has one; ""
 * when it has none): the first steps of every signature scheme, or the refusal's reason.
 */
export function readSignedParts(
  scheme: { readonly signature: SignatureSpec; readonly timestamp?: TimestampSpec },
  parsed: Parsed,
  nowSeconds: number,
): { signatures: Uint8Array[]; timestamp: string } | string {
  const read = readSignatures(scheme.signature, parsed);
  if (typeof read === "string") return read;
  if (!scheme.timestamp) return { signatures: read.signatures, timestamp: "" };
  const checked = readTimestamp(scheme.timestamp, parsed, read.timestamp, nowSeconds);
  return typeof checked === "string" ? checked : { signatures: read.signatures, timestamp: checked.value };
}
