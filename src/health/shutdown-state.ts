import { Injectable } from '@nestjs/common';

/** Set once SIGTERM (or SIGINT) arrives: readiness answers 503 from then on. */
@Injectable()
export class ShutdownState {
  requested = false;
}
