/**
 * Received and failed deliveries per hour as a small SVG bar chart, drawn on the server (no
 * script, no library). The chart is an image with a name and a summary; the table beside it
 * (OverviewPage) holds every value as text.
 */
import type { HourCount } from "../../../store/snapshot";

const WIDTH = 720;
const HEIGHT = 200;
const LEFT = 40;
const BOTTOM = 24;
const TOP = 10;

/** A round number at or above `value` for the top of the scale: 1, 2, 5, 10, 20, 50, … */
function scaleTop(value: number): number {
  if (value <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((step) => step * magnitude).find((top) => top >= value) ?? 10 * magnitude;
}

/** "07:00" of an hour's ISO start. */
export function hourLabel(iso: string): string {
  return iso.slice(11, 16);
}

export function HourlyChart(props: { hours: readonly HourCount[] }) {
  const top = scaleTop(Math.max(0, ...props.hours.map((hour) => hour.received)));
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = (WIDTH - LEFT) / Math.max(1, props.hours.length);
  const barWidth = Math.max(2, slot / 2 - 2);
  const y = (value: number) => TOP + plotHeight - (value / top) * plotHeight;
  const busiest = props.hours.reduce<HourCount | undefined>((best, hour) => (best === undefined || hour.received > best.received ? hour : best), undefined);
  const totalReceived = props.hours.reduce((sum, hour) => sum + hour.received, 0);
  const totalFailed = props.hours.reduce((sum, hour) => sum + hour.failed, 0);
  const summary =
    totalReceived === 0
      ? "No deliveries were received in the last 24 hours."
      : `${totalReceived} received and ${totalFailed} failed in the last 24 hours; the busiest hour began at ${hourLabel(busiest!.hour)} UTC with ${busiest!.received} received. The table below lists every hour.`;
  return (
    <svg class="chart" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby="chart-title chart-summary">
      <title id="chart-title">Received and failed deliveries per hour, last 24 hours (UTC)</title>
      <desc id="chart-summary">{summary}</desc>
      {/* Counts are whole: a middle tick only where it is a whole number (no "0.5" above 0 and below 1). */}
      {[0, top / 2, top].filter(Number.isInteger).map((value) => (
        <>
          <line class="grid" x1={LEFT} x2={WIDTH} y1={y(value)} y2={y(value)} />
          <text x={LEFT - 6} y={y(value) + 4} text-anchor="end">
            {value}
          </text>
        </>
      ))}
      {props.hours.map((hour, index) => {
        const x = LEFT + index * slot + 1;
        return (
          <>
            <rect class="bar-received" x={x} y={y(hour.received)} width={barWidth} height={Math.max(0, y(0) - y(hour.received))} />
            <rect class="bar-failed" x={x + barWidth + 1} y={y(Math.min(hour.failed, top))} width={barWidth} height={Math.max(0, y(0) - y(Math.min(hour.failed, top)))} />
            {index % 3 === 0 ? (
              <text x={x + barWidth} y={HEIGHT - 6} text-anchor="middle">
                {hourLabel(hour.hour)}
              </text>
            ) : null}
          </>
        );
      })}
    </svg>
  );
}
