// Pipes and Filters: a job is split into filters, each doing one task, wired queue to queue. Each filter is a
// competing consumer of its own input queue, so it scales (and fails and retries) on its own, in its own
// processes; its output ids derive from its input's, so a filter re-run after a crash produces no duplicate.
// Prints:
//   queues: uploads.validate, uploads.resize, uploads.store
//   rejected by validate: notes.txt
//   stored photo.jpg at 800x600 (validate, resize)
import { FILTER_MARK_PREFIX, MemoryMessageBackend, Messaging, Pipeline } from '@stratus/messaging';

interface Upload {
  readonly name: string;
  readonly width: number;
  readonly height: number;
}
const messaging = new Messaging({ backend: new MemoryMessageBackend() });
const results: string[] = [];
let record!: (line: string) => void;
const done = new Promise<void>((resolve) => {
  record = (line) => {
    if (results.push(line) === 2) resolve();
  };
});

// Reorder, add or remove steps by editing the list: each step consumes `<pipeline>.<step>`.
const pipeline = new Pipeline(messaging, 'uploads', [
  {
    name: 'validate',
    transform: (body) => {
      const upload = body as Upload; // a Pipeline is not typed per step: bodies arrive as unknown
      if (upload.name.endsWith('.jpg')) return upload;
      record(`rejected by validate: ${upload.name}`);
      return undefined; // nothing goes on
    },
  },
  {
    name: 'resize',
    transform: (body) => ({ ...(body as Upload), width: 800, height: 600 }),
  },
  {
    name: 'store',
    transform: (body, message) => {
      const upload = body as Upload;
      const marks = Object.keys(message.headers).map((header) => header.replace(FILTER_MARK_PREFIX, ''));
      record(`stored ${upload.name} at ${upload.width}x${upload.height} (${marks.join(', ')})`);
      return undefined;
    },
  },
]);
await pipeline.createQueues();
console.log(`queues: ${pipeline.steps.map((step) => step.input).join(', ')}`);
// Here every step runs in this process; in production, pipeline.startStep('resize', { concurrency: 8 }) in each
// process that runs that step.
pipeline.startAll({ resize: { concurrency: 4 } });

await messaging.queue(pipeline.input).send({ name: 'photo.jpg', width: 4000, height: 3000 });
await messaging.queue(pipeline.input).send({ name: 'notes.txt', width: 0, height: 0 });
await done;
for (const line of results.sort()) console.log(line);
await messaging.close();
