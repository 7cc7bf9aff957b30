/**
 * Keyset pages (listOverrides, listKeys): the cursors of the pages walked so far, so "previous"
 * goes back exactly, and a pager that says where the page sits in the total.
 */
import { useState } from "preact/hooks"

export interface Paging {
  /** The cursor of the page shown; undefined on the first. */
  readonly cursor: string | undefined
  readonly index: number
  /** A value that changes whenever another page is asked for (an effect's dependency). */
  readonly key: ReadonlyArray<string | undefined>
  readonly next: (cursor: string) => void
  readonly previous: () => void
  readonly reset: () => void
}

export const usePaging = (): Paging => {
  // Page i is fetched with cursors[i]; the first page has none.
  const [cursors, setCursors] = useState<ReadonlyArray<string | undefined>>([undefined])
  return {
    cursor: cursors[cursors.length - 1],
    index: cursors.length - 1,
    key: cursors,
    next: (cursor) => setCursors([...cursors, cursor]),
    previous: () => setCursors(cursors.slice(0, -1)),
    reset: () => setCursors([undefined])
  }
}

export const Pager = (props: {
  label: string
  paging: Paging
  size: number
  shown: number
  total: number
  cursor: string | undefined
}) => {
  const first = props.paging.index * props.size + 1
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" disabled={props.paging.index === 0} onClick={props.paging.previous}>
        Previous page
      </button>
      <span>{first}–{first + props.shown - 1} of {props.total}</span>
      <button
        type="button"
        disabled={props.cursor === undefined}
        onClick={() => props.cursor !== undefined && props.paging.next(props.cursor)}
      >
        Next page
      </button>
    </nav>
  )
}
