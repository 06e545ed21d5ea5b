/** What a scheme's check gives the engine: which secret matched and the signed bytes, or why it refused. */
export type SchemeResult =
  | {
      readonly ok: true;
      /** Index of the secret that verified (0 current, 1 previous). */
      readonly matchedSecret: number;
      /** The signed content (for the content digest), or null when the scheme signs no content (a token). */
      readonly signed: Uint8Array | null;
      /** The checked timestamp as sent, or "" when none is signed. */
      readonly timestamp: string;
    }
  | { readonly ok: false; readonly reason: string };

export function refused(reason: string): SchemeResult {
  return { ok: false, reason };
}
