import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';

/**
 * The proof that a branch and a worktree were made by this package for one member. It is
 * written before the branch is created, so anything found at the member's deterministic branch
 * or path is either the member's (marker present, same member id) or someone else's (then
 * `WORKSPACE_TAKEN`), never guessed.
 */
export const MemberMarker = z.strictObject({
  version: z.literal(1),
  teamId: z.string().min(1).max(128),
  memberId: z.string().min(1).max(128),
  memberName: z.string().min(1).max(64),
  branch: z.string().min(1).max(255),
  path: z.string().min(1).max(4096),
  base: z.string().regex(/^[0-9a-f]{40,64}$/),
});
/** See {@link MemberMarker}. */
export type MemberMarker = z.infer<typeof MemberMarker>;

const MAX_MARKER_BYTES = 16 * 1024;

/** The marker at `path`; undefined when missing or not a valid marker (then it proves nothing). */
export async function readMarker(path: string): Promise<MemberMarker | undefined> {
  let text: string;
  try {
    const handle = await open(path, 'r');
    try {
      const buffer = Buffer.alloc(MAX_MARKER_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, MAX_MARKER_BYTES, 0);
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
  try {
    const parsed = MemberMarker.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the marker whole or not at all (temporary file, fsync, rename). */
export async function writeMarker(path: string, marker: MemberMarker): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(temporary, 'w');
  try {
    await handle.writeFile(`${JSON.stringify(marker)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Removes the marker (when the member's workspace is gone for good). */
export async function removeMarker(path: string): Promise<void> {
  await rm(path, { force: true });
}

/** Reads a small text file, or undefined when it cannot be read. */
export async function readSmallFile(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).slice(0, MAX_MARKER_BYTES);
  } catch {
    return undefined;
  }
}
