import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MessageEvent } from '../outbox/message-event.entity';
import { AWAITING_DELIVERY, Message } from '../outbox/message.entity';

/**
 * Reads of the message store outside a delivery attempt: a message of an account and its events (the status and
 * cancel routes), and the messages awaiting delivery that the sweeper walks.
 */
@Injectable()
export class MessagesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  findForAccount(accountId: string, messageId: string): Promise<Message | null> {
    return this.dataSource.getRepository(Message).findOne({
      where: { id: messageId, accountId },
      select: { id: true, accountId: true, status: true, recipients: true, createdAt: true, contentSweptAt: true },
    });
  }

  events(messageId: string): Promise<MessageEvent[]> {
    return this.dataSource.getRepository(MessageEvent).find({ where: { messageId }, order: { occurredAt: 'ASC', id: 'ASC' } });
  }

  /**
   * A page of messages that should have a queue job and have not changed for a while, in id order after
   * `afterId` (the sweeper walks them all).
   */
  awaitingDelivery(
    olderThan: Date,
    afterId: string,
    limit: number,
  ): Promise<Pick<Message, 'id' | 'status' | 'priority' | 'scheduledFor' | 'attempts' | 'nextAttemptAt'>[]> {
    return this.dataSource
      .getRepository(Message)
      .createQueryBuilder('m')
      .select(['m.id', 'm.status', 'm.priority', 'm.scheduledFor', 'm.attempts', 'm.nextAttemptAt'])
      .where('m.status IN (:...statuses)', { statuses: AWAITING_DELIVERY })
      .andWhere('m.updatedAt < :olderThan', { olderThan })
      .andWhere('m.id > :afterId', { afterId })
      .orderBy('m.id', 'ASC')
      .limit(limit)
      .getMany();
  }
}
