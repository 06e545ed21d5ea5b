/** The Hono environment shared by every route: the bindings and the parsed config. */
import type { InboxConfig } from "../config";

export interface AppEnv {
  Bindings: Env;
  Variables: { config: InboxConfig };
}
