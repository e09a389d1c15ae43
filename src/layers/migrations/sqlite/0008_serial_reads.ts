/**
 * Migration `0008_serial_reads`, SQLite dialect: nothing to do. PostgreSQL's set turns parallel
 * workers off for every store table (a tenant's read priced from other tenants' rows was split
 * over workers that cost more than the work); SQLite plans no parallel reads. The id is kept so
 * both sets stay one for one.
 */
export const statements: ReadonlyArray<string> = []
