import type { PickPolicy } from './priority.js';

/** Options shared by every format's factory. */
export interface ProtocolOptions {
  /** Replaces the default pick policy (`pickPriority`: shutdown > lead > peer, FIFO in a tier). */
  pickNext?: PickPolicy;
}
