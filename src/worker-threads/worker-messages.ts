import type { MetricObjectWithValues, MetricValue } from 'prom-client';

/** Messages from the main thread to its worker threads (WorkerSupervisor). */
export type ToWorker = { type: 'shutdown'; signal: string } | { type: 'metrics'; id: number };

/** Answers of a worker thread. */
export type FromWorker = { type: 'metrics'; id: number; metrics: MetricObjectWithValues<MetricValue<string>>[] };
