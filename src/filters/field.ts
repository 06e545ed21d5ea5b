/**
 * Field paths: checking one, rendering it, and reading its value from a delivery. Kept apart
 * from parsing and evaluation because both need them.
 */
import { FILTER_LIMITS, type FieldPath, type FilterInput } from "./types";

/** A field path resolved to where it looks. */
export type ResolvedField =
  | { readonly kind: "type" }
  | { readonly kind: "header"; readonly name: string }
  | { readonly kind: "body"; readonly path: readonly string[] };

/** A header name as RFC 9110 allows it (a token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** An array index: digits without a leading zero. */
const INDEX = /^(0|[1-9][0-9]*)$/;

/** The segments of a field path (the string form splits on dots). */
function segmentsOf(field: FieldPath): string[] {
  return typeof field === "string" ? field.split(".") : field.map((segment) => String(segment));
}

/**
 * A field path resolved, or what is wrong with it. The string form cannot hold an empty segment
 * (`body..x`); the array form can hold any key, dots included.
 */
export function resolveField(field: unknown): { ok: true; field: ResolvedField } | { ok: false; problem: string } {
  const isArrayForm = Array.isArray(field);
  if (typeof field !== "string" && !isArrayForm) return { ok: false, problem: 'field must be a string such as "body.data.id" or an array such as ["body", "a.b"]' };
  if (isArrayForm && !field.every((segment) => typeof segment === "string" || (Number.isSafeInteger(segment) && segment >= 0))) {
    return { ok: false, problem: "field segments must be strings or array indices" };
  }
  const segments = segmentsOf(field as FieldPath);
  if (segments.length > FILTER_LIMITS.maxPathSegments) return { ok: false, problem: `field has more than ${FILTER_LIMITS.maxPathSegments} segments` };
  if (segments.some((segment) => segment.length > FILTER_LIMITS.maxStringLength)) return { ok: false, problem: `field segment longer than ${FILTER_LIMITS.maxStringLength} characters` };
  if (!isArrayForm && segments.some((segment) => segment === "")) return { ok: false, problem: `field "${field}" has an empty segment` };
  const [root, ...rest] = segments;
  if (root === "type") {
    return rest.length === 0 ? { ok: true, field: { kind: "type" } } : { ok: false, problem: '"type" has no sub-fields' };
  }
  if (root === "headers") {
    const [name] = rest;
    if (rest.length !== 1 || name === undefined || !HEADER_NAME.test(name)) {
      return { ok: false, problem: 'a header field is "headers.<name>" with one header name' };
    }
    return { ok: true, field: { kind: "header", name: name.toLowerCase() } };
  }
  if (root === "body") return { ok: true, field: { kind: "body", path: rest } };
  return { ok: false, problem: 'field must start with "type", "headers" or "body"' };
}

/** A field path as it reads in a failed clause: dotted, with a bracketed key where a segment holds a dot. */
export function renderField(field: FieldPath): string {
  return segmentsOf(field)
    .map((segment, index) => (index > 0 && /[.[\]"\s]/.test(segment) ? `[${JSON.stringify(segment)}]` : index > 0 ? `.${segment}` : segment))
    .join("");
}

/** What `field` holds in `input`: a JSON value, or undefined when absent. */
export function readField(field: ResolvedField, input: FilterInput): unknown {
  if (field.kind === "type") return input.eventType ?? undefined;
  if (field.kind === "header") return input.header(field.name) ?? undefined;
  let value: unknown = input.body;
  for (const segment of field.path) {
    if (Array.isArray(value)) {
      if (!INDEX.test(segment)) return undefined;
      value = value[Number(segment)];
    } else if (value !== null && typeof value === "object") {
      // Own keys only: "__proto__" or "constructor" must not reach the prototype.
      if (!Object.hasOwn(value, segment)) return undefined;
      value = (value as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return value;
}
