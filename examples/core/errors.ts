// Errors: whatever Stratus throws on purpose is a StratusError with a stable `code` to switch on; options are
// checked when a component is built, and a bad one fails at once with InvalidOptionsError naming it.
// Prints:
//   ERR_STRATUS_INVALID_OPTIONS on option "initialMs"
//   Invalid option "initialMs": expected a finite non-negative duration in milliseconds, got -1
//   isStratusError: true
import { exponentialBackoff, InvalidOptionsError, isStratusError } from '@stratus/core';

try {
  exponentialBackoff({ initialMs: -1 });
} catch (error) {
  if (error instanceof InvalidOptionsError) {
    console.log(`${error.code} on option "${error.option}"`);
    console.log(error.message);
  }
  console.log(`isStratusError: ${isStratusError(error, 'ERR_STRATUS_INVALID_OPTIONS')}`);
}
