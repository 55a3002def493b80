import { MigrationInterface, QueryRunner } from 'typeorm';

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/**
 * CreateWebhooks' trigger function, its payload unchanged for the types it had; `failed` and `deferred` add the
 * delivery attempts Mailroom made so far (`attempts`), and `deferred` when the next one is due (`nextAttemptAt`, null
 * when unknown: a provider's deferral of a message sent already). The message row is moved by the statement that
 * writes the event, and an AFTER trigger sees the move. `detail` is the SMTP answer (or why the message failed).
 * It reads `messages.next_attempt_at`, so it runs after AddMessageNextAttemptAt, which adds the column.
 */
const functionSql = (withAttempts: boolean) => `
CREATE OR REPLACE FUNCTION webhook_outbox_message_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_outbox (account_id, type, payload)
  SELECT m.account_id, NEW.type, jsonb_build_object(
    'type', NEW.type,
    'messageId', NEW.message_id,
    'recipient', COALESCE(NEW.recipient, CASE WHEN jsonb_array_length(m.recipients) = 1 THEN m.recipients ->> 0 END),
    'timestamp', to_char(NEW.occurred_at AT TIME ZONE 'UTC', ${ISO}),
    'metadata', COALESCE(m.metadata, '{}'::jsonb)
      || CASE WHEN m.list_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('listId', m.list_id) END,
    'detail', NEW.detail,
    'machine', NEW.machine)${
      withAttempts
        ? `
    || CASE NEW.type
         WHEN 'failed' THEN jsonb_build_object('attempts', m.attempts)
         WHEN 'deferred' THEN jsonb_build_object('attempts', m.attempts,
           'nextAttemptAt', to_char(m.next_attempt_at AT TIME ZONE 'UTC', ${ISO}))
         ELSE '{}'::jsonb END`
        : ''
    }
  FROM messages m
  WHERE m.id = NEW.message_id
    AND EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = m.account_id AND w.enabled AND NEW.type = ANY (w.events));
  RETURN NULL;
END
$$`;

const triggerSql = (types: string[]) => `
CREATE TRIGGER message_events_webhook_outbox AFTER INSERT ON message_events FOR EACH ROW
  WHEN (NEW.type IN (${types.map((type) => `'${type}'`).join(', ')}))
  EXECUTE FUNCTION webhook_outbox_message_event()`;

const BEFORE = ['sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained', 'unsubscribed'];

/**
 * Hand-written: a message that finally fails, or is deferred (a temporary failure, retried later), becomes a
 * `failed` or `deferred` webhook event like the other message events (WEBHOOK_EVENT_TYPES).
 */
export class PublishFailedAndDeferredWebhookEvents1795785003000 implements MigrationInterface {
  name = 'PublishFailedAndDeferredWebhookEvents1795785003000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(functionSql(true));
    await queryRunner.query(`DROP TRIGGER "message_events_webhook_outbox" ON "message_events"`);
    await queryRunner.query(triggerSql([...BEFORE, 'failed', 'deferred']));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "message_events_webhook_outbox" ON "message_events"`);
    await queryRunner.query(triggerSql(BEFORE));
    await queryRunner.query(functionSql(false));
  }
}
