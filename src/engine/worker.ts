// The engine's worker thread: loads the model, then runs the engine loop, talking to the
// main thread only through protocol messages.
import { parentPort, workerData } from 'node:worker_threads';
import { createEngineCore, engineInfo } from './create.js';
import { EngineLoop } from './engine-loop.js';
import { FAULT_ENV, installFault, parseFault } from './fault.js';
import type { EngineOptions } from './options.js';
import { transferables } from './protocol.js';
import type { EngineInbound, EngineOutbound } from './protocol.js';

/** what the main thread hands a new worker */
export interface WorkerInit {
  readonly options: EngineOptions;
  /** how many engines the supervisor started before this one */
  readonly generation: number;
}

const port = parentPort!;
const post = (msg: EngineOutbound): void => {
  port.postMessage(msg, msg.type === 'step' ? transferables(msg) : []);
};

try {
  const init = workerData as WorkerInit;
  const engine = createEngineCore(init.options);
  installFault(engine, parseFault(process.env[FAULT_ENV]), init.generation);
  const loop = new EngineLoop(engine, post);
  port.on('message', (msg: EngineInbound) => {
    loop.handle(msg);
    if (msg.type === 'shutdown') port.close();
  });
  post({ type: 'ready', ...engineInfo(engine) });
} catch (err) {
  post({ type: 'fatal', message: err instanceof Error ? err.message : String(err) });
  port.close();
}
