/**
 * Reads a request body with a hard size limit, without ever buffering more than the limit.
 *
 * The declared `Content-Length` is checked first (cheap refusal); a body sent without one
 * (chunked) is counted as it streams and the stream is cancelled as soon as it passes the limit.
 */
import { ApiError } from "./errors";

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(413, "payload_too_large", `the body exceeds the limit of ${maxBytes} bytes`);
}

/** The raw body bytes, or a 413 `ApiError` once more than `maxBytes` arrive. */
export async function readBodyWithLimit(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (!/^\d+$/.test(declared.trim())) throw new ApiError(400, "bad_request", "malformed Content-Length");
    if (Number(declared) > maxBytes) throw tooLarge(maxBytes);
  }
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}
