export type { A2ABridge, A2ABridgeOptions, A2ABridgeRetry, RemoteA2AAgent } from './bridge.js';
export { A2A_BRIDGE_RETRY_DEFAULT, remoteAgentType, startA2ABridge } from './bridge.js';
export type { A2AServer, A2AServerOptions } from './server.js';
export {
  A2A_CLIENT_AGENT,
  A2A_ID_MAX,
  A2A_PARTS_MAX,
  A2A_PATH,
  AGENT_CARD_PATH,
  createA2AServer,
  toSdkTask,
} from './server.js';
export type {
  A2AHistoryEntry,
  A2APendingMessage,
  A2AStoredArtifact,
  A2ATaskState,
  A2ATaskStore,
  PgQueryable,
  PgRows,
  StoredA2ATask,
} from './task-store.js';
export {
  A2A_TASK_FORMAT_VERSION,
  A2A_TASKS_FILE,
  A2A_TASKS_TABLE,
  openJsonlA2ATaskStore,
  openPostgresA2ATaskStore,
  parseStoredTask,
} from './task-store.js';
