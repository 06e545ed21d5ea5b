/**
 * Where sign-in sends the browser afterwards: only a path of the dashboard itself.
 *
 * `next` comes from the query string, so anyone can write it into a link; an open redirect would
 * let a phishing link that starts on the real inbox end on a look-alike. A value that is not
 * plainly a `/ui` path, as written, falls back to the overview.
 */

const HOME = "/ui";
const BASE = "https://inbox.invalid";

/**
 * `next` if it is a `/ui` path (with its query), else "/ui". Refused: another origin or a
 * scheme-relative `//host`, backslashes (browsers read `\` as `/`), control characters, dot
 * segments (`/ui/../admin`, also as `%2e`), and anything the URL parser would rewrite.
 * @example
 * safeNextPath("/ui/deliveries?status=failed"); // "/ui/deliveries?status=failed"
 * safeNextPath("//evil.example/ui");            // "/ui"
 */
export function safeNextPath(next: string | undefined | null): string {
  if (!next || next.length > 2_048) return HOME;
  if (/[\\\u0000-\u001f\u007f\s]/.test(next) || /%2e/i.test(next)) return HOME;
  if (!/^\/ui(?:[/?]|$)/.test(next)) return HOME;
  let url: URL;
  try {
    url = new URL(next, BASE);
  } catch {
    return HOME;
  }
  const written = next.replace(/#.*$/, "");
  const path = written.replace(/\?.*$/, "");
  // The parser resolves `.`/`..` segments and re-encodes odd characters: a path it changed is not
  // the path it looks like.
  if (url.origin !== BASE || url.pathname !== path) return HOME;
  if (url.pathname !== HOME && !url.pathname.startsWith(`${HOME}/`)) return HOME;
  return written;
}
