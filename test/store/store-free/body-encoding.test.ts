// The encoding of a body at rest (src/store/body-encoding.ts), on its own: what it keeps as is, and
// what it refuses to read back. The round trips through both stores are body-compression.test.ts.
import { deflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { MAX_BODY_BYTES_CEILING } from "../../../src/config";
import { decodeBody, DEFLATE_RAW, encodeBody, StoredBodyError } from "../../../src/store/body-encoding";

describe("encodeBody", () => {
  it("compresses a body that shrinks, and the stored bytes inflate with the runtime's DecompressionStream", async () => {
    const body = new TextEncoder().encode(JSON.stringify({ items: Array.from({ length: 50 }, (_, index) => ({ id: `evt_${index}`, object: "event" })) }));
    const stored = encodeBody(body);
    expect(stored.encoding).toBe(DEFLATE_RAW);
    expect(stored.bytes.byteLength).toBeLessThan(body.byteLength / 3);
    const inflated = new Uint8Array(await new Response(new Blob([stored.bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"))).arrayBuffer());
    expect([...inflated]).toEqual([...body]);
    expect([...decodeBody(stored.bytes, stored.encoding)]).toEqual([...body]);
  });

  it("keeps a short body, and one that would not shrink, as received", () => {
    const short = new TextEncoder().encode('{"id":"evt_1","object":"event"}');
    expect(encodeBody(short)).toEqual({ bytes: short, encoding: null });
    const dense = crypto.getRandomValues(new Uint8Array(2_048));
    expect(encodeBody(dense)).toEqual({ bytes: dense, encoding: null });
  });
});

describe("decodeBody", () => {
  it("reads a body without an encoding (stored before compression) as it is", () => {
    const body = new Uint8Array([0, 1, 2, 255]);
    expect(decodeBody(body, null)).toBe(body);
    expect(decodeBody(body, undefined)).toBe(body);
  });

  it("refuses to inflate past MAX_BODY_BYTES_CEILING rather than expand without bound", () => {
    const bomb = deflateRawSync(new Uint8Array(MAX_BODY_BYTES_CEILING + 1));
    expect(bomb.byteLength).toBeLessThan(4_096);
    expect(() => decodeBody(new Uint8Array(bomb), DEFLATE_RAW)).toThrow(StoredBodyError);
    const atCeiling = deflateRawSync(new Uint8Array(MAX_BODY_BYTES_CEILING));
    expect(decodeBody(new Uint8Array(atCeiling), DEFLATE_RAW).byteLength).toBe(MAX_BODY_BYTES_CEILING);
  });

  it("refuses bytes that are not DEFLATE, and an encoding it does not know", () => {
    expect(() => decodeBody(new Uint8Array([0xff, 0xff, 0xff, 0xff]), DEFLATE_RAW)).toThrow(StoredBodyError);
    expect(() => decodeBody(new Uint8Array([1, 2, 3]), "zstd")).toThrow(/unknown encoding/);
  });
});
