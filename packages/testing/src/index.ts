/**
 * What keymeter's test suites share: the storage conformance suite every adapter runs (by port, with
 * what its parts share), the reference oracle it checks answers against, the ClickHouse, PostgreSQL
 * and Redis servers suites use, and the packages packed and installed as a user gets them, and free ports.
 */
export * as CatalogConformance from "./CatalogConformance.js"
export * as ClickhouseTestServer from "./ClickhouseTestServer.js"
export * as ConformanceFixture from "./ConformanceFixture.js"
export * as KeyCatalogConformance from "./KeyCatalogConformance.js"
export * as OverrideCatalogConformance from "./OverrideCatalogConformance.js"
export * as Ports from "./Ports.js"
export * as PostgresTestServer from "./PostgresTestServer.js"
export * as RatelimitReference from "./RatelimitReference.js"
export * as RatelimitStoreConformance from "./RatelimitStoreConformance.js"
export * as ReceiptConformance from "./ReceiptConformance.js"
export * as RedisTestServer from "./RedisTestServer.js"
export * as Reference from "./Reference.js"
export * as ServicesConformance from "./ServicesConformance.js"
export * as SqlWorkerFixture from "./SqlWorkerFixture.js"
export * as StorageConformance from "./StorageConformance.js"
export * as Tarballs from "./Tarballs.js"
export * as VerificationStoreConformance from "./VerificationStoreConformance.js"
