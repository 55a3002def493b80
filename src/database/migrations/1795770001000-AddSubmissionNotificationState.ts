import { MigrationInterface, QueryRunner } from 'typeorm';

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** The account has an enabled webhook subscribed to form.notification_failed. */
const SUBSCRIBED = (account: string) =>
  `EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = ${account} AND w.enabled AND 'form.notification_failed' = ANY (w.events))`;

/**
 * What happens to a form notification after its acceptance, whoever writes the message event (delivery, DSNs,
 * provider events): a notification recipient found suppressed at delivery is held on the submission like one
 * suppressed at acceptance (which that acceptance recorded already: nothing changes then), and the account's
 * webhooks get form.notification_failed for it and for every bounce or failure. A `failed` event written with
 * `suppressed` ones (every recipient suppressed) is theirs: one event each, not another.
 */
const NOTIFICATION_EVENT_FUNCTION = `
CREATE FUNCTION form_notification_message_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.type = 'suppressed' THEN
    WITH held AS (
      UPDATE form_submissions s
      SET notification_held = COALESCE(s.notification_held, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
        'email', e.email, 'reason', e.reason, 'since', to_char(e.created_at AT TIME ZONE 'UTC', ${ISO}), 'source', e.source))
      FROM suppression_entries e
      WHERE s.notification_message_ids @> jsonb_build_array(NEW.message_id)
        AND e.account_id = s.account_id AND e.email = lower(NEW.recipient)
        AND NOT COALESCE(s.notification_held @> jsonb_build_array(jsonb_build_object('email', e.email)), false)
      RETURNING s.id, s.account_id, s.form_id, e.email, e.reason, e.created_at, e.source
    )
    INSERT INTO event_outbox (account_id, type, payload)
    SELECT h.account_id, 'form.notification_failed', jsonb_build_object(
      'type', 'form.notification_failed', 'formId', h.form_id, 'formName', f.name, 'submissionId', h.id,
      'reason', 'suppressed', 'recipient', h.email, 'messageId', NEW.message_id,
      'detail', 'recipient ' || h.email || ' suppressed since ' || to_char(h.created_at AT TIME ZONE 'UTC', ${ISO})
        || ' (' || h.reason || COALESCE(', ' || h.source, '') || '): sent once the suppression is lifted',
      'timestamp', to_char(NEW.occurred_at AT TIME ZONE 'UTC', ${ISO}))
    FROM held h JOIN forms f ON f.id = h.form_id
    WHERE ${SUBSCRIBED('h.account_id')};
  ELSE
    INSERT INTO event_outbox (account_id, type, payload)
    SELECT s.account_id, 'form.notification_failed', jsonb_build_object(
      'type', 'form.notification_failed', 'formId', s.form_id, 'formName', f.name, 'submissionId', s.id,
      'reason', NEW.type, 'recipient', NEW.recipient, 'messageId', NEW.message_id, 'detail', NEW.detail,
      'timestamp', to_char(NEW.occurred_at AT TIME ZONE 'UTC', ${ISO}))
    FROM form_submissions s JOIN forms f ON f.id = s.form_id
    WHERE s.notification_message_ids @> jsonb_build_array(NEW.message_id)
      AND NOT (NEW.type = 'failed' AND EXISTS (
        SELECT 1 FROM message_events x WHERE x.message_id = NEW.message_id AND x.type = 'suppressed' AND x.occurred_at = NEW.occurred_at))
      AND ${SUBSCRIBED('s.account_id')};
  END IF;
  RETURN NULL;
END
$$`;

const NOTIFICATION_EVENT_TRIGGER = `
CREATE TRIGGER message_events_form_notification AFTER INSERT ON message_events FOR EACH ROW
  WHEN (NEW.type IN ('suppressed', 'bounced', 'failed'))
  EXECUTE FUNCTION form_notification_message_event()`;

/**
 * A form's notification is never silently lost: which messages of a submission are its notifications, the
 * recipients held because they were suppressed (released when the suppression is lifted), and the trigger that
 * keeps both, and the form.notification_failed webhook event, true after acceptance.
 */
export class AddSubmissionNotificationState1795770001000 implements MigrationInterface {
  name = 'AddSubmissionNotificationState1795770001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "form_submissions" ADD "notification_message_ids" jsonb`);
    await queryRunner.query(`ALTER TABLE "form_submissions" ADD "notification_held" jsonb`);
    await queryRunner.query(
      `CREATE INDEX "IX_form_submissions_notification_held" ON "form_submissions" ("account_id", "created_at") WHERE "notification_held" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "IX_form_submissions_notification_messages" ON "form_submissions" USING gin ("notification_message_ids" jsonb_path_ops)`,
    );
    await queryRunner.query(NOTIFICATION_EVENT_FUNCTION);
    await queryRunner.query(NOTIFICATION_EVENT_TRIGGER);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "message_events_form_notification" ON "message_events"`);
    await queryRunner.query(`DROP FUNCTION "form_notification_message_event"()`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_submissions_notification_messages"`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_submissions_notification_held"`);
    await queryRunner.query(`ALTER TABLE "form_submissions" DROP COLUMN "notification_held"`);
    await queryRunner.query(`ALTER TABLE "form_submissions" DROP COLUMN "notification_message_ids"`);
  }
}
