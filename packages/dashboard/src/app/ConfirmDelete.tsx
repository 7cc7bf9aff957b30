/**
 * A Delete button that asks first: it turns into "Delete X? Yes, delete / Keep", with the focus
 * on the confirmation (back on Delete when kept), and shows why a deletion failed.
 */
import { useLayoutEffect, useRef, useState } from "preact/hooks"

export const ConfirmDelete = (props: { what: string; onConfirm: () => Promise<void> }) => {
  const [confirming, setConfirming] = useState(false)
  const [failure, setFailure] = useState<string | undefined>()
  const confirm = useRef<HTMLButtonElement>(null)
  const ask = useRef<HTMLButtonElement>(null)
  // The focus follows the question: onto "Yes, delete" when asked, back to Delete when kept.
  const moved = useRef(false)
  useLayoutEffect(() => {
    if (confirming) confirm.current?.focus()
    else if (moved.current) ask.current?.focus()
    moved.current = true
  }, [confirming])
  return (
    <>
      {confirming
        ? (
          <span role="group" aria-label={`confirm deleting ${props.what}`}>
            Delete {props.what}?{" "}
            <button
              type="button"
              ref={confirm}
              class="danger"
              onClick={() =>
                props.onConfirm().catch((error: unknown) => {
                  setConfirming(false)
                  setFailure(error instanceof Error ? error.message : String(error))
                })}
            >
              Yes, delete
            </button>{" "}
            <button type="button" onClick={() => setConfirming(false)}>Keep</button>
          </span>
        )
        : (
          <button type="button" ref={ask} aria-label={`delete ${props.what}`} onClick={() => setConfirming(true)}>
            Delete
          </button>
        )}
      {failure !== undefined && <span class="error" role="alert">{failure}</span>}
    </>
  )
}
