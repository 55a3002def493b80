/** Queue and job names. Their values are stored in Redis: never change one once released. */
export enum QueueName {
  Email = 'email',
}

export enum JobName {
  DeliverEmail = 'deliver-email',
}
