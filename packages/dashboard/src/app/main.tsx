/**
 * The dashboard page: sign in with a root key (kept in sessionStorage only), then verifications
 * over time by outcome for an api and a window, with totals. Every number comes from the public
 * /v1 routes, called with the key; the view (api, window) lives in the URL, never the key.
 */
import { render } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import uPlot from "uplot"

const OUTCOMES = [
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
type Outcome = typeof OUTCOMES[number][0]
type Datapoint = { time?: number; total: number } & Record<Outcome, number>

const KEY = "keymeter.rootKey"
const WINDOWS = { "24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000, "90d": 90 * 86_400_000 }
type Window = keyof typeof WINDOWS | "custom"
type Resolution = "hour" | "day" | "month"
const RESOLUTIONS: ReadonlyArray<Resolution> = ["hour", "day", "month"]
const HOUR = 3_600_000

/** A time as a datetime-local input shows it, in UTC. */
const utcInput = (ms: number) => new Date(ms).toISOString().slice(0, 16)

/** The bucket a window is shown in: hours up to three days, days up to 90, then months. */
const bucketOf = (ms: number) => (ms <= 3 * 86_400_000 ? "hour" : ms <= 90 * 86_400_000 ? "day" : "month")

/** The page's base: where /dashboard is mounted (the API is beside it). */
const base = location.pathname.replace(/\/dashboard\/?$/, "")

class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

async function call<A>(key: string, path: string): Promise<A> {
  const reply = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } })
  const body = await reply.json().catch(() => undefined)
  if (!reply.ok) {
    throw new ApiError(reply.status, body?.error?.code ?? "ERROR", body?.error?.message ?? `HTTP ${reply.status}`)
  }
  return body as A
}

/** What the page shows: the api, the window and the filters, all in the URL. */
interface View {
  readonly apiId: string
  readonly window: Window
  /** A custom window, unix ms (with `window: "custom"`). */
  readonly start?: number | undefined
  readonly end?: number | undefined
  /** The bucket asked for; chosen from the window's length when absent. */
  readonly resolution?: Resolution | undefined
  readonly keyId?: string | undefined
  readonly externalId?: string | undefined
  readonly tag?: string | undefined
}
const FILTERS = ["keyId", "externalId", "tag"] as const

const readView = (): View => {
  const params = new URLSearchParams(location.search)
  const window = (params.get("window") ?? "7d") as Window
  const view: Record<string, string> = {}
  for (const name of FILTERS) {
    const value = params.get(name)
    if (value) view[name] = value
  }
  const start = Number(params.get("start"))
  const end = Number(params.get("end"))
  const custom = window === "custom" && Number.isSafeInteger(start) && Number.isSafeInteger(end) && start < end &&
    start > 0
  const resolution = params.get("resolution") as Resolution | null
  return {
    apiId: params.get("apiId") ?? "",
    window: custom ? "custom" : window in WINDOWS ? window : "7d",
    ...(custom ? { start, end } : {}),
    ...(resolution !== null && RESOLUTIONS.includes(resolution) ? { resolution } : {}),
    ...view
  }
}

/** The view's query parameters (filters included), as the URL and the API take them. */
const paramsOf = (view: View) => {
  const params = new URLSearchParams()
  if (view.apiId) params.set("apiId", view.apiId)
  params.set("window", view.window)
  if (view.window === "custom") {
    params.set("start", String(view.start))
    params.set("end", String(view.end))
  }
  if (view.resolution !== undefined) params.set("resolution", view.resolution)
  for (const name of FILTERS) if (view[name] !== undefined) params.set(name, view[name]!)
  return params
}

type Row = Datapoint & { keyId?: string; identity?: { id: string; externalId: string }; tag?: string }

/** A top-10 table whose rows filter the view. */
const Top = (props: {
  title: string
  rows: ReadonlyArray<Row> | undefined
  label: (row: Row) => string
  pick: (row: Row) => Partial<View>
  onPick: (filter: Partial<View>) => void
}) => (
  <section class="top">
    <h2>{props.title}</h2>
    {props.rows === undefined
      ? <p class="empty">Loading…</p>
      : props.rows.length === 0
      ? <p class="empty">None in this window.</p>
      : (
        <table>
          <thead>
            <tr>
              <th scope="col">{props.title.replace(/^Top /, "")}</th>
              <th scope="col">total</th>
              <th scope="col">valid</th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map((row) => (
              <tr key={props.label(row)}>
                <td>
                  <a
                    href={`?${paramsOf({ ...readView(), ...props.pick(row) })}`}
                    onClick={(event) => {
                      event.preventDefault()
                      props.onPick(props.pick(row))
                    }}
                  >
                    {props.label(row)}
                  </a>
                </td>
                <td>{row.total}</td>
                <td>{row.valid}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
  </section>
)

const SignIn = (props: { onKey: (key: string) => void; message?: string | undefined }) => {
  const [value, setValue] = useState("")
  return (
    <div class="signin">
      <h1>keymeter</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          if (value.trim() !== "") props.onKey(value.trim())
        }}
      >
        <label>
          Root key
          <input
            type="password"
            name="rootKey"
            autocomplete="off"
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        </label>
        {props.message !== undefined && <p class="error" role="alert">{props.message}</p>}
        <button type="submit">Sign in</button>
      </form>
      <p class="empty">The key stays in this tab (sessionStorage) and is sent only to this server.</p>
    </div>
  )
}

const Chart = (props: { points: ReadonlyArray<Datapoint>; bucket: string }) => {
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

const Usage = (props: { rootKey: string; onSignOut: (message?: string) => void }) => {
  const [view, setView] = useState(readView)
  const [apis, setApis] = useState<ReadonlyArray<{ apiId: string; name: string }> | undefined>()
  useEffect(() => {
    call<{ apis: ReadonlyArray<{ apiId: string; name: string }> }>(props.rootKey, "/v1/apis.listApis").then(
      (list) => {
        setApis(list.apis)
        // No api in the URL: the first this key may read.
        if (list.apis.length > 0) {
          setView((current) => current.apiId === "" ? { ...current, apiId: list.apis[0]!.apiId } : current)
        }
      },
      (error: unknown) => {
        if (error instanceof ApiError && error.status === 401) props.onSignOut(`This key was refused: ${error.message}`)
        else setApis([])
      }
    )
  }, [])
  const [state, setState] = useState<
    { kind: "idle" } | { kind: "loading" } | { kind: "error"; message: string } | {
      kind: "ready"
      points: ReadonlyArray<Datapoint>
      bucket: string
    }
  >({ kind: "idle" })
  const [tops, setTops] = useState<{
    keys?: ReadonlyArray<Row>
    identities?: ReadonlyArray<Row>
    tags?: ReadonlyArray<Row>
  }>({})
  useEffect(() => {
    const params = paramsOf(view)
    if (location.search !== `?${params}`) history.pushState(null, "", `${location.pathname}?${params}`)
    if (view.apiId === "") return setState({ kind: "idle" })
    const end = view.window === "custom" ? view.end! : Date.now()
    const start = view.window === "custom" ? view.start! : Math.floor((end - WINDOWS[view.window]) / HOUR) * HOUR
    const bucket = view.resolution ?? bucketOf(end - start)
    setState({ kind: "loading" })
    const query = (extra: Record<string, string>) => {
      const q = new URLSearchParams({ apiId: view.apiId, start: String(start), end: String(end), ...extra })
      for (const name of FILTERS) if (view[name] !== undefined) q.set(name, view[name]!)
      return `/v1/analytics.getVerifications?${q}`
    }
    setTops({})
    const top = (groupBy: string) =>
      call<ReadonlyArray<Row>>(props.rootKey, query({ groupBy, orderBy: "total", order: "desc", limit: "10" }))
    void Promise.all([top("key"), top("identity"), top("tag")]).then(
      ([keys, identities, tags]) => setTops({ keys, identities, tags }),
      () => setTops({ keys: [], identities: [], tags: [] })
    )
    call<ReadonlyArray<Datapoint>>(props.rootKey, query({ groupBy: bucket })).then(
      (points) => setState({ kind: "ready", points, bucket }),
      (error: unknown) => {
        if (error instanceof ApiError && error.status === 401) {
          return props.onSignOut(`This key was refused: ${error.message}`)
        }
        const message = error instanceof ApiError
          ? error.status === 403
            ? `This key may not read api ${view.apiId} (${error.code}).`
            : `${error.message} (${error.code})`
          : String(error)
        setState({ kind: "error", message })
      }
    )
  }, [view.apiId, view.window, view.start, view.end, view.resolution, view.keyId, view.externalId, view.tag])
  // Back and forward move between views.
  useEffect(() => {
    const back = () => setView(readView())
    addEventListener("popstate", back)
    return () => removeEventListener("popstate", back)
  }, [])
  const totals = state.kind === "ready"
    ? Object.fromEntries(
      ["total", ...OUTCOMES.map(([n]) => n)].map((n) => [n, state.points.reduce((s, p) => s + (p as any)[n], 0)])
    )
    : undefined
  if (totals !== undefined) (window as any).__keymeterTotals = totals
  const pick = (filter: Partial<View>) => setView({ ...view, ...filter })
  const active = FILTERS.filter((name) => view[name] !== undefined)
  return (
    <main>
      {active.length > 0 && (
        <p class="filters" aria-label="filters">
          {active.map((name) => (
            <button
              key={name}
              type="button"
              class="chip"
              aria-label={`remove filter ${name} ${view[name]}`}
              onClick={() => setView({ ...view, [name]: undefined })}
            >
              {name}: {view[name]} ×
            </button>
          ))}
        </p>
      )}
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <label>
          Api
          <select
            name="apiId"
            value={view.apiId}
            onChange={(e) => setView({ apiId: (e.target as HTMLSelectElement).value, window: view.window })}
          >
            {view.apiId !== "" && !(apis ?? []).some((api) => api.apiId === view.apiId) && (
              <option value={view.apiId}>{view.apiId}</option>
            )}
            {(apis ?? []).map((api) => <option key={api.apiId} value={api.apiId}>{api.name} ({api.apiId})</option>)}
          </select>
        </label>
        <label>
          Window
          <select
            name="window"
            value={view.window}
            onChange={(e) => {
              const window = (e.target as HTMLSelectElement).value as Window
              if (window !== "custom") return setView({ ...view, window, start: undefined, end: undefined })
              // A custom window starts as the last seven days, to the hour.
              const end = Math.ceil(Date.now() / HOUR) * HOUR
              setView({ ...view, window, start: end - WINDOWS["7d"], end })
            }}
          >
            <option value="24h">last 24 hours</option>
            <option value="7d">last 7 days</option>
            <option value="30d">last 30 days</option>
            <option value="90d">last 90 days</option>
            <option value="custom">custom (UTC)</option>
          </select>
        </label>
        {view.window === "custom" && (
          <>
            <label>
              From (UTC)
              <input
                type="datetime-local"
                name="start"
                value={utcInput(view.start!)}
                onChange={(e) => {
                  const start = Date.parse((e.target as HTMLInputElement).value + "Z")
                  if (Number.isFinite(start) && start < view.end!) setView({ ...view, start })
                }}
              />
            </label>
            <label>
              To (UTC)
              <input
                type="datetime-local"
                name="end"
                value={utcInput(view.end!)}
                onChange={(e) => {
                  const end = Date.parse((e.target as HTMLInputElement).value + "Z")
                  if (Number.isFinite(end) && end > view.start!) setView({ ...view, end })
                }}
              />
            </label>
          </>
        )}
        <label>
          Resolution
          <select
            name="resolution"
            value={view.resolution ?? "auto"}
            onChange={(e) => {
              const value = (e.target as HTMLSelectElement).value
              setView({ ...view, resolution: value === "auto" ? undefined : value as Resolution })
            }}
          >
            <option value="auto">automatic</option>
            <option value="hour">hours</option>
            <option value="day">days</option>
            <option value="month">months</option>
          </select>
        </label>
      </form>
      {state.kind === "idle" && (
        <p class="empty">
          {apis !== undefined && apis.length === 0
            ? "This key may read no api yet. Create one (apis.createApi), or sign in with a key that may read one."
            : "Pick an api to see its verifications."}
        </p>
      )}
      {state.kind === "loading" && <p class="empty" aria-live="polite">Loading…</p>}
      {state.kind === "error" && <p class="error" role="alert">{state.message}</p>}
      {state.kind === "ready" && totals !== undefined && (
        <>
          <div class="tiles" data-testid="totals">
            <div class="tile">
              total<strong data-total="total">{totals.total}</strong>
            </div>
            {OUTCOMES.map(([name, label]) => (
              <div class="tile" key={name}>
                {label}
                <strong data-total={name}>{totals[name]}</strong>
              </div>
            ))}
          </div>
          {totals.total === 0
            ? (
              <p class="empty">
                No verifications in this window. Record some (analytics.recordVerifications) or verify keys
                (keys.verifyKey).
              </p>
            )
            : <Chart points={state.points} bucket={state.bucket} />}
          <div class="tops">
            <Top
              title="Top keys"
              rows={tops.keys}
              label={(r) => r.keyId ?? ""}
              pick={(r) => ({ keyId: r.keyId })}
              onPick={pick}
            />
            <Top
              title="Top identities"
              rows={tops.identities?.filter((r) => r.identity !== undefined)}
              label={(r) => r.identity!.externalId}
              pick={(r) => ({ externalId: r.identity!.externalId })}
              onPick={pick}
            />
            <Top
              title="Top tags"
              rows={tops.tags}
              label={(r) => r.tag ?? ""}
              pick={(r) => ({ tag: r.tag })}
              onPick={pick}
            />
          </div>
        </>
      )}
    </main>
  )
}

const App = () => {
  const [rootKey, setRootKey] = useState(() => sessionStorage.getItem(KEY) ?? undefined)
  const [message, setMessage] = useState<string | undefined>()
  if (rootKey === undefined) {
    return (
      <SignIn
        message={message}
        onKey={(key) => {
          sessionStorage.setItem(KEY, key)
          setMessage(undefined)
          setRootKey(key)
        }}
      />
    )
  }
  const signOut = (why?: string) => {
    sessionStorage.removeItem(KEY)
    setMessage(why)
    setRootKey(undefined)
  }
  return (
    <>
      <header>
        <h1>keymeter</h1>
        <span>Usage</span>
        <button type="button" onClick={() => signOut()}>Sign out</button>
      </header>
      <Usage rootKey={rootKey} onSignOut={signOut} />
    </>
  )
}

render(<App />, document.getElementById("app")!)
