export type { TeamwireAgents } from './agents.js';
export { defineAgents } from './agents.js';
