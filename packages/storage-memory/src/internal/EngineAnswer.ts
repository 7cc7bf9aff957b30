/**
 * Both stores' `aggregate` over their engine: a decision (see `Decision`), as the engine answers
 * at once, so a reader takes it without running an effect.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { orTooLarge } from "@keymeter/core/Aggregation"
import * as Decision from "@keymeter/core/Decision"
import type { QueryTooLarge } from "@keymeter/core/Errors"
import type { Engine } from "@keymeter/engine"
import type * as Effect from "effect/Effect"

/** The engine's answer to `query`, or QueryTooLarge past `query.maxRows` rows. */
export const aggregate =
  (engine: Engine.Engine) => (query: AggregationQuery): Effect.Effect<AggregationResult, QueryTooLarge> =>
    Decision.make(() => orTooLarge(query, engine.aggregate(query)))
