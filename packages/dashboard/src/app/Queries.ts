/**
 * What the query section offers for each family of events: its route, its tables and their
 * columns (as `@keymeter/sql`'s Tables has them; kept here so the page bundles no schema code),
 * and example queries, the first of which fills the editor when it opens.
 */

/** Which events a query reads: one route each. */
export type Family = "verifications" | "ratelimits"

export interface FamilyInfo {
  readonly family: Family
  readonly label: string
  readonly route: "analytics.getVerifications" | "analytics.getRatelimits"
  /** Each table's name and columns, the raw table first. */
  readonly tables: ReadonlyArray<readonly [name: string, columns: ReadonlyArray<string>]>
  /** Example queries: a title and the SQL. */
  readonly examples: ReadonlyArray<readonly [title: string, query: string]>
}

const GRAINS = ["minute", "hour", "day", "month"] as const

const VERIFICATION_DIMENSIONS = [
  "workspace_id",
  "key_space_id",
  "key_id",
  "identity_id",
  "external_id",
  "outcome",
  "tags"
]

const RATELIMIT_DIMENSIONS = ["workspace_id", "namespace_id", "identifier"]

export const FAMILIES: ReadonlyArray<FamilyInfo> = [
  {
    family: "verifications",
    label: "Verifications",
    route: "analytics.getVerifications",
    tables: [
      ["key_verifications_v1", ["time", ...VERIFICATION_DIMENSIONS, "spent_credits", "latency", "region"]],
      ...GRAINS.map((grain) =>
        [
          `key_verifications_per_${grain}_v1`,
          ["time", ...VERIFICATION_DIMENSIONS, "count", "spent_credits", "latency_avg"]
        ] as const
      )
    ],
    examples: [
      [
        "Outcomes per day, last 30 days",
        "SELECT toStartOfDay(time) AS day, outcome, count() AS total\n" +
        "FROM key_verifications_v1\n" +
        "WHERE time >= now() - INTERVAL 30 DAY\n" +
        "GROUP BY day, outcome\n" +
        "ORDER BY day, outcome"
      ],
      [
        "Top keys, last 7 days",
        "SELECT key_id, count() AS total, countIf(outcome = 'VALID') AS valid,\n" +
        "  countIf(outcome != 'VALID') AS denied\n" +
        "FROM key_verifications_v1\n" +
        "WHERE time >= now() - INTERVAL 7 DAY\n" +
        "GROUP BY key_id\n" +
        "ORDER BY total DESC\n" +
        "LIMIT 10"
      ],
      [
        "Verifications per hour, last 24 hours (rollup)",
        "SELECT time AS hour, sum(count) AS total, sum(spent_credits) AS credits\n" +
        "FROM key_verifications_per_hour_v1\n" +
        "WHERE time >= now() - INTERVAL 24 HOUR\n" +
        "GROUP BY hour\n" +
        "ORDER BY hour"
      ],
      [
        "Verifications by tag, last 30 days",
        "SELECT arrayJoin(tags) AS tag, count() AS total\n" +
        "FROM key_verifications_v1\n" +
        "WHERE time >= now() - INTERVAL 30 DAY\n" +
        "GROUP BY tag\n" +
        "ORDER BY total DESC\n" +
        "LIMIT 20"
      ],
      [
        "Identities and their keys",
        "SELECT external_id, uniq(key_id) AS keys, count() AS total, max(time) AS last_seen\n" +
        "FROM key_verifications_v1\n" +
        "WHERE external_id != ''\n" +
        "GROUP BY external_id\n" +
        "ORDER BY total DESC\n" +
        "LIMIT 20"
      ],
      [
        "Latest 100 verifications",
        "SELECT time, key_id, outcome, tags, external_id, region\n" +
        "FROM key_verifications_v1\n" +
        "ORDER BY time DESC\n" +
        "LIMIT 100"
      ]
    ]
  },
  {
    family: "ratelimits",
    label: "Rate limits",
    route: "analytics.getRatelimits",
    tables: [
      ["ratelimits_v1", ["time", ...RATELIMIT_DIMENSIONS, "passed", "latency", "override_id"]],
      ...GRAINS.map((grain) =>
        [`ratelimits_per_${grain}_v1`, ["time", ...RATELIMIT_DIMENSIONS, "passed", "total", "latency_avg"]] as const
      )
    ],
    examples: [
      [
        "Passed and blocked per day, last 30 days",
        // `passed` is an alias once named (as in ClickHouse): blocked reads the aliases, not the column.
        "SELECT toStartOfDay(time) AS day, count() AS total, sum(passed) AS passed, total - passed AS blocked\n" +
        "FROM ratelimits_v1\n" +
        "WHERE time >= now() - INTERVAL 30 DAY\n" +
        "GROUP BY day\n" +
        "ORDER BY day"
      ],
      [
        "Most blocked identifiers, last 7 days",
        "SELECT identifier, count() AS total, countIf(passed = 0) AS blocked\n" +
        "FROM ratelimits_v1\n" +
        "WHERE time >= now() - INTERVAL 7 DAY\n" +
        "GROUP BY identifier\n" +
        "ORDER BY blocked DESC, total DESC\n" +
        "LIMIT 10"
      ],
      [
        "Decisions per hour by namespace (rollup)",
        "SELECT time AS hour, namespace_id, sum(total) AS total, sum(passed) AS passed\n" +
        "FROM ratelimits_per_hour_v1\n" +
        "WHERE time >= now() - INTERVAL 24 HOUR\n" +
        "GROUP BY hour, namespace_id\n" +
        "ORDER BY hour, namespace_id"
      ],
      [
        "Decisions made by overrides",
        "SELECT override_id, count() AS total, sum(passed) AS passed, max(time) AS last_hit\n" +
        "FROM ratelimits_v1\n" +
        "WHERE override_id != ''\n" +
        "GROUP BY override_id\n" +
        "ORDER BY total DESC"
      ],
      [
        "Latest 100 decisions",
        "SELECT time, namespace_id, identifier, passed, override_id\n" +
        "FROM ratelimits_v1\n" +
        "ORDER BY time DESC\n" +
        "LIMIT 100"
      ]
    ]
  }
]

/** A family's offer. */
export const familyInfo = (family: Family): FamilyInfo => FAMILIES.find((info) => info.family === family)!
