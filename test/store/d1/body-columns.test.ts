import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BODY_CHUNK_BYTES, bodyColumns, bodyFromParams, bodyFromRow, bodyParams } from "../../../src/store/d1/columns";
import { blobBytes } from "../../helpers/db";

/** Writes `bytes` through the hex path, then reads it back both ways: through hex, and as D1's own BLOB. */
async function roundTrip(bytes: Uint8Array | null) {
  await env.DB.prepare("CREATE TABLE IF NOT EXISTS body_round_trip (n INTEGER PRIMARY KEY, body BLOB, body_encoding TEXT)").run();
  const { meta } = await (bytes === null
    ? env.DB.prepare("INSERT INTO body_round_trip (body) VALUES (NULL)").run()
    : env.DB.prepare(`INSERT INTO body_round_trip (body) VALUES (${bodyFromParams(1)})`).bind(...bodyParams(bytes)).run());
  const row = await env.DB.prepare(`SELECT typeof(body) AS type, body AS raw, ${bodyColumns()} FROM body_round_trip WHERE n = ?`).bind(meta.last_row_id).first<Record<string, unknown>>();
  return { type: row!.type, viaHex: bodyFromRow(row!), stored: blobBytes(row!.raw as ArrayBuffer | number[] | null) };
}

function pattern(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let index = 0; index < length; index++) bytes[index] = (index * 7 + (index >> 8)) & 0xff;
  return bytes;
}

describe("bodies sent to D1 as hex chunks", () => {
  it("store every byte value as a BLOB, byte for byte", async () => {
    const every = Uint8Array.from({ length: 256 }, (_, byte) => byte);
    const { type, viaHex, stored } = await roundTrip(every);
    expect(type).toBe("blob");
    expect(stored).toEqual(every);
    expect(viaHex).toEqual(every);
  });

  it("keep bodies across chunk boundaries and at the largest size intact", async () => {
    for (const length of [BODY_CHUNK_BYTES - 1, BODY_CHUNK_BYTES, BODY_CHUNK_BYTES + 1, 1_048_576, 1_900_000]) {
      const bytes = pattern(length);
      const { viaHex, stored } = await roundTrip(bytes);
      expect(stored!.length).toBe(length);
      expect(viaHex!.length).toBe(length);
      expect(viaHex!.every((byte, index) => byte === bytes[index])).toBe(true);
      expect(stored!.every((byte, index) => byte === bytes[index])).toBe(true);
    }
  });

  it("keep an empty body empty and a NULL body NULL", async () => {
    const empty = await roundTrip(new Uint8Array(0));
    expect(empty.type).toBe("blob");
    expect(empty.viaHex).toEqual(new Uint8Array(0));
    const missing = await roundTrip(null);
    expect(missing.viaHex).toBeNull();
  });

  it("refuse a body larger than its chunks can carry rather than cut it", () => {
    expect(() => bodyParams(new Uint8Array(4 * BODY_CHUNK_BYTES + 1))).toThrow(RangeError);
  });
});
