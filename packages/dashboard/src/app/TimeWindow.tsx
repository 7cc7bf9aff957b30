/**
 * The window a section's counts are read over (usage, rate limits): a named one ending now or a
 * custom one in UTC, and the bucket it is shown in; read from and written to the URL, turned into
 * the `start`, `end` and `groupBy` the analytics routes take, and picked with the same controls.
 */

export const WINDOWS = { "24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000, "90d": 90 * 86_400_000 }
export type WindowName = keyof typeof WINDOWS | "custom"
export type Resolution = "hour" | "day" | "month"
const RESOLUTIONS: ReadonlyArray<Resolution> = ["hour", "day", "month"]
export const HOUR = 3_600_000

/** A window and its resolution, as the URL holds them. */
export interface Span {
  readonly window: WindowName
  /** A custom window, unix ms (with `window: "custom"`). */
  readonly start?: number | undefined
  readonly end?: number | undefined
  /** The bucket asked for; chosen from the window's length when absent. */
  readonly resolution?: Resolution | undefined
}

/** The span in a URL's parameters; a custom window that is not one falls back to `fallback`. */
export const readSpan = (params: URLSearchParams, fallback: keyof typeof WINDOWS): Span => {
  const window = params.get("window") ?? fallback
  const start = Number(params.get("start"))
  const end = Number(params.get("end"))
  const custom = window === "custom" && Number.isSafeInteger(start) && Number.isSafeInteger(end) && start < end &&
    start > 0
  const resolution = params.get("resolution") as Resolution | null
  return {
    window: custom ? "custom" : window in WINDOWS ? window as WindowName : fallback,
    ...(custom ? { start, end } : {}),
    ...(resolution !== null && RESOLUTIONS.includes(resolution) ? { resolution } : {})
  }
}

/** The span's URL parameters, "" for those it leaves out (always the same names, in this order). */
export const spanParams = (span: Span) => ({
  window: span.window,
  start: span.window === "custom" ? String(span.start) : "",
  end: span.window === "custom" ? String(span.end) : "",
  resolution: span.resolution ?? ""
})

/** Only the span of a view that holds more (another api or namespace keeps the window, not the filters). */
export const spanOf = (span: Span): Span => ({
  window: span.window,
  ...(span.window === "custom" ? { start: span.start, end: span.end } : {}),
  ...(span.resolution !== undefined ? { resolution: span.resolution } : {})
})

/** The bucket a window is shown in: hours up to three days, days up to 90, then months. */
const bucketOf = (ms: number): Resolution => (ms <= 3 * 86_400_000 ? "hour" : ms <= 90 * 86_400_000 ? "day" : "month")

/** What the analytics routes are asked: a named window ends now and starts on its first hour. */
export const rangeOf = (span: Span, now = Date.now()) => {
  const end = span.window === "custom" ? span.end! : now
  const start = span.window === "custom" ? span.start! : Math.floor((end - WINDOWS[span.window]) / HOUR) * HOUR
  return { start, end, bucket: span.resolution ?? bucketOf(end - start) }
}

/** A time as a datetime-local input shows it, in UTC. */
const utcInput = (ms: number) => new Date(ms).toISOString().slice(0, 16)

/** One end of a custom window, in UTC; a value that would empty the window is ignored. */
const UtcInput = (
  props: { label: string; name: string; value: number; accept: (ms: number) => boolean; onChange: (ms: number) => void }
) => (
  <label>
    {props.label} (UTC)
    <input
      type="datetime-local"
      name={props.name}
      value={utcInput(props.value)}
      onChange={(e) => {
        const ms = Date.parse((e.target as HTMLInputElement).value + "Z")
        if (Number.isFinite(ms) && props.accept(ms)) props.onChange(ms)
      }}
    />
  </label>
)

/** The window, its ends when custom, and the resolution: labelled controls for a `form.controls`. */
export const SpanControls = (props: { span: Span; onChange: (span: Span) => void }) => {
  const { span } = props
  return (
    <>
      <label>
        Window
        <select
          name="window"
          value={span.window}
          onChange={(e) => {
            const window = (e.target as HTMLSelectElement).value as WindowName
            if (window !== "custom") return props.onChange({ ...span, window, start: undefined, end: undefined })
            // A custom window starts as the last seven days, to the hour.
            const end = Math.ceil(Date.now() / HOUR) * HOUR
            props.onChange({ ...span, window, start: end - WINDOWS["7d"], end })
          }}
        >
          <option value="24h">last 24 hours</option>
          <option value="7d">last 7 days</option>
          <option value="30d">last 30 days</option>
          <option value="90d">last 90 days</option>
          <option value="custom">custom (UTC)</option>
        </select>
      </label>
      {span.window === "custom" && (
        <>
          <UtcInput
            label="From"
            name="start"
            value={span.start!}
            accept={(start) => start < span.end!}
            onChange={(start) => props.onChange({ ...span, start })}
          />
          <UtcInput
            label="To"
            name="end"
            value={span.end!}
            accept={(end) => end > span.start!}
            onChange={(end) => props.onChange({ ...span, end })}
          />
        </>
      )}
      <label>
        Resolution
        <select
          name="resolution"
          value={span.resolution ?? "auto"}
          onChange={(e) => {
            const value = (e.target as HTMLSelectElement).value
            props.onChange({ ...span, resolution: value === "auto" ? undefined : value as Resolution })
          }}
        >
          <option value="auto">automatic</option>
          <option value="hour">hours</option>
          <option value="day">days</option>
          <option value="month">months</option>
        </select>
      </label>
    </>
  )
}
