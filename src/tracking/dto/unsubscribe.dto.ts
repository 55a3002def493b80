import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';

/** The body of POST /u/{token}: RFC 8058's one-click field, or the confirmation page's form. */
export class UnsubscribeDto {
  @ApiPropertyOptional({
    name: 'List-Unsubscribe',
    enum: ['One-Click'],
    description: 'What mailbox providers post for RFC 8058 one-click unsubscribe (`List-Unsubscribe=One-Click`, url-encoded).',
  })
  @IsOptional()
  @IsIn(['One-Click'], { message: 'List-Unsubscribe must be One-Click' })
  'List-Unsubscribe'?: string;

  @ApiPropertyOptional({
    example: 'ada@example.org',
    description: 'Which address to unsubscribe; required when the message went to several (one of them), else optional.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  @IsEmail({}, { message: 'email must be an email address' })
  email?: string;
}

export class UnsubscribeResponseDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ example: 'ada@example.org', description: 'The address that was unsubscribed.' })
  email: string;
}
