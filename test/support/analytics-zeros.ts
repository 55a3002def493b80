/** The answers of the analytics routes where nothing happened, shared by the analytics suites. */
export const ZERO_EMAIL = {
  emails_sent: 0,
  delivered: 0,
  bounced: 0,
  complaints: 0,
  opens: 0,
  clicks: 0,
  unsubscribes: 0,
  delivery_rate: 0,
  open_rate: 0,
  click_rate: 0,
  unique_opens: 0,
  machine_opens: 0,
  unique_clicks: 0,
  machine_clicks: 0,
};
export const ZERO_DAY = {
  emails_sent: 0,
  delivered: 0,
  bounced: 0,
  complaints: 0,
  opens: 0,
  clicks: 0,
  unsubscribes: 0,
  submissions: 0,
  spam_blocked: 0,
  forwarded: 0,
};
export const NO_FORWARDING = { received: 0, recipients: 0, by_domain: [] };
