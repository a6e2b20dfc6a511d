//! LLM providers: OpenAI-compatible and Anthropic, streaming, retry
