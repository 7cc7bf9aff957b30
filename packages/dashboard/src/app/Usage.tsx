/**
 * The usage section: pick an api, a window and a resolution; verifications over time by outcome,
 * the window's totals, and top-10 keys, identities and tags whose rows filter the view. The view
 * lives in the URL (bookmarkable, back and forward), the key never does.
 */
import { useEffect, useState } from "preact/hooks"
import { Chart, type Datapoint, OUTCOMES } from "./Chart.js"
import { explain, get } from "./Client.js"
import { useApis } from "./Lists.js"
import { Picker } from "./Picker.js"
import { type Session, signedOut } from "./Session.js"

const WINDOWS = { "24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000, "90d": 90 * 86_400_000 }
type Window = keyof typeof WINDOWS | "custom"
type Resolution = "hour" | "day" | "month"
const RESOLUTIONS: ReadonlyArray<Resolution> = ["hour", "day", "month"]
const HOUR = 3_600_000

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

/** The bucket a window is shown in: hours up to three days, days up to 90, then months. */
const bucketOf = (ms: number) => (ms <= 3 * 86_400_000 ? "hour" : ms <= 90 * 86_400_000 ? "day" : "month")

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

/** The usage section: an api's verifications over a window, by outcome, with its top lists. */
export const Usage = (props: { session: Session }) => {
  const [view, setView] = useState(readView)
  const apis = useApis(props.session)
  // No api in the URL: the first this key may read.
  useEffect(() => {
    const first = apis.items?.[0]
    if (first !== undefined) setView((current) => current.apiId === "" ? { ...current, apiId: first.apiId } : current)
  }, [apis.items])
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
    const route = "analytics.getVerifications"
    const query = (extra: Record<string, string>) => ({
      apiId: view.apiId,
      start: String(start),
      end: String(end),
      keyId: view.keyId,
      externalId: view.externalId,
      tag: view.tag,
      ...extra
    })
    setTops({})
    const top = (groupBy: string) =>
      get<ReadonlyArray<Row>>(
        props.session.rootKey,
        route,
        query({ groupBy, orderBy: "total", order: "desc", limit: "10" })
      )
    void Promise.all([top("key"), top("identity"), top("tag")]).then(
      ([keys, identities, tags]) => setTops({ keys, identities, tags }),
      () => setTops({ keys: [], identities: [], tags: [] })
    )
    get<ReadonlyArray<Datapoint>>(props.session.rootKey, route, query({ groupBy: bucket })).then(
      (points) => setState({ kind: "ready", points, bucket }),
      (error: unknown) => {
        if (!signedOut(props.session, error)) {
          setState({ kind: "error", message: explain(error, `read api ${view.apiId}`) })
        }
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
        <Picker
          label="Api"
          name="apiId"
          value={view.apiId}
          items={apis.items?.map((api) => ({ id: api.apiId, text: `${api.name} (${api.apiId})` }))}
          onChange={(apiId) => setView({ apiId, window: view.window })}
        />
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
            <UtcInput
              label="From"
              name="start"
              value={view.start!}
              accept={(start) => start < view.end!}
              onChange={(start) => setView({ ...view, start })}
            />
            <UtcInput
              label="To"
              name="end"
              value={view.end!}
              accept={(end) => end > view.start!}
              onChange={(end) => setView({ ...view, end })}
            />
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
          {apis.error !== undefined
            ? apis.error
            : apis.items !== undefined && apis.items.length === 0
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
