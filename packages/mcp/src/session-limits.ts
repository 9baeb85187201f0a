/** What the session limits need to know of one open (or opening) session. */
export interface SessionUse {
  /** The member the session acts as. */
  readonly member: string;
  /** Its requests in progress; an open notification stream counts. Busy while above 0. */
  readonly inFlight: number;
  /** When it last became idle, on a counter that only grows: lower is idle longer. */
  readonly idleSince: number;
}

/** The bounds of {@link admitSession}. */
export interface SessionLimits {
  /** Sessions open at most, over all members. */
  readonly maxSessions: number;
  /** Sessions one member holds at most; at most `maxSessions`. */
  readonly maxSessionsPerMember: number;
}

/** Whether a member may open one more session, and which session yields to it. */
export type Admission<S> =
  | { admitted: true; yielding: S | undefined }
  | { admitted: false; code: 'MEMBER_SESSION_LIMIT' | 'SESSION_LIMIT'; message: string };

function idleLongest<S extends SessionUse>(sessions: Iterable<S>): S | undefined {
  let found: S | undefined;
  for (const session of sessions) {
    if (session.inFlight > 0) continue;
    if (found === undefined || session.idleSince < found.idleSince) found = session;
  }
  return found;
}

/**
 * Decides a new session of `member` among the `open` ones. A member at its share gets its own
 * session idle the longest closed for the new one, or, if all of its sessions are busy,
 * `MEMBER_SESSION_LIMIT`: what one member holds never decides whether another gets in. When
 * every session of the server is taken, the session idle the longest of the member(s) holding
 * the most (the asking member counted with its new one) yields; if all of theirs are busy, the
 * answer is `SESSION_LIMIT`. A busy session never yields.
 */
export function admitSession<S extends SessionUse>(
  open: readonly S[],
  member: string,
  limits: SessionLimits,
): Admission<S> {
  const mine = open.filter((session) => session.member === member);
  if (mine.length >= limits.maxSessionsPerMember) {
    const yielding = idleLongest(mine);
    if (yielding !== undefined) return { admitted: true, yielding };
    return {
      admitted: false,
      code: 'MEMBER_SESSION_LIMIT',
      message: `${member} holds ${limits.maxSessionsPerMember} sessions, all busy: close one`,
    };
  }
  if (open.length < limits.maxSessions) return { admitted: true, yielding: undefined };
  const held = new Map<string, number>([[member, 1]]);
  for (const session of open) held.set(session.member, (held.get(session.member) ?? 0) + 1);
  let most = 0;
  for (const count of held.values()) most = Math.max(most, count);
  const yielding = idleLongest(open.filter((session) => held.get(session.member) === most));
  if (yielding !== undefined) return { admitted: true, yielding };
  return {
    admitted: false,
    code: 'SESSION_LIMIT',
    message: `${limits.maxSessions} sessions are open, and those of the members holding the most are busy`,
  };
}
