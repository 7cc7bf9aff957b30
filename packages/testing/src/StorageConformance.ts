/**
 * The behaviour every Storage adapter must share, as one suite: `conformance(name, layer)` runs it
 * against a fresh storage per test. Its data and helpers are exported for adapter-specific suites.
 * The tests live by port: VerificationStoreConformance (its receipts in ReceiptConformance),
 * RatelimitStoreConformance, CatalogConformance (its overrides and keys in OverrideCatalogConformance
 * and KeyCatalogConformance), and ServicesConformance for core's services over both halves; what they share is in ConformanceFixture.
 */
import { describe } from "@effect/vitest"
import type { Storage } from "@keymeter/core/Storage"
import type * as Layer from "effect/Layer"
import * as CatalogConformance from "./CatalogConformance.js"
import type { ConformanceOptions } from "./ConformanceFixture.js"
import { makeSuite } from "./ConformanceFixture.js"
import * as KeyCatalogConformance from "./KeyCatalogConformance.js"
import * as OverrideCatalogConformance from "./OverrideCatalogConformance.js"
import * as RatelimitStoreConformance from "./RatelimitStoreConformance.js"
import * as ReceiptConformance from "./ReceiptConformance.js"
import * as ServicesConformance from "./ServicesConformance.js"
import * as VerificationStoreConformance from "./VerificationStoreConformance.js"

export { ask, eventArb, FROM, queryArb, seedCatalog, store, TO, WS } from "./ConformanceFixture.js"
export type { ConformanceOptions } from "./ConformanceFixture.js"

export const conformance = (
  name: string,
  storage: Layer.Layer<Storage, unknown>,
  options: ConformanceOptions = {}
) => {
  const suite = makeSuite(storage, options)

  describe.skipIf(options.skip !== undefined)(`Storage conformance: ${name}`, () => {
    VerificationStoreConformance.tests(suite)
    ReceiptConformance.tests(suite)
    RatelimitStoreConformance.tests(suite)
    CatalogConformance.tests(suite)
    OverrideCatalogConformance.tests(suite)
    KeyCatalogConformance.tests(suite)
    ServicesConformance.tests(suite)
  })
}
