/** The problems of a config that must be refused (throws when it is accepted). */
import { ConfigError, loadConfig } from "../../src/config";

export function problemsOf(vars: Record<string, string>) {
  try {
    loadConfig(vars);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error(`accepted: ${JSON.stringify(vars)}`);
}
