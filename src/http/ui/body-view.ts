/**
 * How a delivery's body is shown: pretty-printed when it is JSON, as text when it is UTF-8, else
 * as base64. The bytes as signed are always one click away (the download route).
 */

/** Bodies larger than this are not put in the page (the download has them whole). */
export const MAX_SHOWN_BYTES = 256 * 1024;

export type BodyView =
  | { readonly kind: "json" | "text" | "base64"; readonly text: string; readonly bytes: number }
  | { readonly kind: "too_large"; readonly bytes: number };

/**
 * @example
 * viewBody(new TextEncoder().encode('{"a":1}')); // { kind: "json", text: '{\n  "a": 1\n}', bytes: 7 }
 */
export function viewBody(body: Uint8Array): BodyView {
  const bytes = body.byteLength;
  if (bytes > MAX_SHOWN_BYTES) return { kind: "too_large", bytes };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    return { kind: "base64", text: toBase64(body), bytes };
  }
  const pretty = prettyJson(text);
  return pretty === null ? { kind: "text", text, bytes } : { kind: "json", text: pretty, bytes };
}

/**
 * Nesting past this is shown as sent, not re-indented: indentation grows with the depth on every
 * line, so a small body of deep brackets would otherwise make a page of many megabytes (a
 * 12 KB body of `[[[…` made 72 MB).
 */
export const MAX_PRETTY_DEPTH = 32;
/** The re-indented text is given up past this many characters (the page then shows the body as sent). */
export const MAX_PRETTY_CHARS = 2 * 1024 * 1024;

/**
 * `text` re-indented by two spaces when it is a JSON object or array, else null. Every token is
 * kept as written: JSON.parse would round a large number (a payment amount, an id) and merge
 * duplicate keys, and the page must show what the provider sent. Null too past MAX_PRETTY_DEPTH
 * or MAX_PRETTY_CHARS: the body is then shown as text, as sent.
 */
export function prettyJson(text: string): string | null {
  const trimmed = text.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return null;
  try {
    JSON.parse(trimmed);
  } catch {
    return null;
  }
  let out = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  const newline = () => `\n${"  ".repeat(depth)}`;
  for (let index = 0; index < trimmed.length; index++) {
    const char = trimmed[index]!;
    if (inString) {
      out += char;
      if (escaped) escaped = false;
      else if (char === "\\") escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    switch (char) {
      case '"':
        inString = true;
        out += char;
        break;
      case "{":
      case "[": {
        let next = index + 1;
        while (/\s/.test(trimmed[next] ?? "")) next++;
        if (trimmed[next] === (char === "{" ? "}" : "]")) {
          out += char + trimmed[next];
          index = next;
        } else {
          if (++depth > MAX_PRETTY_DEPTH) return null;
          out += char + newline();
        }
        break;
      }
      case "}":
      case "]":
        depth--;
        out += newline() + char;
        break;
      case ",":
        out += `,${newline()}`;
        if (out.length > MAX_PRETTY_CHARS) return null;
        break;
      case ":":
        out += ": ";
        break;
      case " ":
      case "\t":
      case "\n":
      case "\r":
        break;
      default:
        out += char;
    }
  }
  return out;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  // In chunks: spreading a large array into fromCharCode would overflow the call stack.
  for (let start = 0; start < bytes.length; start += 0x8000) binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  return btoa(binary);
}
