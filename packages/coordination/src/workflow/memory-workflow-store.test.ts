import { MemoryWorkflowStore } from './memory-workflow-store.js';
import { workflowStoreContract } from './workflow-store.contract.js';

workflowStoreContract('memory', async () => new MemoryWorkflowStore());
