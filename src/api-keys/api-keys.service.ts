import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import type { AuthContext, KeyRestrictions } from '../common/auth/auth-context';
import { aboveCeiling, ceilingOf, inferKeyType, KeyType, normalizePermissions, Permission } from '../common/auth/permissions';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { isIpOrCidr } from '../common/http/ip-match';
import { newId } from '../common/ids';
import { ApiKey } from './api-key.entity';
import { ApiKeyCache } from './api-key.cache';
import { generateKey, hashKey, keyTypeOf, previewKey } from './key-format';
import { CreatorKey, inheritRestrictions, KeyGrant, widerThan } from './key-privileges';

const DEFAULT_RATE_LIMIT: Record<KeyType, number> = { admin: 1000, usage: 1000, public: 100 };

export interface NewKeyInput {
  name: string;
  keyType: KeyType;
  rateLimit?: number;
  domainScope?: string;
  permissions?: string[];
  restrictions?: KeyRestrictions;
}

/** The rules of API keys: shapes, permissions, ceilings and restrictions. The only writer of api_keys. */
@Injectable()
export class ApiKeysService {
  constructor(
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    private readonly cache: ApiKeyCache,
    private readonly config: AppConfigService,
  ) {}

  /**
   * Creates a key for the calling key's account, never wider than the calling key: what the request
   * leaves out is inherited from it, what goes beyond it is refused (403).
   */
  createBy(creator: AuthContext, input: NewKeyInput): Promise<{ key: ApiKey; secret: string }> {
    return this.insert(creator.accountId, input, creator);
  }

  /** POST /auth/keys: the key type follows from the permissions (D-9). */
  createForPermissions(creator: AuthContext, name: string, permissions: string[]): Promise<{ key: ApiKey; secret: string }> {
    const keyType = inferKeyType(this.resolvePermissions('admin', permissions));
    return this.createBy(creator, { name, keyType, permissions });
  }

  /** Creates a key no other key bounds (an account's first admin key, the operator's). */
  create(accountId: string, input: NewKeyInput, manager?: EntityManager): Promise<{ key: ApiKey; secret: string }> {
    return this.insert(accountId, input, null, manager);
  }

  /** Stores a secret chosen elsewhere (BOOTSTRAP_ADMIN_KEY); false if a key with that secret exists. */
  async adopt(accountId: string, name: string, secret: string, manager?: EntityManager): Promise<boolean> {
    const keyType = keyTypeOf(this.config.keyPrefix, secret);
    if (keyType !== 'admin') throw new Error('BOOTSTRAP_ADMIN_KEY is not a well-formed admin key');
    const repo = (manager ?? this.keys.manager).getRepository(ApiKey);
    if (await repo.existsBy({ keyHash: hashKey(secret) })) return false;
    await repo.insert(this.buildKey(accountId, name, keyType, secret, this.grantOf({ name, keyType }, null)));
    return true;
  }

  list(accountId: string, keyType?: KeyType): Promise<ApiKey[]> {
    return this.keys.find({ where: { accountId, ...(keyType ? { keyType } : {}) }, order: { createdAt: 'ASC' } });
  }

  async delete(accountId: string, keyId: string): Promise<void> {
    const key = await this.keys.findOneBy({ id: keyId, accountId });
    if (!key) throw AppException.notFound('API key', keyId);
    await this.keys.delete({ id: key.id, accountId });
    await this.cache.invalidate(key.keyHash);
  }

  private async insert(
    accountId: string,
    input: NewKeyInput,
    creator: CreatorKey | null,
    manager?: EntityManager,
  ): Promise<{ key: ApiKey; secret: string }> {
    const grant = this.grantOf(input, creator);
    const secret = generateKey(this.config.keyPrefix, input.keyType, grant.domainScope);
    const key = this.buildKey(accountId, input.name, input.keyType, secret, grant);
    await (manager ?? this.keys.manager).insert(ApiKey, key);
    return { key, secret };
  }

  /** What the new key will hold: validated (400), inherited from the creator and checked against it (403). */
  private grantOf(input: NewKeyInput, creator: CreatorKey | null): KeyGrant {
    const domainScope = this.domainScopeOf(input);
    const ceiling = ceilingOf(input.keyType);
    const permissions = input.permissions
      ? this.resolvePermissions(input.keyType, input.permissions)
      : ceiling.filter((p) => !creator || creator.permissions.includes(p));
    const requested = { rateLimit: input.rateLimit, restrictions: this.validateRestrictions(input.restrictions ?? {}) };
    const defaultRateLimit = DEFAULT_RATE_LIMIT[input.keyType];
    if (!creator) {
      return { domainScope, permissions, rateLimit: input.rateLimit ?? defaultRateLimit, restrictions: requested.restrictions };
    }
    const grant = { domainScope, permissions, ...inheritRestrictions(creator, requested, defaultRateLimit) };
    const wider = widerThan(creator, grant);
    if (wider.length > 0) {
      throw new AppException(
        ErrorCode.Forbidden,
        `A key cannot create a key wider than itself: ${wider.map((w) => `${w.field}: ${w.message}`).join('; ')}`,
        { fields: wider },
      );
    }
    return grant;
  }

  private buildKey(accountId: string, name: string, keyType: KeyType, secret: string, grant: KeyGrant): ApiKey {
    return Object.assign(new ApiKey(), {
      id: newId('key'),
      accountId,
      name,
      keyType,
      keyHash: hashKey(secret),
      keyPreview: previewKey(secret),
      domainScope: grant.domainScope,
      permissions: [...grant.permissions],
      rateLimit: grant.rateLimit,
      restrictions: grant.restrictions,
      expiresAt: grant.restrictions.expires_at ? new Date(grant.restrictions.expires_at) : null,
      lastUsedAt: null,
      createdAt: new Date(),
    });
  }

  private domainScopeOf(input: NewKeyInput): string | null {
    if (input.keyType !== 'public') {
      if (input.domainScope) throw AppException.invalidField('domainScope', 'only public keys take a domainScope');
      return null;
    }
    if (!input.domainScope) throw AppException.invalidField('domainScope', 'domainScope is required for public keys');
    return input.domainScope.toLowerCase();
  }

  private resolvePermissions(keyType: KeyType, names: string[]): Permission[] {
    const result = normalizePermissions(names);
    if ('unknown' in result) {
      throw AppException.invalidField('permissions', `unknown permission(s): ${result.unknown.join(', ')}`);
    }
    const above = aboveCeiling(keyType, result.permissions);
    if (above.length > 0) {
      throw AppException.invalidField('permissions', `a ${keyType} key cannot hold: ${above.join(', ')}`);
    }
    return result.permissions;
  }

  private validateRestrictions(restrictions: KeyRestrictions): KeyRestrictions {
    const bad = (restrictions.ip_whitelist ?? []).filter((entry) => !isIpOrCidr(entry));
    if (bad.length > 0) {
      throw AppException.invalidField('restrictions.ip_whitelist', `not an IP address or CIDR range: ${bad.join(', ')}`);
    }
    if (restrictions.expires_at && new Date(restrictions.expires_at).getTime() <= Date.now()) {
      throw AppException.invalidField('restrictions.expires_at', 'expires_at must be in the future');
    }
    const clean: KeyRestrictions = { ...restrictions };
    if (clean.domain_restrictions) clean.domain_restrictions = clean.domain_restrictions.map((d) => d.toLowerCase());
    // class instances (DTOs) become plain JSON for the jsonb column
    return JSON.parse(JSON.stringify(clean)) as KeyRestrictions;
  }
}
