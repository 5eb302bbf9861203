// Pipes and Filters: a job is split into filters, each doing one task, wired queue to queue. Each filter is a
// competing consumer of its own input queue, so it scales (and fails and retries) on its own, in its own
// processes; its output ids derive from its input's, so a filter re-run after a crash produces no duplicate.
// Prints:
//   queues: uploads.validate, uploads.resize, uploads.store
//   stored photo.jpg at 800x600 (passed validate, resize)
import { FILTER_MARK_PREFIX, MemoryMessageBackend, Messaging, Pipeline } from '@stratus/messaging';

interface Upload {
  readonly name: string;
  readonly width: number;
  readonly height: number;
}
const messaging = new Messaging({ backend: new MemoryMessageBackend() });
let stored!: (line: string) => void;
const done = new Promise<string>((resolve) => {
  stored = resolve;
});

// Reorder, add or remove steps by editing the list; step s consumes queue `uploads.<s>`. A Pipeline is not typed
// per step: bodies arrive as unknown. Returning undefined ends the message there.
const pipeline = new Pipeline(messaging, 'uploads', [
  { name: 'validate', transform: (body) => ((body as Upload).name.endsWith('.jpg') ? body : undefined) },
  { name: 'resize', transform: (body) => ({ ...(body as Upload), width: 800, height: 600 }) },
  {
    name: 'store',
    transform: (body, message) => {
      const { name, width, height } = body as Upload;
      const marks = Object.keys(message.headers).map((header) => header.replace(FILTER_MARK_PREFIX, ''));
      stored(`stored ${name} at ${width}x${height} (passed ${marks.join(', ')})`);
      return undefined;
    },
  },
]);
await pipeline.createQueues();
console.log(`queues: ${pipeline.steps.map((step) => step.input).join(', ')}`);
// Here every step runs in this process; in production each process runs the steps it is for, with their options:
// pipeline.startStep('resize', { concurrency: 8 }).
pipeline.startAll({ resize: { concurrency: 4 } });

await messaging.queue(pipeline.input).send({ name: 'notes.txt', width: 0, height: 0 }); // stops at validate
await messaging.queue(pipeline.input).send({ name: 'photo.jpg', width: 4000, height: 3000 });
console.log(await done);
await messaging.close();
