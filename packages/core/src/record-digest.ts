import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import type { TeamRecord } from './records.js';

/**
 * The identity of one record: the SHA-256 (lower-case hex) of its canonical JSON (object keys
 * sorted, no whitespace), so the same record gives the same digest however its keys were ordered
 * when it was built, parsed or stored. A snapshot carries the digest of the record it was taken
 * after; a log whose record at that seq has another digest is not the log the snapshot folded.
 */
export function recordDigest(record: TeamRecord): string {
  return createHash('sha256').update(canonicalJson(record), 'utf8').digest('hex');
}
