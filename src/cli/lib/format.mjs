/** Plain-text tables and values for the CLI's readable output (`--json` bypasses all of this). */

/**
 * Renders rows as left-aligned columns under a header; cells longer than `maxWidth` are cut with "…".
 * @param {string[]} header
 * @param {unknown[][]} rows
 * @param {{ maxWidth?: number }} [options]
 * @returns {string}
 * @example
 * table(["STATUS", "COUNT"], [["done", 3]]); // "STATUS  COUNT\ndone    3"
 */
export function table(header, rows, options = {}) {
  const maxWidth = options.maxWidth ?? 60;
  const cells = [header, ...rows.map((row) => row.map((cell) => clip(cellText(cell), maxWidth)))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => row[column]?.length ?? 0)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join("  ").trimEnd()).join("\n");
}

/** @param {unknown} value */
function cellText(value) {
  if (value === null || value === undefined || value === "") return "-";
  return String(value).replace(/\s+/g, " ");
}

/** @param {string} text @param {number} width */
function clip(text, width) {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}

/**
 * A duration in seconds as a short human string.
 * @param {number | null} seconds
 * @example
 * duration(3725); // "1 h 2 min"
 */
export function duration(seconds) {
  if (seconds === null) return "none";
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86_400)} d ${Math.floor((seconds % 86_400) / 3600)} h`;
}

/**
 * A body for reading: pretty-printed when it is JSON, as-is when it is other text.
 * @param {{ bytes: number, text: string | null, base64: string } | null} body
 */
export function bodyText(body) {
  if (body === null) return "(body cleared by retention)";
  if (body.text === null) return `(not UTF-8; base64) ${body.base64}`;
  try {
    return JSON.stringify(JSON.parse(body.text), null, 2);
  } catch {
    return body.text;
  }
}
