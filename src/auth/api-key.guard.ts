import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiKeyCache, ResolvedKey } from './api-key.cache';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { AUTH_REQUIREMENT, AuthRequirement, requiredPermissions } from './auth.decorator';
import { readCredential } from './credentials';
import { checkKeyAccess, checkNotExpired, checkRestrictions } from './key-checks';

/**
 * The one global guard: deny by default. A route is open only with @Public(); otherwise its @Auth()
 * requirement decides. 401 for a missing, unknown or expired credential; 403 for a valid one that may not
 * call the route (spec "Rules"); 503 when the key cannot be looked up (PostgreSQL unreachable and no recent
 * copy in ApiKeyCache), which the exceptions filter answers from the database's error.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeyCache,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const requirement = this.reflector.getAllAndOverride<AuthRequirement | 'public' | undefined>(AUTH_REQUIREMENT, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (requirement === 'public') return true;
    if (!requirement) throw new AppException(ErrorCode.Forbidden, 'This route has no access rule');

    const request = context.switchToHttp().getRequest<Request>();
    const credential = readCredential(request);
    if (!credential) {
      if (requirement.anonymous) return true;
      throw new AppException(ErrorCode.AuthMissing, 'An API key is required: send Authorization: Bearer <key>');
    }

    // On rate-limited routes the limiter has resolved the key already, through the same cache: same answer.
    const key = await this.keys.resolve(credential.secret);
    if (!key || (credential.source === 'x-public-token' && key.keyType !== 'public')) {
      throw new AppException(ErrorCode.AuthInvalidKey, 'The API key is invalid');
    }
    checkNotExpired(key);
    this.keys.touch(key.keyId);

    checkRestrictions(key, request);
    this.checkAccess(key, requirement, request);

    const { expiresAt: _expiresAt, ipAllowed: _ipAllowed, ...auth } = key;
    request.auth = auth;
    return true;
  }

  private checkAccess(key: ResolvedKey, requirement: AuthRequirement, request: Request): void {
    checkKeyAccess(key, { ...requirement, permissions: requiredPermissions(requirement) });
    if (key.keyType === 'public' && requirement.domainParam) {
      const domain = String(request.params[requirement.domainParam] ?? '').toLowerCase();
      if (domain !== key.domainScope) {
        throw new AppException(ErrorCode.Forbidden, `This public key works only for ${key.domainScope}`);
      }
    }
  }
}
