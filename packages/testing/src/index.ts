/**
 * What keymeter's test suites share: the storage conformance suite every adapter runs, the
 * reference oracle it checks answers against, and the ClickHouse server the ClickHouse suites use.
 */
export * as ClickhouseTestServer from "./ClickhouseTestServer.js"
export * as Reference from "./Reference.js"
export * as StorageConformance from "./StorageConformance.js"
