/**
 * A labelled select of listed things (apis, namespaces). A value from the URL that is not in the
 * list stays selectable, so a shared link shows what it names (or the server says why not).
 */
import type { ComponentChildren } from "preact"

export const Picker = (props: {
  label: string
  name: string
  value: string
  items: ReadonlyArray<{ readonly id: string; readonly text: string }> | undefined
  onChange: (value: string) => void
  children?: ComponentChildren
}) => (
  <label>
    {props.label}
    <select
      name={props.name}
      value={props.value}
      disabled={props.items === undefined}
      onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}
    >
      {props.items === undefined && <option value={props.value}>Loading…</option>}
      {props.value !== "" && props.items !== undefined && !props.items.some((item) => item.id === props.value) && (
        <option value={props.value}>{props.value}</option>
      )}
      {(props.items ?? []).map((item) => <option key={item.id} value={item.id}>{item.text}</option>)}
      {props.children}
    </select>
  </label>
)
