// Bindings the test config adds on top of wrangler.toml's.
declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    STANDARD_WEBHOOK_SECRET: string;
    SVIX_WEBHOOK_SECRET: string;
    ADMIN_TOKEN: string;
  }
}
