// A short built-in English text: the BPE training text of generated benchmark models, and
// the text whose tokens a remote tokenizer (a server's /tokenize) draws random prompts from.
export const BENCH_CORPUS = [
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.',
  'One day, she saw a big, red ball under an old tree. She wanted to play with it, but it was too high to reach.',
  'The quick brown fox jumps over the lazy dog. The dog was not amused, and went back to sleep in the warm sun.',
  "It's what they're saying: we'll see, I'd think you've heard. They don't know what he's doing or where she went.",
  'A serving system is judged by its latency and its throughput under load: the time to the first token, the time',
  'per output token, and the number of requests it completes every second while many users wait for answers.',
  'Large language models read a prompt, compute a distribution over the next token, choose one, and repeat until',
  'they reach a stop condition or the maximum number of tokens. Batching many sequences together keeps the',
  'processor busy: the weights are read once per step and used for every sequence in the batch at the same time.',
  'The history of the city begins with a small village by the river, where farmers traded grain, wool and salt.',
  'Over the centuries, merchants built bridges, markets and churches; scholars founded a university and a library.',
  'Today the city is known for its music, its museums, its gardens and the long summer evenings along the water.',
  'Please write a short story about a robot who learns to paint, and explain why the colors matter so much to it.',
  'What are the main differences between a list and a tuple in Python? When should I use one rather than the other?',
  'function add(a, b) { return a + b; }\nconst values = [1, 2, 3].map((v) => v * 2);\nconsole.log(values.length);',
  'def main():\n    for i in range(10):\n        print(i, "hello")\n    return None',
  'In 2024 there were 1234567 people and 3.14159 pies; 42 is the answer, 100% true, $5.99 each, 7 days a week.',
  'héllo wörld, café naïve résumé. 日本 日本語 東京. Привет мир. 🙂 🎉 emoji 👍🏽 done.',
].join('\n');
