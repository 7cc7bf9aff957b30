/**
 * Override resolution (docs/behaviour.md §5). In a namespace, an identifier's candidates are the
 * override with exactly that identifier and every wildcard override whose pattern matches it
 * (`*` matches any run of characters, the empty run included). The winner is decided by the
 * first rule that separates two candidates:
 *   1. an exact namespace beats a namespace pattern (see {@link resolveAcross});
 *   2. an exact identifier beats a wildcard identifier;
 *   3. more literal (non-`*`) characters beat fewer;
 *   4. the older override (createdAt, then id) wins.
 *
 * The index files each wildcard pattern under its most selective literal: its prefix and suffix
 * (a trie of prefixes, each node a trie of suffixes), or, when a middle segment is longer, that
 * segment in a map probed with the identifier's substrings of the lengths present. Resolving then
 * tests a handful of candidates instead of every pattern. It is updated in place when an override
 * is set or deleted.
 */
import type { Override } from "./Override.js"

/** True when `pattern` (with `*` wildcards) matches all of `value`. */
export const matches = (pattern: string, value: string): boolean => {
  const parts = pattern.split("*")
  if (parts.length === 1) return pattern === value
  const first = parts[0]!
  const last = parts[parts.length - 1]!
  if (value.length < first.length + last.length) return false
  if (!value.startsWith(first) || !value.endsWith(last)) return false
  let at = first.length
  const end = value.length - last.length
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!
    if (part === "") continue
    const found = value.indexOf(part, at)
    if (found < 0 || found + part.length > end) return false
    at = found + part.length
  }
  return true
}

/** Number of non-`*` characters. */
export const literalCount = (pattern: string): number => {
  let n = 0
  for (let i = 0; i < pattern.length; i++) if (pattern.charCodeAt(i) !== 42) n++
  return n
}

/** Negative when `a` wins over `b` by rules 2–4. */
export const compare = (a: Override, b: Override): number => {
  const aExact = !a.identifier.includes("*")
  const bExact = !b.identifier.includes("*")
  if (aExact !== bExact) return aExact ? -1 : 1
  const literals = literalCount(b.identifier) - literalCount(a.identifier)
  if (literals !== 0) return literals
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

interface SuffixNode {
  readonly next: Map<string, SuffixNode>
  /** Patterns ending at this suffix, best first. */
  readonly patterns: Array<Override>
}

interface PrefixNode {
  readonly next: Map<string, PrefixNode>
  /** Patterns starting with this prefix, by their suffix. */
  readonly suffixes: SuffixNode
}

const suffixNode = (): SuffixNode => ({ next: new Map(), patterns: [] })
const prefixNode = (): PrefixNode => ({ next: new Map(), suffixes: suffixNode() })

const prefixOf = (pattern: string) => pattern.slice(0, pattern.indexOf("*"))
const suffixOf = (pattern: string) => pattern.slice(pattern.lastIndexOf("*") + 1)

/** Where a pattern is filed: its prefix/suffix pair, or its longest middle segment. */
const anchorOf = (pattern: string): { readonly middle: string } | undefined => {
  const parts = pattern.split("*")
  let middle = ""
  for (let i = 1; i < parts.length - 1; i++) if (parts[i]!.length > middle.length) middle = parts[i]!
  const ends = parts[0]!.length + parts[parts.length - 1]!.length
  return middle.length > ends ? { middle } : undefined
}

/** Inserts keeping `list` best first. */
const insertRanked = (list: Array<Override>, override: Override) => {
  let lo = 0
  let hi = list.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compare(list[mid]!, override) <= 0) lo = mid + 1
    else hi = mid
  }
  list.splice(lo, 0, override)
}

/** The best of `list` (best first) that matches `identifier` and beats `best`. */
const bestIn = (list: ReadonlyArray<Override>, identifier: string, best: Override | undefined) => {
  for (const candidate of list) {
    if (best !== undefined && compare(best, candidate) <= 0) return best
    if (matches(candidate.identifier, identifier)) return candidate
  }
  return best
}

/** The overrides of one namespace, ready to resolve identifiers. */
export class OverrideIndex {
  private readonly exact = new Map<string, Override>()
  private readonly root = prefixNode()
  /** Patterns filed under a middle segment, by that segment. */
  private readonly middles = new Map<string, Array<Override>>()
  /** How many middle segments of each length are filed. */
  private readonly middleLengths = new Map<number, number>()
  private size_ = 0

  constructor(overrides: Iterable<Override> = []) {
    for (const override of overrides) this.set(override)
  }

  get size(): number {
    return this.size_
  }

  /** Adds an override, or replaces the one with the same identifier. */
  set(override: Override): void {
    this.delete(override.identifier)
    this.size_++
    const identifier = override.identifier
    if (!identifier.includes("*")) {
      this.exact.set(identifier, override)
      return
    }
    insertRanked(this.bucket(identifier, true)!, override)
  }

  /** Removes the override with this identifier; false when there is none. */
  delete(identifier: string): boolean {
    if (!identifier.includes("*")) {
      if (!this.exact.delete(identifier)) return false
      this.size_--
      return true
    }
    const list = this.bucket(identifier, false)
    const at = list?.findIndex((o) => o.identifier === identifier) ?? -1
    if (at < 0) return false
    list!.splice(at, 1)
    this.size_--
    const anchor = anchorOf(identifier)
    if (anchor !== undefined && list!.length === 0) {
      this.middles.delete(anchor.middle)
      const left = this.middleLengths.get(anchor.middle.length)! - 1
      if (left === 0) this.middleLengths.delete(anchor.middle.length)
      else this.middleLengths.set(anchor.middle.length, left)
    }
    return true
  }

  /** The override with exactly this identifier (a pattern's own identifier included). */
  get(identifier: string): Override | undefined {
    if (!identifier.includes("*")) return this.exact.get(identifier)
    return this.bucket(identifier, false)?.find((o) => o.identifier === identifier)
  }

  /** The override that applies to `identifier` in this namespace, by rules 2–4. */
  resolve(identifier: string): Override | undefined {
    const exact = this.exact.get(identifier)
    if (exact !== undefined) return exact
    let best: Override | undefined
    const n = identifier.length
    // Every prefix of the identifier that some pattern starts with...
    let node: PrefixNode | undefined = this.root
    for (let p = 0; node !== undefined; p++) {
      // ...then every suffix of what is left that some of those patterns end with.
      let suffix: SuffixNode | undefined = node.suffixes
      for (let s = 0; suffix !== undefined; s++) {
        best = bestIn(suffix.patterns, identifier, best)
        if (p + s >= n) break
        suffix = suffix.next.get(identifier[n - 1 - s]!)
      }
      if (p >= n) break
      node = node.next.get(identifier[p]!)
    }
    // Patterns filed under a middle segment that occurs in the identifier.
    for (const length of this.middleLengths.keys()) {
      for (let at = 0; at + length <= n; at++) {
        const list = this.middles.get(identifier.substr(at, length))
        if (list !== undefined) best = bestIn(list, identifier, best)
      }
    }
    return best
  }

  private bucket(pattern: string, create: boolean): Array<Override> | undefined {
    const anchor = anchorOf(pattern)
    if (anchor !== undefined) {
      let list = this.middles.get(anchor.middle)
      if (list === undefined && create) {
        this.middles.set(anchor.middle, list = [])
        this.middleLengths.set(anchor.middle.length, (this.middleLengths.get(anchor.middle.length) ?? 0) + 1)
      }
      return list
    }
    let node = this.root
    // By UTF-16 code unit, as `resolve` walks identifiers.
    const head = prefixOf(pattern)
    for (let i = 0; i < head.length; i++) {
      let next = node.next.get(head[i]!)
      if (next === undefined) {
        if (!create) return undefined
        node.next.set(head[i]!, next = prefixNode())
      }
      node = next
    }
    let suffix = node.suffixes
    const tail = suffixOf(pattern)
    for (let i = tail.length - 1; i >= 0; i--) {
      let next = suffix.next.get(tail[i]!)
      if (next === undefined) {
        if (!create) return undefined
        suffix.next.set(tail[i]!, next = suffixNode())
      }
      suffix = next
    }
    return suffix.patterns
  }
}

/**
 * Rule 1 across namespaces: the request namespace's own override wins; otherwise the best, by
 * rules 2–4, of the overrides of the namespace patterns matching its name.
 */
export const resolveAcross = (
  own: OverrideIndex | undefined,
  patterns: ReadonlyArray<OverrideIndex>,
  identifier: string
): Override | undefined => {
  const direct = own?.resolve(identifier)
  if (direct !== undefined) return direct
  let best: Override | undefined
  for (const index of patterns) {
    const candidate = index.resolve(identifier)
    if (candidate !== undefined && (best === undefined || compare(candidate, best) < 0)) best = candidate
  }
  return best
}
