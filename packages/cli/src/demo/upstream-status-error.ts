/**
 * The upstream answered with an error status. It carries the response, whose status and Retry-After the
 * resilience policies read (retry classifies the status as transient and honours Retry-After).
 */
export class UpstreamStatusError extends Error {
  override name = 'UpstreamStatusError';
  readonly response: Response;
  constructor(response: Response) {
    super(`The upstream answered ${response.status}`);
    this.response = response;
  }
}
