import type { PostgresTeamStore } from '../src/store.js';

/** See placement-notes.mjs. */
export function notePlacement(store: PostgresTeamStore, note: (note: string) => void): void;
