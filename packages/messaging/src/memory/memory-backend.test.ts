import { messageBackendContract } from '../message-backend.contract.js';
import { MemoryMessageBackend } from './memory-backend.js';

messageBackendContract('memory', async () => new MemoryMessageBackend());
