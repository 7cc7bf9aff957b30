/**
 * Counts over time: stacked uPlot bars, one per bucket (UTC), with a checkbox per series that shows
 * or hides it; and the tiles of the window's totals. Usage stacks verification outcomes, rate
 * limits passed and blocked decisions.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import uPlot from "uplot"

/** A stacked series: its field in the answer, its label and colour. */
export type Series<N extends string> = readonly [name: N, label: string, color: string]

/** A bucket of an analytics answer: its time and a count per series. */
export type Point<N extends string> = { readonly time?: number | undefined } & Readonly<Record<N, number>>

/** The sums of `names` over the points. */
export const totalsOf = <N extends string>(points: ReadonlyArray<Point<N>>, names: ReadonlyArray<N>) =>
  Object.fromEntries(names.map((n) => [n, points.reduce((sum, p) => sum + p[n], 0)])) as Record<N, number>

/** The window's totals, a tile each, marked with its name for tests. */
export const Tiles = <N extends string>(
  props: { totals: Record<N, number>; tiles: ReadonlyArray<readonly [N, string]> }
) => {
  ;(window as any).__keymeterTotals = props.totals
  return (
    <div class="tiles" data-testid="totals">
      {props.tiles.map(([name, label]) => (
        <div class="tile" key={name}>
          {label}
          <strong data-total={name}>{props.totals[name]}</strong>
        </div>
      ))}
    </div>
  )
}

/**
 * The chart of a window's buckets, its series stacked in the order given (the first at the
 * bottom). `label` names it for screen readers.
 */
export const Chart = <N extends string>(
  props: { points: ReadonlyArray<Point<N>>; series: ReadonlyArray<Series<N>>; bucket: string; label: string }
) => {
  const ref = useRef<HTMLDivElement>(null)
  const [hidden, setHidden] = useState<ReadonlySet<N>>(new Set())
  useEffect(() => {
    if (ref.current === null) return
    const x = props.points.map((p) => (p.time ?? 0) / 1000)
    // Stacked: each series is the running sum of the series below it (uPlot does not stack).
    const shown = props.series.filter(([name]) => !hidden.has(name))
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
    ) // What is drawn, unstacked, for tests to compare with the API's answer.
    ;(window as any).__keymeter = {
      chart: {
        label: props.label,
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
      <div class="chart" ref={ref} aria-label={props.label} role="img" />
      <div role="group" aria-label="series shown">
        {props.series.map(([name, label, color]) => (
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
