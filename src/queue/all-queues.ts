import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { QueueName } from './queue.constants';

/** Anything that resolves providers by token: a ModuleRef or the application. */
interface ProviderLookup {
  get<T>(token: string, options: { strict: false }): T;
}

/** Every queue of the application, in QueueName order. */
export function allQueues(lookup: ProviderLookup): Queue[] {
  return Object.values(QueueName).map((name) => lookup.get<Queue>(getQueueToken(name), { strict: false }));
}
