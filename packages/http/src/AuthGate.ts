/**
 * Root-key authentication with a budget of failures per client (its address): a client that sent
 * more unknown keys than {@link MaxAuthFailures} in a minute is answered 429 for the rest of that
 * minute, unless the key it sends was a valid one when last looked up (whatever changed since),
 * so guessing keys is slow and costs the catalog nothing, while the client's real keys keep working. The lane and the pipeline both
 * authenticate here.
 */
import { Auth } from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import type { Unauthenticated } from "@keymeter/core/Errors"
import type { Principal } from "@keymeter/core/Permission"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import type { DomainError } from "./Errors.js"
import { HttpError } from "./Errors.js"

/** Unknown root keys one client may send per minute (default 100). */
export class MaxAuthFailures extends Context.Reference<MaxAuthFailures>()("@keymeter/http/AuthGate/MaxAuthFailures", {
  defaultValue: () => 100
}) {}

const MINUTE = 60_000
/** Clients counted at most; past it, those whose minute is over are dropped. */
const MAX_CLIENTS = 100_000

export class AuthGate extends Effect.Service<AuthGate>()("@keymeter/http/AuthGate", {
  effect: Effect.gen(function*() {
    const auth = yield* Auth
    const budget = yield* MaxAuthFailures
    const clock = yield* Effect.clock
    const clients = new Map<string, { failures: number; since: number }>()

    const spent = (client: string, now: number) => {
      const seen = clients.get(client)
      return seen !== undefined && now - seen.since < MINUTE && seen.failures >= budget
    }

    const failed = (client: string) => {
      const now = clock.unsafeCurrentTimeMillis()
      const seen = clients.get(client)
      if (seen !== undefined && now - seen.since < MINUTE) {
        seen.failures++
        return
      }
      if (clients.size >= MAX_CLIENTS) {
        for (const [other, { since }] of clients) if (now - since >= MINUTE) clients.delete(other)
        if (clients.size >= MAX_CLIENTS) clients.delete(clients.keys().next().value!)
      }
      clients.set(client, { failures: 1, since: now })
    }

    const refusal = (client: string, now: number) =>
      new HttpError({
        code: "RATE_LIMITED",
        message: `Too many unknown root keys from this client (${budget} a minute); retry in ${
          Math.ceil((clients.get(client)!.since + MINUTE - now) / 1000)
        } s`
      })

    /**
     * The principal of `secret` sent by `client` (its address; undefined: not counted). A
     * decision (see `Decision`): an Exit when memory answers.
     */
    const authenticate = (
      client: string | undefined,
      secret: string
    ): Effect.Effect<Principal, DomainError | HttpError> => {
      const first = Decision.now(auth.authenticate(Redacted.make(secret)))
      if (client === undefined || (Exit.isExit(first) && Exit.isSuccess(first))) return first
      const now = clock.unsafeCurrentTimeMillis()
      if (spent(client, now) && !auth.wasValid(secret)) return Exit.fail(refusal(client, now))
      if (Exit.isExit(first)) {
        if (Exit.isFailure(first) && isUnknown(first)) failed(client)
        return first
      }
      return Effect.tapErrorTag(first, "Unauthenticated", () => Effect.sync(() => failed(client)))
    }

    return { authenticate } as const
  })
}) {}

const isUnknown = (exit: Exit.Failure<unknown, unknown>) => {
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  return (failure as Unauthenticated | undefined)?._tag === "Unauthenticated"
}
