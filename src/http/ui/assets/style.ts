/**
 * The dashboard's stylesheet. Light and dark through `prefers-color-scheme`; every colour pair
 * meets WCAG AA contrast; a status is always written out, its colour only repeats it; focus is
 * always visible.
 */
export const DASHBOARD_CSS = `:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1a1d21; --muted: #555d66; --line: #d0d5db; --panel: #f5f7f9;
  --link: #0b57d0; --focus: #0b57d0;
  --received-bg: #e8eefc; --received-fg: #1d3f8f;
  --processing-bg: #fff1cc; --processing-fg: #6b4500;
  --done-bg: #e3f4e8; --done-fg: #1b5e2e;
  --failed-bg: #fde7e7; --failed-fg: #9b1c1c;
  --chart-received: #3f6fd1; --chart-failed: #c53030; --chart-grid: #d0d5db;
  --button-bg: #0b57d0; --button-fg: #ffffff; --danger-bg: #b3261e;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #15181c; --fg: #e6e8eb; --muted: #a5adb8; --line: #3a4048; --panel: #1e2227;
    --link: #8ab4f8; --focus: #8ab4f8;
    --received-bg: #1e2a47; --received-fg: #c2d3ff;
    --processing-bg: #3d2f0c; --processing-fg: #ffd98a;
    --done-bg: #15331f; --done-fg: #a6e3b8;
    --failed-bg: #4a1a1a; --failed-fg: #ffbdbd;
    --chart-received: #7aa2f0; --chart-failed: #f08080; --chart-grid: #3a4048;
    --button-bg: #8ab4f8; --button-fg: #0d1b33; --danger-bg: #ffb4ab;
  }
}
* { box-sizing: border-box; }
html { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
body { margin: 0; }
a { color: var(--link); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
main { display: block; max-width: 82rem; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
main:focus { outline: none; }
h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 2rem 0 0.75rem; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; }
.muted { color: var(--muted); }
.visually-hidden { position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
.skip { position: absolute; left: -999px; top: 0.5rem; background: var(--bg); padding: 0.5rem 1rem; z-index: 2; }
.skip:focus { left: 0.5rem; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 1.5rem; padding: 0.6rem 1.25rem; border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-weight: 700; text-decoration: none; color: var(--fg); }
header.top nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
header.top nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
.sign-out { margin-left: auto; }
.link-button { background: none; border: 0; padding: 0; font: inherit; color: var(--link); text-decoration: underline; cursor: pointer; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1rem; }
caption { text-align: left; font-weight: 600; padding: 0.25rem 0; }
th, td { text-align: left; padding: 0.4rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: break-word; }
.break { overflow-wrap: anywhere; min-width: 12ch; }
td.wide { min-width: 25ch; }
.nowrap { white-space: nowrap; }
thead th { border-bottom: 2px solid var(--line); white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody th { font-weight: 600; }
.badge { display: inline-block; padding: 0.05rem 0.5rem; border-radius: 0.8rem; font-size: 0.8rem; vertical-align: middle; font-weight: 600; border: 1px solid currentColor; white-space: nowrap; }
.badge-received { background: var(--received-bg); color: var(--received-fg); }
.badge-processing { background: var(--processing-bg); color: var(--processing-fg); }
.badge-done { background: var(--done-bg); color: var(--done-fg); }
.badge-failed { background: var(--failed-bg); color: var(--failed-fg); }
.badge-filtered { background: var(--received-bg); color: var(--received-fg); border-style: dashed; }
.badge-grade-strong { background: var(--done-bg); color: var(--done-fg); }
.badge-grade-fair { background: var(--received-bg); color: var(--received-fg); }
.badge-grade-weak { background: var(--failed-bg); color: var(--failed-fg); }
ul.notes { margin: 0; padding-left: 1rem; font-size: 0.9em; }
.incident { border: 1px solid var(--line); border-radius: 0.5rem; padding: 0.25rem 1rem 0.5rem; margin: 0 0 1rem; background: var(--panel); }
.incident h2, .incident h3 { margin: 0.5rem 0; }
.timeline { margin: 0.25rem 0; padding-left: 1.25rem; font-size: 0.95em; }
.timeline li { margin: 0.2rem 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(11rem, 1fr)); gap: 0.75rem; margin: 0 0 1rem; padding: 0; list-style: none; }
.card { border: 1px solid var(--line); border-radius: 0.5rem; padding: 0.75rem 1rem; background: var(--panel); }
.card .label { display: block; color: var(--muted); font-size: 0.9em; }
.card .value { display: block; font-size: 1.6rem; font-weight: 700; font-variant-numeric: tabular-nums; }
.card .value a { text-decoration: none; }
.card .value a:hover, .card .value a:focus-visible { text-decoration: underline; }
.chart { width: 100%; max-width: 48rem; height: auto; display: block; }
.chart .bar-received { fill: var(--chart-received); }
.chart .bar-failed { fill: var(--chart-failed); }
.chart .grid { stroke: var(--chart-grid); stroke-width: 1; }
.chart text { fill: var(--muted); font-size: 11px; }
.legend { display: flex; gap: 1.25rem; list-style: none; padding: 0; margin: 0.25rem 0; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.35em; vertical-align: -0.1em; border-radius: 2px; }
.swatch-received { background: var(--chart-received); }
.swatch-failed { background: var(--chart-failed); }
form.filters { display: flex; flex-wrap: wrap; gap: 0.75rem 1rem; align-items: flex-end; padding: 0.75rem 1rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--panel); margin-bottom: 1rem; }
.field { display: flex; flex-direction: column; gap: 0.2rem; }
.field label { font-size: 0.9em; font-weight: 600; }
.field-check { flex-direction: row; align-items: center; align-self: end; gap: 0.4rem; padding-bottom: 0.4rem; }
.field-check input { min-width: 0; margin: 0; }
.hint { font-size: 0.8em; color: var(--muted); }
input, select, button { font: inherit; color: inherit; }
input, select { padding: 0.3rem 0.5rem; border: 1px solid var(--muted); border-radius: 0.3rem; background: var(--bg); min-width: 8rem; }
button, .button { display: inline-block; padding: 0.35rem 0.9rem; border-radius: 0.3rem; border: 1px solid var(--button-bg); background: var(--button-bg); color: var(--button-fg); cursor: pointer; text-decoration: none; font-weight: 600; }
.button-secondary { background: transparent; color: var(--link); border-color: var(--link); }
.button-danger { background: var(--danger-bg); border-color: var(--danger-bg); color: var(--bg); }
button.copy { padding: 0.05rem 0.5rem; font-size: 0.85em; font-weight: 500; background: transparent; color: var(--link); border-color: var(--line); margin-left: 0.5rem; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: center; margin: 1rem 0; }
.actions form { margin: 0; }
.notice { border: 1px solid var(--line); border-left-width: 5px; border-radius: 0.3rem; padding: 0.6rem 1rem; margin: 0 0 1rem; background: var(--panel); }
.notice p { margin: 0.2rem 0; }
.notice-info { border-left-color: var(--chart-received); }
.notice-error { border-left-color: var(--chart-failed); }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: 0.35rem 1.25rem; margin: 0 0 1rem; }
dl.fields dt { font-weight: 600; color: var(--muted); }
dl.fields dd { margin: 0; overflow-wrap: anywhere; }
pre.block { background: var(--panel); border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.75rem 1rem; overflow: auto; max-height: 36rem; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.5rem 0; }
.pager { display: flex; gap: 1rem; align-items: center; }
.login { max-width: 26rem; margin: 3rem auto; }
.login .field { margin-bottom: 1rem; }
.login input { width: 100%; }
`;
