import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { AUTH_REQUIREMENT } from './auth.decorator';

/** Refuses to start when a route says neither @Auth nor @Public: access is never left to chance. */
@Injectable()
export class AuthRoutesCheck implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  onApplicationBootstrap(): void {
    const unguarded: string[] = [];
    for (const { instance, metatype } of this.discovery.getControllers() as InstanceWrapper<object>[]) {
      if (!instance || !metatype) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[method] as (...args: unknown[]) => unknown;
        if (Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        if (this.reflector.getAllAndOverride(AUTH_REQUIREMENT, [handler, metatype]) === undefined) {
          unguarded.push(`${metatype.name}.${method}`);
        }
      }
    }
    if (unguarded.length > 0) {
      throw new Error(`Routes without @Auth or @Public: ${unguarded.join(', ')}`);
    }
  }
}
