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
