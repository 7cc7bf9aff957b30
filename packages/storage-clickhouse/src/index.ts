/**
 * keymeter's ClickHouse storage adapter: the verification and rate-limit halves of the Storage
 * port's events.
 */
export * as ClickhouseRatelimitStore from "./ClickhouseRatelimitStore.js"
export * as ClickhouseSql from "./ClickhouseSql.js"
export * as ClickhouseVerificationStore from "./ClickhouseVerificationStore.js"
export * as Migrations from "./Migrations.js"
