import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength, MinLength, ValidateIf } from 'class-validator';
import type { MailingList } from '../mailing-list.entity';

export class CreateListDto {
  @ApiProperty({ example: 'Newsletter', maxLength: 200, description: 'Unique within the account (409 CONFLICT otherwise).' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @Matches(/\S/, { message: 'name may not be blank' })
  name: string;

  @ApiPropertyOptional({ example: 'Monthly product news', maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  description?: string;
}

/** PATCH: fields left out keep their value; description null removes it. */
export class UpdateListDto {
  @ApiPropertyOptional({
    example: 'Newsletter (monthly)',
    maxLength: 200,
    description: 'Unique within the account (409 CONFLICT otherwise).',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @Matches(/\S/, { message: 'name may not be blank' })
  name?: string;

  @ApiPropertyOptional({
    example: 'Product news, once a month',
    type: String,
    nullable: true,
    maxLength: 1000,
    description: 'null removes it',
  })
  @ValidateIf((_, value) => value !== null && value !== undefined)
  @IsString()
  @MaxLength(1000)
  description?: string | null;
}

export class SubscriberCountsDto {
  @ApiProperty({ example: 1250 })
  subscribed: number;

  @ApiProperty({ example: 12 })
  unsubscribed: number;
}

export class ListDto {
  @ApiProperty({ example: 'list_4fQ2mT0kLw2sZr8NcY1pXb' })
  id: string;

  @ApiProperty({ example: 'Newsletter' })
  name: string;

  @ApiProperty({ type: String, nullable: true, example: 'Monthly product news' })
  description: string | null;

  @ApiProperty({ type: SubscriberCountsDto })
  subscribers: SubscriberCountsDto;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  static from(list: MailingList, subscribers: SubscriberCountsDto): ListDto {
    return {
      id: list.id,
      name: list.name,
      description: list.description,
      subscribers,
      createdAt: list.createdAt.toISOString(),
      updatedAt: list.updatedAt.toISOString(),
    };
  }
}

export class ListPageDto {
  @ApiProperty({ type: [ListDto], description: 'Newest first' })
  lists: ListDto[];

  @ApiProperty({
    example: 'WyIyMDI2LTA2LTA5VDEwOjAwOjAwLjAwMFoiLCJsc3RfMSJd',
    type: String,
    nullable: true,
    description: 'Pass as cursor for the next page; null on the last page',
  })
  nextCursor: string | null;
}
