import 'reflect-metadata';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { AccountsService } from '../../src/operator/accounts.service';
import { AppModule } from '../../src/app.module';
import { configureApp } from '../../src/app.setup';
import { AppConfigService } from '../../src/config/app-config.service';
import { deleteKeys } from './global-teardown';
import { cloneTemplateDatabase, databaseUrl, dropDatabase, redisPrefixOfRun, shortRandom, TEST_REDIS_URL, testRunId } from './test-env';

export interface TestApp {
  app: NestExpressApplication;
  http: TestAgent;
  config: AppConfigService;
  /** An admin key of the operator account. */
  operatorKey: string;
  /** The environment this app was built from, to start a second instance on the same database and Redis. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Extra environment variables (validated like the real ones). */
  env?: Record<string, string>;
  /** Start a second instance that shares the first one's database and Redis key space. */
  shareWith?: TestApp;
  /**
   * Use this PostgreSQL database (created and migrated at start) and Redis instead of a copy of the template
   * on the machine's servers: the chaos tests' private servers. close() then drops nothing.
   */
  stores?: { databaseUrl: string; redisUrl: string };
}

/**
 * Boots the real application against a fresh database (a copy of the migrated template) and its own Redis
 * key space. One per e2e file; close() drops both.
 */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const runId = testRunId();
  const owned = !options.shareWith && !options.stores;
  let env: Record<string, string>;
  if (options.shareWith) {
    env = { ...options.shareWith.env, ...options.env };
  } else {
    env = {
      NODE_ENV: 'test',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      DATABASE_URL: options.stores?.databaseUrl ?? databaseUrl(await cloneTemplateDatabase()),
      REDIS_URL: options.stores?.redisUrl ?? TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `${redisPrefixOfRun(runId)}${shortRandom()}:`,
      PUBLIC_URL: 'http://mailroom.test',
      DOMAIN_VERIFICATION: 'dns',
      // Endpoint limits (5/min on /admin/*) would trip ordinary suites; the rate-limit suites turn it on.
      RATE_LIMIT_ENABLED: 'false',
      // Free accounts' quotas (D-13) would trip suites that send a lot; the quota suites turn them on.
      QUOTAS_ENABLED: 'false',
      // Parallel suites cannot all listen on 2525; the forwarding suites give a free port.
      INBOUND_SMTP_PORT: '0',
      ...options.env,
    };
  }

  const config = AppConfigService.fromEnv(env);
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot({ config })] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: false });
  configureApp(app);
  await app.init();
  await app.listen(0, '127.0.0.1');

  const operatorKey = (await app.get(AccountsService).bootstrapOperator()) as string;
  return {
    app,
    http: request(app.getHttpServer()),
    config,
    operatorKey,
    env,
    close: async () => {
      await app.close();
      if (!owned) return;
      await dropDatabase(databaseName(env));
      const redis = new Redis(TEST_REDIS_URL);
      await deleteKeys(redis, `${env.REDIS_KEY_PREFIX}*`).finally(() => redis.disconnect());
    },
  };
}

function databaseName(env: Record<string, string>): string {
  return new URL(env.DATABASE_URL).pathname.slice(1);
}
