import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PageQueryDto } from '../../common/http/page-query.dto';
import { ListSubscriber, SUBSCRIBER_STATUSES, type SubscriberStatus } from '../list-subscriber.entity';

/** D-14: subscribers one add call takes. */
export const MAX_SUBSCRIBERS_PER_CALL = 1000;

/** One entry of an add call. Checked entry by entry: a bad one is reported by its index, the others are added. */
export class SubscriberInputDto {
  @ApiProperty({ example: 'ada@example.org', maxLength: 320, description: 'Stored lower-cased; unique per list, case-insensitively.' })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @MaxLength(320)
  @IsEmail({ allow_display_name: false, allow_ip_domain: false }, { message: 'email must be an email address' })
  email: string;

  @ApiPropertyOptional({
    example: 'Ada Lovelace',
    maxLength: 200,
    description: 'Shown in the To header and given to templates as {{name}}.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Matches(/^[^\r\n]*$/, { message: 'name may not contain CR or LF' })
  name?: string;
}

/** The other accepted body shape: the entries under `subscribers`. */
export class AddSubscribersDto {
  @ApiProperty({ type: [SubscriberInputDto], minItems: 1, maxItems: MAX_SUBSCRIBERS_PER_CALL })
  subscribers: SubscriberInputDto[];
}

export class InvalidSubscriberDto {
  @ApiProperty({ example: 3, description: 'Position of the entry in the call, from 0' })
  index: number;

  @ApiProperty({ example: 'subscribers[3].email' })
  field: string;

  @ApiProperty({ example: 'email must be an email address' })
  message: string;
}

export class AddSubscribersResultDto {
  @ApiProperty({ example: 2, description: 'New on the list, subscribed' })
  added: number;

  @ApiProperty({
    example: 1,
    description:
      'On the list already (or earlier in this call): the status is kept, an unsubscribed address stays unsubscribed; a given name replaces the stored one',
  })
  existing: number;

  @ApiProperty({ type: [InvalidSubscriberDto], description: 'Entries left out, with the reason; the others were added' })
  invalid: InvalidSubscriberDto[];
}

export class ListSubscribersQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: SUBSCRIBER_STATUSES, description: 'Only subscribers with this status' })
  @IsOptional()
  @IsIn(SUBSCRIBER_STATUSES, { message: `status must be one of ${SUBSCRIBER_STATUSES.join(', ')}` })
  status?: SubscriberStatus;
}

export class SubscriberDto {
  @ApiProperty({ example: 'ada@example.org' })
  email: string;

  @ApiProperty({ type: String, nullable: true, example: 'Ada Lovelace' })
  name: string | null;

  @ApiProperty({ enum: SUBSCRIBER_STATUSES })
  status: SubscriberStatus;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  unsubscribedAt: string | null;

  static readonly from = (subscriber: ListSubscriber): SubscriberDto => {
    return {
      email: subscriber.email,
      name: subscriber.name,
      status: subscriber.status,
      createdAt: subscriber.createdAt.toISOString(),
      unsubscribedAt: subscriber.unsubscribedAt?.toISOString() ?? null,
    };
  };
}

export class SubscriberPageDto {
  @ApiProperty({ type: [SubscriberDto], description: 'In address order' })
  subscribers: SubscriberDto[];

  @ApiProperty({
    example: 'YWRhQGV4YW1wbGUub3Jn',
    type: String,
    nullable: true,
    description: 'Pass as cursor for the next page; null on the last page',
  })
  nextCursor: string | null;
}
