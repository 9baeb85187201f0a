/**
 * Code points HFS+ leaves out when it compares names, so that `.g\u200cit` opens `.git` on a Mac.
 * The list is the one git itself skips before it refuses a path as `.git`.
 */
const HFS_IGNORED = new Set([
  0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x206a, 0x206b, 0x206c,
  0x206d, 0x206e, 0x206f, 0xfeff,
]);

/**
 * True when a file system could take `name` (one path segment) for `.git`, the way git itself
 * decides which paths it never writes:
 *
 * - any case (`.GIT`), since case-insensitive file systems are the default on macOS and Windows;
 * - HFS+: with the code points HFS+ ignores left out (`.g\u200cit`);
 * - NTFS: with trailing dots and spaces dropped (`.git.`, `.git. . `), with an alternate data
 *   stream after a colon (`.git::$INDEX_ALLOCATION`, any stream), and as the 8.3 short name
 *   `git~1`. Git refuses only `git~1` (it writes `.git` first, so `.git` gets that short name);
 *   here every `git~<digits>` is refused, since a member's folder gives no such guarantee.
 *
 * The rules are applied together, which refuses a few names neither file system would map to
 * `.git` (`.g\u200cit.`); no real file needs such a name.
 */
export function isDotGitName(name: string): boolean {
  let folded = '';
  for (const char of name) {
    if (!HFS_IGNORED.has(char.codePointAt(0) ?? 0)) folded += char;
  }
  // Only ASCII letters fold: HFS+'s and NTFS's other case mappings never produce `.git`.
  folded = folded.replace(/[A-Z]/g, (c) => c.toLowerCase());
  const stream = folded.indexOf(':');
  if (stream !== -1) folded = folded.slice(0, stream);
  folded = folded.replace(/[. ]+$/, '');
  return folded === '.git' || /^git~[0-9]+$/.test(folded);
}

/**
 * True when a segment of `path` is a name git treats as `.git` ({@link isDotGitName}). Both `/`
 * and `\` separate segments: a backslash is a separator on Windows, and a path that is refused
 * there is refused everywhere.
 */
export function hasDotGitSegment(path: string): boolean {
  return path.split(/[\\/]/).some(isDotGitName);
}
