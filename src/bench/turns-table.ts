// The per-turn table of the benchmarks that replay a conversation against loom serve and
// llama-server (agent-turns, chat-turns-peer): one row per turn and a total, each side's prompt
// tokens, the tokens its prefix cache served and its time to first token.

export interface SideTurn {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly ttftMs: number;
}

export interface TurnSides {
  readonly turn: number;
  readonly loom: SideTurn;
  /** absent when only loom was measured */
  readonly llamacpp?: SideTurn;
}

/** The table's lines (header, one row per turn, `all`); llama.cpp's columns when every turn has them. */
export function turnsTable(turns: readonly TurnSides[]): string[] {
  const peer = turns.length > 0 && turns.every((t) => t.llamacpp);
  const pair = (a: number, b: number | undefined): string => (b === undefined ? String(a) : `${a} / ${b}`);
  const row = (name: string, loom: SideTurn, llama: SideTurn | undefined): string =>
    `| ${name} | ${pair(loom.promptTokens, llama?.promptTokens)} | ${pair(loom.cachedTokens, llama?.cachedTokens)} | ${loom.ttftMs.toFixed(0)} |` +
    (llama ? ` ${llama.ttftMs.toFixed(0)} | ${(llama.ttftMs / loom.ttftMs).toFixed(2)}x |` : '');
  const sum = (pick: (t: TurnSides) => SideTurn): SideTurn => {
    const add = (f: (s: SideTurn) => number) => turns.reduce((n, t) => n + f(pick(t)), 0);
    return { promptTokens: add((s) => s.promptTokens), cachedTokens: add((s) => s.cachedTokens), ttftMs: add((s) => s.ttftMs) };
  };
  return [
    `| turn | prompt tokens${peer ? ' (loom / llama.cpp)' : ''} | cached${peer ? ' (loom / llama.cpp)' : ''} | TTFT loom (ms) |${peer ? ' TTFT llama.cpp (ms) | llama.cpp / loom |' : ''}`,
    `| ---: | ---: | ---: | ---: |${peer ? ' ---: | ---: |' : ''}`,
    ...turns.map((t) => row(String(t.turn), t.loom, peer ? t.llamacpp : undefined)),
    row('all', sum((t) => t.loom), peer ? sum((t) => t.llamacpp!) : undefined),
  ];
}
