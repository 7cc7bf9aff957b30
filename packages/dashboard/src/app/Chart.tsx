/**
 * Verifications over time by outcome: stacked uPlot bars, one per bucket (UTC), with a checkbox
 * per outcome that shows or hides its series.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import uPlot from "uplot"

/** The nine outcomes: wire name, label, colour; valid first, so it sits at the bottom of a stack. */
export const OUTCOMES = [
  ["valid", "valid", "#2e9e5b"],
  ["rateLimited", "rate limited", "#e0a100"],
  ["usageExceeded", "usage exceeded", "#8e44ad"],
  ["insufficientPermissions", "insufficient permissions", "#c0392b"],
  ["forbidden", "forbidden", "#e74c3c"],
  ["unauthorized", "unauthorized", "#d35400"],
  ["disabled", "disabled", "#7f8c8d"],
  ["expired", "expired", "#f39c12"],
  ["notFound", "not found", "#34495e"]
] as const
export type Outcome = typeof OUTCOMES[number][0]
export type Datapoint = { time?: number; total: number } & Record<Outcome, number>

/** The chart of a window's buckets. */
export const Chart = (props: { points: ReadonlyArray<Datapoint>; bucket: string }) => {
  const ref = useRef<HTMLDivElement>(null)
  const [hidden, setHidden] = useState<ReadonlySet<Outcome>>(new Set())
  useEffect(() => {
    if (ref.current === null) return
    const x = props.points.map((p) => (p.time ?? 0) / 1000)
    // Stacked: each series is the running sum of the outcomes below it (uPlot does not stack).
    const shown = OUTCOMES.filter(([name]) => !hidden.has(name))
    let running = props.points.map(() => 0)
    const stacked = shown.map(([name]) => (running = running.map((sum, i) => sum + props.points[i]![name])))
    const width = Math.max(300, ref.current.clientWidth - 16)
    // The largest sum is drawn first, each smaller one over it: series and data top down.
    const order = shown.map((_, i) => i).reverse()
    const chart = new uPlot(
      {
        width,
        height: 280,
        legend: { show: false },
        // Buckets are UTC hours, days and months: the axis says UTC.
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        scales: { x: { time: true } },
        axes: [{}, { size: 60 }],
        series: [
          { label: "time (UTC)" },
          ...order.map((i) => {
            const [, label, color] = shown[i]!
            return {
              label,
              stroke: color,
              fill: color + "cc",
              points: { show: false },
              paths: uPlot.paths.bars!({ size: [0.9, 40] })
            }
          })
        ]
      },
      [x, ...order.map((i) => stacked[i]!)] as uPlot.AlignedData,
      ref.current
    )
    ;(window as any).__keymeter = {
      chart: {
        x,
        series: Object.fromEntries(shown.map(([n]) => [n, props.points.map((p) => p[n])])),
        buckets: x.length,
        bucket: props.bucket
      }
    }
    // Follows the page's width (a phone turned, a window resized).
    const resize = new ResizeObserver(() => {
      if (ref.current !== null) chart.setSize({ width: Math.max(300, ref.current.clientWidth - 16), height: 280 })
    })
    resize.observe(ref.current)
    return () => {
      resize.disconnect()
      chart.destroy()
    }
  }, [props.points, hidden])
  return (
    <div>
      <div class="chart" ref={ref} aria-label={`verifications per ${props.bucket} by outcome`} role="img" />
      <div role="group" aria-label="outcomes shown">
        {OUTCOMES.map(([name, label, color]) => (
          <label key={name} style={{ display: "inline-flex", flexDirection: "row", marginRight: "0.75rem" }}>
            <input
              type="checkbox"
              checked={!hidden.has(name)}
              onChange={() => {
                const next = new Set(hidden)
                if (next.has(name)) {
                  next.delete(name)
                } else next.add(name)
                setHidden(next)
              }}
            />
            <span style={{ color }}>{label}</span>
          </label>
        ))}
      </div>
    </div>
  )
}
