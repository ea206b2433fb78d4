// The data of a server-sent event stream, line by line as it arrives, whatever the chunking:
// the bench clients' one reader of the streams they time (OpenAI's, Anthropic's, LMDeploy's).
/** Each `data:` line's payload, trimmed (`[DONE]` included: some callers count it). */
export async function* sseData(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    buffered += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, cut).trim();
      buffered = buffered.slice(cut + 1);
      if (line.startsWith('data:')) yield line.slice(5).trim();
    }
  }
}
