/**
 * An override as the dashboard shows it, and the form that creates or edits one: the setOverride
 * bounds checked here (the server checks them again), the window in the largest unit that divides it.
 */
import { MAX_DURATION, MAX_IDENTIFIER_LENGTH, MIN_DURATION, MIN_IDENTIFIER_LENGTH } from "@keymeter/core/OverrideBounds"
import { useDraft } from "./Form.js"

/** An override as the overrides list answers it, with the decisions it made. */
export interface Override {
  readonly id: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly async: boolean
  readonly createdAt: number
  readonly updatedAt: number
  /** Decisions it made, and the last one's time (absent while it made none). */
  readonly hits: number
  readonly lastHitAt?: number | undefined
}

/** What the form sends to setOverride (the namespace by name when it is a new one). */
export interface OverrideInput {
  readonly namespaceName?: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly async: boolean
}

/** The units a window is written in, largest first. */
const UNITS = [
  ["d", "days", 86_400_000],
  ["h", "hours", 3_600_000],
  ["min", "minutes", 60_000],
  ["s", "seconds", 1000],
  ["ms", "milliseconds", 1]
] as const
type Unit = typeof UNITS[number][0]

/** A window in the largest unit that divides it: 60000 -> [1, "min"]. */
const inUnits = (ms: number): readonly [number, Unit] => {
  const [unit, , size] = UNITS.find(([, , size]) => ms % size === 0)!
  return [ms / size, unit]
}

/** A window as people read it: "1 min", "90 s". */
export const windowText = (ms: number) => inUnits(ms).join(" ")

/** What the form holds, as typed. */
interface Draft {
  readonly namespaceName: string
  readonly identifier: string
  readonly limit: string
  readonly duration: string
  readonly unit: Unit
  readonly async: boolean
}

/** The form's problems, by field; empty when the server may be asked. */
const problemsOf = (draft: Draft, newNamespace: boolean): Partial<Record<keyof Draft, string>> => {
  const problems: Partial<Record<keyof Draft, string>> = {}
  if (newNamespace && (draft.namespaceName.trim() === "" || draft.namespaceName.length > 255)) {
    problems.namespaceName = "Give the new namespace a name of 1 to 255 characters."
  }
  if (draft.identifier.length < MIN_IDENTIFIER_LENGTH || draft.identifier.length > MAX_IDENTIFIER_LENGTH) {
    problems.identifier =
      `An identifier has ${MIN_IDENTIFIER_LENGTH} to ${MAX_IDENTIFIER_LENGTH} characters (* matches any run of them).`
  }
  const limit = Number(draft.limit)
  if (draft.limit.trim() === "" || !Number.isSafeInteger(limit) || limit < 0) {
    problems.limit = "The limit is a whole number of requests, 0 or more."
  }
  const size = UNITS.find(([unit]) => unit === draft.unit)![2]
  const duration = Number(draft.duration) * size
  if (
    draft.duration.trim() === "" || !Number.isSafeInteger(duration) || duration < MIN_DURATION ||
    duration > MAX_DURATION
  ) {
    problems.duration = "The window is 1 second or more, in whole milliseconds."
  }
  return problems
}

/** Create (with an empty identifier) or edit (identifier fixed) one override. */
export const OverrideForm = (props: {
  editing: Override | undefined
  newNamespace: boolean
  onSave: (
    input: { namespaceName?: string; identifier: string; limit: number; duration: number; async: boolean }
  ) => Promise<void>
  onCancel: () => void
}) => {
  const form = useDraft<Draft>(() => {
    const [duration, unit] = inUnits(props.editing?.duration ?? 60_000)
    return {
      namespaceName: "",
      identifier: props.editing?.identifier ?? "",
      limit: String(props.editing?.limit ?? 100),
      duration: String(duration),
      unit,
      async: props.editing?.async ?? false
    }
  }, (draft) => problemsOf(draft, props.newNamespace))
  const { draft, field, first, problem } = form
  return (
    <form
      class="panel override-form"
      aria-label={props.editing === undefined ? "new override" : `edit override ${props.editing.identifier}`}
      noValidate
      onSubmit={form.submit((draft) => {
        const size = UNITS.find(([unit]) => unit === draft.unit)![2]
        return props.onSave({
          ...(props.newNamespace ? { namespaceName: draft.namespaceName.trim() } : {}),
          identifier: draft.identifier,
          limit: Number(draft.limit),
          duration: Number(draft.duration) * size,
          async: draft.async
        })
      })}
    >
      <h2>{props.editing === undefined ? "New override" : `Edit override ${props.editing.identifier}`}</h2>
      {props.newNamespace && (
        <label>
          New namespace
          <input
            {...field("namespaceName")}
            ref={first}
            value={draft.namespaceName}
            maxLength={255}
          />
          {problem("namespaceName")}
        </label>
      )}
      <label>
        Identifier (or pattern with *)
        <input
          {...field("identifier")}
          ref={props.newNamespace ? null : first}
          value={draft.identifier}
          readOnly={props.editing !== undefined}
          minLength={MIN_IDENTIFIER_LENGTH}
          maxLength={MAX_IDENTIFIER_LENGTH}
        />
        {problem("identifier")}
      </label>
      <label>
        Limit (requests per window)
        <input
          {...field("limit")}
          type="number"
          min={0}
          step={1}
          inputMode="numeric"
          value={draft.limit}
        />
        {problem("limit")}
      </label>
      <div class="duration">
        <label>
          Window
          <input
            {...field("duration")}
            type="number"
            min={0}
            step={1}
            inputMode="numeric"
            value={draft.duration}
          />
        </label>
        <label>
          Unit
          <select {...field("unit")} value={draft.unit}>
            {UNITS.map(([unit, label]) => <option key={unit} value={unit}>{label}</option>)}
          </select>
        </label>
        {problem("duration")}
      </div>
      <label class="inline">
        <input type="checkbox" {...field("async")} checked={draft.async} />
        Async (decide from this server's view, synchronise after)
      </label>
      {form.failure !== undefined && <p class="error" role="alert">{form.failure}</p>}
      <div class="actions">
        <button type="submit" disabled={form.saving}>{form.saving ? "Saving…" : "Save override"}</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  )
}
