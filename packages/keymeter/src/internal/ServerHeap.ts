/**
 * V8 settings for the standalone server's process, applied before it serves.
 *
 * V8 "pretenures" an allocation site once most objects it made outlived a young collection: from
 * then on that site allocates in the old generation. A burst of requests (or a bulk ingest) makes
 * the hot paths' short-lived objects outlive a collection for a while (verification and
 * rate-limit events wait up to `RecorderDelay` in their recorder, the feed of the SQL replica a
 * turn), their sites are pretenured, and V8 keeps that decision: afterwards every such object is
 * born old and dies old, the old generation grows by megabytes a second of garbage, and each
 * mark-compact that collects it stalls requests for tens of ms (the serving thread's heap grew
 * 1.7 MB/s at 3,000 requests/s, 90 MB to 300 MB between mark-compacts of 36 ms plus 80 ms of
 * incremental steps). Without pretenuring those objects die young where they were born, in
 * scavenges of a few ms, and the heap stays flat under the same load.
 *
 * An embedding process decides its own V8 settings: `Embed` sets none (see the README).
 */
import * as v8 from "node:v8"

/** The V8 flags the server runs with. Read by V8 at each collection, so settable once started. */
export const FLAGS: ReadonlyArray<string> = ["--no-allocation-site-pretenuring"]

/** Applies {@link FLAGS} to this process (every isolate in it: the SQL worker threads too). */
export const tune = (): void => {
  for (const flag of FLAGS) v8.setFlagsFromString(flag)
}
