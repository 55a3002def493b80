import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiKeyCache, ResolvedKey } from '../../api-keys/api-key.cache';
import { AppException } from '../errors/app.exception';
import { ErrorCode } from '../errors/error-code';
import { hostMatchesDomain } from '../http/ip-match';
import { AUTH_REQUIREMENT, AuthRequirement, requiredPermissions } from './auth.decorator';
import { readCredential, requestOriginHost } from './credentials';

/**
 * The one global guard: deny by default. A route is open only with @Public(); otherwise its @Auth()
 * requirement decides. 401 for a missing, unknown or expired credential; 403 for a valid one that may not
 * call the route (spec "Rules").
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

    const key = await this.keys.resolve(credential.secret);
    if (!key || (credential.source === 'x-public-token' && key.keyType !== 'public')) {
      throw new AppException(ErrorCode.AuthInvalidKey, 'The API key is invalid');
    }
    if (key.expiresAt !== null && key.expiresAt <= Date.now()) {
      throw new AppException(ErrorCode.AuthKeyExpired, 'The API key has expired');
    }
    this.keys.touch(key.keyId);

    this.checkRestrictions(key, request);
    this.checkAccess(key, requirement, request);

    const { expiresAt: _expiresAt, ipAllowed: _ipAllowed, ...auth } = key;
    request.auth = auth;
    return true;
  }

  private checkRestrictions(key: ResolvedKey, request: Request): void {
    if (key.ipAllowed && !key.ipAllowed(request.ip)) {
      throw new AppException(ErrorCode.IpNotAllowed, `This key may not be used from ${request.ip}`);
    }
    const allowedDomains = key.restrictions.domain_restrictions;
    if (allowedDomains?.length) {
      // Server-side callers send no Origin; features that know a domain (email `from`) check it themselves.
      const host = requestOriginHost(request);
      if (host !== null && !hostMatchesDomain(host, allowedDomains)) {
        throw new AppException(ErrorCode.DomainNotAllowed, `This key may not be used from ${host}`);
      }
    }
  }

  private checkAccess(key: ResolvedKey, requirement: AuthRequirement, request: Request): void {
    if (!requirement.keyTypes.includes(key.keyType)) {
      throw new AppException(
        ErrorCode.Forbidden,
        `A ${key.keyType} key cannot call this route (allowed key types: ${requirement.keyTypes.join(', ')})`,
      );
    }
    if (requirement.operator && !key.isOperator) {
      throw new AppException(ErrorCode.Forbidden, 'Only keys of the operator account can call this route');
    }
    const missing = requiredPermissions(requirement).filter((permission) => !key.permissions.includes(permission));
    if (missing.length > 0) {
      throw new AppException(ErrorCode.Forbidden, `This key lacks the permission${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
    }
    if (key.keyType === 'public' && requirement.domainParam) {
      const domain = String(request.params[requirement.domainParam] ?? '').toLowerCase();
      if (domain !== key.domainScope) {
        throw new AppException(ErrorCode.Forbidden, `This public key works only for ${key.domainScope}`);
      }
    }
  }
}
