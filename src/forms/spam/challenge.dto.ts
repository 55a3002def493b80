import { ApiProperty } from '@nestjs/swagger';
import type { Algorithm, Challenge } from 'altcha-lib/v1';

/** What the ALTCHA widget fetches from its `challengeurl`: altcha-lib's classic `Challenge`. */
export class ChallengeDto implements Challenge {
  @ApiProperty({ enum: ['SHA-1', 'SHA-256', 'SHA-512'], example: 'SHA-256', description: 'Hash algorithm to solve with' })
  algorithm: Algorithm;

  @ApiProperty({
    example: '4e0b2f8a4d1c6b5e9f1a3c7d2e8b6a0f4c9d1e7b3a5f8c2d6e0b4a9f1c3d5e7b',
    description: 'Hex hash of salt + secret number; the widget searches for the number',
  })
  challenge: string;

  @ApiProperty({ example: 100000, description: 'Upper bound of the secret number: the form’s spam_protection.altcha_maxnumber' })
  maxnumber: number;

  @ApiProperty({
    example: '0f1e2d3c4b5a69788796a5b4?formId=frm_123&expires=1767225600&',
    description: 'Random salt carrying the form id and expiry (Unix seconds) as query parameters',
  })
  salt: string;

  @ApiProperty({
    example: 'c1a5f0e9d8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1',
    description: 'Server HMAC of the challenge; echoed back in the solution',
  })
  signature: string;
}
