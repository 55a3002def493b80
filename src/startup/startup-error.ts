/**
 * A reason start-up cannot go on, worded for the person who runs Mailroom: one line that names what failed, the
 * variable that points at it and what to do. Start-up logs it as one fatal line and exits 1, without a stack.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** The one-line reason of a failed listen(): a port in use or not ours to take, named by its variable. */
export function listenError(err: unknown, variable: string, port: number): StartupError | null {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') {
    return new StartupError(
      `Port ${port} (${variable}) is already in use by another process: stop that process, or set ${variable} to a free port`,
    );
  }
  if (code === 'EACCES') {
    return new StartupError(`Port ${port} (${variable}) may not be opened by this user: set ${variable} to a port above 1023`);
  }
  return null;
}
