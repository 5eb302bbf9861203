import { RollingWindow, type RollingWindowOptions, type RollingWindowState } from './rolling-window.js';
import type { TripRule, TripRuleState } from './trip-rule.js';

/** What the windowed rules share: a rolling window of counts, its reset and its export/restore. */
export abstract class WindowedRule implements TripRule {
  readonly timesSuccesses: boolean = true;
  readonly needsDuration: boolean = false;
  protected readonly window: RollingWindow;
  readonly #kind: string;

  constructor(kind: string, options: RollingWindowOptions, path: string) {
    this.#kind = kind;
    this.window = new RollingWindow(options, path);
  }

  abstract success(now: number, durationMs: number): boolean;
  abstract failure(now: number, durationMs: number): boolean;

  reset(): void {
    this.window.reset();
  }

  exportState(now: number): TripRuleState {
    return { kind: this.#kind, window: this.window.exportState(now) };
  }

  restoreState(state: TripRuleState, now: number): void {
    const window = state.window as RollingWindowState | undefined;
    if (state.kind === this.#kind && window && Array.isArray(window.buckets))
      this.window.restoreState(window, now);
  }
}
