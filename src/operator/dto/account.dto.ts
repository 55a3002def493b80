import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, Length, Max, Min, ValidateNested } from 'class-validator';
import { MAX_QUOTA_VALUE } from '../../quotas/quota-policy';
import type { AccountTier } from '../../config/app-config.service';
import { CreatedApiKeyDto } from '../../api-keys/dto/api-key-response.dto';
import type { Account } from '../../accounts/account.entity';
import { billingSelfService } from '../../accounts/account-settings';

const TIERS: AccountTier[] = ['free', 'pro', 'enterprise'];

export class CreateAccountDto {
  @ApiProperty({ example: 'Acme Inc.' })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiPropertyOptional({ enum: TIERS, description: 'Default: DEFAULT_ACCOUNT_TIER' })
  @IsOptional()
  @IsIn(TIERS)
  tier?: AccountTier;
}

export class AccountDto {
  @ApiProperty({ example: 'acc_3kZ0v6Q2Xy7pLw9Rb1Ne4T' })
  id: string;

  @ApiProperty({ example: 'Acme Inc.' })
  name: string;

  @ApiProperty({ enum: TIERS })
  tier: AccountTier;

  @ApiProperty()
  isOperator: boolean;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  static readonly from = (account: Account): AccountDto => {
    return {
      id: account.id,
      name: account.name,
      tier: account.tier,
      isOperator: account.isOperator,
      createdAt: account.createdAt.toISOString(),
    };
  };
}

export class CreateAccountResponseDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ type: AccountDto })
  account: AccountDto;

  @ApiProperty({ type: CreatedApiKeyDto, description: 'The account’s first admin key; the secret is shown once.' })
  apiKey: CreatedApiKeyDto;

  @ApiProperty({ example: 'Store this key securely: it is shown only once and cannot be recovered.' })
  securityNote: string;
}

export class AccountListDto {
  @ApiProperty({ type: [AccountDto] })
  accounts: AccountDto[];

  @ApiProperty({ example: 1 })
  count: number;
}

const SETTING = { type: Number, nullable: true, minimum: 1, maximum: MAX_QUOTA_VALUE } as const;
const NULL_REMOVES = 'null removes it (back to the plan’s); leaving it out keeps it.';

/** settings.limits (D-11): the account's request limits, laid over its plan's. */
export class AccountLimitsPatchDto {
  @ApiPropertyOptional({ ...SETTING, example: 100_000, description: `Requests per hour; ${NULL_REMOVES}` })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  requests_per_hour?: number | null;

  @ApiPropertyOptional({ ...SETTING, example: 2000, description: `Requests per minute; ${NULL_REMOVES}` })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  requests_per_minute?: number | null;

  @ApiPropertyOptional({ ...SETTING, example: 4000, description: `Token bucket capacity; ${NULL_REMOVES}` })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  burst?: number | null;
}

/** settings.quotas (D-13): the account's quotas, laid over its plan's (an enterprise account has none until set). */
export class AccountQuotasPatchDto {
  @ApiPropertyOptional({ ...SETTING, example: 1_000_000, description: `Emails (accepted recipients) per calendar month; ${NULL_REMOVES}` })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  emails_per_month?: number | null;

  @ApiPropertyOptional({
    ...SETTING,
    example: 100_000,
    description: `Forwarded emails (their recipients) per calendar month; ${NULL_REMOVES}`,
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  forwards_per_month?: number | null;

  @ApiPropertyOptional({ ...SETTING, example: 5000, description: `Accepted form submissions per UTC hour; ${NULL_REMOVES}` })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  form_submissions_per_hour?: number | null;

  @ApiPropertyOptional({ ...SETTING, example: 50_000, description: `Accepted form submissions per UTC day; ${NULL_REMOVES}` })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_QUOTA_VALUE)
  form_submissions_per_day?: number | null;
}

/** PATCH /admin/accounts/{accountId}: the operator sets an account's tier and its custom limits and quotas. */
export class UpdateAccountDto {
  @ApiPropertyOptional({
    enum: TIERS,
    description:
      'A billing subscription also moves a free account to pro, and cancelling it moves the account back to free; ' +
      'a tier set here is kept when the subscription active now is cancelled',
  })
  @IsOptional()
  @IsIn(TIERS)
  tier?: AccountTier;

  @ApiPropertyOptional({
    example: true,
    description:
      'Self-service billing: the account’s own admin keys (billing.write) may subscribe it to a plan (free → pro), change ' +
      'the plan and cancel. Off by default: only operator keys do',
  })
  @IsOptional()
  @IsBoolean()
  billingSelfService?: boolean;

  @ApiPropertyOptional({
    type: AccountLimitsPatchDto,
    nullable: true,
    description: 'Request limits (settings.limits); null removes them all',
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => AccountLimitsPatchDto)
  limits?: AccountLimitsPatchDto | null;

  @ApiPropertyOptional({ type: AccountQuotasPatchDto, nullable: true, description: 'Quotas (settings.quotas); null removes them all' })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => AccountQuotasPatchDto)
  quotas?: AccountQuotasPatchDto | null;
}

/** An account with the settings the operator and its admins set (each object holds only the fields set). */
export class AccountDetailsDto extends AccountDto {
  @ApiProperty({ type: AccountLimitsPatchDto, description: 'settings.limits: request limits laid over the plan’s' })
  limits: Record<string, number>;

  @ApiProperty({ type: AccountQuotasPatchDto, description: 'settings.quotas: quotas laid over the plan’s' })
  quotas: Record<string, number>;

  @ApiProperty({
    example: { hourly: 1000, daily: 10000 },
    type: 'object',
    properties: { hourly: { type: 'number' }, daily: { type: 'number' }, monthly: { type: 'number' } },
    description: 'settings.global_limits, set by the account’s own admins (PATCH /settings)',
  })
  global_limits: Record<string, number>;

  @ApiProperty({ example: false, description: 'Whether the account’s own admin keys may subscribe it to a plan, change and cancel it' })
  billingSelfService: boolean;

  static fromAccount(account: Account): AccountDetailsDto {
    const settings = account.settings ?? {};
    const object = (value: unknown) =>
      value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, number>) : {};
    return {
      ...AccountDto.from(account),
      limits: object(settings.limits),
      quotas: object(settings.quotas),
      global_limits: object(settings.global_limits),
      billingSelfService: billingSelfService(settings),
    };
  }
}
