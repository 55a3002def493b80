import { Injectable } from '@nestjs/common';

/**
 * The limiter's time. Windows are an hour long: tests move this clock forward to cross one instead of
 * waiting, and every instance sharing the process shares the shift.
 */
@Injectable()
export class RateLimitClock {
  private offsetMs = 0;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
