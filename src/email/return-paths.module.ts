import { Module } from '@nestjs/common';
import { ReturnPaths } from './return-path';

/**
 * The VERP return paths, one instance for all: sending makes them, provider events and bounce reports read them.
 * A module of its own so that provider events need not import the whole of sending.
 */
@Module({ providers: [ReturnPaths], exports: [ReturnPaths] })
export class ReturnPathsModule {}
