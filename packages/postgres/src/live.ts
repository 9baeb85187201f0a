import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { LiveChannel } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import type pg from 'pg';
import { execute } from './connection.js';
import type { Doorbell } from './doorbell.js';
import { NOTIFY_PAYLOAD_BYTES_MAX } from './limits.js';
import type { Tables } from './schema.js';

/** The version of the sealed live payload (see the README's live events). */
export const LIVE_SEAL_VERSION = 1;

/** How a sealed payload starts: its version. */
const SEAL_PREFIX = `s${LIVE_SEAL_VERSION}:`;
/** The bytes of a team's live key (AES-256). */
const KEY_BYTES = 32;
/** The bytes of a sealed payload's nonce and of its authentication tag (AES-256-GCM). */
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The most UTF-8 bytes of a batch that fit in one sealed payload: the payload is the prefix and
 * the base64 of nonce, ciphertext (as long as the batch) and tag, within NOTIFY's bound.
 */
export const LIVE_SEALED_BATCH_BYTES_MAX =
  Math.floor((NOTIFY_PAYLOAD_BYTES_MAX - SEAL_PREFIX.length) / 4) * 3 - NONCE_BYTES - TAG_BYTES;

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
 * The team's live key from `team_keys`, made (32 random bytes) by the first process that opens
 * the team. A row that is not 32 bytes is refused with `CORRUPT_LOG`.
 */
export async function liveKeyOf(pool: pg.Pool, tables: Tables, teamId: string): Promise<Buffer> {
  const read = async () =>
    (
      await execute<{ live_key: unknown }>(
        pool,
        `SELECT live_key FROM ${tables.keys} WHERE team_id = $1`,
        [teamId],
      )
    ).rows[0]?.live_key;
  let key = await read();
  if (key === undefined) {
    await execute(
      pool,
      `INSERT INTO ${tables.keys} (team_id, live_key) VALUES ($1, decode($2, 'hex'))
       ON CONFLICT (team_id) DO NOTHING`,
      [teamId, randomBytes(KEY_BYTES).toString('hex')],
    );
    // whichever process made it first, every process reads the same one
    key = await read();
  }
  if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) {
    throw new TeamError(
      'CORRUPT_LOG',
      `team ${teamId} has no valid live key in ${tables.keys} (it must be ${KEY_BYTES} bytes)`,
      { details: { teamId } },
    );
  }
  return key;
}

/** Seals `batch` for `channel` with `key`: AES-256-GCM, the channel's name as associated data. */
export function sealLive(key: Buffer, channel: string, batch: string): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(channel, 'utf8'));
  const sealed = Buffer.concat([
    nonce,
    cipher.update(batch, 'utf8'),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  return `${SEAL_PREFIX}${sealed.toString('base64')}`;
}

/** The batch `payload` seals for `channel` with `key`, or undefined when it does not open. */
export function openLive(key: Buffer, channel: string, payload: string): string | undefined {
  if (payload.length > NOTIFY_PAYLOAD_BYTES_MAX || !payload.startsWith(SEAL_PREFIX)) {
    return undefined;
  }
  const sealed = Buffer.from(payload.slice(SEAL_PREFIX.length), 'base64');
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(channel, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const batch = Buffer.concat([
      decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return batch.toString('utf8');
  } catch {
    return undefined;
  }
}

/**
 * The store's {@link LiveChannel}: batches go out sealed with the team's key as NOTIFYs on the
 * team's live channel over the doorbell's connection (never one of the appends'), and come in on
 * the same connection's LISTEN. A payload that does not open with the key (sent by a role outside
 * the team, or damaged) reaches core's relay as an empty payload, which it drops and counts as a
 * malformed batch. Core's relay encodes, bounds and validates the batches; this seals and moves
 * them.
 */
export function doorbellLiveChannel(doorbell: Doorbell, key: Buffer, channel: string): LiveChannel {
  return {
    maxPayloadBytes: LIVE_SEALED_BATCH_BYTES_MAX,
    send: (payload) => doorbell.sendLive(sealLive(key, channel, payload)),
    listen: (listener) =>
      doorbell.listenLive((payload) => listener(openLive(key, channel, payload) ?? '')),
  };
}
