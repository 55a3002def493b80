import type { Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import express, { type Request, type Response } from 'express';
import { OperatorAccess } from '../operator/operator-access';
import { MetricsService } from '../metrics/metrics.service';
import { METRICS_ACCESS } from '../operator/metrics-access.guard';
import { HealthService, readinessStatusCode } from './health.service';

/**
 * A worker process has no API; it answers its probes and Prometheus on WORKER_PORT: GET /health, /health/ready
 * and /metrics, the same answers as the API's.
 */
export function startProbeServer(app: INestApplicationContext, port: number): Promise<Server> {
  const health = app.get(HealthService);
  const metrics = app.get(MetricsService);
  const access = app.get(OperatorAccess);
  const probes = express();
  probes.disable('x-powered-by');
  probes.get('/health', (_request: Request, response: Response) => {
    response.json({ status: 'ok' });
  });
  probes.get('/health/ready', (_request: Request, response: Response, next) => {
    health.readiness().then((readiness) => response.status(readinessStatusCode(readiness)).json(readiness), next);
  });
  probes.get('/metrics', access.middleware(METRICS_ACCESS), (_request: Request, response: Response, next) => {
    metrics.render().then((text) => response.type(metrics.contentType).set('Cache-Control', 'no-store').send(text), next);
  });
  return new Promise((resolve, reject) => {
    const server = probes.listen(port, () => resolve(server)).once('error', reject);
  });
}
