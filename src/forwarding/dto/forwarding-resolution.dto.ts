import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

export class ResolveForwardingQueryDto {
  @ApiProperty({ example: 'info@example.com', description: 'An address on the domain, or its local part alone.' })
  @IsString()
  @IsNotEmpty({ message: 'address is required' })
  @MaxLength(320)
  address: string;
}

export class ForwardingResolutionDto {
  @ApiProperty({ example: 'info@example.com' })
  address: string;

  @ApiProperty({ example: 'example.com' })
  domain: string;

  @ApiProperty({ description: 'Only verified domains take mail.' })
  domainVerified: boolean;

  @ApiProperty({ description: 'A rule matches the address.' })
  matched: boolean;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'info',
    description: 'The alias that matched (the exact one, the one without the +tag, or `*`); null: none.',
  })
  rule: string | null;

  @ApiProperty({ type: [String], example: ['ada@example.org'] })
  destinations: string[];

  @ApiProperty({
    description:
      'The inbound server takes mail for this address now (verified domain and a matching rule); otherwise it answers 550 5.1.1 at RCPT TO.',
  })
  accepted: boolean;

  @ApiProperty({ example: 'info@example.com matches the alias info and goes to ada@example.org' })
  explanation: string;
}
