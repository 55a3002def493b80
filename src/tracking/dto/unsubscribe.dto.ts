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
    description:
      'Which address to unsubscribe, read only on a link naming no recipient (sent before links named theirs) of a message to ' +
      'several addresses, where it is required: the address is not unsubscribed there but, if it was a recipient, emailed its own ' +
      'link to confirm. The answer is the same whether or not the address was one of them.',
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

  @ApiProperty({
    example: 'ada@example.org',
    description: 'The address unsubscribed (the one the link is for); for an address given in `email`, that address.',
  })
  email: string;

  @ApiPropertyOptional({
    example: true,
    description:
      'Present (true) for an address given in `email`: nothing was unsubscribed; if the address received the email, it was sent ' +
      'its own link to confirm (once per message). The answer is the same whether or not it did.',
  })
  confirmationSent?: boolean;
}
