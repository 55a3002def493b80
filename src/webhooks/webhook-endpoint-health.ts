/** `410 Gone`: the receiver says the endpoint is gone for good. No retry, and the webhook is disabled. */
export const GONE = 410;

/** A human sentence for a disable, in the `webhook.disabled` event and the email. */
export const GONE_DETAIL = 'The endpoint answered 410 Gone';
export const FAILING_DETAIL = 'Every attempt failed since';

/**
 * CTEs to follow, in the statement that writes a batch of attempts, the CTEs `input` (each attempt: id, started_at,
 * status_code, succeeded, the url called, blameless) and `moved` (each delivery the statement moved: id,
 * webhook_id). For each enabled webhook of the batch they keep `failing_since` (the first failure since the last
 * success) and disable the webhook when it answered 410 Gone, or when its failures span `disableAfterMs` (a
 * placeholder of milliseconds; 0: never). Only the attempts that judge the endpoint count: made to the URL the webhook
 * still has (not one it had before a change), and not failed by Mailroom's own fault (blameless). A disable sets why
 * and when, marks the email to the account's contact as due (WebhookDisabledNotices sends it) and adds a
 * `webhook.disabled` event to event_outbox when another webhook of the account subscribed to it. The webhook row is
 * written only when one of these changes, so a steady stream of successes costs nothing more. The UPDATE applies
 * only to the row as it was read (enabled, same URL, same failing_since): a webhook disabled by two statements at
 * once is disabled (and told) once, and a batch never undoes what a concurrent one committed after it read the row
 * (a success that cleared failing_since, a URL change).
 */
export function endpointHealthCtes(disableAfterMs: string): string {
  return `, outcomes AS (
    SELECT moved.webhook_id, i.started_at, i.succeeded, i.status_code
    FROM input i JOIN moved ON moved.id = i.id JOIN webhooks w ON w.id = moved.webhook_id
    WHERE NOT i.blameless AND i.url = w.url
  ), endpoint_outcomes AS (
    SELECT webhook_id, max(started_at) FILTER (WHERE succeeded) AS last_success, bool_or(status_code = ${GONE}) AS gone
    FROM outcomes GROUP BY webhook_id
  ), endpoint_failures AS (
    SELECT e.webhook_id, e.gone, e.last_success,
      min(o.started_at) FILTER (WHERE NOT o.succeeded AND (e.last_success IS NULL OR o.started_at > e.last_success)) AS first_failure,
      max(o.started_at) FILTER (WHERE NOT o.succeeded) AS last_failure
    FROM endpoint_outcomes e JOIN outcomes o ON o.webhook_id = e.webhook_id
    GROUP BY e.webhook_id, e.gone, e.last_success
  ), endpoint_next AS (
    SELECT w.id, w.url, w.failing_since AS was_failing_since, f.gone, f.last_failure,
      CASE WHEN f.last_success IS NULL THEN COALESCE(w.failing_since, f.first_failure) ELSE f.first_failure END AS failing_since
    FROM endpoint_failures f JOIN webhooks w ON w.id = f.webhook_id
    WHERE w.enabled
  ), endpoint_verdict AS (
    SELECT n.*, CASE
      WHEN n.gone THEN 'gone'
      WHEN ${disableAfterMs}::bigint > 0 AND n.last_failure - n.failing_since >= ${disableAfterMs}::bigint * interval '1 millisecond'
        THEN 'failing'
    END AS disable
    FROM endpoint_next n
  ), endpoint AS (
    UPDATE webhooks w SET
      failing_since = v.failing_since,
      enabled = v.disable IS NULL,
      disabled_reason = v.disable,
      disabled_at = CASE WHEN v.disable IS NULL THEN NULL ELSE now() END,
      disabled_notice_pending = v.disable IS NOT NULL,
      updated_at = CASE WHEN v.disable IS NULL THEN w.updated_at ELSE now() END
    FROM endpoint_verdict v
    WHERE w.id = v.id AND w.enabled AND w.url = v.url
      -- A 410 disables whatever another batch did meanwhile; a span only as this statement read it.
      AND (v.disable = 'gone' OR w.failing_since IS NOT DISTINCT FROM v.was_failing_since)
      AND (v.disable IS NOT NULL OR v.failing_since IS DISTINCT FROM v.was_failing_since)
    RETURNING w.id, w.account_id, w.url, w.disabled_reason, w.disabled_at, w.failing_since
  ), disabled_event AS (
    INSERT INTO event_outbox (account_id, type, payload)
    SELECT e.account_id, 'webhook.disabled', jsonb_build_object(
      'type', 'webhook.disabled',
      'timestamp', ${isoTime('e.disabled_at')},
      'webhookId', e.id,
      'url', regexp_replace(e.url, '[?#].*$', ''),
      'reason', e.disabled_reason,
      'failingSince', ${isoTime('e.failing_since')},
      'detail', CASE WHEN e.disabled_reason = 'gone' THEN '${GONE_DETAIL}'
                     ELSE '${FAILING_DETAIL} ' || ${isoTime('e.failing_since')} END)
    FROM endpoint e
    WHERE e.disabled_reason IS NOT NULL
      AND EXISTS (SELECT 1 FROM webhooks o WHERE o.account_id = e.account_id AND o.id <> e.id AND o.enabled AND 'webhook.disabled' = ANY (o.events))
  )`;
}

/** A timestamptz as the other events write times: `2026-06-09T10:00:00.000Z`. */
function isoTime(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
