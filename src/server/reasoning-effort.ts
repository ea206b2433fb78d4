// OpenAI's reasoning effort (chat `reasoning_effort`, Responses `reasoning.effort`) as chat
// template variables, as vLLM passes it: `reasoning_effort` (gpt-oss's and others' variable),
// and "none" also as enable_thinking false (Qwen3's and Gemma 4's switch), so the template
// closes the reasoning and the grammar of a structured answer starts at once.
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high'] as const;

export function reasoningEffortVars(effort: string | null | undefined): Record<string, unknown> {
  if (effort == null) return {};
  return { reasoning_effort: effort, ...(effort === 'none' && { enable_thinking: false }) };
}
