import type { DataSource, EntityManager } from 'typeorm';
import type { AccountTier } from '../config/app-config.service';
import { Account } from './account.entity';

/**
 * A change to one object of accounts.settings (limits, quotas, global_limits): a field given a number is set,
 * a field given null is removed, an absent field is kept; the whole object null removes it.
 */
export type SettingsObjectPatch = object | null | undefined;

/** `settings` with the patches applied; an object left without fields is removed. Pure: the input is not changed. */
export function patchSettings(settings: Record<string, unknown>, patches: Record<string, SettingsObjectPatch>): Record<string, unknown> {
  const next = { ...settings };
  for (const [name, patch] of Object.entries(patches)) {
    if (patch === undefined) continue;
    if (patch === null) {
      delete next[name];
      continue;
    }
    const existing = next[name];
    const fields: Record<string, unknown> = existing && typeof existing === 'object' && !Array.isArray(existing) ? { ...existing } : {};
    for (const [field, value] of Object.entries(patch as Record<string, unknown>)) {
      if (value === null) delete fields[field];
      else if (value !== undefined) fields[field] = value;
    }
    if (Object.keys(fields).length === 0) delete next[name];
    else next[name] = fields;
  }
  return next;
}

/**
 * settings.billing.self_service, set by the operator (PATCH /admin/accounts/{accountId} billingSelfService):
 * the account's own admin keys may then subscribe it to a plan, change the plan and cancel. Off by default.
 */
export function billingSelfService(settings: Record<string, unknown> | null | undefined): boolean {
  const billing = settings?.billing;
  return typeof billing === 'object' && billing !== null && (billing as { self_service?: unknown }).self_service === true;
}

/**
 * Applies settings patches (and a new tier) to an account in one transaction, the row locked so that
 * concurrent changes of other settings are not lost. Null when the account does not exist.
 */
export async function updateAccountSettings(
  dataSource: DataSource,
  accountId: string,
  patches: Record<string, SettingsObjectPatch>,
  tier?: AccountTier,
): Promise<Account | null> {
  return dataSource.transaction((manager) => patchAccountSettings(manager, accountId, patches, tier));
}

/** updateAccountSettings in the caller's transaction. */
export async function patchAccountSettings(
  manager: EntityManager,
  accountId: string,
  patches: Record<string, SettingsObjectPatch>,
  tier?: AccountTier,
): Promise<Account | null> {
  const account = await manager.findOne(Account, { where: { id: accountId }, lock: { mode: 'pessimistic_write' } });
  if (!account) return null;
  account.settings = patchSettings(account.settings ?? {}, patches);
  if (tier) account.tier = tier;
  await manager.update(Account, { id: accountId }, { settings: account.settings, tier: account.tier });
  if (tier) {
    // A tier the operator set by hand is the operator's: cancelling the active subscription no longer lowers it.
    await manager.query(`UPDATE billing_subscriptions SET raised_tier = false WHERE account_id = $1 AND status = 'active'`, [accountId]);
  }
  return account;
}
