/**
 * Keyset-paged lists (listOverrides, listKeys): the cursors walked so far, so "previous" goes back
 * exactly; the page's loading, error and ready states; and the panel that shows a page as a table
 * with a pager that says where the page sits in the total.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { explain } from "./Client.js"
import { type Session, signedOut } from "./Session.js"

/** A page as the list routes answer, whatever the items are called there. */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
  readonly cursor?: string | undefined
}

export type PageState<A> = { kind: "loading" } | { kind: "error"; message: string } | { kind: "ready"; page: Page<A> }

export interface PagedList<A> {
  readonly state: PageState<A>
  readonly index: number
  readonly next: (cursor: string) => void
  readonly previous: () => void
  /** Back to the first page (another api, namespace or filter). */
  readonly reset: () => void
  /** Loads the page again after a write; a page a deletion emptied gives way to the one before. */
  readonly reload: (deleted?: boolean) => void
}

/**
 * The pages of a list: `load` fetches the page at a cursor, again whenever `of` changes (the
 * list's api or namespace and filters; nothing is loaded while it is undefined).
 */
export function usePagedList<A>(
  session: Session,
  of: string | undefined,
  load: (cursor: string | undefined) => Promise<Page<A>>,
  forbidden: string
): PagedList<A> {
  // Page i is fetched with cursors[i]; the first page has none.
  const [cursors, setCursors] = useState<ReadonlyArray<string | undefined>>([undefined])
  const [version, setVersion] = useState(0)
  const [state, setState] = useState<PageState<A>>({ kind: "loading" })
  useEffect(() => {
    if (of === undefined) return
    setState({ kind: "loading" })
    load(cursors[cursors.length - 1]).then(
      (page) => setState({ kind: "ready", page }),
      (error: unknown) => {
        if (!signedOut(session, error)) setState({ kind: "error", message: explain(error, forbidden) })
      }
    )
  }, [of, cursors, version])
  const previous = () => setCursors(cursors.slice(0, -1))
  return {
    state,
    index: cursors.length - 1,
    next: (cursor) => setCursors([...cursors, cursor]),
    previous,
    reset: () => setCursors([undefined]),
    reload: (deleted = false) => {
      if (deleted && state.kind === "ready" && state.page.items.length === 1 && cursors.length > 1) previous()
      else setVersion((v) => v + 1)
    }
  }
}

/** A list's panel: loading, error, the empty state, or the page's table and its pager. */
export function PagedTable<A>(props: {
  /** The region's name, e.g. "overrides"; the pager is "<label> pages". */
  label: string
  title: string
  list: PagedList<A>
  size: number
  empty: ComponentChildren
  headers: ReadonlyArray<string>
  row: (item: A) => ComponentChildren
}) {
  const { list } = props
  const { state } = list
  const first = list.index * props.size + 1
  return (
    <section class="panel" aria-label={props.label}>
      <h2>{props.title}</h2>
      {state.kind === "loading" && <p class="empty" aria-live="polite">Loading…</p>}
      {state.kind === "error" && <p class="error" role="alert">{state.message}</p>}
      {state.kind === "ready" && state.page.total === 0 && <p class="empty">{props.empty}</p>}
      {state.kind === "ready" && state.page.items.length > 0 && (
        <>
          <div class="scroll">
            <table>
              <thead>
                <tr>{props.headers.map((header) => <th key={header} scope="col">{header}</th>)}</tr>
              </thead>
              <tbody>{state.page.items.map(props.row)}</tbody>
            </table>
          </div>
          <nav class="pager" aria-label={`${props.label} pages`}>
            <button type="button" disabled={list.index === 0} onClick={list.previous}>Previous page</button>
            <span>{first}–{first + state.page.items.length - 1} of {state.page.total}</span>
            <button
              type="button"
              disabled={state.page.cursor === undefined}
              onClick={() => state.page.cursor !== undefined && list.next(state.page.cursor)}
            >
              Next page
            </button>
          </nav>
        </>
      )}
    </section>
  )
}
