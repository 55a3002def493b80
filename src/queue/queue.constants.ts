/** Queue and job names. Their values are stored in Redis: never change one once released. */
export enum QueueName {
  Email = 'email',
  Webhooks = 'webhooks',
  ListSends = 'list-sends',
}

export enum JobName {
  DeliverEmail = 'deliver-email',
  DeliverWebhook = 'deliver-webhook',
  WakeWebhookEndpoint = 'wake-webhook-endpoint',
  FanOutListSend = 'fan-out-list-send',
}
