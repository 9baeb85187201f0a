export type { ReconnectOptions } from './connection.js';
export { MAX_ACTIVITY_BYTES, MAX_APPEND_BYTES, MAX_ID_LENGTH, MAX_VALUE_BYTES } from './limits.js';
export type { PlacementRuns } from './placement.js';
export type { MigrationOutcome } from './schema.js';
export { DEFAULT_SCHEMA, SCHEMA_VERSION } from './schema.js';
export type { SnapshotReport } from './snapshots.js';
export type { OpenPostgresTeamStoreOptions, PostgresTeamStore } from './store.js';
export { openPostgresTeamStore } from './store.js';
