/** The name of the team lead (reserved by core for it alone). */
export const LEAD_NAME = 'lead';

/** `hh:mm:ss` of a timestamp (ms since the Unix epoch), in local time. */
export function clockTime(at: number): string {
  const date = new Date(at);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** `2024-05-01 12:00:00`, for tooltips. */
export function fullTime(at: number): string {
  const date = new Date(at);
  return `${date.toLocaleDateString()} ${clockTime(at)}`;
}

/** A token count short enough for a narrow column: exact below 10,000, then `41.2k`, `186k`, `1.2M`. */
export function tokenCount(n: number): string {
  if (n < 10_000) return String(n);
  if (n < 99_950) return `${(n / 1000).toFixed(1)}k`;
  if (n < 999_500) return `${Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** A span of time, short: `45s`, `3m 05s`, `2h 04m` (0 for a negative span). */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
}
