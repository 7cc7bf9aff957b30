/**
 * Reads of the catalog reused while its `revision` holds (see `Catalog.revision`): the request
 * paths read the same namespaces again and again, and a read through an adapter costs far more
 * than the work around it. Without a revision every read goes to the catalog.
 */
import * as Effect from "effect/Effect"

/** Entries kept at most; past it they are all dropped. */
const MAX_ENTRIES = 10_000

export class CatalogCache<A> {
  private readonly entries = new Map<string, { readonly revision: number; readonly value: A }>()
  constructor(private readonly revision: (() => number) | undefined) {}

  /** The value remembered for `key`, if it was read since the catalog last changed (no I/O). */
  peek(key: string): A | undefined {
    const revision = this.revision?.()
    const hit = revision === undefined ? undefined : this.entries.get(key)
    return hit !== undefined && hit.revision === revision ? hit.value : undefined
  }

  /** The value `read` gives for `key`, from memory when it was read since the catalog last changed. */
  get<E, R>(key: string, read: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.suspend(() => {
      const revision = this.revision?.()
      if (revision === undefined) return read
      const hit = this.entries.get(key)
      if (hit !== undefined && hit.revision === revision) return Effect.succeed(hit.value)
      return Effect.map(read, (value) => {
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear()
        this.entries.set(key, { revision, value })
        return value
      })
    })
  }
}
