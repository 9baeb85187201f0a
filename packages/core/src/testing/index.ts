export type { ManualClock } from './manual-clock.js';
export { createManualClock, createSequentialIds } from './manual-clock.js';
export type { MemoryTeamLog, MemoryTranscriptStore } from './memory-stores.js';
export {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  repairTranscript,
} from './memory-stores.js';
