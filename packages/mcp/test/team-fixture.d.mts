import type { TeamService } from '@teamwire/core';
import type { ScriptedModel } from '@teamwire/core/testing';
import type { PostgresTeamStore } from '@teamwire/postgres';
import type { JsonlTeamStore } from '@teamwire/storage';

export declare const TEAM_ID: string;
export declare const SECRET: string;
export declare const EXTERNAL_TYPE: string;
export declare const PLAN: readonly {
  subject: string;
  description: string;
  blockedBy?: string[];
}[];
export interface FixtureTeam {
  team: TeamService;
  store: JsonlTeamStore | PostgresTeamStore;
  model: ScriptedModel;
  agentTypes: string[];
  close(): Promise<void>;
}
export declare function openFixtureTeam(options: {
  dir?: string;
  pg?: { url: string; schema: string; lead: boolean; leaseMs: number };
  externalMembers?: {
    idleAfterMs?: number;
    goneAfterMs?: number;
    serve?: boolean | readonly string[];
  };
  externalLead?: boolean;
}): Promise<FixtureTeam>;
