export type { Durability } from './append-writer.js';
export type { StorageFileHandle, StorageFs } from './fs-seam.js';
export { nodeFs } from './fs-seam.js';
export type {
  SnapshotVerification,
  TeamListing,
  TeamLogSnapshot,
  TeamStateReading,
  TeamVerification,
} from './inspect.js';
export {
  listTeams,
  readTeamLog,
  readTeamState,
  readTranscript,
  verifyTeam,
} from './inspect.js';
export type { JsonlTeamLog } from './jsonl-team-log.js';
export type { JsonlTranscriptStore, TranscriptRepair } from './jsonl-transcript-store.js';
export type { LockOwner, ProcessProbe } from './lock.js';
export { currentProcess, LOCK_FILE, LOCK_FORMAT_VERSION, LockFile } from './lock.js';
export type { SegmentFile, SegmentRetention } from './log-layout.js';
export { DEFAULT_SEGMENT_BYTES, SEGMENTS_DIR } from './log-layout.js';
export type { ProcessIdentity } from './process-identity.js';
export {
  SNAPSHOT_FILE_FORMAT,
  SNAPSHOT_FILE_VERSION,
  SNAPSHOTS_DIR,
} from './snapshot-files.js';
export type { JsonlTeamStore, OpenJsonlTeamStoreOptions, RecoveryReport } from './team-store.js';
export {
  DEFAULT_TEAMS_ROOT,
  LOG_FILE,
  openJsonlTeamStore,
  TRANSCRIPTS_DIR,
} from './team-store.js';
export type { JournalReplay } from './transcript-journal.js';
export {
  JOURNAL_CHECKPOINT_BYTES,
  TRANSCRIPT_JOURNAL_FILE,
  TRANSCRIPT_JOURNAL_FORMAT,
  TRANSCRIPT_JOURNAL_VERSION,
} from './transcript-journal.js';
