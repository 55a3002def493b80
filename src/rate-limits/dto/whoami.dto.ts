import { ApiProperty } from '@nestjs/swagger';
import { KEY_TYPES, KeyType, Permission } from '../../auth/permissions';

/** GET /auth/whoami: the key a request was made with. */
export class WhoamiDto {
  @ApiProperty({ example: 'acc_4fQ2Zb8VtN1mKc7LpR3sWx' })
  accountId: string;

  @ApiProperty({ example: 'key_5bV0tq6Yk3mZ1h9nQe2LrW' })
  keyId: string;

  @ApiProperty({ enum: KEY_TYPES })
  keyType: KeyType;

  @ApiProperty({ type: [String], example: ['email.send'] })
  permissions: Permission[];

  @ApiProperty({ nullable: true, type: String, example: null, description: 'The only domain a public key works for' })
  domainScope: string | null;

  @ApiProperty({ enum: ['free', 'pro', 'enterprise'], example: 'free' })
  plan: string;
}
