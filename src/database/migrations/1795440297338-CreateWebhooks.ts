import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Hand-written (the trigger): message events become webhook events in PostgreSQL, so that an event and its
 * event_outbox row commit in one transaction whoever writes message_events (delivery worker, tracking, provider
 * events, DSNs) and no writer has to remember it. The WHEN clause keeps inserts of other types (queued,
 * deferred, …) free of it, and the row is written only when the account has an enabled webhook subscribed.
 */
const MESSAGE_EVENT_TRIGGER_FUNCTION = `
CREATE FUNCTION webhook_outbox_message_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_outbox (account_id, type, payload)
  SELECT m.account_id, NEW.type, jsonb_build_object(
    'type', NEW.type,
    'messageId', NEW.message_id,
    'recipient', COALESCE(NEW.recipient, CASE WHEN jsonb_array_length(m.recipients) = 1 THEN m.recipients ->> 0 END),
    'timestamp', to_char(NEW.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'metadata', COALESCE(m.metadata, '{}'::jsonb)
      || CASE WHEN m.list_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('listId', m.list_id) END,
    'detail', NEW.detail,
    'machine', NEW.machine)
  FROM messages m
  WHERE m.id = NEW.message_id
    AND EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = m.account_id AND w.enabled AND NEW.type = ANY (w.events));
  RETURN NULL;
END
$$`;

const MESSAGE_EVENT_TRIGGER = `
CREATE TRIGGER message_events_webhook_outbox AFTER INSERT ON message_events FOR EACH ROW
  WHEN (NEW.type IN ('sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained', 'unsubscribed'))
  EXECUTE FUNCTION webhook_outbox_message_event()`;

export class CreateWebhooks1795440297338 implements MigrationInterface {
  name = 'CreateWebhooks1795440297338';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhooks" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "url" character varying(2048) NOT NULL, "events" character varying(40) array NOT NULL, "description" character varying(500), "enabled" boolean NOT NULL DEFAULT true, "secret" text NOT NULL, "previous_secret" text, "previous_secret_expires_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9e8795cfc899ab7bdaa831e8527" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_webhooks_account" ON "webhooks" ("account_id") `);
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "webhook_id" character varying(40) NOT NULL, "event_id" character varying(40) NOT NULL, "event_type" character varying(40) NOT NULL, "payload" jsonb NOT NULL, "status" character varying(10) NOT NULL, "attempts" integer NOT NULL DEFAULT '0', "round_first_attempt" integer NOT NULL DEFAULT '1', "next_attempt_at" TIMESTAMP WITH TIME ZONE, "last_status_code" integer, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_535dd409947fb6d8fc6dfc0112a" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IX_webhook_deliveries_pending" ON "webhook_deliveries" ("next_attempt_at") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_deliveries_event_webhook" ON "webhook_deliveries" ("event_id", "webhook_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IX_webhook_deliveries_webhook_created" ON "webhook_deliveries" ("webhook_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_attempts" ("id" BIGSERIAL NOT NULL, "delivery_id" character varying(40) NOT NULL, "attempt" integer NOT NULL, "started_at" TIMESTAMP WITH TIME ZONE NOT NULL, "duration_ms" integer NOT NULL, "status_code" integer, "error" text, "response" text, "succeeded" boolean NOT NULL, CONSTRAINT "PK_2de7e7887ad97de459adab62638" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_webhook_attempts_delivery_attempt" ON "webhook_attempts" ("delivery_id", "attempt") `);
    await queryRunner.query(
      `ALTER TABLE "webhooks" ADD CONSTRAINT "FK_295b5a3ff343825baa12cfdcba0" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_198873590dd372c0bb12ff2a248" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_a0286aeb96db651efd1ae2966f2" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_attempts" ADD CONSTRAINT "FK_0d56d91d61b827bb2079c256538" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(MESSAGE_EVENT_TRIGGER_FUNCTION);
    await queryRunner.query(MESSAGE_EVENT_TRIGGER);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "message_events_webhook_outbox" ON "message_events"`);
    await queryRunner.query(`DROP FUNCTION "webhook_outbox_message_event"()`);
    await queryRunner.query(`ALTER TABLE "webhook_attempts" DROP CONSTRAINT "FK_0d56d91d61b827bb2079c256538"`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_a0286aeb96db651efd1ae2966f2"`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_198873590dd372c0bb12ff2a248"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP CONSTRAINT "FK_295b5a3ff343825baa12cfdcba0"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_webhook_attempts_delivery_attempt"`);
    await queryRunner.query(`DROP TABLE "webhook_attempts"`);
    await queryRunner.query(`DROP INDEX "public"."IX_webhook_deliveries_webhook_created"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_webhook_deliveries_event_webhook"`);
    await queryRunner.query(`DROP INDEX "public"."IX_webhook_deliveries_pending"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP INDEX "public"."IX_webhooks_account"`);
    await queryRunner.query(`DROP TABLE "webhooks"`);
  }
}
