import { describe, expect, it } from 'vitest';
import { TeamError } from './errors.js';

describe('TeamError', () => {
  it('carries a stable code, details and cause', () => {
    const cause = new Error('disk');
    const error = new TeamError('STORAGE_IO', 'write failed', { cause, details: { path: 'x' } });
    expect(error.code).toBe('STORAGE_IO');
    expect(error.cause).toBe(cause);
    expect(error.details).toEqual({ path: 'x' });
    expect(error.toJSON()).toEqual({
      name: 'TeamError',
      code: 'STORAGE_IO',
      message: 'write failed',
      details: { path: 'x' },
    });
  });

  it('isInstance recognises errors from another copy of the package', () => {
    const foreign = Object.assign(new Error('x'), {
      code: 'TIMEOUT',
      [Symbol.for('teamwire.TeamError')]: true,
    });
    expect(TeamError.isInstance(foreign)).toBe(true);
    expect(TeamError.isInstance(new Error('x'))).toBe(false);
    expect(TeamError.isInstance({ code: 'TIMEOUT' })).toBe(false);
    expect(TeamError.hasCode(new TeamError('TIMEOUT', 't'), 'TIMEOUT')).toBe(true);
    expect(TeamError.hasCode(new TeamError('TIMEOUT', 't'), 'ABORTED')).toBe(false);
  });
});
