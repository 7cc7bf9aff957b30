/**
 * The query section: SQL over the workspace's events, through v2's `analytics.getVerifications`
 * or `analytics.getRatelimits` (a switch picks the family the key may read). The editor opens on
 * an example, Run (or Ctrl/Cmd+Enter) sends it, and the answer is a table in the columns of its
 * first row — times as ISO dates beside their unix ms, arrays joined, nulls marked — a slice at a
 * time, with its row count and how long it took. A refused query keeps its text and shows the
 * server's reason under it, with a button to the line and column it names. Each family keeps its
 * own draft and answer; the family and the query last run are in the URL (a bookmark runs it).
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks"
import { ApiError, explain, sql, type SqlRow } from "./Client.js"
import { type Family, familyInfo } from "./Queries.js"
import { mayAny, type Session, signedOut } from "./Session.js"
import { param, useSectionUrl } from "./Url.js"

/** Rows drawn at first, and added by each "show more". */
export const SLICE = 500

/** Longest query kept in the URL (longer ones are run, not bookmarked). */
const URL_QUERY_LENGTH = 2000

/** The families a key may query: verifications with any api read, rate limits with any analytics read. */
export const queryFamilies = (session: Session): ReadonlyArray<Family> => [
  ...(mayAny(session, "api", "read_api") || mayAny(session, "api", "read_analytics")
    ? ["verifications" as const]
    : []),
  ...(mayAny(session, "ratelimit", "read_analytics") ? ["ratelimits" as const] : [])
]

/** Why a query was not answered: the status and title (or code), the detail, and its place if named. */
interface Failure {
  readonly heading: string
  readonly detail: string
  readonly place?: { readonly line: number; readonly column: number } | undefined
}

type Answer =
  | { readonly kind: "ready"; readonly rows: ReadonlyArray<SqlRow>; readonly ms: number; readonly run: number }
  | { readonly kind: "error"; readonly failure: Failure }

const failureOf = (error: unknown): Failure => {
  if (!(error instanceof ApiError)) return { heading: "No answer", detail: explain(error, "run this query") }
  const at = /line (\d+), column (\d+)/.exec(error.message)
  return {
    heading: `${error.status} ${error.title ?? error.code}`,
    detail: error.message,
    place: at === null ? undefined : { line: Number(at[1]), column: Number(at[2]) }
  }
}

/** The offset of a 1-based line and column in a text (lines end at "\n", as the server counts). */
const offsetOf = (text: string, line: number, column: number) => {
  const lines = text.split("\n")
  let offset = 0
  for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i]!.length + 1
  return Math.min(text.length, offset + Math.max(0, column - 1))
}

const count = (n: number) => n.toLocaleString("en-US")
const duration = (ms: number) => ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`

/** Column names that hold times: `time`, `day`, `hour`, `last_seen`, `created_at`… */
const TIME_NAME =
  /^(timestamp|ts|bucket|start|end|first|last)$|(^|_)(time|at|date|seen|hit|minute|hour|day|week|month|quarter|year)$/i
/** Unix milliseconds from 1973 to 5138: an hour of the day or unix seconds are not taken for one. */
const isUnixMs = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1e11 && value < 1e14

/** A value in a cell: times as ISO with their ms, arrays joined, null marked, objects as JSON. */
const Cell = (props: { value: unknown; time: boolean }) => {
  const { value } = props
  if (props.time && isUnixMs(value)) {
    const iso = new Date(value).toISOString()
    return (
      <td class="time">
        <time dateTime={iso}>{iso}</time> <small>{value}</small>
      </td>
    )
  }
  if (value === null || value === undefined) return <td class="null">null</td>
  if (typeof value === "number") return <td class="num">{String(value)}</td>
  if (Array.isArray(value)) return <td>{value.map(String).join(", ")}</td>
  return <td>{typeof value === "object" ? JSON.stringify(value) : String(value)}</td>
}

/** An answer's table: the first {@link SLICE} rows, more on demand. */
const AnswerTable = (props: { rows: ReadonlyArray<SqlRow>; ms: number }) => {
  const { rows } = props
  const [shown, setShown] = useState(SLICE)
  const columns = useMemo(() => (rows.length === 0 ? [] : Object.keys(rows[0]!)), [rows])
  const times = useMemo(() => new Set(columns.filter((name) => TIME_NAME.test(name))), [columns])
  const rest = rows.length - shown
  return (
    <section class="panel" aria-label="answer">
      <p class="summary">
        <strong data-testid="row-count">{count(rows.length)} {rows.length === 1 ? "row" : "rows"}</strong> in{" "}
        <span data-testid="elapsed">{duration(props.ms)}</span>
      </p>
      {rows.length === 0
        ? <p class="empty">No rows: nothing matched.</p>
        : (
          <div class="scroll answer" tabIndex={0} aria-label="rows">
            <table>
              <thead>
                <tr>
                  {columns.map((name) => {
                    // Numbers align right, as their cells do; times read left to right.
                    const first = rows[0]![name]
                    const number = typeof first === "number" && !(times.has(name) && isUnixMs(first))
                    return <th key={name} scope="col" class={number ? "num" : undefined}>{name}</th>
                  })}
                </tr>
              </thead>
              <tbody>
                {rows.slice(0, shown).map((row, i) => (
                  <tr key={i}>
                    {columns.map((name) => <Cell key={name} value={row[name]} time={times.has(name)} />)}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      {rest > 0 && (
        <p class="actions" role="note">
          Showing the first {count(shown)} of {count(rows.length)} rows.
          <button type="button" onClick={() => setShown(shown + SLICE)}>
            Show {count(Math.min(SLICE, rest))} more
          </button>
          <button type="button" onClick={() => setShown(rows.length)}>Show all</button>
        </p>
      )}
    </section>
  )
}

/** The query section, for the families the key may read (at least one). */
export const Query = (props: { session: Session; families: ReadonlyArray<Family> }) => {
  const { session, families } = props
  // A bookmark's query is taken only with its family (a key that may not read it opens another).
  const [bookmarked] = useState(() => families.some((f) => f === param("family")) ? param("q") : "")
  const [family, setFamily] = useState<Family>(() => {
    const asked = param("family")
    return families.find((f) => f === asked) ?? families[0]!
  })
  const info = familyInfo(family)
  // Each family's draft (its first example until edited), the query it last ran and its answer.
  const [drafts, setDrafts] = useState<Record<Family, string>>(() => {
    const drafts = {
      verifications: familyInfo("verifications").examples[0]![1],
      ratelimits: familyInfo("ratelimits").examples[0]![1]
    }
    return bookmarked === "" ? drafts : { ...drafts, [family]: bookmarked }
  })
  const [ran, setRan] = useState<Partial<Record<Family, string>>>({})
  const [answers, setAnswers] = useState<Partial<Record<Family, Answer>>>({})
  const [running, setRunning] = useState<Partial<Record<Family, boolean>>>({})
  // The latest run of each family: an older one's answer is dropped.
  const runs = useRef<Record<Family, number>>({ verifications: 0, ratelimits: 0 })
  const editor = useRef<HTMLTextAreaElement>(null)
  const lastRun = ran[family] ?? ""
  useSectionUrl("query", { family, q: lastRun.length <= URL_QUERY_LENGTH ? lastRun : "" })

  const run = (which: Family, query: string) => {
    if (query.trim() === "") {
      // Any run still out is dropped: this is the latest word.
      runs.current[which]++
      setRunning((all) => ({ ...all, [which]: false }))
      setAnswers((all) => ({
        ...all,
        [which]: { kind: "error", failure: { heading: "Nothing to run", detail: "Write a query first." } }
      }))
      return
    }
    const id = ++runs.current[which]
    setRan((all) => ({ ...all, [which]: query }))
    setRunning((all) => ({ ...all, [which]: true }))
    const started = performance.now()
    const settle = (answer: Answer | undefined) => {
      if (runs.current[which] !== id) return
      setRunning((all) => ({ ...all, [which]: false }))
      if (answer !== undefined) setAnswers((all) => ({ ...all, [which]: answer }))
    }
    sql(session.rootKey, familyInfo(which).route, query).then(
      (rows) => settle({ kind: "ready", rows, ms: performance.now() - started, run: id }),
      (error: unknown) => settle(signedOut(session, error) ? undefined : { kind: "error", failure: failureOf(error) })
    )
  }

  /** Puts a query in the editor and runs it (an example, a table's rows). */
  const runText = (query: string) => {
    setDrafts((all) => ({ ...all, [family]: query }))
    run(family, query)
  }

  // A bookmarked query runs as the section opens.
  useEffect(() => {
    if (bookmarked !== "") run(family, bookmarked)
  }, [])

  /** Selects the word at the line and column the server named, in the editor. */
  const showPlace = (place: NonNullable<Failure["place"]>) => {
    const area = editor.current
    if (area === null) return
    const text = area.value
    const start = offsetOf(text, place.line, place.column)
    const word = /^\w+/.exec(text.slice(start))
    area.focus()
    area.setSelectionRange(start, start + (word === null ? 1 : word[0].length))
  }

  const answer = answers[family]
  const busy = running[family] === true
  return (
    <main class="query">
      <form
        class="editor"
        aria-label="query"
        onSubmit={(event) => {
          event.preventDefault()
          run(family, drafts[family])
        }}
      >
        {families.length > 1 && (
          <fieldset class="switch">
            <legend>Events</legend>
            {families.map((f) => (
              <label key={f} class="inline">
                <input
                  type="radio"
                  name="family"
                  value={f}
                  checked={f === family}
                  onChange={() => setFamily(f)}
                />
                {familyInfo(f).label}
              </label>
            ))}
          </fieldset>
        )}
        <label>
          SQL query over {info.label.toLowerCase()} ({info.route})
          <textarea
            ref={editor}
            name="query"
            rows={9}
            wrap="off"
            spellcheck={false}
            autocapitalize="off"
            autocomplete="off"
            aria-describedby="query-help"
            aria-invalid={answer?.kind === "error"}
            value={drafts[family]}
            onInput={(e) => {
              const value = (e.target as HTMLTextAreaElement).value
              setDrafts((all) => ({ ...all, [family]: value }))
            }}
            onKeyDown={(e) => {
              if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
                e.preventDefault()
                run(family, (e.target as HTMLTextAreaElement).value)
              }
            }}
          />
        </label>
        <p class="actions">
          <button type="submit" disabled={busy}>Run</button>
          <span class="empty" id="query-help">
            Ctrl+Enter (⌘+Enter) runs it. Times are unix ms, UTC; <code>now()</code> is the server's.
          </span>
        </p>
        {busy && <p class="empty" aria-live="polite">Running…</p>}
        {answer?.kind === "error" && (
          <div class="error" role="alert">
            <strong>{answer.failure.heading}</strong>: {answer.failure.detail}
            {answer.failure.place !== undefined && (
              <>
                {" "}
                <button type="button" onClick={() => showPlace(answer.failure.place!)}>
                  Show line {answer.failure.place.line}, column {answer.failure.place.column}
                </button>
              </>
            )}
          </div>
        )}
      </form>
      <aside class="panel help">
        <h2>Examples</h2>
        <ul class="examples">
          {info.examples.map(([title, query]) => (
            <li key={title}>
              <button type="button" class="link" title={query} onClick={() => runText(query)}>{title}</button>
            </li>
          ))}
        </ul>
        <details>
          <summary>Tables</summary>
          <dl class="tables">
            {info.tables.map(([name, columns]) => (
              <div key={name}>
                <dt>
                  <button
                    type="button"
                    class="link mono"
                    aria-label={`latest rows of ${name}`}
                    onClick={() => runText(`SELECT *\nFROM ${name}\nORDER BY time DESC\nLIMIT 100`)}
                  >
                    {name}
                  </button>
                </dt>
                <dd>
                  <code>{columns.join(", ")}</code>
                </dd>
              </div>
            ))}
          </dl>
        </details>
      </aside>
      {answer?.kind === "ready" && <AnswerTable key={`${family}-${answer.run}`} rows={answer.rows} ms={answer.ms} />}
    </main>
  )
}
