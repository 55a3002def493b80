import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { observePool } from './metrics';
import { mainPool } from '../database/database.options';

/** Shows this thread's pool of DATABASE_URL in /metrics: connections in use and idle, queries waiting, its share. */
@Injectable()
export class DatabasePoolMetrics implements OnModuleInit {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfigService,
  ) {}

  onModuleInit(): void {
    const pool = mainPool(this.dataSource);
    const max = this.config.databasePoolSize;
    observePool('database', () => ({ inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount, max }));
  }
}
