// Conversions between a clock's monotonic and wall times, so instances sharing a breaker agree on its times.
import type { Clock } from '@stratus/core';

/**
 * A monotonic time as wall time, and back. Both clocks are read as a pair within one millisecond of wall time, so a
 * pause between the two reads (a busy host) cannot shift the result: instances sharing a breaker agree on its
 * open-until time.
 */
export function wallTimeOf(clock: Clock, monotonic: number): number {
  const [wall, mono] = clockPair(clock);
  return wall + Math.max(0, monotonic - mono);
}

export function monotonicTimeOf(clock: Clock, wall: number): number {
  const [now, mono] = clockPair(clock);
  return mono + (wall - now);
}

function clockPair(clock: Clock): [wall: number, monotonic: number] {
  for (let attempt = 0; ; attempt++) {
    const wall = clock.now();
    const mono = clock.monotonic();
    if (clock.now() === wall || attempt === 3) return [wall, mono];
  }
}
