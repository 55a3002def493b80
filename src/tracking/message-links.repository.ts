import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { allFulfilled, MicroBatch, settle } from '../common/micro-batch';

interface RecordedLinks {
  message_id: string;
  urls: string[];
}

/** Deliveries recording links together share a statement, up to this many messages or bytes of URLs. */
const MAX_BATCH = 100;
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
const MAX_CONCURRENT_BATCHES = 2;

/** The URLs of messages' click links (message_links): written when a message is sent, read at every click. */
@Injectable()
export class MessageLinksRepository {
  private readonly writes = new MicroBatch<RecordedLinks, void>((batch) => this.writeBatch(batch), MAX_BATCH, MAX_CONCURRENT_BATCHES, {
    weigh: (links) => links.urls.reduce((bytes, url) => bytes + url.length, 0),
    max: MAX_BATCH_BYTES,
  });

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Records the URLs of the message's click links, in link order. A message's links are the same at every attempt
   * (composition is deterministic), so a second recording keeps the first.
   */
  record(messageId: string, urls: string[]): Promise<void> {
    return this.writes.submit({ message_id: messageId, urls });
  }

  /** Records the links of several messages in the caller's transaction (retention, about to clear their HTML). */
  async recordIn(manager: EntityManager, links: { messageId: string; urls: string[] }[]): Promise<void> {
    if (links.length > 0)
      await this.insert(
        links.map(({ messageId, urls }) => ({ message_id: messageId, urls })),
        manager,
      );
  }

  /** If the shared statement fails (a message deleted meanwhile), each is written alone, so that only its caller fails. */
  private async writeBatch(batch: RecordedLinks[]): Promise<PromiseSettledResult<void>[]> {
    if (batch.length > 1) {
      try {
        await this.insert(batch);
        return allFulfilled(batch.map(() => undefined));
      } catch {
        // fall through: one by one
      }
    }
    return Promise.all(batch.map((links) => settle(this.insert([links]))));
  }

  private async insert(batch: RecordedLinks[], runner: Pick<EntityManager, 'query'> = this.dataSource): Promise<void> {
    await runner.query(
      'INSERT INTO message_links (message_id, urls) ' +
        'SELECT l.message_id, l.urls FROM jsonb_to_recordset($1::jsonb) AS l(message_id varchar, urls jsonb) ' +
        'ON CONFLICT (message_id) DO NOTHING',
      [JSON.stringify(batch)],
    );
  }
}
