// Bindings the test config adds on top of wrangler.toml's.
declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    STANDARD_WEBHOOK_SECRET: string;
    SVIX_WEBHOOK_SECRET: string;
    STRIPE_WEBHOOK_SECRET: string;
    STRIPE_WEBHOOK_SECRET_PREVIOUS: string;
    GITHUB_WEBHOOK_SECRET: string;
    GITHUB_WEBHOOK_SECRET_PREVIOUS: string;
    SHOPIFY_WEBHOOK_SECRET: string;
    SHOPIFY_WEBHOOK_SECRET_PREVIOUS: string;
    SLACK_WEBHOOK_SECRET: string;
    SLACK_WEBHOOK_SECRET_PREVIOUS: string;
    TWILIO_WEBHOOK_SECRET: string;
    TWILIO_WEBHOOK_SECRET_PREVIOUS: string;
    GITLAB_WEBHOOK_SECRET: string;
    GITLAB_WEBHOOK_SECRET_PREVIOUS: string;
    ADMIN_TOKEN: string;
  }
}
