import { createHash } from 'node:crypto';
import type { LiveChannel } from '@teamwire/core';
import type { Doorbell } from './doorbell.js';

/**
 * The LISTEN/NOTIFY channel a team's live events travel on: one per team and schema, so a process
 * hears only its own team's. A digest keeps the name within the 63 bytes of an identifier
 * whatever the schema and team id.
 */
export function liveChannelOf(schema: string, teamId: string): string {
  const digest = createHash('sha256').update(`${schema}\u0000${teamId}`).digest('hex');
  return `teamwire_live_${digest.slice(0, 40)}`;
}

/**
 * The store's {@link LiveChannel}: batches go out as NOTIFYs on the team's live channel over the
 * doorbell's connection (never one of the appends'), and come in on the same connection's LISTEN.
 * Core's relay encodes, bounds and validates the batches; this only moves them.
 */
export function doorbellLiveChannel(doorbell: Doorbell): LiveChannel {
  return {
    send: (payload) => doorbell.sendLive(payload),
    listen: (listener) => doorbell.listenLive(listener),
  };
}
