/** The SMTP answer to a refused recipient or message: `responseCode` is what smtp-server replies with. */
export class InboundRefusal extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}
