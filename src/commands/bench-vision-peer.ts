// `loom bench vision-peer`: time to first token of a request with one image, loom against llama-server.
import { Command, Option } from 'commander';
import { formatVisionPeerReport, runVisionPeer } from '../bench/vision-peer.js';
import { flagWords, intArg } from './bench-args.js';

interface VisionPeerFlags {
  model: string;
  mmproj: string;
  imageSize: number;
  requests: number;
  threads: number;
  maxTokens: number;
  seed: number;
  llamaServer?: string;
  llamaArgs?: string;
  json?: boolean;
}

export function benchVisionPeerCommand(): Command {
  return new Command('vision-peer')
    .description(
      'one image a request (an OpenAI chat request with an image_url data URL, streamed) against loom serve and llama.cpp\'s ' +
        'llama-server on the same text model and projector, alternating requests, a different seeded image each time: time to ' +
        'the first token per request, and loom\'s encoder time (its /metrics; llama-server logs none). llama-server is built once from the source ' +
        'node-llama-cpp ships (as bench serve-peer does). Run it alone on the machine',
    )
    .requiredOption('--model <path>', 'the text model GGUF (e.g. `loom bench make-model --shape gemma3-4b`)')
    .requiredOption('--mmproj <path>', 'its projector (e.g. `loom bench make-mmproj --shape gemma3-4b`)')
    .addOption(new Option('--image-size <px>', 'side of the square images').default(896).argParser(intArg('image-size')))
    .addOption(new Option('--requests <n>', 'measured requests a side').default(3).argParser(intArg('requests')))
    .addOption(new Option('--threads <n>', 'compute threads of both servers').default(2).argParser(intArg('threads')))
    .addOption(new Option('--max-tokens <n>', 'tokens generated a request').default(4).argParser(intArg('max-tokens')))
    .addOption(new Option('--seed <n>', 'seed of the images').default(0).argParser(intArg('seed', 0)))
    .option('--llama-server <path>', 'a llama-server binary to run instead of building one')
    .option('--llama-args <flags>', 'more llama-server flags, space-separated (e.g. "-fa off")')
    .option('--json', 'print one JSON object with every request and the settings')
    .action(async (f: VisionPeerFlags) => {
      const report = await runVisionPeer(
        { model: f.model, mmproj: f.mmproj, imageSize: f.imageSize, requests: f.requests, threads: f.threads, maxTokens: f.maxTokens, seed: f.seed, ...(f.llamaServer !== undefined && { llamaServer: f.llamaServer }),
          ...(f.llamaArgs !== undefined && { llamaArgs: flagWords(f.llamaArgs) }) },
        (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatVisionPeerReport(report)) + '\n');
    });
}
