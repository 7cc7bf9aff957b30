/**
 * Reads of the catalog reused while its `revision` holds (see `Catalog.revision`): the request
 * paths read the same namespaces again and again, and a read through an adapter costs far more
 * than the work around it. Without a revision every decision reads the catalog again: what a load
 * brings is kept for the rest of the decision that asked for it (its later turns look everything up
 * again, and one turn may look the same key up twice), or outside decisions for the one lookup
 * that follows it.
 */
import * as Effect from "effect/Effect"
import * as Decision from "../Decision.js"
import { Missing } from "../Decision.js"

/** Entries kept at most; past it the least recently used goes. */
const MAX_ENTRIES = 10_000

interface Entry<A> {
  readonly revision: number | undefined
  readonly value: A
  /** The decision whose lookup loaded it (see `Decision.current`); 0 outside decisions. */
  readonly decision: number
  /** When it was last moved to the young end (see `lookup`). */
  readonly used: number
}

export class CatalogCache<A> {
  /** In order of use, least recent first (a Map keeps insertion order). */
  private readonly entries = new Map<string, Entry<A>>()
  private uses = 0
  constructor(private readonly revision: (() => number) | undefined) {}

  /**
   * The value last read for `key`, whatever the catalog's revision since: a hint (was this a known
   * key?), never an answer.
   */
  hint(key: string): A | undefined {
    return this.entries.get(key)?.value
  }

  /** The value remembered for `key`, or what loads it with `read` (see `Decision`). */
  lookup<E, R>(key: string, read: () => Effect.Effect<A, E, R>): A | Missing<E, R> {
    const revision = this.revision?.()
    const decision = Decision.current()
    const hit = this.entries.get(key)
    if (hit !== undefined) {
      if (revision === undefined) {
        if (hit.decision === decision && decision !== 0) return hit.value
        this.entries.delete(key)
        // Loaded by another decision: read again for this one.
        if (hit.decision !== 0) return this.load(key, read, revision, decision)
        return hit.value
      }
      if (hit.revision === revision) {
        // Moved to the young end once it is in the older half: a flood of new keys (unknown
        // root keys, say) pushes out the idle ones, never those in use; most hits move nothing.
        if (++this.uses - hit.used > MAX_ENTRIES / 2) {
          this.entries.delete(key)
          this.entries.set(key, { ...hit, used: this.uses })
        }
        return hit.value
      }
    }
    return this.load(key, read, revision, decision)
  }

  /**
   * `write`, which makes the value of `key`, as what a lookup is missing: the value it makes is
   * remembered as a load's would be, so the decision's next turn finds it rather than what was
   * read before the write.
   */
  written<E, R>(key: string, write: Effect.Effect<A, E, R>): Missing<E, R> {
    return this.load(key, () => write, this.revision?.(), Decision.current())
  }

  private load<E, R>(
    key: string,
    read: () => Effect.Effect<A, E, R>,
    revision: number | undefined,
    decision: number
  ): Missing<E, R> {
    return new Missing(Effect.map(read(), (value) => {
      if (this.entries.size >= MAX_ENTRIES && !this.entries.has(key)) {
        this.entries.delete(this.entries.keys().next().value!)
      }
      this.entries.delete(key)
      this.entries.set(key, { revision, value, used: ++this.uses, decision })
    }))
  }
}
