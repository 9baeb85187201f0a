import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * What a lock records of the process that holds it: enough to tell, later and on the same host,
 * whether that very process still runs. A pid alone cannot: after a SIGKILL the process can stay a
 * zombie (`kill(pid, 0)` still succeeds), and a pid is recycled for unrelated processes.
 */
export interface ProcessIdentity {
  /** The process id, which the system may give to another process once this one is gone. */
  pid: number;
  /** `os.hostname()`; a process on another host is never judged dead, having no way to check. */
  host: string;
  /**
   * Linux: the process's start time, in clock ticks after boot (field 22 of `/proc/<pid>/stat`).
   * With the pid it names one process for the life of a boot.
   */
  startTime?: number;
  /** Linux: `/proc/sys/kernel/random/boot_id`, so a lock from before a reboot is known as dead. */
  bootId?: string;
}

/** What `/proc/<pid>/stat` says of a process. */
export interface ProcStat {
  /** One letter: `R` running, `S` sleeping, `Z` zombie, `X` dead, ... */
  state: string;
  /** The process is tearing itself down (`PF_EXITING`): it runs no more of its own code. */
  exiting: boolean;
  startTime: number;
}

/** `PF_EXITING` in the kernel's per-task flags (field 9 of `/proc/<pid>/stat`). */
const PF_EXITING = 0x4;

/**
 * Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may itself hold
 * spaces and parentheses, so fields are counted from the last `)`.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is field 3 (state); field 9 (flags) is fields[6]; field 22 (starttime) fields[19].
  const state = fields[0];
  const flags = Number(fields[6]);
  const startTime = Number(fields[19]);
  if (
    state === undefined ||
    state.length !== 1 ||
    !Number.isSafeInteger(flags) ||
    !Number.isSafeInteger(startTime)
  ) {
    return undefined;
  }
  return { state, exiting: (flags & PF_EXITING) !== 0, startTime };
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The `/proc` stat of a pid: `undefined` when no such process; `null` when `/proc` cannot tell. */
function procStat(pid: number): ProcStat | undefined | null {
  const text = readText(`/proc/${pid}/stat`);
  if (text === undefined) return procAvailable() ? undefined : null;
  return parseProcStat(text) ?? null;
}

let hasProc: boolean | undefined;
function procAvailable(): boolean {
  hasProc ??= readText('/proc/self/stat') !== undefined;
  return hasProc;
}

function signalProbe(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as { code?: unknown }).code === 'EPERM';
  }
}

/** This process's identity, with start time and boot id where `/proc` provides them. */
export function currentIdentity(): ProcessIdentity {
  const identity: ProcessIdentity = { pid: process.pid, host: hostname() };
  const stat = procStat(process.pid);
  if (stat) identity.startTime = stat.startTime;
  const bootId = readText('/proc/sys/kernel/random/boot_id')?.trim();
  if (bootId) identity.bootId = bootId;
  return identity;
}

/**
 * Whether the process a lock names still runs, judged on its own host. On Linux a zombie, a
 * process already exiting (killed, not yet a zombie), a process with another start time (a
 * recycled pid) and a lock from an earlier boot all count as dead. Elsewhere, or for a lock that recorded no start time, it falls back to `kill(pid, 0)`.
 */
export function isProcessAlive(owner: ProcessIdentity, self: ProcessIdentity): boolean {
  if (owner.bootId !== undefined && self.bootId !== undefined && owner.bootId !== self.bootId) {
    return false;
  }
  const stat = procStat(owner.pid);
  if (stat === undefined) return false;
  if (stat === null) return signalProbe(owner.pid);
  if (stat.state === 'Z' || stat.state === 'X' || stat.exiting) return false;
  return owner.startTime === undefined || owner.startTime === stat.startTime;
}
