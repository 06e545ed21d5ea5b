/** Hex text of bytes, shared by the providers (digests, cache keys) and the store (bodies sent to D1 as hex). */

const BYTE_HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/**
 * The lower-case hex text of `bytes`. Built in parts of 8 KiB: a body of a megabyte is one of its
 * inputs, and appending two characters at a time to one string would grow a rope of a million.
 * @example
 * toHex(new Uint8Array([0, 255])); // "00ff"
 */
export function toHex(bytes: Uint8Array): string {
  const parts: string[] = [];
  for (let start = 0; start < bytes.length; start += 8192) {
    let part = "";
    const end = Math.min(bytes.length, start + 8192);
    for (let index = start; index < end; index++) part += BYTE_HEX[bytes[index]!]!;
    parts.push(part);
  }
  return parts.join("");
}

/** Strict hex decoding: null for odd length or any non-hex character. */
export function fromHex(text: string): Uint8Array | null {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  for (let index = 0; index < out.length; index++) out[index] = parseInt(text.slice(index * 2, index * 2 + 2), 16);
  return out;
}
