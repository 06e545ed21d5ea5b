/**
 * The events of a batched request (SendGrid, HubSpot, Event Grid, Adyen), each as the exact bytes
 * it occupies in the signed body: a small scanner finds the element boundaries of the array at a
 * path without re-serialising anything, so each event is stored byte for byte as it was signed
 * (as part of the request; the request's own signature covers them together).
 */

const WHITESPACE = /[\s]/;

function skipWhitespace(text: string, index: number): number {
  while (index < text.length && WHITESPACE.test(text[index]!)) index++;
  return index;
}

function skipString(text: string, index: number): number {
  for (index++; index < text.length; index++) {
    if (text[index] === "\\") index++;
    else if (text[index] === '"') return index + 1;
  }
  throw new SyntaxError("unterminated string");
}

/** The index just past the JSON value starting at `index`. */
function skipValue(text: string, index: number): number {
  index = skipWhitespace(text, index);
  const char = text[index];
  if (char === '"') return skipString(text, index);
  if (char === "{" || char === "[") {
    let depth = 0;
    for (; index < text.length; index++) {
      const c = text[index];
      if (c === '"') index = skipString(text, index) - 1;
      else if (c === "{" || c === "[") depth++;
      else if (c === "}" || c === "]") {
        depth--;
        if (depth === 0) return index + 1;
      }
    }
    throw new SyntaxError("unterminated value");
  }
  const end = /^[^,\]}\s]+/.exec(text.slice(index));
  if (!end) throw new SyntaxError("unexpected token");
  return index + end[0].length;
}

/** The [start, end) ranges of the members of the object at `index`, by key. */
function objectMembers(text: string, index: number): Map<string, [number, number]> {
  const members = new Map<string, [number, number]>();
  index = skipWhitespace(text, index);
  if (text[index] !== "{") throw new SyntaxError("not an object");
  index = skipWhitespace(text, index + 1);
  while (text[index] !== "}") {
    const keyEnd = skipString(text, index);
    const key = JSON.parse(text.slice(index, keyEnd)) as string;
    index = skipWhitespace(text, keyEnd);
    if (text[index] !== ":") throw new SyntaxError("expected a colon");
    const start = skipWhitespace(text, index + 1);
    const end = skipValue(text, start);
    members.set(key, [start, end]);
    index = skipWhitespace(text, end);
    if (text[index] === ",") index = skipWhitespace(text, index + 1);
  }
  return members;
}

/**
 * The bytes of each element of the array at `path` (`""`: the body is the array; `a.b`: a member of
 * a member), or null when the body has no such array.
 */
export function splitArray(body: Uint8Array, path: string): Uint8Array[] | null {
  // ignoreBOM keeps every byte, so that re-encoding a slice gives back exactly the bytes received.
  try {
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body);
    let index = skipWhitespace(text, 0);
    for (const key of path === "" ? [] : path.split(".")) {
      const member = objectMembers(text, index).get(key);
      if (!member) return null;
      index = member[0];
    }
    if (text[index] !== "[") return null;
    const elements: Uint8Array[] = [];
    const encoder = new TextEncoder();
    index = skipWhitespace(text, index + 1);
    while (text[index] !== "]") {
      const end = skipValue(text, index);
      elements.push(encoder.encode(text.slice(index, end)));
      index = skipWhitespace(text, end);
      if (text[index] === ",") index = skipWhitespace(text, index + 1);
      else if (text[index] !== "]") return null;
    }
    return elements;
  } catch {
    return null;
  }
}
