/** Reading the command line of the dev runners (dev.mjs, dev-postgres.mjs), which pass the rest to wrangler. */

/**
 * The value of `--name value` or `--name=value` in `args`, or undefined.
 * @param {string[]} args
 * @param {string} name
 * @example
 * option(["--port", "8788", "--persist-to=.state"], "--persist-to"); // ".state"
 */
export function option(args, name) {
  for (let index = 0; index < args.length; index++) {
    if (args[index] === name) return args[index + 1];
    if (args[index].startsWith(`${name}=`)) return args[index].slice(name.length + 1);
  }
  return undefined;
}
