export type { ConformanceTestApi } from './conformance/api.js';
export { conformanceRecord, conformanceRecords } from './conformance/api.js';
export type {
  TeamLogConformanceOptions,
  TeamLogConformanceSubject,
} from './conformance/team-log-conformance.js';
export { defineTeamLogConformance } from './conformance/team-log-conformance.js';
export type {
  TranscriptStoreConformanceOptions,
  TranscriptStoreConformanceSubject,
} from './conformance/transcript-store-conformance.js';
export { defineTranscriptStoreConformance } from './conformance/transcript-store-conformance.js';
export type { ManualClock } from './manual-clock.js';
export { createManualClock, createSequentialIds } from './manual-clock.js';
export type {
  AppendHold,
  MemoryParticipant,
  MemoryPlacementRow,
  MemoryRuns,
  MemorySharedLog,
  MemorySharedTeam,
  ReportHold,
} from './memory-shared.js';
export { createMemorySharedTeam } from './memory-shared.js';
export type {
  MemorySnapshotOptions,
  MemoryStoredSnapshot,
  MemoryTeamLog,
  MemoryTranscriptStore,
} from './memory-stores.js';
export { createMemoryTeamLog, createMemoryTranscriptStore } from './memory-stores.js';
export type {
  MemoryWorkspaceCall,
  MemoryWorkspaces,
  MemoryWorkspacesOptions,
  MemoryWorkspaceWork,
} from './memory-workspaces.js';
export { createMemoryWorkspaces } from './memory-workspaces.js';
export { randomTeamRecords } from './random-team.js';
export type {
  AgentScript,
  RecordedRequest,
  ScriptedCallContext,
  ScriptedModel,
  ScriptedStep,
  ScriptedStepFunction,
  ScriptedTokenOptions,
  ScriptedToolCall,
} from './scripted-model.js';
export { createScriptedModel } from './scripted-model.js';
export { createSimpleFormat, createSimplePolicy, simpleEnvelopeText } from './simple-format.js';
