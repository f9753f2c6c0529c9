"""Scripted model servers, one module per wire API: Anthropic Messages (Claude Code),
OpenAI Responses (Codex), OpenAI chat completions (Aider) and Gemini (Gemini CLI).

They live in the package, not the tests, so `doctor --self-test` and the agent tests
drive the real CLIs against the same servers."""
