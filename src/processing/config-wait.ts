/**
 * Queue batches wait out an invalid configuration instead of running the consumer: a config
 * typo must never fail a delivery. The batch is retried with a delay, so its messages neither
 * burn their retries in seconds nor reach the dead-letter queue before someone fixes the var.
 */
import { checkConfig, ConfigError } from "../config";

/** How long a batch waits before it checks the configuration again. */
export const CONFIG_RETRY_DELAY_SECONDS = 300;

/**
 * Checks the configuration before a batch runs. When it is invalid, retries the whole batch in
 * CONFIG_RETRY_DELAY_SECONDS, logs once for the batch (naming the vars, never their values), and
 * returns true: the caller must then leave the batch alone.
 */
export function deferIfConfigInvalid(batch: MessageBatch, env: Env): boolean {
  const config = checkConfig(env);
  if (!(config instanceof ConfigError)) return false;
  console.error(
    `queue ${batch.queue}: ${batch.messages.length} message(s) wait ${CONFIG_RETRY_DELAY_SECONDS} s for the configuration to be fixed: ${config.message}`,
  );
  batch.retryAll({ delaySeconds: CONFIG_RETRY_DELAY_SECONDS });
  return true;
}
