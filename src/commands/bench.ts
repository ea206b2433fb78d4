// `loom bench <what>`: a registry of benchmark subcommands, one module each.
import { Command } from 'commander';
import { benchEngineCommand } from './bench-engine.js';
import { benchGrammarCommand } from './bench-grammar.js';
import { benchKernelsCommand } from './bench-kernels.js';
import { benchLivenessCommand } from './bench-liveness.js';
import { benchMakeModelCommand } from './bench-make-model.js';
import { benchMakeMmprojCommand } from './bench-make-mmproj.js';
import { benchVisionPeerCommand } from './bench-vision-peer.js';
import { benchPeerCommand } from './bench-peer.js';
import { benchProtocolCommand } from './bench-protocol.js';
import { benchChatTurnsCommand } from './bench-chat-turns.js';
import { benchChatTurnsPeerCommand } from './bench-chat-turns-peer.js';
import { benchAgentTurnsCommand } from './bench-agent-turns.js';
import { benchScaleoutCommand } from './bench-scaleout.js';
import { benchServeCommand } from './bench-serve.js';
import { benchServePeerCommand } from './bench-serve-peer.js';
import { benchEmbedPeerCommand } from './bench-embed-peer.js';
import { benchSoakCommand } from './bench-soak.js';
import { benchSpecCommand } from './bench-spec.js';
import { benchStandardCommand } from './bench-standard.js';
import { benchStartPeerCommand } from './bench-start-peer.js';
import { benchStructuredCommand } from './bench-structured.js';

export function benchCommand(): Command {
  return new Command('bench')
    .description('benchmarks; each prints a report, or one JSON object with --json')
    .addCommand(benchProtocolCommand())
    .addCommand(benchChatTurnsCommand())
    .addCommand(benchChatTurnsPeerCommand())
    .addCommand(benchAgentTurnsCommand())
    .addCommand(benchEngineCommand())
    .addCommand(benchKernelsCommand())
    .addCommand(benchPeerCommand())
    .addCommand(benchMakeModelCommand())
    .addCommand(benchMakeMmprojCommand())
    .addCommand(benchVisionPeerCommand())
    .addCommand(benchStartPeerCommand())
    .addCommand(benchServeCommand())
    .addCommand(benchServePeerCommand())
    .addCommand(benchEmbedPeerCommand())
    .addCommand(benchStandardCommand())
    .addCommand(benchSoakCommand())
    .addCommand(benchLivenessCommand())
    .addCommand(benchScaleoutCommand())
    .addCommand(benchStructuredCommand())
    .addCommand(benchGrammarCommand())
    .addCommand(benchSpecCommand());
}
