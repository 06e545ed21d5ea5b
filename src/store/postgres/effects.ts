/**
 * A handler's effects as Postgres statements (store/postgres/lifecycle.ts `commitDone` runs them in
 * the done mark's transaction): a portable `sql` statement rendered with `$N`, and the statements
 * that would break that one transaction refused.
 */
import { SqlStatement } from "../../sql";
import type { Effect } from "../store";

/**
 * Transaction control as an effect would break the one transaction (a COMMIT in the middle commits
 * the mark without the rest, a ROLLBACK undoes the mark and the rest autocommits): refused. Each
 * effect runs as one statement (extended protocol), so only its first keyword can be one of these;
 * comments before it are skipped (LEADING_COMMENTS), as the server skips them.
 */
const TRANSACTION_CONTROL = /^(BEGIN|START|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE|PREPARE\s+TRANSACTION)\b/i;
/** Whitespace and `--` line comments at the start of a statement (block comments, which Postgres nests, are `statementStart`'s). */
const LEADING_SPACE_OR_LINE_COMMENT = /^(\s+|--[^\n]*(\n|$))+/;

/**
 * The text of a statement from its first keyword: whitespace and comments skipped, nested block
 * comments included. An unterminated comment leaves "" (the server refuses such a statement anyway).
 */
export function statementStart(text: string): string {
  let rest = text;
  for (;;) {
    rest = rest.replace(LEADING_SPACE_OR_LINE_COMMENT, "");
    if (!rest.startsWith("/*")) return rest;
    let depth = 0;
    let index = 0;
    while (index < rest.length) {
      if (rest.startsWith("/*", index)) {
        depth++;
        index += 2;
      } else if (rest.startsWith("*/", index)) {
        depth--;
        index += 2;
        if (depth === 0) break;
      } else index++;
    }
    if (depth !== 0) return "";
    rest = rest.slice(index);
  }
}

/**
 * A handler's effect as Postgres text and values: a portable `sql` statement rendered with `$N`.
 * A D1 prepared statement cannot run here: an Error says so (refused, permanent).
 */
export function postgresStatement(effect: Effect): { text: string; values: readonly unknown[] } | Error {
  if (!(effect instanceof SqlStatement)) {
    return new Error("a D1 statement (env.DB.prepare) cannot run in the Postgres store: write the handler's effects with ctx.sql");
  }
  const text = effect.render((position) => `$${position}`);
  if (TRANSACTION_CONTROL.test(statementStart(text))) return new Error(`an effect may not control the transaction it runs in: ${statementStart(text).slice(0, 40)}`);
  // pg binds a Uint8Array as bytes, a bigint and a boolean as their text.
  return { text, values: effect.values };
}

