import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from '../common/errors/error-body';
import type { KeyType, Permission } from './permissions';

export const AUTH_REQUIREMENT = 'mailroom:auth';

export interface AuthRequirement {
  /** Key types that may call the route. */
  keyTypes: readonly KeyType[];
  /** The permission the key must hold; a list: every one of them. */
  permission?: Permission | readonly Permission[];
  /** Only keys of the operator account (D-2): /admin/*. */
  operator?: boolean;
  /** Calls without any credential pass through (form posts validated by origin); a credential sent is still checked. */
  anonymous?: boolean;
  /** Route parameter naming a domain: a public key works only when it equals the key's domainScope. */
  domainParam?: string;
}

/** Who may call this route. Every route has exactly one of @Auth or @Public; the guard denies the rest. */
export function Auth(requirement: AuthRequirement): MethodDecorator & ClassDecorator {
  const schemes = requirement.keyTypes.flatMap((type) => (type === 'public' ? ['PublicToken'] : ['BearerKey', 'ApiKeyHeader']));
  const who = requirement.keyTypes.join(', ') + (requirement.operator ? ' (operator account)' : '');
  return applyDecorators(
    SetMetadata(AUTH_REQUIREMENT, requirement),
    ...[...new Set(schemes)].map((scheme) => ApiSecurity(scheme)),
    // OpenAPI's empty security requirement: the route may also be called without any credential.
    ...(requirement.anonymous ? [ApiSecurity({})] : []),
    ApiUnauthorizedResponse({
      description: requirement.anonymous ? 'A credential was sent, but it is invalid or expired' : 'Credential missing, invalid or expired',
      type: ErrorBodyDto,
    }),
    ApiForbiddenResponse({
      description: `Only ${who} keys${requirement.permission ? ` holding ${requiredPermissions(requirement).join(', ')}` : ''}`,
      type: ErrorBodyDto,
    }),
  );
}

export function requiredPermissions(requirement: AuthRequirement): readonly Permission[] {
  const { permission } = requirement;
  return permission === undefined ? [] : typeof permission === 'string' ? [permission] : permission;
}

/** An open route: health, docs, tracking. */
export function Public(): MethodDecorator & ClassDecorator {
  return SetMetadata(AUTH_REQUIREMENT, 'public');
}
