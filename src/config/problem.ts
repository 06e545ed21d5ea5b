/**
 * One thing wrong with the configuration: the vars involved and what is wrong, never their values.
 * A file of its own so that every part that checks vars (index.ts, forwarding.ts) can name
 * it without importing the others.
 */
export interface ConfigProblem {
  readonly variables: readonly string[];
  readonly problem: string;
}
