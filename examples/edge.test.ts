import { testExamplesIn } from './run-examples.js';

testExamplesIn('edge');
