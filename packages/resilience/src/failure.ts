/**
 * A failed outcome as policies report it: a thrown `error`, or a returned `result` that a FailureClassifier
 * called a failure (an HTTP 503 response, say). Tell them apart with `'error' in failure`.
 */
export type Failure<T = unknown> = { readonly error: unknown } | { readonly result: T };

/** The thrown error or the returned value behind a failure. */
export function failureValue(failure: Failure): unknown {
  return 'error' in failure ? failure.error : failure.result;
}
