/**
 * A form's draft, checked in the page before the server is asked: the fields as typed, their
 * problems (shown once a submit was tried, each tied to its field for screen readers), the
 * saving state and the server's refusal in plain words. The first field takes the focus.
 */
import { useEffect, useRef, useState } from "preact/hooks"

export function useDraft<D extends { [K in keyof D]: string | boolean }>(
  initial: D | (() => D),
  check: (draft: D) => Partial<Record<keyof D, string>>
) {
  const [draft, setDraft] = useState<D>(initial)
  const [checked, setChecked] = useState(false)
  const [failure, setFailure] = useState<string | undefined>()
  const [saving, setSaving] = useState(false)
  const first = useRef<HTMLInputElement>(null)
  useEffect(() => first.current?.focus(), [])
  const problems: Partial<Record<keyof D, string>> = checked ? check(draft) : {}
  return {
    draft,
    failure,
    saving,
    /** The field that takes the focus. */
    first,
    /** An input's or select's wiring: its name, its value's update, its problem's link. */
    field: (name: keyof D & string) => ({
      name,
      "aria-invalid": problems[name] !== undefined,
      "aria-describedby": problems[name] !== undefined ? `problem-${name}` : undefined,
      onInput: (e: Event) => {
        const target = e.target as HTMLInputElement | HTMLSelectElement
        const value = target.type === "checkbox" ? (target as HTMLInputElement).checked : target.value
        setDraft((current) => ({ ...current, [name]: value }))
      }
    }),
    /** The field's problem, when a submit found one. */
    problem: (name: keyof D & string) =>
      problems[name] !== undefined && <span class="problem" id={`problem-${name}`}>{problems[name]}</span>,
    /** The form's submit: checks the draft, then sends it; a refusal is kept to be shown. */
    submit: (send: (draft: D) => Promise<void>) => (event: Event) => {
      event.preventDefault()
      setChecked(true)
      if (Object.keys(check(draft)).length > 0) return
      setSaving(true)
      setFailure(undefined)
      send(draft).catch((error: unknown) => {
        setSaving(false)
        setFailure(error instanceof Error ? error.message : String(error))
      })
    }
  }
}
