import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import type { AuthContext, KeyRestrictions } from '../auth/auth-context';
import { aboveCeiling, ceilingOf, inferKeyType, KeyType, normalizePermissions, Permission } from '../auth/permissions';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { isIpOrCidr } from '../common/http/ip-match';
import { newId } from '../common/ids';
import { AdoptedBootstrapKey } from './adopted-bootstrap-key.entity';
import { ApiKey } from '../auth/api-key.entity';
import { ApiKeyCache } from '../auth/api-key.cache';
import { generateKey, hashKey, keyTypeOf, previewKey } from '../auth/key-format';
import { patchRestrictions, RestrictionsPatch } from './key-changes';
import { CreatorKey, inheritRestrictions, KeyGrant, widerThan } from './key-privileges';

const DEFAULT_RATE_LIMIT: Record<KeyType, number> = { admin: 1000, usage: 1000, public: 100 };

export interface NewKeyInput {
  name: string;
  keyType: KeyType;
  /** Left out: the type's default (or less, inherited from the creator); null: no hourly limit of its own. */
  rateLimit?: number | null;
  domainScope?: string;
  permissions?: string[];
  restrictions?: KeyRestrictions;
}

/** PATCH /api-keys/{keyId}: what is left out stays as it is. */
export interface KeyChange {
  name?: string;
  permissions?: string[];
  rateLimit?: number | null;
  /** Laid over the key's restrictions field by field (see patchRestrictions); null removes them all. */
  restrictions?: RestrictionsPatch | null;
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
    const keyType = inferKeyType(this.resolvePermissions('admin', permissions, creator.isOperator));
    return this.createBy(creator, { name, keyType, permissions });
  }

  /**
   * Creates a key no other key bounds (an account's first admin key, the operator's, which pass rateLimit
   * null: no hourly limit of their own).
   */
  create(accountId: string, input: NewKeyInput, manager?: EntityManager): Promise<{ key: ApiKey; secret: string }> {
    return this.insert(accountId, input, null, manager);
  }

  /**
   * Stores a secret chosen elsewhere (BOOTSTRAP_ADMIN_KEY) as a key without an hourly limit of its own, once:
   * a secret adopted before is never adopted again, so a deleted bootstrap key stays deleted ('gone'; 'kept'
   * while its key exists). Callers serialise concurrent adoptions (AccountsService.bootstrapOperator).
   */
  async adopt(accountId: string, name: string, secret: string, manager?: EntityManager): Promise<'added' | 'kept' | 'gone'> {
    const keyType = keyTypeOf(this.config.keyPrefix, secret);
    if (keyType !== 'admin') throw new Error('BOOTSTRAP_ADMIN_KEY is not a well-formed admin key');
    const em = manager ?? this.keys.manager;
    const keyHash = hashKey(secret);
    const exists = await em.existsBy(ApiKey, { keyHash });
    if (await em.existsBy(AdoptedBootstrapKey, { keyHash })) return exists ? 'kept' : 'gone';
    await em.insert(AdoptedBootstrapKey, { keyHash, accountId });
    // A key that holds the secret already (adopted before adoptions were recorded) is kept as it is.
    if (exists) return 'kept';
    await this.cache.added(keyHash);
    await em.insert(
      ApiKey,
      this.buildKey(
        accountId,
        name,
        keyType,
        secret,
        this.grantOf({ name, keyType, rateLimit: null }, null, await this.isOperatorAccount(accountId, em)),
      ),
    );
    return 'added';
  }

  list(accountId: string, keyType?: KeyType): Promise<ApiKey[]> {
    return this.keys.find({ where: { accountId, ...(keyType ? { keyType } : {}) }, order: { createdAt: 'ASC' } });
  }

  /**
   * PATCH /api-keys/{keyId}: changes a key of the caller's account. The key as changed must be within the
   * calling key as a whole, as a new key must (403 naming each field that goes beyond it), so a key may
   * narrow itself or keys within it but never widen one, nor change a key wider than itself. Every
   * instance drops the key from its cache at once.
   */
  async update(caller: AuthContext, keyId: string, change: KeyChange): Promise<ApiKey> {
    const key = await this.keys.manager.transaction(async (manager) => {
      const key = await manager.findOne(ApiKey, {
        where: { id: keyId, accountId: caller.accountId },
        lock: { mode: 'pessimistic_write' },
      });
      if (!key) throw AppException.notFound('API key', keyId);
      const grant = this.changedGrant(key, change, caller.isOperator);
      this.refuseWider(caller, grant, 'A key cannot change a key to be wider than itself', 'the calling key');
      Object.assign(key, {
        name: change.name ?? key.name,
        permissions: [...grant.permissions],
        rateLimit: grant.rateLimit,
        restrictions: grant.restrictions,
        expiresAt: grant.restrictions.expires_at ? new Date(grant.restrictions.expires_at) : null,
      });
      const { name, permissions, rateLimit, restrictions, expiresAt } = key;
      await manager.update(ApiKey, { id: key.id, accountId: caller.accountId }, { name, permissions, rateLimit, restrictions, expiresAt });
      return key;
    });
    await this.cache.invalidate(key.keyHash);
    return key;
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
    creator: AuthContext | null,
    manager?: EntityManager,
  ): Promise<{ key: ApiKey; secret: string }> {
    const isOperator = creator ? creator.isOperator : await this.isOperatorAccount(accountId, manager ?? this.keys.manager);
    const grant = this.grantOf(input, creator, isOperator);
    const secret = generateKey(this.config.keyPrefix, input.keyType, grant.domainScope);
    const key = this.buildKey(accountId, input.name, input.keyType, secret, grant);
    await this.cache.added(key.keyHash);
    await (manager ?? this.keys.manager).insert(ApiKey, key);
    return { key, secret };
  }

  /** What the new key will hold: validated (400), inherited from the creator and checked against it (403). */
  private grantOf(input: NewKeyInput, creator: CreatorKey | null, isOperator: boolean): KeyGrant {
    const domainScope = this.domainScopeOf(input);
    const ceiling = ceilingOf(input.keyType, isOperator);
    const permissions = input.permissions
      ? this.resolvePermissions(input.keyType, input.permissions, isOperator)
      : ceiling.filter((p) => !creator || creator.permissions.includes(p));
    const requested = { rateLimit: input.rateLimit, restrictions: this.validateRestrictions(input.restrictions ?? {}) };
    const defaultRateLimit = DEFAULT_RATE_LIMIT[input.keyType];
    if (!creator) {
      const rateLimit = input.rateLimit === undefined ? defaultRateLimit : input.rateLimit;
      return { domainScope, permissions, rateLimit, restrictions: requested.restrictions };
    }
    const grant = { domainScope, permissions, ...inheritRestrictions(creator, requested, defaultRateLimit) };
    this.refuseWider(creator, grant, 'A key cannot create a key wider than itself');
    return grant;
  }

  /** What a key will hold once changed: validated (400) like a new key's; what the change leaves out is kept. */
  private changedGrant(key: ApiKey, change: KeyChange, isOperator: boolean): KeyGrant {
    return {
      domainScope: key.domainScope,
      permissions: change.permissions ? this.resolvePermissions(key.keyType, change.permissions, isOperator) : key.permissions,
      rateLimit: change.rateLimit === undefined ? key.rateLimit : change.rateLimit,
      restrictions:
        change.restrictions === undefined
          ? key.restrictions
          : patchRestrictions(key.restrictions, change.restrictions && this.validateRestrictions(change.restrictions)),
    };
  }

  /** 403 naming every field in which the grant goes beyond the key that asks for it. */
  private refuseWider(bound: CreatorKey, grant: KeyGrant, refusal: string, boundName?: string): void {
    const wider = widerThan(bound, grant, boundName);
    if (wider.length > 0) {
      throw new AppException(ErrorCode.Forbidden, `${refusal}: ${wider.map((w) => `${w.field}: ${w.message}`).join('; ')}`, {
        fields: wider,
      });
    }
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

  /** Only the operator account's keys may hold operator.* permissions; a first key has no creator to tell. */
  private async isOperatorAccount(accountId: string, manager: EntityManager): Promise<boolean> {
    const rows: { is_operator: boolean }[] = await manager.query('SELECT is_operator FROM accounts WHERE id = $1', [accountId]);
    return rows[0]?.is_operator === true;
  }

  private domainScopeOf(input: NewKeyInput): string | null {
    if (input.keyType !== 'public') {
      if (input.domainScope) throw AppException.invalidField('domainScope', 'only public keys take a domainScope');
      return null;
    }
    if (!input.domainScope) throw AppException.invalidField('domainScope', 'domainScope is required for public keys');
    return input.domainScope.toLowerCase();
  }

  /** isOperator: the key is the operator account's (operator.* permissions). */
  private resolvePermissions(keyType: KeyType, names: string[], isOperator: boolean): Permission[] {
    const result = normalizePermissions(names);
    if ('unknown' in result) {
      throw AppException.invalidField('permissions', `unknown permission(s): ${result.unknown.join(', ')}`);
    }
    const above = aboveCeiling(keyType, result.permissions, isOperator);
    if (above.length > 0) {
      throw AppException.invalidField('permissions', `a ${keyType} key cannot hold: ${above.join(', ')}`);
    }
    return result.permissions;
  }

  /** Also takes a patch: a field given null (remove it) passes. */
  private validateRestrictions<T extends KeyRestrictions | RestrictionsPatch>(restrictions: T): T {
    const bad = (restrictions.ip_whitelist ?? []).filter((entry) => !isIpOrCidr(entry));
    if (bad.length > 0) {
      throw AppException.invalidField('restrictions.ip_whitelist', `not an IP address or CIDR range: ${bad.join(', ')}`);
    }
    if (restrictions.expires_at && new Date(restrictions.expires_at).getTime() <= Date.now()) {
      throw AppException.invalidField('restrictions.expires_at', 'expires_at must be in the future');
    }
    const clean = { ...restrictions };
    if (clean.domain_restrictions) clean.domain_restrictions = clean.domain_restrictions.map((d) => d.toLowerCase());
    // class instances (DTOs) become plain JSON for the jsonb column
    return JSON.parse(JSON.stringify(clean)) as T;
  }
}
