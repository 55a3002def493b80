import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQueryDto } from '../../common/http/page-query.dto';
import { SUPPRESSION_REASONS, SuppressionEntry, type SuppressionReason } from '../suppression-entry.entity';

export class AddSuppressionDto {
  @ApiProperty({ example: 'ada@example.org', description: 'Stored lower-cased; matched case-insensitively.' })
  @IsString()
  @MaxLength(320)
  @IsEmail({}, { message: 'email must be an email address' })
  email: string;

  @ApiPropertyOptional({ enum: SUPPRESSION_REASONS, default: 'manual' })
  @IsOptional()
  @IsIn(SUPPRESSION_REASONS, { message: `reason must be one of ${SUPPRESSION_REASONS.join(', ')}` })
  reason?: SuppressionReason;
}

export class CheckSuppressionQueryDto {
  @ApiProperty({ example: 'ada@example.org' })
  @IsString()
  @MaxLength(320)
  @IsEmail({}, { message: 'email must be an email address' })
  email: string;
}

export class ListSuppressionQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: SUPPRESSION_REASONS, description: 'Only entries with this reason' })
  @IsOptional()
  @IsIn(SUPPRESSION_REASONS, { message: `reason must be one of ${SUPPRESSION_REASONS.join(', ')}` })
  reason?: SuppressionReason;
}

export class SuppressionEntryDto {
  @ApiProperty({ example: 'sup_4fQ2mT0kLw2sZr8NcY1pXb' })
  id: string;

  @ApiProperty({ example: 'ada@example.org' })
  email: string;

  @ApiProperty({ enum: SUPPRESSION_REASONS })
  reason: SuppressionReason;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'msg_8Jk2…',
    description: 'What added it: api, or the message that bounced or was complained about',
  })
  source: string | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  static readonly from = (entry: SuppressionEntry): SuppressionEntryDto => {
    return {
      id: entry.id,
      email: entry.email,
      reason: entry.reason,
      source: entry.source,
      createdAt: entry.createdAt.toISOString(),
    };
  };
}

export class AddSuppressionResponseDto {
  @ApiProperty({ example: true })
  success: boolean;

  @ApiProperty({ description: 'false when the address was on the list already (its first entry is kept)' })
  created: boolean;

  @ApiProperty({ type: SuppressionEntryDto })
  entry: SuppressionEntryDto;
}

export class SuppressionCheckDto {
  @ApiProperty({ example: 'ada@example.org', description: 'The address asked about, lower-cased' })
  email: string;

  @ApiProperty()
  suppressed: boolean;

  @ApiPropertyOptional({ enum: SUPPRESSION_REASONS, description: 'Only when suppressed' })
  reason?: SuppressionReason;

  @ApiPropertyOptional({ format: 'date-time', description: 'Only when suppressed' })
  createdAt?: string;
}

export class SuppressionListDto {
  @ApiProperty({ type: [SuppressionEntryDto], description: 'Newest first' })
  entries: SuppressionEntryDto[];

  @ApiProperty({
    example: 1,
    description: 'Entries matching the filter across all pages, as counted for the first page: the following pages repeat that figure',
  })
  count: number;

  @ApiProperty({
    example: 'WyIyMDI2LTA2LTA5VDEwOjAwOjAwLjAwMFoiLCJzdXBfMSIsMSwiS2lQU2FSbXYiXQ',
    type: String,
    nullable: true,
    description: 'Pass as cursor for the next page; null on the last page',
  })
  nextCursor: string | null;
}
