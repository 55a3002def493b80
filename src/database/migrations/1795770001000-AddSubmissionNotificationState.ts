import { MigrationInterface, QueryRunner } from 'typeorm';

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/**
 * The one definition of what a form's notification failure is, read by the trigger below and by the listings
 * (src/forms/notifications): a message's bounce or failure is its own unless it is the `failed` event, without a
 * recipient, that ends a message every recipient of which was suppressed (its `suppressed` events tell, one each;
 * DeliveryService writes its detail, EVERY_RECIPIENT_SUPPRESSED of src/outbox/message-event.entity.ts). A failure of
 * another recipient in the same attempt (given up on) is the message's own.
 */
const OWN_FAILURE_FUNCTION = `
CREATE FUNCTION message_event_own_failure(event_type text, recipient text, detail text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT event_type IN ('bounced', 'failed')
    AND NOT (event_type = 'failed' AND recipient IS NULL AND detail IS NOT DISTINCT FROM 'every recipient is on the suppression list')
$$`;

/** Whether the account has an enabled webhook subscribed to form.notification_failed: the event is written only then. */
const SUBSCRIBED_FUNCTION = `
CREATE FUNCTION form_notification_subscribed(account text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = account AND w.enabled AND 'form.notification_failed' = ANY (w.events))
$$`;

/** The payload of a form.notification_failed event, whoever writes it (this trigger, an acceptance that holds a recipient). */
const PAYLOAD_FUNCTION = `
CREATE FUNCTION form_notification_failed_payload(form_id text, form_name text, submission_id text, reason text, recipient text,
  message_id text, detail text, at timestamptz) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'type', 'form.notification_failed', 'formId', form_id, 'formName', form_name, 'submissionId', submission_id,
    'reason', reason, 'recipient', recipient, 'messageId', message_id, 'detail', detail,
    'timestamp', to_char(at AT TIME ZONE 'UTC', ${ISO}))
$$`;

/** The detail of a held recipient's event: `since` as ISO text. */
const HELD_DETAIL_FUNCTION = `
CREATE FUNCTION form_notification_held_detail(email text, reason text, since text, source text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT 'recipient ' || email || ' suppressed since ' || since || ' (' || reason || COALESCE(', ' || source, '')
    || '): sent once the suppression is lifted'
$$`;

/**
 * What happens to a form notification after its acceptance, whoever writes the message event (delivery, DSNs,
 * provider events): a notification recipient found suppressed at delivery is held on the submission like one
 * suppressed at acceptance (which that acceptance recorded already: nothing changes then), and the account's
 * webhooks get form.notification_failed for it and for every bounce or failure of the message's own. An address
 * taken off the list since delivery found it suppressed is held all the same, as `lifted` (no event): the
 * workers' sweep sends it.
 */
const NOTIFICATION_EVENT_FUNCTION = `
CREATE FUNCTION form_notification_message_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.type = 'suppressed' THEN
    WITH suppressed AS (
      SELECT s.id, s.account_id, s.form_id, lower(NEW.recipient) AS email, COALESCE(e.reason, 'lifted') AS reason,
        COALESCE(e.created_at, NEW.occurred_at) AS since, e.source, e.email IS NOT NULL AS listed
      FROM form_submissions s
      LEFT JOIN suppression_entries e ON e.account_id = s.account_id AND e.email = lower(NEW.recipient)
      WHERE s.notification_message_ids @> jsonb_build_array(NEW.message_id)
        AND NOT COALESCE(s.notification_held @> jsonb_build_array(jsonb_build_object('email', lower(NEW.recipient))), false)
    ), held AS (
      UPDATE form_submissions s
      SET notification_held = COALESCE(s.notification_held, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
        'email', x.email, 'reason', x.reason, 'since', to_char(x.since AT TIME ZONE 'UTC', ${ISO}), 'source', x.source))
      FROM suppressed x
      WHERE s.id = x.id
      RETURNING x.*
    )
    INSERT INTO event_outbox (account_id, type, payload)
    SELECT h.account_id, 'form.notification_failed', form_notification_failed_payload(h.form_id, f.name, h.id, 'suppressed',
      h.email, NEW.message_id, form_notification_held_detail(h.email, h.reason, to_char(h.since AT TIME ZONE 'UTC', ${ISO}), h.source),
      NEW.occurred_at)
    FROM held h JOIN forms f ON f.id = h.form_id
    WHERE h.listed AND form_notification_subscribed(h.account_id);
  ELSIF message_event_own_failure(NEW.type, NEW.recipient, NEW.detail) THEN
    INSERT INTO event_outbox (account_id, type, payload)
    SELECT s.account_id, 'form.notification_failed', form_notification_failed_payload(s.form_id, f.name, s.id, NEW.type,
      NEW.recipient, NEW.message_id, NEW.detail, NEW.occurred_at)
    FROM form_submissions s JOIN forms f ON f.id = s.form_id
    WHERE s.notification_message_ids @> jsonb_build_array(NEW.message_id) AND form_notification_subscribed(s.account_id);
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
    for (const statement of [OWN_FAILURE_FUNCTION, SUBSCRIBED_FUNCTION, PAYLOAD_FUNCTION, HELD_DETAIL_FUNCTION]) {
      await queryRunner.query(statement);
    }
    await queryRunner.query(NOTIFICATION_EVENT_FUNCTION);
    await queryRunner.query(NOTIFICATION_EVENT_TRIGGER);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "message_events_form_notification" ON "message_events"`);
    await queryRunner.query(`DROP FUNCTION "form_notification_message_event"()`);
    await queryRunner.query(`DROP FUNCTION "form_notification_held_detail"(text, text, text, text)`);
    await queryRunner.query(`DROP FUNCTION "form_notification_failed_payload"(text, text, text, text, text, text, text, timestamptz)`);
    await queryRunner.query(`DROP FUNCTION "form_notification_subscribed"(text)`);
    await queryRunner.query(`DROP FUNCTION "message_event_own_failure"(text, text, text)`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_submissions_notification_messages"`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_submissions_notification_held"`);
    await queryRunner.query(`ALTER TABLE "form_submissions" DROP COLUMN "notification_held"`);
    await queryRunner.query(`ALTER TABLE "form_submissions" DROP COLUMN "notification_message_ids"`);
  }
}
