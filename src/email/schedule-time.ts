import { AppException } from '../common/errors/app.exception';

const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 3600 * 1000;

/** D-18: past → now (null), more than 30 days ahead → 400. */
export function scheduleTime(scheduleFor: string | undefined): Date | null {
  if (!scheduleFor) return null;
  const at = new Date(scheduleFor);
  const ahead = at.getTime() - Date.now();
  if (ahead > MAX_SCHEDULE_AHEAD_MS) throw AppException.invalidField('scheduleFor', 'may be at most 30 days ahead');
  return ahead > 0 ? at : null;
}
