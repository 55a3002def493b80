import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Length } from 'class-validator';
import type { AccountTier } from '../../config/app-config.service';
import { CreatedApiKeyDto } from '../../api-keys/dto/api-key-response.dto';
import type { Account } from '../account.entity';

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

  static from(account: Account): AccountDto {
    return {
      id: account.id,
      name: account.name,
      tier: account.tier,
      isOperator: account.isOperator,
      createdAt: account.createdAt.toISOString(),
    };
  }
}

export class CreateAccountResponseDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ type: AccountDto })
  account: AccountDto;

  @ApiProperty({ type: CreatedApiKeyDto, description: 'The account’s first admin key; the secret is shown once.' })
  apiKey: CreatedApiKeyDto;

  @ApiProperty()
  securityNote: string;
}

export class AccountListDto {
  @ApiProperty({ type: [AccountDto] })
  accounts: AccountDto[];

  @ApiProperty()
  count: number;
}

