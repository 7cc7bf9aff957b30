/**
 * Top lists whose rows filter a section's view (top keys, identities and tags of an api; the most
 * blocked identifiers of a namespace), and the chips that name the filters in force and clear them.
 */

/** A top-N table: each row's name is a link to the view it filters to, followed by its counts. */
export function Top<R>(props: {
  title: string
  /** The first column's header: what a row names. */
  name: string
  rows: ReadonlyArray<R> | undefined
  label: (row: R) => string
  columns: ReadonlyArray<readonly [header: string, value: (row: R) => number]>
  /** The URL of the view a row filters to (opened in a new tab, bookmarked). */
  href: (row: R) => string
  onPick: (row: R) => void
  /** The label of the row the view is filtered to, if any. */
  picked?: string | undefined
}) {
  return (
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
                <th scope="col">{props.name}</th>
                {props.columns.map(([header]) => <th key={header} scope="col">{header}</th>)}
              </tr>
            </thead>
            <tbody>
              {props.rows.map((row) => {
                const label = props.label(row)
                return (
                  <tr key={label} aria-current={label === props.picked ? "true" : undefined}>
                    <td>
                      <a
                        href={props.href(row)}
                        onClick={(event) => {
                          event.preventDefault()
                          props.onPick(row)
                        }}
                      >
                        {label}
                      </a>
                    </td>
                    {props.columns.map(([header, value]) => <td key={header}>{value(row)}</td>)}
                  </tr>
                )
              })}
            </tbody>
          </table>
        )}
    </section>
  )
}

/** The filters in force, a button each that removes it; nothing when there is none. */
export const FilterChips = (props: {
  filters: ReadonlyArray<readonly [name: string, value: string]>
  onRemove: (name: string) => void
}) =>
  props.filters.length === 0 ? null : (
    <p class="filters" aria-label="filters">
      {props.filters.map(([name, value]) => (
        <button
          key={name}
          type="button"
          class="chip"
          aria-label={`remove filter ${name} ${value}`}
          onClick={() => props.onRemove(name)}
        >
          {name}: {value} ×
        </button>
      ))}
    </p>
  )
