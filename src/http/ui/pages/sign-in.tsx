/** The sign-in page: one field, the admin token. */
import { Notice } from "../components";

export interface SignInProps {
  /** Where to go after signing in (already checked: a `/ui` path). */
  readonly next: string;
  readonly problem?: string | undefined;
}

export function SignInPage(props: SignInProps) {
  return (
    <div class="login">
      <h1>Sign in</h1>
      {props.problem ? (
        <Notice kind="error">
          <p>{props.problem}</p>
        </Notice>
      ) : null}
      <form method="post" action="/ui/login">
        {/* For password managers: the token is the password of one fixed user. */}
        <input type="text" name="username" value="admin" autocomplete="username" hidden readonly />
        <input type="hidden" name="next" value={props.next} />
        <div class="field">
          <label for="token">Admin token</label>
          <input id="token" name="token" type="password" autocomplete="current-password" required aria-describedby="token-hint" />
          <span id="token-hint" class="hint">
            The inbox's <code>ADMIN_TOKEN</code> secret. Signing in lasts 12 hours.
          </span>
        </div>
        <button type="submit">Sign in</button>
      </form>
    </div>
  );
}
